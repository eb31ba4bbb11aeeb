// The thread-driven chat: acp-client's thread model in wasm (Conversation, on the real engine)
// folds what arrives and hands coalesced deltas to the view's model (ThreadModel, the webview's
// side without its DOM). tests/client/thread.json is replayed through both.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import type { SavedThread, ThreadDelta, ThreadEntry } from "acp-wasm-client";
import { Conversation, type Scheduler } from "../../src/bridges/conversation";
import { ThreadModel, messageSource, textChange, type ViewOp } from "../../src/webview/threadModel";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";
import { SessionDecisions } from "../../src/sessions/decisions";
import { loadEngine } from "../../src/protocol/engine";

const { skip } = tryEngine();

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

/** acp-client's words for a stop reason, from the real engine (what the host gives Conversation). */
const rustStopWords = (stop: string) => new SessionDecisions(() => loadEngine(extensionRoot).module).stopWords(stop);

/** A Conversation on a real wasm Thread, its deltas (and the words sent with them) applied to a
 *  view model as the webview applies its "delta" messages. */
function setup(maxBytes?: number) {
  const sched = new ManualScheduler();
  const deltas: ThreadDelta[] = [];
  const words: Array<string | undefined> = [];
  const view = new ThreadModel();
  const ops: ViewOp[] = [];
  const conv = new Conversation(
    testPolicy().newThread(maxBytes),
    (json, stopWords) => {
      const d = JSON.parse(json) as ThreadDelta;
      deltas.push(d);
      words.push(stopWords);
      ops.push(...view.apply(d, stopWords));
    },
    sched,
    50,
    rustStopWords,
  );
  return { conv, sched, deltas, words, view, ops };
}

const chunk = (text: string, kind = "agent_message_chunk") => ({
  sessionId: "s",
  update: { sessionUpdate: kind, content: { type: "text", text } },
});

const textOf = (e: ThreadEntry | undefined) => (e && "content" in e && Array.isArray(e.content) ? messageSource(e.content) : undefined);

test("thread.json: every row through Conversation, and its deltas rebuild the same entries in the view model", { skip }, () => {
  const table = JSON.parse(fs.readFileSync(path.resolve(extensionRoot, "..", "tests", "client", "thread.json"), "utf8")) as {
    cases: Array<{ name: string; steps: Array<Record<string, unknown>>; expect: { applied: unknown[]; thread: SavedThread } }>;
  };
  assert.ok(table.cases.length >= 8);
  for (const c of table.cases) {
    const s = setup();
    c.steps.forEach((step, i) => {
      const expectError = (c.expect.applied[i] as { error?: boolean } | null)?.error === true;
      if ("update" in step) {
        if (expectError)
          assert.throws(() => s.conv.applyUpdate(step.update), /^Error: unreadable session\/update|unreadable session\/update/, c.name);
        else s.conv.applyUpdate(step.update);
      } else if ("beginTurn" in step) s.conv.beginTurn(step.beginTurn as never);
      else if ("endTurn" in step) s.conv.endTurn(step.endTurn as string);
      else if ("failTurn" in step) s.conv.failTurn(step.failTurn as string);
      else assert.fail(`${c.name}: unknown step ${JSON.stringify(step)}`);
    });
    s.conv.flush();
    const saved = s.conv.saved();
    assert.deepEqual(saved, c.expect.thread, c.name);
    // The view, fed only deltas, holds exactly the thread's entries, by number.
    const first = saved.droppedEntries;
    assert.deepEqual(
      [...s.view.entries.entries()].sort(([a], [b]) => a - b),
      saved.entries.map((e, i) => [first + i, e]),
      `${c.name}: the view's entries`,
    );
    s.conv.dispose();
  }
});

test("a flood of chunks is one delivery of one entry, when the timer fires", { skip }, () => {
  const s = setup();
  s.conv.beginTurn([{ type: "text", text: "go" }]);
  assert.equal(s.deltas.length, 1, "the prompt is shown at once");
  for (let i = 0; i < 10_000; i++) s.conv.applyUpdate(chunk(`${i % 10}`));
  assert.equal(s.deltas.length, 1, "nothing before the interval");
  assert.equal(s.sched.pending.length, 1, "one timer for the whole flood");
  s.sched.fire();
  assert.equal(s.deltas.length, 2);
  const d = s.deltas[1]!;
  assert.equal(d.entries.length, 1, "each changed entry once");
  const [n, entry] = d.entries[0]!;
  assert.equal(n, 1);
  assert.equal(entry.type, "agent");
  const text = textOf(entry)!;
  assert.equal(text.length, 10_000);
  assert.equal(text.slice(0, 12), "012345678901");
  s.sched.fire();
  assert.equal(s.deltas.length, 2, "no change, no delivery");
  s.conv.dispose();
});

test("params as JSON text are folded the same as objects; unreadable ones change nothing", { skip }, () => {
  const s = setup();
  s.conv.applyUpdate(JSON.stringify(chunk("a")));
  s.conv.applyUpdate(chunk("b"));
  assert.throws(() => s.conv.applyUpdate({ sessionId: "s" }), /unreadable session\/update/);
  assert.throws(() => s.conv.applyUpdate("{not json"), /unreadable session\/update/);
  s.conv.flush();
  assert.equal(textOf(s.view.entries.get(0)), "ab");
  assert.equal(s.view.entries.size, 1);
  s.conv.dispose();
});

test("turn boundaries: the streamed text is delivered before the turn's end, and the view sees the end once", { skip }, () => {
  const s = setup();
  s.conv.beginTurn([{ type: "text", text: "hi" }]);
  assert.equal(s.conv.turnRunning, true);
  s.conv.applyUpdate(chunk("Hel"));
  s.conv.applyUpdate(chunk("lo"));
  s.conv.applyUpdate({ sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t", title: "Run", status: "in_progress" } });
  s.conv.endTurn("cancelled");
  assert.equal(s.conv.turnRunning, false);
  assert.equal(s.sched.pending.length, 0, "the end delivered everything; no timer left");
  const ends = s.ops.filter((o) => o.op === "turnEnded");
  assert.deepEqual(ends, [{ op: "turnEnded", stop: "cancelled", words: "Cancelled" }]);
  const last = s.ops.findIndex((o) => o.op === "turnEnded");
  assert.ok(
    s.ops.slice(0, last).some((o) => (o.op === "add" || o.op === "update") && textOf(o.entry) === "Hello"),
    "the text came before the end",
  );
  const tool = s.view.entries.get(2);
  assert.equal(tool?.type === "tool" && tool.status, "cancelled", "nothing is left running after a cancel");
  s.conv.dispose();
});

test("the webview shows acp-client's words for a stop reason: the host sends them with the delta that ends the turn", { skip }, () => {
  for (const stop of ["end_turn", "cancelled", "max_tokens", "max_turn_requests", "refusal", "a_new_reason"]) {
    const s = setup();
    s.conv.beginTurn([{ type: "text", text: "hi" }]);
    s.conv.applyUpdate(chunk("text"));
    s.conv.flush();
    s.conv.endTurn(stop);
    const rust = rustStopWords(stop);
    assert.notEqual(rust, stop, "acp-client has words for it");
    // Only the delta that ends the turn carries words.
    assert.deepEqual(s.words, [...s.words.slice(0, -1).map(() => undefined), rust], stop);
    assert.deepEqual(
      s.ops.filter((o) => o.op === "turnEnded"),
      [{ op: "turnEnded", stop, words: rust }],
      stop,
    );
    s.conv.dispose();
  }
  // Without words from the host the view shows the stop reason itself, never words of its own.
  const view = new ThreadModel();
  const s = setup();
  s.conv.beginTurn([{ type: "text", text: "hi" }]);
  view.apply(s.deltas[0]!);
  s.conv.endTurn("max_tokens");
  const ops = view.apply(s.deltas[s.deltas.length - 1]!);
  assert.deepEqual(
    ops.filter((o) => o.op === "turnEnded"),
    [{ op: "turnEnded", stop: "max_tokens", words: "max_tokens" }],
  );
  s.conv.dispose();
  // And the webview's code holds no copy of the words: no stop reason is named in it.
  const dir = path.join(extensionRoot, "src", "webview");
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    for (const stop of ["max_tokens", "max_turn_requests", "refusal"]) {
      assert.ok(!text.includes(stop), `src/webview/${f} names the stop reason ${stop}`);
    }
    assert.ok(!/function\s+stopWords/.test(text), `src/webview/${f} defines stopWords`);
  }
});

test("a failed turn (a crash) keeps its partial answer and the message in the conversation", { skip }, () => {
  const s = setup();
  s.conv.beginTurn([{ type: "text", text: "hi" }]);
  s.conv.applyUpdate(chunk("partial"));
  s.conv.failTurn("ACP demo agent killed by SIGKILL");
  const entries = [...s.view.entries.values()];
  assert.deepEqual(
    entries.map((e) => e.type),
    ["user", "agent", "notice"],
  );
  assert.equal(textOf(entries[1]), "partial");
  assert.deepEqual(entries[2], { type: "notice", level: "error", text: "ACP demo agent killed by SIGKILL" });
  assert.deepEqual(
    s.ops.filter((o) => o.op === "turnEnded"),
    [{ op: "turnEnded", stop: "error", words: "Failed" }],
  );
  // The conversation goes on in a new session: what was said stays.
  s.conv.setSession("s-2", null, null);
  s.conv.notice("info", "New session with ACP demo agent");
  s.conv.beginTurn([{ type: "text", text: "again" }]);
  s.conv.applyUpdate({ ...chunk("ok"), sessionId: "s-2" });
  s.conv.endTurn("end_turn");
  assert.deepEqual(
    [...s.view.entries.values()].map((e) => e.type),
    ["user", "agent", "notice", "notice", "user", "agent"],
  );
  s.conv.dispose();
});

test("a reload after a crash: the session/load replay keeps its commands, plan and mode, and no message is shown twice", { skip }, () => {
  const s = setup();
  s.conv.notice("info", "New session with ACP demo agent");
  assert.equal(s.conv.replayView(), "show", "a notice alone is not a conversation: the replay is shown");
  s.conv.beginTurn([{ type: "text", text: "hi" }]);
  s.conv.applyUpdate(chunk("hello"));
  s.conv.applyUpdate({ sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "in_progress" } });
  s.conv.failTurn("ACP demo agent killed by SIGKILL");
  const before = [...s.view.entries.entries()];
  assert.equal(s.conv.replayView(), "fold");
  // The restarted agent replays the session before it answers session/load.
  const replay = [
    chunk("hi", "user_message_chunk"),
    chunk("hello"),
    { sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "completed" } },
    { sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: "t0", title: "Older", status: "completed" } },
    {
      sessionId: "s",
      update: { sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "Search the web" }] },
    },
    { sessionId: "s", update: { sessionUpdate: "plan", entries: [{ content: "Fix it", priority: "high", status: "in_progress" }] } },
    { sessionId: "s", update: { sessionUpdate: "current_mode_update", currentModeId: "code" } },
  ];
  s.ops.length = 0;
  for (const u of replay) s.conv.applyReplayed(u);
  assert.throws(() => s.conv.applyReplayed({ sessionId: "s" }), /unreadable session\/update/);
  s.conv.flush();
  const after = [...s.view.entries.entries()];
  assert.deepEqual(
    after.map(([n, e]) => [n, e.type, e.type === "tool" ? e.status : textOf(e)]),
    [
      [0, "notice", undefined],
      [1, "user", "hi"],
      [2, "agent", "hello"],
      [3, "tool", "failed"],
      [4, "notice", undefined],
    ],
    "the messages once; the tool call failed with the turn (finished here) keeps its state; the unknown one is not added",
  );
  assert.deepEqual(after, before);
  assert.equal(s.ops.filter((o) => o.op === "add" || o.op === "update").length, 0, "nothing of the conversation drawn again");
  const meta = s.ops.filter((o) => o.op === "meta").map((o) => (o.op === "meta" ? o.meta : undefined)!);
  assert.equal(meta.length, 1);
  const m = meta[0]!;
  assert.deepEqual(m.commands, [{ name: "web", description: "Search the web" }]);
  assert.deepEqual(m.plan, [{ content: "Fix it", priority: "high", status: "in_progress" }]);
  assert.equal(m.currentMode, "code");
  s.conv.dispose();
});

test(
  "session fields: modes, the agent's mode confirmation, config options, plan, commands, usage, title reach the view's meta",
  { skip },
  () => {
    const s = setup();
    s.conv.setSession(
      "s",
      {
        currentModeId: "ask",
        availableModes: [
          { id: "ask", name: "Ask" },
          { id: "code", name: "Code" },
        ],
      },
      [{ type: "select", id: "model", name: "Model", currentValue: "small", options: [{ value: "small", name: "Small" }] }],
    );
    const metas = () => s.ops.filter((o) => o.op === "meta").map((o) => (o.op === "meta" ? o.meta : undefined)!);
    assert.equal(metas().at(-1)!.currentMode, "ask");
    assert.deepEqual(
      metas()
        .at(-1)!
        .modes.map((m) => m.id),
      ["ask", "code"],
    );
    s.conv.setCurrentMode("s", "code");
    assert.equal(metas().at(-1)!.currentMode, "code");
    s.conv.setConfigOptions("s", [{ type: "boolean", id: "fast", name: "Fast", currentValue: true }]);
    assert.deepEqual(metas().at(-1)!.configOptions, [{ type: "boolean", id: "fast", name: "Fast", currentValue: true }]);
    for (const update of [
      { sessionUpdate: "plan", entries: [{ content: "step", priority: "high", status: "in_progress" }] },
      { sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "search", input: { hint: "query" } }] },
      { sessionUpdate: "usage_update", used: 10, size: 100 },
      { sessionUpdate: "session_info_update", title: "A title" },
    ]) {
      s.conv.applyUpdate({ sessionId: "s", update });
    }
    s.sched.fire();
    const m = metas().at(-1)!;
    assert.deepEqual(m.plan, [{ content: "step", priority: "high", status: "in_progress" }]);
    assert.deepEqual(m.commands, [{ name: "web", description: "search", hint: "query" }]);
    assert.deepEqual(m.usage, { used: 10, size: 100 });
    assert.equal(m.title, "A title");
    s.conv.dispose();
  },
);

test("the thread's byte limit drops old entries; the view drops them too", { skip }, () => {
  const s = setup(1000);
  for (let i = 0; i < 20; i++) {
    s.conv.beginTurn([{ type: "text", text: "u".repeat(100) }]);
    s.conv.applyUpdate(chunk(`${i}`.padStart(100, "0")));
    s.conv.endTurn("end_turn");
  }
  const saved = s.conv.saved();
  assert.ok(saved.droppedEntries > 0, "entries were dropped");
  assert.ok(
    s.ops.some((o) => o.op === "drop"),
    "the view was told",
  );
  assert.deepEqual(
    [...s.view.entries.keys()].sort((a, b) => a - b),
    saved.entries.map((_, i) => saved.droppedEntries + i),
  );
  s.conv.dispose();
});

test("a view that starts over gets the saved thread; entry(n) for the diff button", { skip }, () => {
  const s = setup();
  s.conv.beginTurn([{ type: "text", text: "hi" }]);
  s.conv.applyUpdate({
    sessionId: "s",
    update: {
      sessionUpdate: "tool_call",
      toolCallId: "t",
      title: "Write a",
      content: [{ type: "diff", path: "/w/a", oldText: null, newText: "new" }],
    },
  });
  s.conv.discardChanges();
  assert.equal(s.sched.pending.length, 0);
  const fresh = new ThreadModel();
  const ops = fresh.reset(JSON.parse(s.conv.savedJson()) as SavedThread);
  assert.deepEqual(
    ops.map((o) => o.op),
    ["add", "add", "meta"],
  );
  const tool = s.conv.entry(1);
  assert.ok(tool?.type === "tool");
  assert.deepEqual(tool.content[0], { type: "diff", path: "/w/a", oldText: null, newText: "new" });
  assert.equal(s.conv.entry(7), undefined);
  s.conv.flush();
  assert.equal(s.deltas.length, 1, "discarded changes are not delivered again"); // the beginTurn's own
  s.conv.dispose();
  assert.throws(() => s.conv.applyUpdate(chunk("x")), "the wasm thread is freed");
});

test("a real timer delivers without a manual flush", { skip }, async () => {
  let resolve!: (json: string) => void;
  const got = new Promise<string>((r) => (resolve = r));
  const conv = new Conversation(testPolicy().newThread(), resolve, undefined, 5);
  conv.applyUpdate(chunk("a"));
  conv.applyUpdate(chunk("b"));
  const d = JSON.parse(await got) as ThreadDelta;
  assert.equal(textOf(d.entries[0]![1]), "ab");
  conv.dispose();
});

test("textChange: a message that grew appends its tail; one trimmed at its start is rendered again", () => {
  assert.deepEqual(textChange("", "abc"), { append: "abc" });
  assert.deepEqual(textChange("ab", "abc"), { append: "c" });
  assert.deepEqual(textChange("abc", "abc"), { append: "" });
  assert.deepEqual(textChange("abc", "…bcd"), { replace: "…bcd" });
});

test("messageSource: text as it is, other blocks named", () => {
  assert.equal(
    messageSource([
      { type: "text", text: "see " },
      { type: "resource_link", uri: "file:///a", name: "a" },
      { type: "image", data: "AA", mimeType: "image/png" },
    ]),
    "see [a](file:///a)[image]",
  );
});
