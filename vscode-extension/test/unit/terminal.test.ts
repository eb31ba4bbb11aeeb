import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  OutputBuffer,
  TerminalManager,
  shellQuote,
  type TerminalApprovalRequest,
  type TerminalDisplayFactory,
  type TerminalSettings,
} from "../../src/bridges/terminal";
import { SessionTerminals, sessionTerminalName, type TerminalPanel, type TerminalPanelHost } from "../../src/bridges/sessionTerminals";
import { CancellationSource } from "../../src/protocol/cancellation";
import { envPolicyFrom } from "../../src/protocol/env";
import { nullLogger } from "../../src/protocol/log";
import { RequestError } from "../../src/protocol/errors";
import { testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();
const node = process.execPath;
const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-term-ws-")));
const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-term-out-")));
fs.mkdirSync(path.join(ws, "sub"));
fs.symlinkSync(outside, path.join(ws, "escape"));

/** acp-client's limits (16 MiB of output, 16 terminals, 2 s kill grace), from the engine. */
const limits = () => testPolicy().terminalLimits();
const isCode = (code: number, re?: RegExp) => (e: unknown) => e instanceof RequestError && e.code === code && (!re || re.test(e.message));

test("OutputBuffer keeps everything under the limit", () => {
  const b = new OutputBuffer(1024);
  b.append(Buffer.from("héllo "));
  b.append(Buffer.from("wörld"));
  assert.equal(b.text(), "héllo wörld");
  assert.equal(b.truncated, false);
});

test("acp-client's terminal limits, shared with acp chat", { skip }, () => {
  assert.deepEqual(limits(), { maxOutputBytes: 16 * 1024 * 1024, maxTerminals: 16, killGraceMs: 2000 });
});

test("OutputBuffer truncates from the front at a character boundary", () => {
  // "€" is 3 bytes (e2 82 ac), "😀" is 4 bytes.
  const b = new OutputBuffer(5);
  b.append(Buffer.from("a€😀"));
  // 8 bytes, keep the last 5: "ac" + emoji(4); the continuation byte "ac" is skipped.
  assert.equal(b.text(), "😀");
  assert.equal(b.byteLength, 4);
  assert.equal(b.truncated, true);
  const c = new OutputBuffer(4);
  c.append(Buffer.from("abcdef"));
  assert.equal(c.text(), "cdef");
  // A character split across two chunks is still whole after truncation.
  const d = new OutputBuffer(6);
  const euro = Buffer.from("€");
  d.append(Buffer.from("xxxxxx"));
  d.append(euro.subarray(0, 1));
  d.append(euro.subarray(1));
  assert.equal(d.text(), "xxx€");
  // Dropping spans several chunks, and the boundary skip may cross a chunk.
  const e = new OutputBuffer(5);
  for (const part of ["ab", "cd", "e", "€".slice(0), "fg"]) e.append(Buffer.from(part));
  assert.equal(e.text(), "€fg");
  const z = new OutputBuffer(0);
  z.append(Buffer.from("abc"));
  assert.equal(z.text(), "");
  assert.equal(z.truncated, true);
});

test("OutputBuffer appends without copying what it keeps: 32 MiB in 4 KiB chunks stays 16 MiB, fast", { timeout: 10_000 }, () => {
  // The former buffer concatenated everything on every chunk: this took minutes.
  const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
  const b = new OutputBuffer(MAX_OUTPUT_BYTES);
  const chunk = Buffer.alloc(4096, 0x61);
  for (let i = 0; i < 8192; i++) b.append(chunk);
  assert.equal(b.byteLength, MAX_OUTPUT_BYTES);
  assert.equal(b.truncated, true);
  assert.ok(b.chunkCount <= MAX_OUTPUT_BYTES / 4096 + 1, `${b.chunkCount} chunks held`);
  assert.equal(b.text().length, MAX_OUTPUT_BYTES);
});

/** Terminal panels as the editor would show them: their name, the text written, whether the
 *  extension disposed them; `close()` is the user closing the tab. Nothing may be written to a
 *  panel that is gone. */
class FakePanels implements TerminalPanelHost {
  panels: Array<{
    name: string;
    text: string;
    reveals: number;
    disposed: boolean;
    closed: boolean;
    input: (d: string) => void;
    close: () => void;
  }> = [];
  open(name: string, onInput: (d: string) => void, onClosed: () => void): TerminalPanel {
    const p = {
      name,
      text: "",
      reveals: 0,
      disposed: false,
      closed: false,
      input: onInput,
      close: () => {
        p.closed = true;
        onClosed();
      },
    };
    this.panels.push(p);
    return {
      write: (t) => {
        assert.ok(!p.disposed && !p.closed, `written to a panel that is gone: ${JSON.stringify(t)}`);
        p.text += t;
      },
      reveal: () => p.reveals++,
      dispose: () => (p.disposed = true),
    };
  }
}

/** The text a panel shows, without its ANSI styling. */
// eslint-disable-next-line no-control-regex
const plain = (t: string) => t.replace(/\x1b\[[0-9;]*m/g, "");

/** One panel per session (the extension's SessionTerminals) over FakePanels. */
function sessionPanels() {
  const host = new FakePanels();
  return { host, displays: new SessionTerminals(host, (id) => sessionTerminalName("Demo agent", undefined, id)) };
}

const settings =
  (over: Partial<TerminalSettings> = {}): (() => TerminalSettings) =>
  () => ({
    useShell: false,
    killGraceMs: 200,
    approval: "allow",
    envPolicy: envPolicyFrom(testPolicy(), [], false),
    workspaceFolders: [ws],
    ...over,
  });
const mgr = (displays?: TerminalDisplayFactory, useShell = false) =>
  new TerminalManager(displays, settings({ useShell }), nullLogger, testPolicy());

test("runs a real process without a shell; output, exit code, display", { skip }, async () => {
  const d = sessionPanels();
  const m = mgr(d.displays);
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "process.stdout.write(process.argv[1] + ':' + process.env.ACP_T); process.exit(3)", "$HOME;echo"],
    env: [{ name: "ACP_T", value: "v" }],
  });
  const exit = await m.waitForExit({ sessionId: "s", terminalId });
  assert.deepEqual(exit, { exitCode: 3, signal: null });
  const out = m.output({ sessionId: "s", terminalId });
  assert.equal(out.output, "$HOME;echo:v", "arguments reach the process verbatim (no shell expansion)");
  assert.equal(out.truncated, false);
  assert.deepEqual(out.exitStatus, { exitCode: 3, signal: null });
  assert.equal(d.host.panels.length, 1);
  assert.match(plain(d.host.panels[0]!.text), /^\$ .*\n\$HOME;echo:v\n\[process exited with code 3\]\n$/);
  m.release({ sessionId: "s", terminalId });
});

test("outputByteLimit truncates and reports it", { skip }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "process.stdout.write('x'.repeat(1000) + 'END')"],
    outputByteLimit: 10,
  });
  await m.waitForExit({ sessionId: "s", terminalId });
  const out = m.output({ sessionId: "s", terminalId });
  assert.equal(out.output, "xxxxxxxEND");
  assert.equal(out.truncated, true);
});

test("without outputByteLimit the output is capped at 16 MiB, newest kept", { skip, timeout: 30_000 }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: [
      "-e",
      "const b = Buffer.alloc(1 << 20, 0x61); for (let i = 0; i < 17; i++) process.stdout.write(b); process.stdout.write('END')",
    ],
  });
  await m.waitForExit({ sessionId: "s", terminalId });
  const out = m.output({ sessionId: "s", terminalId });
  assert.equal(out.truncated, true);
  assert.equal(Buffer.byteLength(out.output), limits().maxOutputBytes, "no outputByteLimit: acp-client's cap");
  assert.ok(out.output.endsWith("aEND"));
  m.release({ sessionId: "s", terminalId });
});

test("kill ends a running process (its group), output stays until release; then -32002", { skip }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "console.log('started'); setInterval(() => {}, 1000)"],
  });
  const before = m.output({ sessionId: "s", terminalId });
  assert.equal(before.exitStatus, null, "still running");
  m.kill({ sessionId: "s", terminalId });
  const exit = await m.waitForExit({ sessionId: "s", terminalId });
  assert.equal(exit.signal, "SIGTERM");
  assert.equal(exit.exitCode, null);
  assert.deepEqual(m.output({ sessionId: "s", terminalId }).exitStatus, exit);
  m.release({ sessionId: "s", terminalId });
  assert.throws(() => m.output({ sessionId: "s", terminalId }), isCode(-32002, /terminal not found/));
});

test("release kills a running process", { skip }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", "setInterval(() => {}, 1000)"] });
  const exited = m.waitForExit({ sessionId: "s", terminalId });
  m.release({ sessionId: "s", terminalId });
  assert.equal((await exited).signal, "SIGTERM");
  assert.equal(m.size, 0);
});

test("wait_for_exit gives up when its request is cancelled", { skip }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", "setInterval(() => {}, 1000)"] });
  const src = new CancellationSource();
  const w = m.waitForExit({ sessionId: "s", terminalId }, src.token);
  src.cancel();
  await assert.rejects(w, isCode(-32800));
  m.release({ sessionId: "s", terminalId });
});

test("a command that cannot be started answers the request with an error, like acp chat (no terminal, no exit 127)", { skip }, async () => {
  const d = sessionPanels();
  const m = mgr(d.displays);
  await assert.rejects(m.create({ sessionId: "s", command: "/nonexistent/acp-test-cmd" }), (e: unknown) => {
    assert.ok(e instanceof RequestError);
    assert.equal(e.code, testPolicy().failureError("command_not_found").code);
    assert.match(e.message, /^command not found: `\/nonexistent\/acp-test-cmd`/);
    assert.deepEqual(e.data, { reason: "command_not_found", command: "/nonexistent/acp-test-cmd" });
    return true;
  });
  await assert.rejects(m.create({ sessionId: "s", command: "no-such-acp-test-command-xyz" }), isCode(-32602, /command not found/));
  await assert.rejects(m.create({ sessionId: "s", command: ws }), isCode(-32602, /cannot execute/));
  assert.equal(m.size, 0);
  assert.equal(d.host.panels.length, 0, "no terminal panel for a command that never ran");
});

test("unknown terminal ids and other sessions' terminals are -32002 (resource not found)", { skip }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", ""] });
  assert.throws(() => m.output({ sessionId: "s", terminalId: "term-999" }), isCode(-32002, /terminal not found/));
  assert.throws(() => m.output({ sessionId: "other", terminalId }), isCode(-32002, /terminal not found/));
  assert.throws(() => m.kill({ sessionId: "s", terminalId: 7 }), isCode(-32002));
  await assert.rejects(m.waitForExit({ sessionId: "s", terminalId: "nope" }), isCode(-32002));
  await assert.rejects(m.create({ sessionId: "s" }), isCode(-32602, /command missing/));
  await m.waitForExit({ sessionId: "s", terminalId });
});

test("useShell runs the command line under sh with quoted args", { skip }, async () => {
  const m = mgr(undefined, true);
  const { terminalId } = await m.create({ sessionId: "s", command: "echo $((1+2))", args: ["a b", "it's"] });
  await m.waitForExit({ sessionId: "s", terminalId });
  assert.equal(m.output({ sessionId: "s", terminalId }).output, "3 a b it's\n");
  assert.equal(shellQuote("plain/path.txt"), "plain/path.txt");
});

test("input typed in the terminal panel reaches the process", { skip }, async () => {
  const d = sessionPanels();
  const m = mgr(d.displays);
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "process.stdin.once('data', (b) => { process.stdout.write('got ' + b); process.exit(0) })"],
  });
  d.host.panels[0]!.input("ping\n");
  await m.waitForExit({ sessionId: "s", terminalId });
  assert.equal(m.output({ sessionId: "s", terminalId }).output, "got ping\n");
});

// ---- one terminal panel per session ------------------------------------------------------------

/** A manager asking an approver that allows everything and records acp-client's command lines. */
function sessionMgr() {
  const d = sessionPanels();
  const lines: string[] = [];
  const m = new TerminalManager(d.displays, settings({ approval: "ask" }), nullLogger, testPolicy(), {
    approve: (r: TerminalApprovalRequest) => {
      lines.push(r.question.commandLine);
      return Promise.resolve(true);
    },
  });
  const run = async (sessionId: string, script: string) => {
    const { terminalId } = await m.create({ sessionId, command: node, args: ["-e", script] });
    return { sessionId, terminalId };
  };
  return { ...d, m, lines, run };
}

test(
  "two commands of a session share one terminal panel, each under acp-client's command line with its own output and exit",
  { skip },
  async () => {
    const { host, m, lines, run } = sessionMgr();
    const one = await run("s-1", "process.stdout.write('one')");
    assert.deepEqual(await m.waitForExit(one), { exitCode: 0, signal: null });
    const two = await run("s-1", "console.log('two'); process.exit(4)");
    assert.deepEqual(await m.waitForExit(two), { exitCode: 4, signal: null });
    assert.notEqual(one.terminalId, two.terminalId);
    assert.equal(host.panels.length, 1, "one panel for the session");
    const panel = host.panels[0]!;
    assert.equal(panel.name, "ACP: Demo agent — s-1");
    assert.equal(panel.reveals, 2, "shown at each command");
    assert.equal(lines.length, 2);
    assert.ok(lines[0]!.includes("process.stdout.write"), lines[0]);
    assert.equal(plain(panel.text), `$ ${lines[0]}\none\n[process exited with code 0]\n$ ${lines[1]}\ntwo\n[process exited with code 4]\n`);
    // ACP keeps each terminal apart.
    assert.deepEqual(m.output(one), { output: "one", truncated: false, exitStatus: { exitCode: 0, signal: null } });
    assert.deepEqual(m.output(two), { output: "two\n", truncated: false, exitStatus: { exitCode: 4, signal: null } });
    m.release(one);
    assert.throws(() => m.output(one), isCode(-32002));
    assert.equal(m.output(two).output, "two\n");
    m.disposeAll();
    assert.equal(panel.disposed, true);
  },
);

test("a terminal panel the user closed is opened again for the session's next command", { skip }, async () => {
  const { host, m, lines, run } = sessionMgr();
  const one = await run("s-1", "process.stdout.write('one')");
  await m.waitForExit(one);
  host.panels[0]!.close();
  const two = await run("s-1", "process.stdout.write('two')");
  await m.waitForExit(two);
  assert.equal(host.panels.length, 2);
  const again = host.panels[1]!;
  assert.equal(again.name, host.panels[0]!.name);
  assert.equal(plain(again.text), `$ ${lines[1]}\ntwo\n[process exited with code 0]\n`);
  assert.equal(host.panels[0]!.disposed, false, "the user's close is not a dispose");
  assert.equal(m.output(one).output, "one", "closing the panel changes nothing for ACP");
  m.disposeAll();
  assert.equal(again.disposed, true);
});

test("two sessions get two terminal panels; a session's end disposes its panel only, its terminals stay", { skip }, async () => {
  const { host, m, lines, run } = sessionMgr();
  const a = await run("s-a", "setTimeout(() => process.stdout.write('late'), 300)");
  const b = await run("s-b", "process.stdout.write('b')");
  await m.waitForExit(b);
  assert.deepEqual(
    host.panels.map((p) => p.name),
    ["ACP: Demo agent — s-a", "ACP: Demo agent — s-b"],
  );
  m.endSession("s-a");
  assert.equal(host.panels[0]!.disposed, true);
  assert.equal(host.panels[1]!.disposed, false);
  // The ended session's command runs on and is still ACP's (FakePanels asserts nothing more is
  // written to the disposed panel).
  assert.deepEqual(await m.waitForExit(a), { exitCode: 0, signal: null });
  assert.equal(m.output(a).output, "late");
  assert.equal(plain(host.panels[1]!.text), `$ ${lines[1]}\nb\n[process exited with code 0]\n`);
  // The other session's panel is the one its next command uses.
  const b2 = await run("s-b", "process.stdout.write('b2')");
  await m.waitForExit(b2);
  assert.equal(host.panels.length, 2);
  m.disposeAll();
  assert.equal(host.panels[1]!.disposed, true);
});

test("commands of one session running side by side: output marked when the panel switches, input to the latest running", () => {
  const host = new FakePanels();
  const shown = new SessionTerminals(host, (id) => sessionTerminalName("Demo", undefined, id));
  const typed: string[] = [];
  const a = shown.create("s", "sleep 10", (d) => typed.push(`a:${d}`));
  const b = shown.create("s", "make", (d) => typed.push(`b:${d}`));
  a.write("a1\n");
  a.write("a2");
  b.write("b1\n");
  host.panels[0]!.input("y\n");
  b.exited({ exitCode: 0, signal: null });
  host.panels[0]!.input("n\n");
  a.exited({ exitCode: null, signal: "SIGTERM" });
  host.panels[0]!.input("ignored\n");
  assert.deepEqual(typed, ["b:y\n", "a:n\n"]);
  assert.equal(
    plain(host.panels[0]!.text),
    [
      "$ sleep 10",
      "$ make",
      "[output of $ sleep 10]",
      "a1",
      "a2",
      "[output of $ make]",
      "b1",
      "[process exited with code 0]",
      "[output of $ sleep 10]",
      "[process killed by SIGTERM]",
      "",
    ].join("\n"),
  );
  assert.equal(host.panels.length, 1);
  assert.equal(shown.openPanels, 1);
  shown.endSession("s");
  assert.equal(shown.openPanels, 0);
  a.write("after the end");
});

test("a session's panel name: agent and title on one line without control characters, clipped; else the id's start", () => {
  assert.equal(sessionTerminalName("Demo", "fix\x1b[31m the\n build", "s-1"), "ACP: Demo — fix [31m the build");
  assert.equal(sessionTerminalName("Demo", undefined, "0123456789abcdef"), "ACP: Demo — 0123456789a…");
  assert.equal(sessionTerminalName(undefined, "  ", "s-1"), "ACP: s-1");
  assert.equal(sessionTerminalName("Demo", "x".repeat(60), "s").length, "ACP: Demo — ".length + 40);
});

test("terminal commands get an explicit environment: no host secrets unless passed through", { skip }, async () => {
  process.env.ACP_TEST_SECRET_TOKEN = "do-not-leak";
  try {
    const script =
      "process.stdout.write(JSON.stringify([process.env.ACP_TEST_SECRET_TOKEN ?? null, !!process.env.PATH, process.env.ACP_T]))";
    const run = async (passthrough: string[]) => {
      const m = new TerminalManager(
        undefined,
        settings({ envPolicy: envPolicyFrom(testPolicy(), passthrough, false) }),
        nullLogger,
        testPolicy(),
      );
      const { terminalId } = await m.create({
        sessionId: "s",
        command: process.execPath,
        args: ["-e", script],
        env: [{ name: "ACP_T", value: "given" }],
      });
      await m.waitForExit({ sessionId: "s", terminalId }, new CancellationSource().token);
      return JSON.parse(m.output({ sessionId: "s", terminalId }).output);
    };
    assert.deepEqual(await run([]), [null, true, "given"]);
    assert.deepEqual(await run(["ACP_TEST_*"]), ["do-not-leak", true, "given"]);
  } finally {
    delete process.env.ACP_TEST_SECRET_TOKEN;
  }
});

/** An approver that records what it was asked and answers `answer`. */
function approver(answer: boolean) {
  const asked: TerminalApprovalRequest[] = [];
  return { asked, approve: async (r: TerminalApprovalRequest) => (asked.push(r), answer) };
}

test("terminal/create always goes through a permission decision showing acp-client's question", { skip }, async () => {
  const req = {
    sessionId: "s",
    command: process.execPath,
    args: ["-e", "process.stdout.write('ran')"],
    env: [{ name: "K", value: "v w" }],
  };
  // Refused: a permission_denied error, and no process is started.
  const no = approver(false);
  const refused = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy(), no);
  await assert.rejects(refused.create(req), (e: unknown) => {
    assert.ok(e instanceof RequestError);
    assert.equal(e.code, -32603);
    assert.match(e.message, /^permission denied: the user did not allow running /);
    assert.equal((e.data as { reason: string }).reason, "permission_denied");
    return true;
  });
  assert.equal(refused.size, 0);
  const q = no.asked[0]!.question;
  assert.equal(q.commandLine, `${process.execPath} -e 'process.stdout.write('\\''ran'\\'')'`);
  assert.equal(q.title, `run \`${q.commandLine}\` with K='v w'`);
  assert.deepEqual(q.env, [{ name: "K", value: "v w", change: "added" }]);
  assert.equal(no.asked[0]!.directory, ws, "the default directory: the first workspace folder");
  // Allowed: it runs.
  const yes = approver(true);
  const allowed = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy(), yes);
  const { terminalId } = await allowed.create(req);
  await allowed.waitForExit({ sessionId: "s", terminalId });
  assert.equal(allowed.output({ sessionId: "s", terminalId }).output, "ran");
  // "ask" with nobody to ask refuses; only an explicit "allow" setting skips the question.
  const nobody = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy());
  await assert.rejects(nobody.create(req), /permission denied/);
  allowed.release({ sessionId: "s", terminalId });
});

test("the question puts agent text on one line and names what changes what runs", { skip }, async () => {
  const a = approver(false);
  const m = new TerminalManager(
    undefined,
    settings({ approval: "ask", envPolicy: { allowlist: [], passthrough: [], inheritAll: false } }),
    nullLogger,
    testPolicy(),
    a,
  );
  await assert.rejects(
    m.create({ sessionId: "s", command: "sh", args: ["-c", "echo x\n\nrun `ls`? 1) Run it"], env: [{ name: "PATH", value: "/tmp/evil" }] }),
  );
  const q = a.asked[0]!.question;
  for (const field of [q.title, q.commandLine]) assert.ok(!/[\n\r]/.test(field), field);
  assert.equal(q.commandLine, "sh -c $'echo x\\n\\nrun `ls`? 1) Run it'");
  assert.deepEqual(q.warnings, ["the agent sets PATH, which decides what programs or code run"]);
  // With useShell, the question shows what really runs: /bin/sh -c and the command line.
  const b = approver(false);
  const sh = new TerminalManager(undefined, settings({ approval: "ask", useShell: true }), nullLogger, testPolicy(), b);
  await assert.rejects(sh.create({ sessionId: "s", command: "echo", args: ["a b"] }));
  assert.equal(b.asked[0]!.question.commandLine, "/bin/sh -c 'echo '\\''a b'\\'''");
  assert.equal(b.asked[0]!.shell, true);
});

test("invalid requests are refused with acp-client's message before anyone is asked", { skip }, async () => {
  const a = approver(true);
  const m = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy(), a);
  const cases: Array<[object, RegExp]> = [
    [
      { command: "ls", env: [{ name: "A\nrun `ls -la`", value: "" }] },
      /^terminal\/create: invalid environment variable name "A\\nrun `ls -la`"/,
    ],
    [{ command: "ls", env: [{ name: "A=B", value: "c" }] }, /invalid environment variable name "A=B"/],
    [{ command: "ls", args: ["a\0b"] }, /an argument contains a NUL byte/],
    [{ command: "" }, /the command is empty/],
  ];
  for (const [req, re] of cases) {
    await assert.rejects(m.create({ sessionId: "s", ...req }), (e: unknown) => {
      assert.ok(e instanceof RequestError && e.code === -32602, String(e));
      assert.match(e.message, re);
      assert.ok(!/[\n\r]/.test(e.message), e.message);
      return true;
    });
  }
  assert.equal(a.asked.length, 0);
  assert.equal(m.size, 0);
});

test("a cwd outside the workspace folders is refused before anyone is asked (symlinks resolved)", { skip }, async () => {
  const a = approver(true);
  const m = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy(), a);
  const script = ["-e", "process.stdout.write(process.cwd())"];
  for (const cwd of [outside, path.join(ws, "escape"), path.join(ws, "sub", "..", ".."), "/", "relative/dir", path.join(ws, "missing")]) {
    await assert.rejects(m.create({ sessionId: "s", command: node, args: script, cwd }), isCode(-32602, /cwd/), cwd);
  }
  assert.equal(a.asked.length, 0);
  const none = new TerminalManager(undefined, settings({ workspaceFolders: [] }), nullLogger, testPolicy());
  await assert.rejects(none.create({ sessionId: "s", command: node, args: script, cwd: ws }), isCode(-32602, /no workspace folder/));
  // Inside: runs there; none given: the first workspace folder.
  for (const [cwd, want] of [
    [path.join(ws, "sub"), path.join(ws, "sub")],
    [undefined, ws],
  ] as const) {
    const { terminalId } = await m.create({ sessionId: "s", command: node, args: script, ...(cwd ? { cwd } : {}) });
    await m.waitForExit({ sessionId: "s", terminalId });
    assert.equal(m.output({ sessionId: "s", terminalId }).output, want);
  }
});

test(
  "acp-client's terminal count: the one past the limit is refused (too_many_terminals) before anyone is asked; a release makes room",
  { skip },
  async () => {
    const { maxTerminals } = limits();
    let asked = 0;
    const m = new TerminalManager(undefined, settings({ approval: "ask" }), nullLogger, testPolicy(), {
      approve: async () => (asked++, true),
    });
    const ids: string[] = [];
    for (let i = 0; i < maxTerminals; i++) ids.push((await m.create({ sessionId: "s", command: node, args: ["-e", ""] })).terminalId);
    assert.equal(asked, maxTerminals);
    const { code } = testPolicy().failureError("too_many_terminals");
    await assert.rejects(m.create({ sessionId: "s", command: node, args: ["-e", ""] }), (e: unknown) => {
      assert.ok(e instanceof RequestError);
      assert.equal(e.code, code);
      assert.match(e.message, new RegExp(`^too many terminals \\(limit ${maxTerminals}\\)`));
      assert.deepEqual(e.data, { reason: "too_many_terminals", limit: maxTerminals });
      return true;
    });
    assert.equal(asked, maxTerminals, "no question for a command that could not run");
    m.release({ sessionId: "s", terminalId: ids.pop()! });
    ids.push((await m.create({ sessionId: "s", command: node, args: ["-e", ""] })).terminalId);
    assert.equal(m.size, maxTerminals);
    for (const terminalId of ids) m.release({ sessionId: "s", terminalId });
  },
);

test("a larger outputByteLimit is capped at acp-client's maximum", { skip, timeout: 30_000 }, async () => {
  const m = mgr();
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "const b = Buffer.alloc(1 << 20, 0x62); for (let i = 0; i < 17; i++) process.stdout.write(b)"],
    outputByteLimit: 64 * 1024 * 1024,
  });
  await m.waitForExit({ sessionId: "s", terminalId });
  const out = m.output({ sessionId: "s", terminalId });
  assert.equal(out.truncated, true);
  assert.equal(Buffer.byteLength(out.output), limits().maxOutputBytes);
  m.release({ sessionId: "s", terminalId });
});
