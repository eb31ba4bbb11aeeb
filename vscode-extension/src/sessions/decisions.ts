// acp-client's decisions for opening sessions and telling the user how things went, typed
// (acp-wasm's client build: chooseAuth, mcpServers, stopWords, rpcWords). Like
// protocol/policy.ts, nothing here decides: values become the JSON text the exports take and
// their answers come back as values.
//
// Architecture Invariant: this file does not import `vscode`.

import type { AuthChoice, McpSelection } from "acp-wasm-client";
import type { EngineModule } from "../protocol/engine";
import { RpcError } from "../protocol/client";

export type { AuthChoice, McpSelection } from "acp-wasm-client";

export class SessionDecisions {
  constructor(private readonly module: () => EngineModule) {}

  /** Which `authMethods` entry to use (acp-client auth::choose): `setVars` are the variables set
   *  (non-empty) in the agent's environment; `requested` the method the user picked, or null. */
  chooseAuth(methods: readonly unknown[], setVars: readonly string[], requested: string | null): AuthChoice {
    return JSON.parse(this.module().chooseAuth(JSON.stringify(methods), JSON.stringify(setVars), requested)) as AuthChoice;
  }

  /** The MCP servers to send, per the agent's `mcpCapabilities` (acp-client mcp::select), from
   *  the `acp.mcpServers` setting's value (the `mcpServers` object of an MCP config). */
  mcpServers(setting: unknown, caps: unknown): McpSelection {
    const config = JSON.stringify({ mcpServers: setting ?? {} });
    return JSON.parse(this.module().mcpServers(config, JSON.stringify(caps ?? null))) as McpSelection;
  }

  /** A stop reason in plain words. */
  stopWords(stopReason: string): string {
    return this.module().stopWords(stopReason);
  }

  /** An error in plain words: an agent's JSON-RPC error through acp-client's words (the method
   *  named), a closed connection or anything else as its message. */
  errorWords(e: unknown): string {
    if (e instanceof RpcError && e.kind === "remote") {
      const data = e.error.data as { reason?: unknown } | undefined;
      const reason = typeof data?.reason === "string" ? data.reason : null;
      return `${e.method}: ${this.module().rpcWords(e.error.code, e.error.message ?? "", reason)}`;
    }
    if (e instanceof RpcError && e.kind === "closed") return `${e.method}: the connection to the agent closed`;
    if (e instanceof RpcError && e.kind === "timeout") return `${e.method}: the agent did not answer in time`;
    return e instanceof Error ? e.message : String(e);
  }
}

/** The agent answered "authentication required" (-32000). */
export function isAuthRequired(e: unknown): boolean {
  return e instanceof RpcError && e.kind === "remote" && e.error.code === -32000;
}
