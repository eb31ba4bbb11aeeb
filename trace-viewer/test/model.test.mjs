// The JavaScript model (model.js) against the vectors the Rust model answers
// (acp-cli/src/cli/trace/tests.rs): the same trace gives the same rows, pairs, durations,
// turns, summary, filters and messages. Run: node --test trace-viewer/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TraceModel, members, utf8Length, utf8Prefix, asciiLower } from "../model.js";

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "vectors");

/** Equal JSON, numbers within 1e-9; the path of the first difference in the message. */
function same(a, b, at) {
  if (typeof a === "number" && typeof b === "number") {
    assert.ok(Math.abs(a - b) <= 1e-9, `${at}: ${a} != ${b}`);
    return;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    assert.ok(Array.isArray(a) && Array.isArray(b), `${at}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
    assert.equal(a.length, b.length, `${at}: ${a.length} items != ${b.length}`);
    a.forEach((x, i) => same(x, b[i], `${at}[${i}]`));
    return;
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) same(a[k] ?? null, b[k] ?? null, `${at}.${k}`);
    return;
  }
  assert.deepEqual(a, b, `${at}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
}

function modelOf(text, options) {
  const m = new TraceModel({ maxLine: options?.maxLine, maxRows: options?.maxRows ?? 1 << 20 });
  m.addText(text);
  return m;
}

const filterOf = (f) => ({ ...f });

for (const file of readdirSync(VECTORS).filter((f) => f.endsWith(".trace"))) {
  const name = file.replace(/\.trace$/, "");
  const text = readFileSync(join(VECTORS, file), "utf8");
  const want = JSON.parse(readFileSync(join(VECTORS, `${name}.json`), "utf8"));

  test(`vector ${name}: status, rows and messages`, () => {
    const m = modelOf(text, want.options);
    const s = m.status();
    for (const k of Object.keys(want.status)) same(s[k], want.status[k], `status.${k}`);
    const page = m.page({}, 0, 1 << 20);
    // The page is capped at 500 rows; the vectors are smaller.
    same(page.items, want.rows, "rows");
    const messages = m.rows
      .map((row, n) => [row, n])
      .filter(([row]) => !(row.flags & 4))
      .map(([, n]) => {
        const d = m.message(n);
        return { n, json: d.json, text: d.text };
      });
    same(messages, want.messages, "messages");
  });

  test(`vector ${name}: summary`, () => {
    same(modelOf(text, want.options).summary(), want.summary, "summary");
  });

  test(`vector ${name}: filters, locate, turns`, () => {
    const m = modelOf(text, want.options);
    for (const t of want.turns) same(m.turnsOf(t.session).turns, t.turns, `turns of ${t.session}`);
    for (const q of want.queries) same(m.select(filterOf(q.filter)), q.items, `select ${JSON.stringify(q.filter)}`);
    for (const l of want.locate) same(m.locate(filterOf(l.filter), l.n).index, l.index, `locate ${JSON.stringify(l)}`);
  });

  test(`vector ${name}: text fed in any pieces gives the same rows`, () => {
    const whole = modelOf(text, want.options);
    const step = Math.max(1, Math.floor(text.length / 97));
    for (let split = 0; split <= text.length; split += step) {
      const m = new TraceModel({ maxLine: want.options?.maxLine, maxRows: want.options?.maxRows ?? 1 << 20 });
      m.addText(text.slice(0, split));
      m.addText(text.slice(split));
      assert.deepEqual(m.rows, whole.rows, `split at ${split}`);
    }
  });
}

test("the start of an object: complete members only", () => {
  assert.deepEqual(members('{"a":1,"b":"x\\"y","c":{"d":[1,2]},"e":tr'), [
    ["a", "1"],
    ["b", '"x\\"y"'],
    ["c", '{"d":[1,2]}'],
  ]);
  assert.deepEqual(members("[1,2]"), []);
  assert.deepEqual(members('{"a":12'), [], "a number running to the end may go on");
});

test("UTF-8 lengths and prefixes", () => {
  assert.equal(utf8Length("aé→😀"), 1 + 2 + 3 + 4);
  assert.equal(utf8Prefix("aé→😀", 6), "aé→");
  assert.equal(utf8Prefix("aé→😀", 9), "aé→");
  assert.equal(utf8Prefix("aé→😀", 10), "aé→😀");
  assert.equal(asciiLower("ABC é É"), "abc é É");
});

test("a trace of the extension's lines: pairing and durations from the times", () => {
  const m = new TraceModel();
  m.addLine('10 → {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}');
  m.addLine('12.5 ← {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","options":[]}}');
  m.addLine('20 → {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}');
  m.addLine('21 ← {"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}');
  const rows = m.page({}, 0, 10).items;
  assert.deepEqual(
    rows.map((r) => [r.kind, r.method, r.pair, r.ms, r.cancel, r.turnN]),
    [
      ["request", "session/prompt", 3, 11, true, 1],
      ["request", "session/request_permission", 2, 7.5, true, 1],
      ["response", "session/request_permission", 1, 7.5, true, 1],
      ["response", "session/prompt", 0, 11, true, 1],
    ],
  );
  assert.deepEqual(m.summary().turns, { count: 1, open: 0, stops: { cancelled: 1 } });
});

test("a line the extension cut is read from its start", () => {
  const m = new TraceModel();
  const start = '5 ← {"jsonrpc":"2.0","id":3,"result":{"content":"' + "a".repeat(100);
  m.addLine('4 → {"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}');
  m.addLine(start, 5_000_000);
  const [req, ans] = m.page({}, 0, 10).items;
  assert.equal(ans.cut, true);
  assert.equal(ans.pair, req.n);
  assert.equal(ans.ms, 1);
  const d = m.message(ans.n);
  assert.equal(d.truncated, true);
  assert.equal(d.lineBytes, 5_000_000);
  assert.equal(m.summary().bytes.find((b) => b.from === "agent").bytes, 5_000_000);
});

test("a v2 turn ends at its idle state_update on its connection only (tests.rs)", () => {
  const init = (v) => [
    '→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}',
    `← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":${v}}}`,
  ];
  const prompt = '→ {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}';
  const ack = '← {"jsonrpc":"2.0","id":1,"result":{"messageId":"u1"}}';
  const idle =
    '← {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}';
  const turns = (lines) => {
    const m = new TraceModel();
    for (const l of lines) m.addLine(l);
    return m.turnsOf("s").turns.map((t) => [t.stop, t.endLine]);
  };
  assert.deepEqual(turns([...init(2), prompt, ack, idle]), [["end_turn", 5]]);
  assert.deepEqual(turns([...init(2), prompt, ack]), [[null, null]]);
  assert.deepEqual(turns([...init(1), prompt, idle]), [[null, null]]);
  assert.deepEqual(turns([...init(1), prompt, ack]), [[null, 4]]);
  assert.deepEqual(turns([...init(2), prompt, ack, ...init(2), idle]), [[null, null]]);
  assert.deepEqual(turns([...init(2), prompt, idle.replace("←", "→")]), [[null, null]]);
});
