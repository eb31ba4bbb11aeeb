// A line over maxMessageBytes is skipped and answered; the stream goes on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, drain } from "./helpers.mjs";

test("an oversize request line is answered with -32600 and its id; later lines still work", () => {
  const agent = new AcpConnection("agent", { maxMessageBytes: 100 });
  const big = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "_big", params: { blob: "x".repeat(500) } });
  const small = JSON.stringify({ jsonrpc: "2.0", id: 8, method: "_small", params: {} });
  const input = new TextEncoder().encode(big + "\n" + small + "\n");
  // Chunks of 33 bytes: the limit is crossed in the middle of a chunk.
  for (let i = 0; i < input.length; i += 33) agent.feed(input.subarray(i, i + 33), 0);
  const out = drain(agent);
  assert.deepEqual(out.events.map((e) => e.type), ["protocolError", "request"]);
  assert.equal(out.events[0].kind, "oversize");
  assert.match(out.events[0].message, /100 bytes/);
  assert.deepEqual(out.events[1].method, "_small");
  assert.equal(out.lines.length, 1);
  assert.equal(out.lines[0].id, 7);
  assert.equal(out.lines[0].error.code, -32600);
  assert.deepEqual(out.lines[0].error.data, { maxMessageBytes: 100 });
});

test("a line exactly at the limit is accepted, one byte more is not", () => {
  const make = (n) => {
    const head = '{"jsonrpc":"2.0","method":"_n","params":{"s":"';
    const tail = '"}}';
    return head + "a".repeat(n - head.length - tail.length) + tail;
  };
  const at = make(100);
  assert.equal(at.length, 100);
  const a = new AcpConnection("agent", { maxMessageBytes: 100 });
  a.feedString(at + "\n", 0);
  assert.deepEqual(drain(a).events.map((e) => e.type), ["notification"]);
  a.feedString(make(101) + "\n", 0);
  const out = drain(a);
  assert.deepEqual(out.events.map((e) => [e.type, e.kind]), [["protocolError", "oversize"]]);
  assert.equal(out.lines[0].id, null, "a notification has no id to echo");
});

test("invalid options are a TypeError", () => {
  assert.throws(() => new AcpConnection("agent", { maxMessageBytes: -1 }), TypeError);
  assert.throws(() => new AcpConnection("agent", { maxMesageBytes: 10 }), TypeError);
  assert.throws(() => new AcpConnection("agent", { batchPolicy: "sometimes" }), TypeError);
  assert.throws(() => new AcpConnection("editor"), TypeError);
});
