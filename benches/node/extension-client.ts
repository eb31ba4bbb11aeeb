// The extension-side contestant of thread-flood.mjs: the VS Code extension's own client code
// (vscode-extension/src: AgentConnection spawning the agent, AcpClient on acp-wasm's client
// build, the session opened by acp-client's session engine (sessions/opener.ts, acp-wasm's
// Session), every session/update folded into it inside wasm by the connection
// (AcpClient.foldInto: pollEventsFor), and Conversation over the session's thread: its deltas
// pulled at most every 50 ms by the timer and applied to the webview's ThreadModel, as the chat
// does). Bundled by thread-flood.mjs with the extension's esbuild; prints one JSON line.
//
//   node out/extension-client.cjs AGENT_SCRIPT N

import * as path from "node:path";
import { Conversation, timerScheduler } from "../../vscode-extension/src/bridges/conversation";
import { PermissionBridge } from "../../vscode-extension/src/bridges/permission";
import { ClientRouter } from "../../vscode-extension/src/bridges/router";
import { AgentConnection } from "../../vscode-extension/src/protocol/agent";
import { loadEngine } from "../../vscode-extension/src/protocol/engine";
import { nullLogger, nullTrace } from "../../vscode-extension/src/protocol/log";
import { ClientPolicy } from "../../vscode-extension/src/protocol/policy";
import { SessionDecisions } from "../../vscode-extension/src/sessions/decisions";
import { openSession } from "../../vscode-extension/src/sessions/opener";
import { ThreadModel, messageSource } from "../../vscode-extension/src/webview/threadModel";

const CHUNK_TEXT = "Here is the next piece of the answer, streamed. ";

async function main() {
  const [agentScript, nArg] = process.argv.slice(2);
  const n = Number(nArg);
  const { module: engine } = loadEngine(path.resolve(__dirname, "..", "..", "..", "vscode-extension"));
  const policy = new ClientPolicy(() => engine);
  // The webview's side: each delta parsed once and applied to the entries shown.
  const view = new ThreadModel();
  let deltas = 0;
  // The chat's conversation: a session engine's (SessionController.show does the same).
  const session = new engine.Session('{"open":"new"}', process.cwd());
  const conv = new Conversation(
    session.thread(),
    (json) => {
      deltas++;
      view.apply(JSON.parse(json));
    },
    timerScheduler,
    50, // acp.chat.updateIntervalMs's default
    undefined,
    (json) => session.update(json),
  );
  const permission = new PermissionBridge({ prompt: async () => undefined }, () => ({ autoApprove: false }), nullLogger, policy, () => {});
  const conn = await AgentConnection.start(
    { name: "flood", command: process.execPath, args: [agentScript!, String(n)], envPolicy: { allowlist: [], passthrough: [], inheritAll: true } },
    {
      engine,
      engineOptions: {},
      capabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "bench", version: "0" },
      // Updates never reach the router: the connection folds them into the session in wasm.
      handler: new ClientRouter({ permission, onSessionUpdate: (_sessionId, params) => conv.applyUpdate(params), log: nullLogger }),
      log: nullLogger,
      trace: nullTrace,
      onStderr: (s) => process.stderr.write(s),
    },
  );
  const { sessionId } = await openSession(conn, session, {
    cwd: process.cwd(),
    mcpSetting: {},
    decisions: new SessionDecisions(() => engine),
    onFolded: () => conv.changed(),
    notice: (level, text) => conv.notice(level, text),
  });
  conv.flush();
  const prompt = [{ type: "text" as const, text: "go" }];
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  conv.beginTurn(prompt);
  const res = await conn.prompt(sessionId, prompt);
  conv.endTurn(res.stopReason);
  // The final text, from what the view was sent.
  const last = [...view.entries.values()].filter((e) => e.type === "agent").at(-1);
  const text = last && last.type === "agent" ? messageSource(last.content) : "";
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  if (text.length !== CHUNK_TEXT.length * n || !text.startsWith(CHUNK_TEXT + CHUNK_TEXT)) {
    throw new Error(`final text has ${text.length} characters, expected ${CHUNK_TEXT.length * n}`);
  }
  await conn.stop(1000);
  conv.dispose();
  session.free();
  process.stdout.write(JSON.stringify({ ok: true, secs, cpu_secs: (cpu.user + cpu.system) / 1e6, chars: text.length, deltas }) + "\n");
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ ok: false, error: String((e as Error)?.stack ?? e) }) + "\n");
  process.exit(1);
});
