#!/usr/bin/env node
// An ACP client written with the official TypeScript SDK (@agentclientprotocol/sdk). It spawns the
// agent command given after `--`, runs initialize + session/new + one session/prompt, and prints a
// JSON summary of the turn on stdout. acp-rs's demo agent (`acp demo-agent`) is tested against it
// by acp-cli/tests/interop_ts_sdk.rs; ts-agent.mjs is tested against it by selftest.mjs.
//
// SDK 2.x removed `ClientSideConnection`; its replacement is the app API used here:
// `client().onRequest(...).onNotification(...).connectWith(ndJsonStream(...), op)`.
//
//   node ts-client.mjs [options] -- AGENT_COMMAND [ARGS...]
//
//   --prompt TEXT            the prompt (default: "Hello from the TypeScript SDK client")
//   --cwd DIR                the session's cwd; file access is confined to it (default: a new temp dir)
//   --deny                   answer permission requests with the first reject option
//   --cancel-on-permission   on a permission request: send session/cancel and answer `cancelled`
//   --cancel-after-update K  send session/cancel after the first session/update of kind K
//   --abort-after-update K   abort the session/prompt request itself (the SDK sends
//                            `$/cancel_request`) after the first session/update of kind K
//   --probe                  after the turn, probe the agent's edges (errors for an unknown session,
//                            an unknown method, a relative cwd; a second prompt with a resource
//                            link; session/load when advertised) into summary.probes
//   --meta                   add `_meta` to initialize, session/new and session/prompt, and advertise
//                            capabilities from newer schemas (session.notices, session.compaction)
//   --no-fs, --no-terminal   do not advertise (nor serve) fs / terminal capabilities
//   --expect-stop REASON     exit 0 only for this stopReason (default: end_turn)
//   --timeout S              give up after S seconds (default: 30), killing the agent
//   --ws URL                 connect to an ACP WebSocket server (e.g. `acp serve --ws`) instead of
//                            spawning an agent; then no AGENT_COMMAND is given
//   --trace FILE             append the raw wire to FILE, one line per message ("-> " sent, "<- " received)
//
// summary.schemaViolations lists the agent's responses that fail the SDK's zod schemas (the SDK
// itself validates only the requests and notifications it receives).
//
// Exit codes: 0 the turn ended with the expected stopReason; 1 it ended with another; 2 usage;
// 3 protocol error, agent crash or timeout. The summary is printed in every case but usage errors.
// The agent's stderr passes through to this program's stderr.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as fsp from "node:fs/promises";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { traced, tracedMessages } from "./trace.mjs";
import { checkedMessages, responseChecker } from "./validate.mjs";

function usage(message) {
  process.stderr.write(`ts-client: ${message}\nusage: node ts-client.mjs [--prompt TEXT] [--cwd DIR] [--deny] ` +
    `[--cancel-on-permission] [--cancel-after-update KIND] [--abort-after-update KIND] [--probe] [--meta] [--no-fs] [--no-terminal] [--expect-stop REASON] ` +
    `[--timeout S] [--trace FILE] (--ws URL | -- AGENT_COMMAND [ARGS...])\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    prompt: "Hello from the TypeScript SDK client", cwd: null, deny: false, cancelOnPermission: false,
    cancelAfterUpdate: null, abortAfterUpdate: null, probe: false, meta: false, fs: true, terminal: true, expectStop: "end_turn", timeoutS: 30, trace: null, ws: null, agent: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--": opts.agent = argv.slice(i + 1); i = argv.length; break;
      case "--prompt": opts.prompt = value(); break;
      case "--cwd": opts.cwd = value(); break;
      case "--deny": opts.deny = true; break;
      case "--cancel-on-permission": opts.cancelOnPermission = true; break;
      case "--cancel-after-update": opts.cancelAfterUpdate = value(); break;
      case "--abort-after-update": opts.abortAfterUpdate = value(); break;
      case "--probe": opts.probe = true; break;
      case "--meta": opts.meta = true; break;
      case "--no-fs": opts.fs = false; break;
      case "--no-terminal": opts.terminal = false; break;
      case "--expect-stop": opts.expectStop = value(); break;
      case "--timeout": opts.timeoutS = Number(value()); break;
      case "--trace": opts.trace = value(); break;
      case "--ws": opts.ws = value(); break;
      default: usage(`unknown argument ${JSON.stringify(a)}`);
    }
  }
  if (opts.agent.length === 0 && !opts.ws) usage("missing agent command after -- (or --ws URL)");
  if (opts.agent.length > 0 && opts.ws) usage("give either --ws URL or an agent command, not both");
  if (!(opts.timeoutS > 0)) usage("--timeout needs a positive number of seconds");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const cwd = fs.realpathSync(opts.cwd ? path.resolve(opts.cwd) : fs.mkdtempSync(path.join(os.tmpdir(), "acp-ts-client-")));

const summary = {
  ok: false,
  stopReason: null,
  error: null,
  cwd,
  agentCommand: opts.ws ? null : opts.agent,
  wsUrl: opts.ws,
  protocolVersion: null,
  agentInfo: null,
  agentCapabilities: null,
  sessionId: null,
  updateKinds: [],
  updateCounts: {},
  text: "",
  plan: null,
  toolCalls: {},
  permissionRequests: [],
  filesRead: [],
  filesWritten: [],
  terminals: [],
  cancelSent: false,
  promptAborted: false,
  schemaViolations: [],
  probes: null,
  agentExit: null,
};
const promptAbort = new AbortController();

// ---- the session's file system, confined to cwd ----

function confine(p) {
  if (typeof p !== "string" || !path.isAbsolute(p)) {
    throw acp.RequestError.invalidParams({ path: p }, "path must be absolute");
  }
  const resolved = path.resolve(p);
  // Resolve symlinks of the longest existing prefix, so a link cannot lead outside cwd.
  let existing = resolved;
  const rest = [];
  while (!fs.existsSync(existing)) {
    rest.unshift(path.basename(existing));
    existing = path.dirname(existing);
  }
  const real = path.join(fs.realpathSync(existing), ...rest);
  const rel = path.relative(cwd, real);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) {
    throw acp.RequestError.invalidParams({ path: p }, `path is outside the session cwd ${cwd}`);
  }
  return real;
}

// ---- terminals: real processes, no shell ----

const terminals = new Map();
let nextTerminal = 1;

function trimToLimit(term) {
  if (term.limit == null) return;
  let buf = Buffer.from(term.output, "utf8");
  if (buf.length <= term.limit) return;
  buf = buf.subarray(buf.length - term.limit);
  // Drop UTF-8 continuation bytes so the output starts at a character boundary.
  let start = 0;
  while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
  term.output = buf.subarray(start).toString("utf8");
  term.truncated = true;
}

async function createTerminal(params) {
  const termCwd = params.cwd ?? cwd;
  const env = { ...process.env };
  for (const { name, value } of params.env ?? []) env[name] = value;
  const child = spawn(params.command, params.args ?? [], { cwd: termCwd, env, shell: false, stdio: ["ignore", "pipe", "pipe"] });
  const terminalId = `term-${nextTerminal++}`;
  const term = {
    child, output: "", truncated: false, limit: params.outputByteLimit ?? null, exitStatus: null,
    record: { terminalId, command: params.command, args: params.args ?? [], cwd: termCwd, exitCode: null, signal: null, output: "" },
  };
  const onData = (chunk) => {
    term.output += chunk.toString("utf8");
    trimToLimit(term);
    term.record.output = term.output;
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  term.exited = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      term.exitStatus = { exitCode: code, signal };
      term.record.exitCode = code;
      term.record.signal = signal;
      resolve(term.exitStatus);
    });
  });
  await new Promise((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (e) => reject(acp.RequestError.internalError({ command: params.command }, `cannot run ${params.command}: ${e.message}`)));
  });
  terminals.set(terminalId, term);
  summary.terminals.push(term.record);
  return { terminalId };
}

function terminal(params) {
  const term = terminals.get(params.terminalId);
  if (!term) throw acp.RequestError.resourceNotFound(params.terminalId);
  return term;
}

// ---- the client app ----

let session = null; // { ctx, sessionId }
async function sendCancel(ctx) {
  if (summary.cancelSent || !session) return;
  summary.cancelSent = true;
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
}

const app = acp
  .client({ name: "acp-rs-interop-ts-client" })
  .onNotification(acp.methods.client.session.update, ({ params, agent }) => {
    const u = params.update;
    const kind = u.sessionUpdate;
    if (!summary.updateKinds.includes(kind)) summary.updateKinds.push(kind);
    summary.updateCounts[kind] = (summary.updateCounts[kind] ?? 0) + 1;
    if (kind === "agent_message_chunk" && u.content.type === "text") summary.text += u.content.text;
    if (kind === "plan") summary.plan = u.entries;
    if (kind === "tool_call") {
      summary.toolCalls[u.toolCallId] = {
        title: u.title, kind: u.kind ?? null, status: u.status ?? null, contentTypes: (u.content ?? []).map((c) => c.type),
      };
    }
    if (kind === "tool_call_update") {
      const tc = (summary.toolCalls[u.toolCallId] ??= { title: null, kind: null, status: null, contentTypes: [], orphanUpdate: true });
      if (u.title != null) tc.title = u.title;
      if (u.kind != null) tc.kind = u.kind;
      if (u.status != null) tc.status = u.status;
      for (const c of u.content ?? []) tc.contentTypes.push(c.type);
    }
    if (opts.abortAfterUpdate === kind && !summary.promptAborted) {
      summary.promptAborted = true;
      promptAbort.abort(new Error("--abort-after-update"));
    }
    if (opts.cancelAfterUpdate === kind) sendCancel(agent).catch((e) => process.stderr.write(`ts-client: cancel failed: ${e}\n`));
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent }) => {
    const wanted = opts.deny ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
    const option = params.options.find((o) => wanted.includes(o.kind));
    const record = {
      toolCallId: params.toolCall.toolCallId,
      title: params.toolCall.title ?? summary.toolCalls[params.toolCall.toolCallId]?.title ?? null,
      options: params.options.map((o) => ({ optionId: o.optionId, kind: o.kind, name: o.name })),
      answer: null,
    };
    summary.permissionRequests.push(record);
    if (opts.cancelOnPermission) {
      await sendCancel(agent);
      record.answer = "cancelled";
      return { outcome: { outcome: "cancelled" } };
    }
    if (!option) {
      record.answer = "cancelled (no matching option)";
      return { outcome: { outcome: "cancelled" } };
    }
    record.answer = option.optionId;
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

if (opts.fs) {
  app
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      const real = confine(params.path);
      let content;
      try {
        content = await fsp.readFile(real, "utf8");
      } catch (e) {
        if (e.code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
        throw e;
      }
      if (params.line != null || params.limit != null) {
        const lines = content.split("\n");
        const from = Math.max(0, (params.line ?? 1) - 1);
        content = lines.slice(from, params.limit != null ? from + params.limit : undefined).join("\n");
      }
      summary.filesRead.push({ path: params.path, bytes: Buffer.byteLength(content) });
      return { content };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      const real = confine(params.path);
      await fsp.mkdir(path.dirname(real), { recursive: true });
      await fsp.writeFile(real, params.content, "utf8");
      summary.filesWritten.push({ path: params.path, content: params.content });
      return {};
    });
}

if (opts.terminal) {
  app
    .onRequest(acp.methods.client.terminal.create, ({ params }) => createTerminal(params))
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const term = terminal(params);
      return { output: term.output, truncated: term.truncated, exitStatus: term.exitStatus };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
      return await terminal(params).exited;
    })
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      const term = terminal(params);
      if (term.exitStatus === null) term.child.kill("SIGTERM");
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, ({ params }) => {
      const term = terminal(params);
      if (term.exitStatus === null) term.child.kill("SIGKILL");
      terminals.delete(params.terminalId);
      return {};
    });
}

// ---- probes of the agent's edges ----

async function probeAgent(ctx, sessionId) {
  const probes = {};
  const probe = async (name, f) => {
    const before = summary.updateKinds.length === 0 ? 0 : Object.values(summary.updateCounts).reduce((a, b) => a + b, 0);
    try {
      const value = await f();
      probes[name] = { ok: true, value };
    } catch (e) {
      probes[name] = { ok: false, code: e?.code ?? null, message: String(e?.message ?? e), data: e?.data ?? null };
    }
    probes[name].updates = Object.values(summary.updateCounts).reduce((a, b) => a + b, 0) - before;
  };
  await probe("prompt_unknown_session", () => ctx.request(acp.methods.agent.session.prompt, {
    sessionId: "acp-interop-no-such-session", prompt: [{ type: "text", text: "hello" }],
  }));
  await probe("unknown_agent_method", () => ctx.request("_acp_interop/no_such_method", { sessionId }));
  await probe("new_session_relative_cwd", () => ctx.request(acp.methods.agent.session.new, { cwd: "relative/dir", mcpServers: [] }));
  await probe("second_prompt_resource_link", () => ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [
      { type: "text", text: "a second turn, with a link:" },
      { type: "resource_link", uri: `file://${path.join(cwd, "linked.txt")}`, name: "linked.txt" },
    ],
  }));
  if (summary.agentCapabilities?.loadSession) {
    await probe("load_session", () => ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }));
  }
  return probes;
}

// ---- run ----


// Either a spawned agent (its stdio) or, with --ws, an ACP WebSocket server (the SDK's
// experimental WebSocket transport, with the `ws` package as the WebSocket implementation).
// A spawned agent runs in this program's cwd (so a relative agent path works as typed); the
// session cwd travels in session/new.
let child = null;
let agentExited;
let stream;
if (opts.ws) {
  agentExited = new Promise(() => {}); // no process to watch: the connection closing is the signal
  const { createWebSocketStream } = await import("@agentclientprotocol/sdk/experimental/ws-client");
  const { WebSocket } = await import("ws");
  stream = tracedMessages(opts.trace, createWebSocketStream(opts.ws, { WebSocket }));
} else {
  child = spawn(opts.agent[0], opts.agent.slice(1), { stdio: ["pipe", "pipe", "inherit"], shell: false });
  agentExited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", (e) => resolve({ code: null, signal: null, error: e.message }));
  });
  const toAgent = traced(opts.trace, "-> ");
  toAgent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  const fromAgent = Readable.toWeb(child.stdout).pipeThrough(traced(opts.trace, "<- "));
  stream = acp.ndJsonStream(toAgent.writable, fromAgent);
}
// The SDK does not validate the responses it receives: check them against its schemas here.
const checker = responseChecker();
summary.schemaViolations = checker.violations;
stream = checkedMessages(checker, stream);
const killAgent = () => child?.kill("SIGKILL");

let finished = false;
function finish(exitCode) {
  if (finished) return;
  finished = true;
  for (const term of terminals.values()) if (term.exitStatus === null) term.child.kill("SIGKILL");
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n", () => process.exit(exitCode));
}

const timer = setTimeout(() => {
  summary.error = `timeout: the turn did not finish within ${opts.timeoutS} s`;
  killAgent();
  finish(3);
}, opts.timeoutS * 1000);

agentExited.then((exit) => {
  summary.agentExit = exit;
});

try {
  const response = await Promise.race([
    app.connectWith(stream, async (ctx) => {
      const meta = opts.meta ? { _meta: { "acp-interop": { note: "extension data the peer must ignore" } } } : {};
      const init = await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {
          fs: { readTextFile: opts.fs, writeTextFile: opts.fs },
          terminal: opts.terminal,
          ...(opts.meta ? { session: { notices: {}, compaction: {} }, ...meta } : {}),
        },
        clientInfo: { name: "acp-rs-interop-ts-client", title: "ACP TypeScript SDK interop client", version: "1.0.0" },
        ...meta,
      });
      summary.protocolVersion = init.protocolVersion;
      summary.agentInfo = init.agentInfo ?? null;
      summary.agentCapabilities = init.agentCapabilities ?? null;
      const created = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [], ...meta });
      summary.sessionId = created.sessionId;
      session = { sessionId: created.sessionId };
      let response;
      try {
        response = await ctx.request(acp.methods.agent.session.prompt, {
          sessionId: created.sessionId,
          prompt: [{ type: "text", text: opts.prompt, ...meta }],
          ...meta,
        }, { cancellationSignal: promptAbort.signal });
      } catch (e) {
        // An aborted prompt may end in a -32800 error: report it as a stop of its own.
        if (summary.promptAborted && e instanceof acp.RequestError && e.code === -32800) {
          response = { stopReason: "request_cancelled (-32800)" };
        } else {
          throw e;
        }
      }
      if (opts.probe) summary.probes = await probeAgent(ctx, created.sessionId);
      return response;
    }),
    agentExited.then((exit) => {
      throw new Error(`the agent exited during the turn: ${JSON.stringify(exit)}`);
    }),
  ]);
  summary.stopReason = response.stopReason;
  summary.ok = response.stopReason === opts.expectStop;
  // The turn is over: close the agent's stdin and give it a bounded time to exit on its own.
  if (child) {
    child.stdin.end();
    const bound = setTimeout(() => child.kill("SIGKILL"), 5000);
    summary.agentExit = await agentExited;
    clearTimeout(bound);
  }
  clearTimeout(timer);
  finish(summary.ok ? 0 : 1);
} catch (error) {
  summary.error = error instanceof acp.RequestError
    ? `JSON-RPC error ${error.code}: ${error.message}${error.data !== undefined ? ` ${JSON.stringify(error.data)}` : ""}`
    : String(error?.stack ?? error);
  if (child) {
    child.kill("SIGKILL");
    summary.agentExit = await agentExited;
  }
  clearTimeout(timer);
  finish(3);
}
