// The client case tables (tests/client/*.json, tests/client/README.md) replayed through the
// extension's own wasm binding (ClientPolicy, on the real engine) and, where the extension has
// the decision's face, through the bridge that applies it: PermissionBridge for automatic and
// dismissed answers, FsBridge for writes (real files in a temporary workspace), TerminalManager
// for terminal/create questions and refusals. acp-client/tests/cases.rs replays the same rows
// natively, acp-wasm/tests/node/policy.test.mjs through the bare package. errors.json goes
// through ClientPolicy.failureError; thread.json through the extension's Conversation (conversation.test.ts);
// session.json through the session engine the session controller drives (restart.json, its
// crash budget, is replayed natively and through it: the extension has no other restart
// decision); registry.json's rows about one agent through the agent picker's presets (agentPresets,
// presetChoices); http_routing.json through the HTTP + SSE transport's reading of what it
// sends and receives (remoteSse.ts's outgoing and answer, acp-core's http_sse in the engine);
// remote.json through the rule AgentConnection.tokenRefusal applies before a token is sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FsBridge, type DocumentHost, type SensitiveWrite, type WriteApprover } from "../../src/bridges/fs";
import { nodeBridgeFiles } from "../../src/platform/nodeBridgeFiles";
import { PermissionBridge, plainLabel, questionDetail, type KnownToolCall, type PermissionPromptModel } from "../../src/bridges/permission";
import { TerminalManager, type TerminalApprovalRequest } from "../../src/bridges/terminal";
import { CancellationSource } from "../../src/protocol/cancellation";
import { nullLogger } from "../../src/protocol/log";
import type {
  FailureName,
  PermissionDecision,
  PermissionMode,
  PermissionQuestion,
  TerminalCommandRequest,
  WriteReason,
} from "../../src/protocol/policy";
import type { PermissionOption } from "@agentclientprotocol/sdk";
import { RequestError } from "../../src/protocol/errors";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";
import { loadPresets, presetChoices } from "../../src/agents";
import { answer, outgoing } from "../../src/protocol/remoteSse";

const { skip } = tryEngine();
const tablesDir = path.resolve(extensionRoot, "..", "tests", "client");

interface Case {
  name: string;
  expect: unknown;
  [k: string]: unknown;
}
function table(file: string): Case[] {
  const cases = (JSON.parse(fs.readFileSync(path.join(tablesDir, file), "utf8")) as { cases: Case[] }).cases;
  assert.ok(cases.length > 0, `${file} has cases`);
  return cases;
}

// ---- permission.json ------------------------------------------------------------------------

type On = { auto: PermissionMode } | { typed: string } | "dismissed" | "unanswerable";

test("permission.json: every row through ClientPolicy", { skip }, () => {
  const policy = testPolicy();
  for (const c of table("permission.json")) {
    const options = c.options as PermissionOption[];
    const on = c.on as On;
    const got =
      on === "dismissed"
        ? policy.dismissedPermission(options)
        : on === "unanswerable"
          ? policy.unanswerablePermission()
          : "auto" in on
            ? policy.decidePermission(options, on.auto)
            : policy.chosenPermission(options, on.typed);
    assert.deepEqual(got, c.expect, c.name);
  }
});

/** What the bridge answered, as the case table writes it. */
async function throughBridge(
  options: PermissionOption[],
  autoApprove: boolean,
  dismiss: boolean,
): Promise<PermissionDecision | { answer: "cancelled" }> {
  const cancels: string[] = [];
  let asked: PermissionPromptModel | undefined;
  const prompter = {
    prompt: async (m: PermissionPromptModel) => {
      asked = m;
      return undefined; // Escape
    },
  };
  const b = new PermissionBridge(
    prompter,
    () => ({ autoApprove }),
    nullLogger,
    testPolicy(),
    (sid) => cancels.push(sid),
  );
  const res = await b.handle({ sessionId: "s", toolCall: { toolCallId: "t" }, options }, new CancellationSource().token);
  if (!dismiss && asked) return { answer: "ask" };
  const outcome = res.outcome;
  if (outcome.outcome === "selected") {
    assert.deepEqual(cancels, [], "a selected option does not cancel the turn");
    return { answer: "select", optionId: outcome.optionId, kind: options.find((o) => o.optionId === outcome.optionId)!.kind };
  }
  assert.deepEqual(cancels, ["s"], "session/cancel is sent before `cancelled`");
  // The answer on the wire carries no reason; the reasons are checked through ClientPolicy above.
  return { answer: "cancelled" };
}

test("permission.json: the extension's modes (ask, allow_once) and dismissals through the PermissionBridge", { skip }, async () => {
  let replayed = 0;
  for (const c of table("permission.json")) {
    const options = c.options as PermissionOption[];
    const on = c.on as On;
    const expect = c.expect as PermissionDecision | null;
    let got: PermissionDecision | { answer: "cancelled" };
    if (on === "dismissed") got = await throughBridge(options, false, true);
    else if (typeof on === "object" && "auto" in on && (on.auto === "ask" || on.auto === "allow_once")) {
      got = await throughBridge(options, on.auto === "allow_once", false);
    } else continue; // allow_always, deny, typed answers, unanswerable: no such face in the extension
    replayed++;
    const want = expect && expect.answer === "cancelled" ? { answer: "cancelled" } : expect;
    assert.deepEqual(got, want, c.name);
  }
  assert.ok(replayed >= 6, `${replayed} rows replayed through the bridge`);
});

// ---- writes.json ------------------------------------------------------------------------------

test("writes.json: every row through ClientPolicy", { skip }, () => {
  const policy = testPolicy();
  for (const c of table("writes.json")) {
    const ownDirs = (c.ownDirs as string[] | undefined) ?? [];
    assert.deepEqual(
      policy.classifyWrite(c.path as string, c.facts as { exists: boolean; executable: boolean }, ownDirs),
      c.expect,
      c.name,
    );
  }
});

test("writes.json: POSIX rows through the FsBridge, on real files (the question's reason, or a plain write)", { skip }, async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-cases-")));
  let replayed = 0;
  for (const [i, c] of table("writes.json").entries()) {
    const p = c.path as string;
    const facts = c.facts as { exists: boolean; executable: boolean };
    if (p.includes("\\") || (facts.executable && !facts.exists)) continue; // Windows paths: ClientPolicy only
    const ws = path.join(root, `row-${i}`);
    const file = path.join(ws, p.replace(/^\//, ""));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (facts.exists) fs.writeFileSync(file, "before\n", { mode: facts.executable ? 0o755 : 0o644 });
    const asked: SensitiveWrite[] = [];
    const approver: WriteApprover = {
      ask: async (w) => (asked.push(w), "refuse"),
      review: async () => {},
    };
    const host: DocumentHost = {
      openDocumentText: () => undefined,
      applyWrite: async (f, content) => fs.writeFileSync(f, content),
      workspaceFolders: () => [ws],
    };
    // The row's own directories, where the row's files are: under the workspace.
    const ownDirs = ((c.ownDirs as string[] | undefined) ?? []).map((d) => path.join(ws, d.replace(/^\//, "")));
    const b = new FsBridge(
      nodeBridgeFiles,
      host,
      () => ({ allowWritesOutsideWorkspace: false, ownDirs }),
      testPolicy(),
      approver,
      nullLogger,
    );
    const expect = c.expect as { class: "ordinary" } | { class: "ask"; reason: string };
    const write = b.writeTextFile({ sessionId: "s", path: file, content: "after\n" });
    if (expect.class === "ordinary") {
      await write;
      assert.equal(asked.length, 0, c.name);
      assert.equal(fs.readFileSync(file, "utf8"), "after\n", c.name);
    } else {
      await assert.rejects(
        write,
        (e: unknown) => e instanceof RequestError && e.code === -32603 && /^permission denied/.test(e.message),
        c.name,
      );
      assert.equal(asked.length, 1, c.name);
      assert.equal(asked[0]!.reason, expect.reason, c.name);
      assert.equal(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null, facts.exists ? "before\n" : null, `${c.name}: untouched`);
    }
    replayed++;
  }
  assert.ok(replayed >= 30, `${replayed} rows replayed through the bridge`);
});

// ---- question.json ----------------------------------------------------------------------------

/** A row with its generators expanded, as acp-client/tests/cases.rs does (tests/client/README.md). */
function expand(v: unknown): unknown {
  if (Array.isArray(v)) {
    return v.flatMap((x: unknown) => {
      const each = (x as { $each?: { text: string; from: number; count: number } } | null)?.$each;
      return each ? Array.from({ length: each.count }, (_, i) => `${each.text}${each.from + i}`) : [expand(x)];
    });
  }
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const lines = o.$lines as { text: string; count: number } | undefined;
    if (lines) return Array.from({ length: lines.count }, (_, i) => `${lines.text}${i + 1}\n`).join("");
    if (typeof o.$repeat === "string") return o.$repeat.repeat(o.times as number);
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, expand(x)]));
  }
  return v;
}

interface WriteRow {
  path: string;
  askedPath?: string;
  reason: WriteReason;
  exists: boolean;
  executable: boolean;
  oldText: string | null;
  newText: string;
}

test("question.json: every row through ClientPolicy (requests, sensitive writes; commands through terminalQuestion)", { skip }, () => {
  const policy = testPolicy();
  let replayed = 0;
  for (const c of table("question.json")) {
    const row = expand(c) as {
      request?: unknown;
      known?: unknown;
      write?: WriteRow;
      command?: { request: TerminalCommandRequest; userEnv: Record<string, string> };
    };
    const expect = expand(c.expect) as PermissionQuestion;
    let got: PermissionQuestion;
    if (row.request !== undefined) got = policy.permissionQuestion(row.request, row.known ?? null);
    else if (row.write) got = policy.writeQuestion(row.write);
    else if (row.command) {
      // A command: the terminal modal shows terminalQuestion (terminal.json) with its own Run
      // button; its title, command line and warnings are this question's.
      const t = policy.terminalQuestion(row.command.request, row.command.userEnv);
      assert.ok("question" in t, c.name);
      got = { ...expect, title: t.question.title, command: t.question.commandLine, detail: t.question.warnings.map((w) => `⚠ ${w}`) };
    } else throw new Error(`${c.name}: a row has request, write or command`);
    assert.deepEqual(got, expect, c.name);
    replayed++;
  }
  assert.equal(replayed, table("question.json").length, "every row replayed");
});

test("question.json: the agent's requests through the PermissionBridge: the modal's title, buttons and text", { skip }, async () => {
  let replayed = 0;
  for (const c of table("question.json")) {
    const row = expand(c) as { request?: { options: PermissionOption[] }; known?: KnownToolCall };
    if (row.request === undefined) continue;
    let shown: PermissionPromptModel | undefined;
    const b = new PermissionBridge(
      { prompt: async (m) => ((shown = m), undefined) },
      () => ({ autoApprove: false }),
      nullLogger,
      testPolicy(),
      () => {},
      () => row.known ?? null,
    );
    await b.handle(row.request, new CancellationSource().token);
    const q = expand(c.expect) as PermissionQuestion;
    if (q.options.length === 0) {
      assert.equal(shown, undefined, `${c.name}: no options, nothing to ask`);
      continue;
    }
    const edits = q.diffs.length > 0 ? " (Review changes shows the whole change)" : "";
    assert.equal(shown?.message, `The agent wants to: ${q.title}`, c.name);
    assert.deepEqual(
      shown?.items.map((i) => [i.optionId, i.label]),
      q.options.map((o) => [o.optionId, plainLabel(o.name, o.kind)]),
      c.name,
    );
    assert.equal(shown?.detail, questionDetail(q, edits), c.name);
    replayed++;
  }
  assert.ok(replayed >= 8, `${replayed} rows replayed through the bridge`);
});

// ---- terminal.json ------------------------------------------------------------------------------

test("terminal.json: every row through ClientPolicy", { skip }, () => {
  const policy = testPolicy();
  for (const c of table("terminal.json")) {
    assert.deepEqual(policy.terminalQuestion(c.request as never, c.userEnv as Record<string, string>), c.expect, c.name);
  }
});

test("terminal.json: rows without a directory through the TerminalManager (the question shown, or the refusal)", { skip }, async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-cases-term-")));
  let replayed = 0;
  for (const c of table("terminal.json")) {
    const request = c.request as { command: string; args?: string[]; cwd?: string; env?: Array<{ name: string; value: string }> };
    if (request.cwd !== undefined) continue; // a directory outside the workspace is refused first
    const asked: TerminalApprovalRequest[] = [];
    const m = new TerminalManager(
      undefined,
      () => ({
        useShell: false,
        approval: "ask",
        envPolicy: { allowlist: [], passthrough: [], inheritAll: true },
        hostEnv: c.userEnv as Record<string, string>,
        workspaceFolders: [ws],
      }),
      nullLogger,
      testPolicy(),
      { approve: async (r) => (asked.push(r), false) },
    );
    const expect = c.expect as { question: unknown } | { invalid: { reason: string } };
    await assert.rejects(m.create({ sessionId: "s", ...request }), (e: unknown) => {
      assert.ok(e instanceof RequestError, c.name);
      if ("question" in expect) {
        assert.equal(e.code, testPolicy().failureError("permission_denied").code, c.name);
        assert.match(e.message, /^permission denied: the user did not allow running /, c.name);
      } else {
        assert.equal(e.code, testPolicy().failureError("invalid_command").code, c.name);
        assert.equal(e.message, `terminal/create: ${testPolicy().terminalInvalidMessage(request)}`, c.name);
        assert.deepEqual(e.data, { reason: "invalid_command", invalid: expect.invalid }, c.name);
      }
      return true;
    });
    if ("question" in expect) {
      assert.equal(asked.length, 1, c.name);
      assert.deepEqual(asked[0]!.question, expect.question, c.name);
    } else assert.equal(asked.length, 0, `${c.name}: refused before anyone is asked`);
    assert.equal(m.size, 0);
    replayed++;
  }
  assert.ok(replayed >= 10, `${replayed} rows replayed through the bridge`);
});

// ---- errors.json ------------------------------------------------------------------------------

test("errors.json: every row through ClientPolicy.failureError and .failure (data.reason first)", { skip }, () => {
  const policy = testPolicy();
  for (const c of table("errors.json")) {
    const failure = c.failure as FailureName;
    assert.deepEqual(policy.failureError(failure), c.expect, c.name);
    const e = policy.failure(failure, "m", { path: "/p" });
    assert.deepEqual([e.code, e.message, e.data], [(c.expect as { code: number }).code, "m", { reason: failure, path: "/p" }], c.name);
  }
});

// ---- session.json -----------------------------------------------------------------------------

/** JSON text as serde_json writes a `Value` (what acp-client/tests/cases.rs feeds): keys sorted. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

test("session.json: every row through the extension's session engine (what the session controller drives)", { skip }, () => {
  const { engine } = tryEngine();
  for (const c of table("session.json")) {
    let s: InstanceType<NonNullable<typeof engine>["Session"]>;
    try {
      s = new engine!.Session(canonical(c.intent), "/p", c.policy ? JSON.stringify({ policy: c.policy }) : undefined);
    } catch (e) {
      assert.equal((e as Error).name, "SessionRefused", c.name);
      assert.deepEqual({ refused: (e as Error).message }, c.expect, c.name);
      continue;
    }
    const thread = s.thread();
    const attempt = (f: () => unknown) => {
      try {
        return f();
      } catch (e) {
        return { error: (e as Error).message };
      }
    };
    const steps = (c.steps as Array<Record<string, unknown>>).map((step) => {
      const [kind, input] = Object.entries(step)[0]!;
      const i = input as { code: number; message: string; atMs: number; why: string };
      switch (kind) {
        case "initialized":
          return attempt(() => JSON.parse(s.initialized(canonical(input))) as unknown);
        case "update":
          return attempt(() => JSON.parse(s.update(canonical(input))) as unknown);
        case "opened":
          return attempt(() => JSON.parse(s.opened(canonical(input))) as unknown);
        case "openFailed":
          return JSON.parse(s.openFailed(i.code, i.message)) as unknown;
        case "agentEnded":
          return JSON.parse(s.agentEnded(i.atMs, i.why)) as unknown;
        case "beginTurn":
          return thread.beginTurn(JSON.stringify([{ type: "text", text: input }]));
        case "endTurn":
          thread.endTurn(input as string);
          return null;
        default:
          throw new Error(`${c.name}: unknown step ${kind}`);
      }
    });
    assert.deepEqual({ steps, sessionId: s.sessionId ?? null, open: s.isOpen, title: s.title }, c.expect, c.name);
    thread.free();
    s.free();
  }
});

// ---- registry.json ----------------------------------------------------------------------------

test("registry.json: rows naming one agent by id, through the agent picker's presets and choices", { skip }, () => {
  const { engine } = tryEngine();
  let replayed = 0;
  for (const c of table("registry.json")) {
    if (c.given !== undefined) continue; // variables set with --env: acp chat only
    if (c.registry !== null && c.overlay !== null) continue;
    // The picker lays the file over the snapshot; a row's own registry gives the same agent.
    const overlay = c.registry ?? c.overlay;
    const presets = loadPresets(engine!.agentPresets, c.platform as string, "registry.json", () =>
      overlay === null ? undefined : JSON.stringify(overlay),
    );
    const p = presets.agents.find((a) => a.id === c.agent);
    if (!p) continue; // a name by prefix, an unknown name: `acp chat --agent` only
    const got = p.launch ? { launch: p.launch, env: p.env, ...(p.problem ? { refused: p.problem } : {}) } : { error: p.problem };
    assert.deepEqual(got, c.expect, c.name);
    // What the picker offers: never an entry with a refused variable; the others as passed.
    const choice = presetChoices(presets, []).find((ch) => ch.name === p.name)!;
    const expect = c.expect as { refused?: string; env?: Array<{ name: string; value: string }> };
    if (p.launch && !expect.refused) {
      const env = Object.fromEntries((expect.env ?? []).map((v) => [v.name, v.value]));
      assert.deepEqual(choice.entry?.env ?? {}, env, c.name);
    } else {
      assert.equal(choice.entry, undefined, c.name);
      assert.ok(choice.problem?.startsWith((expect.refused ?? (c.expect as { error: string }).error) as string), c.name);
    }
    replayed++;
  }
  assert.ok(replayed >= 8, `${replayed} rows replayed through the presets`);
});

// ---- http_routing.json ----------------------------------------------------------------------

test("http_routing.json: every row through the HTTP + SSE transport's reading (outgoing, answer)", { skip }, () => {
  for (const c of table("http_routing.json")) {
    let got: unknown;
    if (typeof c.send === "string") {
      // Text that is no message gives its line alone.
      const o = outgoing(c.send);
      got = Object.keys(o).length === 1 ? null : { method: o.method ?? null, id: o.id ?? null, session: o.session ?? null };
    } else {
      const a = answer(c.receive as string);
      got = a === undefined ? null : { id: a.id, session: a.session ?? null };
    }
    assert.deepEqual(got, c.expect, c.name);
  }
});

// ---- remote.json ------------------------------------------------------------------------------

test("remote.json: every row through AgentConnection.tokenRefusal's rule (checkTokenTransport)", { skip }, () => {
  const { engine } = tryEngine();
  for (const c of table("remote.json")) {
    const refused = engine!.checkTokenTransport(
      c.scheme as string,
      c.authority as string,
      c.host as string,
      c.allowInsecure as boolean,
      "the switch",
    );
    assert.deepEqual(refused === undefined ? { ok: true } : { refused }, c.expect, c.name);
  }
});
