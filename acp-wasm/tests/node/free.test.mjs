// free() releases the wasm memory; the object is unusable afterwards.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { AcpConnection, pkgDir } from "./helpers.mjs";

test("every method and getter throws after free()", () => {
  const c = new AcpConnection("client");
  c.sendRequest("a/b", {}, 0, 10);
  c.free();
  const calls = {
    feed: () => c.feed(new Uint8Array([10]), 0),
    feedString: () => c.feedString("\n", 0),
    feedEof: () => c.feedEof(0),
    handleTimeout: () => c.handleTimeout(100),
    sendRequest: () => c.sendRequest("a/b", {}, 0),
    notify: () => c.notify("a/b", {}),
    respond: () => c.respond(0, {}),
    respondError: () => c.respondError(0, -1, "x"),
    cancelRequest: () => c.cancelRequest(0, 0),
    close: () => c.close(),
    pollTransmit: () => c.pollTransmit(),
    pollTransmitString: () => c.pollTransmitString(),
    pollTransmitInto: () => c.pollTransmitInto(new Uint8Array(8)),
    pollEvent: () => c.pollEvent(),
    pollEvents: () => c.pollEvents(),
    sendRequestRaw: () => c.sendRequestRaw("a/b", "{}", 0),
    notifyRaw: () => c.notifyRaw("a/b", "{}"),
    respondRaw: () => c.respondRaw(0, "{}"),
    pollTimeout: () => c.pollTimeout(),
    role: () => c.role,
    pendingOutgoing: () => c.pendingOutgoing,
    pendingIncoming: () => c.pendingIncoming,
    isClosed: () => c.isClosed,
  };
  for (const [name, call] of Object.entries(calls)) {
    assert.throws(call, Error, `${name} after free() must throw`);
  }
  // free() itself is a method too: a second free() throws like the others (and frees nothing).
  assert.throws(() => c.free(), Error);
});

test("freeing one connection leaves the others working", () => {
  const conns = Array.from({ length: 50 }, (_, i) => new AcpConnection(i % 2 ? "agent" : "client"));
  for (const [i, c] of conns.entries()) if (i % 3 === 0) c.free();
  for (const [i, c] of conns.entries()) {
    if (i % 3 === 0) continue;
    assert.equal(c.role, i % 2 ? "agent" : "client");
    c.notify("_ping", {});
    assert.match(c.pollTransmitString(), /"_ping"/);
    c.free();
  }
});

test("memory is reused: creating and freeing many connections does not grow memory", () => {
  // A private instance of the glue whose wasm memory the test can watch.
  const { AcpConnection: Conn, memory } = freshInstance();
  const churn = () => {
    for (let i = 0; i < 200; i++) {
      const c = new Conn("client");
      for (let j = 0; j < 5; j++) c.sendRequest("a/b", { pad: "x".repeat(1000) }, 0, 1000);
      c.pollTransmit();
      c.free();
    }
  };
  churn();
  const before = memory.buffer.byteLength;
  for (let k = 0; k < 10; k++) churn();
  assert.equal(memory.buffer.byteLength, before, "memory grew although every connection was freed");

  // Control: the same churn without free() does grow it, so the check above can fail.
  const kept = [];
  for (let i = 0; i < 2000; i++) {
    const c = new Conn("client");
    for (let j = 0; j < 5; j++) c.sendRequest("a/b", { pad: "x".repeat(1000) }, 0, 1000);
    c.pollTransmit();
    kept.push(c);
  }
  assert.ok(memory.buffer.byteLength > before, "control: memory grows while connections are kept");
  for (const c of kept) c.free();
});

/** Loads the nodejs glue again (uncached) and captures its wasm instance's memory. */
function freshInstance() {
  const require = createRequire(import.meta.url);
  const gluePath = require.resolve(join(pkgDir, "node", "acp_wasm.js"));
  const Original = WebAssembly.Instance;
  let captured;
  WebAssembly.Instance = function (module, imports) {
    captured = new Original(module, imports);
    return captured;
  };
  const cached = require.cache[gluePath];
  delete require.cache[gluePath];
  try {
    const glue = require(gluePath);
    return { AcpConnection: glue.AcpConnection, memory: captured.exports.memory };
  } finally {
    WebAssembly.Instance = Original;
    require.cache[gluePath] = cached;
  }
}

test("[Symbol.dispose]() frees like free() (for `using`)", () => {
  const c = new AcpConnection("agent");
  assert.equal(typeof c[Symbol.dispose], "function");
  c[Symbol.dispose]();
  assert.throws(() => c.pollEvent(), Error);
  assert.throws(() => c.free(), Error, "already freed");
});
