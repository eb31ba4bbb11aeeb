// Builds the extension (dist/extension.js, CommonJS for the extension host), the chat webview
// (dist/webview.js + dist/webview.css), the protocol trace panel (dist/trace.js + dist/trace.css,
// from ../trace-viewer/) and copies the wasm protocol engine (acp-wasm/pkg/nodejs-client)
// into dist/acp-wasm. With --tests, also bundles test/unit/*.test.ts to out/test/.
import * as esbuild from "esbuild";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

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
  });
}
