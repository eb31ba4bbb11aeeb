// Routing throughput in node on the same NDJSON stream (the acp-wasm issue's benchmark):
// N `session/update` agent_message_chunk notifications, encoded once as NDJSON bytes and fed
// in 64 KiB chunks to
//   - acp-wasm: AcpConnection("client").feed(chunk) + pollEvents() (all events of the chunk as
//     one array of plain objects, one JSON.parse), its fastest API;
//   - acp-wasm with the per-event API: feed(chunk) + pollEvent() (one JSON.parse per event);
//   - the official TypeScript SDK: ndJsonStream + client() app with an onNotification handler,
// each checking every notification's fields. Rounds alternate (wasm, wasm per event, ts, ...);
// the medians and the ratio of the fastest acp-wasm API to the TS SDK are printed, as a
// markdown table and one JSON line. Times are wall clock; CPU time (user + system of this
// process during the run) is printed too, as the machine may be shared.
//
//   node routing.mjs [N] [ROUNDS]        (defaults 100000, 5)
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";
import fs from "node:fs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const N = Number(process.argv[2] ?? 100000);
const ROUNDS = Number(process.argv[3] ?? 5);
const CHUNK = 64 * 1024;
const TEXT = "Here is the next piece of the answer, streamed. ";

const line = (i) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: {
      sessionId: "sess_0123456789abcdef",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: TEXT + i } },
    },
  }) + "\n";
const bytes = new TextEncoder().encode(Array.from({ length: N }, (_, i) => line(i)).join(""));
const chunks = [];
for (let o = 0; o < bytes.length; o += CHUNK) chunks.push(bytes.subarray(o, o + CHUNK));

const check = (p) =>
  p.sessionId === "sess_0123456789abcdef" &&
  p.update.sessionUpdate === "agent_message_chunk" &&
  p.update.content.type === "text" &&
  p.update.content.text.startsWith(TEXT);

function loadWasm() {
  const p = path.resolve(here, "../../acp-wasm/pkg/node/acp_wasm.js");
  if (!fs.existsSync(p)) throw new Error(`acp-wasm package not built (${p}): run scripts/build-wasm.sh`);
  return require(p);
}

const cpuSecs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function runWasm() {
  const { AcpConnection } = loadWasm();
  const conn = new AcpConnection("client");
  let count = 0;
  const c0 = cpuSecs();
  const t0 = process.hrtime.bigint();
  for (const c of chunks) {
    conn.feed(c, 0);
    for (const ev of conn.pollEvents()) {
      if (ev.type !== "notification" || !check(ev.params)) throw new Error(`bad event ${JSON.stringify(ev)}`);
      count++;
    }
    if (conn.pollTransmit() !== undefined) throw new Error("the engine answered a notification");
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSecs() - c0;
  conn.free();
  if (count !== N) throw new Error(`wasm routed ${count} of ${N}`);
  return { secs, cpu };
}

async function runWasmPerEvent() {
  const { AcpConnection } = loadWasm();
  const conn = new AcpConnection("client");
  let count = 0;
  const c0 = cpuSecs();
  const t0 = process.hrtime.bigint();
  for (const c of chunks) {
    conn.feed(c, 0);
    for (let ev; (ev = conn.pollEvent()) !== undefined; ) {
      if (ev.type !== "notification" || !check(ev.params)) throw new Error(`bad event ${JSON.stringify(ev)}`);
      count++;
    }
    if (conn.pollTransmit() !== undefined) throw new Error("the engine answered a notification");
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSecs() - c0;
  conn.free();
  if (count !== N) throw new Error(`wasm routed ${count} of ${N}`);
  return { secs, cpu };
}

async function runTs() {
  const { client, ndJsonStream } = await import("@agentclientprotocol/sdk");
  let count = 0;
  let done;
  const finished = new Promise((r) => (done = r));
  const app = client({ name: "routing-bench" }).onNotification("session/update", ({ params }) => {
    if (!check(params)) throw new Error("bad notification");
    if (++count === N) done();
  });
  let i = 0;
  const input = new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else controller.close();
    },
  });
  const sink = new WritableStream({ write() {} });
  const c0 = cpuSecs();
  const t0 = process.hrtime.bigint();
  const conn = app.connect(ndJsonStream(sink, input));
  await finished;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSecs() - c0;
  conn.close?.();
  if (count !== N) throw new Error(`ts routed ${count} of ${N}`);
  return { secs, cpu };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = { wasm: [], perEvent: [], ts: [] };
for (let r = 0; r < ROUNDS; r++) {
  results.wasm.push(await runWasm());
  results.perEvent.push(await runWasmPerEvent());
  results.ts.push(await runTs());
}
const med = (k) => ({
  secs: median(results[k].map((x) => x.secs)),
  cpu: median(results[k].map((x) => x.cpu)),
});
const w = med("wasm");
const p = med("perEvent");
const t = med("ts");
const row = (name, x) =>
  `| ${name} | ${(N / x.secs / 1000).toFixed(1)} k | ${x.secs.toFixed(3)} s | ${x.cpu.toFixed(3)} s | ${(t.secs / x.secs).toFixed(2)}x |`;
console.log(`routing ${N} session/update notifications (${(bytes.length / 1e6).toFixed(1)} MB NDJSON, 64 KiB chunks), median of ${ROUNDS} alternating rounds, node ${process.version}`);
console.log("");
console.log("| contestant | msg/s | time | CPU time | throughput ÷ TS SDK |");
console.log("|---|---:|---:|---:|---:|");
console.log(row("acp-wasm (feed + pollEvents)", w));
console.log(row("acp-wasm (feed + pollEvent, per event)", p));
console.log(row("official TS SDK 2.4 (ndJsonStream + client app)", t));
console.log("");
console.log(`acp-wasm / TS SDK routing throughput: ${(t.secs / w.secs).toFixed(2)}x (goal >= 10x); by CPU time ${(t.cpu / w.cpu).toFixed(2)}x`);
console.log(JSON.stringify({ n: N, rounds: ROUNDS, wasm_secs: w.secs, wasm_per_event_secs: p.secs, ts_secs: t.secs, ratio: t.secs / w.secs, wasm_cpu: w.cpu, wasm_per_event_cpu: p.cpu, ts_cpu: t.cpu, cpu_ratio: t.cpu / w.cpu }));
