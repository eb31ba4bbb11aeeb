// AcpContext: the one object that owns every disposable, the log output channel, the raw trace
// channel, the status bar item, the chat view, the conversation shown (acp-client's thread
// model, bridges/conversation.ts) and the agent process lifecycle (start, crash, restart with
// acp-client's backoff and crash budget, stop on deactivate).

import * as path from "node:path";
import * as vscode from "vscode";
import {
  demoAgentSpec,
  loadPresets,
  parseAgentSettings,
  presetChoices,
  registryCachePath,
  registryPlatform,
  resolveDemoAgentBinary,
  DEMO_AGENT_NAME,
  type PresetChoice,
} from "./agents";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { Conversation, timerScheduler } from "./bridges/conversation";
import { VsCodeSignIn, storedEnv, type AuthMethodInfo } from "./auth";
import { SessionDecisions } from "./sessions/decisions";
import { pickSession } from "./sessions/history";
import { openSession, RestartNeeded, type Opened } from "./sessions/opener";
import { canList, reopenHow } from "./sessions/reopen";
import { entriesFrom, SessionStore, titleOf, type HistoryEntry } from "./sessions/store";
import { FsBridge } from "./bridges/fs";
import { PermissionBridge, type ProposedEdit } from "./bridges/permission";
import { promptParts, validAttachment, type ViewAttachment } from "./bridges/attachments";
import { EditReview } from "./bridges/edits";
import { VsCodeEditTarget } from "./ui/editReview";
import { mentionCompletions, selectionAttachment } from "./ui/promptInput";
import { ClientRouter } from "./bridges/router";
import { TerminalManager } from "./bridges/terminal";
import { AgentConnection, AgentStartError, describeExit } from "./protocol/agent";
import { RemoteTokens } from "./remoteTokens";
import { loadEngine, type EngineModule } from "./protocol/engine";
import { ClientPolicy, type CrashBudget } from "./protocol/policy";
import type { TraceSink } from "./protocol/log";
import type { AgentSpec } from "./protocol/process";
import type { ExitInfo } from "./protocol/transport";
import { envPolicyFrom, type EnvPolicy } from "./protocol/env";
import { CHAT_VIEW_ID, ChatViewProvider } from "./ui/chatView";
import { DIFF_SCHEME, DiffContentProvider } from "./ui/diff";
import { VsCodeDocumentHost } from "./ui/documentHost";
import { VsCodePermissionPrompter, VsCodeTerminalApprover, VsCodeWriteApprover } from "./ui/prompter";
import { PseudoterminalPanels } from "./ui/terminalDisplay";
import { SessionTerminals, sessionTerminalName } from "./bridges/sessionTerminals";
import type { HostToWebview, WebviewToHost } from "./webview/messages";

type State = "stopped" | "starting" | "ready" | "crashed" | "failed";

interface SessionInfo {
  sessionId: string;
  agent: string;
}

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
  /** The agent's writes waiting for Keep or Undo (shown after each turn). */
  private readonly edits = new EditReview();
  /** acp-client's crash budget (from the engine, made on the first crash). */
  private budget: CrashBudget | undefined;
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
  /** The conversation the chat shows (a session's, or the notices before any session). */
  private conv: Conversation | undefined;
  /** Updates for a session not set up yet (see onSessionUpdate). */
  private early: Array<{ sessionId: string; params: unknown }> = [];
  private disposed = false;
  /** acp-client's session decisions: auth choice, MCP servers, words (sessions/decisions.ts). */
  private readonly decisions = new SessionDecisions(() => this.loadEngineOnce());
  /** This workspace's saved conversations (sessions/store.ts). */
  private readonly store: SessionStore;
  private readonly signIn: VsCodeSignIn;
  /** Remote agents' tokens (SecretStorage, per origin). */
  private readonly remoteTokens: RemoteTokens;
  /** A saved session to continue when the next session opens (reload, crash, history). */
  private reopen: string | undefined;
  /** The conversation shown (a saved one, read-only) goes on in the next new session. */
  private keepShown = false;
  /** `session/load` of a conversation shown already (its saved form, or the same session
   *  after a crash or a dropped connection): its replay is folded without being shown
   *  (acp-client's rule, `Conversation.replayView`/`applyReplayed`): the session's commands,
   *  plan, mode and usage are taken, its messages not added again. */
  private quietReplay: string | undefined;
  /** `session/load` of a session not saved here: its replay is the conversation shown. */
  private foldReplay: string | undefined;
  private saveTimer: NodeJS.Timeout | undefined;
  /** The agent is being started again after a crash or a dropped connection. */
  private reconnecting = false;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.log = this.own(vscode.window.createOutputChannel("ACP", { log: true }));
    this.status = this.own(vscode.window.createStatusBarItem("acp.status", vscode.StatusBarAlignment.Left, 100));
    this.status.name = "ACP agent";
    this.status.command = "acp.openChat";
    this.status.show();
    this.chat = this.own(new ChatViewProvider(extension.extensionUri, (m) => this.onWebviewMessage(m)));
    this.own(vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.chat, { webviewOptions: { retainContextWhenHidden: true } }));
    this.own(vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this.diffs));
    this.terminals = new TerminalManager(
      // One terminal panel per session, named after the agent and the conversation.
      new SessionTerminals(new PseudoterminalPanels(), (sessionId) =>
        sessionTerminalName(
          this.session?.sessionId === sessionId ? this.session.agent : this.conn?.agentTitle,
          this.session?.sessionId === sessionId ? this.conversationTitle() : undefined,
          sessionId,
        ),
      ),
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
      new VsCodePermissionPrompter(this.diffs),
      () => ({ autoApprove: cfg().get<boolean>("permissions.autoApprove", false) }),
      this.log,
      this.policy,
      (sessionId) => this.cancelTurn(sessionId),
      (sessionId, toolCallId) => this.proposedEdits(sessionId, toolCallId),
    );
    this.fsBridge = new FsBridge(
      new VsCodeDocumentHost(() => cfg().get<boolean>("fs.saveAfterWrite", true)),
      () => ({
        allowWritesOutsideWorkspace: cfg().get<boolean>("fs.allowWritesOutsideWorkspace", false),
        ownDirs: this.ownDirs(),
      }),
      this.policy,
      new VsCodeWriteApprover(this.diffs),
      this.log,
      this.edits,
    );
    this.own({ dispose: () => this.conv?.dispose() });
    this.remoteTokens = new RemoteTokens(extension.secrets);
    this.store = new SessionStore(path.join((extension.storageUri ?? extension.globalStorageUri).fsPath, "sessions"));
    this.signIn = new VsCodeSignIn(extension.secrets, this.decisions, this.log, (conn) =>
      Object.entries(conn.spec.env ?? {})
        .filter(([, v]) => v)
        .map(([k]) => k),
    );
    // Disposed before the conversation is (disposables go in reverse): the last changes saved.
    this.own({ dispose: () => this.saveNow() });
    this.restoreLast();
    this.registerCommands();
    const syncTrace = () => ((this.trace as { enabled: boolean }).enabled = cfg().get<boolean>("trace.raw", false));
    syncTrace();
    this.own(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("acp.trace.raw") && syncTrace()));
    this.setState("stopped", "not started");
  }

  /** The directories whose files decide what the extension runs or resumes: the acp registry
   *  cache the agent picker reads, and the extension's storage (sessions, the demo agent's
   *  state). An agent's write under one of them is asked about. */
  private ownDirs(): string[] {
    const cache = registryCachePath(process.env);
    return [
      ...(cache ? [path.dirname(cache)] : []),
      this.extension.globalStorageUri.fsPath,
      ...(this.extension.storageUri ? [this.extension.storageUri.fsPath] : []),
    ];
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
    reg("acp.attachSelection", () => this.attachSelection());
    reg("acp.restart", () => this.restart());
    reg("acp.stop", () => this.stop());
    reg("acp.history", () => this.showHistory().catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`)));
    reg("acp.signIn", () => this.signInCommand().catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`)));
    reg("acp.showLog", () => this.log.show(true));
    reg("acp.forgetRemoteToken", () => this.forgetRemoteToken());
    reg("acp.toggleTrace", async () => {
      const on = !cfg().get<boolean>("trace.raw", false);
      await cfg().update("trace.raw", on, vscode.ConfigurationTarget.Global);
      if (on) this.traceOutput().show(true);
      void vscode.window.showInformationMessage(`ACP raw trace ${on ? "on" : "off"}`);
    });
    reg("acp.selectAgent", () => this.selectAgent().catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`)));
  }

  /** `ACP: Select Agent`: the configured agents (the current one marked), then the presets of
   *  the ACP registry not configured yet (acp-client's snapshot with the cached public registry
   *  laid over it); picking a preset adds it to acp.agents. */
  private async selectAgent(): Promise<void> {
    const agents = this.agents();
    const current = this.conn?.spec.name ?? cfg().get<string>("defaultAgent", DEMO_AGENT_NAME);
    type Item = vscode.QuickPickItem & { name?: string; preset?: PresetChoice };
    const items: Item[] = agents.map((a) => ({
      label: a.name === current ? `$(check) ${a.name}` : a.name,
      name: a.name,
      description: a.name === current ? "current" : a.url ? "remote" : undefined,
      detail: a.url ?? [a.command, ...a.args].join(" "),
    }));
    let presets: PresetChoice[] = [];
    try {
      const loaded = loadPresets(
        this.loadEngineOnce().agentPresets,
        registryPlatform(process.platform, process.arch),
        registryCachePath(process.env),
      );
      if (loaded.overlayProblem) this.log.warn(`the cached ACP registry is left out: ${loaded.overlayProblem}`);
      presets = presetChoices(loaded, agents);
    } catch (e) {
      this.log.warn(`agent presets: ${(e as Error).message}`);
    }
    if (presets.length) {
      items.push({ label: "ACP registry: added to acp.agents when picked", kind: vscode.QuickPickItemKind.Separator });
      for (const p of presets)
        items.push({
          label: p.entry ? `$(cloud-download) ${p.name}` : `$(circle-slash) ${p.name}`,
          description: p.description,
          detail: p.detail,
          preset: p,
        });
    }
    const pick = await vscode.window.showQuickPick(items, {
      title: "ACP: select the agent to use",
      matchOnDetail: true,
      matchOnDescription: true,
    });
    if (!pick || pick.name === current) return;
    const preset = pick.preset;
    if (preset && !preset.entry) {
      void vscode.window.showInformationMessage(`ACP: ${preset.name} cannot be added here: ${preset.problem}`);
      return;
    }
    const name = preset ? preset.name : pick.name;
    if (!name) return;
    // Switching starts a new session: ask first when there is a conversation to lose, and
    // before adding a preset (it runs a command that may download the agent).
    const hasConversation = !!this.conv && this.conv.saved().entries.some((e) => e.type !== "notice");
    if (preset?.entry || hasConversation) {
      const what = preset?.entry
        ? `Add ${name} to acp.agents and switch to it? It runs: ${preset.detail}${preset.entry.command === "npx" || preset.entry.command === "uvx" ? ` (${preset.entry.command} downloads it the first time)` : ""}.`
        : `Switch to ${name}?`;
      const button = preset?.entry ? "Add and Switch" : "Switch";
      const ok = await vscode.window.showWarningMessage(
        `${what}${hasConversation ? " The chat starts over in a new session with it." : ""}`,
        { modal: true },
        button,
      );
      if (ok !== button) return;
    }
    if (preset?.entry) {
      const user = cfg().inspect<unknown[]>("agents")?.globalValue;
      await cfg().update("agents", [...(Array.isArray(user) ? user : []), preset.entry], vscode.ConfigurationTarget.Global);
      this.log.info(`added ${name} to acp.agents: ${preset.detail}`);
    }
    await cfg().update("defaultAgent", name, vscode.ConfigurationTarget.Global);
    await this.restart();
  }

  // ---- agents -------------------------------------------------------------------------------

  agents(): AgentSpec[] {
    const { agents, errors } = parseAgentSettings(cfg().get("agents", []));
    for (const e of errors) this.log.warn(`settings: ${e}`);
    const demoBin = resolveDemoAgentBinary(cfg().get<string>("demoAgentPath"), process.env.PATH, this.extension.extensionPath);
    const demo = demoAgentSpec(demoBin?.path, path.join(this.extension.globalStorageUri.fsPath, "demo-agent"));
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
      // A remote agent's token: kept, else asked for (a password box) before connecting.
      const token = spec.url ? await this.remoteTokens.token(spec.url) : undefined;
      if (spec.url && token === undefined) throw new AgentStartError(`${spec.name}: no token given for ${spec.url}`, "");
      const conn = await AgentConnection.start(
        // Variables kept by a sign-in (SecretStorage) go to this agent only (a local one: a
        // remote agent has no environment here).
        {
          ...spec,
          env: spec.url ? undefined : { ...spec.env, ...(await storedEnv(this.extension.secrets, spec.name)) },
          cwd,
          envPolicy: this.envPolicy(),
        },
        {
          engine,
          engineOptions: { permissionTimeoutMs: permissionTimeout > 0 ? permissionTimeout * 1000 : undefined },
          // auth.terminal: a `terminal` sign-in method runs in a VS Code terminal (src/auth.ts);
          // not for a remote agent (its login command would run here, not where it runs).
          capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, auth: { terminal: !spec.url } },
          token: token || undefined,
          clientInfo: { name: "acp-rs-vscode", version: String(this.extension.extension.packageJSON.version ?? "0") },
          handler: new ClientRouter({
            permission: this.permission,
            fs: this.fsBridge,
            terminal: this.terminals,
            onSessionUpdate: (sessionId, params) => this.onSessionUpdate(sessionId, params),
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
      this.conversation().notice("error", `${err.message}${tail ? `\n${lastLines(tail, 5)}` : ""}`);
      const remote = AgentConnection.remoteFailure(e)?.kind;
      if (spec?.url && remote === "unauthorized") void this.wrongTokenNotification(spec.url, err.message);
      // A reconnection that will be tried again (retryUnreachable) says so in the chat only.
      else if (!(this.reconnecting && remote && ["refused", "network", "timeout", "closed"].includes(remote)))
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

  /** A remote agent refused the token (HTTP 401): offer to enter it again. */
  private async wrongTokenNotification(url: string, message: string): Promise<void> {
    this.conversation().notice(
      "info",
      `The token kept for ${url} was refused: "Enter Token" asks for it again (or run "ACP: Forget Remote Agent Token").`,
    );
    const pick = await vscode.window.showErrorMessage(`ACP: ${message}`, "Enter Token", "Show Log");
    if (pick === "Show Log") this.log.show(true);
    else if (pick === "Enter Token") {
      await this.remoteTokens.forget(url);
      // The conversation (and a session to reopen after a dropped connection) is kept.
      await this.ensureSession().catch(() => undefined);
    }
  }

  /** `ACP: Forget Remote Agent Token`: the chosen remote agent's token is asked for again. */
  private async forgetRemoteToken(): Promise<void> {
    const remote = this.agents().filter((a) => a.url);
    if (!remote.length) {
      void vscode.window.showInformationMessage("ACP: no remote agent (an acp.agents entry with a url) is configured.");
      return;
    }
    const pick =
      remote.length === 1
        ? remote[0]
        : (
            await vscode.window.showQuickPick(
              remote.map((a) => ({ label: a.name, detail: a.url, spec: a })),
              { title: "ACP: forget the token of which remote agent?" },
            )
          )?.spec;
    if (!pick?.url) return;
    await this.remoteTokens.forget(pick.url);
    void vscode.window.showInformationMessage(
      `ACP: the token for ${new URL(pick.url).origin} is forgotten; it is asked for at the next connection.`,
    );
  }

  private onAgentExit(conn: AgentConnection, exit: ExitInfo): void {
    if (this.conn !== conn) return; // an agent stop() already cleaned up after
    this.terminals.disposeAll();
    this.conn = undefined;
    const crashedSession = this.session?.sessionId;
    this.session = null;
    if (conn.isStopping || this.disposed) {
      this.setState("stopped", "stopped");
      return;
    }
    const tail = conn.transport.stderrTail.text().trim();
    const what = `${conn.spec.name} ${describeExit(exit)}`;
    this.log.error(`${what}${tail ? `\nstderr (last lines):\n${tail}` : ""}`);
    // The crash stays in the conversation: a running turn fails with it (its partial answer
    // kept), else it is a notice.
    const conv = this.conversation();
    const shown = `${what}${tail ? `\nstderr (last lines):\n${lastLines(tail, 5)}` : ""}`;
    if (conv.turnRunning) conv.failTurn(shown);
    else conv.notice("error", shown);
    this.budget ??= this.policy.crashBudget();
    const decision = this.budget.recordCrash(performance.now());
    if (decision.decision === "restart") {
      const secs = Math.round(decision.afterMs / 100) / 10;
      this.log.warn(`restarting ${conn.spec.name} in ${decision.afterMs} ms (attempt ${decision.attempt} of the crash budget)`);
      this.setState("crashed", `crashed; restarting in ${secs}s`);
      conv.notice(
        "info",
        `Restarting ${conn.spec.name} in ${secs}s (attempt ${decision.attempt}); the conversation is kept and goes on (in the same session when the agent can reopen it).`,
      );
      this.reopen ??= crashedSession;
      void vscode.window
        .showWarningMessage(`ACP: ${what}${tail ? ` — stderr: ${lastLines(tail, 3).slice(-400)}` : ""}. Restarting it.`, "Show Log")
        .then((pick) => pick === "Show Log" && this.log.show(true));
      this.restartAfter(decision.afterMs);
    } else {
      this.setState("failed", "crashed too often; stopped");
      conv.notice("error", `${decision.reason}. Run "ACP: Restart Agent" to try again.`);
      void vscode.window
        .showErrorMessage(
          `ACP: ${what}; ${decision.reason}.${tail ? ` stderr: ${lastLines(tail, 3).slice(-400)}` : ""}`,
          "Restart",
          "Show Log",
        )
        .then((pick) => {
          if (pick === "Restart") void this.restart();
          else if (pick === "Show Log") this.log.show(true);
        });
    }
  }

  /** Starts the agent again after `ms`, in the same conversation (its session reopened when
   *  the agent can). */
  private restartAfter(ms: number): void {
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.reconnecting = true;
      void this.ensureSession({ afterCrash: true })
        .then(
          () => undefined,
          (e: unknown) => this.retryUnreachable(e),
        )
        .finally(() => (this.reconnecting = false));
    }, ms);
  }

  /** A remote agent not reachable again after its connection dropped (its server restarting,
   *  the network away): another attempt, within the same crash budget. */
  private retryUnreachable(e: unknown): void {
    const kind = AgentConnection.remoteFailure(e)?.kind;
    if (this.disposed || !this.budget || !kind || !["refused", "network", "timeout", "closed"].includes(kind)) return;
    const name = this.selectedAgentName() ?? "the agent";
    const decision = this.budget.recordCrash(performance.now());
    const conv = this.conversation();
    if (decision.decision !== "restart") {
      this.setState("failed", `${name} unreachable; stopped`);
      conv.notice("error", `${decision.reason}. Run "ACP: Restart Agent" to try again.`);
      void this.startFailureNotification(`${name} cannot be reached again (${decision.reason})`, "");
      return;
    }
    const secs = Math.round(decision.afterMs / 100) / 10;
    this.log.warn(`connecting to ${name} again in ${decision.afterMs} ms (attempt ${decision.attempt} of the crash budget)`);
    this.setState("crashed", `unreachable; trying again in ${secs}s`);
    conv.notice("info", `Connecting to ${name} again in ${secs}s (attempt ${decision.attempt}).`);
    this.restartAfter(decision.afterMs);
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
    this.budget?.reset();
    // A restart the user asked for starts a new conversation.
    this.reopen = undefined;
    this.keepShown = false;
    await this.stop();
    await this.newSession().catch(() => undefined);
  }

  // ---- sessions and prompts ---------------------------------------------------------------

  private workspaceCwd(): string {
    const f = vscode.workspace.workspaceFolders?.find((w) => w.uri.scheme === "file");
    return f ? f.uri.fsPath : path.resolve(process.env.HOME ?? "/");
  }

  /** The conversation's title (the agent's, else its first prompt), if it has one yet. */
  private conversationTitle(): string | undefined {
    if (!this.conv) return undefined;
    const title = titleOf(this.conv.savedJson());
    return title === "(no prompt yet)" || title === "(unreadable)" ? undefined : title;
  }

  /** The conversation shown, made empty when there is none yet. */
  private conversation(): Conversation {
    if (!this.conv) {
      const conv = new Conversation(
        this.policy.newThread(),
        (json, stopWords) => {
          if (this.conv === conv) this.chat.post({ type: "delta", json, stopWords });
          if (this.conv === conv) this.saveSoon();
        },
        timerScheduler,
        cfg().get<number>("chat.updateIntervalMs", 50),
        (stop) => this.decisions.stopWords(stop),
      );
      this.conv = conv;
    }
    return this.conv;
  }

  /** A new session. After a crash it goes on in the same conversation (what was said stays);
   *  otherwise the chat starts a new conversation. */
  async newSession(o: { afterCrash?: boolean; signedIn?: boolean } = {}): Promise<SessionInfo> {
    const conn = await this.ensureAgent();
    if (this.busy && this.session) conn.cancel(this.session.sessionId);
    // The conversation shown is saved as it is now, before another takes its place.
    this.saveNow();
    // A saved session (reload, crash, history) is reopened when the agent can; its
    // conversation stays shown either way.
    const reopen = this.reopen;
    const keep = !!o.afterCrash || reopen !== undefined || this.keepShown;
    this.reopen = undefined;
    this.keepShown = false;
    const haveSaved = keep && !!this.conv && this.conv.replayView() === "fold";
    let res: Opened;
    try {
      res = await openSession(conn, {
        cwd: this.workspaceCwd(),
        reopen,
        mcpSetting: cfg().get("mcpServers", {}),
        decisions: this.decisions,
        signIn: this.signIn,
        preferLoad: !haveSaved,
        beforeLoad: (id) => {
          if (haveSaved) this.quietReplay = id;
          else this.foldReplay = id;
        },
      });
    } catch (e) {
      this.quietReplay = this.foldReplay = undefined;
      this.reopen = reopen;
      this.keepShown = keep;
      if (e instanceof RestartNeeded && !o.signedIn) {
        // A sign-in kept a variable: the agent starts again with it.
        await this.stop();
        return this.newSession({ ...o, signedIn: true });
      }
      const words = this.decisions.errorWords(e);
      this.conversation().notice("error", `Could not open a session: ${words}`);
      throw new Error(words);
    }
    if (this.session && this.session.sessionId !== res.sessionId) this.terminals.endSession(this.session.sessionId);
    this.session = { sessionId: res.sessionId, agent: conn.agentTitle };
    if (!keep) {
      this.conv?.dispose();
      this.conv = undefined;
    }
    const conv = this.conversation();
    this.chat.post({ type: "conversation", sessionId: res.sessionId, agent: conn.agentTitle, reset: !keep });
    conv.setSession(res.sessionId, res.modes, res.configOptions);
    for (const n of res.notices) conv.notice(n.level, n.text);
    conv.notice(
      "info",
      res.how === "new"
        ? `New session with ${conn.agentTitle}`
        : `Session ${res.how === "resume" ? "resumed" : "loaded"} with ${conn.agentTitle}`,
    );
    if (res.how === "load" && this.quietReplay === res.sessionId) {
      // The conversation shown is the saved one: its replay was folded quietly as it came.
      this.early = this.early.filter((u) => u.sessionId !== res.sessionId);
    }
    this.quietReplay = this.foldReplay = undefined;
    this.saveSoon();
    this.postCapabilities();
    if (!o.afterCrash) {
      this.edits.keepAll();
      this.postEdits();
    }
    const early = this.early;
    this.early = [];
    for (const u of early) {
      if (u.sessionId === res.sessionId) this.onSessionUpdate(u.sessionId, u.params);
      else this.log.warn(`session/update for unknown session ${u.sessionId} dropped`);
    }
    return this.session;
  }

  async ensureSession(o: { afterCrash?: boolean } = {}): Promise<{ conn: AgentConnection; session: SessionInfo }> {
    const conn = await this.ensureAgent();
    const session = this.session ?? (await this.newSession(o));
    return { conn, session };
  }

  async prompt(text: string, attachments: ViewAttachment[] = []): Promise<void> {
    if (this.busy) return;
    this.setBusy(true);
    this.turnCancelled = false;
    let blocks: ContentBlock[] = [{ type: "text", text }];
    let conv: Conversation | undefined;
    try {
      let conn: AgentConnection, session: SessionInfo;
      try {
        ({ conn, session } = await this.ensureSession());
        const parts = await promptParts(text, attachments, conn.init.agentCapabilities?.promptCapabilities, this.policy, (p) =>
          vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p)?.getText(),
        );
        if (parts.refused.length) throw new Error(parts.refused.join("\n"));
        blocks = parts.blocks;
      } catch (e) {
        // Not sent: the prompt goes back into the input with why (nothing is lost).
        this.chat.post({ type: "promptFailed", text, attachments, message: `Not sent: ${(e as Error).message}` });
        return;
      }
      conv = this.conversation();
      conv.beginTurn(blocks);
      const res = await conn.prompt(session.sessionId, blocks);
      conv.endTurn(res.stopReason);
    } catch (e) {
      const message = this.decisions.errorWords(e);
      if (!conv) {
        // No session: the prompt and why it was not sent stay in the conversation.
        conv = this.conversation();
        conv.beginTurn(blocks);
      }
      if (conv.turnRunning) conv.failTurn(message);
    } finally {
      this.setBusy(false);
      this.postEdits();
    }
  }

  /** The diffs of the conversation's tool call `toolCallId` (for the permission question). */
  private proposedEdits(sessionId: string, toolCallId: string): ProposedEdit[] {
    if (!this.conv || this.session?.sessionId !== sessionId) return [];
    const saved = this.conv.saved();
    const call = [...saved.entries].reverse().find((e) => e.type === "tool" && e.toolCallId === toolCallId);
    if (call?.type !== "tool") return [];
    return call.content.flatMap((c) => (c.type === "diff" ? [{ path: c.path, oldText: c.oldText ?? null, newText: c.newText }] : []));
  }

  private postEdits(): void {
    this.chat.post({
      type: "edits",
      files: this.edits.list().map((f) => ({ path: f.path, name: path.basename(f.path), created: f.before === null })),
    });
  }

  private attachSelection(): void {
    const a = selectionAttachment();
    if (typeof a === "string") void vscode.window.showInformationMessage(`ACP: ${a}`);
    else {
      this.chat.post({ type: "attach", attachment: a });
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
  }

  private async editAction(action: "keep" | "undo" | "diff", file: string): Promise<void> {
    const f = this.edits.list().find((e) => e.path === file);
    if (!f) return;
    if (action === "keep") this.edits.keep(file);
    else if (action === "diff") await this.diffs.open(file, f.before, f.after, "agent's edit");
    else {
      const target = new VsCodeEditTarget();
      let r = await this.edits.undo(file, target);
      if (!r.undone && r.reason === "changed_since") {
        const pick = await vscode.window.showWarningMessage(
          `${path.basename(file)} changed after the agent's edit. Undo anyway (your later changes are lost)?`,
          { modal: true },
          "Undo anyway",
        );
        if (pick === "Undo anyway") r = await this.edits.undo(file, target, true);
      }
      if (r.undone) this.log.info(`undid the agent's edit of ${file}${r.deleted ? " (the file it created was deleted)" : ""}`);
    }
    this.postEdits();
  }

  private postCapabilities(): void {
    const caps = this.conn?.init.agentCapabilities?.promptCapabilities;
    this.chat.post({ type: "capabilities", image: caps?.image === true, embeddedContext: caps?.embeddedContext === true });
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
    void vscode.commands.executeCommand("setContext", "acp.busy", busy);
    if (this.state === "ready") this.status.text = `${busy ? "$(sync~spin)" : "$(hubot)"} ACP: ${this.conn?.spec.name ?? ""}`;
  }

  /** One update of a replay of the conversation shown (session/load): not shown again. */
  private foldQuietly(conv: Conversation, params: unknown): void {
    try {
      conv.applyReplayed(params);
    } catch (e) {
      this.log.warn(`${(e as Error).message}: dropped`);
    }
  }

  private onSessionUpdate(sessionId: string, params: unknown): void {
    if (sessionId === this.quietReplay) {
      // A replay of the conversation shown (session/load).
      if (this.conv) this.foldQuietly(this.conv, params);
      return;
    }
    // (A session/load's replay arrives before its answer set the session up.)
    const current = sessionId === this.session?.sessionId || sessionId === this.foldReplay;
    if (!current || !this.conv) {
      // An agent may send updates (its commands, say) right after answering session/new, before
      // the answer's continuation has set the session up: kept (bounded) until it is.
      if (this.early.length < 256) this.early.push({ sessionId, params });
      else this.log.warn(`session/update for unknown session ${sessionId} dropped`);
      return;
    }
    try {
      this.conv.applyUpdate(params);
    } catch (e) {
      this.log.warn(`${(e as Error).message}: dropped`);
    }
  }

  private onWebviewMessage(m: WebviewToHost): void {
    switch (m.type) {
      case "ready": {
        this.setState(this.state, this.stateDetail);
        // The view starts over from the whole conversation (its pending changes are in it).
        this.conv?.discardChanges();
        this.chat.post({
          type: "conversation",
          sessionId: this.session?.sessionId ?? null,
          agent: this.session?.agent ?? null,
          reset: true,
          saved: this.conv?.savedJson(),
        });
        this.chat.post({ type: "busy", busy: this.busy });
        this.postCapabilities();
        this.postEdits();
        if (!this.conn && !this.starting && this.state === "stopped") void this.ensureSession().catch(() => undefined);
        break;
      }
      case "prompt": {
        let atts: ViewAttachment[] = [];
        try {
          atts = (Array.isArray(m.attachments) ? m.attachments : []).map(validAttachment);
        } catch (e) {
          this.log.warn(`prompt from the view: ${(e as Error).message}`);
        }
        if (typeof m.text === "string" && (m.text.trim() || atts.length)) void this.prompt(m.text.trim(), atts);
        break;
      }
      case "complete":
        if (typeof m.query === "string" && typeof m.id === "number")
          void mentionCompletions(m.query.slice(0, 200)).then((items) => this.chat.post({ type: "completions", id: m.id, items }));
        break;
      case "attachSelection":
        this.attachSelection();
        break;
      case "editAction":
        if (typeof m.path === "string" && ["keep", "undo", "diff"].includes(m.action))
          void this.editAction(m.action, m.path).catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`));
        break;
      case "cancel":
        this.cancel();
        break;
      case "newSession":
        void this.newSession().catch((e: Error) => this.conversation().notice("error", e.message));
        break;
      case "setMode":
        if (this.conn && this.session && this.conv && typeof m.modeId === "string") {
          const { sessionId } = this.session;
          const conv = this.conv;
          const previous = conv.saved().currentMode;
          // The view shows the agent's answer: the new mode, or the old one back on failure.
          this.conn.setMode(sessionId, m.modeId).then(
            () => conv.setCurrentMode(sessionId, m.modeId),
            (e: Error) => {
              if (previous !== undefined) conv.setCurrentMode(sessionId, previous);
              conv.notice("error", `set mode: ${e.message}`);
            },
          );
        }
        break;
      case "setConfig":
        if (this.conn && this.session && this.conv && typeof m.configId === "string") {
          const { sessionId } = this.session;
          const conv = this.conv;
          this.conn.setConfigOption(sessionId, m.configId, m.value).then(
            (r) => {
              if (Array.isArray(r?.configOptions)) conv.setConfigOptions(sessionId, r.configOptions);
            },
            (e: Error) => conv.notice("error", `set option: ${e.message}`),
          );
        }
        break;
      case "openDiff": {
        const entry = typeof m.entry === "number" ? this.conv?.entry(m.entry) : undefined;
        const c = entry?.type === "tool" ? entry.content[m.index] : undefined;
        if (c?.type === "diff") void this.diffs.open(c.path, c.oldText, c.newText);
        break;
      }
    }
  }

  // ---- sessions: saved, restored, reopened (issue 11) -------------------------------------

  /** The conversation shown goes to this workspace's saved sessions (debounced). */
  private saveSoon(): void {
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      this.saveNow();
    }, 500);
  }

  private saveNow(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (!this.session || !this.conv) return;
    try {
      const agent = this.conn?.spec.name ?? this.selectedAgentName();
      this.store.save({ sessionId: this.session.sessionId, agent: agent ?? "", agentTitle: this.session.agent }, this.conv.savedJson());
      void this.extension.workspaceState.update(LAST_SESSION_KEY, this.session.sessionId);
    } catch (e) {
      this.log.warn(`cannot save the conversation: ${(e as Error).message}`);
    }
  }

  private selectedAgentName(): string | undefined {
    try {
      return this.selectedAgent().name;
    } catch {
      return undefined;
    }
  }

  /** After a window reload: the last conversation is shown again and its session reopened. */
  private restoreLast(): void {
    const last = this.extension.workspaceState.get<string>(LAST_SESSION_KEY);
    const rec = last ? this.store.find(last) : undefined;
    for (const p of this.store.problems.splice(0)) this.log.warn(p);
    if (!rec || rec.agent !== this.selectedAgentName()) return;
    const json = this.store.thread(rec.sessionId);
    for (const p of this.store.problems.splice(0)) this.log.warn(p);
    if (!json) return;
    try {
      this.showSaved(json);
      this.reopen = rec.sessionId;
      this.log.info(`restored the conversation of session ${rec.sessionId} (${rec.title})`);
    } catch (e) {
      this.log.warn(`the saved conversation of ${rec.sessionId} is unreadable: ${(e as Error).message}`);
    }
  }

  /** Shows a saved thread (its saved form) as the conversation; an empty one if undefined. */
  private showSaved(json: string | undefined): void {
    const thread = json === undefined ? this.policy.newThread() : this.loadEngineOnce().Thread.fromJson(json);
    this.conv?.dispose();
    const conv = new Conversation(
      thread,
      (delta, stopWords) => {
        if (this.conv !== conv) return;
        this.chat.post({ type: "delta", json: delta, stopWords });
        this.saveSoon();
      },
      timerScheduler,
      cfg().get<number>("chat.updateIntervalMs", 50),
      (stop) => this.decisions.stopWords(stop),
    );
    this.conv = conv;
    conv.discardChanges();
    this.chat.post({ type: "conversation", sessionId: null, agent: null, reset: true, saved: conv.savedJson() });
  }

  private async showHistory(): Promise<void> {
    const agentList: Array<{ sessionId: string; title?: string | null; updatedAt?: string | null }> = [];
    const conn = this.conn;
    if (conn && canList(conn.init)) {
      try {
        const r = await conn.listSessions(this.workspaceCwd());
        agentList.push(...(r.sessions ?? []));
      } catch (e) {
        this.log.warn(`session/list: ${this.decisions.errorWords(e)}`);
      }
    }
    const entries = entriesFrom(this.store.list(), agentList, { name: conn?.spec.name ?? "", title: conn?.agentTitle ?? "" });
    const pick = await pickSession(entries, this.session?.sessionId);
    if (pick) await this.openSaved(pick);
  }

  /** Reopens a session from the history: resumed or loaded when its agent is the one running
   *  and can, else shown read-only (the next prompt continues it in a new session). */
  async openSaved(e: HistoryEntry): Promise<void> {
    if (e.sessionId === this.session?.sessionId) return;
    if (this.busy) {
      void vscode.window.showInformationMessage("ACP: stop the running turn (or let it end) before opening another session.");
      return;
    }
    this.saveNow();
    const json = e.saved ? this.store.thread(e.sessionId) : undefined;
    for (const p of this.store.problems.splice(0)) this.log.warn(p);
    if (e.saved && json === undefined) {
      void vscode.window.showErrorMessage(`ACP: the saved conversation "${e.title}" cannot be read (see the log).`);
      return;
    }
    this.showSaved(json);
    if (this.session) this.terminals.endSession(this.session.sessionId);
    this.session = null;
    const conn = await this.ensureAgent();
    const sameAgent = e.agent === conn.spec.name;
    if (sameAgent && reopenHow(conn.init) !== "readonly") {
      this.reopen = e.sessionId;
      await this.newSession();
      return;
    }
    this.keepShown = true;
    this.conversation().notice(
      "info",
      sameAgent
        ? `${conn.agentTitle} cannot reopen sessions: this conversation is read-only. Your next prompt continues it in a new session.`
        : `This conversation was with ${e.agentTitle || e.agent}: it is read-only here. Your next prompt continues it in a new session with ${conn.agentTitle}.`,
    );
  }

  /** `ACP: Sign In`: the running agent's methods, offered. */
  private async signInCommand(): Promise<void> {
    const conn = await this.ensureAgent();
    const outcome = await this.signIn.offer(conn, (conn.init.authMethods ?? []) as AuthMethodInfo[]);
    if (outcome === "restart") await this.restart();
    else if (outcome === "authenticated" && !this.session) await this.ensureSession();
  }

  post(m: HostToWebview): void {
    this.chat.post(m);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.saveNow();
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

const LAST_SESSION_KEY = "acp.lastSession";

function lastLines(text: string, n: number): string {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .slice(-n)
    .join("\n");
}
