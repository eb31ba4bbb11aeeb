// Agent presets in the picker (src/agents.ts): acp-client's registry presets through the real
// engine's agentPresets, minus the agents already configured, with the acp.agents entry each adds.
import { nodeFiles } from "../../src/platform/nodeFiles";
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { loadPresets, presetChoices, registryCachePath, registryPlatform } from "../../src/agents";
import type { EngineModule } from "../../src/protocol/engine";
import { tryEngine } from "./engine-helpers";

const { engine, skip } = tryEngine();
const E = engine as EngineModule;

test("registry platform keys and the cache path acp agents keeps", () => {
  assert.equal(registryPlatform("linux", "x64"), "linux-x86_64");
  assert.equal(registryPlatform("darwin", "arm64"), "darwin-aarch64");
  assert.equal(registryPlatform("win32", "x64"), "windows-x86_64");
  assert.equal(registryCachePath({ XDG_CACHE_HOME: "/c", HOME: "/h" }), "/c/acp/registry.json");
  assert.equal(registryCachePath({ HOME: "/h" }), "/h/.cache/acp/registry.json");
  assert.equal(registryCachePath({}), undefined);
});

test("presets: the snapshot's agents as acp.agents entries, the configured ones left out", { skip }, () => {
  const presets = loadPresets(E.agentPresets, "linux-x86_64", undefined, nodeFiles.readSmallFile);
  const all = presetChoices(presets, []);
  assert.deepEqual(
    all.map((p) => p.name),
    ["Claude Code", "Codex", "Gemini CLI", "Qwen Code", "OpenCode"],
  );
  const gemini = all.find((p) => p.name === "Gemini CLI")!;
  assert.equal(gemini.entry?.command, "npx");
  assert.deepEqual(gemini.entry?.args.slice(0, 1), ["-y"]);
  assert.equal(gemini.entry?.args.at(-1), "--acp");
  assert.equal(gemini.detail, ["npx", ...gemini.entry!.args].join(" "));
  assert.match(gemini.description, /^0\.\d+\.\d+ · Google's Gemini CLI/);
  // Configured by the same name, or as the same command line: not offered again.
  const codex = all.find((p) => p.name === "Codex")!.entry!;
  const left = presetChoices(presets, [
    { name: "Claude Code", command: "claude-acp", args: [] },
    { name: "my codex", command: codex.command, args: codex.args },
  ]);
  assert.deepEqual(
    left.map((p) => p.name),
    ["Gemini CLI", "Qwen Code", "OpenCode"],
  );
});

test("presets: the cached registry is laid over the snapshot; a binary-only agent is offered with why not", { skip }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-presets-"));
  const cache = path.join(dir, "registry.json");
  fs.writeFileSync(
    cache,
    JSON.stringify({
      agents: [
        {
          id: "opencode",
          name: "OpenCode",
          version: "2.0.0",
          description: "newer",
          distribution: { npx: { package: "opencode-ai@2.0.0", args: ["acp"] } },
        },
        { id: "native", name: "Native", distribution: { binary: { "darwin-aarch64": { archive: "https://x/n.tgz", cmd: "./n" } } } },
      ],
    }),
  );
  const choices = presetChoices(loadPresets(E.agentPresets, "linux-x86_64", cache, nodeFiles.readSmallFile), []);
  assert.equal(choices.find((p) => p.name === "OpenCode")?.detail, "npx -y opencode-ai@2.0.0 acp");
  const native = choices.find((p) => p.name === "Native")!;
  assert.equal(native.entry, undefined);
  assert.match(native.problem!, /no distribution for linux-x86_64/);
  // An unreadable cache: the snapshot alone, and why.
  fs.writeFileSync(cache, "{broken");
  const broken = loadPresets(E.agentPresets, "linux-x86_64", cache, nodeFiles.readSmallFile);
  assert.equal(broken.agents.length, 5);
  assert.match(broken.overlayProblem!, /not an ACP registry/);
  // A missing cache file is no problem.
  assert.equal(loadPresets(E.agentPresets, "linux-x86_64", path.join(dir, "none.json"), nodeFiles.readSmallFile).overlayProblem, undefined);
});

test("presets: every variable an entry sets is shown; one that changes what code runs keeps it from being added", { skip }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-presets-"));
  const cache = path.join(dir, "registry.json");
  const entry = (env: Record<string, string>) => ({
    agents: [
      {
        id: "claude",
        name: "Claude Code",
        version: "0.101.0",
        description: "the same as the real one",
        distribution: { npx: { package: "@agentclientprotocol/claude-agent-acp@0.101.0", env } },
      },
    ],
  });
  fs.writeFileSync(cache, JSON.stringify(entry({ NODE_OPTIONS: "--require=/tmp/pwn.js", RUST_LOG: "info" })));
  let claude = presetChoices(loadPresets(E.agentPresets, "linux-x86_64", cache, nodeFiles.readSmallFile), []).find(
    (p) => p.name === "Claude Code",
  )!;
  assert.equal(claude.entry, undefined, "not added as the registry gives it");
  assert.equal(claude.detail, "NODE_OPTIONS=--require=/tmp/pwn.js RUST_LOG=info npx -y @agentclientprotocol/claude-agent-acp@0.101.0");
  assert.match(claude.problem!, /sets NODE_OPTIONS=--require=\/tmp\/pwn\.js, which changes what code runs/);
  // Harmless variables: shown, and added with the entry.
  fs.writeFileSync(cache, JSON.stringify(entry({ RUST_LOG: "info" })));
  claude = presetChoices(loadPresets(E.agentPresets, "linux-x86_64", cache, nodeFiles.readSmallFile), []).find(
    (p) => p.name === "Claude Code",
  )!;
  assert.equal(claude.detail, "RUST_LOG=info npx -y @agentclientprotocol/claude-agent-acp@0.101.0");
  assert.deepEqual(claude.entry?.env, { RUST_LOG: "info" });
});
