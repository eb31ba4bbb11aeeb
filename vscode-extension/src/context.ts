// AcpContext: the one object that owns every disposable, the log output channel, the raw trace
// channel, the status bar item, the chat view and the agent process lifecycle (start, crash,
// restart with backoff and a crash budget, stop on deactivate).

import * as path from "node:path";
import * as vscode from "vscode";
import { demoAgentSpec, parseAgentSettings, resolveDemoAgentBinary, DEMO_AGENT_NAME } from "./agents";
import { Coalescer, mergeSessionUpdates, type TaggedUpdate } from "./bridges/coalescer";
import { FsBridge } from "./bridges/fs";
import { PermissionBridge } from "./bridges/permission";
import { ClientRouter } from "./bridges/router";
import { TerminalManager } from "./bridges/terminal";
import { AgentConnection, AgentStartError, describeExit } from "./protocol/agent";
import { loadEngine, type EngineModule } from "./protocol/engine";
import { ClientPolicy } from "./protocol/policy";
import type { TraceSink } from "./protocol/log";
import type { AgentSpec, ExitInfo } from "./protocol/process";
import { envPolicyFrom, type EnvPolicy } from "./protocol/env";
import { CrashBudget } from "./protocol/supervisor";
import type { SessionNotification, ToolCallContent } from "./protocol/types";
import { CHAT_VIEW_ID, ChatViewProvider } from "./ui/chatView";
import { DIFF_SCHEME, DiffContentProvider } from "./ui/diff";
import { VsCodeDocumentHost } from "./ui/documentHost";
import { VsCodePermissionPrompter, VsCodeTerminalApprover, VsCodeWriteApprover } from "./ui/prompter";
import { PseudoterminalFactory } from "./ui/terminalDisplay";
import type { HostToWebview, SessionInfo, WebviewToHost } from "./webview/messages";

type State = "stopped" | "starting" | "ready" | "crashed" | "failed";

const cfg = () => vscode.workspace.getConfiguration("acp");
const workspaceFolders = () => (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);

export class AcpContext implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  readonly log: vscode.LogOutputChannel;
  private traceChannel: vscode.OutputChannel | undefined;
  private readonly status: vscode.StatusBarItem;
  private readonly chat: ChatViewProvider;
  private readonly diffs = new DiffContentProvider();
  private readonly terminals: TerminalManager;
  private readonly permission: PermissionBridge;
  private readonly fsBridge: FsBridge;
  private readonly coalescer: Coalescer<TaggedUpdate>;
  private readonly budget: CrashBudget;
  private engine: EngineModule | undefined;
  /** acp-client's decisions, from the engine (loaded on first use). */
  private readonly policy = new ClientPolicy(() => this.loadEngineOnce());
  /** session/cancel was sent for the current turn (a `cancelled` permission answer sends it once). */
  private turnCancelled = false;

  private state: State = "stopped";
  private stateDetail = "";
  private conn: AgentConnection | undefined;
  private starting: Promise<AgentConnection> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private session: SessionInfo | null = null;
  private busy = false;
  private toolContent = new Map<string, ToolCallContent[]>();
  private disposed = false;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.log = this.own(vscode.window.createOutputChannel("ACP", { log: true }));
    this.status = this.own(vscode.window.createStatusBarItem("acp.status", vscode.StatusBarAlignment.Left, 100));
    this.status.name = "ACP agent";
    this.status.command = "acp.openChat";
    this.status.show();
    this.budget = new CrashBudget({
      maxCrashes: cfg().get<number>("restart.maxCrashes", 3),
      windowMs: cfg().get<number>("restart.windowMinutes", 3) * 60_000,
      baseDelayMs: 1000,
      maxDelayMs: 30_000,
    });
    this.chat = this.own(new ChatViewProvider(extension.extensionUri, (m) => this.onWebviewMessage(m)));
    this.own(vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.chat, { webviewOptions: { retainContextWhenHidden: true } }));
    this.own(vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this.diffs));
    this.terminals = new TerminalManager(
      new PseudoterminalFactory(),
      () => ({
        useShell: cfg().get<boolean>("terminal.useShell", false),
        approval: cfg().get<string>("terminal.approval", "ask") === "allow" ? "allow" : "ask",
        envPolicy: this.envPolicy(),
        workspaceFolders: workspaceFolders(),
      }),
      this.log,
      this.policy,
      new VsCodeTerminalApprover(),
    );
    this.own({ dispose: () => this.terminals.disposeAll() });
    this.permission = new PermissionBridge(
      new VsCodePermissionPrompter(),
      () => ({ autoApprove: cfg().get<boolean>("permissions.autoApprove", false) }),
      this.log,
      this.policy,
      (sessionId) => this.cancelTurn(sessionId),
    );
    this.fsBridge = new FsBridge(
      new VsCodeDocumentHost(() => cfg().get<boolean>("fs.saveAfterWrite", true)),
      () => ({ allowWritesOutsideWorkspace: cfg().get<boolean>("fs.allowWritesOutsideWorkspace", false) }),
      this.policy,
      new VsCodeWriteApprover(this.diffs),
      this.log,
    );
    this.coalescer = new Coalescer<TaggedUpdate>(
      (items) => this.chat.post({ type: "updates", updates: items.map((i) => i.update) }),
      mergeSessionUpdates,
      undefined,
      cfg().get<number>("chat.updateIntervalMs", 50),
    );
    this.own({ dispose: () => this.coalescer.dispose() });
    this.registerCommands();
    const syncTrace = () => ((this.trace as { enabled: boolean }).enabled = cfg().get<boolean>("trace.raw", false));
    syncTrace();
    this.own(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("acp.trace.raw") && syncTrace()));
    this.setState("stopped", "not started");
  }

  /** The environment policy from the user's settings (acp-client's allowlist + passthrough). */
  private envPolicy(): EnvPolicy {
    const { ignored, ...policy } = envPolicyFrom(
      this.policy,
      cfg().get<unknown[]>("env.passthrough", []),
      cfg().get<boolean>("env.inheritAll", false),
    );
    if (ignored.length)
      this.log.warn(
        `acp.env.passthrough: ignoring ${ignored.map((n) => JSON.stringify(n)).join(", ")} (not a variable name or NAME_PREFIX*)`,
      );
    return policy;
  }

  /** Sends session/cancel for the session once per turn (before a `cancelled` permission answer). */
  private cancelTurn(sessionId: string): void {
    if (this.turnCancelled && this.session?.sessionId === sessionId) return;
    if (this.session?.sessionId === sessionId) this.turnCancelled = true;
    this.conn?.cancel(sessionId);
  }

  private own<T extends vscode.Disposable>(d: T): T {
    this.disposables.push(d);
    return d;
  }

  // ---- commands -----------------------------------------------------------------------------

  private registerCommands(): void {
    const reg = (id: string, fn: (...a: unknown[]) => unknown) => this.own(vscode.commands.registerCommand(id, fn));
    reg("acp.openChat", () => vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`));
    reg("acp.start", () => this.ensureSession().catch(() => undefined));
    reg("acp.newSession", () => this.newSession().catch(() => undefined));
    reg("acp.cancel", () => this.cancel());
    reg("acp.restart", () => this.restart());
    reg("acp.stop", () => this.stop());
    reg("acp.showLog", () => this.log.show(true));
    reg("acp.toggleTrace", async () => {
      const on = !cfg().get<boolean>("trace.raw", false);
      await cfg().update("trace.raw", on, vscode.ConfigurationTarget.Global);
      if (on) this.traceOutput().show(true);
      void vscode.window.showInformationMessage(`ACP raw trace ${on ? "on" : "off"}`);
    });
    reg("acp.selectAgent", async () => {
      const agents = this.agents();
      const pick = await vscode.window.showQuickPick(
        agents.map((a) => ({ label: a.name, description: [a.command, ...a.args].join(" ") })),
        { title: "ACP: select the agent to use" },
      );
      if (!pick) return;
      await cfg().update("defaultAgent", pick.label, vscode.ConfigurationTarget.Global);
      await this.restart();
    });
  }

  // ---- agents -------------------------------------------------------------------------------

  agents(): AgentSpec[] {
    const { agents, errors } = parseAgentSettings(cfg().get("agents", []));
    for (const e of errors) this.log.warn(`settings: ${e}`);
    const demoBin = resolveDemoAgentBinary(cfg().get<string>("demoAgentPath"), process.env.PATH, this.extension.extensionPath);
    const demo = demoAgentSpec(demoBin?.path);
    return demo && !agents.some((a) => a.name === demo.name) ? [demo, ...agents] : agents;
  }

  private selectedAgent(): AgentSpec {
    const agents = this.agents();
    const want = cfg().get<string>("defaultAgent", DEMO_AGENT_NAME);
    const spec = agents.find((a) => a.name === want) ?? agents[0];
    if (!spec) {
      throw new AgentStartError(
        "no agent configured: the demo agent's `acp` binary was not found (set acp.demoAgentPath, put `acp` on PATH, or add an agent to acp.agents)",
        "",
      );
    }
    return spec;
  }

  private traceOutput(): vscode.OutputChannel {
    if (!this.traceChannel) this.traceChannel = this.own(vscode.window.createOutputChannel("ACP Trace"));
    return this.traceChannel;
  }

  private readonly trace: TraceSink = {
    enabled: false, // kept in sync with acp.trace.raw by the configuration listener

    write: (direction, text) => {
      const arrow = direction === "send" ? "→" : direction === "recv" ? "←" : "stderr";
      this.traceOutput().append(`${arrow} ${text}${text.endsWith("\n") ? "" : "\n"}`);
    },
  };

  // ---- lifecycle ------------------------------------------------------------------------------

  private setState(state: State, detail: string): void {
    this.state = state;
    this.stateDetail = detail;
    const icon = { stopped: "$(circle-slash)", starting: "$(loading~spin)", ready: "$(hubot)", crashed: "$(warning)", failed: "$(error)" }[
      state
    ];
    const name = this.conn?.spec.name ?? "agent";
    this.status.text = `${icon} ACP: ${state === "ready" ? name : detail}`;
    this.status.tooltip = `ACP ${name}: ${state}${detail ? ` (${detail})` : ""}. Click to open the chat.`;
    this.status.backgroundColor = state === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.chat.post({ type: "status", state, text: state === "ready" ? `${this.conn?.agentTitle ?? name}` : `ACP: ${detail}` });
  }

  /** The running agent, starting it if needed. */
  async ensureAgent(): Promise<AgentConnection> {
    if (this.conn && !this.conn.isStopping) return this.conn;
    if (this.starting) return this.starting;
    this.starting = this.startAgent().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private loadEngineOnce(): EngineModule {
    if (!this.engine) {
      const { module, dir } = loadEngine(this.extension.extensionPath);
      this.log.info(`protocol engine: ${dir}`);
      this.engine = module;
    }
    return this.engine;
  }

  private async startAgent(): Promise<AgentConnection> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    let spec: AgentSpec | undefined;
    try {
      spec = this.selectedAgent();
      this.setState("starting", `starting ${spec.name}…`);
      const engine = this.loadEngineOnce();
      const permissionTimeout = cfg().get<number>("permissions.timeoutSeconds", 600);
      const cwd = spec.cwd ?? this.workspaceCwd();
      const conn = await AgentConnection.start(
        { ...spec, cwd, envPolicy: this.envPolicy() },
        {
          engine,
          engineOptions: { permissionTimeoutMs: permissionTimeout > 0 ? permissionTimeout * 1000 : undefined },
          capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
          clientInfo: { name: "acp-rs-vscode", version: String(this.extension.extension.packageJSON.version ?? "0") },
          handler: new ClientRouter({
            permission: this.permission,
            fs: this.fsBridge,
            terminal: this.terminals,
            onSessionUpdate: (n) => this.onSessionUpdate(n),
            log: this.log,
          }),
          log: this.log,
          trace: this.trace,
          onStderr: (s) => this.log.info(`[${spec!.name} stderr] ${s.replace(/\n$/, "")}`),
        },
      );
      if (this.disposed) {
        await conn.stop(500);
        throw new Error("extension deactivated");
      }
      this.conn = conn;
      void conn.exited.then((exit) => this.onAgentExit(conn, exit));
      this.setState("ready", "");
      this.log.info(`agent ready: ${conn.agentTitle}`);
      return conn;
    } catch (e) {
      const err = e as Error;
      const tail = e instanceof AgentStartError ? e.stderrTail.trim() : "";
      this.setState("failed", `${spec?.name ?? "agent"} failed to start`);
      this.log.error(`${err.message}${tail ? `\nstderr (last lines):\n${tail}` : ""}`);
      this.chat.post({ type: "notice", level: "error", text: `${err.message}${tail ? `\n${lastLines(tail, 5)}` : ""}` });
      void this.startFailureNotification(err.message, tail);
      throw err;
    }
  }

  private async startFailureNotification(message: string, tail: string): Promise<void> {
    const text = `ACP: ${message}${tail ? ` — stderr: ${lastLines(tail, 3).slice(-400)}` : ""}`;
    const pick = await vscode.window.showErrorMessage(text, "Show Log", "Open Settings", "Retry");
    if (pick === "Show Log") this.log.show(true);
    else if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "acp.");
    else if (pick === "Retry") void this.restart();
  }

  private onAgentExit(conn: AgentConnection, exit: ExitInfo): void {
    if (this.conn !== conn) return; // an agent stop() already cleaned up after
    this.terminals.disposeAll();
    this.conn = undefined;
    this.session = null;
    this.coalescer.flush();
    if (conn.isStopping || this.disposed) {
      this.setState("stopped", "stopped");
      return;
    }
    const tail = conn.process.stderrTail.text().trim();
    const what = `${conn.spec.name} ${describeExit(exit)}`;
    this.log.error(`${what}${tail ? `\nstderr (last lines):\n${tail}` : ""}`);
    const decision = this.budget.recordCrash(Date.now());
    if (decision.restart) {
      this.log.warn(`restarting ${conn.spec.name} in ${decision.delayMs} ms (crash ${decision.crashesInWindow} in the budget window)`);
      this.setState("crashed", `crashed; restarting in ${Math.round(decision.delayMs / 1000)}s`);
      this.chat.post({
        type: "notice",
        level: "error",
        text: `${what}. Restarting in ${Math.round(decision.delayMs / 1000)}s (the session is lost).`,
      });
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        // A new process knows nothing of the old sessions: open a fresh one.
        void this.ensureSession().catch(() => undefined);
      }, decision.delayMs);
    } else {
      this.setState("failed", `crashed ${decision.crashesInWindow} times; stopped`);
      this.chat.post({
        type: "notice",
        level: "error",
        text: `${what}. It crashed ${decision.crashesInWindow} times recently; not restarting.`,
      });
      void vscode.window
        .showErrorMessage(
          `ACP: ${what}; it crashed ${decision.crashesInWindow} times recently, so it is not restarted.${tail ? ` stderr: ${lastLines(tail, 3).slice(-400)}` : ""}`,
          "Restart",
          "Show Log",
        )
        .then((pick) => {
          if (pick === "Restart") void this.restart();
          else if (pick === "Show Log") this.log.show(true);
        });
    }
  }

  async stop(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const conn = this.conn ?? (await this.starting?.catch(() => undefined));
    this.conn = undefined;
    this.session = null;
    if (conn) {
      const exit = await conn.stop();
      this.log.info(`agent ${conn.spec.name} stopped: ${describeExit(exit)}`);
    }
    this.terminals.disposeAll();
    this.setState("stopped", "stopped");
  }

  async restart(): Promise<void> {
    this.budget.reset();
    await this.stop();
    this.chat.post({ type: "session", info: null });
    await this.newSession().catch(() => undefined);
  }

  // ---- sessions and prompts ---------------------------------------------------------------

  private workspaceCwd(): string {
    const f = vscode.workspace.workspaceFolders?.find((w) => w.uri.scheme === "file");
    return f ? f.uri.fsPath : path.resolve(process.env.HOME ?? "/");
  }

  async newSession(): Promise<SessionInfo> {
    const conn = await this.ensureAgent();
    if (this.busy && this.session) conn.cancel(this.session.sessionId);
    const res = await conn.newSession(this.workspaceCwd());
    this.session = { sessionId: res.sessionId, agent: conn.agentTitle, modes: res.modes ?? null, configOptions: res.configOptions ?? null };
    this.toolContent.clear();
    this.chat.post({ type: "session", info: this.session });
    return this.session;
  }

  async ensureSession(): Promise<{ conn: AgentConnection; session: SessionInfo }> {
    const conn = await this.ensureAgent();
    const session = this.session ?? (await this.newSession());
    return { conn, session };
  }

  async prompt(text: string): Promise<void> {
    if (this.busy) return;
    this.setBusy(true);
    this.turnCancelled = false;
    try {
      const { conn, session } = await this.ensureSession();
      this.chat.post({ type: "userPrompt", text });
      const res = await conn.prompt(session.sessionId, [{ type: "text", text }]);
      this.coalescer.flush();
      this.chat.post({ type: "turnEnded", stopReason: res.stopReason });
    } catch (e) {
      this.coalescer.flush();
      this.chat.post({ type: "turnEnded", stopReason: "error", message: (e as Error).message });
    } finally {
      this.setBusy(false);
    }
  }

  cancel(): void {
    if (this.conn && this.session) {
      this.turnCancelled = true;
      this.conn.cancel(this.session.sessionId);
      this.log.info("cancel requested by the user");
    }
  }

  private setBusy(busy: boolean): void {
    this.busy = busy;
    this.chat.post({ type: "busy", busy });
    if (this.state === "ready") this.status.text = `${busy ? "$(sync~spin)" : "$(hubot)"} ACP: ${this.conn?.spec.name ?? ""}`;
  }

  private onSessionUpdate(n: SessionNotification): void {
    if (!this.session || n.sessionId !== this.session.sessionId) {
      this.log.warn(`session/update for unknown session ${n.sessionId} dropped`);
      return;
    }
    const u = n.update;
    if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && Array.isArray(u.content)) {
      this.toolContent.set(u.toolCallId, u.content);
    }
    if (u.sessionUpdate === "current_mode_update" && this.session.modes) this.session.modes.currentModeId = u.currentModeId;
    if (u.sessionUpdate === "config_option_update") this.session.configOptions = u.configOptions;
    this.coalescer.push({ sessionId: n.sessionId, update: u });
  }

  private onWebviewMessage(m: WebviewToHost): void {
    switch (m.type) {
      case "ready":
        this.setState(this.state, this.stateDetail);
        if (this.session) this.chat.post({ type: "session", info: this.session });
        this.chat.post({ type: "busy", busy: this.busy });
        if (!this.conn && !this.starting && this.state === "stopped") void this.ensureSession().catch(() => undefined);
        break;
      case "prompt":
        if (typeof m.text === "string" && m.text.trim()) void this.prompt(m.text);
        break;
      case "cancel":
        this.cancel();
        break;
      case "newSession":
        void this.newSession().catch((e: Error) => this.chat.post({ type: "notice", level: "error", text: e.message }));
        break;
      case "setMode":
        if (this.conn && this.session && typeof m.modeId === "string") {
          const s = this.session;
          const previous = s.modes?.currentModeId;
          // The webview shows the agent's answer: the new mode, or the old one back on failure.
          const show = (currentModeId: string | undefined) => {
            if (s.modes && currentModeId !== undefined) s.modes.currentModeId = currentModeId;
            if (currentModeId !== undefined)
              this.chat.post({ type: "updates", updates: [{ sessionUpdate: "current_mode_update", currentModeId }] });
          };
          this.conn.setMode(s.sessionId, m.modeId).then(
            () => show(m.modeId),
            (e: Error) => {
              show(previous);
              this.chat.post({ type: "notice", level: "error", text: `set mode: ${e.message}` });
            },
          );
        }
        break;
      case "setConfig":
        if (this.conn && this.session && typeof m.configId === "string") {
          this.conn.setConfigOption(this.session.sessionId, m.configId, m.value).then(
            (r) => {
              if (this.session && Array.isArray(r?.configOptions)) {
                this.session.configOptions = r.configOptions as SessionInfo["configOptions"];
                this.chat.post({
                  type: "updates",
                  updates: [{ sessionUpdate: "config_option_update", configOptions: this.session.configOptions ?? [] }],
                });
              }
            },
            (e: Error) => this.chat.post({ type: "notice", level: "error", text: `set option: ${e.message}` }),
          );
        }
        break;
      case "openDiff": {
        const c = this.toolContent.get(m.toolCallId)?.[m.index];
        if (c?.type === "diff") void this.diffs.open(c.path, c.oldText, c.newText);
        break;
      }
    }
  }

  post(m: HostToWebview): void {
    this.chat.post(m);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    // Window closing: pending permission requests are answered `cancelled` by the engine's
    // close, then the agent is stopped (stdin closed, grace, TERM, KILL of its group).
    try {
      await this.stop();
    } catch (e) {
      this.log.error(`stopping the agent: ${(e as Error).message}`);
    }
    for (const d of this.disposables.reverse()) {
      try {
        d.dispose();
      } catch {
        /* keep disposing */
      }
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
