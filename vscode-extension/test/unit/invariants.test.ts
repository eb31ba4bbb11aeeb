// Architecture Invariant: the protocol connection and the bridges never import `vscode`
// (UI reaches them through PermissionPrompter, DocumentHost and TerminalDisplayFactory).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(__dirname, "..", "..");

test("src/protocol, src/bridges, src/webview and src/agents.ts do not import vscode", () => {
  const files = ["src/protocol", "src/bridges", "src/webview"]
    .flatMap((d) => fs.readdirSync(path.join(root, d)).map((f) => path.join(d, f)))
    .concat(["src/agents.ts"])
    .filter((f) => f.endsWith(".ts"));
  assert.ok(files.length >= 12, `found ${files.length} files`);
  const offenders = files.filter((f) =>
    /(from\s+["']vscode["']|require\(\s*["']vscode["']\s*\))/.test(fs.readFileSync(path.join(root, f), "utf8")),
  );
  assert.deepEqual(offenders, []);
});
