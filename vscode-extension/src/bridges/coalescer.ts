// Coalescing of session updates on their way to the webview: updates are queued and delivered
// as one batch per interval, and consecutive text chunks of the same stream are merged, so a
// flood of one-token chunks becomes a few messages with long strings.
//
// Architecture Invariant: this file does not import `vscode`; time comes from a Scheduler.

import type { SessionUpdate } from "../protocol/types";

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

export interface Batch<T> {
  items: T[];
}

export class Coalescer<T> {
  private queue: T[] = [];
  private cancelTimer: (() => void) | undefined;
  /** How many items were pushed / delivered, for observability and tests. */
  pushed = 0;
  flushes = 0;

  constructor(
    private readonly deliver: (items: T[]) => void,
    private readonly merge: (prev: T, next: T) => T | undefined,
    private readonly scheduler: Scheduler = timerScheduler,
    private readonly intervalMs = 50,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  push(item: T): void {
    this.pushed++;
    const last = this.queue[this.queue.length - 1];
    const merged = last === undefined ? undefined : this.merge(last, item);
    if (merged !== undefined) this.queue[this.queue.length - 1] = merged;
    else this.queue.push(item);
    if (!this.cancelTimer) this.cancelTimer = this.scheduler.schedule(() => this.flush(), this.intervalMs);
  }

  /** Delivers what is queued now (e.g. at the end of a turn). */
  flush(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (this.queue.length === 0) return;
    const items = this.queue;
    this.queue = [];
    this.flushes++;
    this.deliver(items);
  }

  dispose(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.queue = [];
  }
}

/** A session update tagged with its session, as queued for the webview. */
export interface TaggedUpdate {
  sessionId: string;
  update: SessionUpdate;
}

const CHUNK_KINDS = new Set(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]);

/** Merges two consecutive text chunks of the same kind and session; anything else stays apart. */
export function mergeSessionUpdates(prev: TaggedUpdate, next: TaggedUpdate): TaggedUpdate | undefined {
  if (prev.sessionId !== next.sessionId) return undefined;
  const a = prev.update;
  const b = next.update;
  if (a.sessionUpdate !== b.sessionUpdate || !CHUNK_KINDS.has(a.sessionUpdate)) return undefined;
  const ac = (a as { content: { type: string; text?: string } }).content;
  const bc = (b as { content: { type: string; text?: string } }).content;
  if (ac?.type !== "text" || bc?.type !== "text") return undefined;
  return {
    sessionId: prev.sessionId,
    update: { ...a, content: { type: "text", text: (ac.text ?? "") + (bc.text ?? "") } } as SessionUpdate,
  };
}
