// Writes a synthetic `acp chat --log-rpc` trace of about SIZE bytes: sessions of turns, each
// a prompt, a plan, a thought, streamed answer chunks, tool calls with file reads (some of
// 20 KB) and terminals, a permission question, now and then an error answer or a cancelled
// turn. For the benchmark (bench.mjs) and by hand:
//   node trace-viewer/test/make-trace.mjs 1G /tmp/big.ndjson
import { openSync, writeSync, closeSync } from "node:fs";

const UNITS = { K: 1 << 10, M: 1 << 20, G: 1 << 30 };

export function parseSize(s) {
  const m = /^([0-9.]+)([KMG]?)$/i.exec(s);
  if (!m) throw new Error(`not a size: ${s} (e.g. 200M, 1G)`);
  return Math.round(Number(m[1]) * (UNITS[m[2].toUpperCase()] ?? 1));
}

/** Writes the trace; returns {bytes, lines}. */
export function makeTrace(path, size) {
  const fd = openSync(path, "w", 0o600);
  let t = 0;
  let bytes = 0;
  let lines = 0;
  let buf = [];
  let bufLen = 0;
  const flush = () => {
    writeSync(fd, buf.join(""));
    buf = [];
    bufLen = 0;
  };
  const put = (entry) => {
    const line = JSON.stringify(entry) + "\n";
    buf.push(line);
    bufLen += line.length;
    bytes += Buffer.byteLength(line);
    lines++;
    if (bufLen > 1 << 20) flush();
  };
  let clientId = 0;
  let session = 0;
  const words = "the agent reads the file then runs the tests and writes a short summary of what changed".split(" ");
  const text = (n, seed) => Array.from({ length: n }, (_, i) => words[(seed + i * 7) % words.length]).join(" ");
  const pending = new Map();
  const send = (dir, msg) => {
    t += 0.2 + (lines % 7) * 0.05;
    const e = { tMs: Math.round(t * 1000) / 1000, dir };
    if (msg.method !== undefined && msg.id !== undefined) {
      e.kind = "request";
      e.id = msg.id;
      e.method = msg.method;
      pending.set(`${dir}:${msg.id}`, { t, method: msg.method });
    } else if (msg.method !== undefined) {
      e.kind = "notification";
      e.method = msg.method;
    } else {
      const other = dir === "send" ? "recv" : "send";
      const p = pending.get(`${other}:${msg.id}`);
      pending.delete(`${other}:${msg.id}`);
      e.kind = msg.error ? "error" : "response";
      e.id = msg.id;
      if (p) {
        e.method = p.method;
        e.elapsedMs = Math.round((t - p.t) * 1000) / 1000;
      }
    }
    e.msg = { jsonrpc: "2.0", ...msg };
    put(e);
  };
  const update = (sid, u) => send("recv", { method: "session/update", params: { sessionId: sid, update: u } });
  send("send", {
    id: clientId++,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true } },
  });
  send("recv", { id: clientId - 1, result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } });
  let turn = 0;
  while (bytes < size) {
    if (turn % 50 === 0) {
      session++;
      send("send", { id: clientId++, method: "session/new", params: { cwd: "/work/project", mcpServers: [] } });
      send("recv", { id: clientId - 1, result: { sessionId: `sess-${session}` } });
    }
    const sid = `sess-${session}`;
    turn++;
    const prompt = clientId++;
    send("send", {
      id: prompt,
      method: "session/prompt",
      params: { sessionId: sid, prompt: [{ type: "text", text: `task ${turn}: ${text(12, turn)}` }] },
    });
    update(sid, { sessionUpdate: "plan", entries: [{ content: "Read the code", priority: "high", status: "in_progress" }] });
    update(sid, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: text(20, turn + 1) } });
    let agentId = turn * 10;
    for (let step = 0; step < 3; step++) {
      const tc = `call-${turn}-${step}`;
      update(sid, { sessionUpdate: "tool_call", toolCallId: tc, title: `Read src/file${step}.rs`, kind: "read", status: "pending" });
      const rid = agentId++;
      send("recv", { id: rid, method: "fs/read_text_file", params: { sessionId: sid, path: `/work/project/src/file${step}.rs` } });
      t += step === 2 && turn % 13 === 0 ? 250 : 1;
      if (turn % 17 === 0 && step === 1)
        send("send", { id: rid, error: { code: -32002, message: `Resource not found: /work/project/src/file${step}.rs` } });
      else send("send", { id: rid, result: { content: (step === 0 && turn % 5 === 0 ? "x".repeat(20_000) : text(40, step)) + "\n" } });
      update(sid, { sessionUpdate: "tool_call_update", toolCallId: tc, status: "completed" });
    }
    for (let c = 0; c < 40; c++)
      update(sid, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: ` ${text(6, c + turn)}` } });
    const perm = agentId++;
    send("recv", {
      id: perm,
      method: "session/request_permission",
      params: {
        sessionId: sid,
        toolCall: { toolCallId: `w-${turn}`, title: "Write notes.md", kind: "edit" },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      },
    });
    t += 800 + (turn % 9) * 120;
    if (turn % 23 === 0) {
      send("send", { method: "session/cancel", params: { sessionId: sid } });
      send("send", { id: perm, result: { outcome: { outcome: "cancelled" } } });
      send("recv", { id: prompt, result: { stopReason: "cancelled" } });
    } else {
      send("send", { id: perm, result: { outcome: { outcome: "selected", optionId: "allow" } } });
      const w = agentId++;
      send("recv", {
        id: w,
        method: "fs/write_text_file",
        params: { sessionId: sid, path: "/work/project/notes.md", content: text(30, turn) },
      });
      send("send", { id: w, result: null });
      send("recv", { id: prompt, result: { stopReason: "end_turn" } });
    }
  }
  flush();
  closeSync(fd);
  return { bytes, lines };
}

if (process.argv[1] && process.argv[1].endsWith("make-trace.mjs")) {
  const [size, path] = process.argv.slice(2);
  if (!size || !path) {
    console.error("usage: node make-trace.mjs SIZE FILE   (SIZE like 200M or 1G)");
    process.exit(2);
  }
  const r = makeTrace(path, parseSize(size));
  console.log(`${path}: ${r.bytes} bytes, ${r.lines} lines`);
}
