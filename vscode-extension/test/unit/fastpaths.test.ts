// AcpClient on acp-wasm's fast paths (pollEvents, *Raw): the same events in the same order, the
// same bytes on the wire and the same errors as the plain calls. Against the real wasm engine,
// with the agent side written by hand as NDJSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpClient, type IncomingHandler } from "../../src/protocol/client";
import type { EngineModule } from "../../src/protocol/engine";
import { nullLogger, nullTrace } from "../../src/protocol/log";
import { tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();
const E = engine as EngineModule;

const line = (o: object) => Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
const note = (text: string) =>
  line({ method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } });

/** A client whose written bytes are collected as parsed lines. */
function client(handler: Partial<IncomingHandler>) {
  const sent: unknown[] = [];
  let partial = "";
  const full: IncomingHandler = {
    handleRequest: handler.handleRequest ?? (async () => ({})),
    handleNotification: handler.handleNotification ?? (() => {}),
  };
  const c = new AcpClient(
    new E.AcpConnection("client", {}),
    {
      write: (b) => {
        partial += Buffer.from(b).toString("utf8");
        const lines = partial.split("\n");
        partial = lines.pop()!;
        for (const l of lines) sent.push(JSON.parse(l));
      },
    },
    full,
    nullLogger,
    nullTrace,
  );
  return { c, sent };
}

test("fast paths: a burst of notifications reaches the handler in order, with calls made from the handler in between", { skip }, () => {
  const seen: string[] = [];
  const { c, sent } = client({
    handleNotification: (_m, p) => {
      const text = (p as { update: { content: { text: string } } }).update.content.text;
      seen.push(text);
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
