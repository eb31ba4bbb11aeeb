// The acp-wasm engine, `client` build (acp-wasm/pkg/nodejs-client on Node, web-client in the
// browser: the engine plus every acp-client export), its types and the check of a loaded one
// (the loaders are the platform's: platform/nodeEngine.ts, platform/browserEngine.ts). Everything protocol-shaped (framing, correlation,
// timeouts, permission auto-cancel) happens inside the engine; the client's decisions and the
// conversation model are its exports too (policy.ts). The types are the ones wasm-bindgen
// generates from the Rust sources (the package's .d.ts, type-only: `acp-wasm-client` is a
// tsconfig path to acp-wasm/pkg/nodejs-client/acp_wasm.d.ts), so nothing here restates them.
//
// Architecture Invariant: nothing under src/protocol imports `vscode`.

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
  "PromptQueue",
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

export class EngineNotFoundError extends Error {
  override name = "EngineNotFoundError";
}

/** The module adopted last (a host loads the package once: there is one engine). */
let loaded: EngineModule | undefined;

/**
 * The engine already loaded (adoptEngine), for code that uses its plain functions without
 * being handed the module (remoteSse.ts's wire helpers). Throws if none was loaded yet.
 */
export function loadedEngine(): EngineModule {
  if (!loaded) throw new EngineNotFoundError("the wasm engine is not loaded yet (the platform loads it first)");
  return loaded;
}

/**
 * Checks that `module` is acp-wasm's client build (every REQUIRED_EXPORTS name) and makes it
 * the loaded engine (`loadedEngine`). `from` names where it came from, for the error.
 */
export function adoptEngine(module: EngineModule, from: string): EngineModule {
  for (const name of REQUIRED_EXPORTS) {
    if (typeof module[name] !== "function") {
      throw new EngineNotFoundError(
        `${from} does not export ${name}: it is not acp-wasm's client build (rebuild it with scripts/build-wasm.sh)`,
      );
    }
  }
  loaded = module;
  return module;
}
