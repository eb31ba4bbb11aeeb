// Opening a session with a running agent: `session/resume` or `session/load` of a saved one
// when the agent can (sessions/reopen.ts), else `session/new`; with the MCP servers of the
// `acp.mcpServers` setting the agent can use (acp-client's selection); and sign-in when the
// agent answers "authentication required" (the SignIn given decides what may run).
//
// Architecture Invariant: this file does not import `vscode`.

import type { NewSessionResponse } from "@agentclientprotocol/sdk";
import type { AgentConnection } from "../protocol/agent";
import { isAuthRequired, type SessionDecisions } from "./decisions";
import { reopenHow } from "./reopen";

export type SignInOutcome = "authenticated" | "restart" | "cancelled";

/** What signs in when the agent requires it (src/auth.ts). */
export interface SignIn {
  signIn(conn: AgentConnection): Promise<SignInOutcome>;
}

/** The agent must be started again (new environment) before the session can be opened. */
export class RestartNeeded extends Error {
  override name = "RestartNeeded";
}

export interface Opened {
  sessionId: string;
  how: "new" | "resume" | "load";
  modes?: NewSessionResponse["modes"];
  configOptions?: NewSessionResponse["configOptions"];
  /** What the user should be told (servers left out, a reopen that failed). */
  notices: Array<{ level: "info" | "warning" | "error"; text: string }>;
}

export interface OpenOptions {
  cwd: string;
  /** A saved session to continue, if the agent can. */
  reopen?: string;
  /** The `acp.mcpServers` setting's value. */
  mcpSetting: unknown;
  decisions: SessionDecisions;
  signIn?: SignIn;
  /** Nothing of the conversation is saved here: `session/load` (the agent's replay shows it)
   *  rather than `session/resume` when the agent offers both. */
  preferLoad?: boolean;
  /** Called right before `session/load` (its replay arrives before the answer). */
  beforeLoad?(sessionId: string): void;
}

export async function openSession(conn: AgentConnection, o: OpenOptions): Promise<Opened> {
  const notices: Opened["notices"] = [];
  const sel = o.decisions.mcpServers(o.mcpSetting, conn.init.agentCapabilities?.mcpCapabilities);
  let servers: unknown[] = [];
  if ("error" in sel) notices.push({ level: "error", text: `acp.mcpServers: ${sel.error}; no MCP server is passed` });
  else {
    servers = sel.servers;
    for (const why of sel.leftOut) notices.push({ level: "warning", text: `MCP server left out: ${why}` });
  }
  let signedIn = false;
  const withAuth = async <T>(what: () => Promise<T>): Promise<T> => {
    try {
      return await what();
    } catch (e) {
      if (!isAuthRequired(e) || !o.signIn || signedIn) throw e;
      signedIn = true;
      const outcome = await o.signIn.signIn(conn);
      if (outcome === "restart") throw new RestartNeeded("the agent restarts with the sign-in's environment");
      if (outcome === "cancelled") throw e;
      return what();
    }
  };
  if (o.reopen) {
    const how = reopenHow(conn.init, o.preferLoad);
    const id = o.reopen;
    try {
      if (how === "resume") {
        const r = await withAuth(() => conn.resumeSession(id, o.cwd, servers));
        return { sessionId: id, how, modes: r?.modes, configOptions: r?.configOptions, notices };
      }
      if (how === "load") {
        o.beforeLoad?.(id);
        const r = await withAuth(() => conn.loadSession(id, o.cwd, servers));
        return { sessionId: id, how, modes: r?.modes, configOptions: r?.configOptions, notices };
      }
      notices.push({ level: "info", text: "This agent cannot reopen sessions; the conversation goes on in a new session." });
    } catch (e) {
      if (e instanceof RestartNeeded) throw e;
      notices.push({
        level: "warning",
        text: `Could not reopen the session (${o.decisions.errorWords(e)}); the conversation goes on in a new session.`,
      });
    }
  }
  const r = await withAuth(() => conn.newSession(o.cwd, servers));
  return { sessionId: r.sessionId, how: "new", modes: r.modes, configOptions: r.configOptions, notices };
}
