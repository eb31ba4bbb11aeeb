// Fault injection through the extension's bridge: AgentConnection + ClientRouter (permission and
// fs bridges) against a scripted misbehaving agent process (plain NDJSON written by hand, no
// engine on its side). Each case ends (no hang: every test has a timeout), says what the user
// sees, and leaves nothing pending. The scenario table is in docs/reliability.md.
import { nodeTransports } from "../../src/platform/nodeTransports";
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FsBridge, type DocumentHost } from "../../src/bridges/fs";
import { nodeBridgeFiles } from "../../src/platform/nodeBridgeFiles";
import { PermissionBridge, type PermissionPromptModel, type PermissionPrompter } from "../../src/bridges/permission";
import { ClientRouter } from "../../src/bridges/router";
import { AgentConnection } from "../../src/protocol/agent";
import type { CancellationToken } from "../../src/protocol/cancellation";
import { RpcError } from "../../src/protocol/client";
import type { EngineModule } from "../../src/protocol/engine";
import { nullLogger, nullTrace } from "../../src/protocol/log";
import type { SessionNotification } from "@agentclientprotocol/sdk";
import { testPolicy, tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();
const E = engine as EngineModule;
const timeout = 30_000;

/** The misbehaving agent; FAULT selects the scenario. */
const AGENT = String.raw`
const mode = process.env.FAULT;
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
const update = (text) => send({ method: "session/update", params: { sessionId: "s-1",
  update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } });
let buf = "";
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
process.stdin.on("end", () => process.exit(0));
function handle(m) {
  if (m.method === "initialize") return send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
  if (m.method === "session/new") return send({ id: m.id, result: { sessionId: "s-1" } });
  if (m.method === "_fault/die") return process.kill(process.pid, "SIGKILL");
  if (m.method !== "session/prompt") return;
  const end = (stopReason) => send({ id: m.id, result: { stopReason } });
  switch (mode) {
    case "garbage":
      process.stdout.write("\u001b[2J\u001b]0;title\u0007 not json at all\n");
      update("fine");
      return end("end_turn");
    case "oversize":
      update("x".repeat(200000));
      update("after");
      return end("end_turn");
    case "unknown-ids-twice":
      send({ id: 999, result: {} });
      send({ id: "nope", error: { code: -32603, message: "stray" } });
      update("still here");
      end("end_turn");
      return end("refusal");
    case "flood":
      for (let n = 0; n < 5000; n++) update("n" + n + " ");
      return end("end_turn");
    case "permission-then-die":
      return send({ id: "p1", method: "session/request_permission", params: { sessionId: "s-1",
        toolCall: { toolCallId: "c1", title: "Write x" },
        options: [{ optionId: "ok", name: "Allow", kind: "allow_once" }] } });
  }
}
`;

class NeverPrompter implements PermissionPrompter {
  shown: PermissionPromptModel[] = [];
  withdrawn = 0;
  private onShown?: () => void;
  readonly opened = new Promise<void>((r) => (this.onShown = r));
  prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    this.shown.push(model);
    this.onShown?.();
    return new Promise((r) =>
      token.onCancellationRequested(() => {
        this.withdrawn++;
        r(undefined);
      }),
    );
  }
}

async function start(mode: string, engineOptions: object = {}) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-faults-")));
  const script = path.join(ws, "fault-agent.cjs");
  fs.writeFileSync(script, AGENT);
  const updates: SessionNotification[] = [];
  const prompter = new NeverPrompter();
  const host: DocumentHost = {
    openDocumentText: () => undefined,
    applyWrite: async (p, c) => fs.writeFileSync(p, c),
    workspaceFolders: () => [ws],
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
    // The router hands over the params' JSON text (what the thread model takes).
    onSessionUpdate: (_sessionId, params) => updates.push(JSON.parse(params as string) as SessionNotification),
    log: nullLogger,
  });
  const conn = await AgentConnection.start(
    { name: "faulty", command: process.execPath, args: [script], env: { FAULT: mode }, cwd: ws },
    {
      engine: E,
      transports: nodeTransports,
      engineOptions,
      capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "test", version: "0" },
      handler,
      log: nullLogger,
      trace: nullTrace,
      onStderr: () => {},
    },
  );
  running = conn;
  const sess = await conn.newSession(ws);
  const texts = () =>
    updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => (u as { content: { text: string } }).content.text);
  return { ws, conn, sess, prompter, texts };
}

const go = [{ type: "text" as const, text: "go" }];

test("non-JSON and escape sequences on stdout are skipped; the turn completes", { skip, timeout }, async () => {
  const s = await start("garbage");
  assert.deepEqual(await s.conn.prompt(s.sess.sessionId, go), { stopReason: "end_turn" });
  assert.deepEqual(s.texts(), ["fine"]);
  await s.conn.stop();
});

test("a line over maxMessageBytes is skipped; the next update and the answer arrive", { skip, timeout }, async () => {
  const s = await start("oversize", { maxMessageBytes: 65536 });
  assert.deepEqual(await s.conn.prompt(s.sess.sessionId, go), { stopReason: "end_turn" });
  assert.deepEqual(s.texts(), ["after"]);
  await s.conn.stop();
});

test("responses with unknown ids are dropped; a second answer does not replace the first", { skip, timeout }, async () => {
  const s = await start("unknown-ids-twice");
  assert.deepEqual(await s.conn.prompt(s.sess.sessionId, go), { stopReason: "end_turn" });
  assert.deepEqual(s.texts(), ["still here"]);
  // The connection still works after both.
  const again = await s.conn.prompt(s.sess.sessionId, go);
  assert.equal(again.stopReason, "end_turn");
  await s.conn.stop();
});

test("a notification flood loses nothing and keeps order", { skip, timeout }, async () => {
  const s = await start("flood");
  assert.deepEqual(await s.conn.prompt(s.sess.sessionId, go), { stopReason: "end_turn" });
  const all = s.texts().join("");
  assert.equal(all, Array.from({ length: 5000 }, (_, n) => `n${n} `).join(""));
  await s.conn.stop();
});

test(
  "the agent killed while a permission prompt is open: the prompt is withdrawn, the turn fails `closed`",
  { skip, timeout },
  async () => {
    const s = await start("permission-then-die");
    const turn = s.conn.prompt(s.sess.sessionId, go);
    await s.prompter.opened;
    // Nobody answers the prompt; the agent dies (SIGKILL) while it is open.
    s.conn.client.notify("_fault/die", {});
    await assert.rejects(turn, (e: unknown) => e instanceof RpcError && e.kind === "closed");
    const exit = await s.conn.exited;
    assert.equal(exit.signal, "SIGKILL");
    assert.equal(s.prompter.shown.length, 1);
    assert.equal(s.prompter.withdrawn, 1, "the open prompt was withdrawn");
  },
);
