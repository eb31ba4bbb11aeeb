#!/usr/bin/env node
// An ACP agent written with the official TypeScript SDK (@agentclientprotocol/sdk), speaking
// newline-delimited JSON-RPC on its own stdio. acp-rs's client (`acp chat`) is tested against it
// by acp-cli/tests/interop_ts_sdk.rs; ts-client.mjs is tested against it by selftest.mjs.
//
// SDK 2.x removed `AgentSideConnection`; its replacement is the app API used here:
// `agent().onRequest(...).onNotification(...).connect(ndJsonStream(...))`.
//
// Per prompt, deterministically:
//   1. a `plan` update (three entries);
//   2. `agent_message_chunk` updates: "Hello from the TypeScript SDK agent. " and "You said: <text>";
//   3. for every `@NAME` token in the prompt, when the client advertised fs.readTextFile: a read
//      tool call, `fs/read_text_file` of <cwd>/NAME, and a chunk "NAME says: <content>";
//   4. a `tool_call` (edit, pending) for <cwd>/ts-agent-output.txt, `session/request_permission`
//      with allow_once "allow" / reject_once "reject"; when allowed and the client advertised
//      fs.writeTextFile, `fs/write_text_file` with WRITE_CONTENT, then a `tool_call_update`
//      (completed, with a diff); when rejected, a `tool_call_update` (failed);
//   5. when the client advertised `terminal`: a `tool_call` (execute), `terminal/create` of
//      `echo interop`, `terminal/wait_for_exit`, `terminal/output`, `terminal/release`, a
//      `tool_call_update` (completed) and a chunk "terminal said: <output>";
//   6. stopReason `end_turn`.
// After `session/cancel` (or `$/cancel_request` for the prompt) the turn ends `cancelled`.
//
// Magic words in the prompt replace steps 2-6, acting right after the plan and the greeting:
//   wait-for-cancel   a chunk "Waiting for session/cancel.", then wait (no timer) for the cancel;
//   #edge [outside=DIR]  probes of the client's fs and terminal methods at their edges
//                     (runEdgeProbes), reported as one chunk "EDGE-RESULTS <json>";
//   #stop=REASON      return that stopReason;
//   #fail             answer with a JSON-RPC error (-32603, "ts-agent failed on purpose");
//   #crash            exit the process with code 42;
//   #garbage          write a non-JSON line to stdout, then the normal turn;
//   #big-io           write big-io.txt (2.5 MB) through fs/write_text_file, read it back, send a
//                     1.5 MiB agent_message_chunk, report "BIG-IO <json>";
//   #unknown-updates  session/update kinds a v1 client may not know (the SDK's stable `notice`,
//                     a `_`-prefixed custom kind, a tool_call with unknown fields and `_meta`),
//                     then "after unknown updates".
// Diagnostics go to stderr, never stdout. ACP_INTEROP_TRACE=FILE traces the wire to FILE. The
// client's responses are checked against the SDK's zod schemas (validate.mjs); a turn that saw
// violations ends with a chunk "SCHEMA-VIOLATIONS <json>" (only then).

import { Readable, Writable } from "node:stream";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { traced } from "./trace.mjs";
import { checkedMessages, responseChecker } from "./validate.mjs";

const WRITE_FILE = "ts-agent-output.txt";
const WRITE_CONTENT = "written by the TypeScript SDK agent through fs/write_text_file\n";

let clientCapabilities = {};
let nextSession = 1;
/** sessionId -> { cwd, turn: { cancelled, abort: AbortController } | null } */
const sessions = new Map();

function log(...args) {
  process.stderr.write(`ts-agent: ${args.join(" ")}\n`);
}

class Cancelled extends Error {}

function promptText(prompt) {
  const parts = [];
  for (const block of prompt) {
    if (block.type === "text") parts.push(block.text);
    else if (block.type === "resource_link") parts.push(`@${block.uri}`);
    else if (block.type === "resource" && "text" in block.resource) parts.push(block.resource.text);
  }
  return parts.join("\n");
}

function mentionedFiles(text) {
  const names = [];
  for (const m of text.matchAll(/(?:^|\s)@([^\s@]+)/g)) {
    let name = m[1].replace(/[.,;:!?)]+$/, "");
    if (name.startsWith("file://")) name = decodeURIComponent(new URL(name).pathname);
    if (name && !names.includes(name)) names.push(name);
  }
  return names;
}

const app = acp
  .agent({ name: "acp-rs-interop-ts-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? {};
    log(`initialize protocolVersion=${params.protocolVersion} caps=${JSON.stringify(clientCapabilities)}`);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false, promptCapabilities: { embeddedContext: true } },
      agentInfo: { name: "acp-rs-interop-ts-agent", title: "ACP TypeScript SDK interop agent", version: "1.0.0" },
      authMethods: [],
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    if (!path.isAbsolute(params.cwd)) {
      throw acp.RequestError.invalidParams({ cwd: params.cwd }, "cwd must be an absolute path");
    }
    const sessionId = `ts-session-${nextSession++}`;
    sessions.set(sessionId, { cwd: params.cwd, turn: null });
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    log(`session/cancel for ${params.sessionId}${session?.turn ? "" : " (no turn running)"}`);
    if (session?.turn) {
      session.turn.cancelled = true;
      session.turn.abort.abort(new Cancelled("session/cancel"));
    }
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    if (session.turn) throw acp.RequestError.invalidRequest(undefined, "a prompt turn is already running");
    const turn = { cancelled: false, abort: new AbortController() };
    session.turn = turn;
    // `$/cancel_request` for this very request aborts `signal`: treat it like session/cancel.
    signal.addEventListener("abort", () => {
      log(`$/cancel_request for the session/prompt of ${params.sessionId}`);
      turn.cancelled = true;
      turn.abort.abort(new Cancelled("$/cancel_request"));
    }, { once: true });
    try {
      const response = await runTurn(client, params.sessionId, session.cwd, promptText(params.prompt), turn);
      await reportViolations(client, params.sessionId);
      return response;
    } catch (error) {
      if (turn.cancelled) return { stopReason: "cancelled" };
      throw error;
    } finally {
      session.turn = null;
    }
  });

/** Reports the client's responses that failed the schemas, once, as a final chunk. */
let reported = 0;
async function reportViolations(client, sessionId) {
  const fresh = checker.violations.slice(reported);
  reported = checker.violations.length;
  if (fresh.length === 0) return;
  log(`schema violations: ${JSON.stringify(fresh)}`);
  await client.notify(acp.methods.client.session.update, {
    sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `\nSCHEMA-VIOLATIONS ${JSON.stringify(fresh)}` } },
  });
}

async function runTurn(client, sessionId, cwd, text, turn) {
  const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
  const say = (t) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
  const checkCancelled = () => {
    if (turn.cancelled) throw new Cancelled("session/cancel");
  };

  const fs = clientCapabilities.fs ?? {};
  await update({
    sessionUpdate: "plan",
    entries: [
      { content: "Read the files named in the prompt", priority: "medium", status: "pending" },
      { content: `Write ${WRITE_FILE}`, priority: "high", status: "pending" },
      { content: "Run `echo interop` in a terminal", priority: "low", status: "pending" },
    ],
  });
  await say("Hello from the TypeScript SDK agent. ");

  if (/\bwait-for-cancel\b/.test(text)) {
    await say("Waiting for session/cancel.");
    await new Promise((resolve) => {
      if (turn.abort.signal.aborted) resolve();
      turn.abort.signal.addEventListener("abort", resolve, { once: true });
    });
    return { stopReason: "cancelled" };
  }
  const stop = /#stop=([a-z_]+)/.exec(text);
  if (stop) return { stopReason: stop[1] };
  if (/#fail\b/.test(text)) throw acp.RequestError.internalError({ why: "#fail" }, "ts-agent failed on purpose");
  if (/#crash\b/.test(text)) {
    log("exiting with code 42 (#crash)");
    process.exit(42);
  }
  if (/#garbage\b/.test(text)) process.stdout.write("this line is not JSON (#garbage)\n");
  if (/#unknown-updates\b/.test(text)) {
    await update({ sessionUpdate: "notice", severity: "info", title: "a notice from the TypeScript SDK agent" });
    await update({ sessionUpdate: "_acp_interop_custom", detail: "a custom update kind" });
    await update({
      sessionUpdate: "tool_call", toolCallId: "ts-future-1", title: "A tool call from the future", kind: "other",
      status: "completed", futureField: { nested: [1, 2, 3] }, _meta: { "acp-interop": true },
    });
    await say("after unknown updates");
    return { stopReason: "end_turn" };
  }
  if (/#big-io\b/.test(text)) {
    const line = (i) => `line ${String(i).padStart(7, "0")} "quoted" \\ \u00e9 \u2713\n`;
    const content = Array.from({ length: 80000 }, (_, i) => line(i)).join("");
    const bigPath = path.join(cwd, "big-io.txt");
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: bigPath, content });
    const back = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: bigPath });
    await say("z".repeat(1536 * 1024));
    await say(`BIG-IO ${JSON.stringify({ bytes: Buffer.byteLength(content), roundTrip: back.content === content })}`);
    return { stopReason: "end_turn" };
  }
  if (/#edge\b/.test(text)) {
    const results = await runEdgeProbes(client, sessionId, cwd, text);
    await say(`EDGE-RESULTS ${JSON.stringify(results)}`);
    return { stopReason: "end_turn" };
  }
  await say(`You said: ${text}`);
  checkCancelled();

  // 3. Read the files named in the prompt.
  let n = 0;
  for (const name of mentionedFiles(text)) {
    if (!fs.readTextFile) {
      await say(`\n(not reading ${name}: the client did not advertise fs.readTextFile)`);
      continue;
    }
    const filePath = path.resolve(cwd, name);
    const toolCallId = `ts-read-${++n}`;
    await update({
      sessionUpdate: "tool_call", toolCallId, title: `Read ${name}`, kind: "read", status: "in_progress",
      locations: [{ path: filePath }],
    });
    try {
      const { content } = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: filePath });
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
      await say(`\n${name} says: ${content}`);
    } catch (error) {
      checkCancelled();
      await update({
        sessionUpdate: "tool_call_update", toolCallId, status: "failed",
        content: [{ type: "content", content: { type: "text", text: String(error?.message ?? error) } }],
      });
    }
    checkCancelled();
  }

  // 4. Ask permission, then write a file through the client.
  const writePath = path.join(cwd, WRITE_FILE);
  const writeId = "ts-write-1";
  await update({
    sessionUpdate: "tool_call", toolCallId: writeId, title: `Write ${WRITE_FILE}`, kind: "edit", status: "pending",
    locations: [{ path: writePath }], rawInput: { path: writePath, content: WRITE_CONTENT },
  });
  const permission = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: writeId, title: `Write ${WRITE_FILE}`, kind: "edit", status: "pending", locations: [{ path: writePath }] },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  });
  if (permission.outcome.outcome === "cancelled" || turn.cancelled) {
    await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "failed" });
    return { stopReason: "cancelled" };
  }
  if (permission.outcome.optionId === "allow") {
    if (fs.writeTextFile) {
      await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "in_progress" });
      await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: writePath, content: WRITE_CONTENT });
      await update({
        sessionUpdate: "tool_call_update", toolCallId: writeId, status: "completed",
        content: [{ type: "diff", path: writePath, oldText: null, newText: WRITE_CONTENT }],
      });
      await say(`\nWrote ${WRITE_FILE}.`);
    } else {
      await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "failed" });
      await say(`\nNot writing ${WRITE_FILE}: the client did not advertise fs.writeTextFile.`);
    }
  } else {
    await update({ sessionUpdate: "tool_call_update", toolCallId: writeId, status: "failed" });
    await say(`\nPermission denied (${permission.outcome.optionId}); not writing ${WRITE_FILE}.`);
  }
  checkCancelled();

  // 5. Run a command in a client terminal.
  if (clientCapabilities.terminal) {
    const runId = "ts-terminal-1";
    await update({
      sessionUpdate: "tool_call", toolCallId: runId, title: "Run echo interop", kind: "execute", status: "in_progress",
      rawInput: { command: "echo", args: ["interop"] },
    });
    const terminal = await client.createTerminal({ sessionId, command: "echo", args: ["interop"], cwd, outputByteLimit: 4096 });
    try {
      await update({
        sessionUpdate: "tool_call_update", toolCallId: runId,
        content: [{ type: "terminal", terminalId: terminal.id }],
      });
      const exit = await terminal.waitForExit();
      const out = await terminal.currentOutput();
      await update({
        sessionUpdate: "tool_call_update", toolCallId: runId, status: exit.exitCode === 0 ? "completed" : "failed",
        rawOutput: { exitCode: exit.exitCode ?? null, signal: exit.signal ?? null, output: out.output },
      });
      await say(`\nterminal said: ${out.output.trim()} (exit ${exit.exitCode ?? exit.signal})`);
    } finally {
      await terminal.release();
    }
  } else {
    await say("\n(no terminal: the client did not advertise it)");
  }
  checkCancelled();

  await say("\nDone.");
  return { stopReason: "end_turn" };
}

// ACP_INTEROP_TRACE=FILE appends the raw wire to FILE ("-> " sent by this agent, "<- " received).
const traceFile = process.env.ACP_INTEROP_TRACE;
const toClient = traced(traceFile, "-> ");
toClient.readable.pipeTo(Writable.toWeb(process.stdout)).catch(() => {});
const fromClient = Readable.toWeb(process.stdin).pipeThrough(traced(traceFile, "<- "));
/**
 * Probes of the client's fs and terminal methods at their edges. Each probe's result is
 * { ok: true, value } or { ok: false, code, message }; the caller judges them. `outside=DIR` in
 * the prompt names a directory outside the session cwd for the confinement probes.
 */
async function runEdgeProbes(client, sessionId, cwd, text) {
  const results = {};
  const probe = async (name, f) => {
    try {
      results[name] = { ok: true, value: await f() };
    } catch (e) {
      results[name] = { ok: false, code: e?.code ?? null, message: String(e?.message ?? e) };
    }
  };
  const fs = clientCapabilities.fs ?? {};
  const outside = /(?:^|\s)outside=(\S+)/.exec(text)?.[1] ?? "/nonexistent-outside-dir";
  const read = (p, extra = {}) => client.request(acp.methods.client.fs.readTextFile, { sessionId, path: p, ...extra });
  const write = (p, content) => client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: p, content });

  if (fs.readTextFile) {
    await probe("read_line_limit", async () => (await read(path.join(cwd, "lines.txt"), { line: 2, limit: 2 })).content);
    await probe("read_missing", async () => (await read(path.join(cwd, "missing.txt"))).content);
    await probe("read_outside", async () => (await read(path.join(outside, "secret.txt"))).content);
    await probe("read_dotdot", async () => (await read(path.join(cwd, "..", path.basename(outside), "secret.txt"))).content);
  }
  if (fs.writeTextFile) {
    await probe("write_nested", () => write(path.join(cwd, "sub", "dir", "nested.txt"), "nested\n"));
    await probe("write_outside", () => write(path.join(outside, "written-outside.txt"), "must not exist\n"));
    const unicode = "h\u00e9llo \u2014 \u2713 \ud83e\udd80\r\nline 2 \"quoted\" \\ back\n";
    await probe("write_read_unicode", async () => {
      await write(path.join(cwd, "unicode.txt"), unicode);
      return (await read(path.join(cwd, "unicode.txt"))).content === unicode;
    });
  }
  if (clientCapabilities.terminal) {
    const node = process.execPath;
    const run = async (params, { kill = false } = {}) => {
      const t = await client.createTerminal({ sessionId, ...params });
      try {
        if (kill) await t.kill();
        const exit = await t.waitForExit();
        const out = await t.currentOutput();
        return { exitCode: exit.exitCode ?? null, signal: exit.signal ?? null, output: out.output, truncated: out.truncated, exitStatus: out.exitStatus ?? null };
      } finally {
        await t.release();
      }
    };
    await probe("terminal_env_exit", () => run({
      command: node, args: ["-e", "process.stdout.write(process.env.INTEROP_VAR + '|' + process.cwd()); process.exit(3)"],
      env: [{ name: "INTEROP_VAR", value: "from-env" }], cwd,
    }));
    await probe("terminal_stderr", () => run({ command: node, args: ["-e", "process.stderr.write('to-stderr')"] }));
    await probe("terminal_truncate", () => run({
      command: node, args: ["-e", "process.stdout.write('x'.repeat(1000) + '\u00e9END')"], outputByteLimit: 100,
    }));
    await probe("terminal_kill", () => run({ command: node, args: ["-e", "setInterval(() => {}, 1000)"] }, { kill: true }));
    await probe("terminal_cwd_outside", () => run({ command: "pwd", cwd: outside }));
    await probe("terminal_missing_command", () => run({ command: "acp-interop-no-such-command" }));
    await probe("terminal_output_after_release", async () => {
      const t = await client.createTerminal({ sessionId, command: "true" });
      await t.waitForExit();
      await t.release();
      return await client.request(acp.methods.client.terminal.output, { sessionId, terminalId: t.id });
    });
  }
  await probe("unknown_client_method", () => client.request("_acp_interop/no_such_method", { sessionId }));
  await probe("big_chunk", async () => {
    const big = "0123456789abcdef".repeat(16 * 1024); // 256 KiB
    await client.notify(acp.methods.client.session.update, {
      sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: big } },
    });
    return big.length;
  });
  return results;
}

// The SDK does not validate the responses it receives: check the client's against its schemas.
const checker = responseChecker();
const connection = app.connect(checkedMessages(checker, acp.ndJsonStream(toClient.writable, fromClient)));
await connection.closed;
log("connection closed");
process.exit(0);
