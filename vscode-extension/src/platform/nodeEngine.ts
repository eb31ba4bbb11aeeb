// The wasm engine on Node: acp-wasm's client build for `--target nodejs` (a CommonJS package
// that reads its .wasm with `fs`), found next to the bundle (dist/acp-wasm) or in the
// repository, and loaded with Node's own `require`.

import * as fs from "node:fs";
import * as path from "node:path";
import { adoptEngine, EngineNotFoundError, type EngineModule } from "../protocol/engine";

/** The directory names tried, in order, for the wasm package (wasm-bindgen `--target nodejs`). */
export function candidateEngineDirs(extensionRoot: string): string[] {
  const dirs: string[] = [];
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
export function loadEngine(extensionRoot: string): { module: EngineModule; dir: string } {
  const tried = candidateEngineDirs(extensionRoot);
  for (const dir of tried) {
    const entry = engineEntry(dir);
    if (!entry) continue;
    // A non-literal require: esbuild leaves it to Node at run time.
    const module = adoptEngine(require(entry) as EngineModule, entry);
    return { module, dir };
  }
  throw new EngineNotFoundError(`acp-wasm package not found (tried ${tried.join(", ")}); build it with scripts/build-wasm.sh`);
}
