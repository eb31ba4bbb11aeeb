// Every acp_core::Error kind reachable through the JS API surfaces as an Error with its name.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AcpConnection, drain, pump, throwsNamed } from "./helpers.mjs";

test("error names per kind", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");

  throwsNamed(assert, () => agent.respond(12345, {}), "UnknownToken");
  throwsNamed(assert, () => client.cancelRequest(999, 0), "UnknownRequest");
  throwsNamed(assert, () => client.sendRequest("", {}, 0), "InvalidMethod");
  throwsNamed(assert, () => client.notify("", {}), "InvalidMethod");
  // params must be an object or array (the core checks), and must have a JSON form (the wrapper).
  throwsNamed(assert, () => client.sendRequest("a/b", "text", 0), "InvalidParams");
  throwsNamed(assert, () => client.sendRequest("a/b", 42, 0), "InvalidParams");
  throwsNamed(assert, () => client.sendRequest("a/b", { n: 10n }, 0), "InvalidParams");
  const cyclic = {}; cyclic.self = cyclic;
  throwsNamed(assert, () => client.notify("a/b", cyclic), "InvalidParams");
  throwsNamed(assert, () => client.sendRequest("a/b", () => 1, 0), "InvalidParams");
  assert.equal(client.pendingOutgoing, 0);
  assert.equal(client.pollTransmit(), undefined, "failed commands send nothing");

  // An agent may not call fs/* before the client advertised it in initialize.
  const e = throwsNamed(assert, () => agent.sendRequest("fs/read_text_file", { sessionId: "s", path: "/a" }, 0), "CapabilityNotAdvertised");
  assert.match(e.message, /fs\.readTextFile/);

  // One prompt in flight per session.
  client.sendRequest("session/prompt", { sessionId: "s1", prompt: [] }, 0);
  throwsNamed(assert, () => client.sendRequest("session/prompt", { sessionId: "s1", prompt: [] }, 0), "PromptInFlight");
  client.sendRequest("session/prompt", { sessionId: "s2", prompt: [] }, 0);

  // AlreadyAnswered: answering twice.
  const { b: reqs } = pump(client, agent, 0);
  assert.equal(reqs.length, 2);
  agent.respond(reqs[0].token, { stopReason: "end_turn" });
  throwsNamed(assert, () => agent.respond(reqs[0].token, {}), "AlreadyAnswered");
  throwsNamed(assert, () => agent.respondError(reqs[0].token, -32603, "x"), "AlreadyAnswered");

  // ConnectionClosed: every command after close.
  client.close("done");
  drain(client);
  throwsNamed(assert, () => client.sendRequest("a/b", {}, 0), "ConnectionClosed");
  throwsNamed(assert, () => client.notify("a/b", {}), "ConnectionClosed");
  agent.close();
  throwsNamed(assert, () => agent.respond(reqs[1].token, {}), "ConnectionClosed");
});

test("the capability gate opens once the client advertises it", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  client.sendRequest("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true } } }, 0);
  const { b: [init] } = pump(client, agent, 0);
  agent.respond(init.token, { protocolVersion: 1 });
  const id = agent.sendRequest("fs/read_text_file", { sessionId: "s", path: "/a" }, 0);
  assert.equal(typeof id, "number");
  throwsNamed(assert, () => agent.sendRequest("fs/write_text_file", { sessionId: "s", path: "/a", content: "" }, 0), "CapabilityNotAdvertised");
  const loose = new AcpConnection("agent", { enforceCapabilities: false });
  assert.equal(typeof loose.sendRequest("terminal/create", { sessionId: "s", command: "ls" }, 0), "number");
});

test("respondError validates its code", () => {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  client.sendRequest("a/b", {}, 0);
  const { b: [req] } = pump(client, agent, 0);
  throwsNamed(assert, () => agent.respondError(req.token, 1.5, "x"), "TypeError");
  throwsNamed(assert, () => agent.respondError(req.token, NaN, "x"), "TypeError");
  throwsNamed(assert, () => agent.respond(-1, {}), "TypeError");
  throwsNamed(assert, () => agent.respond(0.5, {}), "TypeError");
  agent.respondError(req.token, -32000, "custom");
  assert.deepEqual(drain(agent).lines[0].error, { code: -32000, message: "custom" });
});
