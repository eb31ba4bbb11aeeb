// End to end in node (issue 10, item 4): an agent process (flood-agent.mjs) floods N
// `agent_message_chunk` session/updates in one turn; a client ends with the final text. Side by
// side in the same run, each measurement in its own process, contestants alternating:
//
//   extension  the VS Code extension's client (extension-client.ts: AgentConnection, AcpClient
//              on acp-wasm's client build, acp-client's Thread in wasm folding every update,
//              coalesced deltas pulled every 50 ms (the extension's default) into the
//              webview's model; the final text is
//              the view's)
//   ts-sdk     the official TypeScript SDK's client (@agentclientprotocol/sdk: client() over
//              ndJsonStream on the child's stdio, zod-checked messages) folding the same
//              updates in JS (`text += chunk`)
//
// Time: from sending session/prompt to holding the final text (after the prompt's answer).
// Ratios are of medians measured side by side; nothing here is a pass/fail assertion.
//
//   node thread-flood.mjs [--n 100000] [--rounds 5]
//   node thread-flood.mjs breakdown [--n 100000]   per-update cost of the extension's pieces, in
//                                                  this process (engine, JSON, Thread.applyUpdate)
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
  console.log(`| extension (AcpClient + acp-client Thread in wasm, coalesced deltas) | ${fmt(ext)} | ${rate(ext)} | ${fmt(extCpu)} | ${(sdk / ext).toFixed(2)}× |`);
  console.log(`| official TS SDK 2.4 client, folding in JS | ${fmt(sdk)} | ${rate(sdk)} | ${fmt(sdkCpu)} | 1.00× |`);
  console.log("");
  console.log(`ratio (TS SDK time ÷ extension time): ${(sdk / ext).toFixed(2)}×; CPU: ${(sdkCpu / extCpu).toFixed(2)}×`);
  fs.writeFileSync(path.join(here, "out", "thread-flood.json"), JSON.stringify({ n, rounds, results }, null, 1));
}

/** Per-update cost of each piece the extension's client runs, measured alone in this process. */
function breakdown() {
  const argv = process.argv.slice(3);
  const i = argv.indexOf("--n");
  const n = i >= 0 ? Number(argv[i + 1]) : 100000;
  const wasm = createRequire(import.meta.url)(path.join(root, "acp-wasm", "pkg", "nodejs-client", "acp_wasm.js"));
  const params = JSON.stringify({
    sessionId: "sess_0123456789abcdef",
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: CHUNK_TEXT } },
  });
  const lines = Buffer.from(`{"jsonrpc":"2.0","method":"session/update","params":${params}}\n`.repeat(n));
  const us = (t0) => Number(process.hrtime.bigint() - t0) / 1000 / n;
  const rows = [];
  const conn = new wasm.AcpConnection("client");
  let events = [];
  let t0 = process.hrtime.bigint();
  for (let o = 0; o < lines.length; o += 65536) {
    conn.feed(lines.subarray(o, o + 65536), 0);
    for (const ev of conn.pollEvents()) events.push(ev);
  }
  rows.push(["engine: feed (64 KiB chunks) + pollEvents (events parsed in JS)", us(t0)]);
  t0 = process.hrtime.bigint();
  const texts = events.map((ev) => JSON.stringify(ev.params));
  rows.push(["JSON.stringify of the params (AcpClient, once per update)", us(t0)]);
  events = [];
  const thread = new wasm.Thread();
  t0 = process.hrtime.bigint();
  for (const t of texts) thread.applyUpdate(t);
  rows.push(["acp-client Thread.applyUpdate (wasm, text in, Applied JSON out)", us(t0)]);
  t0 = process.hrtime.bigint();
  let text = "";
  for (const l of lines.toString("utf8").split("\n")) if (l) text += JSON.parse(l).params.update.content.text;
  rows.push(["(for scale) JSON.parse of each line + JS string append, no SDK", us(t0)]);
  console.log(`breakdown: ${n} updates, µs per update (node ${process.version}, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")})`);
  console.log("");
  console.log("| piece | µs per update |");
  console.log("|---|---:|");
  for (const [what, v] of rows) console.log(`| ${what} | ${v.toFixed(2)} |`);
  if (text.length !== CHUNK_TEXT.length * n || thread.entryCount() !== 1) throw new Error("breakdown: wrong result");
  thread.free();
  conn.free();
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
