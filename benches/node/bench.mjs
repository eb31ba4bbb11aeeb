// Node side of the acp-rs side-by-side benchmarks (driven by `acp-bench drive`, see
// scripts/bench.sh). One measurement per process; prints one JSON line.
//
//   node bench.mjs ts|ts-stdio|wasm SCENARIO ARGS...
//   node bench.mjs serve-ts SCENARIO ARGS...     (child agent of ts-stdio)
//
// The official TypeScript SDK is used through its public API only: agent()/client() apps
// with typed handlers over ndJsonStream (in-memory TransformStreams, or a child's stdio).

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import path from "node:path";
import fs from "node:fs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const SESSION_ID = "sess_0123456789abcdef";
const CWD = "/home/user/projects/example-workspace";
const CHUNK_TEXT = "Here is the next piece of the answer, streamed. ";
const WRITE_PATH = "/home/user/projects/example-workspace/big.txt";

const chunkNotification = () => ({
  sessionId: SESSION_ID,
  update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: CHUNK_TEXT } },
});
const checkChunk = (n) =>
  n.update.sessionUpdate === "agent_message_chunk" &&
  n.update.content.type === "text" &&
  n.update.content.text.length === CHUNK_TEXT.length;
const initializeRequest = () => ({
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: true }, terminal: false },
});
const initializeResponse = () => ({ protocolVersion: 1, agentCapabilities: {} });
const newSessionRequest = () => ({ cwd: CWD, mcpServers: [] });
const newSessionResponse = () => ({ sessionId: SESSION_ID });
const promptRequest = () => ({ sessionId: SESSION_ID, prompt: [{ type: "text", text: "go" }] });
const promptResponse = () => ({ stopReason: "end_turn" });

// Same content as the Rust side: the whole message is just under `messageBytes`.
function fileContent(messageBytes) {
  const bytes = Math.max(0, messageBytes - 1024);
  const line = "    let value = compute(alpha, beta, gamma); // some source code line here  ";
  const reps = Math.floor(bytes / line.length);
  return line.repeat(reps) + "x".repeat(bytes - reps * line.length);
}

const rssKb = () => Math.round(process.memoryUsage().rss / 1024);

function parseScenario(args) {
  const [kind, a, b] = args;
  const n = Number(a);
  const c = Number(b);
  if (!["notify", "rt-seq", "rt-conc", "large", "scale"].includes(kind) || !Number.isFinite(n)) {
    throw new Error(`bad scenario ${args.join(" ")}`);
  }
  return { kind, n, c };
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const rank = Math.round((p / 100) * (sorted.length - 1));
  return sorted[Math.min(rank, sorted.length - 1)];
}

function fromLatencies(latUs, secs) {
  latUs.sort((x, y) => x - y);
  return {
    ok: true,
    secs,
    per_sec: latUs.length / secs,
    p50_us: percentile(latUs, 50),
    p99_us: percentile(latUs, 99),
  };
}

const nowUs = () => Number(process.hrtime.bigint()) / 1000;

// ---------- official TypeScript SDK ----------

async function sdk() {
  return import("@agentclientprotocol/sdk");
}

async function makeTsAgent(sc, probe) {
  const { agent } = await sdk();
  const notifyN = sc.kind === "notify" ? sc.n : 0;
  const scaleN = sc.kind === "scale" ? sc.n : 0;
  let content = sc.kind === "large" ? fileContent(sc.n) : null;
  const held = [];
  return agent({ name: "bench-agent" })
    .onRequest("initialize", () => initializeResponse())
    .onRequest("session/new", ({ params }) => {
      if (params.cwd.length !== CWD.length) throw new Error("wrong cwd");
      if (!scaleN) return newSessionResponse();
      return new Promise((resolve) => {
        held.push(resolve);
        if (held.length === scaleN) {
          probe.point = rssKb();
          for (const r of held) r(newSessionResponse());
          held.length = 0;
        }
      });
    })
    .onRequest("session/prompt", async ({ client }) => {
      for (let i = 0; i < notifyN; i++) {
        await client.notify("session/update", chunkNotification());
      }
      if (content !== null) {
        const c = content;
        content = null;
        await client.request("fs/write_text_file", {
          sessionId: SESSION_ID,
          path: WRITE_PATH,
          content: c,
        });
      }
      return promptResponse();
    });
}

async function makeTsClient(sc, state) {
  const { client } = await sdk();
  const expect = sc.kind === "large" ? Math.max(0, sc.n - 1024) : 0;
  return client({ name: "bench-client" })
    .onNotification("session/update", ({ params }) => {
      if (checkChunk(params)) state.count++;
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      if (params.content.length !== expect) throw new Error(`content ${params.content.length}`);
      return {};
    });
}

// The measurement, on any request function `req(method, params)`.
async function measureRequests(sc, req, state, probe, base) {
  if (sc.kind === "notify" || sc.kind === "large") {
    const t0 = nowUs();
    await req("session/prompt", promptRequest());
    if (sc.kind === "notify") {
      for (let spins = 0; state.count < sc.n; spins++) {
        if (spins > 100000) throw new Error(`got ${state.count} of ${sc.n}`);
        await new Promise((r) => setImmediate(r));
      }
    }
    const secs = (nowUs() - t0) / 1e6;
    return { ok: true, secs, per_sec: sc.n / secs, base_rss_kb: base };
  }
  if (sc.kind === "rt-seq") {
    const lat = [];
    const t0 = nowUs();
    for (let i = 0; i < sc.n; i++) {
      const t = nowUs();
      const r = await req("session/new", newSessionRequest());
      if (r.sessionId !== SESSION_ID) throw new Error("wrong response");
      lat.push(nowUs() - t);
    }
    return { ...fromLatencies(lat, (nowUs() - t0) / 1e6), base_rss_kb: base };
  }
  if (sc.kind === "rt-conc") {
    const lat = [];
    let next = 0;
    const t0 = nowUs();
    const worker = async () => {
      while (next < sc.n) {
        next++;
        const t = nowUs();
        const r = await req("session/new", newSessionRequest());
        if (r.sessionId !== SESSION_ID) throw new Error("wrong response");
        lat.push(nowUs() - t);
      }
    };
    await Promise.all(Array.from({ length: sc.c }, worker));
    return { ...fromLatencies(lat, (nowUs() - t0) / 1e6), base_rss_kb: base };
  }
  if (sc.kind === "scale") {
    const b = rssKb();
    const t0 = nowUs();
    const all = [];
    for (let i = 0; i < sc.n; i++) all.push(req("session/new", newSessionRequest()));
    await Promise.all(all);
    const secs = (nowUs() - t0) / 1e6;
    return { ok: true, secs, per_sec: sc.n / secs, base_rss_kb: b, point_rss_kb: probe.point ?? 0 };
  }
  throw new Error("unknown scenario");
}

async function runTs(sc) {
  const { ndJsonStream } = await sdk();
  const base = rssKb();
  const probe = {};
  const state = { count: 0 };
  const c2a = new TransformStream();
  const a2c = new TransformStream();
  const agentApp = await makeTsAgent(sc, probe);
  const conn = agentApp.connect(ndJsonStream(a2c.writable, c2a.readable));
  const clientApp = await makeTsClient(sc, state);
  const out = await clientApp.connectWith(
    ndJsonStream(c2a.writable, a2c.readable),
    async (ctx) => {
      await ctx.request("initialize", initializeRequest());
      return measureRequests(sc, (m, p) => ctx.request(m, p), state, probe, base);
    },
  );
  conn.close();
  return out;
}

async function runTsStdio(sc) {
  const { ndJsonStream } = await sdk();
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve-ts", ...process.argv.slice(3)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const base = rssKb();
  const state = { count: 0 };
  const clientApp = await makeTsClient(sc, state);
  try {
    return await clientApp.connectWith(
      ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)),
      async (ctx) => {
        await ctx.request("initialize", initializeRequest());
        return measureRequests(sc, (m, p) => ctx.request(m, p), state, {}, base);
      },
    );
  } finally {
    // Reap the child so its CPU time is counted with ours (the driver reads it from wait4).
    const exited = new Promise((r) => child.once("exit", r));
    child.kill();
    await exited;
  }
}

async function serveTs(sc) {
  const { ndJsonStream } = await sdk();
  const agentApp = await makeTsAgent(sc, {});
  const conn = agentApp.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await conn.closed;
}

// ---------- acp-wasm (acp-core compiled to wasm), in-memory pair ----------
//
// Uses acp-wasm's fastest public API (acp-wasm/API.md): params and results are stringified in
// JS (`JSON.stringify`, as the TS SDK does) and handed over with sendRequestRaw / notifyRaw /
// respondRaw, and events are drained with pollEvents() (one JSON.parse per batch of events,
// every event a plain object whose fields are checked, as the TS contestant's handlers do).
// Bytes cross JS between the two connections (pollTransmit -> feed), as with a real transport.

function loadWasm() {
  const p = path.resolve(here, "../../acp-wasm/pkg/node/acp_wasm.js");
  if (!fs.existsSync(p)) throw new Error(`acp-wasm package not built (${p})`);
  return require(p);
}

async function runWasm(sc) {
  const { AcpConnection } = loadWasm();
  const base = rssKb();
  const opts = { maxIncomingInFlight: 1 << 20 }; // scale holds 10,000+ in flight (default 1024)
  const client = new AcpConnection("client", opts);
  const agentConn = new AcpConnection("agent", opts);
  // Moves bytes from the connection just used (`from`) to the other, and whatever that
  // answers back, until the side just fed has nothing to send (the other was drained just
  // before it was fed, so both are then idle). Bytes go through one reused 64 KiB buffer
  // (pollTransmitInto), like writes through a pipe: a large message reaches the receiver in
  // 64 KiB pieces, as over stdio.
  const wire = new Uint8Array(64 * 1024);
  const pump = (from) => {
    let a = from;
    let b = from === client ? agentConn : client;
    for (;;) {
      let n = a.pollTransmitInto(wire);
      if (n === 0) return;
      b.feed(wire.subarray(0, n), 0);
      while (n === wire.length && (n = a.pollTransmitInto(wire)) > 0) b.feed(wire.subarray(0, n), 0);
      [a, b] = [b, a];
    }
  };
  const only = (evs, type, who) => {
    if (evs.length !== 1 || evs[0].type !== type) {
      throw new Error(`${who} expected one ${type}, got ${JSON.stringify(evs)?.slice(0, 300)}`);
    }
    return evs[0];
  };
  const agentRequest = () => only(agentConn.pollEvents(), "request", "agent");
  const clientResponse = () => only(client.pollEvents(), "response", "client");
  const newSessionJson = () => JSON.stringify(newSessionRequest());
  const answerNewSessions = () => {
    for (const ev of agentConn.pollEvents()) {
      if (ev.type !== "request" || ev.params.cwd.length !== CWD.length) throw new Error("bad request");
      agentConn.respondRaw(ev.token, JSON.stringify(newSessionResponse()));
    }
  };
  client.sendRequestRaw("initialize", JSON.stringify(initializeRequest()), 0);
  pump(client);
  agentConn.respondRaw(agentRequest().token, JSON.stringify(initializeResponse()));
  pump(agentConn);
  clientResponse();
  let out;
  if (sc.kind === "notify") {
    const t0 = nowUs();
    client.sendRequestRaw("session/prompt", JSON.stringify(promptRequest()), 0);
    pump(client);
    const tok = agentRequest().token;
    let count = 0;
    for (let i = 0; i < sc.n; i++) {
      agentConn.notifyRaw("session/update", JSON.stringify(chunkNotification()));
      pump(agentConn);
      for (const ev of client.pollEvents()) {
        if (ev.type !== "notification" || !checkChunk(ev.params)) throw new Error("bad notification");
        count++;
      }
    }
    agentConn.respondRaw(tok, JSON.stringify(promptResponse()));
    pump(agentConn);
    clientResponse();
    const secs = (nowUs() - t0) / 1e6;
    if (count !== sc.n) throw new Error(`got ${count} of ${sc.n}`);
    out = { ok: true, secs, per_sec: sc.n / secs };
  } else if (sc.kind === "rt-seq") {
    const lat = [];
    const t0 = nowUs();
    for (let i = 0; i < sc.n; i++) {
      const t = nowUs();
      client.sendRequestRaw("session/new", newSessionJson(), 0);
      pump(client);
      answerNewSessions();
      pump(agentConn);
      if (clientResponse().result.sessionId !== SESSION_ID) throw new Error("wrong response");
      lat.push(nowUs() - t);
    }
    out = fromLatencies(lat, (nowUs() - t0) / 1e6);
  } else if (sc.kind === "rt-conc") {
    const sentAt = new Map();
    const lat = [];
    let sent = 0;
    const t0 = nowUs();
    while (lat.length < sc.n) {
      while (sent < sc.n && sent - lat.length < sc.c) {
        const id = client.sendRequestRaw("session/new", newSessionJson(), 0);
        sentAt.set(id, nowUs());
        sent++;
        pump(client);
      }
      answerNewSessions();
      pump(agentConn);
      for (const ev of client.pollEvents()) {
        if (ev.type !== "response" || ev.result.sessionId !== SESSION_ID) throw new Error("bad response");
        lat.push(nowUs() - sentAt.get(ev.requestId));
        sentAt.delete(ev.requestId);
      }
    }
    out = fromLatencies(lat, (nowUs() - t0) / 1e6);
  } else if (sc.kind === "scale") {
    const b = rssKb();
    const t0 = nowUs();
    for (let i = 0; i < sc.n; i++) {
      client.sendRequestRaw("session/new", newSessionJson(), 0);
      pump(client);
    }
    const tokens = [];
    for (const ev of agentConn.pollEvents()) {
      if (ev.type !== "request") throw new Error(`unexpected ${JSON.stringify(ev)}`);
      tokens.push(ev.token);
    }
    if (tokens.length !== sc.n) throw new Error(`${tokens.length} of ${sc.n} pending`);
    const point = rssKb();
    for (const t of tokens) {
      agentConn.respondRaw(t, JSON.stringify(newSessionResponse()));
      pump(agentConn);
    }
    let done = 0;
    for (const ev of client.pollEvents()) if (ev.type === "response") done++;
    const secs = (nowUs() - t0) / 1e6;
    if (done !== sc.n) throw new Error(`${done} of ${sc.n} answered`);
    return { ok: true, secs, per_sec: sc.n / secs, base_rss_kb: b, point_rss_kb: point };
  } else if (sc.kind === "large") {
    const b = rssKb();
    let content = fileContent(sc.n);
    const t0 = nowUs();
    client.sendRequestRaw("session/prompt", JSON.stringify(promptRequest()), 0);
    pump(client);
    const tok = agentRequest().token;
    agentConn.sendRequestRaw(
      "fs/write_text_file",
      JSON.stringify({ sessionId: SESSION_ID, path: WRITE_PATH, content }),
      0,
    );
    content = null;
    pump(agentConn);
    const ev = only(client.pollEvents(), "request", "client");
    if (ev.params.content.length !== Math.max(0, sc.n - 1024)) {
      throw new Error(`client expected the write request, got ${JSON.stringify(ev)?.slice(0, 300)}`);
    }
    client.respondRaw(ev.token, "{}");
    pump(client);
    only(agentConn.pollEvents(), "response", "agent");
    agentConn.respondRaw(tok, JSON.stringify(promptResponse()));
    pump(agentConn);
    clientResponse();
    const secs = (nowUs() - t0) / 1e6;
    return { ok: true, secs, per_sec: sc.n / secs, base_rss_kb: b };
  }
  client.free();
  agentConn.free();
  return { ...out, base_rss_kb: base };
}

// ---------- main ----------

const [what, ...rest] = process.argv.slice(2);
try {
  const sc = parseScenario(rest);
  if (what === "serve-ts") {
    await serveTs(sc);
  } else {
    const run = { ts: runTs, "ts-stdio": runTsStdio, wasm: runWasm }[what];
    if (!run) throw new Error(`unknown contestant ${what}`);
    const out = await run(sc);
    process.stdout.write(JSON.stringify(out) + "\n");
    process.exit(0);
  }
} catch (e) {
  if (what === "serve-ts") {
    process.stderr.write(`serve-ts: ${e?.stack ?? e}\n`);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ ok: false, error: String(e?.message ?? e).slice(0, 500) }) + "\n");
  process.exit(0);
}
