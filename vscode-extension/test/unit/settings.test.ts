import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

// A repository's `.vscode/settings.json` is written by whoever wrote the repository. A setting
// that picks the program to run, approves on the user's behalf, widens file access, or hands the
// host's environment to agents must come from the user's own settings only: scope
// "application" makes VS Code ignore workspace and folder values for it.
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const props: Record<string, { scope?: string }> = manifest.contributes.configuration.properties;

const SENSITIVE = [
  "acp.agents",
  "acp.demoAgentPath",
  "acp.permissions.autoApprove",
  "acp.fs.allowWritesOutsideWorkspace",
  "acp.terminal.useShell",
  "acp.terminal.approval",
  "acp.env.passthrough",
  "acp.env.inheritAll",
  "acp.remote.allowInsecure",
];

test("settings a cloned repository could abuse are user-only (scope application)", () => {
  for (const key of SENSITIVE) {
    assert.ok(props[key], `${key} is a contributed setting`);
    assert.equal(props[key].scope, "application", `${key} must not be settable by a workspace`);
  }
});

test("any new setting about agents, approval, shells, paths, env or file access is user-only too", () => {
  const risky = /agents|path|approv|allow|shell|env\.|inherit/i;
  for (const [key, schema] of Object.entries(props)) {
    if (risky.test(key)) {
      assert.equal(schema.scope, "application", `${key} looks security-relevant: scope it "application"`);
    }
  }
});
