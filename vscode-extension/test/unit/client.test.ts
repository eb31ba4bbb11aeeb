// AcpClient and AgentConnection against the real wasm engine: in memory (client engine <-> agent
// engine) and over a real child process (test/fixtures/agent.cjs).
import { nodeTransports } from "../../src/platform/nodeTransports";
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FsBridge, type DocumentHost } from "../../src/bridges/fs";
import { nodeBridgeFiles } from "../../src/platform/nodeBridgeFiles";
import { PermissionBridge, type PermissionPromptModel, type PermissionPrompter } from "../../src/bridges/permission";
import { Conversation } from "../../src/bridges/conversation";
import { ClientRouter } from "../../src/bridges/router";
import { AgentConnection, AgentStartError } from "../../src/protocol/agent";
import type { CancellationToken } from "../../src/protocol/cancellation";
import { AcpClient, RpcError, type IncomingHandler } from "../../src/protocol/client";
import type { AcpEvent, EngineConnection, EngineModule } from "../../src/protocol/engine";
import { nullLogger, nullTrace } from "../../src/protocol/log";
import { RequestError } from "../../src/protocol/errors";
import { messageSource } from "../../src/webview/threadModel";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";

const { engine, entry, skip } = tryEngine();
const E = engine as EngineModule;

/** The agent end of an in-memory pair: the test reads its events and answers by hand. */
class AgentPeer {
  readonly conn: EngineConnection;
  private events: AcpEvent[] = [];
  private waiters: Array<() => void> = [];
  client!: AcpClient;
  constructor(options?: object) {
    this.conn = new E.AcpConnection("agent", options);
  }
  /** Bytes from the client (delivered on a microtask, like a pipe). */
  deliver(bytes: Uint8Array) {
    const copy = new Uint8Array(bytes);
    queueMicrotask(() => {
      this.conn.feed(copy, performance.now());
      this.pump();
    });
  }
  pump() {
    for (let b = this.conn.pollTransmit(); b !== undefined; b = this.conn.pollTransmit()) {
      const copy = new Uint8Array(b);
      queueMicrotask(() => this.client.receive(copy));
    }
    for (let ev = this.conn.pollEvent(); ev !== undefined; ev = this.conn.pollEvent()) this.events.push(ev);
    for (const w of this.waiters.splice(0)) w();
  }
  /** Every event not consumed yet. */
  rest(): AcpEvent[] {
    return this.events.splice(0);
  }
  /** The next event matching `pred` (awaits it; no sleeping). */
  async next<T extends AcpEvent>(pred: (e: AcpEvent) => e is T): Promise<T>;
  async next(pred: (e: AcpEvent) => boolean): Promise<AcpEvent>;
  async next(pred: (e: AcpEvent) => boolean): Promise<AcpEvent> {
    for (;;) {
      const i = this.events.findIndex(pred);
      if (i >= 0) return this.events.splice(i, 1)[0]!;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

type Req = Extract<AcpEvent, { type: "request" }>;
const isReq =
  (method: string) =>
  (e: AcpEvent): e is Req =>
    e.type === "request" && e.method === method;

function pair(handler: IncomingHandler, agentOptions?: object, clientOptions?: object) {
  const agent = new AgentPeer(agentOptions);
  const client = new AcpClient(
    new E.AcpConnection("client", clientOptions),
    { write: (b) => agent.deliver(b) },
    handler,
    nullLogger,
    nullTrace,
  );
  agent.client = client;
  return { agent, client };
}

async function initialized(handler: IncomingHandler, clientOptions?: object) {
  const p = pair(handler, undefined, clientOptions);
  const init = p.client.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
  const req = await p.agent.next(isReq("initialize"));
  p.agent.conn.respond(req.token, { protocolVersion: 1 });
  p.agent.pump();
  assert.deepEqual(await init, { protocolVersion: 1 });
  return p;
}

const noHandler: IncomingHandler = {
  handleRequest: async (m) => {
    throw new RequestError(-32601, `no ${m}`);
  },
  handleNotification: () => {},
};

test("engine: request/response round trip and notifications reach the handler", { skip }, async () => {
  const notes: unknown[] = [];
  const { agent, client } = await initialized({ ...noHandler, handleNotification: (m, p) => notes.push([m, p]) });
  const sess = client.request("session/new", { cwd: "/w", mcpServers: [] });
  const r = await agent.next(isReq("session/new"));
  assert.deepEqual(r.params, { cwd: "/w", mcpServers: [] });
  agent.conn.notify("session/update", {
    sessionId: "s",
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
  });
  agent.conn.respond(r.token, { sessionId: "s" });
  agent.pump();
  assert.deepEqual(await sess, { sessionId: "s" });
  assert.deepEqual(notes, [
    ["session/update", { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } }],
  ]);
  client.dispose();
});

test("engine: the handler's answer and its errors go back to the agent", { skip }, async () => {
  const { agent, client } = await initialized({
    handleRequest: async (m, p) => {
      if (m === "fs/read_text_file") return { content: `read ${(p as { path: string }).path}` };
      throw new RequestError(-32002, "not found", { why: "test" });
    },
    handleNotification: () => {},
  });
  const ok = agent.conn.sendRequest("fs/read_text_file", { sessionId: "s", path: "/a" }, performance.now());
  const bad = agent.conn.sendRequest("fs/write_text_file", { sessionId: "s", path: "/b", content: "" }, performance.now());
  agent.pump();
  const r1 = await agent.next((e) => (e.type === "response" || e.type === "requestFailed") && e.requestId === ok);
  assert.deepEqual(r1.type === "response" && r1.result, { content: "read /a" });
  const r2 = await agent.next((e) => (e.type === "response" || e.type === "requestFailed") && e.requestId === bad);
  assert.equal(r2.type, "requestFailed");
  assert.equal(r2.type === "requestFailed" && r2.error.code, -32002);
  client.dispose();
});

/** A permission handler that never answers by itself: it resolves only when its token fires. */
function waitingPermissionHandler(seen: { token?: CancellationToken; started: Promise<void> }): IncomingHandler {
  let started!: () => void;
  seen.started = new Promise((r) => (started = r));
  return {
    handleRequest: (m, _p, token) => {
      seen.token = token;
      started();
      return new Promise((resolve) => token.onCancellationRequested(() => resolve({ outcome: { outcome: "selected", optionId: "late" } })));
    },
    handleNotification: () => {},
  };
}

test("engine: session/cancel answers a pending permission request `cancelled` and fires the token", { skip }, async () => {
  const seen = {} as { token?: CancellationToken; started: Promise<void> };
  const { agent, client } = await initialized(waitingPermissionHandler(seen));
  const id = agent.conn.sendRequest(
    "session/request_permission",
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
    performance.now(),
  );
  agent.pump();
  await seen.started;
  assert.equal(seen.token!.isCancellationRequested, false);
  client.notify("session/cancel", { sessionId: "s" });
  const res = await agent.next((e) => e.type === "response" && e.requestId === id);
  assert.deepEqual(res.type === "response" && res.result, { outcome: { outcome: "cancelled" } });
  assert.equal(seen.token!.isCancellationRequested, true);
  // The handler's late answer is dropped: after one more round trip (which flushes anything the
  // client sent meanwhile), the agent has seen no second answer and no protocol error.
  const ping = client.request("session/new", { cwd: "/", mcpServers: [] });
  const r = await agent.next(isReq("session/new"));
  agent.conn.respond(r.token, { sessionId: "s2" });
  agent.pump();
  await ping;
  assert.deepEqual(
    agent.rest().filter((e) => e.type !== "notification"),
    [],
  );
  assert.equal(client.pendingIncoming, 0);
  client.dispose();
});

test("engine: the permission timeout answers `cancelled`", { skip }, async () => {
  const seen = {} as { token?: CancellationToken; started: Promise<void> };
  const { agent, client } = await initialized(waitingPermissionHandler(seen), { permissionTimeoutMs: 30 });
  const id = agent.conn.sendRequest(
    "session/request_permission",
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
    performance.now(),
  );
  agent.pump();
  const res = await agent.next((e) => e.type === "response" && e.requestId === id);
  assert.deepEqual(res.type === "response" && res.result, { outcome: { outcome: "cancelled" } });
  assert.equal(seen.token!.isCancellationRequested, true);
  client.dispose();
});

test("engine: closing the client (window closing) answers a pending permission request `cancelled`", { skip }, async () => {
  const seen = {} as { token?: CancellationToken; started: Promise<void> };
  const { agent, client } = await initialized(waitingPermissionHandler(seen));
  const id = agent.conn.sendRequest(
    "session/request_permission",
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
    performance.now(),
  );
  agent.pump();
  await seen.started;
  const pending = client.request("session/prompt", { sessionId: "s", prompt: [] });
  client.close("window closing");
  const res = await agent.next((e) => e.type === "response" && e.requestId === id);
  assert.deepEqual(res.type === "response" && res.result, { outcome: { outcome: "cancelled" } });
  assert.equal(seen.token!.isCancellationRequested, true);
  await assert.rejects(pending, (e: unknown) => e instanceof RpcError && e.kind === "closed");
  client.dispose();
});

test("engine: an outgoing request times out; EOF fails what is pending and closes", { skip }, async () => {
  const { client } = await initialized(noHandler);
  await assert.rejects(
    client.request("session/new", { cwd: "/", mcpServers: [] }, 20),
    (e: unknown) => e instanceof RpcError && e.kind === "timeout",
  );
  const pending = client.request("session/prompt", { sessionId: "s", prompt: [] });
  client.receiveEof();
  await assert.rejects(pending, (e: unknown) => e instanceof RpcError && e.kind === "closed");
  assert.equal(typeof (await client.closed), "string");
  assert.equal(client.isClosed, true);
  client.dispose();
});

// ---- a real agent process -------------------------------------------------------------------

const fixture = path.join(extensionRoot, "test", "fixtures", "agent.cjs");

class ChoosingPrompter implements PermissionPrompter {
  models: PermissionPromptModel[] = [];
  constructor(private readonly choice: string | undefined | "never") {}
  prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    this.models.push(model);
    if (this.choice === "never") return new Promise((r) => token.onCancellationRequested(() => r(undefined)));
    return Promise.resolve(this.choice);
  }
}

function setup(choice: string | undefined | "never", env: Record<string, string> = {}) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-agent-")));
  // The updates go where the extension sends them: acp-client's thread model (Conversation).
  const conv = new Conversation(testPolicy().newThread(), () => {});
  const prompter = new ChoosingPrompter(choice);
  const host: DocumentHost = {
    openDocumentText: () => undefined,
    applyWrite: async (p, c) => fs.writeFileSync(p, c),
    workspaceFolders: () => [ws],
  };
  let onPermission: (() => void) | undefined;
  const permissionShown = new Promise<void>((r) => (onPermission = r));
  const origPrompt = prompter.prompt.bind(prompter);
  prompter.prompt = (m, t) => {
    onPermission?.();
    return origPrompt(m, t);
  };
  let running: AgentConnection | undefined;
  const cancelTurn = (sid: string) => running?.cancel(sid);
  const handler = new ClientRouter({
    permission: new PermissionBridge(
      prompter,
      () => ({ autoApprove: false }),
      nullLogger,
      testPolicy(),
      (sid) => cancelTurn(sid),
    ),
    fs: new FsBridge(nodeBridgeFiles, host, () => ({ allowWritesOutsideWorkspace: false }), testPolicy(), undefined, nullLogger),
    onSessionUpdate: (_sessionId, params) => conv.applyUpdate(params),
    log: nullLogger,
  });
  const start = async () =>
    (running = await AgentConnection.start(
      { name: "fixture", command: process.execPath, args: [fixture], env: { ACP_WASM_ENTRY: entry!, ...env }, cwd: ws },
      {
        engine: E,
        transports: nodeTransports,
        engineOptions: {},
        capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
        clientInfo: { name: "test", version: "0" },
        handler,
        log: nullLogger,
        trace: nullTrace,
        onStderr: () => {},
      },
    ));
  /** The agent's messages, as the thread folded them. */
  const text = () =>
    conv
      .saved()
      .entries.map((e) => (e.type === "agent" ? messageSource(e.content) : ""))
      .join("");
  return { ws, conv, prompter, start, text, permissionShown };
}

test("process: prompt, permission allowed, file written through the fs bridge", { skip }, async () => {
  const s = setup("allow");
  const conn = await s.start();
  assert.equal(conn.agentTitle, "fixture-agent 0.0.1");
  const sess = await conn.newSession(s.ws);
  assert.equal(sess.modes?.currentModeId, "ask");
  const res = await conn.prompt(sess.sessionId, [{ type: "text", text: "go" }]);
  assert.deepEqual(res, { stopReason: "end_turn" });
  assert.equal(fs.readFileSync(path.join(s.ws, "out.txt"), "utf8"), "written by fixture\n");
  assert.equal(s.text(), "Hello there (written)");
  const tool = s.conv.saved().entries.find((e) => e.type === "tool");
  assert.ok(tool?.type === "tool");
  assert.equal(tool.status, "completed");
  assert.equal(tool.content[0]?.type, "diff");
  assert.deepEqual(
    s.prompter.models[0]!.items.map((i) => i.optionId),
    ["allow", "deny"],
  );
  const exit = await conn.stop();
  assert.equal(exit.code, 0, "the agent exits by itself when its stdin closes");
});

test("process: permission denied, nothing written", { skip }, async () => {
  const s = setup("deny");
  const conn = await s.start();
  const sess = await conn.newSession(s.ws);
  assert.deepEqual(await conn.prompt(sess.sessionId, [{ type: "text", text: "go" }]), { stopReason: "end_turn" });
  assert.equal(fs.existsSync(path.join(s.ws, "out.txt")), false);
  assert.equal(s.text(), "Hello there (denied)");
  assert.equal(
    s.conv.saved().entries.find((e) => e.type === "tool")?.type === "tool" &&
      (s.conv.saved().entries.find((e) => e.type === "tool") as { status: string }).status,
    "failed",
  );
  await conn.stop();
});

test("process: cancel while the permission prompt is open answers it `cancelled`", { skip }, async () => {
  const s = setup("never");
  const conn = await s.start();
  const sess = await conn.newSession(s.ws);
  const turn = conn.prompt(sess.sessionId, [{ type: "text", text: "go" }]);
  await s.permissionShown;
  conn.cancel(sess.sessionId);
  assert.deepEqual(await turn, { stopReason: "cancelled" });
  assert.equal(fs.existsSync(path.join(s.ws, "out.txt")), false);
  await conn.stop();
});

test("process: a missing command fails to start with a clear error", { skip }, async () => {
  const s = setup("allow");
  await assert.rejects(
    AgentConnection.start(
      { name: "ghost", command: "/nonexistent/acp-agent", args: [] },
      {
        engine: E,
        transports: nodeTransports,
        engineOptions: {},
        capabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "t", version: "0" },
        handler: noHandler,
        log: nullLogger,
        trace: nullTrace,
        onStderr: () => {},
      },
    ),
    (e: unknown) => e instanceof AgentStartError && /ENOENT/.test(e.message) && e.exit?.spawnError !== undefined,
  );
  void s;
});

test("process: an agent that dies before initialize reports its exit code and stderr tail", { skip }, async () => {
  const s = setup("allow", { FIXTURE_MODE: "die-before-init" });
  await assert.rejects(s.start(), (e: unknown) => {
    assert.ok(e instanceof AgentStartError);
    assert.match(e.message, /exited with code 3 before initialize/);
    assert.match(e.stderrTail, /boom: bad config/);
    return true;
  });
});

test("process: a crash during a prompt fails the prompt and reports the exit", { skip }, async () => {
  const s = setup("allow", { FIXTURE_MODE: "die-on-prompt" });
  const conn = await s.start();
  const sess = await conn.newSession(s.ws);
  await assert.rejects(
    conn.prompt(sess.sessionId, [{ type: "text", text: "go" }]),
    (e: unknown) => e instanceof RpcError && e.kind === "closed",
  );
  const exit = await conn.exited;
  assert.equal(exit.code, 1);
  assert.match(conn.transport.stderrTail.text(), /dying on prompt/);
  assert.equal(conn.isStopping, false, "an exit nobody asked for: a crash");
  await conn.stop();
});
