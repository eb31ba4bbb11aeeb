// End to end in node (issue 10, item 4): an agent process (flood-agent.mjs) floods N
// `agent_message_chunk` session/updates in one turn; a client ends with the final text. Side by
// side in the same run, each measurement in its own process, contestants alternating:
//
//   extension  the VS Code extension's client (extension-client.ts: AgentConnection, AcpClient
//              on acp-wasm's client build, the session opened by acp-client's session engine,
//              every update folded into it inside wasm by the connection (pollEventsFor),
//              coalesced deltas pulled every 50 ms (the extension's default) into the
//              webview's model; the final text is the view's)
//   ts-sdk     the official TypeScript SDK's client (@agentclientprotocol/sdk: client() over
//              ndJsonStream on the child's stdio, zod-checked messages) folding the same
//              updates in JS (`text += chunk`)
//
// Time: from sending session/prompt to holding the final text (after the prompt's answer).
// Ratios are of medians measured side by side; nothing here is a pass/fail assertion.
//
//   node thread-flood.mjs [--n 100000] [--rounds 5]
//   node thread-flood.mjs breakdown [--n 100000] [--runs 5] [--deltas 8]
//                  per-update cost of the extension's pieces, in this process (feed,
//                  pollEventsFor, takeDelta, the view), medians of --runs passes
// Needs: npm ci here (the SDK), vscode-extension's npm ci (esbuild), acp-wasm/pkg/nodejs-client
// (scripts/build-wasm.sh).

import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import path from "node:path";
import os from "node:os";
import fs from "node:fs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const AGENT = path.join(here, "flood-agent.mjs");
const CHUNK_TEXT = "Here is the next piece of the answer, streamed. ";

async function sdkClient(n) {
  const { client, ndJsonStream } = await import("@agentclientprotocol/sdk");
  const child = spawn(process.execPath, [AGENT, String(n)], { stdio: ["pipe", "pipe", "inherit"] });
  let text = "";
  let count = 0;
  const app = client({ name: "bench-client" }).onNotification("session/update", ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") text += u.content.text;
    count++;
  });
  try {
    return await app.connectWith(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)), async (ctx) => {
      await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
      const { sessionId } = await ctx.request("session/new", { cwd: process.cwd(), mcpServers: [] });
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
      // Notifications are handled as they are read; wait until the last one was.
      for (let spins = 0; count < n; spins++) {
        if (spins > 1e6) throw new Error(`got ${count} of ${n} updates`);
        await new Promise((r) => setImmediate(r));
      }
      const secs = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      if (text.length !== CHUNK_TEXT.length * n) throw new Error(`final text has ${text.length} characters`);
      return { ok: true, secs, cpu_secs: (cpu.user + cpu.system) / 1e6, chars: text.length };
    });
  } finally {
    child.kill();
  }
}

function bundleExtensionClient() {
  const ext = path.join(root, "vscode-extension");
  const esbuild = createRequire(path.join(ext, "package.json"))("esbuild");
  const out = path.join(here, "out", "extension-client.cjs");
  esbuild.buildSync({
    entryPoints: [path.join(here, "extension-client.ts")],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "es2022",
    logLevel: "warning",
  });
  return out;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function runChild(args) {
  const r = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 20 });
  const line = r.stdout.trim().split("\n").pop() ?? "";
  let out;
  try {
    out = JSON.parse(line);
  } catch {
    out = { ok: false, error: `${r.stdout}\n${r.stderr}`.trim().slice(0, 500) };
  }
  if (!out.ok) throw new Error(`${args.join(" ")}: ${out.error}`);
  return out;
}

async function drive() {
  const argv = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : dflt;
  };
  const n = opt("--n", 100000);
  const rounds = opt("--rounds", 5);
  const bundle = bundleExtensionClient();
  const contestants = {
    extension: () => runChild([bundle, AGENT, String(n)]),
    "ts-sdk": () => runChild([fileURLToPath(import.meta.url), "sdk-client", String(n)]),
  };
  const results = { extension: [], "ts-sdk": [] };
  const names = Object.keys(contestants);
  for (let r = 0; r < rounds; r++) {
    // Alternating, the order rotating each round.
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const out = contestants[name]();
      results[name].push(out);
      console.error(`round ${r + 1} ${name}: ${out.secs.toFixed(3)} s (cpu ${out.cpu_secs.toFixed(3)} s)${out.deltas ? `, ${out.deltas} deltas` : ""}`);
    }
  }
  const med = (name, key) => median(results[name].map((o) => o[key]));
  const ext = med("extension", "secs");
  const sdk = med("ts-sdk", "secs");
  const extCpu = med("extension", "cpu_secs");
  const sdkCpu = med("ts-sdk", "cpu_secs");
  const fmt = (s) => `${s.toFixed(3)} s`;
  const rate = (s) => `${((n / s) / 1000).toFixed(1)} k/s`;
  console.log(`thread-flood: ${n} agent_message_chunk updates, ${rounds} rounds, medians (node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")})`);
  console.log("");
  console.log("| client | time to the final text | updates/s | CPU time (client process) | TS SDK ÷ this (time) |");
  console.log("|---|---:|---:|---:|---:|");
  console.log(`| extension (the session engine in wasm, updates folded inside wasm, coalesced deltas) | ${fmt(ext)} | ${rate(ext)} | ${fmt(extCpu)} | ${(sdk / ext).toFixed(2)}× |`);
  console.log(`| official TS SDK 2.4 client, folding in JS | ${fmt(sdk)} | ${rate(sdk)} | ${fmt(sdkCpu)} | 1.00× |`);
  console.log("");
  console.log(`ratio (TS SDK time ÷ extension time): ${(sdk / ext).toFixed(2)}×; CPU: ${(sdkCpu / extCpu).toFixed(2)}×`);
  fs.writeFileSync(path.join(here, "out", "thread-flood.json"), JSON.stringify({ n, rounds, results }, null, 1));
}

/** Per-update cost of each piece the extension's client runs, measured alone in this process:
 *  the same lines fed in 64 KiB chunks to an AcpConnection whose session is open, the deltas
 *  taken as often as the end-to-end run takes them. */
function breakdown() {
  const argv = process.argv.slice(3);
  const opt = (name, dflt) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : dflt;
  };
  const n = opt("--n", 100000);
  const deltas = opt("--deltas", 8);
  const runs = opt("--runs", 5);
  const wasm = createRequire(import.meta.url)(path.join(process.env.ACP_WASM_PKG || path.join(root, "acp-wasm", "pkg", "nodejs-client"), "acp_wasm.js"));
  const { ThreadModel, messageSource } = createRequire(import.meta.url)(bundleThreadModel());
  const params = JSON.stringify({
    sessionId: "sess_0123456789abcdef",
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: CHUNK_TEXT } },
  });
  const lines = Buffer.from(`{"jsonrpc":"2.0","method":"session/update","params":${params}}\n`.repeat(n));
  const now = () => process.hrtime.bigint();
  // One pass over the lines with a fresh connection and session: ns spent in each piece.
  const pass = () => {
    const conn = new wasm.AcpConnection("client");
    const session = new wasm.Session('{"open":"new"}', process.cwd());
    session.initialized(JSON.stringify({ protocolVersion: 1, agentCapabilities: {} }));
    session.opened(JSON.stringify({ sessionId: "sess_0123456789abcdef" }));
    const thread = session.thread();
    thread.takeDelta();
    const view = new ThreadModel();
    let feedNs = 0n;
    let pollNs = 0n;
    let deltaNs = 0n;
    let viewNs = 0n;
    let other = 0;
    const every = Math.ceil(lines.length / deltas);
    let nextDelta = every;
    const takeDelta = () => {
      let t = now();
      const json = thread.takeDelta();
      deltaNs += now() - t;
      t = now();
      view.apply(JSON.parse(json));
      viewNs += now() - t;
    };
    for (let o = 0; o < lines.length; o += 65536) {
      let t = now();
      conn.feed(lines.subarray(o, o + 65536), 0);
      feedNs += now() - t;
      t = now();
      for (let evs = conn.pollEventsFor(session); evs.length; evs = conn.pollEventsFor(session)) other += evs.length;
      pollNs += now() - t;
      if (o + 65536 >= nextDelta) {
        takeDelta();
        nextDelta += every;
      }
    }
    takeDelta();
    const shown = [...view.entries.values()].map((e) => messageSource(e.content)).join("");
    if (other !== 0 || shown.length !== CHUNK_TEXT.length * n) throw new Error("breakdown: wrong result");
    thread.free();
    session.free();
    conn.free();
    return [feedNs, pollNs, deltaNs, viewNs].map(Number);
  };
  const passes = [];
  for (let r = 0; r < runs; r++) passes.push(pass());
  const med = (i) => median(passes.map((p) => p[i]));
  const us = (ns) => Number(ns) / 1000 / n;
  const rows = [
    ["engine: `feed` (64 KiB chunks; acp-core reads each line)", us(med(0))],
    ["`pollEventsFor`: each session/update read and folded by the session inside wasm (nothing crosses)", us(med(1))],
    [`\`takeDelta\` (${deltas} deltas over the run, as end to end)`, us(med(2))],
    ["the view: `JSON.parse` of each delta + `ThreadModel.apply`", us(med(3))],
  ];
  let t0 = now();
  let text = "";
  for (const l of lines.toString("utf8").split("\n")) if (l) text += JSON.parse(l).params.update.content.text;
  rows.push(["(for scale) JSON.parse of each line + JS string append, no SDK", us(now() - t0)]);
  console.log(`breakdown: ${n} updates, µs per update, medians of ${runs} passes (node ${process.version}, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")})`);
  console.log("");
  console.log("| piece | µs per update |");
  console.log("|---|---:|");
  for (const [what, v] of rows) console.log(`| ${what} | ${v.toFixed(2)} |`);
  console.log(`| total of the extension's pieces | ${rows.slice(0, 4).reduce((a, [, v]) => a + v, 0).toFixed(2)} |`);
  if (text.length !== CHUNK_TEXT.length * n) throw new Error("breakdown: wrong result");
}

/** The webview's model (vscode-extension/src/webview/threadModel.ts) as CommonJS, for `breakdown`. */
function bundleThreadModel() {
  const ext = path.join(root, "vscode-extension");
  const esbuild = createRequire(path.join(ext, "package.json"))("esbuild");
  const out = path.join(here, "out", "thread-model.cjs");
  esbuild.buildSync({
    entryPoints: [path.join(ext, "src", "webview", "threadModel.ts")],
    outfile: out,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "es2022",
    logLevel: "warning",
  });
  return out;
}

const [mode, arg] = process.argv.slice(2);
if (mode === "breakdown") {
  breakdown();
} else if (mode === "sdk-client") {
  try {
    process.stdout.write(JSON.stringify(await sdkClient(Number(arg))) + "\n");
    process.exit(0);
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: String(e?.stack ?? e) }) + "\n");
    process.exit(1);
  }
} else {
  await drive();
}
