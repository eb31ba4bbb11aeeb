// AcpClient on acp-wasm's fast paths (pollEvents, *Raw): the same events in the same order, the
// same bytes on the wire and the same errors as the plain calls. Against the real wasm engine,
// with the agent side written by hand as NDJSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpClient, RpcError, type IncomingHandler } from "../../src/protocol/client";
import type { EngineModule } from "../../src/protocol/engine";
import { type Logger, nullLogger, nullTrace } from "../../src/protocol/log";
import { tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();
const E = engine as EngineModule;

const line = (o: object) => Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
const note = (text: string) =>
  line({
    method: "session/update",
    params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
  });

/** A client whose written bytes are collected as parsed lines (and as text in `wire`). */
function client(handler: Partial<IncomingHandler>, log: Logger = nullLogger) {
  const sent: unknown[] = [];
  const wire: string[] = [];
  let partial = "";
  const full: IncomingHandler = {
    handleRequest: handler.handleRequest ?? (async () => ({})),
    handleNotification: handler.handleNotification ?? (() => {}),
  };
  const c = new AcpClient(
    new E.AcpConnection("client", {}),
    {
      write: (b) => {
        wire.push(Buffer.from(b).toString("utf8"));
        partial += Buffer.from(b).toString("utf8");
        const lines = partial.split("\n");
        partial = lines.pop()!;
        for (const l of lines) sent.push(JSON.parse(l));
      },
    },
    full,
    log,
    nullTrace,
  );
  return { c, sent, wire };
}

test("fast paths: a burst of notifications reaches the handler in order, with calls made from the handler in between", { skip }, () => {
  const seen: string[] = [];
  const { c, sent } = client({
    handleNotification: (_m, p, json) => {
      const text = (p as { update: { content: { text: string } } }).update.content.text;
      seen.push(text);
      // The params' JSON text comes along, stringified once (the thread model takes it as is).
      assert.equal(json, JSON.stringify(p));
      // Re-entrant: sending from inside dispatch must neither reorder nor drop the burst.
      if (text === "b") c.notify("session/cancel", { sessionId: "s" });
    },
  });
  c.receive(Buffer.concat(["a", "b", "c", "d"].map(note)));
  assert.deepEqual(seen, ["a", "b", "c", "d"]);
  assert.deepEqual(sent, [{ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } }]);
  c.dispose();
});

test("fast paths: a handler that disposes the client stops delivery without throwing out of receive", { skip }, () => {
  const seen: string[] = [];
  const { c } = client({
    handleNotification: (_m, p) => {
      seen.push((p as { update: { content: { text: string } } }).update.content.text);
      c.dispose();
    },
  });
  c.receive(Buffer.concat(["a", "b", "c"].map(note)));
  assert.deepEqual(seen, ["a"]);
  // Nothing reaches the engine after dispose.
  c.receive(note("d"));
  assert.deepEqual(seen, ["a"]);
});

/** Everything a plain engine (no *Raw) writes for the same calls. */
function drain(conn: { pollTransmit(): Uint8Array | undefined }): string {
  let out = "";
  for (let b = conn.pollTransmit(); b !== undefined; b = conn.pollTransmit()) out += Buffer.from(b).toString("utf8");
  return out;
}

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;
/** Params the engine refuses, each for its own reason (no JSON form, throws, not object/array). */
const badParams: unknown[] = [BigInt(1), cyclic, () => 1, Symbol("s"), 5, "text", true];

test("fast paths: requests and notifications write exactly the bytes of the plain calls (key order kept)", { skip }, async () => {
  const { c, wire } = client({});
  const plain = new E.AcpConnection("client", {});
  const params = { z: 1, a: [1, "two", null, { y: true, b: 2.5 }], s: 'é\n"\u2028' };
  const answered = c.request("_x/req", params);
  plain.sendRequest("_x/req", params, 0);
  c.request("_x/none", undefined).catch(() => {});
  plain.sendRequest("_x/none", undefined, 0);
  c.request("_x/null", null).catch(() => {});
  plain.sendRequest("_x/null", null, 0);
  c.notify("_x/note", [3, { b: 1, a: 2 }]);
  plain.notify("_x/note", [3, { b: 1, a: 2 }]);
  c.notify("_x/bare", undefined);
  plain.notify("_x/bare", undefined);
  assert.equal(wire.join(""), drain(plain));
  c.receive(line({ id: 0, result: { ok: 1 } }));
  assert.deepEqual(await answered, { ok: 1 });
  c.dispose();
  plain.free();
});

test("fast paths: params the engine refuses fail exactly as with the plain calls", { skip }, async () => {
  const { c, wire } = client({});
  for (const p of badParams) {
    const plain = new E.AcpConnection("client", {});
    let expected: Error | undefined;
    try {
      plain.sendRequest("_x/req", p, 0);
    } catch (e) {
      expected = e as Error;
    }
    assert.equal(expected?.name, "InvalidParams", `plain sendRequest with ${typeof p}`);
    await assert.rejects(c.request("_x/req", p), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.kind, "local");
      assert.equal(e.error.message, `${expected!.name}: ${expected!.message}`);
      return true;
    });
    let expectedNotify: Error | undefined;
    try {
      plain.notify("_x/note", p);
    } catch (e) {
      expectedNotify = e as Error;
    }
    assert.throws(
      () => c.notify("_x/note", p),
      (e: Error) => e.name === expectedNotify!.name && e.message === expectedNotify!.message,
    );
    plain.free();
  }
  assert.deepEqual(wire, [], "nothing was sent");
  assert.equal(c.pendingOutgoing, 0);
  c.dispose();
});

test("fast paths: answers to the agent's requests are the plain respond's bytes, and its errors are the same", { skip }, async () => {
  const results: unknown[] = [undefined, null, 0, "s", [1, { b: 1, a: 2 }], { z: "é", a: null }, BigInt(1), () => 1];
  const warnings: string[] = [];
  const infos: string[] = [];
  const log: Logger = { ...nullLogger, warn: (m) => warnings.push(m), info: (m) => infos.push(m) };
  const { c, sent } = client({ handleRequest: async (_m, p) => results[(p as { i: number }).i] }, log);
  const plain = new E.AcpConnection("agent", {});
  const expected: unknown[] = [];
  const expectedErrors: string[] = [];
  for (let i = 0; i < results.length; i++) {
    plain.feedString(JSON.stringify({ jsonrpc: "2.0", id: i, method: "_x/ask", params: { i } }) + "\n", 0);
    const ev = plain.pollEvent();
    assert.equal(ev?.type, "request");
    try {
      plain.respond((ev as { token: number }).token, results[i] ?? null);
    } catch (e) {
      expectedErrors.push(`${(e as Error).name}: ${(e as Error).message}`);
    }
  }
  for (const l of drain(plain).split("\n").filter(Boolean)) expected.push(JSON.parse(l));
  c.receive(Buffer.concat(results.map((_, i) => line({ id: i, method: "_x/ask", params: { i } }))));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(sent, expected);
  assert.equal(expectedErrors.length, 2);
  assert.deepEqual(
    warnings.filter((w) => w.includes("answer not sent")).map((w) => w.replace(/^.*answer not sent: /, "")),
    expectedErrors,
  );
  // The log shows the result as before: nothing for undefined, the JSON text otherwise.
  const shown = infos.filter((m) => m.startsWith("→ #")).map((m) => m.replace(/^.* ok in \d+ms ?/, ""));
  assert.deepEqual(shown, ["", "null", "0", '"s"', '[1,{"b":1,"a":2}]', '{"z":"é","a":null}']);
  assert.equal(c.pendingIncoming, 2, "the two unanswerable requests stay pending, as before");
  c.dispose();
  plain.free();
});
