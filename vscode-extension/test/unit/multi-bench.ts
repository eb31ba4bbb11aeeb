// Benchmark (not a test: not named *.test.ts) of a second conversation's updates on one
// connection: CPU time per session/update for the session folded into inside wasm
// (`pollEventsFor`, the fast path) and for another session's, which `pollEventsFor` hands back
// and the extension routes through its handler to that session's engine (`Conversation.applyUpdate`
// -> `Session.update`, as host/conversations.ts does), side by side, median of REPS runs of N
// updates after a warm-up. Reported as the ratio routed / folded.
// Run (from vscode-extension/, after scripts/build-wasm.sh):
//   npx esbuild test/unit/multi-bench.ts --bundle --platform=node --outfile=out/bench/multi-bench.js
//   node out/bench/multi-bench.js            # N=... REPS=...
import * as path from "node:path";
import { Conversation } from "../../src/bridges/conversation";
import { AcpClient } from "../../src/protocol/client";
import { loadEngine } from "../../src/platform/nodeEngine";
import { nullLogger, nullTrace } from "../../src/protocol/log";

const N = Number(process.env.N ?? 20000);
const REPS = Number(process.env.REPS ?? 9);
const { module: E } = loadEngine(path.resolve(__dirname, "..", ".."));

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const line = (sid: string, n: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: {
      sessionId: sid,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${n} of the answer ` } },
    },
  }) + "\n";

function opened(sid: string) {
  const s = new E.Session(JSON.stringify({ open: "new" }), "/w");
  s.initialized(JSON.stringify({ protocolVersion: 1, agentInfo: { name: "bench", version: "1" } }));
  s.opened(JSON.stringify({ sessionId: sid }));
  return s;
}

/** N updates for session `to` ("a" is folded into, "b" is routed); CPU ms. */
function run(to: "a" | "b"): number {
  const a = opened("a");
  const b = opened("b");
  const convB = new Conversation(
    b.thread(),
    () => {},
    undefined,
    1e9,
    undefined,
    (json) => b.update(json),
  );
  let routed = 0;
  const client = new AcpClient(
    new E.AcpConnection("client", {}),
    { write: () => {} },
    {
      handleRequest: async () => ({}),
      handleNotification: (_m, params, json) => {
        routed++;
        convB.applyUpdate(json ?? params);
      },
    },
    nullLogger,
    nullTrace,
  );
  client.foldInto(a, () => {});
  const all = Buffer.from(Array.from({ length: N }, (_, n) => line(to, n)).join(""));
  const t0 = cpu();
  for (let i = 0; i < all.length; i += 65536) client.receive(all.subarray(i, i + 65536));
  const t1 = cpu();
  if (routed !== (to === "b" ? N : 0)) throw new Error(`routed ${routed}`);
  const check = (to === "a" ? a : b).thread();
  if (!check.hasChanges()) throw new Error("nothing folded");
  check.free();
  client.dispose();
  convB.dispose();
  a.free();
  b.free();
  return t1 - t0;
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
run("a");
run("b");
const folded: number[] = [];
const routedMs: number[] = [];
// Side by side: alternated, so load on the machine falls on both.
for (let r = 0; r < REPS; r++) {
  folded.push(run("a"));
  routedMs.push(run("b"));
}
const f = median(folded);
const g = median(routedMs);
console.log(`N=${N} REPS=${REPS}`);
console.log(`folded inside wasm (pollEventsFor):   ${((f * 1000) / N).toFixed(2)} µs/update`);
console.log(`routed to another session (handler):  ${((g * 1000) / N).toFixed(2)} µs/update`);
console.log(`ratio routed / folded: ${(g / f).toFixed(2)}`);
