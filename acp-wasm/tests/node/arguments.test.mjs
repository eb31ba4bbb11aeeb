// Wrong argument types from plain JS (no TypeScript to catch them) are a TypeError with the
// argument's name, never a wasm trap or garbage fed to the engine; the connection goes on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, throwsNamed } from "./helpers.mjs";

/** The connection still works: a request goes out as one line. */
function stillWorks(c) {
  const id = c.sendRequest("x/ping", {}, 0);
  const line = c.pollTransmitString();
  assert.ok(line && line.endsWith("\n"), `a line after the bad call: ${line}`);
  assert.equal(JSON.parse(line).id, id);
}

test("a role that is not one of the two strings", () => {
  for (const role of [42, {}, undefined, null, "server"]) {
    const e = throwsNamed(assert, () => new AcpConnection(role), "TypeError");
    assert.match(e.message, /role must be "client" or "agent"/);
  }
});

test("string arguments given other values", () => {
  const cases = [
    ["text", (c) => c.feedString(42, 0)],
    ["text", (c) => c.feedString({}, 0)],
    ["text", (c) => c.feedString(undefined, 0)],
    ["method", (c) => c.sendRequest(42, {}, 0)],
    ["method", (c) => c.sendRequest(undefined, {}, 0)],
    ["method", (c) => c.notify(null, {})],
    ["method", (c) => c.notify({ toString: () => "x" }, {})],
    ["method", (c) => c.sendRequestRaw(7, "{}", 0)],
    ["method", (c) => c.notifyRaw([], "{}")],
    ["message", (c) => c.respondError(0, -32000, 5)],
    ["reason", (c) => c.close(7)],
    ["reason", (c) => c.close({})],
  ];
  for (const [what, call] of cases) {
    const c = new AcpConnection("client");
    const e = throwsNamed(assert, () => call(c), "TypeError");
    assert.match(e.message, new RegExp(`^${what} must be a string`), e.message);
    stillWorks(c);
  }
});

test("feed takes a Uint8Array (a Buffer is one), nothing else", () => {
  for (const bad of ["{\"jsonrpc\":\"2.0\"}\n", 42, {}, undefined, [123, 125, 10]]) {
    const c = new AcpConnection("agent");
    const e = throwsNamed(assert, () => c.feed(bad, 0), "TypeError");
    assert.match(e.message, /bytes must be a Uint8Array/);
    assert.equal(c.pollEvent(), undefined, "nothing was fed");
  }
  const c = new AcpConnection("agent");
  c.feed(Buffer.from('{"jsonrpc":"2.0","method":"n","params":{}}\n'), 0);
  assert.equal(c.pollEvent().type, "notification");
  c.feed(new Uint8Array(Buffer.from('{"jsonrpc":"2.0","method":"m"}\n')), 0);
  assert.equal(c.pollEvent().method, "m");
});

test("close without a reason, with null, or with a string", () => {
  for (const reason of [undefined, null, "bye"]) {
    const c = new AcpConnection("client");
    c.close(reason);
    const closed = c.pollEvents().find((e) => e.type === "closed");
    assert.ok(closed, "a closed event");
    assert.equal(closed.reason, reason === "bye" ? "bye" : "closed by the local side");
  }
});
