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
// conversation (the editor tab in front, else the side view). A conversation is shown in a
// view it can leave: the side view's moves into an editor tab (same session, its turn goes on,
// its questions told from the tab) and the side view gets a new one; a tab VS Code brings back
// after a window reload shows its saved conversation again (the side view's way: restore).
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

/** Where a conversation is shown: the side view or an editor tab. */
interface View {
  post(m: HostToWebview): void;
  /** It has keyboard focus (a turn's end is told only when not). */
  focused(): boolean;
  reveal(): void;
  /** Its editor tab (none: the side view). */
  panel?: ChatPanel;
}

/** One conversation and the view it is shown in (which it may leave: moveSideToTab). */
interface Open {
  sessions: SessionController;
  router: WebviewRouter;
  view: View;
}

export class Conversations implements SessionSide {
  private sideOne: Open;
  private readonly tabs: Open[] = [];

  constructor(private readonly p: ConversationsParts) {
    this.sideOne = this.make(this.sideView());
  }

  private sideView(): View {
    const view = this.p.sideView;
    return {
      post: (m) => view.post(m),
      focused: () => view.focused,
      reveal: () => void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`),
    };
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
    if (t) t.view.panel!.reveal();
    else void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  private activeOne(): Open {
    return this.tabs.find((t) => t.view.panel!.active) ?? this.sideOne;
  }

  /** A conversation in a new editor tab: a new session, or `entry` from the history. Opening
   *  one while another conversation's turn runs is fine: that turn goes on. */
  async openTab(entry?: HistoryEntry): Promise<SessionController> {
    const one = this.make(this.tabView());
    this.tabs.push(one);
    if (entry) await one.sessions.openSaved(entry);
    else await one.sessions.newSession().catch(() => undefined); // a failure is told in it
    return one.sessions;
  }

  /** A tab VS Code brought back after a window reload (`panel`, its chat's saved `sessionId`):
   *  the saved conversation shown again, its session reopened at the next session (the side
   *  view's way, SessionController.restore); one that cannot be is said so in it, and its next
   *  prompt starts a new session. */
  restoreTab(panel: vscode.WebviewPanel, sessionId: string | undefined): void {
    const one = this.make(this.tabView(panel));
    this.tabs.push(one);
    const held = sessionId !== undefined && this.all().some((c) => c !== one.sessions && c.holds(sessionId));
    // A tab whose chat had no session yet had nothing to show again.
    const why =
      sessionId === undefined
        ? undefined
        : held
          ? `session ${sessionId} is shown in another conversation`
          : one.sessions.restore(sessionId);
    if (why)
      one.sessions
        .conversation()
        .notice("info", `The conversation of this tab was not restored: ${why}. Your next prompt starts a new session.`);
    this.showRunning();
  }

  /** The side view's conversation moves into a new editor tab (the same session; a running
   *  turn goes on and its questions are told from the tab); the side view starts a new one. */
  moveSideToTab(): SessionController {
    const moved = this.sideOne;
    const tab = this.tabView();
    moved.sessions.leaveSide();
    moved.view = tab;
    this.tabs.push(moved);
    // The tab's chat starts from the whole conversation when it is ready (its router's "ready").
    this.sideOne = this.make(this.sideView());
    this.sideOne.sessions.showAll();
    this.showRunning();
    return moved.sessions;
  }

  /** A view in an editor tab (a new one, or `restored` after a reload); its messages go to the
   *  conversation shown in it. */
  private tabView(restored?: vscode.WebviewPanel): View {
    const view: View = {
      post: (m) => panel.post(m),
      focused: () => panel.focused,
      reveal: () => panel.reveal(),
    };
    const panel = new ChatPanel(
      this.p.extensionUri,
      (m) => this.tabs.find((t) => t.view === view)?.router.onMessage(m),
      () => {
        const one = this.tabs.find((t) => t.view === view);
        if (one) this.closed(one);
      },
      restored,
    );
    view.panel = panel;
    return view;
  }

  private make(view: View): Open {
    // The view is looked up on each call: the conversation may move to another (moveSideToTab).
    let one: Open | undefined;
    const sessions: SessionController = new SessionController({
      ...this.p.sessions,
      post: (m) => one!.view.post(m),
      restorable: () => one === this.sideOne,
      notifier: new TurnNotifier(
        () => one!.view.focused(),
        () => one!.view.reveal(),
      ),
      mayAttach: () => this.mayAttach(sessions),
      changed: () => this.showRunning(),
      resetEdits: () => this.resetEdits(sessions),
    });
    const router = new WebviewRouter({ ...this.p.router, sessions, post: (m) => one!.view.post(m) });
    one = { sessions, router, view };
    return one;
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
      t.view.panel!.setTitle(t.sessions.conversationTitle());
      t.view.panel!.showRunning(t.sessions.busy);
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
    for (const t of this.tabs) t.view.post(m);
  }

  /** Every conversation saved now. */
  saveNow(): void {
    for (const c of this.all()) c.saveNow();
  }

  dispose(): void {
    for (const t of [...this.tabs]) t.view.panel!.dispose();
    this.side.dispose();
  }
}
