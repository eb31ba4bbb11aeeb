// The TypeScript face of the acp-wasm engine (acp-wasm/API.md). Everything protocol-shaped
// (framing, correlation, timeouts, permission auto-cancel) happens inside the engine, and the
// client's decisions are its exports too (policy.ts); this file only names its API so the rest
// of the extension is typed against it, and loads the package.
//
// Architecture Invariant: nothing under src/protocol imports `vscode`.

import * as fs from "node:fs";
import * as path from "node:path";
import { POLICY_EXPORTS, type PolicyModule } from "./policy";

export type Role = "client" | "agent";

export interface ConnectionOptions {
  maxMessageBytes?: number;
  batchPolicy?: "seed" | "rejectAll";
  requestTimeoutMs?: number;
  incomingTimeoutMs?: number;
  permissionTimeoutMs?: number;
}

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type AcpEvent =
  | { type: "request"; token: number; id: string | number | null; method: string; params?: unknown }
  | { type: "notification"; method: string; params?: unknown }
  | { type: "response"; requestId: number; method: string; result: unknown }
  | {
      type: "requestFailed";
      requestId: number;
      method: string;
      kind: "remote" | "timeout" | "cancelled" | "closed" | "invalidResponse";
      error: RpcErrorObject;
    }
  | { type: "autoAnswered"; token: number; method: string; reason: "timeout" | "sessionCancelled" | "closed" }
  | { type: "cancelRequested"; token: number }
  | { type: "protocolError"; kind: string; message: string }
  | { type: "closed"; reason: string };

/** One `AcpConnection` of the wasm package, as documented in acp-wasm/API.md. */
export interface EngineConnection {
  feed(bytes: Uint8Array, nowMs: number): void;
  feedString(text: string, nowMs: number): void;
  feedEof(nowMs: number): void;
  handleTimeout(nowMs: number): void;

  sendRequest(method: string, params: unknown, nowMs: number, timeoutMs?: number): number;
  notify(method: string, params: unknown): void;
  respond(token: number, result: unknown): void;
  respondError(token: number, code: number, message: string, data?: unknown): void;
  /** The same commands with params/result given as JSON text (`JSON.stringify(value)`). */
  sendRequestRaw(method: string, paramsJson: string | null | undefined, nowMs: number, timeoutMs?: number): number;
  notifyRaw(method: string, paramsJson?: string | null): void;
  respondRaw(token: number, resultJson: string): void;
  cancelRequest(requestId: number, nowMs: number): void;
  close(reason?: string): void;

  pollTransmit(): Uint8Array | undefined;
  pollTransmitString(): string | undefined;
  pollEvent(): AcpEvent | undefined;
  /** Every pending event at once, oldest first ([] when none); shares the queue with pollEvent(). */
  pollEvents(): AcpEvent[];
  pollTimeout(): number | undefined;

  readonly role: Role;
  readonly pendingOutgoing: number;
  readonly pendingIncoming: number;
  readonly isClosed: boolean;

  free(): void;
}

/** The package: the connection class, and the client's decisions (policy.ts). */
export interface EngineModule extends PolicyModule {
  AcpConnection: new (role: Role, options?: ConnectionOptions) => EngineConnection;
}

/** The directory names tried, in order, for the wasm package (wasm-bindgen `--target nodejs`). */
export function candidateEngineDirs(extensionRoot: string): string[] {
  const dirs: string[] = [];
  if (process.env.ACP_WASM_PKG) dirs.push(process.env.ACP_WASM_PKG);
  // Packaged: esbuild.mjs copies acp-wasm/pkg/node to dist/acp-wasm.
  dirs.push(path.join(extensionRoot, "dist", "acp-wasm"));
  // Development: the repository's build output.
  dirs.push(path.join(extensionRoot, "..", "acp-wasm", "pkg", "node"));
  return dirs;
}

/**
 * The JS entry point of a wasm-bindgen `--target nodejs` package directory, or undefined if it is
 * not one. scripts/build-wasm.sh writes `pkg/node/acp_wasm.js` next to a package.json that only
 * sets the module type, so `main` is optional.
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
    for (const name of ["AcpConnection", ...POLICY_EXPORTS] as const) {
      if (typeof module[name] !== "function") {
        throw new EngineNotFoundError(`${entry} does not export ${name}: rebuild it with scripts/build-wasm.sh`);
      }
    }
    return { module, dir };
  }
  throw new EngineNotFoundError(`acp-wasm package not found (tried ${tried.join(", ")}); build it with scripts/build-wasm.sh`);
}
