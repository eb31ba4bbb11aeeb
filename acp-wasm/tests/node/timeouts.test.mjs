// Deadlines on a virtual clock: time is only ever the nowMs the test passes in.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, drain, pump, throwsNamed } from "./helpers.mjs";

test("an outgoing request times out at its deadline, not before", () => {
  const client = new AcpConnection("client");
  assert.equal(client.pollTimeout(), undefined);
  const id = client.sendRequest("session/list", {}, 1000, 250);
  drain(client);
  assert.equal(client.pollTimeout(), 1250);

  client.handleTimeout(1249);
  assert.deepEqual(drain(client), { text: "", events: [], lines: [] }, "nothing fires early");
  assert.equal(client.pendingOutgoing, 1);

  client.handleTimeout(1250);
  const out = drain(client);
  assert.equal(out.events.length, 1);
  const [ev] = out.events;
  assert.equal(ev.type, "requestFailed");
  assert.equal(ev.requestId, id);
  assert.equal(ev.kind, "timeout");
  assert.equal(ev.error.code, -32800);
  assert.deepEqual(ev.error.data, { reason: "timeout", timeoutMs: 250 });
  assert.deepEqual(out.lines, [{ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } }]);
  assert.equal(client.pollTimeout(), undefined);
  assert.equal(client.pendingOutgoing, 0);

  // The late response is reported and dropped.
  client.feedString(`{"jsonrpc":"2.0","id":${id},"result":{}}\n`, 2000);
  assert.deepEqual(drain(client).events.map((e) => [e.type, e.kind]), [["protocolError", "lateResponse"]]);
});

test("requestTimeoutMs is the default deadline; a per-request timeoutMs overrides it", () => {
  const client = new AcpConnection("client", { requestTimeoutMs: 100 });
  client.sendRequest("a/b", {}, 0);
  client.sendRequest("c/d", {}, 0, 50);
  assert.equal(client.pollTimeout(), 50);
  client.handleTimeout(60);
  assert.deepEqual(drain(client).events.map((e) => [e.method, e.kind]), [["c/d", "timeout"]]);
  assert.equal(client.pollTimeout(), 100);
  client.handleTimeout(100);
  assert.deepEqual(drain(client).events.map((e) => [e.method, e.kind]), [["a/b", "timeout"]]);
});

test("incomingTimeoutMs: the engine answers for a slow application", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent", { incomingTimeoutMs: 30 });
  const id = client.sendRequest("session/list", {}, 0);
  const { b: [req] } = pump(client, agent, 0);
  assert.equal(agent.pollTimeout(), 30);
  agent.handleTimeout(30);
  const out = drain(agent);
  assert.deepEqual(out.events, [{ type: "autoAnswered", token: req.token, method: "session/list", reason: "timeout" }]);
  assert.equal(out.lines[0].id, id);
  assert.equal(out.lines[0].error.code, -32603);
  throwsNamed(assert, () => agent.respond(req.token, {}), "AlreadyAnswered");
});

test("permissionTimeoutMs answers session/request_permission with cancelled", () => {
  const agent = new AcpConnection("agent");
  const client = new AcpConnection("client", { permissionTimeoutMs: 1000, incomingTimeoutMs: 5 });
  const id = agent.sendRequest("session/request_permission", { sessionId: "s1", options: [], toolCall: {} }, 0);
  const { b: [req] } = pump(agent, client, 0);
  assert.equal(req.method, "session/request_permission");
  assert.equal(client.pollTimeout(), 1000, "permission timeout overrides incomingTimeoutMs");
  client.handleTimeout(1000);
  const { a: clientEvents, b: agentEvents } = pump(client, agent, 1000);
  assert.deepEqual(clientEvents, [{ type: "autoAnswered", token: req.token, method: "session/request_permission", reason: "timeout" }]);
  assert.deepEqual(agentEvents, [{ type: "response", requestId: id, method: "session/request_permission", result: { outcome: { outcome: "cancelled" } } }]);
});

test("nowMs must be a non-negative finite number", () => {
  const c = new AcpConnection("client");
  for (const bad of [-1, NaN, Infinity]) {
    throwsNamed(assert, () => c.handleTimeout(bad), "TypeError");
    throwsNamed(assert, () => c.sendRequest("a/b", {}, bad), "TypeError");
  }
  throwsNamed(assert, () => c.sendRequest("a/b", {}, 0, -5), "TypeError");
  assert.equal(c.pendingOutgoing, 0, "nothing was sent");
  assert.equal(c.pollTransmit(), undefined);
});
