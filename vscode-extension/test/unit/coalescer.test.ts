import { test } from "node:test";
import assert from "node:assert/strict";
import { Coalescer, mergeSessionUpdates, type Scheduler, type TaggedUpdate } from "../../src/bridges/coalescer";

/** A scheduler the test fires by hand. */
class ManualScheduler implements Scheduler {
  pending: Array<() => void> = [];
  schedule(fn: () => void) {
    this.pending.push(fn);
    return () => {
      this.pending = this.pending.filter((f) => f !== fn);
    };
  }
  fire() {
    const fns = this.pending;
    this.pending = [];
    for (const f of fns) f();
  }
}

const chunk = (text: string, kind = "agent_message_chunk", sessionId = "s"): TaggedUpdate =>
  ({ sessionId, update: { sessionUpdate: kind, content: { type: "text", text } } }) as TaggedUpdate;

test("a flood of chunks becomes one delivery with one merged update", () => {
  const sched = new ManualScheduler();
  const delivered: TaggedUpdate[][] = [];
  const c = new Coalescer<TaggedUpdate>((b) => delivered.push(b), mergeSessionUpdates, sched, 50);
  for (let i = 0; i < 10_000; i++) c.push(chunk(`${i % 10}`));
  assert.equal(delivered.length, 0, "nothing is delivered before the interval");
  assert.equal(sched.pending.length, 1, "one timer for the whole flood");
  sched.fire();
  assert.equal(delivered.length, 1);
  assert.equal(delivered[0]!.length, 1);
  const text = (delivered[0]![0]!.update as { content: { text: string } }).content.text;
  assert.equal(text.length, 10_000);
  assert.equal(text.slice(0, 12), "012345678901");
});

test("different kinds, sessions and non-text content stay apart and in order", () => {
  const sched = new ManualScheduler();
  const delivered: TaggedUpdate[][] = [];
  const c = new Coalescer<TaggedUpdate>((b) => delivered.push(b), mergeSessionUpdates, sched);
  c.push(chunk("a"));
  c.push(chunk("b"));
  c.push(chunk("think", "agent_thought_chunk"));
  c.push({ sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t", title: "T" } } as TaggedUpdate);
  c.push(chunk("c"));
  c.push(chunk("d", "agent_message_chunk", "other"));
  c.push({
    sessionId: "s",
    update: { sessionUpdate: "agent_message_chunk", content: { type: "image", data: "", mimeType: "image/png" } },
  } as TaggedUpdate);
  sched.fire();
  const kinds = delivered[0]!.map((u) => `${u.sessionId}:${u.update.sessionUpdate}`);
  assert.deepEqual(kinds, [
    "s:agent_message_chunk",
    "s:agent_thought_chunk",
    "s:tool_call",
    "s:agent_message_chunk",
    "other:agent_message_chunk",
    "s:agent_message_chunk",
  ]);
  assert.equal((delivered[0]![0]!.update as { content: { text: string } }).content.text, "ab");
});

test("flush delivers at once and cancels the timer; empty flush delivers nothing", () => {
  const sched = new ManualScheduler();
  const delivered: TaggedUpdate[][] = [];
  const c = new Coalescer<TaggedUpdate>((b) => delivered.push(b), mergeSessionUpdates, sched);
  c.flush();
  assert.equal(delivered.length, 0);
  c.push(chunk("x"));
  c.flush();
  assert.equal(delivered.length, 1);
  assert.equal(sched.pending.length, 0);
  c.push(chunk("y"));
  assert.equal(sched.pending.length, 1, "a new timer after a flush");
  c.dispose();
  sched.fire();
  assert.equal(delivered.length, 1, "disposed: nothing more");
});

test("the real timer scheduler delivers without a manual flush", async () => {
  let resolve!: (b: TaggedUpdate[]) => void;
  const got = new Promise<TaggedUpdate[]>((r) => (resolve = r));
  const c = new Coalescer<TaggedUpdate>((b) => resolve(b), mergeSessionUpdates, undefined, 5);
  c.push(chunk("a"));
  c.push(chunk("b"));
  const batch = await got;
  assert.equal((batch[0]!.update as { content: { text: string } }).content.text, "ab");
});
