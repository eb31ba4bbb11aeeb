// Opening a session with a running agent, as acp-client's session engine decides
// (acp-wasm's `Session`, acp-client/src/session/): the engine names the request (`session/new`,
// `session/resume` or `session/load`, from what the user asked, the agent's capabilities and
// whether a conversation is shown), takes its answer at its place in wire order (the end of a
// `session/load`'s replay, folded or shown as the engine decides), says what follows a refusal
// and what the user is told (its notices, already in the conversation). This file only sends
// what it names, with the MCP servers of the `acp.mcpServers` setting the agent can use
// (acp-client's selection), and signs in when the agent answers "authentication required"
// (the SignIn given decides what may run).
//
// Architecture Invariant: this file does not import `vscode`.

import type { SessionAfterFailure, SessionOpen, SessionOpened } from "acp-wasm-client";
import type { AgentConnection } from "../protocol/agent";
import { RpcError, type Answer } from "../protocol/client";
import type { WasmSession } from "../protocol/engine";
import { isAuthRequired, type SessionDecisions } from "./decisions";

export type { SessionIntent, SessionOpened } from "acp-wasm-client";

export type SignInOutcome = "authenticated" | "restart" | "cancelled";

/** What signs in when the agent requires it (src/auth.ts). */
export interface SignIn {
  signIn(conn: AgentConnection): Promise<SignInOutcome>;
}

/** The agent must be started again (new environment) before the session can be opened. */
export class RestartNeeded extends Error {
  override name = "RestartNeeded";
}

/** The session cannot be opened as asked with this agent (the engine's words). */
export class CannotOpen extends Error {
  override name = "CannotOpen";
}

export interface OpenOptions {
  cwd: string;
  /** The `acp.mcpServers` setting's value. */
  mcpSetting: unknown;
  decisions: SessionDecisions;
  signIn?: SignIn;
  /** The session may have changes for the view (its updates are folded inside wasm). */
  onFolded?(): void;
  /** Its updates are folded into it inside wasm (the fast path; the default). False when
   *  another session of the connection is folded into: this one's updates then reach it
   *  through the handler, routed by session id (host/conversations.ts). */
  attach?: boolean;
  /** Something of the extension's own to tell in the conversation (MCP servers left out). */
  notice(level: "info" | "warning" | "error", text: string): void;
}

/** Opens `session` (an engine, fresh, or restarted after `agentEnded`) with `conn`: its
 *  updates are folded into it from now on (unless `o.attach` is false). Resolves with what the engine made of the answer;
 *  rejects with `CannotOpen` (the engine's words), `RestartNeeded`, or the request's error when
 *  the connection failed. */
export async function openSession(conn: AgentConnection, session: WasmSession, o: OpenOptions): Promise<SessionOpened> {
  const sel = o.decisions.mcpServers(o.mcpSetting, conn.init.agentCapabilities?.mcpCapabilities);
  let servers: unknown[] = [];
  if ("error" in sel) o.notice("error", `acp.mcpServers: ${sel.error}; no MCP server is passed`);
  else {
    servers = sel.servers;
    for (const why of sel.leftOut) o.notice("warning", `MCP server left out: ${why}`);
  }
  let open: SessionOpen;
  try {
    open = JSON.parse(session.initialized(conn.initJson)) as SessionOpen;
  } catch (e) {
    throw new CannotOpen((e as Error).message);
  }
  if (o.attach !== false) conn.foldInto(session, o.onFolded);
  let signedIn = false;
  for (;;) {
    const got: { opened?: SessionOpened; after?: SessionAfterFailure; unreadable?: Error } = {};
    // At the answer's place in wire order: a load's replay ends here, and what follows it is
    // the conversation.
    const atAnswer = (a: Answer) => {
      if ("result" in a) {
        try {
          got.opened = JSON.parse(session.opened(JSON.stringify(a.result ?? null))) as SessionOpened;
        } catch (e) {
          got.unreadable = e as Error;
        }
        return;
      }
      const e = a.error;
      // Signing in and sending the same request again is not a refusal; nor is a connection
      // that ended (the agent's end is the lifecycle's: `agentEnded`).
      if (e.kind !== "remote" || (isAuthRequired(e) && o.signIn && !signedIn)) return;
      got.after = JSON.parse(session.openFailed(e.error.code, e.error.message ?? "")) as SessionAfterFailure;
    };
    try {
      await conn.open(open, o.cwd, servers, atAnswer);
    } catch (e) {
      if (!(e instanceof RpcError)) throw e;
      if (got.after === undefined && isAuthRequired(e) && o.signIn && !signedIn) {
        signedIn = true;
        const outcome = await o.signIn.signIn(conn);
        if (outcome === "restart") throw new RestartNeeded("the agent restarts with the sign-in's environment");
        if (outcome === "cancelled") throw e;
        continue;
      }
      if (got.after === undefined) throw e;
    }
    if (got.unreadable) throw new CannotOpen(`session/${open.send}: ${got.unreadable.message}`);
    if (got.opened) return got.opened;
    if (got.after?.next === "retry") {
      open = got.after.open;
      continue;
    }
    throw new CannotOpen(got.after?.message ?? "the session was not opened");
  }
}
