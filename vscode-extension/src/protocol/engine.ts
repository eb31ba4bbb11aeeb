// The acp-wasm engine, `client` build (acp-wasm/pkg/nodejs-client: the engine plus every
// acp-client export), and its loader. Everything protocol-shaped (framing, correlation,
// timeouts, permission auto-cancel) happens inside the engine; the client's decisions and the
// conversation model are its exports too (policy.ts). The types are the ones wasm-bindgen
// generates from the Rust sources (the package's .d.ts, type-only: `acp-wasm-client` is a
// tsconfig path to acp-wasm/pkg/nodejs-client/acp_wasm.d.ts), so nothing here restates them.
//
// Architecture Invariant: nothing under src/protocol imports `vscode`.

import * as fs from "node:fs";
import * as path from "node:path";
import type * as Wasm from "acp-wasm-client";

export type { AcpEvent, ConnectionOptions, JsonRpcError, Role } from "acp-wasm-client";

/** The package's exports: `AcpConnection`, `Session` (acp-client's session engine), `Thread`,
 *  acp-client's functions and acp-core's HTTP transport wire (`SseDecoder`, `httpOutgoing`,
 *  `httpAnswer`). */
export type EngineModule = typeof Wasm;
/** One `AcpConnection` (acp-wasm/API.md). */
export type EngineConnection = Wasm.AcpConnection;
/** acp-client's conversation model (acp-client/src/thread/), living in wasm memory. */
export type WasmThread = Wasm.Thread;
/** acp-client's session engine (acp-client/src/session/): one session's lifecycle and its
 *  conversation, living in wasm memory. */
export type WasmSession = Wasm.Session;

/** acp-core's SSE reader (acp_core::http_sse::SseDecoder). */
export type WasmSseDecoder = Wasm.SseDecoder;
/** An event the SSE reader skipped for its size, with acp-core's rule for it. */
export type SkippedSseEvent = Wasm.SkippedSseEvent;

/** The exports the extension needs; a package without one of them is an older build. */
export const REQUIRED_EXPORTS = [
  "AcpConnection",
  "Session",
  "Thread",
  "SseDecoder",
  "httpOutgoing",
  "httpAnswer",
  "decidePermission",
  "dismissedPermission",
  "unanswerablePermission",
  "chosenPermission",
  "classifyWrite",
  "describeWriteReason",
  "terminalQuestion",
  "terminalInvalidMessage",
  "envAllowlist",
  "validEnvName",
  "escapeLine",
  "permissionQuestion",
  "writeQuestion",
  "editHunks",
  "selectHunks",
  "undoStep",
  "failureError",
  "terminalLimits",
  "chooseAuth",
  "mcpServers",
  "agentPresets",
  "stopWords",
  "rpcWords",
  "windowsFindProgram",
  "windowsPlanSpawn",
  "windowsEnvAllowlist",
  "windowsShimReadLimit",
] as const satisfies ReadonlyArray<keyof EngineModule>;

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

export class EngineNotFoundError extends Error {
  override name = "EngineNotFoundError";
}

/** The module `loadEngine` loaded last (Node loads a package once: there is one engine). */
let loaded: EngineModule | undefined;

/**
 * The engine already loaded by `loadEngine`, for code that uses its plain functions without
 * being handed the module (remoteSse.ts's wire helpers). Throws if none was loaded yet.
 */
export function loadedEngine(): EngineModule {
  if (!loaded) throw new EngineNotFoundError("the wasm engine is not loaded yet (loadEngine first)");
  return loaded;
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
    const module = require(entry) as EngineModule;
    for (const name of REQUIRED_EXPORTS) {
      if (typeof module[name] !== "function") {
        throw new EngineNotFoundError(
          `${entry} does not export ${name}: it is not acp-wasm's client build (rebuild it with scripts/build-wasm.sh)`,
        );
      }
    }
    loaded = module;
    return { module, dir };
  }
  throw new EngineNotFoundError(`acp-wasm package not found (tried ${tried.join(", ")}); build it with scripts/build-wasm.sh`);
}
