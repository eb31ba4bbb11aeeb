// The two SDK programs against each other: ts-client.mjs spawning ts-agent.mjs must complete full
// turns. This proves the fixtures themselves before acp-cli/tests/interop_ts_sdk.rs pairs each
// of them with acp-rs. Run with `node --test selftest.mjs` (or `npm test`).

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = path.join(here, "ts-client.mjs");
const AGENT = path.join(here, "ts-agent.mjs");
const WRITTEN = "written by the TypeScript SDK agent through fs/write_text_file\n";

function tempDir() {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-interop-selftest-")));
}

/** Runs ts-client against `agent` and resolves { code, summary, stderr }; bounded by a kill timeout. */
function runClient(args, agent = [process.execPath, AGENT]) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLIENT, "--timeout", "20", ...args, "--", ...agent], { timeout: 30_000, killSignal: "SIGKILL" },
      (error, stdout, stderr) => {
        if (error && error.killed) return reject(new Error(`ts-client was killed after 30 s\nstderr:\n${stderr}`));
        let summary;
        try {
          summary = JSON.parse(stdout);
        } catch {
          return reject(new Error(`ts-client printed no JSON summary (exit ${error?.code ?? 0})\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        }
        resolve({ code: error ? error.code : 0, summary, stderr });
      });
  });
}

test("full turn: plan, chunks, read, permission, write, terminal, end_turn", async () => {
  const cwd = tempDir();
  fs.writeFileSync(path.join(cwd, "input.txt"), "hello from input\n");
  const { code, summary, stderr } = await runClient(["--cwd", cwd, "--prompt", "Please read @input.txt."]);
  assert.equal(code, 0, stderr);
  assert.equal(summary.stopReason, "end_turn");
  assert.equal(summary.protocolVersion, 1);
  assert.equal(summary.agentInfo.name, "acp-rs-interop-ts-agent");
  assert.deepEqual(summary.updateKinds, ["plan", "agent_message_chunk", "tool_call", "tool_call_update"]);
  assert.equal(summary.plan.length, 3);
  assert.match(summary.text, /Hello from the TypeScript SDK agent\. You said: Please read @input\.txt\./);
  assert.match(summary.text, /input\.txt says: hello from input/);
  assert.match(summary.text, /terminal said: interop \(exit 0\)/);
  assert.deepEqual(summary.permissionRequests.map((p) => [p.toolCallId, p.answer]), [["ts-write-1", "allow"]]);
  assert.deepEqual(summary.filesRead.map((f) => f.path), [path.join(cwd, "input.txt")]);
  assert.deepEqual(summary.filesWritten, [{ path: path.join(cwd, "ts-agent-output.txt"), content: WRITTEN }]);
  assert.equal(fs.readFileSync(path.join(cwd, "ts-agent-output.txt"), "utf8"), WRITTEN);
  assert.equal(summary.toolCalls["ts-write-1"].status, "completed");
  assert.deepEqual(summary.toolCalls["ts-write-1"].contentTypes, ["diff"]);
  assert.equal(summary.toolCalls["ts-terminal-1"].status, "completed");
  assert.deepEqual(summary.terminals.map((t) => [t.command, t.args, t.exitCode, t.output]), [["echo", ["interop"], 0, "interop\n"]]);
  assert.deepEqual(summary.agentExit, { code: 0, signal: null });
});

test("--deny: the file is not written, the turn still ends", async () => {
  const cwd = tempDir();
  const { code, summary } = await runClient(["--cwd", cwd, "--deny"]);
  assert.equal(code, 0);
  assert.equal(summary.stopReason, "end_turn");
  assert.deepEqual(summary.permissionRequests.map((p) => p.answer), ["reject"]);
  assert.deepEqual(summary.filesWritten, []);
  assert.equal(fs.existsSync(path.join(cwd, "ts-agent-output.txt")), false);
  assert.equal(summary.toolCalls["ts-write-1"].status, "failed");
  assert.match(summary.text, /Permission denied \(reject\)/);
});

test("cancel while a permission request is pending: stopReason cancelled, nothing written", async () => {
  const cwd = tempDir();
  const { code, summary } = await runClient(["--cwd", cwd, "--cancel-on-permission", "--expect-stop", "cancelled"]);
  assert.equal(code, 0);
  assert.equal(summary.stopReason, "cancelled");
  assert.equal(summary.cancelSent, true);
  assert.equal(fs.existsSync(path.join(cwd, "ts-agent-output.txt")), false);
});

test("cancel a turn that waits for it", async () => {
  const { code, summary } = await runClient(["--prompt", "wait-for-cancel", "--cancel-after-update", "agent_message_chunk", "--expect-stop", "cancelled"]);
  assert.equal(code, 0);
  assert.equal(summary.stopReason, "cancelled");
  assert.equal(summary.cancelSent, true);
});

test("without fs and terminal capabilities the agent uses neither", async () => {
  const cwd = tempDir();
  const { code, summary } = await runClient(["--cwd", cwd, "--no-fs", "--no-terminal", "--prompt", "read @input.txt"]);
  assert.equal(code, 0);
  assert.equal(summary.stopReason, "end_turn");
  assert.deepEqual(summary.filesRead, []);
  assert.deepEqual(summary.filesWritten, []);
  assert.deepEqual(summary.terminals, []);
  assert.match(summary.text, /not reading input\.txt/);
  assert.match(summary.text, /no terminal/);
});

test("file access is confined to the session cwd", async () => {
  const cwd = tempDir();
  const { code, summary } = await runClient(["--cwd", cwd, "--prompt", "read @../../../etc/hostname"]);
  assert.equal(code, 0);
  assert.deepEqual(summary.filesRead, []);
  assert.equal(summary.toolCalls["ts-read-1"].status, "failed");
});

test("a stopReason other than the expected one exits 1", async () => {
  const { code, summary } = await runClient(["--expect-stop", "cancelled"]);
  assert.equal(code, 1);
  assert.equal(summary.ok, false);
  assert.equal(summary.stopReason, "end_turn");
});

test("an agent that is not there is an error, not a hang", async () => {
  const { code, summary } = await runClient([], [path.join(here, "no-such-agent")]);
  assert.equal(code, 3);
  assert.notEqual(summary.error, null);
});

test("#edge probes run and report", async () => {
  const cwd = tempDir();
  const outside = tempDir();
  fs.writeFileSync(path.join(cwd, "lines.txt"), "one\ntwo\nthree\nfour\n");
  const { code, summary } = await runClient(["--cwd", cwd, "--prompt", `#edge outside=${outside}`]);
  assert.equal(code, 0);
  const at = summary.text.indexOf("EDGE-RESULTS ");
  assert.notEqual(at, -1, summary.text.slice(0, 200));
  const results = JSON.parse(summary.text.slice(at + "EDGE-RESULTS ".length));
  assert.equal(results.read_missing.code, -32002);
  assert.equal(results.write_outside.ok, false);
  assert.equal(fs.existsSync(path.join(outside, "written-outside.txt")), false);
  assert.equal(results.terminal_env_exit.value.exitCode, 3);
  assert.equal(results.unknown_client_method.code, -32601);
  assert.equal(results.big_chunk.value, 262144);
});

test("$/cancel_request for the prompt (the SDK's cancellationSignal) ends the turn cancelled", async () => {
  const { code, summary } = await runClient(["--prompt", "wait-for-cancel", "--abort-after-update", "agent_message_chunk", "--expect-stop", "cancelled"]);
  assert.equal(code, 0);
  assert.equal(summary.promptAborted, true);
  assert.equal(summary.stopReason, "cancelled");
});

test("--probe records the agent's edges", async () => {
  const { code, summary } = await runClient(["--probe"]);
  assert.equal(code, 0);
  assert.equal(summary.probes.unknown_agent_method.code, -32601);
  assert.equal(summary.probes.prompt_unknown_session.code, -32002);
  assert.equal(summary.probes.new_session_relative_cwd.code, -32602);
  assert.equal(summary.probes.second_prompt_resource_link.value.stopReason, "end_turn");
});

test("responses that fail the SDK's schemas are reported in schemaViolations", async () => {
  // A raw agent (no SDK) whose initialize and session/prompt results are invalid.
  const dir = tempDir();
  const agent = path.join(dir, "bad-agent.mjs");
  fs.writeFileSync(agent, `
    import * as readline from "node:readline";
    const out = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
    for await (const line of readline.createInterface({ input: process.stdin })) {
      const m = JSON.parse(line);
      if (m.method === "initialize") out({ id: m.id, result: { protocolVersion: "one" } });
      if (m.method === "session/new") out({ id: m.id, result: { sessionId: "s" } });
      if (m.method === "session/prompt") out({ id: m.id, result: { stopReason: "bogus" } });
    }
  `);
  const { code, summary } = await runClient([], [process.execPath, agent]);
  assert.equal(code, 1);
  assert.equal(summary.stopReason, "bogus");
  assert.deepEqual(summary.schemaViolations.map((v) => v.method), ["initialize", "session/prompt"]);
});

test("the SDK agent sees no schema violations in ts-client's responses", async () => {
  const cwd = tempDir();
  fs.writeFileSync(path.join(cwd, "lines.txt"), "one\ntwo\n");
  for (const prompt of ["read @lines.txt", `#edge outside=${tempDir()}`]) {
    const { code, summary } = await runClient(["--cwd", cwd, "--prompt", prompt]);
    assert.equal(code, 0);
    assert.doesNotMatch(summary.text, /SCHEMA-VIOLATIONS/);
    assert.deepEqual(summary.schemaViolations, []);
  }
});

test("ts-agent reports a client's responses that fail the SDK's schemas", async () => {
  // A raw client (no SDK) that answers session/request_permission with an invalid outcome.
  const cwd = tempDir();
  const client = path.join(cwd, "bad-client.mjs");
  fs.writeFileSync(client, `
    import { spawn } from "node:child_process";
    import * as readline from "node:readline";
    const agent = spawn(process.execPath, [${JSON.stringify(AGENT)}], { stdio: ["pipe", "pipe", "inherit"] });
    const out = (m) => agent.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\\n");
    out({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    out({ id: 2, method: "session/new", params: { cwd: ${JSON.stringify(cwd)}, mcpServers: [] } });
    let text = "";
    for await (const line of readline.createInterface({ input: agent.stdout })) {
      const m = JSON.parse(line);
      if (m.id === 2) out({ id: 3, method: "session/prompt", params: { sessionId: m.result.sessionId, prompt: [{ type: "text", text: "hi" }] } });
      if (m.method === "session/request_permission") out({ id: m.id, result: { outcome: { outcome: "selected" } } });
      if (m.method === "session/update" && m.params.update.sessionUpdate === "agent_message_chunk") text += m.params.update.content.text;
      if (m.id === 3) { process.stdout.write(text); agent.stdin.end(); break; }
    }
  `);
  const text = await new Promise((resolve, reject) => {
    execFile(process.execPath, [client], { timeout: 30_000, killSignal: "SIGKILL" }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout));
  });
  assert.match(text, /SCHEMA-VIOLATIONS .*session\/request_permission/);
});
