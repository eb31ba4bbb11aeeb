// The client flavour (pkg/nodejs-client, cargo feature `client`) beyond the case tables
// (policy.test.mjs replays those): the Thread and Session classes (and the connection folding
// updates into a session inside wasm, pollEventsFor), chooseAuth,
// failureError and terminalLimits as an application uses them, their argument checks, and the
// split between the flavours (the default build has none of this; the client build is the
// engine too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { acp, client, pkgDir, throwsNamed } from "./helpers.mjs";

const { Thread } = client;

const chunk = (text, extra = {}) =>
  JSON.stringify({ sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text }, ...extra } });

test("the default flavour is the engine alone; the client flavour is the engine plus acp-client", () => {
  const clientOnly = ["Thread", "Session", "chooseAuth", "failureError", "terminalLimits", "decidePermission",
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
  // Only what changed since: entry 1's new text, once.
  t.applyUpdate(chunk("!"));
  t.applyUpdate(chunk("!"));
  assert.deepEqual(JSON.parse(t.takeDelta()), { entries: [], appended: [[1, 0, "!!"]], firstEntry: 0 });
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

test("Session: a session/load replay is shown into an empty conversation, folded into one it holds (the engine's rule)", () => {
  const upd = (update) => JSON.stringify({ sessionId: "s", update });
  const loads = JSON.stringify({ protocolVersion: 1, agentCapabilities: { loadSession: true } });
  const s = new client.Session(JSON.stringify({ open: "new" }), "/p");
  // The session's conversation: shared, the session folds into it.
  const t = s.thread();
  s.initialized(loads);
  s.opened(JSON.stringify({ sessionId: "s" }));
  t.beginTurn(JSON.stringify([{ type: "text", text: "hi" }]));
  s.update(chunk("hello"));
  s.update(upd({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "in_progress" }));
  t.endTurn("end_turn");
  // The agent ends; restarted, it loads the session and replays it.
  assert.equal(JSON.parse(s.agentEnded(0, "exited with code 1")).next, "restart");
  assert.deepEqual(JSON.parse(s.initialized(loads)), { send: "load", sessionId: "s" });
  t.takeDelta();
  const entries = JSON.parse(t.toJson()).entries.length;
  const folded = (u) => assert.deepEqual(JSON.parse(s.update(u)), { routed: "folded" });
  // Nothing of the conversation is added again...
  folded(upd({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } }));
  folded(chunk("hello"));
  folded(upd({ sessionUpdate: "tool_call", toolCallId: "t9", title: "Old", status: "completed" }));
  // ...a tool call unfinished here takes the replayed state, and the session's state is taken.
  folded(upd({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "completed" }));
  folded(upd({ sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "Search" }] }));
  folded(upd({ sessionUpdate: "plan", entries: [{ content: "a", priority: "high", status: "pending" }] }));
  assert.equal(JSON.parse(t.toJson()).entries.length, entries);
  const delta = JSON.parse(t.takeDelta());
  assert.deepEqual(delta.entries.map(([, e]) => [e.type, e.status]), [["tool", "completed"]]);
  assert.deepEqual(delta.meta.commands, [{ name: "web", description: "Search" }]);
  assert.deepEqual(delta.meta.plan, [{ content: "a", priority: "high", status: "pending" }]);
  const err = throwsNamed(assert, () => s.update('{"sessionId":"s"}'), "Error");
  assert.match(err.message, /^unreadable session\/update/);
  assert.equal(t.hasChanges(), false, "an unreadable update changes nothing");
  throwsNamed(assert, () => s.update(7), "TypeError");
  const opened = JSON.parse(s.opened("null"));
  assert.equal(opened.memory, "replayed");
  assert.match(opened.notices[0].text, /6 replayed update\(s\) not shown again/);
  // The view is the session's: freeing it leaves the session's conversation.
  t.free();
  const again = s.thread();
  assert.equal(JSON.parse(again.toJson()).entries.length, entries + 1);
  again.free();
  s.free();
  assert.throws(() => s.title);
});

test("Thread: every method throws after free()", () => {
  const t = new Thread();
  t.free();
  for (const call of [() => t.applyUpdate(chunk("x")), () => t.beginTurn("[]"), () => t.endTurn("end_turn"),
    () => t.failTurn("x"), () => t.notice("info", "x"), () => t.setSession("s", null, null, null), () => t.takeDelta(),
    () => t.hasChanges(), () => t.toJson(), () => t.entryCount(), () => t.entryJson(0)]) {
    assert.throws(call, Error);
  }
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
    ["intentJson", () => new client.Session("{}", "/p")],
    ["intentJson", () => new client.Session('{"open":"load"}', "/p")],
    ["intentJson", () => new client.Session({ open: "new" }, "/p")],
    ["cwd", () => new client.Session('{"open":"new"}', 5)],
    ["optionsJson", () => new client.Session('{"open":"new"}', "/p", '{"nope":1}')],
    ["optionsJson", () => new client.Session('{"open":"new"}', "/p", '{"policy":{"maxRestartsInWindow":-1,"windowMs":1,"initialBackoffMs":1,"maxBackoffMs":1,"multiplier":2}}')],
    ["nowMs", () => new client.Session('{"open":"new"}', "/p").agentEnded(-5, "x")],
    ["nowMs", () => new client.Session('{"open":"new"}', "/p").agentEnded(Infinity, "x")],
    ["code", () => new client.Session('{"open":"new"}', "/p").openFailed(1.5, "x")],
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
      "export class Session",
      "constructor(intentJson: string, cwd: string, optionsJson?: string);",
      "initialized(resultJson: string): string;",
      "update(paramsJson: string): string;",
      "opened(resultJson: string): string;",
      "openFailed(code: number, message: string): string;",
      "agentEnded(nowMs: number, why: string): string;",
      "thread(): Thread;",
      "pollEventsFor(session: Session): AcpEvent[];",
      "export type SessionIntent =",
      "export type SessionRouted =",
      "export interface SessionOpened",
      "export type SessionAfterEnd =",
      "export function chooseAuth(methodsJson: string, setVarsJson: string, requested: string | null): string;",
      "export function failureError(failure: FailureName): string;",
      "export function terminalLimits(): string;",
      'export type NoticeLevel = "info" | "warning" | "error";',
      "export type ThreadApplied =",
      "export interface ThreadDelta",
      "export type ThreadEntry =",
      "export interface SavedThread",
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
      assert.deepEqual([...d.feed(bytes.subarray(0, cut)), ...d.feed(bytes.subarray(cut))], ['{"a":1}', { size: 50 }, '{"b":\n2}', "é"], `cut at ${cut}`);
    } finally {
      d.free();
    }
  }
  // What to do with a skipped event is acp-core's rule (as on stdio): a response is replaced by
  // an error for its id, a request is answered with the oversize error, the rest is dropped.
  const small = new client.SseDecoder(64);
  const big = "x".repeat(80);
  const [response, request, note] = small.feed(
    `data: {"jsonrpc":"2.0","id":7,"result":{"big":"${big}"}}\n\n` +
      `data: {"jsonrpc":"2.0","id":"r1","method":"fs/write_text_file","params":{"content":"${big}"}}\n\n` +
      `data: {"jsonrpc":"2.0","method":"session/update","params":{"x":"${big}"}}\n\n`,
  );
  small.free();
  assert.equal(response.size, 124);
  assert.equal(response.answer, undefined);
  assert.deepEqual(JSON.parse(response.standIn), {
    jsonrpc: "2.0", id: 7,
    error: { code: -32603, message: "the response was larger than the client's 64-byte limit and was dropped" },
  });
  assert.equal(request.standIn, undefined);
  assert.deepEqual(JSON.parse(request.answer).error.data, { maxMessageBytes: 64 });
  assert.equal(JSON.parse(request.answer).id, "r1");
  assert.deepEqual(note, { size: 141 });
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

// ---- the session engine (acp_client::session) and folding inside wasm --------------------

const update = (sessionId, update) => JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update } }) + "\n";
const say = (sessionId, text) => update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const answer = (id, result) => JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n";
const loadsOnly = { protocolVersion: 1, agentCapabilities: { loadSession: true }, agentInfo: { name: "demo", version: "1" } };

/** Every event of `conn` for `session`, pollEventsFor until it answers `[]`, with `onResponse`
 *  called at the response's place (as a face feeds `opened`). */
function pollAll(conn, session, onResponse = () => {}) {
  const out = [];
  for (let batch = conn.pollEventsFor(session); batch.length > 0; batch = conn.pollEventsFor(session)) {
    for (const ev of batch) {
      out.push(ev);
      if (ev.type === "response") onResponse(ev);
    }
    // A batch ends at its first response: nothing after one is in the same batch.
    const at = batch.findIndex((e) => e.type === "response" || e.type === "requestFailed");
    assert.ok(at === -1 || at === batch.length - 1 || batch[at].type === "requestFailed", "a batch ends at a response");
  }
  return out;
}

test("Session: a new session's updates fold inside wasm; JS gets the other events and the deltas", () => {
  const s = new client.Session(JSON.stringify({ open: "new" }), "/p");
  const conn = new client.AcpConnection("client");
  assert.deepEqual(JSON.parse(s.initialized(JSON.stringify(loadsOnly))), { send: "new" });
  const id = conn.sendRequest("session/new", { cwd: "/p", mcpServers: [] }, 0);
  conn.pollTransmit();
  // The agent sends an update before it answers (held), then the answer, then the turn's text.
  conn.feedString(say("s1", "early ") + answer(id, { sessionId: "s1" }) + say("s1", "Hello") + say("s1", ", world") +
    say("other", "not ours") + JSON.stringify({ jsonrpc: "2.0", method: "_x/ping" }) + "\n", 0);
  let opened;
  const events = pollAll(conn, s, (ev) => (opened = JSON.parse(s.opened(JSON.stringify(ev.result)))));
  // Another session's update is not taken: it comes back, for the face to hand to its session.
  assert.deepEqual(events.map((e) => e.type + (e.method ? ` ${e.method}` : "")), [
    "response session/new",
    "notification session/update",
    "notification _x/ping",
  ]);
  assert.equal(events[1].params.sessionId, "other");
  assert.equal(opened.sessionId, "s1");
  assert.equal(opened.memory, "fresh");
  assert.equal(s.isOpen, true);
  assert.equal(s.sessionId, "s1");
  const t = s.thread();
  const delta = JSON.parse(t.takeDelta());
  const agent = delta.entries.filter(([, e]) => e.type === "agent").map(([, e]) => e.content[0].text);
  // The held update is folded when the answer comes, before the notice the answer adds.
  assert.deepEqual(agent, ["early ", "Hello, world"]);
  assert.ok(delta.entries.some(([, e]) => e.type === "notice" && e.text.startsWith("connected to demo 1; session s1")));
  assert.equal(t.hasChanges(), false);
  t.free();
  conn.free();
  s.free();
});

test("two sessions on one connection: the one folded into takes its updates, the other's come back for it", () => {
  const conn = new client.AcpConnection("client");
  const open = (sid) => {
    const s = new client.Session(JSON.stringify({ open: "new" }), "/p");
    s.initialized(JSON.stringify(loadsOnly));
    s.opened(JSON.stringify({ sessionId: sid }));
    return s;
  };
  const a = open("a");
  const b = open("b");
  conn.feedString(say("a", "for a ") + say("b", "for b") + say("a", "again"), 0);
  const back = pollAll(conn, a);
  assert.deepEqual(back.map((e) => [e.method, e.params.sessionId]), [["session/update", "b"]]);
  // The face hands it to b, whose session it is.
  assert.equal(JSON.parse(b.update(JSON.stringify(back[0].params))).routed, "shown");
  const text = (s) => {
    const t = s.thread();
    const entries = JSON.parse(t.toJson()).entries.filter((e) => e.type === "agent").map((e) => e.content[0].text);
    t.free();
    return entries;
  };
  assert.deepEqual(text(a), ["for a again"]);
  assert.deepEqual(text(b), ["for b"]);
  conn.free();
  a.free();
  b.free();
});

test("PromptQueue: sent now or queued, in order at the turn's end, held after a cancel; refusals named", () => {
  const q = new client.PromptQueue();
  assert.deepEqual(JSON.parse(q.submit("one", "", false)), { do: "send", prompt: { id: 1, text: "one", data: "" } });
  assert.equal(JSON.parse(q.submit("two", "[1]", true)).do, "queued");
  assert.equal(q.length, 1);
  assert.deepEqual(JSON.parse(q.state()), { items: [{ id: 2, text: "two", data: "[1]" }], held: false });
  assert.deepEqual(JSON.parse(q.turnEnded("done")), { next: "send", prompt: { id: 2, text: "two", data: "[1]" } });
  q.submit("three", "", true);
  assert.equal(JSON.parse(q.turnEnded("cancelled")).next, "held");
  assert.equal(JSON.parse(q.state()).held, true);
  assert.equal(JSON.parse(q.sendHeld()).text, "three");
  assert.equal(q.sendHeld(), undefined);
  const refused = throwsNamed(assert, () => q.submit("  ", "", true), "QueueRefused");
  assert.match(refused.message, /empty prompt/);
  throwsNamed(assert, () => q.remove(99), "QueueRefused");
  assert.throws(() => q.turnEnded("maybe"), TypeError);
  assert.throws(() => q.edit(-1, "x"), TypeError);
  assert.throws(() => q.submit(5, "", true), TypeError);
  q.free();
});

test("pollEventsFor keeps wire order across a session/load's answer: the replay is folded, what follows is shown", () => {
  const saved = JSON.stringify({ format: 1, sessionId: "s1", entries: [
    { type: "user", content: [{ type: "text", text: "fix the build" }] },
    { type: "agent", content: [{ type: "text", text: "Done." }] },
  ] });
  const s = new client.Session(JSON.stringify({ open: "continue", sessionId: "s1", saved: JSON.parse(saved) }), "/p");
  assert.equal(s.title, "fix the build");
  assert.deepEqual(JSON.parse(s.initialized(JSON.stringify(loadsOnly))), { send: "load", sessionId: "s1" });
  const conn = new client.AcpConnection("client");
  const id = conn.sendRequest("session/load", { sessionId: "s1", cwd: "/p", mcpServers: [] }, 0);
  conn.pollTransmit();
  // The replay, the answer and a new update all arrive in one chunk: one pollEventsFor call
  // could fold them all before JS sees the answer; it stops at the answer instead.
  conn.feedString(update("s1", { sessionUpdate: "user_message_chunk", content: { type: "text", text: "fix the build" } }) +
    say("s1", "Done.") + answer(id, null) + say("s1", "And more."), 0);
  let opened;
  pollAll(conn, s, (ev) => (opened = JSON.parse(s.opened(JSON.stringify(ev.result)))));
  assert.equal(opened.memory, "replayed");
  assert.match(opened.notices[0].text, /2 replayed update\(s\) not shown again/);
  const t = s.thread();
  const entries = JSON.parse(t.toJson()).entries;
  t.free();
  const texts = entries.filter((e) => e.type !== "notice").map((e) => `${e.type}: ${e.content[0].text}`);
  assert.deepEqual(texts, ["user: fix the build", "agent: Done.", "agent: And more."]);
  conn.free();
  s.free();
});

test("Session: refused intents, a crash told truthfully, argument checks", () => {
  const refused = throwsNamed(assert, () => new client.Session(JSON.stringify({ open: "continue", sessionId: "nope" }), "/p"), "SessionRefused");
  assert.match(refused.message, /no session nope is saved/);
  assert.throws(() => new client.Session("{}", "/p"), TypeError);
  assert.throws(() => new client.Session(JSON.stringify({ open: "new" }), 5), TypeError);
  assert.throws(() => new client.Session(JSON.stringify({ open: "new" }), "/p", JSON.stringify({ nope: 1 })), TypeError);
  // An agent that keeps nothing: it can neither resume nor load; after a crash the
  // conversation goes on in a new session and the user is told the agent does not remember it.
  const s = new client.Session(JSON.stringify({ open: "new" }), "/p");
  const plain = JSON.stringify({ protocolVersion: 1, agentInfo: { name: "forgetful", version: "1" } });
  s.initialized(plain);
  s.opened(JSON.stringify({ sessionId: "s1" }));
  const t = s.thread();
  t.beginTurn(JSON.stringify([{ type: "text", text: "remember this" }]));
  t.free();
  s.update(JSON.stringify({ sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ok" } } }));
  const after = JSON.parse(s.agentEnded(1000, "exited with code 70"));
  assert.equal(after.next, "restart");
  assert.equal(after.afterMs, 500);
  assert.deepEqual(JSON.parse(s.initialized(plain)), { send: "new" });
  const opened = JSON.parse(s.opened(JSON.stringify({ sessionId: "s2" })));
  assert.equal(opened.memory, "lost");
  assert.match(opened.notices[0].text, /does not remember/);
  assert.throws(() => s.agentEnded(-1, "x"), TypeError);
  assert.throws(() => s.openFailed(1.5, "x"), TypeError);
  assert.throws(() => s.update("{"), /unreadable session\/update/);
  s.free();
  assert.throws(() => s.title);
});

test("Session: a conversation shown goes on in a new session, said so", () => {
  const shown = { format: 1, entries: [{ type: "user", content: [{ type: "text", text: "earlier" }] }] };
  const s = new client.Session(JSON.stringify({ open: "new" }), "/p", JSON.stringify({ shown }));
  assert.equal(s.title, "earlier");
  assert.deepEqual(JSON.parse(s.initialized(JSON.stringify(loadsOnly))), { send: "new" });
  const opened = JSON.parse(s.opened(JSON.stringify({ sessionId: "s9" })));
  assert.equal(opened.memory, "lost");
  assert.match(opened.notices[0].text, /the conversation above is the copy saved here/);
  s.free();
});
