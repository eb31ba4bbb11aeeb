// The client flavour (pkg/nodejs-client, cargo feature `client`) beyond the case tables
// (policy.test.mjs replays those): the Thread and CrashBudget classes, chooseAuth,
// failureError and terminalLimits as an application uses them, their argument checks, and the
// split between the flavours (the default build has none of this; the client build is the
// engine too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { acp, client, pkgDir, throwsNamed } from "./helpers.mjs";

const { Thread, CrashBudget } = client;

const chunk = (text, extra = {}) =>
  JSON.stringify({ sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text }, ...extra } });

test("the default flavour is the engine alone; the client flavour is the engine plus acp-client", () => {
  const clientOnly = ["Thread", "CrashBudget", "chooseAuth", "failureError", "terminalLimits", "decidePermission",
    "dismissedPermission", "unanswerablePermission", "chosenPermission", "classifyWrite", "describeWriteReason",
    "terminalQuestion", "terminalInvalidMessage", "envAllowlist", "validEnvName", "escapeLine", "attachToPrompt", "promptLimits",
    "mcpServers", "stopWords", "rpcWords", "SseDecoder", "httpOutgoing", "httpAnswer"];
  for (const name of clientOnly) {
    assert.equal(acp[name], undefined, `pkg/node exports ${name}`);
    assert.equal(typeof client[name], "function", `pkg/nodejs-client lacks ${name}`);
  }
  assert.equal(typeof acp.AcpConnection, "function");
  // The engine of the client flavour works like the default one.
  const a = new client.AcpConnection("agent");
  const c = new client.AcpConnection("client");
  const id = c.sendRequest("session/new", { cwd: "/" }, 0);
  a.feed(c.pollTransmit(), 0);
  const req = a.pollEvent();
  assert.equal(req.method, "session/new");
  a.respond(req.token, { sessionId: "s1" });
  c.feed(a.pollTransmit(), 0);
  assert.deepEqual(c.pollEvent(), { type: "response", requestId: id, method: "session/new", result: { sessionId: "s1" } });
  a.free();
  c.free();
});

test("Thread: a streamed answer is one entry; takeDelta coalesces per entry", () => {
  const t = new Thread();
  assert.equal(t.hasChanges(), false);
  assert.equal(t.beginTurn(JSON.stringify([{ type: "text", text: "hi" }])), 0);
  const first = JSON.parse(t.applyUpdate(chunk("Hel")));
  assert.deepEqual(first, { applied: "chunk", entry: 1, started: true, block: { type: "text", text: "Hel" } });
  for (const w of ["lo", ", ", "world"]) {
    assert.deepEqual(JSON.parse(t.applyUpdate(chunk(w))), { applied: "chunk", entry: 1, started: false, block: { type: "text", text: w } });
  }
  assert.equal(t.hasChanges(), true);
  const delta = JSON.parse(t.takeDelta());
  assert.deepEqual(delta.entries, [
    [0, { type: "user", content: [{ type: "text", text: "hi" }] }],
    [1, { type: "agent", content: [{ type: "text", text: "Hello, world" }] }],
  ]);
  assert.equal(delta.firstEntry, 0);
  assert.equal(delta.meta.turn, "running");
  assert.equal(t.hasChanges(), false);
  assert.deepEqual(JSON.parse(t.takeDelta()), { entries: [], firstEntry: 0 });
  // Only what changed since: entry 1 again, once.
  t.applyUpdate(chunk("!"));
  t.applyUpdate(chunk("!"));
  assert.deepEqual(JSON.parse(t.takeDelta()).entries, [[1, { type: "agent", content: [{ type: "text", text: "Hello, world!!" }] }]]);
  t.endTurn("end_turn");
  const end = JSON.parse(t.takeDelta());
  assert.deepEqual([end.entries, end.meta.turn, end.meta.lastStop], [[], "idle", "end_turn"]);
  assert.equal(t.entryCount(), 2);
  assert.deepEqual(JSON.parse(t.entryJson(1)), { type: "agent", content: [{ type: "text", text: "Hello, world!!" }] });
  assert.equal(t.entryJson(2), undefined);
  t.free();
});

test("Thread: notices, failTurn, setSession and the saved form", () => {
  const t = new Thread();
  t.setSession("s-9", JSON.stringify([{ id: "ask", name: "Ask" }, { id: "code", name: "Code", description: "edits" }]), "ask",
    JSON.stringify([{ id: "model", name: "Model", type: "select", currentValue: "m1", options: [] }]));
  let meta = JSON.parse(t.takeDelta()).meta;
  assert.deepEqual(meta.modes, [{ id: "ask", name: "Ask" }, { id: "code", name: "Code", description: "edits" }]);
  assert.equal(meta.currentMode, "ask");
  assert.deepEqual(meta.configOptions, [{ id: "model", name: "Model", type: "select", currentValue: "m1", options: [] }]);
  t.setSession("s-9", null, null, null);
  meta = JSON.parse(t.takeDelta()).meta;
  assert.deepEqual([meta.modes, meta.currentMode, meta.configOptions], [[], null, null]);

  assert.equal(t.notice("info", "permission: you chose Allow"), 0);
  assert.equal(t.notice("warning", "w"), 1);
  t.beginTurn("[]");
  t.applyUpdate(JSON.stringify({ sessionId: "s-9", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "in_progress" } }));
  t.failTurn("the agent crashed");
  const saved = JSON.parse(t.toJson());
  assert.equal(saved.format, 1);
  assert.equal(saved.sessionId, "s-9");
  assert.deepEqual(saved.entries.map((e) => [e.type, e.level ?? e.status ?? null]),
    [["notice", "info"], ["notice", "warning"], ["user", null], ["tool", "failed"], ["notice", "error"]]);
  assert.equal(saved.entries[4].text, "the agent crashed");
  assert.equal(saved.lastStop, "error");

  const back = Thread.fromJson(t.toJson());
  assert.equal(back.toJson(), t.toJson());
  assert.equal(back.entryCount(), 5);
  back.free();
  t.free();
});

test("Thread: fromJson refuses another format with acp-client's message; unreadable updates change nothing", () => {
  const t = new Thread();
  t.applyUpdate(chunk("x"));
  const other = t.toJson().replace('"format":1', '"format":2');
  const e = throwsNamed(assert, () => Thread.fromJson(other), "Error");
  assert.equal(e.message, "the thread was saved in format 2 and this version reads format 1");
  assert.match(throwsNamed(assert, () => Thread.fromJson("[1,2]"), "Error").message, /^not a saved thread: /);
  const before = t.toJson();
  t.takeDelta();
  for (const bad of ["{", '{"sessionId":"s"}', '{"update":{"sessionUpdate":"agent_message_chunk"}}', '{"update":{"sessionUpdate":"tool_call"}}']) {
    const err = throwsNamed(assert, () => t.applyUpdate(bad), "Error");
    assert.match(err.message, /^unreadable session\/update: /, bad);
  }
  assert.equal(t.toJson(), before);
  assert.equal(t.hasChanges(), false);
  // An unknown kind is not an error: ignored, and named.
  assert.deepEqual(JSON.parse(t.applyUpdate('{"sessionId":"s","update":{"sessionUpdate":"future_thing","x":1}}')),
    { applied: "ignored", kind: "future_thing" });
  t.free();
});

test("Thread: maxBytes drops the oldest entries; entry numbers stay valid", () => {
  const t = new Thread(1000);
  for (let i = 0; i < 20; i++) {
    t.beginTurn(JSON.stringify([{ type: "text", text: "u".repeat(100) }]));
    t.applyUpdate(chunk(String(i).padStart(100, "0")));
  }
  assert.equal(t.entryCount(), 40);
  const delta = JSON.parse(t.takeDelta());
  assert.ok(delta.firstEntry > 0 && delta.firstEntry < 40, `firstEntry ${delta.firstEntry}`);
  assert.ok(delta.entries.every(([n]) => n >= delta.firstEntry));
  assert.equal(t.entryJson(0), undefined, "dropped");
  assert.equal(JSON.parse(t.entryJson(39)).content[0].text, "19".padStart(100, "0"));
  const saved = JSON.parse(t.toJson());
  assert.equal(saved.droppedEntries, delta.firstEntry);
  // The same thread read back with the default limit keeps what was saved.
  const back = Thread.fromJson(t.toJson());
  assert.equal(back.entryCount(), 40);
  back.free();
  t.free();
  // The default is acp-client's 32 MiB: 1000 bytes of text keep everything.
  const big = new Thread();
  for (let i = 0; i < 20; i++) big.notice("info", "n".repeat(100));
  assert.equal(JSON.parse(big.toJson()).droppedEntries, 0);
  big.free();
});

test("Thread: a session/load replay is shown into an empty thread, folded into one that holds the conversation", () => {
  const upd = (update) => JSON.stringify({ sessionId: "s", update });
  const fresh = new Thread();
  fresh.notice("info", "connecting");
  assert.equal(fresh.replayView(), "show", "a notice alone is not a conversation");
  fresh.free();
  const t = new Thread();
  t.beginTurn(JSON.stringify([{ type: "text", text: "hi" }]));
  t.applyUpdate(chunk("hello"));
  t.applyUpdate(upd({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "in_progress" }));
  t.endTurn("end_turn");
  t.takeDelta();
  assert.equal(t.replayView(), "fold");
  const entries = t.entryCount();
  // The agent's replay of the same conversation: nothing of it is added again...
  assert.equal(t.applyReplayedUpdate(upd({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } })), undefined);
  assert.equal(t.applyReplayedUpdate(chunk("hello")), undefined);
  assert.equal(t.applyReplayedUpdate(upd({ sessionUpdate: "tool_call", toolCallId: "t9", title: "Old", status: "completed" })), undefined);
  // ...a tool call unfinished here takes the replayed state, and the session's state is taken.
  assert.deepEqual(JSON.parse(t.applyReplayedUpdate(upd({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "completed" }))),
    { applied: "tool", entry: 2, started: false });
  const commands = { sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "Search" }] };
  assert.deepEqual(JSON.parse(t.applyReplayedUpdate(upd(commands))), { applied: "commands" });
  assert.deepEqual(JSON.parse(t.applyReplayedUpdate(upd({ sessionUpdate: "current_mode_update", currentModeId: "code" }))), { applied: "mode" });
  assert.deepEqual(JSON.parse(t.applyReplayedUpdate(upd({ sessionUpdate: "plan", entries: [{ content: "a", priority: "high", status: "pending" }] }))),
    { applied: "plan" });
  assert.equal(t.entryCount(), entries);
  const delta = JSON.parse(t.takeDelta());
  assert.deepEqual(delta.entries.map(([n, e]) => [n, e.type, e.status]), [[2, "tool", "completed"]]);
  assert.deepEqual(delta.meta.commands, [{ name: "web", description: "Search" }]);
  assert.equal(delta.meta.currentMode, "code");
  assert.deepEqual(delta.meta.plan, [{ content: "a", priority: "high", status: "pending" }]);
  const err = throwsNamed(assert, () => t.applyReplayedUpdate('{"sessionId":"s"}'), "Error");
  assert.match(err.message, /^unreadable session\/update/);
  assert.equal(t.hasChanges(), false, "an unreadable update changes nothing");
  throwsNamed(assert, () => t.applyReplayedUpdate(7), "TypeError");
  t.free();
});

test("Thread: every method throws after free()", () => {
  const t = new Thread();
  t.free();
  for (const call of [() => t.applyUpdate(chunk("x")), () => t.beginTurn("[]"), () => t.endTurn("end_turn"),
    () => t.failTurn("x"), () => t.notice("info", "x"), () => t.setSession("s", null, null, null), () => t.takeDelta(),
    () => t.hasChanges(), () => t.toJson(), () => t.entryCount(), () => t.entryJson(0), () => t.replayView(),
    () => t.applyReplayedUpdate(chunk("x"))]) {
    assert.throws(call, Error);
  }
});

test("CrashBudget: the default policy, the breaker, reset", () => {
  const b = new CrashBudget();
  const d = (ms) => JSON.parse(b.recordCrash(ms));
  assert.deepEqual(d(0), { decision: "restart", afterMs: 500, attempt: 1 });
  assert.deepEqual(d(1000.9), { decision: "restart", afterMs: 1000, attempt: 2 });
  assert.equal(b.isTripped(), false);
  d(2000);
  d(3000);
  assert.deepEqual(d(4000), { decision: "give_up", reason: "agent crashed 5 times in 2 minutes; not restarting" });
  assert.equal(b.isTripped(), true);
  assert.equal(d(10_000_000).decision, "give_up", "stays open");
  b.reset();
  assert.equal(b.isTripped(), false);
  assert.deepEqual(d(10_000_001), { decision: "restart", afterMs: 500, attempt: 1 });
  b.free();
  const never = new CrashBudget(JSON.stringify({ maxRestartsInWindow: 0, windowMs: 1000, initialBackoffMs: 1, maxBackoffMs: 1, multiplier: 2 }));
  assert.deepEqual(JSON.parse(never.recordCrash(5)), { decision: "give_up", reason: "agent crashed and restarts are disabled; not restarting" });
  never.free();
});

test("chooseAuth, failureError and terminalLimits answer JSON text from acp-client", () => {
  const methods = JSON.stringify([{ id: "key", name: "Use an API key", description: "needs OPENAI_API_KEY" }]);
  assert.deepEqual(JSON.parse(client.chooseAuth(methods, '["OPENAI_API_KEY"]', null)),
    { choice: "authenticate", methodId: "key", why: "OPENAI_API_KEY is set" });
  assert.equal(JSON.parse(client.chooseAuth(methods, "[]", undefined)).choice, "needs_user");
  assert.deepEqual(JSON.parse(client.chooseAuth(methods, "[]", "nope")).choice, "needs_user");
  assert.deepEqual(JSON.parse(client.chooseAuth(methods, "[]", "key")), { choice: "authenticate", methodId: "key", why: "named with --auth" });
  assert.equal(client.failureError("not_found"), '{"code":-32002,"reason":"not_found"}');
  assert.deepEqual(JSON.parse(client.failureError("permission_denied")), { code: -32603, reason: "permission_denied" });
  assert.deepEqual(JSON.parse(client.terminalLimits()), { maxOutputBytes: 16 * 1024 * 1024, maxTerminals: 16, killGraceMs: 2000 });
});

test("wrong arguments are a TypeError naming the argument", () => {
  const t = new Thread();
  const cases = [
    ["maxBytes", () => new Thread(-1)],
    ["maxBytes", () => new Thread(1.5)],
    ["maxBytes", () => new Thread("100")],
    ["text", () => Thread.fromJson(undefined)],
    ["maxBytes", () => Thread.fromJson(t.toJson(), NaN)],
    ["paramsJson", () => t.applyUpdate({ sessionId: "s" })],
    ["promptBlocksJson", () => t.beginTurn("hi")],
    ["promptBlocksJson", () => t.beginTurn('[{"text":"no type"}]')],
    ["promptBlocksJson", () => t.beginTurn([{ type: "text", text: "x" }])],
    ["stopReason", () => t.endTurn(undefined)],
    ["message", () => t.failTurn(7)],
    ["level", () => t.notice("debug", "x")],
    ["level", () => t.notice("Info", "x")],
    ["text", () => t.notice("info", null)],
    ["sessionId", () => t.setSession(1, null, null, null)],
    ["modesJson", () => t.setSession("s", "{}", null, null)],
    ["modesJson", () => t.setSession("s", '[{"id":"a"}]', null, null)],
    ["modesJson", () => t.setSession("s", [], null, null)],
    ["currentMode", () => t.setSession("s", null, 3, null)],
    ["configOptionsJson", () => t.setSession("s", null, null, "{")],
    ["configOptionsJson", () => t.setSession("s", null, null, {})],
    ["n", () => t.entryJson(-1)],
    ["n", () => t.entryJson("1")],
    ["policyJson", () => new CrashBudget("{}")],
    ["policyJson", () => new CrashBudget('{"maxRestartsInWindow":-1,"windowMs":1,"initialBackoffMs":1,"maxBackoffMs":1,"multiplier":2}')],
    ["policyJson", () => new CrashBudget({ maxRestartsInWindow: 1 })],
    ["nowMs", () => new CrashBudget().recordCrash(-5)],
    ["nowMs", () => new CrashBudget().recordCrash("5")],
    ["nowMs", () => new CrashBudget().recordCrash(Infinity)],
    ["methodsJson", () => client.chooseAuth("{}", "[]", null)],
    ["methodsJson", () => client.chooseAuth('[{"name":"no id"}]', "[]", null)],
    ["methodsJson", () => client.chooseAuth([], "[]", null)],
    ["setVarsJson", () => client.chooseAuth("[]", '{"A":"1"}', null)],
    ["setVarsJson", () => client.chooseAuth("[]", "[1]", null)],
    ["requested", () => client.chooseAuth("[]", "[]", 1)],
    ["failure", () => client.failureError("NotFound")],
    ["failure", () => client.failureError(undefined)],
  ];
  for (const [what, call] of cases) {
    const e = throwsNamed(assert, call, "TypeError");
    assert.match(e.message, new RegExp(`^${what} must be`), `${call}: ${e.message}`);
  }
  // A failed call changes nothing.
  assert.equal(t.hasChanges(), false);
  assert.equal(t.entryCount(), 0);
  t.free();
});

test("the client flavour's .d.ts declares the new classes, functions and their types", () => {
  for (const dir of ["nodejs-client", "web-client"]) {
    const dts = readFileSync(join(pkgDir, dir, "acp_wasm.d.ts"), "utf8");
    for (const needle of [
      "export class Thread",
      "constructor(maxBytes?: number);",
      "static fromJson(text: string, maxBytes?: number): Thread;",
      "applyUpdate(paramsJson: string): string;",
      "beginTurn(promptBlocksJson: string): number;",
      "endTurn(stopReason: string): void;",
      "failTurn(message: string): void;",
      "notice(level: NoticeLevel, text: string): number;",
      "setSession(sessionId: string, modesJson: string | null, currentMode: string | null, configOptionsJson: string | null): void;",
      "takeDelta(): string;",
      "hasChanges(): boolean;",
      "toJson(): string;",
      "entryCount(): number;",
      "entryJson(n: number): string | undefined;",
      "export class CrashBudget",
      "constructor(policyJson?: string);",
      "recordCrash(nowMs: number): string;",
      "reset(): void;",
      "isTripped(): boolean;",
      "export function chooseAuth(methodsJson: string, setVarsJson: string, requested: string | null): string;",
      "export function failureError(failure: FailureName): string;",
      "export function terminalLimits(): string;",
      'export type NoticeLevel = "info" | "warning" | "error";',
      "export type ThreadApplied =",
      "export interface ThreadDelta",
      "export type ThreadEntry =",
      "export interface SavedThread",
      "export type RestartDecision =",
      "export interface RestartPolicy",
      "export type AuthChoice =",
      "export interface FailureError",
      "export interface TerminalLimits",
      "export class AcpConnection",
    ]) {
      assert.ok(dts.includes(needle), `${dir}/acp_wasm.d.ts lacks: ${needle}`);
    }
  }
  for (const dir of ["node", "web"]) {
    const dts = readFileSync(join(pkgDir, dir, "acp_wasm.d.ts"), "utf8");
    for (const absent of ["class Thread", "decidePermission", "PermissionDecision", "chooseAuth"]) {
      assert.ok(!dts.includes(absent), `${dir}/acp_wasm.d.ts (default flavour) has ${absent}`);
    }
  }
});

test("attachToPrompt and promptLimits: the block per promptCapabilities, refusals, argument checks", () => {
  const file = JSON.stringify({ kind: "file", uri: "file:///w/a.md", name: "a.md", size: 3, text: "hi\n" });
  assert.equal(JSON.parse(client.attachToPrompt(JSON.stringify({ embeddedContext: true }), file)).block.type, "resource");
  // null capabilities: none advertised (the baseline: text and resource links).
  assert.equal(JSON.parse(client.attachToPrompt("null", file)).block.type, "resource_link");
  const image = JSON.stringify({ kind: "image", name: "p.png", mimeType: "image/png", data: "iVBORw0KGgo=" });
  assert.match(JSON.parse(client.attachToPrompt("{}", image)).refuse, /does not accept images/);
  const limits = JSON.parse(client.promptLimits());
  assert.deepEqual(limits, { maxEmbedBytes: 262144, maxImageBytes: 5242880, imageTypes: ["image/png", "image/jpeg", "image/gif", "image/webp"] });
  assert.match(throwsNamed(assert, () => client.attachToPrompt("{", file), "TypeError").message, /^capsJson must be/);
  assert.match(throwsNamed(assert, () => client.attachToPrompt("{}", '{"kind":"video"}'), "TypeError").message, /^attachmentJson must be/);
  assert.match(throwsNamed(assert, () => client.attachToPrompt("{}", 7), "TypeError").message, /^attachmentJson must be/);
});

test("SseDecoder: events in any pieces, bytes or text, an event over the limit by its size; argument checks", () => {
  const body = ': keepalive\r\n\r\ndata: {"a":1}\n\ndata: ' + "x".repeat(50) + '\n\ndata: {"b":\ndata: 2}\r\rdata: é\n\n';
  const bytes = new TextEncoder().encode(body);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const d = new client.SseDecoder(40);
    try {
      assert.deepEqual([...d.feed(bytes.subarray(0, cut)), ...d.feed(bytes.subarray(cut))], ['{"a":1}', 50, '{"b":\n2}', "é"], `cut at ${cut}`);
    } finally {
      d.free();
    }
  }
  const d = new client.SseDecoder(1024);
  assert.deepEqual(d.feed("data: x\n"), []);
  assert.deepEqual(d.feed("\n"), ["x"]);
  assert.throws(() => d.feed(5), (e) => e instanceof TypeError && /^chunk must be/.test(e.message));
  d.free();
  for (const bad of [0, -1, "10", undefined, Infinity]) {
    assert.throws(() => new client.SseDecoder(bad), (e) => e instanceof TypeError && /^maxEventBytes must be/.test(e.message), String(bad));
  }
  assert.throws(() => client.httpOutgoing(1), (e) => e instanceof TypeError && /^line must be a string/.test(e.message));
  assert.throws(() => client.httpAnswer(null), (e) => e instanceof TypeError && /^text must be a string/.test(e.message));
});
