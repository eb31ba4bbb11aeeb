import { test } from "node:test";
import assert from "node:assert/strict";
import { AgentProcess } from "../../src/protocol/process";

test("the exit is reported once stderr has ended, so a start-failure report has the whole tail", async () => {
  // The agent exits at once; a child it left behind writes the last stderr line a moment later
  // and then closes stderr (well within the 2 s bound on that wait).
  const p = new AgentProcess(
    { name: "t", command: "/bin/sh", args: ["-c", "(sleep 0.1; echo LATE-LINE >&2) & echo early >&2; exit 2"] },
    { onStdout() {}, onStdoutEnd() {}, onStderr() {}, onExit() {} },
  );
  const exit = await p.exited;
  assert.equal(exit.code, 2);
  assert.match(p.stderrTail.text(), /early/);
  assert.match(p.stderrTail.text(), /LATE-LINE/);
});
