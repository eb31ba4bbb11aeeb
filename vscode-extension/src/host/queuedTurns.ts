// One conversation's prompt queue carried out: a prompt the user sends goes to acp-client's
// queue (sessions/promptQueue.ts), which says whether it is sent now or waits; each turn's end
// is told to it and what it hands back is sent, turn after turn; the view's edits, removals,
// Send next and Clear are done on it, and the queue is shown after each change. A refusal (an
// empty prompt, the queue full) is shown where the prompt was typed, the prompt kept.
// One reason to change: how queued prompts are sent.

import * as vscode from "vscode";
import type { QueueTurnEnd } from "acp-wasm-client";
import type { ViewAttachment } from "../bridges/attachments";
import type { EngineModule } from "../protocol/engine";
import type { Logger } from "../protocol/log";
import { PromptQueue, QueueRefused, type PromptToSend } from "../sessions/promptQueue";
import type { HostToWebview, QueueAction } from "../webview/messages";

export interface QueuedTurnsParts {
  engine(): EngineModule;
  /** A turn runs now. */
  running(): boolean;
  /** Runs one turn; how it ended. */
  turn(text: string, attachments: ViewAttachment[]): Promise<QueueTurnEnd>;
  /** To the conversation's view. */
  post(m: HostToWebview): void;
  /** Something told in the conversation (the queue held). */
  notice(text: string): void;
  log: Logger;
}

export class QueuedTurns {
  private q: PromptQueue | undefined;

  constructor(private readonly p: QueuedTurnsParts) {}

  /** The user sent a prompt: sent now (and what the queue sends after it), or queued. */
  async submit(text: string, attachments: ViewAttachment[]): Promise<void> {
    let next: PromptToSend | null;
    try {
      next = this.queue().submit({ text, attachments }, this.p.running());
    } catch (e) {
      if (!(e instanceof QueueRefused)) throw e;
      this.p.post({ type: "promptFailed", text, attachments, message: e.message });
      return;
    }
    this.post();
    await this.sendFrom(next);
  }

  /** What the view asked of the queue. */
  action(a: QueueAction): void {
    const q = this.queue();
    try {
      if (a.action === "edit") q.edit(a.id, a.text);
      else if (a.action === "remove") q.remove(a.id);
      else if (a.action === "clear") q.clear();
      else if (!this.p.running()) void this.sendFrom(q.sendHeld());
    } catch (e) {
      if (!(e instanceof QueueRefused)) throw e;
      void vscode.window.showInformationMessage(`ACP: ${e.message}`);
    }
    this.post();
  }

  /** Nothing waits any more (another conversation is shown); how many were dropped. */
  clear(): number {
    const n = this.q?.clear() ?? 0;
    this.post();
    return n;
  }

  /** The queued prompts to the view. */
  post(): void {
    this.p.post({ type: "queue", ...(this.q?.view() ?? { items: [], held: false }) });
  }

  /** Turns for `next`, then for what the queue sends after each, until it sends nothing. */
  private async sendFrom(next: PromptToSend | null | undefined): Promise<void> {
    while (next) {
      const end = await this.p.turn(next.text, next.attachments);
      const after = this.queue().turnEnded(end);
      if (after.held) this.p.notice(after.held);
      next = after.send;
      this.post();
      if (next) this.p.log.info(`sending the queued prompt (${this.queue().length} more waiting)`);
    }
  }

  private queue(): PromptQueue {
    return (this.q ??= new PromptQueue(this.p.engine()));
  }
}
