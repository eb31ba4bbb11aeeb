// The client flavour's agentPresets (acp-wasm/src/registry.rs): acp-client's built-in registry
// snapshot, an overlay laid over it, how each agent starts on a platform, and bad arguments.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client } from "./helpers.mjs";

test("agentPresets: the snapshot's agents with their npx command lines", () => {
  const { agents, overlayProblem } = JSON.parse(client.agentPresets("linux-x86_64", null));
  assert.equal(overlayProblem, undefined);
  assert.deepEqual(
    agents.map((a) => a.id),
    ["claude", "codex", "gemini", "qwen", "opencode"],
  );
  const gemini = agents.find((a) => a.id === "gemini");
  assert.equal(gemini.name, "Gemini CLI");
  assert.deepEqual(gemini.launch.command.slice(0, 2), ["npx", "-y"]);
  assert.equal(gemini.launch.command.at(-1), "--acp");
  assert.deepEqual(gemini.launch.env, {});
  assert.equal(gemini.launch.via, "npx");
  assert.equal(gemini.problem, undefined);
});

test("agentPresets: an overlay replaces and adds agents; a binary-only one says why; a bad overlay is said", () => {
  const overlay = JSON.stringify({
    agents: [
      { id: "qwen", name: "Qwen (newer)", version: "9", distribution: { uvx: { package: "qwen-acp", env: { A: "1" } } } },
      { id: "bin", name: "Bin", distribution: { binary: { "darwin-aarch64": { archive: "https://x/b.tgz", cmd: "./b" } } } },
    ],
  });
  const { agents } = JSON.parse(client.agentPresets("linux-x86_64", overlay));
  const qwen = agents.find((a) => a.id === "qwen");
  assert.deepEqual(qwen.launch, { command: ["uvx", "qwen-acp"], env: { A: "1" }, via: "uvx" });
  const bin = agents.find((a) => a.id === "bin");
  assert.equal(bin.launch, undefined);
  assert.match(bin.problem, /no distribution for linux-x86_64/);
  const bad = JSON.parse(client.agentPresets("linux-x86_64", "{not json"));
  assert.equal(bad.agents.length, 5);
  assert.match(bad.overlayProblem, /^not an ACP registry or agent\.json/);
  const noDist = JSON.parse(client.agentPresets("linux-x86_64", '{"agents":[{"id":"x","name":"X","distribution":{}}]}'));
  assert.equal(noDist.overlayProblem, "agent `x` has no distribution");
  assert.throws(() => client.agentPresets(3, null), TypeError);
  assert.throws(() => client.agentPresets("linux-x86_64", 5), TypeError);
});

test("agentPresets: every variable an entry sets, reviewed; a refused one is the preset's problem", () => {
  const overlay = JSON.stringify({
    agents: [
      { id: "claude", name: "Claude Code", distribution: { npx: { package: "c", env: { NODE_OPTIONS: "--require=/x.js", RUST_LOG: "info" } } } },
    ],
  });
  const claude = JSON.parse(client.agentPresets("linux-x86_64", overlay)).agents.find((a) => a.id === "claude");
  assert.deepEqual(claude.env, [
    { name: "NODE_OPTIONS", value: "--require=/x.js", shown: "NODE_OPTIONS=--require=/x.js", status: "refused" },
    { name: "RUST_LOG", value: "info", shown: "RUST_LOG=info", status: "passed" },
  ]);
  assert.deepEqual(claude.launch.env, { NODE_OPTIONS: "--require=/x.js", RUST_LOG: "info" });
  assert.match(claude.problem, /^the registry entry of `claude` sets NODE_OPTIONS=--require=\/x\.js, which changes what code runs/);
  const gemini = JSON.parse(client.agentPresets("linux-x86_64", null)).agents.find((a) => a.id === "gemini");
  assert.deepEqual(gemini.env, []);
  assert.equal(gemini.problem, undefined);
});
