// The official TypeScript SDK's client doing what `acp chat --json --prompt TEXT` does, as one
// process: it spawns the agent, sends initialize, session/new and one session/prompt, writes
// one JSON line per session/update (its params) on stdout and, at the turn's end,
// {"sessionId","stopReason"}; then it exits. The yardstick of the whole-process flood in
// docs/benchmarks.md ("acp chat --json, whole process"): the same agent (flood-agent.mjs) and
// the same output, each program timed from its start to its exit.
//
//   node chat-json-client.mjs -- AGENT_COMMAND ARGS...
//
// Output is gathered into 64 KiB writes (a line per write() would make the SDK client slower
// than it needs to be).

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk";

const sep = process.argv.indexOf("--");
if (sep < 0 || sep + 1 >= process.argv.length) {
  console.error("usage: node chat-json-client.mjs -- AGENT_COMMAND ARGS...");
  process.exit(2);
}
const [command, ...args] = process.argv.slice(sep + 1);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });

let out = [];
let outBytes = 0;
function emit(line) {
  out.push(line);
  outBytes += line.length;
  if (outBytes >= 1 << 16) flush();
}
function flush() {
  if (out.length) process.stdout.write(out.join(""));
  out = [];
  outBytes = 0;
}

const app = client({ name: "chat-json-client" }).onNotification("session/update", ({ params }) => {
  emit(JSON.stringify(params) + "\n");
});
let code = 0;
try {
  await app.connectWith(ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)), async (ctx) => {
    await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    });
    const { sessionId } = await ctx.request("session/new", { cwd: process.cwd(), mcpServers: [] });
    const { stopReason } = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    emit(JSON.stringify({ sessionId, stopReason }) + "\n");
  });
} catch (e) {
  console.error(`chat-json-client: ${e?.stack ?? e}`);
  code = 1;
}
flush();
child.kill();
process.stdout.write("", () => process.exit(code));
