// The session controller: the session with the running agent and the conversation the chat
// shows, both acp-client's session engine (acp-wasm's `Session`: which request opens a
// session, a load's replay folded or shown, updates held until the session is known, the
// restart after a crash and how the session is re-established, what the user is told; its
// conversation drawn through bridges/conversation.ts). It gives the engine what it decides
// from (the intent: a new conversation, a saved one reopened after a reload or from the
// history; the agent's answers, in wire order, through sessions/opener.ts and the connection
// folding updates inside wasm; the agent's end) and carries out what it says; runs prompt
// turns (busy, cancel, the agent's writes listed after each), saves the conversation shown
// (debounced) and shows the last one again after a window reload, and opens one from the
// history. Its prompts go through its queue (queuedTurns.ts); a turn's end is notified when the
// user is not looking. It is one conversation among several (conversations.ts keeps them, one
// per view, and routes the agent's messages to each by session id).
// One reason to change: what a session or a turn does with the conversation shown.

import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { QueueTurnEnd, SessionAfterEnd } from "acp-wasm-client";
import * as vscode from "vscode";
import { promptParts, type ViewAttachment } from "../bridges/attachments";
import { Conversation, timerScheduler } from "../bridges/conversation";
import type { EditReview } from "../bridges/edits";
import { editsMessage } from "./editsView";
import { QueuedTurns } from "./queuedTurns";
import type { TurnNotifier } from "../ui/turnNotifier";
import type { KnownToolCall } from "../bridges/permission";
import { sessionTerminalName } from "../bridges/sessionTerminals";
import type { TerminalManager } from "../bridges/terminal";
import type { AgentConnection } from "../protocol/agent";
import type { EngineModule, WasmSession } from "../protocol/engine";
import { RpcError } from "../protocol/client";
import type { Logger } from "../protocol/log";
import type { ClientPolicy } from "../protocol/policy";
import { PROTOCOL_V2, v2Session, V2TurnEnd } from "../protocol/v2";
import type { SessionDecisions } from "../sessions/decisions";
import { CannotOpen, openSession, RestartNeeded, type SessionIntent, type SignIn } from "../sessions/opener";
import type { HistoryEntry, SessionStore } from "../sessions/store";
import type { HostFiles } from "../platform/hostFiles";
import type { HostToWebview, QueueAction } from "../webview/messages";
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
  /** Files attached to a prompt are read through the host's (platform/hostFiles.ts). */
  files: HostFiles;
  /** The terminal bridge (none in the browser). */
  terminals: TerminalManager | undefined;
  /** The agent's writes waiting for Keep or Undo (shown after each turn). */
  edits: EditReview;
  /** Tells the user a turn ended when they are not looking (ui/turnNotifier.ts). */
  notifier: TurnNotifier;
  log: Logger;
  /** This conversation is the one the side view shows again after a window reload (the side
   *  view's, now: it may move into an editor tab). */
  restorable(): boolean;
  /** Its session's updates may be folded inside wasm (no other conversation's are). */
  mayAttach(): boolean;
  /** A turn started or ended, or the title changed (host/conversations.ts shows it). */
  changed(): void;
  /** A new session of this conversation: the edit review starts over, when no other
   *  conversation has edits in it. */
  resetEdits(): void;
}

const LAST_SESSION_KEY = "acp.lastSession";
const NEW: SessionIntent = { open: "new" };

/** A saved conversation's intent as JSON text, its saved form (`savedJson`) put in as it is. */
function continueIntent(sessionId: string, savedJson: string | undefined, o: { tryUnknown?: boolean; orNew?: boolean }): string {
  const rest = JSON.stringify({ open: "continue", sessionId, tryUnknown: !!o.tryUnknown, orNew: !!o.orNew });
  return savedJson === undefined ? rest : `${rest.slice(0, -1)},"saved":${savedJson}}`;
}

/** `conn`'s process or connection has ended (its exit told to the lifecycle, which saw it
 *  first), or a second has passed. */
function agentEnd(conn: AgentConnection): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([conn.exited.then(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)))]).finally(
    () => clearTimeout(timer),
  );
}

export class SessionController implements SessionSide {
  private current: SessionInfo | null = null;
  private running = false;
  /** session/cancel was sent for the current turn (a `cancelled` permission answer sends it once). */
  private turnCancelled = false;
  /** The session engine of the conversation shown (its conversation is `conv`'s model). */
  private engine: WasmSession | undefined;
  /** The conversation the chat shows (a session's, or the notices before any session). */
  private conv: Conversation | undefined;
  /** The engine shown is the one the next session opens (a saved conversation to reopen, a
   *  restart after a crash, a conversation continued in a new session); otherwise the next
   *  session starts a new conversation. */
  private keep = false;
  private saveTimer: NodeJS.Timeout | undefined;
  /** A session is being opened (its id not known yet: updates with an unknown id are its). */
  private openingNow = false;
  /** The session of the saved conversation shown again after a reload (restore), until
   *  another conversation is shown. */
  private restoredId: string | undefined;
  /** Its view is gone (close): no turn starts. */
  private closed = false;
  /** Prompts sent while a turn runs, waiting for it to end (acp-client's queue), and the turns
   *  that send them. */
  private readonly queued: QueuedTurns;
  /** ACP v2: the running turn, acknowledged, waits for the engine to fold the agent's idle
   *  `state_update` (`check` after each fold); abandoned when the agent ends or the conversation goes. */
  private readonly v2Turn = new V2TurnEnd();

  constructor(private readonly p: SessionParts) {
    this.queued = new QueuedTurns({
      engine: p.engine,
      running: () => this.running,
      turn: (text, attachments) => this.turn(text, attachments),
      post: p.post,
      notice: (text) => this.conv?.notice("info", text),
      log: p.log,
    });
  }

  /** The session with the running agent, if one is open. */
  get session(): SessionInfo | null {
    return this.current;
  }

  /** A prompt turn is running. */
  get busy(): boolean {
    return this.running;
  }

  /** A session is being opened for this conversation (its id not known yet). */
  get opening(): boolean {
    return this.openingNow;
  }

  /** Session `sessionId` is this conversation's (open, or to be reopened after a reload). */
  holds(sessionId: string): boolean {
    return this.current?.sessionId === sessionId || this.restoredId === sessionId;
  }

  /** Its session engine is the one `conn` folds updates into. */
  attachedTo(conn: AgentConnection): boolean {
    return !!this.engine && conn.foldsInto(this.engine);
  }

  /** The conversation shown, if there is one (conversation() makes one). */
  get shown(): Conversation | undefined {
    return this.conv;
  }

  // ---- what the lifecycle asks (SessionSide) ---------------------------------------------

  agentGone(): void {
    this.current = null;
  }

  agentEnded(why: string): SessionAfterEnd {
    this.current = null;
    this.v2Turn.abandon(why);
    const conv = this.conversation();
    // The engine fails a running turn with `why` and says what follows; all in the conversation.
    const after = JSON.parse(this.engine!.agentEnded(performance.now(), why)) as SessionAfterEnd;
    conv.turnOver();
    conv.flush();
    // The same conversation goes on with the restarted agent (the engine re-establishes it).
    if (after.next === "restart") this.keep = true;
    return after;
  }

  startOver(): void {
    this.keep = false;
  }

  // ---- the conversation shown --------------------------------------------------------------

  /** The conversation shown, made empty when there is none yet. */
  conversation(): Conversation {
    return this.conv ?? this.show(JSON.stringify(NEW));
  }

  /** A session engine for `intentJson` (with `optionsJson`) becomes the conversation shown: the
   *  view starts over from it. Throws the engine's `SessionRefused`. */
  private show(intentJson: string, optionsJson?: string): Conversation {
    const engine = new (this.p.engine().Session)(intentJson, this.p.settings.workspaceCwd(), optionsJson);
    this.dispose();
    this.engine = engine;
    this.restoredId = undefined;
    const conv: Conversation = new Conversation(
      engine.thread(),
      (json, stopWords) => {
        if (this.conv !== conv) return;
        this.p.post({ type: "delta", json, stopWords });
        this.saveSoon();
      },
      timerScheduler,
      cfg().get<number>("chat.updateIntervalMs", 50),
      (stop) => this.p.decisions.stopWords(stop),
      // The engine routes what is folded outside the connection (a mode the agent confirmed).
      (json) => engine.update(json),
    );
    this.conv = conv;
    conv.discardChanges();
    this.p.post({ type: "conversation", sessionId: null, agent: null, reset: true, saved: conv.savedJson() });
    // Prompts queued for the conversation that was shown are not sent into this one.
    const dropped = this.queued.clear();
    if (dropped)
      conv.notice("info", `${dropped} queued prompt${dropped === 1 ? " was" : "s were"} not sent (another conversation was opened).`);
    return conv;
  }

  /** Its view is gone (an editor tab closed): nothing queued is sent, a running turn is
   *  cancelled, the conversation saved and released; no turn starts any more. */
  close(): void {
    this.closed = true;
    this.queued.clear();
    if (this.running) this.cancel();
    this.saveNow();
    if (this.current) this.p.terminals?.endSession(this.current.sessionId);
    this.dispose();
  }

  /** The conversation shown and its engine are released (the running agent folds into it no
   *  more). */
  dispose(): void {
    const conn = this.p.agent.conn;
    if (this.engine && conn?.foldsInto(this.engine)) conn.foldInto(undefined);
    this.v2Turn.abandon("the conversation was closed");
    this.conv?.dispose();
    this.engine?.free();
    this.conv = undefined;
    this.engine = undefined;
  }

  /** The conversation's title (the agent's, else its first prompt: acp-client's list title),
   *  if it has one yet. */
  conversationTitle(): string | undefined {
    const title = this.engine?.title;
    return title === undefined || title === "(no prompt yet)" ? undefined : title;
  }

  /** Tells the user the agent asks permission (`title`) when they are not looking. */
  notifyPermission(title: string): void {
    this.p.notifier.notify(this.conversationTitle(), { kind: "permission", title });
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
    this.queued.post();
    this.postCapabilities();
    this.postEdits();
  }

  // ---- sessions ----------------------------------------------------------------------------

  /** Opens a session. After a crash, or with a conversation to reopen or continue, it goes on in
   *  the conversation shown (its engine re-establishes or opens it); otherwise the chat starts
   *  a new conversation. */
  async newSession(o: { afterCrash?: boolean; signedIn?: boolean } = {}): Promise<SessionInfo> {
    const conn = await this.p.agent.ensureAgent();
    if (this.running && this.current) conn.cancel(this.current.sessionId);
    // The conversation shown is saved as it is now, before another takes its place.
    this.saveNow();
    const reuse = (!!o.afterCrash || this.keep) && !!this.conv;
    this.keep = false;
    const conv = reuse ? this.conv! : this.show(JSON.stringify(NEW));
    const engine = this.engine!;
    // A conversation shown already (saved, or continued) that this open reopens.
    const reopening = reuse && !o.afterCrash;
    let sessionId: string;
    this.openingNow = true;
    try {
      const opened = await openSession(conn, engine, {
        attach: this.p.mayAttach(),
        cwd: this.p.settings.workspaceCwd(),
        mcpSetting: cfg().get("mcpServers", {}),
        decisions: this.p.decisions,
        signIn: this.p.signIn,
        onFolded: () => {
          conv.changed();
          this.v2Turn.check();
        },
        notice: (level, text) => conv.notice(level, text),
      });
      sessionId = opened.sessionId;
    } catch (e) {
      conv.flush();
      if (this.conv !== conv) throw e; // another conversation was shown meanwhile
      if (e instanceof RestartNeeded && !o.signedIn) {
        // A sign-in kept a variable: the agent starts again with it, the same engine opens.
        this.keep = true;
        await this.p.agent.stop();
        return this.newSession({ ...o, signedIn: true });
      }
      const words = e instanceof CannotOpen ? e.message : this.p.decisions.errorWords(e);
      if (e instanceof CannotOpen && reopening) {
        // The conversation stays shown, read-only; the next prompt continues it in a new session.
        this.show(JSON.stringify(NEW), `{"shown":${conv.savedJson()}}`).notice(
          "warning",
          `${words}. This conversation is read-only here: your next prompt continues it in a new session.`,
        );
      } else {
        conv.notice("error", `Could not open a session: ${words}`);
      }
      // The next attempt opens the engine shown (its intent, or a restart's re-establishing).
      this.keep = true;
      throw new Error(words);
    } finally {
      this.openingNow = false;
    }
    if (this.current && this.current.sessionId !== sessionId) this.p.terminals?.endSession(this.current.sessionId);
    this.current = { sessionId, agent: conn.agentTitle };
    this.restoredId = undefined;
    // The side view's session to show again after a reload, kept at once (not only with the
    // debounced save: a reload right after the first turn would find the one before).
    if (this.p.restorable()) void this.p.extension.workspaceState.update(LAST_SESSION_KEY, sessionId);
    this.p.post({ type: "conversation", sessionId, agent: conn.agentTitle, reset: false });
    conv.flush();
    this.saveSoon();
    this.postCapabilities();
    if (!o.afterCrash) {
      this.p.resetEdits();
      this.postEdits();
    }
    return this.current;
  }

  async ensureSession(o: { afterCrash?: boolean } = {}): Promise<{ conn: AgentConnection; session: SessionInfo }> {
    const conn = await this.p.agent.ensureAgent();
    const session = this.current ?? (await this.newSession(o));
    return { conn, session };
  }

  /** A `session/update` the connection did not fold inside wasm (one the engine cannot read, or
   *  one from a connection with no engine attached): to the engine, which routes it. */
  onSessionUpdate(sessionId: string, params: unknown): void {
    if (!this.conv) {
      this.p.log.warn(`session/update for session ${sessionId} with no conversation shown: dropped`);
      return;
    }
    try {
      this.conv.applyUpdate(params);
      this.v2Turn.check();
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

  /** The user sent a prompt: sent now, or queued while a turn runs (host/queuedTurns.ts).
   *  Resolves when nothing more is sent. */
  prompt(text: string, attachments: ViewAttachment[] = []): Promise<void> {
    return this.queued.submit(text, attachments);
  }

  /** What the view asked of the queue (edit, remove, send a held queue's first, clear). */
  queueAction(a: QueueAction): void {
    this.queued.action(a);
  }

  /** One prompt turn; how it ended, for the queue. */
  private async turn(text: string, attachments: ViewAttachment[]): Promise<QueueTurnEnd> {
    if (this.running || this.closed) return "failed";
    this.setBusy(true);
    this.turnCancelled = false;
    // A checkpoint: the files this turn writes can be put back as they were before it.
    this.p.edits.beginTurn((text.split("\n")[0] ?? "").slice(0, 80));
    let end: QueueTurnEnd = "failed";
    let blocks: ContentBlock[] = [{ type: "text", text }];
    let conv: Conversation | undefined;
    let conn: AgentConnection | undefined;
    try {
      let session: SessionInfo;
      try {
        ({ conn, session } = await this.ensureSession());
        const parts = await promptParts(
          text,
          attachments,
          conn.init.agentCapabilities?.promptCapabilities,
          this.p.policy,
          this.p.files,
          (p) => vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p)?.getText(),
        );
        if (parts.refused.length) throw new Error(parts.refused.join("\n"));
        blocks = parts.blocks;
      } catch (e) {
        // Not sent: the prompt goes back into the input with why (nothing is lost).
        this.p.post({ type: "promptFailed", text, attachments, message: `Not sent: ${(e as Error).message}` });
        return "failed";
      }
      conv = this.conversation();
      const engine = this.engine!;
      conv.beginTurn(blocks);
      const res = await conn!.prompt(session.sessionId, blocks);
      // Another conversation was shown meanwhile, or this one closed: its turn is over with it.
      if (this.conv !== conv) return "cancelled";
      let stopReason: string;
      if (conn!.protocolVersion === PROTOCOL_V2) {
        // ACP v2: the answer only acknowledges the prompt; the agent's idle state_update ends
        // the turn (the engine folds it and ends the thread's turn with its stop reason).
        stopReason = await this.v2Turn.answered(v2Session(engine), res);
        if (this.conv !== conv) return "cancelled";
        conv.turnEndedBy(stopReason);
      } else {
        stopReason = res.stopReason;
        conv.endTurn(stopReason);
      }
      end = stopReason === "cancelled" ? "cancelled" : "done";
      if (end === "done")
        this.p.notifier.notify(this.conversationTitle(), { kind: "ended", words: this.p.decisions.stopWords(stopReason) });
    } catch (e) {
      if (conv && this.conv !== conv) return "failed"; // shown no more (see above)
      const message = this.p.decisions.errorWords(e);
      if (conv?.turnRunning && conn && e instanceof RpcError && e.kind === "closed") {
        // The connection closed under the turn: the agent's end follows the end of its output,
        // and the session engine fails the turn with why (its exit, its stderr), which says
        // more than "closed". Awaited briefly: an agent stopped by the user fails it below.
        await agentEnd(conn);
      }
      if (!conv) {
        // No session: the prompt and why it was not sent stay in the conversation.
        conv = this.conversation();
        conv.beginTurn(blocks);
      }
      if (conv.turnRunning) {
        conv.failTurn(message);
        this.p.notifier.notify(this.conversationTitle(), { kind: "ended", words: `failed: ${message}` });
      }
    } finally {
      this.setBusy(false);
      this.postEdits();
    }
    return end;
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
    this.p.changed();
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
    this.p.post(editsMessage(this.p.edits, this.p.policy, this.p.settings.workspaceCwd()));
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
    if (!this.current || !this.conv || !this.engine) return;
    try {
      const agent = this.p.agent.conn?.spec.name ?? this.p.settings.selectedAgentName();
      this.p.store.save(
        { sessionId: this.current.sessionId, agent: agent ?? "", agentTitle: this.current.agent, title: this.engine.title },
        this.conv.savedJson(),
      );
      if (this.p.restorable()) void this.p.extension.workspaceState.update(LAST_SESSION_KEY, this.current.sessionId);
    } catch (e) {
      this.p.log.warn(`cannot save the conversation: ${(e as Error).message}`);
    }
  }

  /** After a window reload: the side view's last conversation is shown again (restore). */
  restoreLast(): void {
    const last = this.p.extension.workspaceState.get<string>(LAST_SESSION_KEY);
    const why = last ? this.restore(last) : undefined;
    if (why) this.p.log.info(`the side view's last conversation is not restored: ${why}`);
  }

  /** After a window reload: saved conversation `sessionId` is shown again, its session reopened
   *  by the engine at the next session (resumed, or loaded with its replay folded; else
   *  continued in a new session, said so). Why it is not, if it is not. */
  restore(sessionId: string): string | undefined {
    const { store, log } = this.p;
    const rec = store.find(sessionId);
    for (const p of store.problems.splice(0)) log.warn(p);
    if (!rec) return `session ${sessionId} is not saved here (any more)`;
    const agent = this.p.settings.selectedAgentName();
    if (rec.agent !== agent) return `it was with ${rec.agentTitle || rec.agent}, the agent selected is ${agent ?? "none"}`;
    const json = store.thread(rec.sessionId);
    for (const p of store.problems.splice(0)) log.warn(p);
    if (!json) return `the saved conversation of session ${sessionId} cannot be read (see the log)`;
    try {
      this.show(continueIntent(rec.sessionId, json, { orNew: true }));
      this.keep = true;
      this.restoredId = rec.sessionId;
      log.info(`restored the conversation of session ${rec.sessionId} (${rec.title})`);
      return undefined;
    } catch (e) {
      log.warn(`the saved conversation of ${rec.sessionId} is unreadable: ${(e as Error).message}`);
      return `the saved conversation of session ${sessionId} is unreadable: ${(e as Error).message}`;
    }
  }

  /** It is no longer the side view's conversation (moved into an editor tab): the side view
   *  does not show it again after a reload. */
  leaveSide(): void {
    const last = this.p.extension.workspaceState.get<string>(LAST_SESSION_KEY);
    if (last !== undefined && last === this.current?.sessionId) void this.p.extension.workspaceState.update(LAST_SESSION_KEY, undefined);
  }

  /** Reopens a session from the history with its agent (resumed or loaded, as the engine
   *  decides; one the agent cannot reopen, or another agent's, is shown read-only and the next
   *  prompt continues it in a new session). */
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
    if (this.current) this.p.terminals?.endSession(this.current.sessionId);
    this.current = null;
    const conn = await this.p.agent.ensureAgent();
    try {
      if (e.agent === conn.spec.name) {
        // Not saved here (from the agent's own list): tried with the agent, which has it.
        this.show(continueIntent(e.sessionId, json, { tryUnknown: !e.saved }));
        this.keep = true;
        await this.newSession().catch(() => undefined); // a failure is told in the conversation
        return;
      }
      this.show(JSON.stringify(NEW), json === undefined ? undefined : `{"shown":${json}}`);
    } catch (err) {
      void vscode.window.showErrorMessage(`ACP: "${e.title}" cannot be shown: ${(err as Error).message}`);
      return;
    }
    this.keep = true;
    this.conversation().notice(
      "info",
      `This conversation was with ${e.agentTitle || e.agent}: it is read-only here. Your next prompt continues it in a new session with ${conn.agentTitle}.`,
    );
  }
}
