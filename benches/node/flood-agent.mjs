// The agent of the thread-flood benchmark (thread-flood.mjs): a bare NDJSON agent over stdio,
// no SDK and no engine, so both clients measured get the same bytes at the same cost. It
// answers initialize and session/new, and a session/prompt with N `agent_message_chunk`
// session/update notifications (built before the prompt, written in large chunks with
// backpressure), then the prompt's answer.
//
//   node flood-agent.mjs N

const N = Number(process.argv[2] ?? 100000);
const SESSION_ID = "sess_0123456789abcdef";
const CHUNK_TEXT = "Here is the next piece of the answer, streamed. ";

const line = (msg) => JSON.stringify(msg) + "\n";
const updates = Buffer.from(
  line({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: SESSION_ID, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: CHUNK_TEXT } } },
  }).repeat(N),
);

async function write(buf) {
  const CHUNK = 1 << 20;
  for (let i = 0; i < buf.length; i += CHUNK) {
    if (!process.stdout.write(buf.subarray(i, i + CHUNK))) await new Promise((r) => process.stdout.once("drain", r));
  }
}

let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (text) => {
  pending += text;
  for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
    const msg = JSON.parse(pending.slice(0, nl));
    pending = pending.slice(nl + 1);
    void handle(msg);
  }
});
process.stdin.on("end", () => process.exit(0));

async function handle(msg) {
  if (msg.id === undefined || msg.method === undefined) return; // notifications, responses
  const answer = (result) => write(Buffer.from(line({ jsonrpc: "2.0", id: msg.id, result })));
  switch (msg.method) {
    case "initialize":
      return answer({ protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "flood-agent", version: "0" } });
    case "session/new":
      return answer({ sessionId: SESSION_ID });
    case "session/prompt":
      await write(updates);
      return answer({ stopReason: "end_turn" });
    default:
      return write(Buffer.from(line({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } })));
  }
}
