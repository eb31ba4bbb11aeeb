// The agent's lifecycle: the selected agent started (the variables a sign-in kept, a remote
// agent's token, the engine's options and the client's capabilities), a failed start told in
// the chat and a notification (Retry; Enter Token when a remote agent refused the token), a
// crash or a dropped connection (a remote agent's too, and a remote agent not reachable again)
// told to acp-client's session engine, which decides whether to restart it and after what
// backoff (its crash budget) and re-establishes the session in the same conversation when the
// agent starts again; stop, restart, and the stop when the extension is deactivated. The state
// it is in is shown by status.ts.
// One reason to change: when and how the agent is started, restarted or stopped.

import * as vscode from "vscode";
import { storedEnv } from "../auth";
import type { Conversation } from "../bridges/conversation";
import type { TerminalManager } from "../bridges/terminal";
import { AgentConnection, AgentStartError, describeExit } from "../protocol/agent";
import type { IncomingHandler } from "../protocol/client";
import type { EngineModule } from "../protocol/engine";
import type { AgentTransports } from "../platform/platform";
import type { TraceSink } from "../protocol/log";
import type { SessionAfterEnd } from "acp-wasm-client";
import { engineSpeaksV2 } from "../protocol/v2";
import type { ClientPolicy } from "../protocol/policy";
import type { AgentSpec } from "../protocol/process";
import type { ExitInfo } from "../protocol/transport";
import type { RemoteTokens } from "../remoteTokens";
import { cfg, type HostSettings } from "./settings";
import type { AgentState, AgentStatus } from "./status";

/** What the lifecycle asks of the session side (the session controller). */
export interface SessionSide {
  /** The conversation shown: a failed start, a crash and a restart are told in it. */
  conversation(): Conversation;
  /** The agent was stopped: the session with it is over. */
  agentGone(): void;
  /** The agent's process or connection ended by itself (`why`, one line), or could not be
   *  reached again: the session engine decides what follows (a restart after a backoff, in
   *  which the session is re-established, or none) and tells the user in the conversation. */
  agentEnded(why: string): SessionAfterEnd;
  /** A restart the user asked for: the next session starts a new conversation. */
  startOver(): void;
  newSession(): Promise<unknown>;
  ensureSession(o?: { afterCrash?: boolean }): Promise<unknown>;
}

export interface LifecycleParts {
  extension: vscode.ExtensionContext;
  settings: HostSettings;
  status: AgentStatus;
  log: vscode.LogOutputChannel;
  trace: TraceSink;
  /** acp-client's decisions. */
  policy: ClientPolicy;
  engine(): EngineModule;
  remoteTokens: RemoteTokens;
  /** How this host reaches agents (the Platform's). */
  transports: AgentTransports;
  /** The terminal bridge, where the host can run commands (not in the browser). */
  terminals: TerminalManager | undefined;
  /** Whether the fs bridge answers fs/read_text_file and fs/write_text_file here. */
  hasFs: boolean;
  /** What answers the agent's requests and takes its notifications (one per agent started). */
  handler(): IncomingHandler;
}

/** The remote failures that are tried again after a dropped connection (the server away). */
const UNREACHABLE = ["refused", "network", "timeout", "closed"];

export class AgentLifecycle {
  private state: AgentState = "stopped";
  private stateDetail = "";
  private running: AgentConnection | undefined;
  private starting: Promise<AgentConnection> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** The agent is being started again after a crash or a dropped connection. */
  private reconnecting = false;
  private disposed = false;
  private sessions!: SessionSide;

  constructor(private readonly p: LifecycleParts) {}

  /** The session side, given once when it is made (it needs this lifecycle first). */
  serve(sessions: SessionSide): void {
    this.sessions = sessions;
  }

  /** The running agent, if any. */
  get conn(): AgentConnection | undefined {
    return this.running;
  }

  /** No agent running or starting, and none failed or crashed: the chat view may start one. */
  get idle(): boolean {
    return !this.running && !this.starting && this.state === "stopped";
  }

  /** The extension was deactivated (shutDown). */
  get isShutDown(): boolean {
    return this.disposed;
  }

  setState(state: AgentState, detail: string): void {
    this.state = state;
    this.stateDetail = detail;
    this.p.status.show(state, detail, this.running);
  }

  /** The state shown again (the chat view was loaded). */
  showState(): void {
    this.setState(this.state, this.stateDetail);
  }

  /** A turn started (`busy`) or ended: shown while the agent is ready. */
  showBusy(busy: boolean): void {
    if (this.state === "ready") this.p.status.busy(busy, this.running?.spec.name);
  }

  /** The running agent, starting it if needed. */
  async ensureAgent(): Promise<AgentConnection> {
    if (this.running && !this.running.isStopping) return this.running;
    if (this.starting) return this.starting;
    this.starting = this.startAgent().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async startAgent(): Promise<AgentConnection> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const { log, settings, extension } = this.p;
    let spec: AgentSpec | undefined;
    try {
      spec = settings.selectedAgent();
      this.setState("starting", `starting ${spec.name}…`);
      const engine = this.p.engine();
      const permissionTimeout = cfg().get<number>("permissions.timeoutSeconds", 600);
      const cwd = spec.cwd ?? settings.workspaceCwd();
      // A remote agent's token: kept, else asked for (a password box) before connecting; never
      // asked for a URL it could not be sent to.
      const allowInsecure = cfg().get<boolean>("remote.allowInsecure", false);
      const refused = spec.url ? AgentConnection.tokenRefusal(engine, spec.url, allowInsecure) : undefined;
      if (refused) throw new AgentStartError(`${spec.name}: ${refused}`, "");
      const token = spec.url ? await this.p.remoteTokens.token(spec.url) : undefined;
      if (spec.url && token === undefined) throw new AgentStartError(`${spec.name}: no token given for ${spec.url}`, "");
      const conn = await AgentConnection.start(
        // Variables kept by a sign-in (SecretStorage) go to this agent only (a local one: a
        // remote agent has no environment here).
        {
          ...spec,
          env: spec.url ? undefined : { ...spec.env, ...(await storedEnv(extension.secrets, spec.name)) },
          cwd,
          envPolicy: settings.envPolicy(),
        },
        {
          engine,
          engineOptions: { permissionTimeoutMs: permissionTimeout > 0 ? permissionTimeout * 1000 : undefined },
          // auth.terminal: a `terminal` sign-in method runs in a VS Code terminal (src/auth.ts);
          // not for a remote agent (its login command would run here, not where it runs).
          capabilities: {
            fs: { readTextFile: this.p.hasFs, writeTextFile: this.p.hasFs },
            terminal: this.p.terminals !== undefined,
            auth: { terminal: !spec.url && this.p.terminals !== undefined },
          },
          transports: this.p.transports,
          token: token || undefined,
          allowInsecure,
          clientInfo: { name: "acp-rs-vscode", version: String(extension.extension.packageJSON.version ?? "0") },
          handler: this.p.handler(),
          // The acp.experimental.protocolV2 setting loaded the engine with v2: offered.
          offerV2: engineSpeaksV2(engine),
          log,
          trace: this.p.trace,
          onStderr: (s) => log.info(`[${spec!.name} stderr] ${s.replace(/\n$/, "")}`),
        },
      );
      if (this.disposed) {
        await conn.stop(500);
        throw new Error("extension deactivated");
      }
      this.running = conn;
      void conn.exited.then((exit) => this.onAgentExit(conn, exit));
      this.setState("ready", "");
      log.info(`agent ready: ${conn.agentTitle}`);
      return conn;
    } catch (e) {
      const err = e as Error;
      const tail = e instanceof AgentStartError ? e.stderrTail.trim() : "";
      this.setState("failed", `${spec?.name ?? "agent"} failed to start`);
      log.error(`${err.message}${tail ? `\nstderr (last lines):\n${tail}` : ""}`);
      this.sessions.conversation().notice("error", `${err.message}${tail ? `\n${lastLines(tail, 5)}` : ""}`);
      const remote = AgentConnection.remoteFailure(e)?.kind;
      if (spec?.url && remote === "unauthorized") void this.wrongTokenNotification(spec.url, err.message);
      // A reconnection that will be tried again (retryUnreachable) says so in the chat only.
      else if (!(this.reconnecting && remote && UNREACHABLE.includes(remote))) void this.startFailureNotification(err.message, tail);
      throw err;
    }
  }

  private async startFailureNotification(message: string, tail: string): Promise<void> {
    const text = `ACP: ${message}${tail ? ` — stderr: ${lastLines(tail, 3).slice(-400)}` : ""}`;
    const pick = await vscode.window.showErrorMessage(text, "Show Log", "Open Settings", "Retry");
    if (pick === "Show Log") this.p.log.show(true);
    else if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "acp.");
    else if (pick === "Retry") void this.restart();
  }

  /** A remote agent refused the token (HTTP 401): offer to enter it again. */
  private async wrongTokenNotification(url: string, message: string): Promise<void> {
    this.sessions
      .conversation()
      .notice("info", `The token kept for ${url} was refused: "Enter Token" asks for it again (or run "ACP: Forget Remote Agent Token").`);
    const pick = await vscode.window.showErrorMessage(`ACP: ${message}`, "Enter Token", "Show Log");
    if (pick === "Show Log") this.p.log.show(true);
    else if (pick === "Enter Token") {
      await this.p.remoteTokens.forget(url);
      // The conversation (and a session to reopen after a dropped connection) is kept.
      await this.sessions.ensureSession().catch(() => undefined);
    }
  }

  private onAgentExit(conn: AgentConnection, exit: ExitInfo): void {
    if (this.running !== conn) return; // an agent stop() already cleaned up after
    const { log } = this.p;
    this.p.terminals?.disposeAll();
    this.running = undefined;
    if (conn.isStopping || this.disposed) {
      this.sessions.agentGone();
      this.setState("stopped", "stopped");
      return;
    }
    const tail = conn.transport.stderrTail.text().trim();
    const what = `${conn.spec.name} ${describeExit(exit)}`;
    log.error(`${what}${tail ? `\nstderr (last lines):\n${tail}` : ""}`);
    // The engine fails a running turn with why (its partial answer kept), says whether and when
    // the agent starts again, and re-establishes the session then.
    const after = this.sessions.agentEnded(`${describeExit(exit)}${tail ? ` (stderr: ${lastLines(tail, 1)})` : ""}`);
    const stderr = tail ? ` — stderr: ${lastLines(tail, 3).slice(-400)}` : "";
    if (after.next === "restart") {
      this.restartAfter(conn.spec.name, after);
      void vscode.window
        .showWarningMessage(`ACP: ${what}${stderr}. Restarting it.`, "Show Log")
        .then((pick) => pick === "Show Log" && log.show(true));
    } else {
      this.gaveUp(`ACP: ${what}${stderr}`, after);
    }
  }

  /** What the engine said after the agent ended, in one line. */
  private static told(after: SessionAfterEnd): string {
    return after.notices.map((n) => n.text).join(" ");
  }

  /** The engine gave up (its crash budget is spent): said in a notification with Restart. */
  private gaveUp(what: string, after: SessionAfterEnd): void {
    this.setState("failed", "ended too often; stopped");
    this.p.log.error(AgentLifecycle.told(after));
    void vscode.window.showErrorMessage(`${what}. ${AgentLifecycle.told(after)}`, "Restart", "Show Log").then((pick) => {
      if (pick === "Restart") void this.restart();
      else if (pick === "Show Log") this.p.log.show(true);
    });
  }

  /** Starts the agent again after the engine's backoff, in the same conversation (the engine
   *  re-establishes its session). */
  private restartAfter(name: string, after: Extract<SessionAfterEnd, { next: "restart" }>): void {
    const ms = after.afterMs;
    this.p.log.warn(`restarting ${name} in ${ms} ms: ${AgentLifecycle.told(after)}`);
    this.setState("crashed", `ended; restarting in ${Math.round(ms / 100) / 10}s`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.reconnecting = true;
      void this.sessions
        .ensureSession({ afterCrash: true })
        .then(
          () => undefined,
          (e: unknown) => this.retryUnreachable(e),
        )
        .finally(() => (this.reconnecting = false));
    }, ms);
  }

  /** A remote agent not reachable again after its connection dropped (its server restarting,
   *  the network away) ended again: the engine decides, within the same crash budget. */
  private retryUnreachable(e: unknown): void {
    const kind = AgentConnection.remoteFailure(e)?.kind;
    if (this.disposed || !kind || !UNREACHABLE.includes(kind)) return;
    const name = this.p.settings.selectedAgentName() ?? "the agent";
    const after = this.sessions.agentEnded(`cannot be reached: ${(e as Error).message}`);
    if (after.next === "restart") this.restartAfter(name, after);
    else this.gaveUp(`ACP: ${name} cannot be reached again`, after);
  }

  async stop(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const conn = this.running ?? (await this.starting?.catch(() => undefined));
    this.running = undefined;
    this.sessions.agentGone();
    if (conn) {
      const exit = await conn.stop();
      this.p.log.info(`agent ${conn.spec.name} stopped: ${describeExit(exit)}`);
    }
    this.p.terminals?.disposeAll();
    this.setState("stopped", "stopped");
  }

  async restart(): Promise<void> {
    // A restart the user asked for starts a new conversation (with a new crash budget).
    this.sessions.startOver();
    await this.stop();
    await this.sessions.newSession().catch(() => undefined);
  }

  /** The extension is deactivated: no agent starts any more, the running one is stopped
   *  (pending permission requests are answered `cancelled` by the engine's close, then stdin
   *  closed, grace, TERM, KILL of its group). */
  async shutDown(): Promise<void> {
    this.disposed = true;
    try {
      await this.stop();
    } catch (e) {
      this.p.log.error(`stopping the agent: ${(e as Error).message}`);
    }
  }
}

function lastLines(text: string, n: number): string {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .slice(-n)
    .join("\n");
}
