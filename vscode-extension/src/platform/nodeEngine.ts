// The wasm engine on Node: acp-wasm's client build for `--target nodejs` (a CommonJS package
// that reads its .wasm with `fs`), found next to the bundle (dist/acp-wasm) or in the
// repository, and loaded with Node's own `require`.

import * as fs from "node:fs";
import * as path from "node:path";
import { adoptEngine, EngineNotFoundError, type EngineModule } from "../protocol/engine";
import { engineSpeaksV2 } from "../protocol/v2";

/** The directory names tried, in order, for the wasm package (wasm-bindgen `--target nodejs`);
 *  `v2`: the client-v2 build (ACP v2, draft: the `acp.experimental.protocolV2` setting). */
export function candidateEngineDirs(extensionRoot: string, v2 = false): string[] {
  const dirs: string[] = [];
  if (v2) {
    if (process.env.ACP_WASM_PKG_V2) dirs.push(process.env.ACP_WASM_PKG_V2);
    // Packaged: esbuild.mjs copies acp-wasm/pkg/nodejs-client-v2 to dist/acp-wasm-v2.
    dirs.push(path.join(extensionRoot, "dist", "acp-wasm-v2"));
    dirs.push(path.join(extensionRoot, "..", "acp-wasm", "pkg", "nodejs-client-v2"));
    return dirs;
  }
  if (process.env.ACP_WASM_PKG) dirs.push(process.env.ACP_WASM_PKG);
  // Packaged: esbuild.mjs copies acp-wasm/pkg/nodejs-client to dist/acp-wasm.
  dirs.push(path.join(extensionRoot, "dist", "acp-wasm"));
  // Development: the repository's build output.
  dirs.push(path.join(extensionRoot, "..", "acp-wasm", "pkg", "nodejs-client"));
  return dirs;
}

/**
 * The JS entry point of a wasm-bindgen `--target nodejs` package directory, or undefined if it is
 * not one. scripts/build-wasm.sh writes `acp_wasm.js` next to a package.json that only sets the
 * module type, so `main` is optional.
 */
export function engineEntry(dir: string): string | undefined {
  const names: string[] = [];
  const pkgJson = path.join(dir, "package.json");
  if (fs.existsSync(pkgJson)) {
    const pkg = JSON.parse(fs.readFileSync(pkgJson, "utf8")) as { main?: string };
    if (pkg.main) names.push(pkg.main);
  }
  names.push("acp_wasm.js", "index.js");
  for (const n of names) {
    const main = path.join(dir, n);
    if (fs.existsSync(main)) return main;
  }
  return undefined;
}

/**
 * Loads the wasm engine. Uses the Node `require` (not the bundler's) because the package is
 * a directory next to the bundle, not part of it.
 */
export function loadEngine(extensionRoot: string, v2 = false): { module: EngineModule; dir: string } {
  const tried = candidateEngineDirs(extensionRoot, v2);
  for (const dir of tried) {
    const entry = engineEntry(dir);
    if (!entry) continue;
    // A non-literal require: esbuild leaves it to Node at run time.
    const module = adoptEngine(require(entry) as EngineModule, entry);
    if (v2 && !engineSpeaksV2(module)) throw new EngineNotFoundError(`${entry} is not acp-wasm's client-v2 build (no ACP v2)`);
    return { module, dir };
  }
  const build = v2
    ? "ACP_WASM_FLAVOURS=client-v2 scripts/build-wasm.sh (or turn acp.experimental.protocolV2 off)"
    : "scripts/build-wasm.sh";
  throw new EngineNotFoundError(
    `acp-wasm package${v2 ? " with ACP v2" : ""} not found (tried ${tried.join(", ")}); build it with ${build}`,
  );
}
