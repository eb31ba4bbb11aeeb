// The client's decisions (acp-client) through the built client flavour (pkg/nodejs-client):
// every row of every case table in tests/client/*.json is replayed here, with exactly the
// expectations acp-client/tests/cases.rs replays them with natively (a table without a replay
// fails the suite), plus the argument checks (a TypeError naming the argument) and the words
// that go with the decisions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { client as acp, clientV2, pkgDir, throwsNamed } from "./helpers.mjs";

const tablesDir = process.env.ACP_CLIENT_CASES_DIR ??
  join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "client");

function table(file) {
  const cases = JSON.parse(readFileSync(join(tablesDir, file), "utf8")).cases;
  assert.ok(Array.isArray(cases) && cases.length > 0, `${file} has cases`);
  return cases;
}

/** JSON text as serde_json writes a `Value` (what cases.rs feeds): compact, keys sorted. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

/** Replays one permission row: `on` is {auto}, "dismissed", "unanswerable" or {typed}. */
function permission(c) {
  const options = JSON.stringify(c.options);
  if (c.on && typeof c.on === "object" && "auto" in c.on) return acp.decidePermission(options, c.on.auto);
  if (c.on && typeof c.on === "object" && "typed" in c.on) return acp.chosenPermission(options, c.on.typed);
  if (c.on === "dismissed") return acp.dismissedPermission(options);
  if (c.on === "unanswerable") return acp.unanswerablePermission();
  throw new Error(`unknown "on" in ${JSON.stringify(c.name)}: ${JSON.stringify(c.on)}`);
}

/** Replays one thread row as cases.rs does: `applied` per step, then the saved form (which
 *  must read back to the same text). */
function thread(c) {
  const t = new acp.Thread();
  try {
    const applied = c.steps.map((step) => {
      if ("update" in step) {
        try {
          return JSON.parse(t.applyUpdate(canonical(step.update)));
        } catch (e) {
          if (!(e instanceof Error) || e instanceof WebAssembly.RuntimeError) throw e;
          return { error: e.message.startsWith("unreadable session/update") };
        }
      }
      if ("beginTurn" in step) return { entry: t.beginTurn(canonical(step.beginTurn)) };
      if ("endTurn" in step) return t.endTurn(step.endTurn) ?? null;
      if ("failTurn" in step) return t.failTurn(step.failTurn) ?? null;
      throw new Error(`unknown step in ${JSON.stringify(c.name)}: ${JSON.stringify(step)}`);
    });
    const saved = t.toJson();
    const back = acp.Thread.fromJson(saved);
    try {
      assert.equal(back.toJson(), saved, `thread.json: ${c.name}: the saved form reads back`);
    } finally {
      back.free();
    }
    return { applied, thread: JSON.parse(saved) };
  } finally {
    t.free();
  }
}

/** Replays one session row as cases.rs does: what each step answered, then the session's id,
 *  whether it is open and its list title; `{refused}` when the intent is refused. The
 *  `update` steps go through `update` (the routing and what it did); each row is replayed
 *  again with its updates arriving on a connection, folded inside wasm by
 *  `AcpConnection.pollEventsFor`, which must leave the same conversation. */
function session(c, lib = acp) {
  const run = (fold) => {
    const conn = new lib.AcpConnection("client");
    let s;
    try {
      s = new lib.Session(canonical(c.intent), "/p", c.policy ? JSON.stringify({ policy: c.policy }) : undefined);
    } catch (e) {
      conn.free();
      if (!(e instanceof Error) || e.name !== "SessionRefused") throw e;
      return { refused: e.message };
    }
    const error = (f) => {
      try {
        return f();
      } catch (e) {
        if (!(e instanceof Error) || e instanceof WebAssembly.RuntimeError) throw e;
        return { error: e.message };
      }
    };
    const thread = s.thread();
    try {
      const steps = c.steps.map((step) => {
        const [kind, input] = Object.entries(step)[0];
        switch (kind) {
          case "initialized":
            return error(() => JSON.parse(s.initialized(canonical(input))));
          case "update":
            if (fold) {
              conn.feedString(`{"jsonrpc":"2.0","method":"session/update","params":${canonical(input)}}\n`, 0);
              // An update the session cannot read comes back as its notification event.
              const events = conn.pollEventsFor(s);
              return events.length ? { error: "returned" } : null;
            }
            return error(() => JSON.parse(s.update(canonical(input))));
          case "opened":
            return error(() => JSON.parse(s.opened(canonical(input))));
          case "openFailed":
            return JSON.parse(s.openFailed(input.code, input.message));
          case "agentEnded":
            return JSON.parse(s.agentEnded(input.atMs, input.why));
          case "beginTurn":
            return thread.beginTurn(JSON.stringify([{ type: "text", text: input }]));
          case "endTurn":
            return thread.endTurn(input) ?? null;
          // session_v2.json's, through the client-v2 build (ACP v2).
          case "promptAnswered":
            return error(() => ({ stopReason: s.promptAnswered(canonical(input)) ?? null }));
          case "turnEnded":
            return { stopReason: s.turnEnded ?? null };
          default:
            throw new Error(`unknown step in ${JSON.stringify(c.name)}: ${kind}`);
        }
      });
      return { steps, sessionId: s.sessionId ?? null, open: s.isOpen, title: s.title, thread: thread.toJson() };
    } finally {
      thread.free();
      s.free();
      conn.free();
    }
  };
  const told = run(false);
  if ("refused" in told) return told;
  const quiet = run(true);
  assert.equal(quiet.thread, told.thread, `session.json: ${c.name}: foldUpdate keeps the same conversation`);
  const { thread: _, ...rest } = told;
  return rest;
}

/** A question.json row with its generators expanded (as cases.rs does): `{"$lines": {text,
 *  count}}` is the text `T1\n…TN\n`, `{"$repeat": S, times}` S repeated, and in an array
 *  `{"$each": {text, from, count}}` the strings `T<from>`…. */
export function expand(v) {
  if (Array.isArray(v)) {
    return v.flatMap((x) =>
      x !== null && typeof x === "object" && "$each" in x
        ? Array.from({ length: x.$each.count }, (_, i) => `${x.$each.text}${x.$each.from + i}`)
        : [expand(x)]);
  }
  if (v !== null && typeof v === "object") {
    if ("$lines" in v) return Array.from({ length: v.$lines.count }, (_, i) => `${v.$lines.text}${i + 1}\n`).join("");
    if ("$repeat" in v) return v.$repeat.repeat(v.times);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x)]));
  }
  return v;
}

/** Replays one question row: the agent's request (with what the conversation knows), a
 *  sensitive write, or a command. A command's question is not exported as such (the
 *  extension's terminal modal shows terminalQuestion, terminal.json, with its own Run button):
 *  its title, command line and warnings are checked against terminalQuestion's, its kind and
 *  options (acp chat's "Run it" / "Do not run it") are taken from the row. */
function questionRow(c) {
  const row = expand(c);
  if ("request" in row) {
    return JSON.parse(acp.permissionQuestion(JSON.stringify(row.request), row.known === undefined ? null : JSON.stringify(row.known)));
  }
  if ("write" in row) {
    const w = row.write;
    return JSON.parse(acp.writeQuestion(w.path, w.askedPath ?? null, w.reason, w.exists, w.executable, w.oldText, w.newText));
  }
  if ("command" in row) {
    const { question: q } = acp.terminalQuestion(JSON.stringify(row.command.request), JSON.stringify(row.command.userEnv));
    assert.ok(q, `${c.name}: terminalQuestion asks`);
    return { ...row.expect, title: q.title, command: q.commandLine, detail: q.warnings.map((w) => `⚠ ${w}`) };
  }
  throw new Error(`question.json: ${c.name}: a row has request, write or command`);
}

const REPLAYS = {
  "question.json": (c) => questionRow(c),
  "hunks.json": (c) => ({ hunks: JSON.parse(acp.editHunks(c.old, c.new)), text: acp.selectHunks(c.old, c.new, new Uint32Array(c.take)) }),
  "session.json": session,
  // ACP v2's session engine through the client-v2 test build, when built (scripts/test-wasm.sh
  // builds it and makes it required).
  ...(clientV2 ? { "session_v2.json": (c) => session(c, clientV2) } : {}),
  "permission.json": permission,
  "writes.json": (c) => acp.classifyWrite(c.path, JSON.stringify(c.facts), JSON.stringify(c.ownDirs ?? [])),
  "terminal.json": (c) => acp.terminalQuestion(JSON.stringify(c.request), JSON.stringify(c.userEnv)),
  "auth.json": (c) => JSON.parse(acp.chooseAuth(JSON.stringify(c.methods), JSON.stringify(c.env), c.requested)),
  "errors.json": (c) => JSON.parse(acp.failureError(c.failure)),
  "thread.json": thread,
  "prompt.json": (c) => JSON.parse(acp.attachToPrompt(JSON.stringify(c.caps), JSON.stringify(c.attachment))),
  "mcp.json": mcp,
  "http_routing.json": httpRouting,
  "remote.json": (c) => {
    const refused = acp.checkTokenTransport(c.scheme, c.authority, c.host, c.allowInsecure, "the switch");
    return refused === undefined ? { ok: true } : { refused };
  },
  "windows.json": windows,
  "edits.json": edits,
};

/** One undo row as cases.rs replays it: the writes into an EditRecord, then its UndoStep (with
 *  the refusal's words). Each row is also decided by undoStep from the file's own texts (what
 *  the extension's review calls), which must agree wherever the record kept the texts. */
function edits(c) {
  const r = new acp.EditRecord();
  try {
    for (const w of c.writes) r.record(w.path, JSON.stringify(w.before), w.after);
    const step = r.undo(c.undo.path, c.undo.now, c.undo.force);
    const file = r.files().find((f) => f.path === c.undo.path);
    if (file && file.before && file.before.kind !== "unreadable") {
      const before = file.before.kind === "text" ? file.before.text : null;
      assert.deepEqual(acp.undoStep(before, file.after, c.undo.now, c.undo.force), step, `edits.json: ${c.name}: undoStep agrees`);
    }
    return step.undo === "refuse" ? { ...step, message: acp.describeUndoRefusal(step.reason, c.undo.path) } : step;
  } finally {
    r.free();
  }
}

/** One row of starting a program on Windows (acp_client::windows): `find` (a case-insensitive
 *  file system holding `files`), `plan` or `contains`. */
function windows(c) {
  if (c.find) {
    const files = new Set(c.find.files.map((f) => f.toLowerCase()));
    return acp.windowsFindProgram(c.find.command, c.find.path, c.find.pathext ?? undefined,
      (candidate) => files.has(candidate.toLowerCase())) ?? null;
  }
  if (c.plan) return JSON.parse(acp.windowsPlanSpawn(JSON.stringify(c.plan.facts), JSON.stringify(c.plan.args)));
  return acp.windowsContains(c.contains.root, c.contains.path);
}

/** One row of the HTTP transport's routing (acp_core::http_sse): a message the client sends
 *  (`send`: method, id, session) or a response it receives (`receive`: id, session). */
function httpRouting(c) {
  const got = "send" in c ? acp.httpOutgoing(c.send) : acp.httpAnswer(c.receive);
  return got === undefined ? null : JSON.parse(got);
}

/** mcpServers answers `leftOut` (camelCase, as the extension reads it) where the table's
 *  `expect` has acp-client's `left_out`; `error_starts` rows check the message's start. */
function mcp(c) {
  const got = JSON.parse(acp.mcpServers(JSON.stringify(c.config), JSON.stringify(c.caps ?? null)));
  if (c.expect.error_starts !== undefined) return got.error?.startsWith(c.expect.error_starts) ? c.expect : got;
  return "servers" in got ? { servers: got.servers, left_out: got.leftOut } : got;
}

for (const [file, replay] of Object.entries(REPLAYS)) {
  test(`tests/client/${file}: every row, through the wasm build`, () => {
    const cases = table(file);
    for (const c of cases) {
      assert.deepEqual(replay(c), file === "question.json" ? expand(c.expect) : c.expect, `${file}: ${c.name}`);
    }
  });
}

// Tables of acp-client modules this package does not export yet, each with why. Any other table
// without a replay fails the suite: a new table is replayed here, or named here, never skipped
// silently.
const NOT_EXPORTED = {
  "restart.json": "acp_client::restart (the crash budget) is the session engine's: Session.agentEnded decides restarts, and session.json's rows replay it with their policies",
  "registry.json": "acp_client::registry (agents by name) is exported as agentPresets only: registry.test.mjs, and the extension's cases.test.ts replays the rows about one agent",
  // Replayed above when the client-v2 test build is there.
  ...(clientV2 ? {} : { "session_v2.json": "ACP v2 in the session engine: the client-v2 test build (pkg/nodejs-client-v2) is not built; scripts/test-wasm.sh builds it" }),
};

test("every case table in tests/client is replayed here (or named as not exported)", (t) => {
  const tables = readdirSync(tablesDir).filter((f) => f.endsWith(".json"));
  assert.deepEqual(tables.filter((f) => !(f in REPLAYS) && !(f in NOT_EXPORTED)), [],
    "tables without a replay through the wasm build (replay them, or name them in NOT_EXPORTED)");
  for (const f of Object.keys(REPLAYS)) assert.ok(tables.includes(f), `${f} exists`);
  for (const [f, why] of Object.entries(NOT_EXPORTED)) {
    assert.ok(!(f in REPLAYS), `${f} is replayed: remove it from NOT_EXPORTED`);
    if (tables.includes(f)) t.diagnostic(`not replayed here (no export): ${f}: ${why}`);
  }
});

test("decisions are plain objects (no wasm handles) and the mode picks the answer", () => {
  const options = JSON.stringify([
    { optionId: "always", name: "Always", kind: "allow_always" },
    { optionId: "once", name: "Once", kind: "allow_once" },
    { optionId: "no", name: "No", kind: "reject_once" },
  ]);
  const d = acp.decidePermission(options, "allow_once");
  assert.equal(Object.getPrototypeOf(d), Object.prototype);
  assert.deepEqual(d, { answer: "select", optionId: "once", kind: "allow_once" });
  assert.deepEqual(acp.decidePermission(options, "deny"), { answer: "select", optionId: "no", kind: "reject_once" });
  assert.deepEqual(acp.decidePermission("[]", "ask"), { answer: "cancelled", reason: "no_options" });
  // Fields the decision does not need are ignored; a missing name is allowed.
  assert.deepEqual(acp.dismissedPermission('[{"optionId":"r","kind":"reject_once","_meta":{"x":1}}]'),
    { answer: "select", optionId: "r", kind: "reject_once" });
});

test("wrong arguments are a TypeError naming the argument", () => {
  const opts = '[{"optionId":"a","name":"A","kind":"allow_once"}]';
  const cases = [
    ["optionsJson", () => acp.decidePermission([], "ask")],
    ["optionsJson", () => acp.decidePermission("{}", "ask")],
    ["optionsJson", () => acp.decidePermission("[", "ask")],
    ["optionsJson", () => acp.decidePermission('[{"optionId":1,"kind":"allow_once"}]', "ask")],
    ["optionsJson", () => acp.decidePermission('[{"optionId":"a"}]', "ask")],
    ["optionsJson", () => acp.decidePermission('[{"optionId":"a","kind":"allow_once","name":7}]', "ask")],
    ["optionsJson", () => acp.dismissedPermission(undefined)],
    ["optionsJson", () => acp.chosenPermission(null, "1")],
    ["mode", () => acp.decidePermission(opts, "yes")],
    ["mode", () => acp.decidePermission(opts, "AllowOnce")],
    ["mode", () => acp.decidePermission(opts, 1)],
    ["typed", () => acp.chosenPermission(opts, 1)],
    ["path", () => acp.classifyWrite(42, "{}", "[]")],
    ["factsJson", () => acp.classifyWrite("/a", { exists: true }, "[]")],
    ["factsJson", () => acp.classifyWrite("/a", "[]", "[]")],
    ["factsJson", () => acp.classifyWrite("/a", '{"executable":"yes"}', "[]")],
    ["ownDirsJson", () => acp.classifyWrite("/a", "{}")],
    ["ownDirsJson", () => acp.classifyWrite("/a", "{}", '{"dirs":[]}')],
    ["ownDirsJson", () => acp.classifyWrite("/a", "{}", "[1]")],
    ["requestJson", () => acp.terminalQuestion('{"args":[]}', "{}")],
    ["requestJson", () => acp.terminalQuestion('{"command":"ls","args":[1]}', "{}")],
    ["requestJson", () => acp.terminalQuestion('{"command":"ls","env":[{"name":"A"}]}', "{}")],
    ["requestJson", () => acp.terminalQuestion('{"command":"ls","cwd":5}', "{}")],
    ["requestJson", () => acp.terminalQuestion({ command: "ls" }, "{}")],
    ["userEnvJson", () => acp.terminalQuestion('{"command":"ls"}', '{"PATH":1}')],
    ["userEnvJson", () => acp.terminalQuestion('{"command":"ls"}', "[]")],
    ["userEnvJson", () => acp.terminalQuestion('{"command":"ls"}', undefined)],
    ["requestJson", () => acp.terminalInvalidMessage(7)],
    ["reason", () => acp.describeWriteReason("Git")],
    ["reason", () => acp.describeWriteReason(undefined)],
    ["text", () => acp.escapeLine(undefined)],
    ["text", () => acp.escapeLine(["a"])],
    ["paramsJson", () => acp.permissionQuestion("{", null)],
    ["paramsJson", () => acp.permissionQuestion({ toolCall: {} }, null)],
    // A lone surrogate is valid JSON text for JavaScript, not for acp-client (UTF-8).
    ["paramsJson", () => acp.permissionQuestion('{"toolCall":{"title":"\\ud800"}}', null)],
    ["knownJson", () => acp.permissionQuestion("{}", "[")],
    ["path and newText", () => acp.writeQuestion(1, null, "git", true, false, null, "x")],
    ["path and newText", () => acp.writeQuestion("/w/.git/config", null, "git", true, false, null, undefined)],
    ["reason", () => acp.writeQuestion("/w/.git/config", null, "Git", true, false, null, "x")],
    ["oldText and newText", () => acp.editHunks(null, "x")],
    ["oldText and newText", () => acp.selectHunks("a", 2, new Uint32Array([0]))],
    ["before", () => acp.undoStep(1, "x", null, false)],
    ["after", () => acp.undoStep(null, undefined, null, false)],
    ["now", () => acp.undoStep(null, "x", 3, false)],
    ["reason", () => acp.describeUndoRefusal("gone", "/w/a")],
    ["path", () => acp.describeUndoRefusal("unknown", 1)],
    ["beforeJson", () => withRecord((r) => r.record("/w/a", '{"kind":"text"}', "x"))],
    ["beforeJson", () => withRecord((r) => r.record("/w/a", "{", "x"))],
    ["path", () => withRecord((r) => r.undo(undefined, null, false))],
  ];
  for (const [what, call] of cases) {
    const e = throwsNamed(assert, call, "TypeError");
    assert.match(e.message, new RegExp(`^${what} must be`), `${call}: ${e.message}`);
  }
});

function withRecord(f) {
  const r = new acp.EditRecord();
  try {
    return f(r);
  } finally {
    r.free();
  }
}

test("the edit record keeps its texts within acp-client's budget and forgets kept files", () => {
  assert.equal(acp.editRecordBudget(), 64 * 1024 * 1024);
  withRecord((r) => {
    r.record("/w/a", JSON.stringify({ kind: "text", text: "one\n" }), "two\n");
    r.record("/w/b", JSON.stringify({ kind: "missing" }), "b\n");
    assert.equal(r.bytes, 10);
    assert.deepEqual(r.files().map((f) => [f.path, f.writes]), [["/w/a", 1], ["/w/b", 1]]);
    assert.equal(r.keep("/w/a"), true);
    assert.equal(r.keep("/w/a"), false);
    assert.equal(r.bytes, 2);
    r.keepAll();
    assert.deepEqual(r.files(), []);
  });
});

test("the words that go with a decision are one line each", () => {
  for (const reason of ["git", "editor", "shell", "environment", "tool", "executable", "client_files", "agent_config"]) {
    const why = acp.describeWriteReason(reason);
    assert.ok(why.length > 10 && !why.includes("\n"), `${reason}: ${why}`);
  }
  assert.match(acp.describeWriteReason("git"), /core\.fsmonitor/);
  for (const c of table("terminal.json")) {
    const message = acp.terminalInvalidMessage(JSON.stringify(c.request));
    if (c.expect.invalid) {
      assert.equal(typeof message, "string", c.name);
      assert.ok(message.length > 0 && !/[\n\r]/.test(message), `${c.name}: ${message}`);
    } else {
      assert.equal(message, undefined, c.name);
    }
  }
  assert.match(acp.terminalInvalidMessage('{"command":"ls","env":[{"name":"A\\nB","value":""}]}'), /^invalid environment variable name "A\\nB"/);
});

test("escapeLine puts agent text on one line, escapes unforgeable", () => {
  assert.equal(acp.escapeLine("plain text: é ✓"), "plain text: é ✓");
  assert.equal(acp.escapeLine("a\nb\r\u001b[2K\u202efdp.exe\u200b"), "a\\nb\\r\\e[2K\\u202efdp.exe\\u200b");
  assert.equal(acp.escapeLine("a\\nb\n"), "a\\\\nb\\n", "a written backslash-n cannot pass for an escaped newline");
});

test("the environment allowlist and valid names come from acp-client", () => {
  const list = acp.envAllowlist();
  assert.ok(Array.isArray(list));
  for (const name of ["PATH", "HOME", "LANG", "LC_*", "XDG_*", "TERM"]) assert.ok(list.includes(name), name);
  for (const secret of ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY"]) assert.ok(!list.includes(secret), secret);
  assert.notEqual(acp.envAllowlist(), list, "a fresh array each call");
  for (const ok of ["PATH", "_x", "a1_B"]) assert.equal(acp.validEnvName(ok), true, ok);
  for (const bad of ["", "1A", "A-B", "A=B", "A\nB", "A B", "É", "A\0", 7, undefined, null]) {
    assert.equal(acp.validEnvName(bad), false, JSON.stringify(bad));
  }
});

test("the client flavour's .d.ts declares the policy functions and their types", () => {
  for (const dir of ["nodejs-client", "web-client"]) {
    const dts = readFileSync(join(pkgDir, dir, "acp_wasm.d.ts"), "utf8");
    for (const needle of [
      "export type PermissionDecision =",
      "export type WriteClass =",
      "export type TerminalQuestion =",
      "export function decidePermission(optionsJson: string, mode: PermissionMode): PermissionDecision;",
      "export function dismissedPermission(optionsJson: string): PermissionDecision;",
      "export function unanswerablePermission(): PermissionDecision;",
      "export function chosenPermission(optionsJson: string, typed: string): PermissionDecision | null;",
      "export function classifyWrite(path: string, factsJson: string, ownDirsJson: string): WriteClass;",
      "export function describeWriteReason(reason: WriteReason): string;",
      "export function terminalQuestion(requestJson: string, userEnvJson: string): TerminalQuestion;",
      "export function terminalInvalidMessage(requestJson: string): string | undefined;",
      "export function envAllowlist(): string[];",
      "export function validEnvName(name: string): boolean;",
      "export function escapeLine(text: string): string;",
    ]) {
      assert.ok(dts.includes(needle), `${dir}/acp_wasm.d.ts lacks: ${needle}`);
    }
  }
});
