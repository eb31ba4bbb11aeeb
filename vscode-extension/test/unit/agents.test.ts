import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { demoAgentSpec, parseAgentSettings, resolveDemoAgentBinary } from "../../src/agents";
import { CrashBudget } from "../../src/protocol/supervisor";

test("demo agent: setting, else PATH, else the repository build", () => {
  const ext = "/repo/vscode-extension";
  const present = new Set(["/usr/local/bin/acp", "/repo/target/release/acp"]);
  const exists = (p: string) => present.has(p);
  assert.deepEqual(resolveDemoAgentBinary("/opt/acp", "/usr/local/bin", ext, exists), { path: "/opt/acp", source: "setting" });
  assert.deepEqual(resolveDemoAgentBinary("", `/nope${path.delimiter}/usr/local/bin`, ext, exists), {
    path: "/usr/local/bin/acp",
    source: "PATH",
  });
  assert.deepEqual(resolveDemoAgentBinary(undefined, "/nope", ext, exists), { path: "/repo/target/release/acp", source: "repository" });
  assert.equal(resolveDemoAgentBinary(undefined, "/nope", "/elsewhere/ext", exists), undefined);
  assert.deepEqual(demoAgentSpec("/opt/acp"), { name: "ACP demo agent", command: "/opt/acp", args: ["demo-agent"] });
});

test("agent settings are validated entry by entry", () => {
  const { agents, errors } = parseAgentSettings([
    { name: "Mine", command: "my-agent", args: ["--acp"], env: { K: "V" }, cwd: "/w" },
    { command: "bare" },
    { name: "no command" },
    { command: "x", args: "not-an-array" },
    { command: "y", env: { K: 1 } },
  ]);
  assert.deepEqual(agents, [
    { name: "Mine", command: "my-agent", args: ["--acp"], env: { K: "V" }, cwd: "/w" },
    { name: "bare", command: "bare", args: [], env: undefined, cwd: undefined },
  ]);
  assert.equal(errors.length, 3);
  assert.match(errors[0]!, /agents\[2\].*command/);
  assert.deepEqual(parseAgentSettings("nope").errors, ["acp.agents must be an array"]);
});

test("crash budget: exponential backoff, then stop; old crashes leave the window", () => {
  const b = new CrashBudget({ maxCrashes: 3, windowMs: 60_000, baseDelayMs: 1000, maxDelayMs: 3000 });
  assert.deepEqual(b.recordCrash(0), { restart: true, delayMs: 1000, crashesInWindow: 1 });
  assert.deepEqual(b.recordCrash(1000), { restart: true, delayMs: 2000, crashesInWindow: 2 });
  assert.deepEqual(b.recordCrash(2000), { restart: true, delayMs: 3000, crashesInWindow: 3 });
  assert.deepEqual(b.recordCrash(3000), { restart: false, crashesInWindow: 4 });
  // At 62.5 s only the crash at 3 s is still inside the 60 s window.
  assert.deepEqual(b.recordCrash(62_500), { restart: true, delayMs: 2000, crashesInWindow: 2 });
  b.reset();
  assert.deepEqual(b.recordCrash(63_000), { restart: true, delayMs: 1000, crashesInWindow: 1 });
});
