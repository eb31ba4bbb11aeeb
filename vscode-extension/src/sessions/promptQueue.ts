// The prompt queue of one conversation: acp-client's `PromptQueue` (acp-wasm's client build)
// with each prompt's attachments carried as its opaque data. Nothing here decides: whether a
// prompt is sent now or waits, what the end of a turn sends, and when the queue is held (after
// a cancel or a failure) are acp-client's rules (acp-client/src/queue.rs); refusals are its
// words, thrown as `QueueRefused`.
//
// Architecture Invariant: this file does not import `vscode`.

import type { QueueAfterTurn, QueueState, QueueSubmitted, QueueTurnEnd, QueuedPrompt } from "acp-wasm-client";
import type { ViewAttachment } from "../bridges/attachments";
import type { EngineModule } from "../protocol/engine";
import type { QueueAction } from "../webview/messages";

/** A prompt to send: what the user typed and attached. */
export interface PromptToSend {
  text: string;
  attachments: ViewAttachment[];
}

/** A refusal of the queue (acp-client's words for the user). */
export class QueueRefused extends Error {
  override name = "QueueRefused";
}

/** What the view shows of the queue. */
export interface QueueView {
  items: Array<{ id: number; text: string; attachments: number }>;
  held: boolean;
}

export class PromptQueue {
  private readonly q: InstanceType<EngineModule["PromptQueue"]>;

  constructor(engine: EngineModule) {
    this.q = new engine.PromptQueue();
  }

  /** The user sent `p` while a turn runs (`running`) or not: the prompt to send now (this one,
   *  or the first that waited), or null when it waits. Throws `QueueRefused`. */
  submit(p: PromptToSend, running: boolean): PromptToSend | null {
    const s = JSON.parse(this.call(() => this.q.submit(p.text, JSON.stringify(p.attachments), running))) as QueueSubmitted;
    return s.do === "send" ? prompt(s.prompt) : null;
  }

  /** The running turn ended (`end`): the queued prompt to send now, the words to tell when the
   *  queue is held, or nothing. */
  turnEnded(end: QueueTurnEnd): { send?: PromptToSend; held?: string } {
    const after = JSON.parse(this.q.turnEnded(end)) as QueueAfterTurn;
    if (after.next === "send") return { send: prompt(after.prompt) };
    if (after.next === "held") return { held: after.text };
    return {};
  }

  /** A held queue goes on while nothing runs: its first prompt, to send now. */
  sendHeld(): PromptToSend | undefined {
    const json = this.q.sendHeld();
    return json === undefined ? undefined : prompt(JSON.parse(json) as QueuedPrompt);
  }

  /** Queued prompt `id` now says `text`. Throws `QueueRefused`. */
  edit(id: number, text: string): void {
    this.call(() => this.q.edit(id, text));
  }

  /** Queued prompt `id` is not sent: it is handed back. Throws `QueueRefused`. */
  remove(id: number): PromptToSend {
    return prompt(JSON.parse(this.call(() => this.q.remove(id))) as QueuedPrompt);
  }

  /** Nothing waits any more; how many were dropped. */
  clear(): number {
    return this.q.clear();
  }

  get length(): number {
    return this.q.length;
  }

  /** The queue as the view shows it (the attachments counted). */
  view(): QueueView {
    const s = JSON.parse(this.q.state()) as QueueState;
    return { held: s.held, items: s.items.map((i) => ({ id: i.id, text: i.text, attachments: prompt(i).attachments.length })) };
  }

  dispose(): void {
    this.q.free();
  }

  private call<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      if ((e as Error)?.name === "QueueRefused") throw new QueueRefused((e as Error).message);
      throw e;
    }
  }
}

function prompt(q: QueuedPrompt): PromptToSend {
  let attachments: ViewAttachment[] = [];
  try {
    const a = JSON.parse(q.data || "[]") as unknown;
    if (Array.isArray(a)) attachments = a as ViewAttachment[];
  } catch {
    // The data is ours (written by submit): unreadable only if the queue was given other data.
  }
  return { text: q.text, attachments };
}

/** A queue action from the view, checked field by field; undefined when malformed. */
export function validQueueAction(m: unknown): QueueAction | undefined {
  if (!m || typeof m !== "object") return undefined;
  const o = m as Record<string, unknown>;
  const id = o.id;
  if ((o.action === "edit" || o.action === "remove") && (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0)) return undefined;
  if (o.action === "edit") return typeof o.text === "string" ? { action: "edit", id: id as number, text: o.text } : undefined;
  if (o.action === "remove") return { action: "remove", id: id as number };
  if (o.action === "sendHeld" || o.action === "clear") return { action: o.action };
  return undefined;
}
