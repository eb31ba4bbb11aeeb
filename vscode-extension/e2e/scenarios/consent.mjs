// e2e scenarios: Sensitive writes and terminal approval.

import * as fs from "node:fs";
import * as path from "node:path";
import {
  DEMO_FILE,
  acpLog,
  acpTrace,
  chat,
  demoFile,
  dialog,
  dialogButton,
  newSession,
  page,
  scenario,
  screenshot,
  sendPrompt,
  sentText,
  setTerminalApproval,
  terminalModal,
  transcriptText,
  turnEnds,
  until,
  workspace,
} from "../harness.mjs";

/** Sensitive writes and terminal approval. */
export async function run() {
  await scenario("sensitive write: acp-demo.txt links into .git; the write modal, Review changes, Refuse; nothing written", async () => {
    // The demo agent only ever writes acp-demo.txt; a link by that name into a repository's
    // .git makes its write one that git would execute (core.fsmonitor, hooks). The extension
    // classifies the real path (acp-client) and asks, whatever the agent was allowed before.
    const repo = path.join(workspace, "e2e-repo");
    const gitConfig = path.join(repo, ".git", "config");
    const original = "[core]\n\trepositoryformatversion = 0\n";
    fs.mkdirSync(path.dirname(gitConfig), { recursive: true });
    fs.writeFileSync(gitConfig, original);
    fs.rmSync(demoFile, { force: true });
    fs.symlinkSync(path.join("e2e-repo", ".git", "config"), demoFile);
    try {
      await newSession();
      await sendPrompt("Write the demo file through the link");
      await (await dialogButton("Allow this write")).click();
      // Then the extension's own question about the write.
      const writeModal = async () => {
        await until(
          "the sensitive-write modal",
          async () => ((await dialog.textContent()) ?? "").includes("The agent wants to write a file that can change what runs"),
          60_000,
        );
        const text = (await dialog.textContent()) ?? "";
        for (const want of [
          `write ${gitConfig} (git runs what its directory configures`,
          `the agent asked for ${demoFile}, which leads there`,
          "-[core]",
          "+The acp demo agent was asked:",
        ]) {
          if (!text.includes(want)) throw new Error(`the write modal lacks ${JSON.stringify(want)}: ${text}`);
        }
        for (const b of ["Review changes", "Allow write", "Refuse"])
          if (!(await dialog.locator(".dialog-buttons .monaco-button", { hasText: b }).count()))
            throw new Error(`the write modal has no ${b} button`);
      };
      await writeModal();
      await screenshot("sensitive-write-modal");
      await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).click();
      // The diff editor opens with the old and new text, and the question comes back.
      await until(
        "the review diff editor tab",
        async () => (await page.locator(".tab", { hasText: "agent's write: review before allowing" }).count()) > 0,
        15_000,
      );
      await writeModal();
      await screenshot("sensitive-write-review");
      await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Refuse" }).click();
      await turnEnds("end_turn");
      const failed = chat.locator(".tool.status-failed", { hasText: `Write ${DEMO_FILE}` });
      await until(
        "the write tool call to fail with the refusal",
        async () =>
          (await failed.count()) === 1 &&
          ((await failed.textContent()) ?? "").includes("permission denied: the user did not allow writing"),
        15_000,
      );
      if (fs.readFileSync(gitConfig, "utf8") !== original) throw new Error(".git/config was changed although the write was refused");
      if (!fs.lstatSync(demoFile).isSymbolicLink()) throw new Error("the link was replaced");
      await until(
        "the refusal in the ACP log",
        async () => {
          const l = await acpLog();
          return (
            l.includes(`fs/write_text_file ${gitConfig}: refused by the user`) &&
            /→ #\d+ fs\/write_text_file error -32603 .*permission denied: the user did not allow writing/.test(l)
          );
        },
        10_000,
      );
      await screenshot("sensitive-write-refused");
    } finally {
      fs.rmSync(demoFile, { force: true });
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  await scenario("terminal approval (ask): the modal, Run, the command runs in the terminal panel", async () => {
    await setTerminalApproval("ask");
    fs.rmSync(demoFile, { force: true });
    await newSession();
    await sendPrompt("Run this after I approve it: `echo e2e-approved-output`");
    await terminalModal("echo e2e-approved-output");
    for (const b of ["Run", "Cancel"])
      if (!(await dialog.locator(".dialog-buttons .monaco-button", { hasText: b }).count()))
        throw new Error(`the terminal modal has no ${b} button`);
    if ((await chat.locator(".tool.status-completed, .tool.status-failed", { hasText: "e2e-approved-output" }).count()) !== 0)
      throw new Error("the command ran before it was approved");
    await screenshot("terminal-approval-modal");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Run" }).click();
    // The process's output reaches the agent (it reports it in the tool call) and the panel.
    await until(
      "the terminal tool call to complete with the output",
      async () =>
        (await chat.locator(".tool.status-completed", { hasText: "e2e-approved-output" }).count()) === 1 &&
        // Success is the status icon: no "[exit code 0]" text beside it (the demo agent says it
        // only for a failure).
        (await chat.locator(".tool", { hasText: "exit code" }).count()) === 0,
      30_000,
    );
    await until(
      "the output in the terminal panel",
      async () =>
        (await page.locator(".xterm-rows", { hasText: "e2e-approved-output" }).filter({ hasText: "process exited with code 0" }).count()) >
        0,
      15_000,
    );
    // Then the turn goes on to the file-write permission.
    await (await dialogButton("Do not write")).click();
    await turnEnds("end_turn");
    const t = await transcriptText();
    if (!t.includes(`OK, I did not write ${DEMO_FILE}`)) throw new Error(`the turn did not finish normally: ${t}`);
    await until(
      "the started terminal in the ACP log",
      async () => /terminal term-\d+: \["echo","e2e-approved-output"\]/.test(await acpLog()),
      10_000,
    );
    await screenshot("terminal-approved-ran");
    // The session's next command is shown in the same terminal, under its own header line.
    await sendPrompt("Run this after I approve it too: `echo e2e-second-output`");
    await terminalModal("echo e2e-second-output");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Run" }).click();
    await until(
      "both commands, each with its header and exit status, in one terminal",
      async () =>
        (await page
          .locator(".xterm-rows", { hasText: "$ echo e2e-approved-output" })
          .filter({ hasText: "$ echo e2e-second-output" })
          .filter({ hasText: /e2e-second-output\s*\[process exited with code 0\]/ })
          .count()) > 0,
      15_000,
    );
    await (await dialogButton("Do not write")).click();
    await turnEnds("end_turn");
    await screenshot("terminal-session-shared");
  });

  // Cancel and Escape both refuse: the agent gets an error for terminal/create, nothing runs.
  for (const [how, refuse] of [
    ["Cancel", () => dialog.locator(".dialog-buttons .monaco-button", { hasText: "Cancel" }).click()],
    ["Escape", () => page.keyboard.press("Escape")],
  ]) {
    await scenario(`terminal approval (ask): ${how} refuses; no process, the agent gets an error, the turn ends`, async () => {
      const marker = `e2e-refused-${how.toLowerCase()}.txt`;
      fs.rmSync(path.join(workspace, marker), { force: true });
      await newSession();
      await sendPrompt(`Do not let me run \`touch ${marker}\``);
      await terminalModal(`touch ${marker}`);
      if (how === "Cancel") await screenshot("terminal-approval-refuse");
      await refuse();
      // The agent reports the refused call as a failed tool call, then goes on to the write.
      const failed = chat.locator(".tool.status-failed", { hasText: `touch ${marker}` });
      await until("the terminal tool call to fail", async () => (await failed.count()) === 1, 30_000);
      const toolText = (await failed.textContent()) ?? "";
      if (!toolText.includes("could not start") || !toolText.includes("permission denied"))
        throw new Error(`the tool call does not carry the client's error: ${toolText}`);
      await (await dialogButton("Do not write")).click();
      await turnEnds("end_turn");
      if (fs.existsSync(path.join(workspace, marker))) throw new Error(`${marker} exists: the refused command ran`);
      // The extension's log: the refusal and the -32603 answer, and no process for the command.
      const answered = new RegExp(
        `→ #\\d+ terminal/create error -32603 .*permission denied: the user did not allow running touch ${marker.replace(/\./g, "\\.")}`,
      );
      const logText = await until(
        "the refusal and the -32603 answer in the ACP log",
        async () => {
          const l = await acpLog();
          return l.includes(`terminal/create refused by the user: touch ${marker}`) && answered.test(l) && l;
        },
        10_000,
      );
      if (new RegExp(`terminal term-\\d+: \\["touch"`).test(logText)) throw new Error("a terminal was started for the refused command");
      // What the agent received (the raw trace): a JSON-RPC error answering its terminal/create.
      await until(
        "the error response in the raw trace",
        async () =>
          (await acpTrace())
            .split("\n")
            .some(
              (l) =>
                sentText(l) !== undefined &&
                l.includes('"error"') &&
                l.includes(`permission denied: the user did not allow running touch ${marker}`),
            ),
        10_000,
      );
      if ((await page.locator(".xterm-rows", { hasText: marker }).count()) !== 0)
        throw new Error("a terminal panel shows the refused command");
      if (!(await chat.locator("#send").isEnabled())) throw new Error("the chat is still busy");
      if (how === "Cancel") await screenshot("terminal-refused");
    });
  }
}
