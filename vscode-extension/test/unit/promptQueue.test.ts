// The prompt queue as the session controller uses it (sessions/promptQueue.ts over acp-wasm's
// PromptQueue, acp-client's rules): sent now or queued, the order kept, held after a cancel or a
// failure, edits and removals by id, refusals in acp-client's words, attachments carried; and
// the view's queue messages checked field by field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PromptQueue, QueueRefused, validQueueAction } from "../../src/sessions/promptQueue";
import type { ViewAttachment } from "../../src/bridges/attachments";
import { tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();
const file: ViewAttachment = { kind: "file", path: "/w/a.ts", name: "a.ts" };

test("a prompt sent while nothing runs goes now; while a turn runs it waits, in order", { skip }, () => {
  const q = new PromptQueue(engine!);
  assert.deepEqual(q.submit({ text: "one", attachments: [] }, false), { text: "one", attachments: [] });
  assert.equal(q.submit({ text: "two", attachments: [file] }, true), null);
  assert.equal(q.submit({ text: "three", attachments: [] }, true), null);
  const view = q.view();
  assert.deepEqual(
    view.items.map((i) => [i.text, i.attachments]),
    [
      ["two", 1],
      ["three", 0],
    ],
  );
  assert.equal(view.held, false);
  // The turn ended: the first queued prompt goes, with its attachments.
  assert.deepEqual(q.turnEnded("done"), { send: { text: "two", attachments: [file] } });
  assert.deepEqual(q.turnEnded("done"), { send: { text: "three", attachments: [] } });
  assert.deepEqual(q.turnEnded("done"), {});
  assert.equal(q.length, 0);
  q.dispose();
});

test("a cancelled or failed turn holds the queue until the user goes on", { skip }, () => {
  for (const end of ["cancelled", "failed"] as const) {
    const q = new PromptQueue(engine!);
    q.submit({ text: "a", attachments: [] }, true);
    q.submit({ text: "b", attachments: [] }, true);
    const after = q.turnEnded(end);
    assert.equal(after.send, undefined);
    assert.match(after.held!, /2 queued prompts wait/);
    assert.equal(q.view().held, true);
    // Send next: the first goes, the rest follow turn by turn.
    assert.equal(q.sendHeld()?.text, "a");
    assert.equal(q.view().held, false);
    assert.equal(q.turnEnded("done").send?.text, "b");
    q.dispose();
  }
  // A prompt sent to a held queue resumes it, the order kept.
  const q = new PromptQueue(engine!);
  q.submit({ text: "first", attachments: [] }, true);
  q.turnEnded("cancelled");
  assert.equal(q.submit({ text: "later", attachments: [] }, false)?.text, "first");
  assert.deepEqual(
    q.view().items.map((i) => i.text),
    ["later"],
  );
  q.dispose();
});

test("queued prompts are edited and removed by id; gone ids and empty text are refused", { skip }, () => {
  const q = new PromptQueue(engine!);
  q.submit({ text: "a", attachments: [] }, true);
  q.submit({ text: "b", attachments: [] }, true);
  const [a, b] = q.view().items.map((i) => i.id) as [number, number];
  q.edit(a, "a, edited");
  assert.equal(q.remove(b).text, "b");
  assert.throws(
    () => q.remove(b),
    (e: Error) => e instanceof QueueRefused && /sent or removed/.test(e.message),
  );
  assert.throws(() => q.edit(a, "   "), QueueRefused);
  assert.throws(() => q.submit({ text: " ", attachments: [] }, true), QueueRefused);
  assert.deepEqual(
    q.view().items.map((i) => i.text),
    ["a, edited"],
  );
  assert.equal(q.clear(), 1);
  assert.equal(q.length, 0);
  q.dispose();
});

test("the queue is bounded: the 17th prompt is refused in acp-client's words", { skip }, () => {
  const q = new PromptQueue(engine!);
  for (let i = 0; i < 16; i++) q.submit({ text: `p${i}`, attachments: [] }, true);
  assert.throws(
    () => q.submit({ text: "one more", attachments: [] }, true),
    (e: Error) => e instanceof QueueRefused && /16 prompts/.test(e.message),
  );
  assert.equal(q.length, 16);
  q.dispose();
});

test("queue messages from the view are checked field by field", () => {
  assert.deepEqual(validQueueAction({ action: "edit", id: 3, text: "x" }), { action: "edit", id: 3, text: "x" });
  assert.deepEqual(validQueueAction({ action: "remove", id: 0 }), { action: "remove", id: 0 });
  assert.deepEqual(validQueueAction({ action: "sendHeld", id: "ignored" }), { action: "sendHeld" });
  assert.deepEqual(validQueueAction({ action: "clear" }), { action: "clear" });
  for (const bad of [
    null,
    "edit",
    { action: "edit", id: 1 },
    { action: "edit", id: "1", text: "x" },
    { action: "remove", id: -1 },
    { action: "remove", id: 1.5 },
    { action: "remove" },
    { action: "drop" },
  ])
    assert.equal(validQueueAction(bad), undefined, JSON.stringify(bad));
});
