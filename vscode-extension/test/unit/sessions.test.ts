// Sessions (issue 11, 21): the saved conversations of a workspace (SessionStore: bounds,
// unreadable files; titles from the session engine), the history list's entries, and
// openSession against a scripted connection: the session engine names the request
// (resume/load/new per the agent's capabilities) and takes the answer, MCP servers from the
// setting through acp-client's selection, sign-in on "auth required", refusals told in the
// engine's words.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { MAX_SESSIONS, SessionStore, entriesFrom } from "../../src/sessions/store";
import { nodeStoreFiles } from "../../src/platform/nodeStoreFiles";
import { keptEnvKey, parseKeptEnv, requiredVars } from "../../src/sessions/authEnv";
import { SessionDecisions, isAuthRequired } from "../../src/sessions/decisions";
import { CannotOpen, openSession, RestartNeeded, type SignIn } from "../../src/sessions/opener";
import { RpcError, type Answer } from "../../src/protocol/client";
import type { AgentConnection } from "../../src/protocol/agent";
import { loadEngine } from "../../src/platform/nodeEngine";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "acp-sessions-"));
}

const saved = (prompt: string, title?: string) =>
  JSON.stringify({ format: 1, title, entries: [{ type: "user", content: [{ type: "text", text: prompt }] }] });
/** A record as the session controller saves it (the title is the session engine's). */
const rec = (sessionId: string, title = "t") => ({ sessionId, agent: "demo", agentTitle: "Demo 1", title });

test("SessionStore saves, lists newest first, survives a new instance and removes", () => {
  const dir = tmpDir();
  let now = 1000;
  const store = new SessionStore(nodeStoreFiles(dir), () => now);
  store.save(rec("a", "first prompt"), saved("first prompt\nmore"));
  now = 2000;
  store.save(rec("b/../../x", "Agent title"), saved("second", "Agent title"));
  const again = new SessionStore(nodeStoreFiles(dir));
  assert.deepEqual(
    again.list().map((r) => [r.sessionId, r.title]),
    [
      ["b/../../x", "Agent title"],
      ["a", "first prompt"],
    ],
  );
  assert.equal(again.thread("a"), saved("first prompt\nmore"));
  // Ids never become paths: every file is inside the directory.
  for (const f of fs.readdirSync(dir)) assert.match(f, /^([0-9a-f]{32}|index)\.json$/);
  again.remove("a");
  assert.equal(new SessionStore(nodeStoreFiles(dir)).find("a"), undefined);
  assert.equal(again.thread("a"), undefined);
  assert.equal(again.problems.length, 1);
});

test("SessionStore is bounded in count (the least recently updated go)", () => {
  const dir = tmpDir();
  let now = 0;
  const store = new SessionStore(nodeStoreFiles(dir), () => ++now);
  for (let i = 0; i < MAX_SESSIONS + 5; i++) store.save(rec(`s${i}`), saved(`p${i}`));
  const kept = store.list();
  assert.equal(kept.length, MAX_SESSIONS);
  assert.equal(store.find("s0"), undefined);
  assert.ok(store.find(`s${MAX_SESSIONS + 4}`));
  assert.equal(fs.readdirSync(dir).length, MAX_SESSIONS + 1);
});

test("SessionStore: an unreadable index is reported and replaced, never fatal", () => {
  const dir = tmpDir();
  fs.writeFileSync(path.join(dir, "index.json"), "{truncated");
  const store = new SessionStore(nodeStoreFiles(dir));
  assert.deepEqual(store.list(), []);
  assert.match(store.problems[0] ?? "", /unreadable/);
  store.save(rec("x"), saved("hi"));
  assert.equal(new SessionStore(nodeStoreFiles(dir)).list().length, 1);
  fs.writeFileSync(path.join(dir, "index.json"), JSON.stringify({ format: 99, sessions: [] }));
  const other = new SessionStore(nodeStoreFiles(dir));
  assert.deepEqual(other.list(), []);
  assert.match(other.problems[0] ?? "", /format 99/);
});

test("the list title is the session engine's (acp-client's list_title, as `acp sessions` shows it)", { skip }, () => {
  const title = (json: string) => {
    const s = new (loadEngine(extensionRoot).module.Session)(
      JSON.stringify({ open: "new" }),
      "/w",
      JSON.stringify({ shown: JSON.parse(json) }),
    );
    const t = s.title;
    s.free();
    return t;
  };
  assert.equal(title(saved("  \n hello there \nsecond")), "hello there");
  assert.equal(title(saved("x", "From the agent")), "From the agent");
  assert.equal(title(saved("a\u001b[2Jb")), "a\\e[2Jb");
  assert.equal(title(saved("y".repeat(200))).length, 80);
  assert.equal(title(JSON.stringify({ format: 1, entries: [] })), "(no prompt yet)");
});

test("history entries: saved ones plus the agent's own not saved here, newest first", () => {
  const entries = entriesFrom(
    [
      {
        sessionId: "a",
        agent: "demo",
        agentTitle: "Demo",
        title: "saved",
        createdAt: 1,
        updatedAt: Date.parse("2026-01-02T00:00:00Z"),
        bytes: 3,
      },
    ],
    [
      { sessionId: "a", title: "dup", updatedAt: "2026-01-05T00:00:00Z" },
      { sessionId: "b", title: null, updatedAt: "2026-01-03T00:00:00Z" },
      { sessionId: "c", title: "bad date", updatedAt: "yesterday" },
    ],
    { name: "demo", title: "Demo" },
  );
  assert.deepEqual(
    entries.map((e) => [e.sessionId, e.title, e.saved]),
    [
      ["b", "(untitled)", false],
      ["a", "saved", true],
      ["c", "bad date", false],
    ],
  );
});

// ---- decisions and openSession on the real engine ------------------------------------------

function decisions(): SessionDecisions {
  return new SessionDecisions(() => loadEngine(extensionRoot).module);
}

const authError = (method: string) => new RpcError(method, "remote", { code: -32000, message: "Authentication required" });

/** A connection that records what it is asked and answers from `script` (the answer given to
 *  `atAnswer` at once, as AcpClient does at the answer's place in wire order). */
function fakeConn(init: Record<string, unknown>, script: Partial<Record<string, (params: unknown) => unknown>> = {}) {
  const calls: Array<[string, unknown]> = [];
  const call = async (method: string, params: unknown, atAnswer?: (a: Answer) => void) => {
    calls.push([method, params]);
    const f = script[method];
    try {
      const result = f ? f(params) : method === "session/new" ? { sessionId: "new-1" } : null;
      atAnswer?.({ result });
      return result;
    } catch (e) {
      if (e instanceof RpcError) atAnswer?.({ error: e });
      throw e;
    }
  };
  const answer = { protocolVersion: 1, agentInfo: { name: "demo", version: "1" }, ...init };
  const conn = {
    init: answer,
    initJson: JSON.stringify(answer),
    spec: { name: "demo", command: "acp", args: [] },
    open: (open: { send: string; sessionId?: string }, cwd: string, mcpServers: unknown[], atAnswer: (a: Answer) => void) =>
      call(`session/${open.send}`, open.send === "new" ? { cwd, mcpServers } : { sessionId: open.sessionId, cwd, mcpServers }, atAnswer),
    foldInto: () => {},
    authenticate: (methodId: string) => call("authenticate", { methodId }),
  } as unknown as AgentConnection;
  return { conn, calls };
}

/** A session engine for `intent` (in "/w"). */
function engineFor(intent: Record<string, unknown> = { open: "new" }) {
  return new (loadEngine(extensionRoot).module.Session)(JSON.stringify(intent), "/w");
}

/** The saved form of a session's conversation. */
function savedOf(session: ReturnType<typeof engineFor>): string {
  const t = session.thread();
  const json = t.toJson();
  t.free();
  return json;
}

/** The options of an open: the extension's own notices go into the session's conversation. */
function opts(session: ReturnType<typeof engineFor>, more: Record<string, unknown> = {}) {
  return {
    cwd: "/w",
    mcpSetting: {},
    decisions: decisions(),
    notice: (level: "info" | "warning" | "error", text: string) => {
      const t = session.thread();
      t.notice(level, text);
      t.free();
    },
    ...more,
  };
}

const savedConversation = { format: 1, sessionId: "old-1", entries: [{ type: "user", content: [{ type: "text", text: "earlier" }] }] };
const reopenSaved = { open: "continue", sessionId: "old-1", saved: savedConversation, orNew: true };

test("decisions: words and MCP selection come from acp-client", { skip }, () => {
  const d = decisions();
  assert.equal(d.stopWords("end_turn"), "Done");
  assert.equal(
    d.errorWords(new RpcError("session/prompt", "remote", { code: -32603, message: "Internal error" })),
    "session/prompt: the agent ran into an internal error",
  );
  assert.equal(
    d.errorWords(new RpcError("session/prompt", "closed", { code: -32603, message: "closed" })),
    "session/prompt: the connection to the agent closed",
  );
  assert.equal(d.errorWords(new Error("plain")), "plain");
  assert.ok(isAuthRequired(authError("session/new")));
  assert.ok(!isAuthRequired(new RpcError("session/new", "remote", { code: -32603, message: "x" })));
  const sel = d.mcpServers({ files: { command: "srv", args: ["-v"] }, web: { type: "http", url: "https://x/mcp" } }, { http: false });
  assert.deepEqual(sel, {
    servers: [{ name: "files", command: "srv", args: ["-v"], env: [] }],
    leftOut: ["web (http servers are not supported by this agent)"],
  });
  assert.match((d.mcpServers({ bad: { args: [] } }, null) as { error: string }).error, /needs "command"/);
  assert.deepEqual(d.mcpServers(undefined, null), { servers: [], leftOut: [] });
  assert.equal(d.chooseAuth([{ id: "k", type: "env_var", varName: "K" }], ["K"], null).choice, "authenticate");
  assert.equal(d.chooseAuth([{ id: "k", type: "env_var", varName: "K" }], [], null).choice, "needs_user");
});

test("openSession: resume when advertised, with the MCP servers the agent can use", { skip }, async () => {
  const { conn, calls } = fakeConn({
    agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {} }, mcpCapabilities: { http: true } },
  });
  const session = engineFor(reopenSaved);
  const r = await openSession(
    conn,
    session,
    opts(session, {
      mcpSetting: { files: { command: "srv" }, web: { type: "http", url: "https://x/mcp" }, ev: { type: "sse", url: "https://x/sse" } },
    }),
  );
  assert.equal(r.memory, "resumed");
  assert.equal(r.sessionId, "old-1");
  assert.deepEqual(calls, [
    [
      "session/resume",
      {
        sessionId: "old-1",
        cwd: "/w",
        mcpServers: [
          { name: "files", command: "srv", args: [], env: [] },
          { type: "http", name: "web", url: "https://x/mcp", headers: [] },
        ],
      },
    ],
  ]);
  const notices = (JSON.parse(savedOf(session)) as { entries: Array<{ type: string; level?: string; text?: string }> }).entries
    .filter((e) => e.type === "notice")
    .map((e) => `${e.level}: ${e.text}`);
  assert.deepEqual(notices, [
    "warning: MCP server left out: ev (sse servers are not supported by this agent)",
    "info: connected to demo 1; resumed session old-1 in /w",
  ]);
  session.free();
});

test(
  "openSession: a load the agent refuses (it no longer has the session) goes on in a new session, said in the engine's words",
  { skip },
  async () => {
    const { conn, calls } = fakeConn(
      { agentCapabilities: { loadSession: true } },
      {
        "session/load": () => {
          throw new RpcError("session/load", "remote", { code: -32002, message: "Resource not found: unknown session old-1" });
        },
      },
    );
    const session = engineFor(reopenSaved);
    const r = await openSession(conn, session, opts(session));
    assert.deepEqual(
      calls.map((c) => c[0]),
      ["session/load", "session/new"],
    );
    assert.equal(r.sessionId, "new-1");
    assert.equal(r.memory, "lost");
    const text = savedOf(session);
    assert.match(text, /demo 1 does not have session old-1 \(any more\): a new session goes on here, and the agent does not remember/);
    session.free();
  },
);

test('openSession: a reopen the agent cannot honour (it loads, replays nothing) is told truthfully: not "loaded"', { skip }, async () => {
  const { conn } = fakeConn({ agentCapabilities: { loadSession: true } }, { "session/load": () => null });
  const session = engineFor(reopenSaved);
  const r = await openSession(conn, session, opts(session));
  assert.equal(r.memory, "lost");
  assert.match(r.notices[0]!.text, /did not restore the conversation of session old-1 \(it replayed nothing\)/);
  assert.doesNotMatch(savedOf(session), /loaded session/);
  session.free();
});

test(
  "openSession: an agent that cannot reopen: the saved conversation goes on in a new session, or the engine says why not",
  { skip },
  async () => {
    const { conn, calls } = fakeConn({ agentCapabilities: {} });
    const session = engineFor(reopenSaved);
    const r = await openSession(conn, session, opts(session));
    assert.deepEqual(
      calls.map((c) => c[0]),
      ["session/new"],
    );
    assert.equal(r.memory, "lost");
    assert.match(r.notices[0]!.text, /the conversation above is the copy saved here; the agent does not remember it/);
    session.free();
    // Without orNew (a history entry), nothing is sent: the engine's words say why.
    const strict = engineFor({ ...reopenSaved, orNew: false });
    await assert.rejects(
      openSession(fakeConn({ agentCapabilities: {} }).conn, strict, opts(strict)),
      (e: unknown) => e instanceof CannotOpen && /demo 1: it can neither resume nor load sessions/.test(e.message),
    );
    strict.free();
  },
);

test("openSession: auth required -> sign-in, then the request again once; restart and cancel end it", { skip }, async () => {
  let failures = 1;
  const script = {
    "session/new": () => {
      if (failures-- > 0) throw authError("session/new");
      return { sessionId: "s-auth" };
    },
  };
  const signIns: string[] = [];
  const signIn = (outcome: "authenticated" | "restart" | "cancelled"): SignIn => ({
    signIn: async () => {
      signIns.push(outcome);
      return outcome;
    },
  });
  const open = (conn: AgentConnection, s?: SignIn) => {
    const session = engineFor();
    return openSession(conn, session, opts(session, { signIn: s }));
  };
  const ok = fakeConn({}, script);
  const r = await open(ok.conn, signIn("authenticated"));
  assert.equal(r.sessionId, "s-auth");
  assert.equal(r.memory, "fresh");
  assert.deepEqual(
    ok.calls.map((c) => c[0]),
    ["session/new", "session/new"],
  );

  failures = 1;
  await assert.rejects(open(fakeConn({}, script).conn, signIn("restart")), RestartNeeded);
  failures = 1;
  await assert.rejects(open(fakeConn({}, script).conn, signIn("cancelled")), (e: unknown) => isAuthRequired(e));
  // Still refused after signing in: not asked twice; the engine says the agent refused.
  failures = 5;
  await assert.rejects(
    open(fakeConn({}, script).conn, signIn("authenticated")),
    (e: unknown) => e instanceof CannotOpen && /refused session\/new: Authentication required \(-32000\)/.test(e.message),
  );
  assert.deepEqual(signIns, ["authenticated", "restart", "cancelled", "authenticated"]);
  // Without sign-in, the refusal is the engine's to tell.
  failures = 1;
  await assert.rejects(open(fakeConn({}, script).conn), CannotOpen);
});

test("an unreadable MCP setting is an error notice and no server is sent", { skip }, async () => {
  const { conn, calls } = fakeConn({});
  const session = engineFor();
  await openSession(conn, session, opts(session, { mcpSetting: { x: { type: "ftp" } } }));
  assert.deepEqual(calls, [["session/new", { cwd: "/w", mcpServers: [] }]]);
  const first = (JSON.parse(savedOf(session)) as { entries: Array<{ level?: string; text?: string }> }).entries[0]!;
  assert.equal(first.level, "error");
  assert.match(first.text ?? "", /^acp.mcpServers: server `x`: unknown type `ftp`/);
  session.free();
});

test("a saved thread goes back into a Thread (the form the store keeps)", { skip }, () => {
  const t = testPolicy().newThread();
  t.beginTurn(JSON.stringify([{ type: "text", text: "hello" }]));
  t.endTurn("end_turn");
  const json = t.toJson();
  t.free();
  const back = loadEngine(extensionRoot).module.Thread.fromJson(json);
  assert.equal(back.toJson(), json);
  back.free();
});

test("a session of the agent's own list (not saved here) is loaded and its replay is the conversation", { skip }, async () => {
  const { conn, calls } = fakeConn({ agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {} } } });
  // Not saved here: refused unless tried with the agent, which has it.
  assert.throws(
    () => engineFor({ open: "continue", sessionId: "agent-only" }),
    (e: unknown) => (e as Error).name === "SessionRefused",
  );
  const session = engineFor({ open: "continue", sessionId: "agent-only", tryUnknown: true });
  await openSession(conn, session, opts(session));
  assert.deepEqual(
    calls.map((c) => c[0]),
    ["session/load"],
  );
  session.free();
});

test("sign-in's kept variables: required ones per method, one key per agent, unreadable text is nothing", () => {
  assert.deepEqual(requiredVars({ id: "a", type: "env_var", varName: "TOKEN" }), ["TOKEN"]);
  assert.deepEqual(
    requiredVars({
      id: "b",
      type: "env_var",
      vars: [{ name: "KEY" }, { name: "REGION", optional: true }],
    }),
    ["KEY"],
  );
  assert.deepEqual(requiredVars({ id: "c" }), []);
  assert.notEqual(keptEnvKey("agent one"), keptEnvKey("agent two"));
  assert.deepEqual(parseKeptEnv('{"TOKEN":"x","EMPTY":"","N":3}'), { TOKEN: "x" });
  assert.deepEqual(parseKeptEnv("{broken"), {});
  assert.deepEqual(parseKeptEnv("[1]"), {});
  assert.deepEqual(parseKeptEnv(undefined), {});
});
