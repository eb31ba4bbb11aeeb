import { test } from "node:test";
import assert from "node:assert/strict";
import { OutputBuffer, TerminalManager, shellQuote, type TerminalDisplay, type TerminalDisplayFactory } from "../../src/bridges/terminal";
import { CancellationSource } from "../../src/protocol/cancellation";
import { nullLogger } from "../../src/protocol/log";
import { RequestError, type TerminalExitStatus } from "../../src/protocol/types";

const node = process.execPath;

test("OutputBuffer keeps everything without a limit", () => {
  const b = new OutputBuffer();
  b.append(Buffer.from("héllo "));
  b.append(Buffer.from("wörld"));
  assert.equal(b.text(), "héllo wörld");
  assert.equal(b.truncated, false);
});

test("OutputBuffer truncates from the front at a character boundary", () => {
  // "€" is 3 bytes (e2 82 ac), "😀" is 4 bytes.
  const b = new OutputBuffer(5);
  b.append(Buffer.from("a€😀"));
  // 8 bytes, keep the last 5: would start inside "€" + the emoji... the last 5 bytes are "ac" + emoji(4):
  // the continuation byte "ac" is skipped, so only the emoji (4 bytes) is kept.
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
  const z = new OutputBuffer(0);
  z.append(Buffer.from("abc"));
  assert.equal(z.text(), "");
  assert.equal(z.truncated, true);
});

class RecordingDisplays implements TerminalDisplayFactory {
  created: Array<{ title: string; out: string[]; exit?: TerminalExitStatus; disposed: boolean; input: (d: string) => void }> = [];
  create(title: string, onInput: (d: string) => void): TerminalDisplay {
    const rec = { title, out: [] as string[], disposed: false, input: onInput, exit: undefined as TerminalExitStatus | undefined };
    this.created.push(rec);
    return { write: (t) => rec.out.push(t), exited: (s) => (rec.exit = s), dispose: () => (rec.disposed = true) };
  }
}

const mgr = (displays?: TerminalDisplayFactory, useShell = false) =>
  new TerminalManager(displays, () => ({ useShell, killGraceMs: 200, approval: "allow" }), nullLogger);

test("runs a real process without a shell; output, exit code, display", async () => {
  const d = new RecordingDisplays();
  const m = mgr(d);
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
  assert.equal(d.created.length, 1);
  assert.equal(d.created[0]!.out.join(""), "$HOME;echo:v");
  assert.deepEqual(d.created[0]!.exit, { exitCode: 3, signal: null });
  m.release({ sessionId: "s", terminalId });
});

test("outputByteLimit truncates and reports it", async () => {
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

test("kill ends a running process (its group), output stays until release", async () => {
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
  assert.throws(() => m.output({ sessionId: "s", terminalId }), (e: unknown) => e instanceof RequestError && e.code === -32602);
});

test("release kills a running process", async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", "setInterval(() => {}, 1000)"] });
  const exited = m.waitForExit({ sessionId: "s", terminalId });
  m.release({ sessionId: "s", terminalId });
  assert.equal((await exited).signal, "SIGTERM");
  assert.equal(m.size, 0);
});

test("wait_for_exit gives up when its request is cancelled", async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", "setInterval(() => {}, 1000)"] });
  const src = new CancellationSource();
  const w = m.waitForExit({ sessionId: "s", terminalId }, src.token);
  src.cancel();
  await assert.rejects(w, (e: unknown) => e instanceof RequestError && e.code === -32800);
  m.release({ sessionId: "s", terminalId });
});

test("a command that does not exist exits 127 with a message", async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: "/nonexistent/acp-test-cmd" });
  assert.deepEqual(await m.waitForExit({ sessionId: "s", terminalId }), { exitCode: 127, signal: null });
  assert.match(m.output({ sessionId: "s", terminalId }).output, /failed to start/);
});

test("unknown terminal ids and other sessions' terminals are InvalidParams", async () => {
  const m = mgr();
  const { terminalId } = await m.create({ sessionId: "s", command: node, args: ["-e", ""] });
  assert.throws(() => m.output({ sessionId: "s", terminalId: "term-999" }), /unknown terminalId/);
  assert.throws(() => m.output({ sessionId: "other", terminalId }), /unknown terminalId/);
  assert.throws(() => m.create({ sessionId: "s" }), /command missing/);
  await m.waitForExit({ sessionId: "s", terminalId });
});

test("useShell runs the command line under sh with quoted args", async () => {
  const m = mgr(undefined, true);
  const { terminalId } = await m.create({ sessionId: "s", command: "echo $((1+2))", args: ["a b", "it's"] });
  await m.waitForExit({ sessionId: "s", terminalId });
  assert.equal(m.output({ sessionId: "s", terminalId }).output, "3 a b it's\n");
  assert.equal(shellQuote("plain/path.txt"), "plain/path.txt");
});

test("input typed in the terminal panel reaches the process", async () => {
  const d = new RecordingDisplays();
  const m = mgr(d);
  const { terminalId } = await m.create({
    sessionId: "s",
    command: node,
    args: ["-e", "process.stdin.once('data', (b) => { process.stdout.write('got ' + b); process.exit(0) })"],
  });
  d.created[0]!.input("ping\n");
  await m.waitForExit({ sessionId: "s", terminalId });
  assert.equal(m.output({ sessionId: "s", terminalId }).output, "got ping\n");
});

test("terminal commands get an explicit environment: no host secrets unless passed through", async () => {
  process.env.ACP_TEST_SECRET_TOKEN = "do-not-leak";
  try {
    const script = "process.stdout.write(JSON.stringify([process.env.ACP_TEST_SECRET_TOKEN ?? null, !!process.env.PATH, process.env.ACP_T]))";
    const run = async (passthrough: string[]) => {
      const m = new TerminalManager(undefined, () => ({ useShell: false, approval: "allow", envPolicy: { passthrough, inheritAll: false } }), nullLogger);
      const { terminalId } = await m.create({ sessionId: "s", command: process.execPath, args: ["-e", script], env: [{ name: "ACP_T", value: "given" }] });
      await m.waitForExit({ sessionId: "s", terminalId }, new CancellationSource().token);
      return JSON.parse(m.output({ sessionId: "s", terminalId }).output);
    };
    assert.deepEqual(await run([]), [null, true, "given"]);
    assert.deepEqual(await run(["ACP_TEST_*"]), ["do-not-leak", true, "given"]);
  } finally {
    delete process.env.ACP_TEST_SECRET_TOKEN;
  }
});

test("terminal/create always goes through a permission decision", async () => {
  const asked: string[] = [];
  const approver = (answer: boolean) => ({
    approve: async (r: { commandLine: string; envNames: string[] }) => {
      asked.push(`${r.commandLine} [${r.envNames.join(",")}]`);
      return answer;
    },
  });
  const req = { sessionId: "s", command: process.execPath, args: ["-e", "process.stdout.write('ran')"], env: [{ name: "K", value: "v" }] };
  // Refused: a permission_denied error, and no process is started.
  const refused = new TerminalManager(undefined, () => ({ useShell: false }), nullLogger, approver(false));
  await assert.rejects(refused.create(req), (e: unknown) => {
    assert.ok(e instanceof RequestError);
    assert.match(e.message, /permission denied/);
    assert.deepEqual(e.data, { reason: "permission_denied" });
    return true;
  });
  assert.equal(refused.size, 0);
  // Allowed: it runs.
  const allowed = new TerminalManager(undefined, () => ({ useShell: false }), nullLogger, approver(true));
  const { terminalId } = await allowed.create(req);
  await allowed.waitForExit({ sessionId: "s", terminalId });
  assert.equal(allowed.output({ sessionId: "s", terminalId }).output, "ran");
  assert.equal(asked.length, 2);
  assert.match(asked[0]!, /-e .*\[K\]$/);
  // "ask" with nobody to ask refuses; only an explicit "allow" setting skips the question.
  const nobody = new TerminalManager(undefined, () => ({ useShell: false }), nullLogger);
  await assert.rejects(nobody.create(req), /permission denied/);
  allowed.release({ sessionId: "s", terminalId });
});
