// One conversation as the chat shows it: acp-client's thread model (acp-wasm's `Thread`, the
// same folding `acp chat` renders from; the chat's is a session engine's conversation,
// `Session.thread()`) and its changes handed to the view coalesced. Nothing here folds an
// update: the agent's `session/update`s are folded inside wasm by the connection
// (`AcpClient.foldInto`: `changed()` says there is something to draw), or given to
// `applyUpdate`, which hands them to `fold` (the session engine's `update`, which routes them;
// by default the thread's own `applyUpdate`); prompts, stop reasons, errors and notices go to
// `beginTurn`, `endTurn`, `failTurn`, `notice`. The view is sent `takeDelta()` (each changed
// entry once, whatever the number of updates that changed it) at most once per interval, and
// at once at a turn's boundaries, as the JSON text the engine wrote (the webview parses it
// once). The delta that ends a turn goes with acp-client's words for its stop reason (acp-wasm's
// `stopWords`, given as `stopWords`): the webview shows them and has no words of its own.
//
// Architecture Invariant: this file does not import `vscode`; time comes from a Scheduler.

import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { NoticeLevel, SavedThread, ThreadEntry } from "acp-wasm-client";
import type { WasmThread } from "../protocol/engine";

export interface Scheduler {
  /** Calls `fn` once after about `ms`; the returned function cancels it. */
  schedule(fn: () => void, ms: number): () => void;
}

export const timerScheduler: Scheduler = {
  schedule(fn, ms) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

export class Conversation {
  private cancelTimer: (() => void) | undefined;
  private turnOpen = false;
  private disposed = false;
  /** Deltas delivered, for observability and tests. */
  deliveries = 0;

  constructor(
    private readonly thread: WasmThread,
    /** Gets `Thread.takeDelta()`'s JSON text (a `ThreadDelta`), and with the delta that ends a
     *  turn, the words for its stop reason. */
    private readonly deliver: (deltaJson: string, stopWords?: string) => void,
    private readonly scheduler: Scheduler = timerScheduler,
    private readonly intervalMs = 50,
    /** acp-client's words for a stop reason (acp-wasm's `stopWords`); none: no words are sent. */
    private readonly stopWords?: (stopReason: string) => string,
    /** Folds one `session/update`'s params (JSON text): the session engine's `update` for a
     *  session's conversation; the thread's own `applyUpdate` by default. */
    private readonly fold: (paramsJson: string) => unknown = (json) => thread.applyUpdate(json),
  ) {}

  /** A turn started (`beginTurn`) and has not ended or failed yet. */
  get turnRunning(): boolean {
    return this.turnOpen;
  }

  /** Folds one `session/update`'s params (or their JSON text) with `fold`. Throws the
   *  engine's "unreadable session/update: …" for params it cannot read; nothing changes then. */
  applyUpdate(params: unknown): void {
    this.fold(typeof params === "string" ? params : JSON.stringify(params));
    this.later();
  }

  /** The model changed outside (updates folded inside wasm, the engine's notices): delivered
   *  within the interval. */
  changed(): void {
    if (this.thread.hasChanges()) this.later();
  }

  /** The turn was ended outside (the engine failed it when the agent ended). */
  turnOver(): void {
    this.turnOpen = false;
  }

  /** The user's prompt starts a turn; returns its entry number. */
  beginTurn(prompt: readonly ContentBlock[]): number {
    const n = this.thread.beginTurn(JSON.stringify(prompt));
    this.turnOpen = true;
    this.flush();
    return n;
  }

  /** The turn ended with the agent's stop reason; what it streamed is delivered first. */
  endTurn(stopReason: string): void {
    this.thread.endTurn(stopReason);
    this.turnOpen = false;
    this.deliverNow(this.stopWords?.(stopReason));
  }

  /** The model ended the turn itself with `stopReason` (ACP v2: the agent's idle
   *  `state_update`, folded by the session engine): what it streamed is delivered now. */
  turnEndedBy(stopReason: string): void {
    this.turnOpen = false;
    this.deliverNow(this.stopWords?.(stopReason));
  }

  /** The turn failed (an error, the agent crashed): the message stays in the conversation. */
  failTurn(message: string): void {
    this.thread.failTurn(message);
    this.turnOpen = false;
    // The thread's stop reason for a failed turn is `error`.
    this.deliverNow(this.stopWords?.("error"));
  }

  /** Something the extension reports in the conversation; returns its entry number. */
  notice(level: NoticeLevel, text: string): number {
    const n = this.thread.notice(level, text);
    this.flush();
    return n;
  }

  /** The agent confirmed a mode (`session/set_mode` answered): shown as its own update would be. */
  setCurrentMode(sessionId: string, currentModeId: string): void {
    this.applyUpdate({ sessionId, update: { sessionUpdate: "current_mode_update", currentModeId } });
    this.flush();
  }

  /** The agent's config options after `session/set_config_option`. */
  setConfigOptions(sessionId: string, configOptions: unknown[]): void {
    this.applyUpdate({ sessionId, update: { sessionUpdate: "config_option_update", configOptions } });
    this.flush();
  }

  /** The saved form (everything, for a view that starts over). */
  saved(): SavedThread {
    return JSON.parse(this.thread.toJson()) as SavedThread;
  }

  /** The saved form's JSON text. */
  savedJson(): string {
    return this.thread.toJson();
  }

  /** Entry `n`, if still kept. */
  entry(n: number): ThreadEntry | undefined {
    const json = this.thread.entryJson(n);
    return json === undefined || json === null ? undefined : (JSON.parse(json) as ThreadEntry);
  }

  /** Delivers the changes now (a turn's boundary, or the timer). */
  flush(): void {
    this.deliverNow(undefined);
  }

  private deliverNow(stopWords: string | undefined): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.disposed || !this.thread.hasChanges()) return;
    this.deliveries++;
    if (stopWords === undefined) this.deliver(this.thread.takeDelta());
    else this.deliver(this.thread.takeDelta(), stopWords);
  }

  /** Forgets the view's pending changes (a view that starts over is sent `savedJson()`). */
  discardChanges(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.thread.hasChanges()) this.thread.takeDelta();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.thread.free();
  }

  private later(): void {
    if (!this.cancelTimer) this.cancelTimer = this.scheduler.schedule(() => this.flush(), this.intervalMs);
  }
}
