// acp-client's session engine driven as the session controller drives it, against a real agent
// process (test/fixtures/agent.cjs) over the real connection: the engine names the open request
// (sessions/opener.ts), the connection folds every session/update into it inside wasm
// (AcpClient.foldInto, acp-wasm's pollEventsFor) and feeds it the open request's answer at its
// place in wire order, and what the user is told is the engine's. The three truths of issue 21:
// a reload whose replay is folded is not shown twice, a reopen the agent cannot honour is said
// so, and after a crash with an agent that keeps nothing the user is told the conversation is
// lost.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { SavedThread, SessionAfterEnd, ThreadDelta, ThreadEntry } from "acp-wasm-client";
import { Conversation } from "../../src/bridges/conversation";
import { PermissionBridge } from "../../src/bridges/permission";
import { ClientRouter } from "../../src/bridges/router";
import { AgentConnection, describeExit } from "../../src/protocol/agent";
import { loadEngine } from "../../src/platform/nodeEngine";
import { nullLogger } from "../../src/protocol/log";
import { SessionDecisions } from "../../src/sessions/decisions";
import { openSession } from "../../src/sessions/opener";
import { ThreadModel, messageSource } from "../../src/webview/threadModel";
import { extensionRoot, startOptions, testPolicy, tryEngine } from "./engine-helpers";

const { skip, entry } = tryEngine();
const fixture = path.join(extensionRoot, "test", "fixtures", "agent.cjs");
const engine = () => loadEngine(extensionRoot).module;
const decisions = () => new SessionDecisions(engine);

/** The chat's side, as the session controller shows it: a view started from the engine's
 *  conversation (`reset` with its saved form), then its deltas. */
function shown(session: InstanceType<ReturnType<typeof engine>["Session"]>) {
  const view = new ThreadModel();
  const thread = session.thread();
  const conv = new Conversation(
    thread,
    (json) => view.apply(JSON.parse(json) as ThreadDelta),
    undefined,
    undefined,
    undefined,
    (json) => session.update(json),
  );
  conv.discardChanges();
  view.reset(JSON.parse(thread.toJson()) as SavedThread);
  return { conv, view, thread };
}

const notice = () => {};

/** Starts the fixture agent (FIXTURE_* variables in `env`); session/updates that reach the handler
 *  (none should: they are folded inside wasm) are counted. */
async function start(env: Record<string, string>, cwd: string) {
  const handled: unknown[] = [];
  const handler = new ClientRouter({
    permission: new PermissionBridge(
      { prompt: async () => "allow" },
      () => ({ autoApprove: false }),
      nullLogger,
      testPolicy(),
      () => {},
    ),
    onSessionUpdate: (_sid, params) => handled.push(params),
    log: nullLogger,
  });
  const conn = await AgentConnection.start(
    { name: "fixture", command: process.execPath, args: [fixture], env: { ACP_WASM_ENTRY: entry!, ...env }, cwd },
    startOptions(engine(), handler),
  );
  return { conn, handled };
}

const entries = (view: ThreadModel) => [...view.entries.values()];
const line = (e: ThreadEntry) =>
  e.type === "notice" ? `${e.level}: ${e.text}` : e.type === "tool" ? `tool ${e.status}` : `${e.type}: ${messageSource(e.content)}`;

const savedConversation = JSON.stringify({
  format: 1,
  sessionId: "sess-1",
  entries: [
    { type: "user", content: [{ type: "text", text: "hi" }] },
    { type: "agent", content: [{ type: "text", text: "Hello there" }] },
  ],
});
const reload = (ws: string) =>
  new (engine().Session)(`{"open":"continue","sessionId":"sess-1","orNew":true,"saved":${savedConversation}}`, ws);

test(
  "a reload: the agent's replay of the conversation shown is folded inside wasm, not shown twice; what follows its answer is shown",
  { skip },
  async () => {
    const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-engine-")));
    const session = reload(ws);
    const { conv, view, thread } = shown(session);
    const { conn, handled } = await start({ FIXTURE_LOAD: "replay" }, ws);
    try {
      // The chunk the agent sent right after its answer (in the same write) is the conversation:
      // awaited until the connection has folded it.
      let afterLoad!: () => void;
      const folded = new Promise<void>((resolve) => (afterLoad = resolve));
      const opened = await openSession(conn, session, {
        cwd: ws,
        mcpSetting: {},
        decisions: decisions(),
        onFolded: () => {
          conv.changed();
          if (thread.toJson().includes("(after the load)")) afterLoad();
        },
        notice,
      });
      assert.equal(opened.memory, "replayed");
      await folded;
      conv.flush();
      assert.deepEqual(entries(view).map(line), [
        "user: hi",
        "agent: Hello there",
        `info: fixture-agent 0.0.1: session sess-1 reloaded: 4 replayed update(s) not shown again (the conversation is above)`,
        "agent: (after the load)",
      ]);
      assert.deepEqual(
        (JSON.parse(thread.toJson()) as { commands: Array<{ name: string }> }).commands.map((c) => c.name),
        ["review"],
        "the replay's session state is kept",
      );
      assert.equal(handled.length, 0, "no session/update crossed into JavaScript");
    } finally {
      await conn.stop(1000);
      conv.dispose();
      session.free();
    }
  },
);

test('a reopen the agent cannot honour (it loads the id but replays nothing) is told truthfully, never "loaded"', { skip }, async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-engine-")));
  const session = reload(ws);
  const { conv, view } = shown(session);
  const { conn } = await start({ FIXTURE_LOAD: "nothing" }, ws);
  try {
    const opened = await openSession(conn, session, { cwd: ws, mcpSetting: {}, decisions: decisions(), notice });
    assert.equal(opened.memory, "lost");
    conv.flush();
    const told = entries(view).map(line);
    assert.deepEqual(told.slice(0, 2), ["user: hi", "agent: Hello there"]);
    assert.match(told[2]!, /^warning: fixture-agent 0\.0\.1 did not restore the conversation of session sess-1 \(it replayed nothing\)/);
    assert.ok(!told.some((t) => /loaded|reloaded/.test(t)), told.join("\n"));
  } finally {
    await conn.stop(1000);
    conv.dispose();
    session.free();
  }
});

test(
  "a crash with an agent that keeps nothing: the turn fails, the agent is restarted, and the user is told the conversation is lost to it",
  { skip },
  async () => {
    const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-engine-")));
    const session = new (engine().Session)('{"open":"new"}', ws);
    const { conv, view } = shown(session);
    const first = await start({ FIXTURE_MODE: "die-on-prompt" }, ws);
    const opened = await openSession(first.conn, session, {
      cwd: ws,
      mcpSetting: {},
      decisions: decisions(),
      onFolded: () => conv.changed(),
      notice,
    });
    assert.equal(opened.memory, "fresh");
    conv.beginTurn([{ type: "text", text: "remember the walrus" }]);
    await assert.rejects(first.conn.prompt(opened.sessionId, [{ type: "text", text: "remember the walrus" }]));
    const exit = await first.conn.exited;
    // What the lifecycle does when the agent ends by itself: the engine decides and tells.
    const after = JSON.parse(session.agentEnded(performance.now(), describeExit(exit))) as SessionAfterEnd;
    conv.turnOver();
    assert.equal(after.next, "restart");
    const second = await start({}, ws);
    try {
      const again = await openSession(second.conn, session, { cwd: ws, mcpSetting: {}, decisions: decisions(), notice });
      assert.equal(again.memory, "lost");
      assert.equal(again.sessionId, "sess-1");
      conv.flush();
      const told = entries(view).map(line);
      assert.deepEqual(told.slice(0, 3), [
        "info: connected to fixture-agent 0.0.1; session sess-1 in " + ws,
        "user: remember the walrus",
        "error: exited with code 1",
      ]);
      assert.match(
        told[3]!,
        /^warning: fixture-agent 0\.0\.1 ended \(exited with code 1\); restarting it in 500 milliseconds \(restart 1\)$/,
      );
      assert.match(
        told[4]!,
        /^warning: fixture-agent 0\.0\.1 restarted without the conversation above \(it can neither resume nor load sessions\): a new session sess-1 goes on here, and the agent does not remember what is above$/,
      );
    } finally {
      await second.conn.stop(1000);
      conv.dispose();
      session.free();
    }
  },
);
