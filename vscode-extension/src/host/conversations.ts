// The conversations open at once: the side view's and one per editor tab (ui/chatPanel.ts),
// each its own SessionController (its session, engine, queue, turns) and WebviewRouter, all on
// the one running agent (several sessions on its connection). This registry is what the
// lifecycle talks to (SessionSide: the agent's start, end and restart reach every
// conversation), routes what the agent sends by session id (updates, permission questions,
// terminals, cancels), says which conversation's session is folded inside wasm (the fast path,
// only while no other conversation has a session: one opening a new session would otherwise
// hold the others' updates), and shows every turn running: the status bar while any runs, the
// count on the side view's icon, the side view's header and each tab's title while its own
// does. The agent's state goes to every view (broadcast). Commands act on the active
// conversation (the editor tab in front, else the side view).
// One reason to change: how conversations are held side by side.

import * as vscode from "vscode";
import type { SessionAfterEnd } from "acp-wasm-client";
import type { Conversation } from "../bridges/conversation";
import type { KnownToolCall } from "../bridges/permission";
import { mayFoldInside, mayResetEdits, ownerOf } from "../sessions/routing";
import type { HistoryEntry } from "../sessions/store";
import { ChatPanel } from "../ui/chatPanel";
import type { ChatViewProvider } from "../ui/chatView";
import { CHAT_VIEW_ID } from "../ui/chatView";
import { TurnNotifier } from "../ui/turnNotifier";
import type { HostToWebview } from "../webview/messages";
import type { AgentLifecycle, SessionSide } from "./lifecycle";
import { SessionController, type SessionParts } from "./sessionController";
import { WebviewRouter, type RouterParts } from "./webviewRouter";

/** What every conversation shares (all of SessionParts but its own view and callbacks). */
export type SharedSessionParts = Omit<SessionParts, "post" | "restorable" | "mayAttach" | "changed" | "resetEdits" | "notifier">;

export interface ConversationsParts {
  extensionUri: vscode.Uri;
  agent: AgentLifecycle;
  sessions: SharedSessionParts;
  router: Omit<RouterParts, "sessions" | "post">;
  sideView: ChatViewProvider;
}

/** One conversation and the view it is shown in. */
interface Open {
  sessions: SessionController;
  router: WebviewRouter;
  /** Its editor tab (none: the side view's). */
  panel?: ChatPanel;
}

export class Conversations implements SessionSide {
  private readonly sideOne: Open;
  private readonly tabs: Open[] = [];

  constructor(private readonly p: ConversationsParts) {
    const view = p.sideView;
    this.sideOne = this.make(
      (m) => view.post(m),
      true,
      () => view.focused,
      () => void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`),
    );
  }

  /** The side view's conversation. */
  get side(): SessionController {
    return this.sideOne.sessions;
  }

  /** The side view's messages router. */
  get sideRouter(): WebviewRouter {
    return this.sideOne.router;
  }

  /** Every conversation open, the side view's first. */
  all(): SessionController[] {
    return [this.sideOne, ...this.tabs].map((o) => o.sessions);
  }

  /** How many editor tabs hold a conversation. */
  get tabCount(): number {
    return this.tabs.length;
  }

  /** The conversation the user is in: the editor tab in front, else the side view's. */
  get active(): SessionController {
    return this.activeOne().sessions;
  }

  /** The active conversation's router. */
  get activeRouter(): WebviewRouter {
    return this.activeOne().router;
  }

  /** Shows conversation `c` (its tab, or the side view). */
  reveal(c: SessionController): void {
    const t = this.tabs.find((o) => o.sessions === c);
    if (t) t.panel!.reveal();
    else void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  private activeOne(): Open {
    return this.tabs.find((t) => t.panel!.active) ?? this.sideOne;
  }

  /** A conversation in a new editor tab: a new session, or `entry` from the history. Opening
   *  one while another conversation's turn runs is fine: that turn goes on. */
  async openTab(entry?: HistoryEntry): Promise<SessionController> {
    let one: Open | undefined;
    const panel = new ChatPanel(
      this.p.extensionUri,
      (m) => one?.router.onMessage(m),
      () => this.closed(one!),
    );
    one = this.make(
      (m) => panel.post(m),
      false,
      () => panel.focused,
      () => panel.reveal(),
    );
    one.panel = panel;
    this.tabs.push(one);
    if (entry) await one.sessions.openSaved(entry);
    else await one.sessions.newSession().catch(() => undefined); // a failure is told in it
    return one.sessions;
  }

  private make(post: (m: HostToWebview) => void, restorable: boolean, focused: () => boolean, reveal: () => void): Open {
    const sessions: SessionController = new SessionController({
      ...this.p.sessions,
      post,
      restorable,
      notifier: new TurnNotifier(focused, reveal),
      mayAttach: () => this.mayAttach(sessions),
      changed: () => this.showRunning(),
      resetEdits: () => this.resetEdits(sessions),
    });
    const router = new WebviewRouter({ ...this.p.router, sessions, post });
    return { sessions, router };
  }

  /** A tab was closed: its turn is cancelled, its conversation saved and released. */
  private closed(one: Open): void {
    const at = this.tabs.indexOf(one);
    if (at < 0) return;
    this.tabs.splice(at, 1);
    one.sessions.close();
    this.showRunning();
  }

  /** `c`'s new session may be folded inside wasm (sessions/routing.ts). */
  private mayAttach(c: SessionController): boolean {
    return mayFoldInside(this.all(), c);
  }

  /** The edit review starts over for `c`'s new session, unless another conversation has one. */
  private resetEdits(c: SessionController): void {
    if (mayResetEdits(this.all(), c)) this.p.sessions.edits.reset();
  }

  /** Every turn running shown: the status bar while any runs, the side view's header (and
   *  the count of turns running on its icon), each tab's title. */
  private showRunning(): void {
    const running = this.all().filter((c) => c.busy).length;
    void vscode.commands.executeCommand("setContext", "acp.busy", this.active.busy);
    this.p.agent.showBusy(running > 0);
    this.p.sideView.showRunning(this.side.busy, running);
    for (const t of this.tabs) {
      t.panel!.setTitle(t.sessions.conversationTitle());
      t.panel!.showRunning(t.sessions.busy);
    }
  }

  // ---- routed by session id ------------------------------------------------------------------

  /** The conversation of session `sessionId`, else the one opening (sessions/routing.ts). */
  bySession(sessionId: string): SessionController | undefined {
    return ownerOf(this.all(), sessionId);
  }

  onSessionUpdate(sessionId: string, params: unknown): void {
    const c = this.bySession(sessionId);
    if (c) c.onSessionUpdate(sessionId, params);
    else this.p.sessions.log.warn(`session/update for session ${sessionId}, which no conversation has: dropped`);
  }

  cancelTurn(sessionId: string): void {
    const c = this.bySession(sessionId);
    if (c) c.cancelTurn(sessionId);
    else this.p.agent.conn?.cancel(sessionId);
  }

  knownToolCall(sessionId: string, toolCallId: string): KnownToolCall | null {
    return this.bySession(sessionId)?.knownToolCall(sessionId, toolCallId) ?? null;
  }

  terminalName(sessionId: string): string {
    return (this.bySession(sessionId) ?? this.side).terminalName(sessionId);
  }

  /** The title of session `sessionId`'s conversation (a notification names it). */
  titleOf(sessionId: string | undefined): string | undefined {
    return (sessionId ? this.bySession(sessionId) : this.active)?.conversationTitle();
  }

  /** Tells the user about a permission question of session `sessionId` when they are not
   *  looking (the conversation's own notifier: its Show reveals it). */
  notifyPermission(sessionId: string | undefined, title: string): void {
    const c = (sessionId ? this.bySession(sessionId) : undefined) ?? this.active;
    c.notifyPermission(title);
  }

  // ---- what the lifecycle asks (SessionSide) -------------------------------------------------

  conversation(): Conversation {
    return this.active.conversation();
  }

  agentGone(): void {
    for (const c of this.all()) c.agentGone();
  }

  /** Every conversation's engine hears the end (a running turn fails with why); what follows
   *  is the side view's engine's decision (its crash budget). */
  agentEnded(why: string): SessionAfterEnd {
    for (const t of this.tabs) if (t.sessions.session || t.sessions.busy) t.sessions.agentEnded(why);
    return this.side.agentEnded(why);
  }

  startOver(): void {
    for (const c of this.all()) c.startOver();
  }

  newSession(): Promise<unknown> {
    return this.side.newSession();
  }

  /** The side view's session (re-established after a crash; a tab's is at its next prompt). */
  ensureSession(o: { afterCrash?: boolean } = {}): Promise<unknown> {
    return this.side.ensureSession(o);
  }

  /** To every chat view open (the agent's state: there is one agent for them all). */
  broadcast(m: HostToWebview): void {
    this.p.sideView.post(m);
    for (const t of this.tabs) t.panel!.post(m);
  }

  /** Every conversation saved now. */
  saveNow(): void {
    for (const c of this.all()) c.saveNow();
  }

  dispose(): void {
    for (const t of [...this.tabs]) t.panel!.dispose();
    this.side.dispose();
  }
}
