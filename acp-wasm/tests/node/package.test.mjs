// The npm package layout: exports map, the web build, and the generated TypeScript types.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, symlinkSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { pkgDir } from "./helpers.mjs";

function roundTrip(AcpConnection) {
  const client = new AcpConnection("client");
  const agent = new AcpConnection("agent");
  const id = client.sendRequest("session/new", { cwd: "/" }, 0);
  agent.feed(client.pollTransmit(), 0);
  const req = agent.pollEvent();
  agent.respond(req.token, { sessionId: "w" });
  client.feed(agent.pollTransmit(), 0);
  const done = client.pollEvent();
  client.free();
  agent.free();
  return [id, done];
}

test("require('acp-wasm') and import('acp-wasm') resolve to the nodejs build", async () => {
  const dir = mkdtempSync(join(tmpdir(), "acp-wasm-pkg-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkgDir, join(dir, "node_modules", "acp-wasm"), "dir");
    const require = createRequire(join(dir, "index.js"));
    const resolved = require.resolve("acp-wasm");
    assert.match(resolved, /[\\/]node[\\/]acp_wasm\.js$/);
    const cjs = require("acp-wasm");
    const [id, done] = roundTrip(cjs.AcpConnection);
    assert.deepEqual(done, { type: "response", requestId: id, method: "session/new", result: { sessionId: "w" } });

    const esm = await import(pathToFileURL(join(dir, "node_modules", "acp-wasm", "node", "acp_wasm.js")));
    assert.equal(typeof esm.AcpConnection, "function");
    const pj = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    assert.equal(pj.name, "acp-wasm");
    assert.equal(pj.exports["."].node.default, "./node/acp_wasm.js");
    assert.equal(pj.exports["."].browser.default, "./web/acp_wasm.js");
    assert.equal(pj.exports["."].default.default, "./web/acp_wasm.js");
    for (const rel of [pj.types, pj.exports["."].node.types, pj.exports["."].browser.types]) {
      assert.ok(statSync(join(pkgDir, rel)).isFile(), `${rel} exists`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("require('acp-wasm/client') resolves to the client flavour (nodejs-client)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "acp-wasm-pkg-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkgDir, join(dir, "node_modules", "acp-wasm"), "dir");
    const require = createRequire(join(dir, "index.js"));
    assert.match(require.resolve("acp-wasm/client"), /[\\/]nodejs-client[\\/]acp_wasm\.js$/);
    const cjs = require("acp-wasm/client");
    const [id, done] = roundTrip(cjs.AcpConnection);
    assert.deepEqual(done, { type: "response", requestId: id, method: "session/new", result: { sessionId: "w" } });
    assert.equal(typeof cjs.Thread, "function");
    assert.equal(require("acp-wasm").Thread, undefined, "the default export is the engine alone");
    const pj = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    assert.equal(pj.exports["./client"].node.default, "./nodejs-client/acp_wasm.js");
    assert.equal(pj.exports["./client"].browser.default, "./web-client/acp_wasm.js");
    assert.equal(pj.exports["./client"].default.default, "./web-client/acp_wasm.js");
    for (const cond of ["node", "browser", "default"]) {
      const { types, default: js } = pj.exports["./client"][cond];
      assert.ok(statSync(join(pkgDir, types)).isFile(), `${types} exists`);
      assert.ok(statSync(join(pkgDir, js)).isFile(), `${js} exists`);
    }
    for (const f of pj.files) assert.ok(statSync(join(pkgDir, f)), `${f} (package.json files) exists`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the web-client build works after initSync, Thread included", async () => {
  const web = await import(pathToFileURL(join(pkgDir, "web-client", "acp_wasm.js")));
  web.initSync({ module: readFileSync(join(pkgDir, "web-client", "acp_wasm_bg.wasm")) });
  const [id, done] = roundTrip(web.AcpConnection);
  assert.deepEqual(done, { type: "response", requestId: id, method: "session/new", result: { sessionId: "w" } });
  const t = new web.Thread();
  t.applyUpdate('{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}}');
  assert.deepEqual(JSON.parse(t.takeDelta()).entries, [[0, { type: "agent", content: [{ type: "text", text: "ok" }] }]]);
  t.free();
});

test("the web build works after initSync", async () => {
  const web = await import(pathToFileURL(join(pkgDir, "web", "acp_wasm.js")));
  web.initSync({ module: readFileSync(join(pkgDir, "web", "acp_wasm_bg.wasm")) });
  const [id, done] = roundTrip(web.AcpConnection);
  assert.deepEqual(done, { type: "response", requestId: id, method: "session/new", result: { sessionId: "w" } });
});

test("the generated .d.ts carries the API types (from the crate source)", () => {
  for (const dir of ["node", "web", "nodejs-client", "web-client"]) {
    const dts = readFileSync(join(pkgDir, dir, "acp_wasm.d.ts"), "utf8");
    for (const needle of [
      'export type Role = "client" | "agent";',
      "export interface ConnectionOptions",
      "export type AcpEvent =",
      '{ type: "requestFailed"; requestId: number;',
      "export type AcpErrorName =",
      "export class AcpConnection",
      "constructor(role: Role, options?: ConnectionOptions);",
      "pollEvent(): AcpEvent | undefined;",
      "pollEvents(): AcpEvent[];",
      "sendRequestRaw(method: string, paramsJson: string | null | undefined, nowMs: number, timeoutMs?: number | null): number;",
      "notifyRaw(method: string, paramsJson?: string | null): void;",
      "respondRaw(token: number, resultJson: string): void;",
      "pollTransmitInto(buffer: Uint8Array): number;",
      "pollTransmit(): Uint8Array | undefined;",
      "feed(bytes: Uint8Array, nowMs: number): void;",
      "sendRequest(method: string, params: unknown, nowMs: number, timeoutMs?: number | null): number;",
      "pollTimeout(): number | undefined;",
      "readonly role: Role;",
      "readonly pendingOutgoing: number;",
      "readonly isClosed: boolean;",
      "free(): void;",
      "[Symbol.dispose](): void;",
    ]) {
      assert.ok(dts.includes(needle), `${dir}/acp_wasm.d.ts lacks: ${needle}`);
    }
  }
});
