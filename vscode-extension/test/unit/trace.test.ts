// The protocol trace the extension records (src/trace/recorder.ts) and its panel's page
// (src/webview/traceHtml.ts): whole timed lines in any chunking, pairs and durations through
// the shared model (trace-viewer/model.js, the one `acp trace` mirrors), the bounds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { modelSource } from "../../../trace-viewer/model.js";
import { TraceRecorder } from "../../src/trace/recorder";
import { buildTraceHtml } from "../../src/webview/traceHtml";

/** A clock the test moves. */
function clock() {
  const c = { t: 1000, now: () => c.t };
  return c;
}

const prompt = '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}\n';
const perm = '{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","options":[]}}\n';
const permAnswer = '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}\n';
const cancel = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}\n';
const end = '{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}\n';

test("chunks become whole timed lines per direction, in the format acp trace reads", () => {
  const c = clock();
  const r = new TraceRecorder(c);
  assert.deepEqual(r.write("send", prompt.slice(0, 20)), []);
  c.t += 2;
  assert.deepEqual(r.write("recv", perm.slice(0, 30)), [], "another direction's half line waits apart");
  assert.deepEqual(r.write("send", prompt.slice(20)), [`2.000 → ${prompt.trim()}`]);
  c.t += 5;
  const lines = r.write("recv", perm.slice(30) + "an agent's stray line\n\n");
  assert.deepEqual(lines, [`7.000 ← ${perm.trim()}`, "7.000 ← an agent's stray line"], "an empty line is not kept");
  assert.deepEqual(r.write("stderr", "warning: x\r\n"), ["7.000 stderr warning: x"]);
  assert.equal(r.lineCount, 4);
});

test("the panel's model pairs what was recorded, with durations from the times", async () => {
  const c = clock();
  const r = new TraceRecorder(c);
  r.write("send", prompt);
  c.t += 10;
  r.write("recv", perm);
  c.t += 2.5;
  r.write("send", cancel + permAnswer);
  c.t += 1;
  r.write("recv", end);
  const source = modelSource(r.model);
  const page = (await source.rows({}, 0, 10)) as {
    items: { method: string; kind: string; ms: number | null; cancel: boolean; turnN: number }[];
  };
  assert.deepEqual(
    page.items.map((i) => [i.kind, i.method, i.ms, i.cancel, i.turnN]),
    [
      ["request", "session/prompt", 13.5, true, 1],
      ["request", "session/request_permission", 2.5, true, 1],
      ["notification", "session/cancel", null, true, 1],
      ["response", "session/request_permission", 2.5, true, 1],
      ["response", "session/prompt", 13.5, true, 1],
    ],
  );
  const summary = (await source.summary()) as { turns: unknown; bytes: { from: string; to: string; messages: number }[] };
  assert.deepEqual(summary.turns, { count: 1, open: 0, stops: { cancelled: 1 } });
  assert.deepEqual(
    summary.bytes.map((b) => [b.from, b.to, b.messages]),
    [
      ["client", "agent", 3],
      ["agent", "client", 2],
    ],
  );
});

test("a line over the limit keeps its start and its length; the model reads it from its start", async () => {
  const r = new TraceRecorder(clock(), { maxBytes: 1 << 20, maxLines: 100, maxLine: 200 });
  r.write("send", '{"jsonrpc":"2.0","id":4,"method":"fs/write_text_file","params":{"content":"');
  for (let i = 0; i < 100; i++) r.write("send", "x".repeat(1000));
  r.write("send", '"}}\n');
  const d = r.model.message(0);
  assert.equal(d.truncated, true);
  assert.equal(d.row.method, "fs/write_text_file");
  assert.ok(d.text.length <= 200 + 10, `kept ${d.text.length} characters`);
  assert.ok(d.lineBytes > 100_000, `the whole length is known: ${d.lineBytes}`);
});

test("past the bounds the oldest quarter is dropped and the model says so", () => {
  const r = new TraceRecorder(clock(), { maxBytes: 1 << 20, maxLines: 8, maxLine: 1 << 20 });
  for (let i = 0; i < 9; i++) r.write("recv", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":${i}}}\n`);
  assert.equal(r.lineCount, 7);
  assert.equal(r.dropped, 2);
  const s = r.model.status() as { rows: number; generation: number; restarted: string };
  assert.equal(s.rows, 7);
  assert.equal(s.generation, 1);
  assert.match(s.restarted, /2 older lines were dropped/);
});

test("the panel's page: a strict CSP with a nonce, only the extension's files", () => {
  const html = buildTraceHtml({
    cspSource: "vscode-resource:",
    scriptUri: "vscode-resource:/dist/trace.js",
    styleUri: "vscode-resource:/dist/trace.css",
    nonce: "abc123",
  });
  const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? "";
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-abc123'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.match(html, /<script nonce="abc123" src="vscode-resource:\/dist\/trace\.js"><\/script>/);
});
