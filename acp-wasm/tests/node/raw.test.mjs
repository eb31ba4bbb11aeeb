// The batched and pre-serialized API: pollEvents(), sendRequestRaw(), notifyRaw(), respondRaw().
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, drain, events, pump, throwsNamed } from "./helpers.mjs";

/** Moves bytes both ways until quiet (events are left in place). */
function move(a, b) {
  for (let moved = true; moved; ) {
    moved = false;
    for (let t; (t = a.pollTransmit()) !== undefined; ) { b.feed(t, 0); moved = true; }
    for (let t; (t = b.pollTransmit()) !== undefined; ) { a.feed(t, 0); moved = true; }
  }
}

test("pollEvents returns every pending event at once, the same objects as pollEvent", () => {
  const client = new AcpConnection("client");
  assert.deepEqual(client.pollEvents(), [], "nothing pending: an empty array");

  const lines = [
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":1,"t":"ünï\\n✓"}}',
    '{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}',
    "nonsense",
    '{"jsonrpc":"2.0","method":"_x/no_params"}',
    '{"jsonrpc":"2.0","id":7,"method":"_x/array","params":[1,{"a":null}]}',
  ].join("\n") + "\n";
  // The same input through pollEvent on a twin connection gives the reference objects.
  const twin = new AcpConnection("client");
  twin.feedString(lines, 0);
  const expected = events(twin);
  assert.equal(expected.length, 5);

  client.feedString(lines, 0);
  const got = client.pollEvents();
  assert.ok(Array.isArray(got));
  assert.deepEqual(got, expected);
  assert.deepEqual(client.pollEvents(), [], "drained");
  assert.equal(client.pollEvent(), undefined, "drained for pollEvent too");

  // pollEvent and pollEvents share one queue, in order.
  const third = new AcpConnection("client");
  third.feedString(lines, 0);
  assert.deepEqual(third.pollEvent(), expected[0]);
  assert.deepEqual(third.pollEvents(), expected.slice(1));
  client.free();
  twin.free();
  third.free();
});

test("pollEvents carries every event kind (responses, failures, closed)", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const ok = client.sendRequest("session/new", { cwd: "/" }, 0);
  const bad = client.sendRequest("_x/fails", {}, 0);
  const slow = client.sendRequest("_x/slow", {}, 0, 5);
  move(client, agent);
  const reqs = agent.pollEvents();
  assert.deepEqual(reqs.map((r) => r.method), ["session/new", "_x/fails", "_x/slow"]);
  agent.respond(reqs[0].token, { sessionId: "s" });
  agent.respondError(reqs[1].token, -32601, "nope");
  move(client, agent);
  client.handleTimeout(5);
  client.close("bye");
  const got = client.pollEvents();
  assert.deepEqual(got.map((e) => e.type), ["response", "requestFailed", "requestFailed", "closed"]);
  assert.deepEqual(got[0], { type: "response", requestId: ok, method: "session/new", result: { sessionId: "s" } });
  assert.equal(got[1].requestId, bad);
  assert.equal(got[1].kind, "remote");
  assert.deepEqual(got[1].error, { code: -32601, message: "nope" });
  assert.equal(got[2].requestId, slow);
  assert.equal(got[2].kind, "timeout");
  assert.deepEqual(got[3], { type: "closed", reason: "bye" });
});

test("sendRequestRaw / notifyRaw / respondRaw send the given JSON text", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const params = { cwd: "/tmp", mcpServers: [], nested: { "ünïcode": "✓\n", n: 1.5 } };

  const id = client.sendRequestRaw("session/new", JSON.stringify(params), 0);
  assert.equal(typeof id, "number");
  assert.equal(client.pendingOutgoing, 1);
  const wire = client.pollTransmitString();
  assert.deepEqual(JSON.parse(wire), { jsonrpc: "2.0", id, method: "session/new", params });
  assert.ok(wire.endsWith("}\n") && wire.indexOf("\n") === wire.length - 1, "one line");

  agent.feedString(wire, 0);
  const [req] = agent.pollEvents();
  assert.deepEqual(req, { type: "request", token: req.token, id, method: "session/new", params });
  agent.respondRaw(req.token, '{"sessionId":"s1"}');
  client.feed(agent.pollTransmit(), 0);
  assert.deepEqual(client.pollEvents(), [{ type: "response", requestId: id, method: "session/new", result: { sessionId: "s1" } }]);

  // Any JSON value is a result; whitespace around it and newlines between tokens are fine
  // (the engine never writes a raw newline: they become spaces).
  client.sendRequestRaw("_x/a", undefined, 0);
  client.sendRequestRaw("_x/b", null, 0, 1000);
  assert.equal(client.pollTimeout(), 1000);
  agent.feed(client.pollTransmit(), 0);
  const [a, b] = agent.pollEvents();
  assert.equal("params" in a, false, "undefined params: none sent");
  assert.equal("params" in b, false, "null params: none sent");
  agent.respondRaw(a.token, " 42 ");
  agent.respondRaw(b.token, '{\n  "multi": [1,\r\n 2]\n}');
  const out = agent.pollTransmitString();
  assert.equal(out.split("\n").length, 3, `two lines: ${JSON.stringify(out)}`);
  client.feedString(out, 0);
  assert.deepEqual(client.pollEvents().map((e) => e.result), [42, { multi: [1, 2] }]);

  // notifyRaw, with and without params.
  agent.notifyRaw("session/update", JSON.stringify({ sessionId: "s1", update: { sessionUpdate: "agent_message_chunk" } }));
  agent.notifyRaw("_x/ping");
  client.feed(agent.pollTransmit(), 0);
  assert.deepEqual(client.pollEvents(), [
    { type: "notification", method: "session/update", params: { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk" } } },
    { type: "notification", method: "_x/ping" },
  ]);
  client.free();
  agent.free();
});

test("raw params that are not valid JSON, or not an object/array, throw InvalidParams and send nothing", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  for (const bad of ["", "{", '{"a":1}x', '{"a":1}\n{"b":2}', "{'a':1}", "[1,]", '{"a":"\u0001"}', "NaN", "undefined"]) {
    const e = throwsNamed(assert, () => client.sendRequestRaw("a/b", bad, 0), "InvalidParams");
    assert.ok(e.message.length > 0);
    throwsNamed(assert, () => client.notifyRaw("a/b", bad), "InvalidParams");
  }
  // Valid JSON that is not an object or array (the core's rule for params).
  for (const notParams of ['"text"', "42", "true", "null"]) {
    throwsNamed(assert, () => client.sendRequestRaw("a/b", notParams, 0), "InvalidParams");
    throwsNamed(assert, () => client.notifyRaw("a/b", notParams), "InvalidParams");
  }
  assert.equal(client.pendingOutgoing, 0);
  assert.equal(client.pollTransmit(), undefined, "failed commands send nothing");

  // respondRaw: bad JSON is InvalidParams and leaves the request unanswered.
  client.sendRequestRaw("_x/q", "{}", 0);
  agent.feed(client.pollTransmit(), 0);
  const [req] = agent.pollEvents();
  for (const bad of ["", "{", "1 2", "[1,]"]) {
    throwsNamed(assert, () => agent.respondRaw(req.token, bad), "InvalidParams");
  }
  assert.equal(agent.pendingIncoming, 1);
  assert.equal(agent.pollTransmit(), undefined);
  agent.respondRaw(req.token, "null");
  assert.equal(agent.pendingIncoming, 0);
  assert.deepEqual(JSON.parse(agent.pollTransmitString()), { jsonrpc: "2.0", id: 0, result: null });
});

test("raw JSON text that is not a string is a TypeError and sends nothing", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  for (const notText of [{}, 42, true, ["{}"], 10n, Symbol("x"), () => "{}"]) {
    assert.throws(() => client.sendRequestRaw("a/b", notText, 0), TypeError);
    assert.throws(() => client.notifyRaw("a/b", notText), TypeError);
  }
  client.sendRequestRaw("_x/q", "{}", 0);
  agent.feed(client.pollTransmit(), 0);
  const [req] = agent.pollEvents();
  for (const notText of [undefined, null, {}, 42, ["null"]]) {
    assert.throws(() => agent.respondRaw(req.token, notText), TypeError);
  }
  assert.equal(agent.pendingIncoming, 1);
  assert.equal(agent.pollTransmit(), undefined);
  assert.equal(client.pendingOutgoing, 1);
  // Both still work.
  agent.respondRaw(req.token, "[]");
  client.feed(agent.pollTransmit(), 0);
  assert.deepEqual(client.pollEvents().map((e) => e.result), [[]]);
});

test("the raw methods report the core's errors and argument errors like the others", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  throwsNamed(assert, () => client.sendRequestRaw("", "{}", 0), "InvalidMethod");
  throwsNamed(assert, () => client.notifyRaw("", "{}"), "InvalidMethod");
  throwsNamed(assert, () => agent.respondRaw(12345, "{}"), "UnknownToken");
  throwsNamed(assert, () => agent.sendRequestRaw("fs/read_text_file", '{"sessionId":"s","path":"/a"}', 0), "CapabilityNotAdvertised");
  client.sendRequestRaw("session/prompt", '{"sessionId":"s1","prompt":[]}', 0);
  throwsNamed(assert, () => client.sendRequestRaw("session/prompt", '{"sessionId":"s1","prompt":[]}', 0), "PromptInFlight");
  assert.throws(() => client.sendRequestRaw("a/b", "{}", -1), TypeError);
  assert.throws(() => client.sendRequestRaw("a/b", "{}", 0, NaN), TypeError);
  assert.throws(() => agent.respondRaw(1.5, "{}"), TypeError);
  move(client, agent);
  const [prompt] = agent.pollEvents();
  agent.respondRaw(prompt.token, '{"stopReason":"end_turn"}');
  throwsNamed(assert, () => agent.respondRaw(prompt.token, "{}"), "AlreadyAnswered");
  client.close();
  drain(client);
  throwsNamed(assert, () => client.sendRequestRaw("a/b", "{}", 0), "ConnectionClosed");
  throwsNamed(assert, () => client.notifyRaw("a/b", "{}"), "ConnectionClosed");
  agent.close();
  assert.deepEqual(agent.pollEvents().map((e) => e.type), ["closed"]);
});

test("a large message through the raw methods and pollEvents", () => {
  const client = new AcpConnection("client", { enforceCapabilities: false });
  const agent = new AcpConnection("agent", { enforceCapabilities: false });
  const content = "line of text with \"quotes\" and ünïcode ✓\n".repeat(50_000); // ~2 MB
  agent.sendRequestRaw("fs/write_text_file", JSON.stringify({ sessionId: "s", path: "/big", content }), 0);
  const { b: [req] } = pump(agent, client, 0);
  assert.equal(req.params.content, content);
  client.respondRaw(req.token, "{}");
  move(agent, client);
  const [done] = agent.pollEvents();
  assert.equal(done.type, "response");
  assert.deepEqual(done.result, {});
});

test("pollTransmitInto copies pending bytes into a reused buffer, in order, in any sizes", () => {
  const a = new AcpConnection("client");
  const reference = new AcpConnection("client");
  const send = (c, i) => c.notifyRaw("_x/n", JSON.stringify({ i, text: "ünïcode ✓ ".repeat(i % 7) }));
  for (let i = 0; i < 50; i++) { send(a, i); send(reference, i); }
  const expected = reference.pollTransmitString();
  assert.equal(a.pollTransmitInto(new Uint8Array(0)), 0, "no room: nothing taken");

  // Odd buffer sizes split lines (and UTF-8 sequences) anywhere; the bytes stay in order,
  // also when new messages are queued between two calls and mixed with pollTransmit.
  const buf = new Uint8Array(37);
  const parts = [];
  let n;
  while ((n = a.pollTransmitInto(buf)) > 0) {
    assert.ok(n <= buf.length);
    parts.push(buf.slice(0, n));
    if (parts.length === 3) { send(a, 50); send(reference, 50); }
    if (parts.length === 5) { const more = a.pollTransmit(); assert.ok(more instanceof Uint8Array); parts.push(more); }
  }
  const expectedAll = expected + reference.pollTransmitString();
  const got = new TextDecoder().decode(Buffer.concat(parts));
  assert.equal(got, expectedAll);
  assert.equal(a.pollTransmitInto(buf), 0, "drained");
  assert.equal(a.pollTransmit(), undefined);

  // pollTransmitString continues where pollTransmitInto stopped.
  send(a, 2);
  send(reference, 2);
  const whole = reference.pollTransmitString();
  assert.equal(a.pollTransmitInto(buf), buf.length);
  assert.equal(new TextDecoder().decode(buf) + a.pollTransmitString(), whole);
  assert.equal(a.pollTransmitString(), undefined);

  // A buffer larger than what is pending takes all of it.
  send(a, 1);
  const big = new Uint8Array(1 << 16);
  const m = a.pollTransmitInto(big);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(big.subarray(0, m))), { jsonrpc: "2.0", method: "_x/n", params: { i: 1, text: "ünïcode ✓ " } });
  assert.equal(a.pollTransmitInto(big), 0);
  a.free();
  reference.free();
});

test("two connections pumped through pollTransmitInto and one buffer", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const buf = new Uint8Array(64);
  const move = (from, to) => {
    for (let n; (n = from.pollTransmitInto(buf)) > 0; ) to.feed(buf.subarray(0, n), 0);
  };
  const content = "x".repeat(10_000);
  const id = client.sendRequestRaw("session/new", JSON.stringify({ cwd: "/", content }), 0);
  move(client, agent);
  const [req] = agent.pollEvents();
  assert.equal(req.params.content, content);
  agent.respondRaw(req.token, '{"sessionId":"s"}');
  move(agent, client);
  assert.deepEqual(client.pollEvents(), [{ type: "response", requestId: id, method: "session/new", result: { sessionId: "s" } }]);
});
