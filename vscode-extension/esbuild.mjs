// Builds the extension (dist/extension.js, CommonJS for the Node extension host;
// dist/extension.browser.js, CommonJS for the browser's web worker extension host, with the
// web build of the wasm engine in dist/acp-wasm-web), the chat webview
// (dist/webview.js + dist/webview.css), the protocol trace panel (dist/trace.js + dist/trace.css,
// from ../trace-viewer/) and copies the wasm protocol engine (acp-wasm/pkg/nodejs-client)
// into dist/acp-wasm, and its ACP v2 build (acp-wasm/pkg/nodejs-client-v2) into dist/acp-wasm-v2. With --tests, also bundles test/unit/*.test.ts to out/test/.
import * as esbuild from "esbuild";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { noNodeBuiltins, nodeGlobalsIn } from "./scripts/browserBundleChecks.mjs";

const root = path.dirname(fileURLToPath(import.meta.url));
const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");
const dist = path.join(root, "dist");

fs.rmSync(dist, { recursive: true, force: true });
fs.mkdirSync(dist, { recursive: true });

const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning", target: "es2022" };

await esbuild.build({
  ...common,
  entryPoints: [path.join(root, "src/extension.ts")],
  outfile: path.join(dist, "extension.js"),
  platform: "node",
  format: "cjs",
  external: ["vscode"],
});

// The browser entry point (package.json "browser"): nothing it reaches may import a Node module
// (`node:*` or a bare built-in such as "fs"): the web worker host has none. The build fails
// naming the importer when one does (`noNodeBuiltins`); the browser's Platform
// (src/platform/browser.ts) stands in for what Node provides.
const webPkg = process.env.ACP_WASM_WEB_PKG ?? path.join(root, "..", "acp-wasm", "pkg", "web-client");
const haveWebPkg = fs.existsSync(path.join(webPkg, "acp_wasm.js"));
if (haveWebPkg) {
  await esbuild.build({
    ...common,
    entryPoints: [path.join(root, "src/extension.browser.ts")],
    outfile: path.join(dist, "extension.browser.js"),
    platform: "browser",
    format: "cjs",
    external: ["vscode"],
    alias: { "acp-wasm-web": path.join(webPkg, "acp_wasm.js") },
    // The web glue's default .wasm URL (import.meta.url) is never used: the bytes are passed in.
    logOverride: { "empty-import-meta": "silent" },
    plugins: [noNodeBuiltins(root)],
  });
  const globals = nodeGlobalsIn(fs.readFileSync(path.join(dist, "extension.browser.js"), "utf8"));
  if (globals.length) {
    console.error(`esbuild: the browser bundle uses Node globals (put them behind the Platform, src/platform/):\n${globals.join("\n")}`);
    process.exit(1);
  }
  fs.mkdirSync(path.join(dist, "acp-wasm-web"));
  fs.copyFileSync(path.join(webPkg, "acp_wasm_bg.wasm"), path.join(dist, "acp-wasm-web", "acp_wasm_bg.wasm"));
  console.log(`esbuild: bundled ${webPkg} into dist/extension.browser.js (+ dist/acp-wasm-web)`);
} else if (production) {
  console.error(`esbuild: the web build of the wasm engine is missing at ${webPkg}; run scripts/build-wasm.sh first`);
  process.exit(1);
} else {
  console.warn(`esbuild: warning: no web wasm engine at ${webPkg} (run scripts/build-wasm.sh); no browser bundle built`);
}

await esbuild.build({
  ...common,
  entryPoints: [path.join(root, "src/webview/main.ts")],
  outfile: path.join(dist, "webview.js"),
  platform: "browser",
  format: "iife",
});
fs.copyFileSync(path.join(root, "src/webview/webview.css"), path.join(dist, "webview.css"));

// The protocol trace panel (host/tracePanel.ts): the viewer `acp trace` serves too
// (../trace-viewer/), bundled with the page's glue.
await esbuild.build({
  ...common,
  entryPoints: [path.join(root, "src/webview/traceMain.ts")],
  outfile: path.join(dist, "trace.js"),
  platform: "browser",
  format: "iife",
});
fs.copyFileSync(path.join(root, "..", "trace-viewer", "viewer.css"), path.join(dist, "trace.css"));
// VS Code's icon font (@vscode/codicons, CC-BY-4.0: see README), served from dist/ under the
// webview's CSP (font-src and style-src are the extension's own files).
const codicons = path.join(root, "node_modules", "@vscode", "codicons", "dist");
for (const f of ["codicon.css", "codicon.ttf"]) fs.copyFileSync(path.join(codicons, f), path.join(dist, f));

// The wasm engine, acp-wasm's client build (the engine and acp-client's exports; wasm-bindgen's
// nodejs target), loaded at run time by src/protocol/engine.ts.
const wasmPkg = process.env.ACP_WASM_PKG ?? path.join(root, "..", "acp-wasm", "pkg", "nodejs-client");
if (fs.existsSync(path.join(wasmPkg, "acp_wasm.js"))) {
  fs.cpSync(wasmPkg, path.join(dist, "acp-wasm"), { recursive: true, filter: (src) => !src.endsWith(".gitignore") });
  console.log(`esbuild: copied ${wasmPkg} -> dist/acp-wasm`);
} else if (production) {
  console.error(`esbuild: the wasm engine is missing at ${wasmPkg}; run scripts/build-wasm.sh first`);
  process.exit(1);
} else {
  console.warn(`esbuild: warning: no wasm engine at ${wasmPkg} (run scripts/build-wasm.sh); the extension cannot start agents without it`);
}

// The engine with ACP v2 (draft), acp-wasm's client-v2 build, loaded instead of the one above
// only with the `acp.experimental.protocolV2` setting (src/platform/nodeEngine.ts).
const wasmPkgV2 = process.env.ACP_WASM_PKG_V2 ?? path.join(root, "..", "acp-wasm", "pkg", "nodejs-client-v2");
if (fs.existsSync(path.join(wasmPkgV2, "acp_wasm.js"))) {
  fs.cpSync(wasmPkgV2, path.join(dist, "acp-wasm-v2"), { recursive: true, filter: (src) => !src.endsWith(".gitignore") });
  console.log(`esbuild: copied ${wasmPkgV2} -> dist/acp-wasm-v2`);
} else if (production) {
  console.error(`esbuild: the ACP v2 wasm engine is missing at ${wasmPkgV2}; run ACP_WASM_FLAVOURS=client-v2 scripts/build-wasm.sh first`);
  process.exit(1);
} else {
  console.warn(`esbuild: warning: no ACP v2 wasm engine at ${wasmPkgV2}; the acp.experimental.protocolV2 setting cannot load it`);
}

if (tests) {
  const out = path.join(root, "out", "test");
  fs.rmSync(out, { recursive: true, force: true });
  const entries = fs.readdirSync(path.join(root, "test/unit")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    ...common,
    sourcemap: true,
    entryPoints: entries.map((f) => path.join(root, "test/unit", f)),
    outdir: out,
    platform: "node",
    format: "cjs",
    // Architecture Invariant check: bridge and protocol code must bundle without `vscode`.
    external: [],
    // The host's paths are Node's, as src/extension.ts sets them (src/platform/hostPaths.ts).
    inject: [path.join(root, "test/unit/setup-node-platform.ts")],
  });
}
