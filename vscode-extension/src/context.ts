// AcpContext: the extension's composition root. It owns every disposable (the log output
// channel, the chat view, the diff provider, the status bar item, the trace and its panel, the terminals,
// the commands), loads the wasm engine once, makes the bridges (permission, fs, terminal) with
// their VS Code parts, and wires the host's parts to one another: the agent's lifecycle
// (host/lifecycle.ts), the conversations open (host/conversations.ts: the side view's and each
// editor tab's session controller, host/sessionController.ts, and webview router,
// host/webviewRouter.ts) and the commands (host/commands.ts), with host/settings.ts,
// host/status.ts and host/trace.ts. Disposing saves the conversation and stops the agent.
// One reason to change: a part is added, or what a part is given changes.

import * as vscode from "vscode";
import { VsCodeSignIn } from "./auth";
import type { ViewAttachment } from "./bridges/attachments";
import { EditReview } from "./bridges/edits";
import type { FsBridge } from "./bridges/fs";
import { PermissionBridge } from "./bridges/permission";
import { ClientRouter } from "./bridges/router";
import { SessionTerminals } from "./bridges/sessionTerminals";
import { Commands } from "./host/commands";
import { Conversations } from "./host/conversations";
import { AgentLifecycle } from "./host/lifecycle";
import { SessionController, type SessionInfo } from "./host/sessionController";
import { cfg, HostSettings } from "./host/settings";
import { AgentStatus } from "./host/status";
import { RawTrace } from "./host/trace";
import { TracePanel } from "./host/tracePanel";
import type { AgentConnection } from "./protocol/agent";
import type { EngineModule } from "./protocol/engine";
import { engineSpeaksV2, PROTOCOL_V2 } from "./protocol/v2";
import type { Platform } from "./platform/platform";
import { useHostPaths } from "./platform/hostPaths";
import { useHostOs } from "./platform/hostOs";
import { ClientPolicy } from "./protocol/policy";
import type { AgentSpec } from "./protocol/process";
import { RemoteTokens } from "./remoteTokens";
import { SessionDecisions } from "./sessions/decisions";
import { SessionStore, type HistoryEntry } from "./sessions/store";
import { restoredSessionId } from "./sessions/tabState";
import { CHAT_PANEL_TYPE } from "./ui/chatPanel";
import { CHAT_VIEW_ID, ChatViewProvider } from "./ui/chatView";
import { DIFF_SCHEME, DiffContentProvider } from "./ui/diff";
import { ACCEPT_HUNK_COMMAND, HunkLensProvider, REJECT_HUNK_COMMAND } from "./ui/hunkLens";
import { VsCodeDocumentHost } from "./ui/documentHost";
import { VsCodePermissionPrompter, VsCodeTerminalApprover, VsCodeWriteApprover } from "./ui/prompter";
import { PseudoterminalPanels } from "./ui/terminalDisplay";
import type { HostToWebview } from "./webview/messages";

export class AcpContext implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  readonly log: vscode.LogOutputChannel;
  private readonly chat: ChatViewProvider;
  private readonly diffs = new DiffContentProvider();
  private engine: EngineModule | undefined;
  /** acp-client's decisions, from the engine (loaded on first use). */
  private readonly policy = new ClientPolicy(() => this.loadEngineOnce());
  /** The agent's writes waiting for Keep or Undo (shown after each turn); acp-client's rule. */
  private readonly edits = new EditReview(this.policy);
  /** acp-client's session decisions: auth choice, MCP servers, words (sessions/decisions.ts). */
  private readonly decisions = new SessionDecisions(() => this.loadEngineOnce());
  /** Starting, restarting and stopping the agent. */
  readonly agent: AgentLifecycle;
  /** The conversations open (the side view's and the editor tabs'). */
  readonly conversations: Conversations;
  private readonly settings: HostSettings;

  constructor(
    readonly extension: vscode.ExtensionContext,
    /** Node's or the browser's (chosen by the entry point: extension.ts, extension.browser.ts). */
    readonly platform: Platform,
  ) {
    useHostPaths(platform.path);
    useHostOs(platform.os);
    this.log = this.own(vscode.window.createOutputChannel("ACP", { log: true }));
    // The agent's state goes to every chat view (the side view's and the editor tabs').
    const status = this.own(new AgentStatus((m) => (this.conversations ? this.conversations.broadcast(m) : this.chat.post(m))));
    // The side view's messages go to the conversation it shows now (it may have moved into a tab).
    this.chat = this.own(new ChatViewProvider(extension.extensionUri, (m) => this.conversations.sideRouter.onMessage(m)));
    this.own(vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this.chat, { webviewOptions: { retainContextWhenHidden: true } }));
    this.own(vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this.diffs));
    // The engine is loaded once: another build (acp.experimental.protocolV2) needs a reload.
    this.own(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration("acp.experimental.protocolV2") || !this.engine) return;
        void vscode.window
          .showInformationMessage("ACP: acp.experimental.protocolV2 takes effect after a window reload.", "Reload Window")
          .then((choice) => choice && vscode.commands.executeCommand("workbench.action.reloadWindow"));
      }),
    );
    const settings = (this.settings = new HostSettings(extension, this.policy, this.log, platform));
    // No terminals where the host cannot run processes (the browser): not advertised.
    const terminals = platform.terminals?.(
      // One terminal panel per session, named after the agent and the conversation.
      new SessionTerminals(new PseudoterminalPanels(), (sessionId) => this.conversations.terminalName(sessionId)),
      () => ({
        useShell: cfg().get<boolean>("terminal.useShell", false),
        approval: cfg().get<string>("terminal.approval", "ask") === "allow" ? "allow" : "ask",
        envPolicy: settings.envPolicy(),
        workspaceFolders: settings.workspaceFolders(),
      }),
      this.log,
      this.policy,
      new VsCodeTerminalApprover(),
    );
    this.own({ dispose: () => terminals?.disposeAll() });
    const prompter = new VsCodePermissionPrompter(this.diffs);
    const permission = new PermissionBridge(
      {
        prompt: (model, token) => {
          // Told when the user is not looking (the conversation that asks names it).
          this.conversations.notifyPermission(model.sessionId, model.message);
          return prompter.prompt(model, token);
        },
      },
      () => ({ autoApprove: cfg().get<boolean>("permissions.autoApprove", false) }),
      this.log,
      this.policy,
      (sessionId) => this.conversations.cancelTurn(sessionId),
      (sessionId, toolCallId) => this.conversations.knownToolCall(sessionId, toolCallId),
    );
    // The fs bridge on the host's files (the browser's: the workspace's file system).
    const fsBridge: FsBridge | undefined = platform.fsBridge?.(
      new VsCodeDocumentHost(() => cfg().get<boolean>("fs.saveAfterWrite", true), platform.workspaceFiles),
      () => ({
        allowWritesOutsideWorkspace: cfg().get<boolean>("fs.allowWritesOutsideWorkspace", false),
        ownDirs: settings.ownDirs(),
      }),
      this.policy,
      new VsCodeWriteApprover(this.diffs),
      this.log,
      this.edits,
    );
    this.own({ dispose: () => this.conversations.dispose() });
    // Remote agents' tokens (SecretStorage, per origin).
    const remoteTokens = new RemoteTokens(extension.secrets);
    // This workspace's saved conversations (sessions/store.ts).
    const store = new SessionStore(platform.storeFiles(extension));
    const signIn = new VsCodeSignIn(extension.secrets, this.decisions, this.log, (conn) =>
      Object.entries(conn.spec.env ?? {})
        .filter(([, v]) => v)
        .map(([k]) => k),
    );
    const trace = new RawTrace();
    const tracePanel = this.own(new TracePanel(extension.extensionUri, trace.recorder));
    const engine = () => this.loadEngineOnce();
    this.agent = new AgentLifecycle({
      extension,
      settings,
      status,
      log: this.log,
      trace: trace.sink,
      policy: this.policy,
      engine,
      remoteTokens,
      transports: platform.transports,
      terminals,
      hasFs: fsBridge !== undefined,
      handler: () =>
        new ClientRouter({
          permission,
          fs: fsBridge,
          terminal: terminals,
          onSessionUpdate: (sessionId, params) => this.conversations.onSessionUpdate(sessionId, params),
          log: this.log,
          v2: () => this.agent.conn?.protocolVersion === PROTOCOL_V2,
        }),
    });
    this.conversations = new Conversations({
      extensionUri: extension.extensionUri,
      agent: this.agent,
      sideView: this.chat,
      sessions: {
        extension,
        agent: this.agent,
        settings,
        policy: this.policy,
        engine,
        decisions: this.decisions,
        signIn,
        store,
        files: platform.files,
        terminals,
        edits: this.edits,
        log: this.log,
      },
      router: { agent: this.agent, diffs: this.diffs, edits: this.edits, hunker: this.policy, log: this.log },
    });
    this.agent.serve(this.conversations);
    // Disposed before the conversation is (disposables go in reverse): the last changes saved.
    this.own({ dispose: () => this.conversations.saveNow() });
    // The edit review inside the diff editor: Accept / Reject above each change.
    this.diffs.reviewSource = (p) => this.edits.list().find((f) => f.path === p);
    this.own(vscode.languages.registerCodeLensProvider({ scheme: DIFF_SCHEME }, new HunkLensProvider(this.diffs, this.edits, this.policy)));
    const hunkCommand = (action: "acceptHunk" | "rejectHunk") => (file: unknown, index: unknown, expect: unknown) => {
      if (typeof file === "string" && Number.isSafeInteger(index))
        this.conversations.sideRouter.onMessage({
          type: "editAction",
          action,
          path: file,
          hunk: index as number,
          expect: expect as { oldStart: number; removed: number; newStart: number; added: number },
        });
    };
    this.own(vscode.commands.registerCommand(ACCEPT_HUNK_COMMAND, hunkCommand("acceptHunk")));
    this.own(vscode.commands.registerCommand(REJECT_HUNK_COMMAND, hunkCommand("rejectHunk")));
    this.sessions.restoreLast();
    // Editor tabs VS Code brings back after a window reload show their conversations again.
    this.own(
      vscode.window.registerWebviewPanelSerializer(CHAT_PANEL_TYPE, {
        deserializeWebviewPanel: (panel, state) => Promise.resolve(this.conversations.restoreTab(panel, restoredSessionId(state))),
      }),
    );
    const commands = new Commands({
      agent: this.agent,
      conversations: this.conversations,
      settings,
      trace,
      tracePanel,
      log: this.log,
      engine,
      remoteTokens,
      store,
      platform,
      decisions: this.decisions,
      signIn,
    });
    for (const d of commands.register()) this.own(d);
    this.own(trace);
    this.agent.setState("stopped", "not started");
  }

  /** The side view's conversation: its session with the agent. */
  get sessions(): SessionController {
    return this.conversations.side;
  }

  private own<T extends vscode.Disposable>(d: T): T {
    this.disposables.push(d);
    return d;
  }

  private loadEngineOnce(): EngineModule {
    if (!this.engine) {
      const v2 = cfg().get<boolean>("experimental.protocolV2", false);
      const { module, from } = this.platform.engine(this.extension, v2);
      this.log.info(`protocol engine (${this.platform.name}): ${from}`);
      if (v2 && !engineSpeaksV2(module))
        this.log.warn("acp.experimental.protocolV2: this engine has no ACP v2 (the browser build): agents are offered v1 only");
      this.engine = module;
    }
    return this.engine;
  }

  // ---- the extension's exports (`activate` returns { context }): the same methods as ever ----

  agents(): AgentSpec[] {
    return this.settings.agents();
  }
  ensureAgent(): Promise<AgentConnection> {
    return this.agent.ensureAgent();
  }
  stop(): Promise<void> {
    return this.agent.stop();
  }
  restart(): Promise<void> {
    return this.agent.restart();
  }
  newSession(o: { afterCrash?: boolean; signedIn?: boolean } = {}): Promise<SessionInfo> {
    return this.sessions.newSession(o);
  }
  ensureSession(o: { afterCrash?: boolean } = {}): Promise<{ conn: AgentConnection; session: SessionInfo }> {
    return this.sessions.ensureSession(o);
  }
  prompt(text: string, attachments: ViewAttachment[] = []): Promise<void> {
    return this.sessions.prompt(text, attachments);
  }
  cancel(): void {
    this.sessions.cancel();
  }
  openSaved(e: HistoryEntry): Promise<void> {
    return this.sessions.openSaved(e);
  }
  post(m: HostToWebview): void {
    this.chat.post(m);
  }

  async dispose(): Promise<void> {
    if (this.agent.isShutDown) return;
    this.conversations.saveNow();
    // Window closing: pending permission requests are answered `cancelled` by the engine's
    // close, then the agent is stopped (stdin closed, grace, TERM, KILL of its group).
    await this.agent.shutDown();
    for (const d of this.disposables.reverse()) {
      try {
        d.dispose();
      } catch {
        /* keep disposing */
      }
    }
  }
}
