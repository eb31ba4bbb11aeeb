// What the chat view keeps of the conversation, and what each change asks it to redraw. The
// conversation is acp-client's thread model (folded in wasm on the host side); this applies its
// deltas to the entries shown, by number (a message that only grew comes as its new text), and
// says which DOM work follows: an entry to add, to update (a message only grows: its new text
// is appended to the streaming markdown, unless the thread trimmed it), entries dropped for the thread's byte limit, new session fields, the end
// of a turn. No folding of updates happens here.
//
// Pure (no DOM) so it is tested under node.

import type { SavedThread, ThreadBlock, ThreadDelta, ThreadEntry, ThreadMeta } from "acp-wasm-client";

export type ViewOp =
  | { op: "add"; n: number; entry: ThreadEntry }
  /** `appended`: the entry is a message whose last block only grew by this text (the view adds
   *  it without rebuilding the message's source). */
  | { op: "update"; n: number; entry: ThreadEntry; appended?: string }
  | { op: "drop"; n: number }
  | { op: "meta"; meta: ThreadMeta }
  /** A turn that was running is over: `stop` is how it ended (`end_turn`, `cancelled`, `error`…),
   *  `words` acp-client's words for it as the host sent them (the stop reason itself if none). */
  | { op: "turnEnded"; stop: string; words: string };

export class ThreadModel {
  readonly entries = new Map<number, ThreadEntry>();
  private turn: ThreadMeta["turn"] = "idle";

  /** Applies one delta; returns the view's work, in order (entries first, then the session's
   *  fields, then the end of a turn, in `stopWords` when the host sent them). */
  apply(delta: ThreadDelta, stopWords?: string): ViewOp[] {
    const ops: ViewOp[] = [];
    for (const n of [...this.entries.keys()]) {
      if (n < delta.firstEntry) {
        this.entries.delete(n);
        ops.push({ op: "drop", n });
      }
    }
    for (const [n, entry] of delta.entries) {
      ops.push({ op: this.entries.has(n) ? "update" : "add", n, entry });
      this.entries.set(n, entry);
    }
    // A message that only grew: its new text added to its block.
    for (const [n, b, text] of delta.appended ?? []) {
      const entry = this.entries.get(n);
      if (entry?.type !== "user" && entry?.type !== "agent" && entry?.type !== "thought") continue;
      const block = entry.content[b];
      if (block?.type !== "text") continue; // not what the host has: it sends all again when the view reloads
      block.text = (block.text ?? "") + text;
      ops.push(b === entry.content.length - 1 ? { op: "update", n, entry, appended: text } : { op: "update", n, entry });
    }
    if (delta.meta) {
      ops.push({ op: "meta", meta: delta.meta });
      if (this.turn === "running" && delta.meta.turn === "idle") {
        const stop = delta.meta.lastStop ?? "end_turn";
        ops.push({ op: "turnEnded", stop, words: typeof stopWords === "string" && stopWords !== "" ? stopWords : stop });
      }
      this.turn = delta.meta.turn;
    }
    return ops;
  }

  /** Starts over from a saved thread (or empty). */
  reset(saved?: SavedThread): ViewOp[] {
    this.entries.clear();
    this.turn = "idle";
    if (!saved) return [];
    const first = saved.droppedEntries ?? 0;
    return this.apply({
      entries: saved.entries.map((e, i): [number, ThreadEntry] => [first + i, e]),
      firstEntry: first,
      meta: {
        title: saved.title ?? null,
        plan: saved.plan ?? [],
        planMore: saved.planMore ?? 0,
        currentMode: saved.currentMode ?? null,
        modes: saved.modes ?? [],
        configOptions: saved.configOptions ?? null,
        commands: saved.commands ?? [],
        commandsMore: saved.commandsMore ?? 0,
        usage: saved.usage ?? null,
        turn: saved.turn,
        lastStop: saved.lastStop ?? null,
        turnUsage: saved.turnUsage,
        sessionStatus: saved.sessionStatus,
      },
    });
  }
}

/** A message's blocks as the markdown source shown: text as it is, the other kinds as a short
 *  line naming them (a link for resource links). */
export function messageSource(content: readonly ThreadBlock[]): string {
  let out = "";
  for (const b of content) {
    if (b.type === "text") out += b.text ?? "";
    else if (b.type === "resource_link") out += `[${b.title ?? b.name ?? b.uri ?? "link"}](${b.uri ?? ""})`;
    else if (b.type === "resource") out += `\n\n[resource ${b.resource?.uri ?? ""}]\n\n`;
    else out += `[${b.type}]`;
  }
  return out;
}

/** How a shown message becomes `next`: its new tail appended (it only grew), or rendered again
 *  (the thread trimmed its start for the byte limit). */
export function textChange(shown: string, next: string): { append: string } | { replace: string } {
  return next.length >= shown.length && next.startsWith(shown) ? { append: next.slice(shown.length) } : { replace: next };
}

/** The header's usage line: the context the agent last reported (`usage_update`, with its
 *  cost) and, from
 *  builds with draft ACP, the last turn's tokens; empty when there is neither. */
export function headerUsage(meta: ThreadMeta): string {
  const parts: string[] = [];
  const u = meta.usage;
  if (u)
    parts.push(
      `${u.used.toLocaleString("en-US")} / ${u.size.toLocaleString("en-US")} tokens${u.cost ? ` (${u.cost.amount.toFixed(2)} ${u.cost.currency})` : ""}`,
    );
  if (meta.turnUsage) parts.push(`last turn ${meta.turnUsage.totalTokens.toLocaleString("en-US")} tokens`);
  return parts.join(" · ");
}
