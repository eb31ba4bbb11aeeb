import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { demoAgentSpec, parseAgentSettings, resolveDemoAgentBinary } from "../../src/agents";

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
  assert.deepEqual(demoAgentSpec("/opt/acp", "/state"), {
    name: "ACP demo agent",
    command: "/opt/acp",
    args: ["demo-agent", "--state-dir", "/state"],
  });
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
