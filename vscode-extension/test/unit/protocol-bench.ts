// Benchmark (not a test: not named *.test.ts, so `npm run test:unit` does not run it) of the
// protocol client's hot paths on the real wasm engine: CPU time per message, median of REPS runs
// (default 9) of N messages (default 20,000) after one warm-up run.
//   incoming notifications (mem)      N session/update lines fed to AcpClient.receive in 64 KiB chunks
//   incoming notifications (process)  a scripted agent process floods N session/update in one prompt
//                                     (AgentConnection end to end; CPU of this process only)
//   outgoing notify (mem | process)   AcpClient.notify N times (sink discards | agent stdin pipe)
//   requests+respond (mem)            the agent sends N fs/read_text_file; the handler answers each
//                                     (small result, or a 4 KiB one)
// Run (from vscode-extension/, after scripts/build-wasm.sh):
//   npx esbuild test/unit/protocol-bench.ts --bundle --platform=node --outfile=out/bench/protocol-bench.js
//   node out/bench/protocol-bench.js            # CASE=<substring> N=... REPS=... LABEL=...
// To compare with an older client, build the same file in a `git worktree` of that commit.
import { nodeTransports } from "../../src/platform/nodeTransports";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { AgentConnection } from "../../src/protocol/agent";
import { AcpClient, type IncomingHandler } from "../../src/protocol/client";
import { loadEngine } from "../../src/platform/nodeEngine";
import { nullLogger, nullTrace } from "../../src/protocol/log";

const N = Number(process.env.N ?? 20000);
const { module: E } = loadEngine(path.resolve(__dirname, "..", ".."));

function cpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000; // ms
}

const updateLine = (n: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: {
      sessionId: "s-1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "chunk number " + n + " of the streamed answer " } },
    },
  }) + "\n";

async function initClient(handler: IncomingHandler, sink: (b: Uint8Array) => void) {
  const client = new AcpClient(new E.AcpConnection("client", {}), { write: sink }, handler, nullLogger, nullTrace);
  const init = client.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  });
  client.receive(Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 0, result: { protocolVersion: 1 } }) + "\n"));
  await init;
  return client;
}

/** In memory: 20k session/update lines fed in 64 KiB chunks (like pipe reads). */
async function incomingMem(): Promise<number> {
  let count = 0;
  const handler = {
    handleRequest: async (): Promise<unknown> => ({}),
    handleNotification: () => {
      count++;
    },
  };
  const client = await initClient(handler, () => {});
  const all = Buffer.from(Array.from({ length: N }, (_, n) => updateLine(n)).join(""));
  const t0 = cpu();
  for (let i = 0; i < all.length; i += 65536) client.receive(all.subarray(i, i + 65536));
  const t1 = cpu();
  if (count !== N) throw new Error(`got ${count}`);
  client.dispose();
  return t1 - t0;
}

/** In memory: the client sends 20k notifications (params objects). */
async function outgoingNotify(): Promise<number> {
  let bytes = 0;
  const handler = { handleRequest: async (): Promise<unknown> => ({}), handleNotification: () => {} };
  const client = await initClient(handler, (b) => {
    bytes += b.length;
  });
  const t0 = cpu();
  for (let n = 0; n < N; n++)
    client.notify("_bench/note", {
      sessionId: "s-1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "note " + n } },
    });
  const t1 = cpu();
  if (bytes < N * 50) throw new Error(`wrote ${bytes}`);
  client.dispose();
  return t1 - t0;
}

/** In memory: the agent sends 20k fs/read_text_file requests; the handler answers each (respond path). */
async function incomingRequests(size = 0): Promise<number> {
  const pad = "x".repeat(size);
  let lines = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const handler = {
    handleRequest: async (_m: string, p: unknown): Promise<unknown> => ({
      content: "contents of " + (p as { path: string }).path + "\nline two\n" + pad,
    }),
    handleNotification: () => {},
  };
  let counting = false;
  const client = await initClient(handler, (b) => {
    if (!counting) return;
    for (const x of b) if (x === 10) lines++;
    if (lines >= N) done();
  });
  const all = Buffer.from(
    Array.from(
      { length: N },
      (_, n) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id: n + 1,
          method: "fs/read_text_file",
          params: { sessionId: "s-1", path: "/w/file" + n + ".txt" },
        }) + "\n",
    ).join(""),
  );
  counting = true;
  const t0 = cpu();
  // Chunks of 64 KiB with a turn of the event loop between them (as pipe reads come), so the
  // handler's answers go out and the engine's in-flight limit (1024) is never reached.
  for (let i = 0; i < all.length; i += 65536) {
    client.receive(all.subarray(i, i + 65536));
    await new Promise((r) => setImmediate(r));
  }
  await finished;
  if (client.pendingIncoming !== 0) throw new Error("pending");
  const t1 = cpu();
  client.dispose();
  return t1 - t0;
}

const AGENT = String.raw`
const N = Number(process.env.N);
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
let buf = "";
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.trim()) handle(JSON.parse(line));
  }
});
process.stdin.on("end", () => process.exit(0));
function handle(m) {
  if (m.method === "initialize") return send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
  if (m.method === "session/new") return send({ id: m.id, result: { sessionId: "s-1" } });
  if (m.method !== "session/prompt") return;
  let out = "";
  for (let n = 0; n < N; n++) out += JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s-1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "chunk number " + n + " of the streamed answer " } } } }) + "\n";
  process.stdout.write(out);
  send({ id: m.id, result: { stopReason: "end_turn" } });
}
`;

/** A real agent process floods 20k session/update during one prompt (AgentConnection end to end). */
async function incomingProcess(): Promise<number> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "acp-bench-"));
  const script = path.join(ws, "agent.cjs");
  fs.writeFileSync(script, AGENT);
  let count = 0;
  const conn = await AgentConnection.start(
    { name: "bench", command: process.execPath, args: [script], env: { N: String(N) }, cwd: ws },
    {
      engine: E,
      transports: nodeTransports,
      engineOptions: {},
      capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "bench", version: "0" },
      handler: {
        handleRequest: async (): Promise<unknown> => ({}),
        handleNotification: () => {
          count++;
        },
      },
      log: nullLogger,
      trace: nullTrace,
      onStderr: () => {},
    },
  );
  const sess = await conn.newSession(ws);
  const t0 = cpu();
  const r = await conn.prompt(sess.sessionId, [{ type: "text", text: "go" }]);
  const t1 = cpu();
  if (r.stopReason !== "end_turn" || count !== N) throw new Error(`bad ${count}`);
  await conn.stop();
  return t1 - t0;
}

const SINK = String.raw`
const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\n");
let buf = "";
let notes = 0;
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.method === "initialize") send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
    else if (m.method === "_bench/note") notes++;
    else if (m.method === "_bench/count") send({ id: m.id, result: { notes } });
  }
});
process.stdin.on("end", () => process.exit(0));
`;

/** The client sends 20k notifications to a real process (stdin pipe); ends with a request the agent answers with the count. */
async function outgoingProcess(): Promise<number> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), "acp-bench-"));
  const script = path.join(ws, "sink.cjs");
  fs.writeFileSync(script, SINK);
  const conn = await AgentConnection.start(
    { name: "bench", command: process.execPath, args: [script], env: {}, cwd: ws },
    {
      engine: E,
      transports: nodeTransports,
      engineOptions: {},
      capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "bench", version: "0" },
      handler: { handleRequest: async (): Promise<unknown> => ({}), handleNotification: () => {} },
      log: nullLogger,
      trace: nullTrace,
      onStderr: () => {},
    },
  );
  const t0 = cpu();
  for (let n = 0; n < N; n++) {
    conn.client.notify("_bench/note", {
      sessionId: "s-1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "note " + n } },
    });
    if (n % 500 === 499) await new Promise((r) => setImmediate(r));
  }
  const t1 = cpu();
  const r = await conn.client.request<{ notes: number }>("_bench/count", {});
  if (r.notes !== N) throw new Error(`agent saw ${r.notes}`);
  await conn.stop();
  return t1 - t0;
}

async function main(label: string) {
  const cases: Array<[string, () => Promise<number>]> = [
    ["incoming notifications (mem)", incomingMem],
    ["incoming notifications (process)", incomingProcess],
    ["outgoing notify (mem)", outgoingNotify],
    ["outgoing notify (process)", outgoingProcess],
    ["incoming requests+respond (mem)", () => incomingRequests()],
    ["requests+respond 4 KiB result (mem)", () => incomingRequests(4096)],
  ];
  const only = process.env.CASE;
  const reps = Number(process.env.REPS ?? 9);
  for (const [name, fn] of cases) {
    if (only && !name.includes(only)) continue;
    await fn(); // warm-up
    const xs: number[] = [];
    for (let i = 0; i < reps; i++) xs.push(await fn());
    xs.sort((a, b) => a - b);
    const med = xs[Math.floor(xs.length / 2)]!;
    console.log(
      `${label}  ${name.padEnd(34)} median ${((med * 1000) / N).toFixed(2)} µs/msg  (min ${((xs[0]! * 1000) / N).toFixed(2)}, max ${((xs[xs.length - 1]! * 1000) / N).toFixed(2)})`,
    );
  }
}

void main(process.env.LABEL ?? "");
