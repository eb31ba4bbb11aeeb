// The client flavour's session helpers (acp-wasm/src/session.rs): mcpServers replays
// tests/client/mcp.json (the case table acp-client's own tests replay), stopWords and rpcWords
// give plain words, and every export checks its arguments.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { client } from "./helpers.mjs";

const table = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "client", "mcp.json"), "utf8"));

test("mcpServers replays tests/client/mcp.json", () => {
  assert.ok(table.cases.length >= 7);
  for (const c of table.cases) {
    const got = JSON.parse(client.mcpServers(JSON.stringify(c.config), JSON.stringify(c.caps ?? null)));
    if (c.expect.error !== undefined) assert.deepEqual(got, { error: c.expect.error }, c.name);
    else if (c.expect.error_starts !== undefined) assert.ok(got.error?.startsWith(c.expect.error_starts), c.name);
    else assert.deepEqual(got, { servers: c.expect.servers, leftOut: c.expect.left_out }, c.name);
  }
});

test("mcpServers: text that is not JSON is an error answer, wrong argument types are TypeErrors", () => {
  assert.match(JSON.parse(client.mcpServers("{nope", "null")).error, /^not an MCP config/);
  assert.deepEqual(JSON.parse(client.mcpServers('{"mcpServers":{}}', "null")), { servers: [], leftOut: [] });
  assert.throws(() => client.mcpServers(1, "null"), TypeError);
  assert.throws(() => client.mcpServers("{}", "{bad"), TypeError);
});

test("stopWords and rpcWords: plain words, never the wire's names", () => {
  assert.equal(client.stopWords("end_turn"), "Done");
  assert.equal(client.stopWords("cancelled"), "Cancelled");
  for (const r of ["max_tokens", "max_turn_requests", "refusal", "something_new"]) assert.ok(!client.stopWords(r).includes("_"), r);
  assert.equal(client.rpcWords(-32603, "Internal error", null), "the agent ran into an internal error");
  assert.equal(client.rpcWords(-32000, "Authentication required", undefined), "the agent needs you to sign in");
  assert.equal(client.rpcWords(-32602, "no such file", "permission_denied"), "it was not allowed: no such file");
  assert.throws(() => client.stopWords(3), TypeError);
  assert.throws(() => client.rpcWords("x", "m", null), TypeError);
  assert.throws(() => client.rpcWords(1.5, "m", null), TypeError);
  assert.throws(() => client.rpcWords(1, "m", 5), TypeError);
});
