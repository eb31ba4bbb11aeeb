// The session controller: the session with the running agent and the conversation the chat
// shows (acp-client's Thread, through bridges/conversation.ts). It opens sessions (new, or a
// saved one resumed or loaded: sessions/opener.ts; again after a crash, in the same
// conversation), folds a session/load's replay (quietly when that conversation is shown
// already), keeps the updates that come before their session is set up, runs prompt turns
// (busy, cancel, the agent's writes listed after each), saves the conversation shown (debounced)
// and shows the last one again after a window reload, and opens one from the history.
// One reason to change: what a session or a turn does with the conversation shown.

import type { ContentBlock } from "@agentclientprotocol/sdk";
import * as path from "node:path";
import * as vscode from "vscode";
import { promptParts, type ViewAttachment } from "../bridges/attachments";
import { Conversation, timerScheduler } from "../bridges/conversation";
import type { EditReview } from "../bridges/edits";
import type { KnownToolCall } from "../bridges/permission";
import { sessionTerminalName } from "../bridges/sessionTerminals";
import type { TerminalManager } from "../bridges/terminal";
import type { AgentConnection } from "../protocol/agent";
import type { EngineModule, WasmThread } from "../protocol/engine";
import type { Logger } from "../protocol/log";
import type { ClientPolicy } from "../protocol/policy";
import type { SessionDecisions } from "../sessions/decisions";
import { openSession, RestartNeeded, type Opened, type SignIn } from "../sessions/opener";
import { reopenHow } from "../sessions/reopen";
import { titleOf, type HistoryEntry, type SessionStore } from "../sessions/store";
import type { HostToWebview } from "../webview/messages";
import type { AgentLifecycle, SessionSide } from "./lifecycle";
import { cfg, type HostSettings } from "./settings";

export interface SessionInfo {
  sessionId: string;
  agent: string;
}

export interface SessionParts {
  extension: vscode.ExtensionContext;
  agent: AgentLifecycle;
  settings: HostSettings;
  /** To the chat view. */
  post(m: HostToWebview): void;
  policy: ClientPolicy;
  engine(): EngineModule;
  /** acp-client's session decisions: auth choice, MCP servers, words (sessions/decisions.ts). */
  decisions: SessionDecisions;
  signIn: SignIn;
  /** This workspace's saved conversations (sessions/store.ts). */
  store: SessionStore;
  terminals: TerminalManager;
  /** The agent's writes waiting for Keep or Undo (shown after each turn). */
  edits: EditReview;
  log: Logger;
}

const LAST_SESSION_KEY = "acp.lastSession";

export class SessionController implements SessionSide {
  private current: SessionInfo | null = null;
  private running = false;
  /** session/cancel was sent for the current turn (a `cancelled` permission answer sends it once). */
  private turnCancelled = false;
  /** The conversation the chat shows (a session's, or the notices before any session). */
  private conv: Conversation | undefined;
  /** Updates for a session not set up yet (see onSessionUpdate). */
  private early: Array<{ sessionId: string; params: unknown }> = [];
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

  constructor(private readonly p: SessionParts) {}

  /** The session with the running agent, if one is open. */
  get session(): SessionInfo | null {
    return this.current;
  }

  /** A prompt turn is running. */
  get busy(): boolean {
    return this.running;
  }

  /** The conversation shown, if there is one (conversation() makes one). */
  get shown(): Conversation | undefined {
    return this.conv;
  }

  // ---- what the lifecycle asks (SessionSide) ---------------------------------------------

  agentGone(): string | undefined {
    const id = this.current?.sessionId;
    this.current = null;
    return id;
  }

  reopenAfterCrash(sessionId: string | undefined): void {
    this.reopen ??= sessionId;
  }

  startOver(): void {
    this.reopen = undefined;
    this.keepShown = false;
  }

  // ---- the conversation shown --------------------------------------------------------------

  /** The conversation shown, made empty when there is none yet. */
  conversation(): Conversation {
    if (!this.conv) this.conv = this.showing(this.p.policy.newThread());
    return this.conv;
  }

  /** A conversation of `thread` whose changes go to the chat and are saved while it is the one
   *  shown. */
  private showing(thread: WasmThread): Conversation {
    const conv: Conversation = new Conversation(
      thread,
      (json, stopWords) => {
        if (this.conv !== conv) return;
        this.p.post({ type: "delta", json, stopWords });
        this.saveSoon();
      },
      timerScheduler,
      cfg().get<number>("chat.updateIntervalMs", 50),
      (stop) => this.p.decisions.stopWords(stop),
    );
    return conv;
  }

  /** The conversation's title (the agent's, else its first prompt), if it has one yet. */
  private conversationTitle(): string | undefined {
    if (!this.conv) return undefined;
    const title = titleOf(this.conv.savedJson());
    return title === "(no prompt yet)" || title === "(unreadable)" ? undefined : title;
  }

  /** The terminal panel's name for `sessionId`: the agent's, and the conversation's title. */
  terminalName(sessionId: string): string {
    return sessionTerminalName(
      this.current?.sessionId === sessionId ? this.current.agent : this.p.agent.conn?.agentTitle,
      this.current?.sessionId === sessionId ? this.conversationTitle() : undefined,
      sessionId,
    );
  }

  /** The whole conversation to a chat view that (re)loaded (its pending changes are in it). */
  showAll(): void {
    this.conv?.discardChanges();
    this.p.post({
      type: "conversation",
      sessionId: this.current?.sessionId ?? null,
      agent: this.current?.agent ?? null,
      reset: true,
      saved: this.conv?.savedJson(),
    });
    this.p.post({ type: "busy", busy: this.running });
    this.postCapabilities();
    this.postEdits();
  }

  // ---- sessions ----------------------------------------------------------------------------

  /** A new session. After a crash it goes on in the same conversation (what was said stays);
   *  otherwise the chat starts a new conversation. */
  async newSession(o: { afterCrash?: boolean; signedIn?: boolean } = {}): Promise<SessionInfo> {
    const conn = await this.p.agent.ensureAgent();
    if (this.running && this.current) conn.cancel(this.current.sessionId);
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
        cwd: this.p.settings.workspaceCwd(),
        reopen,
        mcpSetting: cfg().get("mcpServers", {}),
        decisions: this.p.decisions,
        signIn: this.p.signIn,
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
        await this.p.agent.stop();
        return this.newSession({ ...o, signedIn: true });
      }
      const words = this.p.decisions.errorWords(e);
      this.conversation().notice("error", `Could not open a session: ${words}`);
      throw new Error(words);
    }
    if (this.current && this.current.sessionId !== res.sessionId) this.p.terminals.endSession(this.current.sessionId);
    this.current = { sessionId: res.sessionId, agent: conn.agentTitle };
    if (!keep) {
      this.conv?.dispose();
      this.conv = undefined;
    }
    const conv = this.conversation();
    this.p.post({ type: "conversation", sessionId: res.sessionId, agent: conn.agentTitle, reset: !keep });
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
      this.p.edits.keepAll();
      this.postEdits();
    }
    const early = this.early;
    this.early = [];
    for (const u of early) {
      if (u.sessionId === res.sessionId) this.onSessionUpdate(u.sessionId, u.params);
      else this.p.log.warn(`session/update for unknown session ${u.sessionId} dropped`);
    }
    return this.current;
  }

  async ensureSession(o: { afterCrash?: boolean } = {}): Promise<{ conn: AgentConnection; session: SessionInfo }> {
    const conn = await this.p.agent.ensureAgent();
    const session = this.current ?? (await this.newSession(o));
    return { conn, session };
  }

  /** One update of a replay of the conversation shown (session/load): not shown again. */
  private foldQuietly(conv: Conversation, params: unknown): void {
    try {
      conv.applyReplayed(params);
    } catch (e) {
      this.p.log.warn(`${(e as Error).message}: dropped`);
    }
  }

  /** A `session/update` from the agent. */
  onSessionUpdate(sessionId: string, params: unknown): void {
    if (sessionId === this.quietReplay) {
      // A replay of the conversation shown (session/load).
      if (this.conv) this.foldQuietly(this.conv, params);
      return;
    }
    // (A session/load's replay arrives before its answer set the session up.)
    const current = sessionId === this.current?.sessionId || sessionId === this.foldReplay;
    if (!current || !this.conv) {
      // An agent may send updates (its commands, say) right after answering session/new, before
      // the answer's continuation has set the session up: kept (bounded) until it is.
      if (this.early.length < 256) this.early.push({ sessionId, params });
      else this.p.log.warn(`session/update for unknown session ${sessionId} dropped`);
      return;
    }
    try {
      this.conv.applyUpdate(params);
    } catch (e) {
      this.p.log.warn(`${(e as Error).message}: dropped`);
    }
  }

  /** The session's mode set to `modeId`: the view shows the agent's answer (the new mode, or
   *  the old one back on failure). */
  setMode(modeId: string): void {
    const conn = this.p.agent.conn;
    if (!conn || !this.current || !this.conv) return;
    const { sessionId } = this.current;
    const conv = this.conv;
    const previous = conv.saved().currentMode;
    conn.setMode(sessionId, modeId).then(
      () => conv.setCurrentMode(sessionId, modeId),
      (e: Error) => {
        if (previous !== undefined) conv.setCurrentMode(sessionId, previous);
        conv.notice("error", `set mode: ${e.message}`);
      },
    );
  }

  /** The session's config option `configId` set to `value`. */
  setConfig(configId: string, value: string | boolean): void {
    const conn = this.p.agent.conn;
    if (!conn || !this.current || !this.conv) return;
    const { sessionId } = this.current;
    const conv = this.conv;
    conn.setConfigOption(sessionId, configId, value).then(
      (r) => {
        if (Array.isArray(r?.configOptions)) conv.setConfigOptions(sessionId, r.configOptions);
      },
      (e: Error) => conv.notice("error", `set option: ${e.message}`),
    );
  }

  // ---- turns -------------------------------------------------------------------------------

  async prompt(text: string, attachments: ViewAttachment[] = []): Promise<void> {
    if (this.running) return;
    this.setBusy(true);
    this.turnCancelled = false;
    let blocks: ContentBlock[] = [{ type: "text", text }];
    let conv: Conversation | undefined;
    try {
      let conn: AgentConnection, session: SessionInfo;
      try {
        ({ conn, session } = await this.ensureSession());
        const parts = await promptParts(text, attachments, conn.init.agentCapabilities?.promptCapabilities, this.p.policy, (p) =>
          vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p)?.getText(),
        );
        if (parts.refused.length) throw new Error(parts.refused.join("\n"));
        blocks = parts.blocks;
      } catch (e) {
        // Not sent: the prompt goes back into the input with why (nothing is lost).
        this.p.post({ type: "promptFailed", text, attachments, message: `Not sent: ${(e as Error).message}` });
        return;
      }
      conv = this.conversation();
      conv.beginTurn(blocks);
      const res = await conn.prompt(session.sessionId, blocks);
      conv.endTurn(res.stopReason);
    } catch (e) {
      const message = this.p.decisions.errorWords(e);
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

  cancel(): void {
    const conn = this.p.agent.conn;
    if (conn && this.current) {
      this.turnCancelled = true;
      conn.cancel(this.current.sessionId);
      this.p.log.info("cancel requested by the user");
    }
  }

  /** Sends session/cancel for the session once per turn (before a `cancelled` permission answer). */
  cancelTurn(sessionId: string): void {
    if (this.turnCancelled && this.current?.sessionId === sessionId) return;
    if (this.current?.sessionId === sessionId) this.turnCancelled = true;
    this.p.agent.conn?.cancel(sessionId);
  }

  private setBusy(busy: boolean): void {
    this.running = busy;
    this.p.post({ type: "busy", busy });
    void vscode.commands.executeCommand("setContext", "acp.busy", busy);
    this.p.agent.showBusy(busy);
  }

  /** The conversation's tool call `toolCallId` as acp-client's thread keeps it (for the
   *  permission question, which takes what the request leaves out from it), or null. */
  knownToolCall(sessionId: string, toolCallId: string): KnownToolCall | null {
    if (!this.conv || this.current?.sessionId !== sessionId) return null;
    const saved = this.conv.saved();
    const call = [...saved.entries].reverse().find((e) => e.type === "tool" && e.toolCallId === toolCallId);
    return call?.type === "tool" ? (call as unknown as KnownToolCall) : null;
  }

  /** The files the agent wrote (Keep, Undo, Diff) to the chat. */
  postEdits(): void {
    this.p.post({
      type: "edits",
      files: this.p.edits.list().map((f) => ({ path: f.path, name: path.basename(f.path), created: f.before === null })),
    });
  }

  /** What the running agent takes in a prompt (images, embedded context) to the chat. */
  private postCapabilities(): void {
    const caps = this.p.agent.conn?.init.agentCapabilities?.promptCapabilities;
    this.p.post({ type: "capabilities", image: caps?.image === true, embeddedContext: caps?.embeddedContext === true });
  }

  // ---- saved, restored, reopened (issue 11) ------------------------------------------------

  /** The conversation shown goes to this workspace's saved sessions (debounced). */
  private saveSoon(): void {
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      this.saveNow();
    }, 500);
  }

  saveNow(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (!this.current || !this.conv) return;
    try {
      const agent = this.p.agent.conn?.spec.name ?? this.p.settings.selectedAgentName();
      this.p.store.save({ sessionId: this.current.sessionId, agent: agent ?? "", agentTitle: this.current.agent }, this.conv.savedJson());
      void this.p.extension.workspaceState.update(LAST_SESSION_KEY, this.current.sessionId);
    } catch (e) {
      this.p.log.warn(`cannot save the conversation: ${(e as Error).message}`);
    }
  }

  /** After a window reload: the last conversation is shown again and its session reopened. */
  restoreLast(): void {
    const { store, log } = this.p;
    const last = this.p.extension.workspaceState.get<string>(LAST_SESSION_KEY);
    const rec = last ? store.find(last) : undefined;
    for (const p of store.problems.splice(0)) log.warn(p);
    if (!rec || rec.agent !== this.p.settings.selectedAgentName()) return;
    const json = store.thread(rec.sessionId);
    for (const p of store.problems.splice(0)) log.warn(p);
    if (!json) return;
    try {
      this.showSaved(json);
      this.reopen = rec.sessionId;
      log.info(`restored the conversation of session ${rec.sessionId} (${rec.title})`);
    } catch (e) {
      log.warn(`the saved conversation of ${rec.sessionId} is unreadable: ${(e as Error).message}`);
    }
  }

  /** Shows a saved thread (its saved form) as the conversation; an empty one if undefined. */
  private showSaved(json: string | undefined): void {
    const thread = json === undefined ? this.p.policy.newThread() : this.p.engine().Thread.fromJson(json);
    this.conv?.dispose();
    const conv = this.showing(thread);
    this.conv = conv;
    conv.discardChanges();
    this.p.post({ type: "conversation", sessionId: null, agent: null, reset: true, saved: conv.savedJson() });
  }

  /** Reopens a session from the history: resumed or loaded when its agent is the one running
   *  and can, else shown read-only (the next prompt continues it in a new session). */
  async openSaved(e: HistoryEntry): Promise<void> {
    if (e.sessionId === this.current?.sessionId) return;
    if (this.running) {
      void vscode.window.showInformationMessage("ACP: stop the running turn (or let it end) before opening another session.");
      return;
    }
    this.saveNow();
    const json = e.saved ? this.p.store.thread(e.sessionId) : undefined;
    for (const p of this.p.store.problems.splice(0)) this.p.log.warn(p);
    if (e.saved && json === undefined) {
      void vscode.window.showErrorMessage(`ACP: the saved conversation "${e.title}" cannot be read (see the log).`);
      return;
    }
    this.showSaved(json);
    if (this.current) this.p.terminals.endSession(this.current.sessionId);
    this.current = null;
    const conn = await this.p.agent.ensureAgent();
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
}
