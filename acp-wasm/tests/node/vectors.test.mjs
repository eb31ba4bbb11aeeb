// Replays the language-neutral conformance vectors (tests/vectors/*.transcript, format in
// tests/vectors/README.md) against the built nodejs package: the JS twin of the native runner
// acp-core/tests/vectors.rs. Every vector is replayed as written and with every feed split into
// single bytes; both must pass, exactly as natively.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { AcpConnection, clientV2 } from "./helpers.mjs";

const vectorsDir = process.env.ACP_VECTORS_DIR ??
  join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "vectors");

class Fail extends Error {}

/** Replays one transcript; throws a Fail saying where and why it diverged. */
export function check(transcript, bytewise, Connection = AcpConnection) {
  let r = null;
  const lines = transcript.split("\n");
  if (lines.at(-1) === "") lines.pop(); // like Rust's str::lines
  for (const [n, rawLine] of lines.entries()) {
    const at = n + 1;
    const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
    if (line === "" || line.startsWith("#")) continue;
    const sp = line.indexOf(" ");
    const [tag, arg] = sp >= 0 ? [line.slice(0, sp), line.slice(sp + 1)] : [line, ""];
    const pending = r ? r.pending() : "";
    const fail = (why) => new Fail(`line ${at}: ${why}\n  ${line}${pending}`);
    const guard = (f) => {
      try { return f(); } catch (e) { throw e instanceof Fail ? e : fail(e.message); }
    };
    if (tag === "=") {
      if (r) throw fail("a second header");
      r = guard(() => new Runner(parse(arg), Connection));
      continue;
    }
    if (!r) throw fail("no `=` header before");
    if (tag === "<" || tag === "!") {
      const want = guard(() => parse(arg));
      const queue = tag === "<" ? r.tx : r.ev;
      const got = queue.shift();
      if (got === undefined || !jsonEq(got, want)) {
        throw fail(`${tag === "<" ? "transmitted" : "event"} ${got === undefined ? "nothing" : JSON.stringify(got)}`);
      }
      continue;
    }
    guard(() => r.expectDrained());
    guard(() => {
      switch (tag) {
        case ">": r.feed(new TextEncoder().encode(arg + "\n"), bytewise); break;
        case ">>": r.feed(unescape(arg), bytewise); break;
        case "@": {
          if (!/^\d+$/.test(arg)) throw new Error(`time: ${arg}`);
          const t = Number(arg);
          if (t < r.now) throw new Error("time goes backwards");
          r.now = t;
          r.conn.handleTimeout(t);
          break;
        }
        case "$": r.command(parse(arg)); break;
        case "?": r.state(parse(arg)); break;
        default: throw new Error(`unknown tag ${JSON.stringify(tag)}`);
      }
      r.drain();
    });
  }
  if (!r) throw new Fail("no `=` header");
  try { r.expectDrained(); } catch (e) { throw new Fail(`at the end: ${e.message}`); }
  r.conn.free();
}

class Runner {
  constructor(header, Connection) {
    if (header === null || typeof header !== "object" || Array.isArray(header)) {
      throw new Error("the header is not an object");
    }
    const { role, ...options } = header;
    // Unknown keys and bad values are refused by the AcpConnection constructor (TypeError).
    this.conn = new Connection(role, options);
    this.now = 0;
    this.out = new Uint8Array(0); // transmitted bytes not yet split into lines
    this.tx = []; // transmitted lines (parsed) not yet expected
    this.ev = []; // events not yet expected
  }

  feed(bytes, bytewise) {
    if (bytewise) {
      for (let i = 0; i < bytes.length; i++) this.conn.feed(bytes.subarray(i, i + 1), this.now);
    } else {
      this.conn.feed(bytes, this.now);
    }
  }

  command(c) {
    const params = c.params ?? undefined;
    let outcome;
    let thrown;
    try {
      switch (c.cmd) {
        case "sendRequest": outcome = this.conn.sendRequest(c.method, params, this.now, c.timeoutMs ?? undefined); break;
        case "notify": outcome = this.conn.notify(c.method, params); break;
        case "respond": outcome = this.conn.respond(c.token, c.result); break;
        case "respondError": outcome = this.conn.respondError(c.token, c.code, c.message, c.data); break;
        case "cancelRequest": outcome = this.conn.cancelRequest(c.requestId, this.now); break;
        case "close": outcome = this.conn.close(c.reason); break;
        case "feedEof": outcome = this.conn.feedEof(this.now); break;
        default: throw new Fail(`unknown command ${JSON.stringify(c.cmd)}`);
      }
    } catch (e) {
      if (e instanceof Fail) throw e;
      thrown = e;
    }
    const value = outcome === undefined ? null : outcome;
    if (thrown === undefined) {
      if (c.throws !== undefined) throw new Error(`returned ${JSON.stringify(value)} instead of throwing ${c.throws}`);
      if ("returns" in c && !jsonEq(value, c.returns)) throw new Error(`returned ${JSON.stringify(value)}`);
    } else if (thrown.name !== c.throws) {
      throw new Error(`threw ${thrown.name} (${thrown.message})`);
    }
  }

  state(want) {
    for (const [k, v] of Object.entries(want)) {
      let got;
      switch (k) {
        case "pendingOutgoing": got = this.conn.pendingOutgoing; break;
        case "pendingIncoming": got = this.conn.pendingIncoming; break;
        case "isClosed": got = this.conn.isClosed; break;
        case "pollTimeout": got = this.conn.pollTimeout() ?? null; break;
        default: throw new Error(`unknown getter ${JSON.stringify(k)}`);
      }
      if (!jsonEq(got, v)) throw new Error(`${k} is ${JSON.stringify(got)}`);
    }
  }

  /** Drains the engine: transmitted bytes split into lines (each JSON, each terminated). */
  drain() {
    for (let b; (b = this.conn.pollTransmit()) !== undefined; ) {
      const joined = new Uint8Array(this.out.length + b.length);
      joined.set(this.out);
      joined.set(b, this.out.length);
      this.out = joined;
    }
    let i;
    while ((i = this.out.indexOf(10)) >= 0) {
      const line = this.out.subarray(0, i + 1);
      this.out = this.out.slice(i + 1);
      let text;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(line);
        this.tx.push(JSON.parse(text));
      } catch (e) {
        throw new Error(`transmitted a line that is not JSON (${e.message}): ${JSON.stringify(text ?? [...line])}`);
      }
    }
    if (this.out.length) throw new Error(`transmitted an unterminated line: ${JSON.stringify([...this.out])}`);
    for (let e; (e = this.conn.pollEvent()) !== undefined; ) this.ev.push(e);
  }

  pending() {
    return [...this.tx.map((v) => `\n  queued: < ${JSON.stringify(v)}`), ...this.ev.map((v) => `\n  queued: ! ${JSON.stringify(v)}`)].join("");
  }

  expectDrained() {
    if (this.tx.length) throw new Error(`unexpected transmission: < ${JSON.stringify(this.tx[0])}`);
    if (this.ev.length) throw new Error(`unexpected event: ! ${JSON.stringify(this.ev[0])}`);
  }
}

function parse(s) {
  try { return JSON.parse(s); } catch (e) { throw new Error(`bad JSON in the vector: ${e.message}`); }
}

/** Structural JSON equality; numbers by value; an absent key is not null. */
export function jsonEq(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEq(x, b[i]));
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEq(a[k], b[k]));
  }
  return a === b;
}

/** `>>` payloads: UTF-8 text with \n, \r, \t, \\ and \xHH escapes. */
export function unescape(s) {
  const out = [];
  const enc = new TextEncoder();
  const chars = [...s];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c !== "\\") { out.push(...enc.encode(c)); continue; }
    const e = chars[++i];
    if (e === "n") out.push(10);
    else if (e === "r") out.push(13);
    else if (e === "t") out.push(9);
    else if (e === "\\") out.push(92);
    else if (e === "x") {
      const hex = (chars[i + 1] ?? "") + (chars[i + 2] ?? "");
      i += 2;
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error(`bad \\x${hex}`);
      out.push(parseInt(hex, 16));
    } else throw new Error(`bad escape \\${e}`);
  }
  return Uint8Array.from(out);
}

// `unstable-*` vectors need acp-core's feature `unstable`, and `v2-*` its feature
// `unstable_protocol_v2`, which the packages are built without (the native runners replay them
// with it: acp-core/tests/vectors.rs, acp-native/tests/host_vectors.rs).
const files = readdirSync(vectorsDir)
  .filter(
    (f) => f.endsWith(".transcript") && !f.startsWith("unstable-") && !f.startsWith("v2-"),
  )
  .sort();

test("the vectors are there", () => {
  assert.ok(files.length >= 20, `expected the vectors in ${vectorsDir}, found ${files.length}`);
});

for (const f of files) {
  const text = readFileSync(join(vectorsDir, f), "utf8");
  for (const bytewise of [false, true]) {
    test(`vector ${f} (${bytewise ? "byte by byte" : "as written"})`, () => {
      check(text, bytewise);
    });
  }
}

// ACP v2: the `v2-*` vectors, and every vector the default build replays (v1 untouched with the
// feature), through the client-v2 test build (pkg/nodejs-client-v2, feature
// unstable_protocol_v2), which scripts/test-wasm.sh builds (ACP_WASM_V2=1 makes it required).
const v2Files = readdirSync(vectorsDir)
  .filter((f) => f.endsWith(".transcript") && f.startsWith("v2-"))
  .sort();
const v2Skip = clientV2 ? false : "pkg/nodejs-client-v2 is not built (scripts/test-wasm.sh builds it)";

test("the v2 vectors are there", () => {
  assert.ok(v2Files.length >= 5, `expected the v2 vectors in ${vectorsDir}, found ${v2Files.length}`);
});

for (const f of [...v2Files, ...files]) {
  const text = readFileSync(join(vectorsDir, f), "utf8");
  test(`vector ${f} through the v2 build (byte by byte)`, { skip: v2Skip }, () => {
    check(text, true, clientV2.AcpConnection);
  });
}

test("a v2 vector fails the default build (it has no v2)", () => {
  const text = readFileSync(join(vectorsDir, v2Files[0]), "utf8");
  assert.throws(() => check(text, false), Fail);
});

test("the runner refuses wrong vectors", () => {
  const ok = '= {"role":"agent"}\n> {"jsonrpc":"2.0","method":"n"}\n! {"type":"notification","method":"n"}\n';
  check(ok, false);
  const wrong = [
    // an event nobody expected
    '= {"role":"agent"}\n> {"jsonrpc":"2.0","method":"n"}\n',
    // a different event
    '= {"role":"agent"}\n> {"jsonrpc":"2.0","method":"n"}\n! {"type":"notification","method":"m"}\n',
    // a transmission that does not come
    '= {"role":"agent"}\n< {"jsonrpc":"2.0","id":null,"result":1}\n',
    // an extra key
    '= {"role":"agent"}\n> {"jsonrpc":"2.0","method":"n"}\n! {"type":"notification","method":"n","params":null}\n',
    // a command that should have thrown
    '= {"role":"client"}\n$ {"cmd":"notify","method":"x","throws":"InvalidMethod"}\n',
    // a getter with another value
    '= {"role":"client"}\n? {"pendingOutgoing":1}\n',
    // an unknown header key
    '= {"role":"client","maxMesageBytes":1}\n',
    // no header
    "> {}\n",
  ];
  for (const w of wrong) assert.throws(() => check(w, false), Fail, `accepted:\n${w}`);
});

test("jsonEq and unescape", () => {
  assert.ok(jsonEq({ a: [1, 2.0] }, { a: [1.0, 2] }));
  assert.ok(!jsonEq({ a: 1 }, { a: 1, b: null }));
  assert.ok(!jsonEq("1", 1));
  assert.deepEqual([...unescape("a\\r\\n\\xff\\\\é")], [97, 13, 10, 0xff, 92, 0xc3, 0xa9]);
  assert.throws(() => unescape("\\q"));
});
