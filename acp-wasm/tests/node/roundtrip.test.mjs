// A client and an agent AcpConnection talking to each other in JS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, drain, pump } from "./helpers.mjs";

test("request/response round trip between a client and an agent", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  assert.equal(client.role, "client");
  assert.equal(agent.role, "agent");

  const params = { cwd: "/tmp", mcpServers: [], nested: { "ünïcode": "✓", n: 1.5 } };
  const id = client.sendRequest("session/new", params, 0);
  assert.equal(typeof id, "number");
  assert.equal(client.pendingOutgoing, 1);

  // The wire: one NDJSON line holding the request.
  const wire = client.pollTransmit();
  assert.ok(wire instanceof Uint8Array);
  assert.equal(client.pollTransmit(), undefined, "drained");
  const text = new TextDecoder().decode(wire);
  assert.ok(text.endsWith("\n"));
  assert.deepEqual(JSON.parse(text), { jsonrpc: "2.0", id, method: "session/new", params });

  // Fed to the agent byte by byte: incomplete input is just "need more bytes".
  for (let i = 0; i < wire.length; i++) agent.feed(wire.subarray(i, i + 1), 5);
  const req = agent.pollEvent();
  assert.deepEqual(req, { type: "request", token: req.token, id, method: "session/new", params });
  assert.equal(agent.pollEvent(), undefined);
  assert.equal(agent.pendingIncoming, 1);

  agent.respond(req.token, { sessionId: "s1" });
  assert.equal(agent.pendingIncoming, 0);
  const answer = agent.pollTransmitString();
  assert.deepEqual(JSON.parse(answer), { jsonrpc: "2.0", id, result: { sessionId: "s1" } });

  client.feedString(answer, 10);
  assert.deepEqual(client.pollEvent(), { type: "response", requestId: id, method: "session/new", result: { sessionId: "s1" } });
  assert.equal(client.pollEvent(), undefined);
  assert.equal(client.pendingOutgoing, 0);
  client.free();
  agent.free();
});

test("notifications, error responses and string ids", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");

  agent.notify("session/update", { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk" } });
  const { b: clientSide } = pump(agent, client, 0);
  assert.deepEqual(clientSide, [
    { type: "notification", method: "session/update", params: { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk" } } },
  ]);

  // A notification without params has no params key.
  client.notify("_vendor/ping");
  const { b: agentSide } = pump(client, agent, 0);
  assert.deepEqual(agentSide, [{ type: "notification", method: "_vendor/ping" }]);

  // respondError -> requestFailed with kind "remote" and the peer's error object.
  const id = client.sendRequest("session/prompt", { sessionId: "s1", prompt: [] }, 0);
  const { b: reqs } = pump(client, agent, 0);
  assert.equal(reqs.length, 1);
  agent.respondError(reqs[0].token, -32602, "Invalid params", { field: "prompt" });
  const { b: done } = pump(agent, client, 0);
  assert.deepEqual(done, [{
    type: "requestFailed", requestId: id, method: "session/prompt", kind: "remote",
    error: { code: -32602, message: "Invalid params", data: { field: "prompt" } },
  }]);

  // A peer request with a string id keeps it; `respond(token, undefined)` sends result null.
  agent.feedString('{"jsonrpc":"2.0","id":"abc","method":"_x/y","params":[1,2]}\n', 0);
  const [ev] = drain(agent).events;
  assert.deepEqual(ev, { type: "request", token: ev.token, id: "abc", method: "_x/y", params: [1, 2] });
  agent.respond(ev.token, undefined);
  assert.deepEqual(drain(agent).lines, [{ jsonrpc: "2.0", id: "abc", result: null }]);
});

test("the peer's $/cancel_request and a local cancelRequest", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const id = client.sendRequest("session/list", {}, 0);
  const { b: [req] } = pump(client, agent, 0);
  client.cancelRequest(id, 1);
  const out = drain(client);
  assert.deepEqual(out.events, [{
    type: "requestFailed", requestId: id, method: "session/list", kind: "cancelled",
    error: out.events[0].error,
  }]);
  assert.equal(out.events[0].error.code, -32800);
  assert.deepEqual(out.lines, [{ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } }]);
  agent.feedString(out.text, 1);
  assert.deepEqual(drain(agent).events, [{ type: "cancelRequested", token: req.token }]);
});

test("close completes everything pending and emits closed last", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const id = client.sendRequest("session/list", {}, 0);
  const { b: [req] } = pump(client, agent, 0);
  agent.close("shutting down");
  assert.equal(agent.isClosed, true);
  const out = drain(agent);
  assert.deepEqual(out.events, [
    { type: "autoAnswered", token: req.token, method: "session/list", reason: "closed" },
    { type: "closed", reason: "shutting down" },
  ]);
  assert.equal(out.lines.length, 1);
  assert.equal(out.lines[0].id, id);
  assert.ok(out.lines[0].error);
  client.close();
  const c = drain(client).events;
  assert.equal(c.at(-1).type, "closed");
  assert.equal(c[0].type, "requestFailed");
  assert.equal(c[0].kind, "closed");
});

test("feedEof processes a final unterminated line, then closes", () => {
  const agent = new AcpConnection("agent");
  agent.feedString('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}', 0);
  assert.equal(agent.pollEvent(), undefined, "no newline yet: need more bytes");
  agent.feedEof(1);
  const evs = drain(agent).events;
  assert.deepEqual(evs[0], { type: "notification", method: "session/cancel", params: { sessionId: "s" } });
  assert.equal(evs.at(-1).type, "closed");
  assert.equal(agent.isClosed, true);
});
