// The client flavour's session helpers (acp-wasm/src/session.rs) beyond their case table
// (policy.test.mjs replays tests/client/mcp.json through mcpServers): stopWords and rpcWords
// give plain words, and every export checks its arguments.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client } from "./helpers.mjs";

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
