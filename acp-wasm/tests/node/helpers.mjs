// Shared helpers of the node tests: they load the BUILT nodejs packages (acp-wasm/pkg, made by
// scripts/build-wasm.sh), never the sources, so they test what users get: `acp` is the default
// flavour (pkg/node: the engine alone), `client` the client flavour (pkg/nodejs-client: the
// engine plus everything from acp-client).
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { existsSync } from "node:fs";

export const pkgDir = process.env.ACP_WASM_PKG ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..", "pkg");
if (!existsSync(join(pkgDir, "node", "acp_wasm.js"))) {
  throw new Error(`acp-wasm package not built at ${pkgDir}: run scripts/build-wasm.sh`);
}
if (!existsSync(join(pkgDir, "nodejs-client", "acp_wasm.js"))) {
  throw new Error(`the client flavour of acp-wasm is not built at ${pkgDir}/nodejs-client: run scripts/build-wasm.sh`);
}
const require = createRequire(import.meta.url);
export const acp = require(join(pkgDir, "node", "acp_wasm.js"));
export const { AcpConnection } = acp;
export const client = require(join(pkgDir, "nodejs-client", "acp_wasm.js"));
// The ACP v2 test build (flavour client-v2: the client flavour with unstable_protocol_v2), when
// built; scripts/test-wasm.sh builds it and sets ACP_WASM_V2=1, which makes it required.
const v2Path = join(pkgDir, "nodejs-client-v2", "acp_wasm.js");
if (process.env.ACP_WASM_V2 === "1" && !existsSync(v2Path)) {
  throw new Error(`ACP_WASM_V2=1 but the client-v2 flavour is not built at ${v2Path}: run ACP_WASM_FLAVOURS=client-v2 scripts/build-wasm.sh`);
}
export const clientV2 = existsSync(v2Path) ? require(v2Path) : undefined;

/** Drains a connection per the drain rule: all transmitted text and all events. */
export function drain(conn) {
  let text = "";
  for (let t; (t = conn.pollTransmitString()) !== undefined; ) text += t;
  const events = [];
  for (let e; (e = conn.pollEvent()) !== undefined; ) events.push(e);
  return { text, events, lines: text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)) };
}

/** Drains only events. */
export function events(conn) {
  const out = [];
  for (let e; (e = conn.pollEvent()) !== undefined; ) out.push(e);
  return out;
}

/** Moves bytes between two connections until both are quiet; returns events seen by each. */
export function pump(a, b, now) {
  const seen = { a: [], b: [] };
  for (let guard = 0; guard < 1000; guard++) {
    let moved = false;
    for (let t; (t = a.pollTransmit()) !== undefined; ) { b.feed(t, now); moved = true; }
    for (let t; (t = b.pollTransmit()) !== undefined; ) { a.feed(t, now); moved = true; }
    if (!moved) break;
  }
  seen.a.push(...events(a));
  seen.b.push(...events(b));
  return seen;
}

/** Asserts that fn throws an Error whose name is `name`; returns it. */
export function throwsNamed(assert, fn, name) {
  let caught;
  try { fn(); } catch (e) { caught = e; }
  assert.ok(caught instanceof Error, `expected a thrown Error named ${name}, got ${caught}`);
  assert.equal(caught.name, name, `error name (message: ${caught.message})`);
  return caught;
}
