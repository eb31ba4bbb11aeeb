// e2e scenarios: Edit review: Review changes, Undo, per-hunk review, checkpoints, a pending review before New Session.

import * as fs from "node:fs";
import {
  DEMO_FILE,
  answerTurn,
  chat,
  demoFile,
  dialog,
  dialogButton,
  log,
  newSession,
  page,
  runCommand,
  scenario,
  screenshot,
  screenshotThemes,
  sendPrompt,
  transcript,
  turnEnds,
  until,
} from "../harness.mjs";

/** Edit review: Review changes, Undo, per-hunk review, checkpoints, a pending review before New Session. */
export async function run() {
  await scenario("edit review: Review changes opens the diff; after the turn Undo restores the file", async () => {
    fs.writeFileSync(demoFile, "ORIGINAL CONTENT\n");
    await sendPrompt("review me");
    // The terminal step's question (acp.terminal.approval is "ask" by now) comes first: Run.
    await until(
      "the edit's permission question",
      async () => {
        if (!(await dialog.isVisible().catch(() => false))) return false;
        const run = dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Run$/ });
        if (await run.count()) await run.click();
        return (await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).count()) === 1;
      },
      60_000,
    );
    await screenshot("edit-permission-review-choice");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).click();
    await until(
      "the review diff tab",
      async () => (await page.locator(".tab", { hasText: "review before answering" }).count()) > 0,
      15_000,
    );
    // The same modal comes back, the diff open behind it.
    await until(
      "the same modal again",
      async () =>
        (await dialog.isVisible().catch(() => false)) &&
        ((await dialog.textContent()) ?? "").includes("the change is open in the diff editor"),
      15_000,
    );
    const buttons = await dialog.locator(".dialog-buttons .monaco-button").allTextContents();
    for (const b of ["Allow this write", "Review changes"])
      if (!buttons.some((t) => t.includes(b))) throw new Error(`no ${b} after review: ${buttons}`);
    const focused = await page.evaluate(() => globalThis.document.activeElement?.textContent ?? "");
    log(`permission modal after review: buttons ${JSON.stringify(buttons)}, focus on ${JSON.stringify(focused)}`);
    await screenshot("edit-review-diff");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Allow this write" }).click();
    await until(
      "the proposed change's diff tab closed",
      async () => (await page.locator(".tab", { hasText: "review before answering" }).count()) === 0,
      15_000,
    );
    await until("the edit written", () => fs.readFileSync(demoFile, "utf8").includes("review me"), 30_000);
    await turnEnds("end_turn");
    if ((await chat.locator(".tool-diff", { hasText: "Edit" }).count()) < 1) throw new Error("the overwrite is not shown as an edit");
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    await until("the Keep/Undo row", async () => (await row.count()) === 1, 10_000);
    // The tool card counts its diff as the edits row counts the file (acp-client's hunks).
    const rowCounts = ((await row.locator(".counts").first().textContent()) ?? "").trim();
    await until(
      "the tool card's +N \u2212M, as the edits row's",
      async () =>
        /^\+\d+ \u2212\d+$/.test(rowCounts) && (await chat.locator(".tool-diff .diff-counts", { hasText: rowCounts }).count()) >= 1,
      10_000,
    );
    await screenshot("edit-review-list");
    await row.locator(".edit-undo").click();
    await until("the file restored", () => fs.readFileSync(demoFile, "utf8") === "ORIGINAL CONTENT\n", 15_000);
    await until("the row gone", async () => (await chat.locator("#edits .edit-row").count()) === 0, 10_000);
  });
  await scenario("per-hunk review: Reject one change from the chat, Accept the other in the diff editor (CodeLens)", async () => {
    await newSession();
    const asked = "hunks please";
    fs.writeFileSync(demoFile, `The acp demo agent was told:\n\n${asked}\nOLD TAIL\n`);
    await sendPrompt(asked);
    await answerTurn();
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    const hunks = chat.locator("#edits .hunk-row");
    await until("the two changes listed", async () => (await hunks.count()) === 2, 15_000);
    const counts = (await row.locator(".counts").textContent()) ?? "";
    if (!counts.includes("+1") || !counts.includes("\u22122")) throw new Error(`the file's counts are not +1 \u22122: ${counts}`);
    await screenshotThemes("per-hunk-list");
    await row.locator(".edit-diff").click();
    const lenses = page.locator(".codelens-decoration a", { hasText: "Accept change" });
    await until("Accept / Reject above each change in the diff editor", async () => (await lenses.count()) === 2, 20_000);
    await screenshotThemes("per-hunk-diff-codelens");
    // The second change (OLD TAIL removed) rejected from the chat: the line comes back.
    await hunks.nth(1).locator(".hunk-reject").click();
    await until(
      "the rejected change taken out of the file",
      () => fs.readFileSync(demoFile, "utf8") === `The acp demo agent was asked:\n\n${asked}\nOLD TAIL\n`,
      15_000,
    );
    // One change left: the file's row stands for it in the chat; the diff shows one lens.
    await until(
      "one change left, in the chat and the diff",
      async () => (await hunks.count()) === 0 && (await lenses.count()) === 1,
      15_000,
    );
    const left = (await row.locator(".counts").textContent()) ?? "";
    if (!left.includes("+1") || !left.includes("\u22121")) throw new Error(`the change left is not +1 \u22121: ${left}`);
    await lenses.first().click();
    await until(
      "the file reviewed: its row and its diff gone",
      async () => (await row.count()) === 0 && (await lenses.count()) === 0,
      15_000,
    );
    if (fs.readFileSync(demoFile, "utf8") !== `The acp demo agent was asked:\n\n${asked}\nOLD TAIL\n`)
      throw new Error("accepting changed the file");
  });

  await scenario("checkpoints: the files restored to before turn 2, then before turn 1", async () => {
    await newSession();
    fs.writeFileSync(demoFile, "CHECKPOINT BASE\n");
    await sendPrompt("turn one");
    await answerTurn();
    await until("turn one written", () => fs.readFileSync(demoFile, "utf8").includes("turn one"), 15_000);
    await sendPrompt("turn two");
    await answerTurn();
    await until("turn two written", () => fs.readFileSync(demoFile, "utf8").includes("turn two"), 15_000);
    const cps = chat.locator("#edits .checkpoint");
    await until("two checkpoints", async () => (await cps.count()) === 2, 15_000);
    await screenshotThemes("checkpoints");
    await chat.locator('#edits .checkpoint[data-turn="2"]').click();
    await (await dialogButton("Restore")).click();
    await until(
      "the file as turn one left it",
      () => fs.readFileSync(demoFile, "utf8") === "The acp demo agent was asked:\n\nturn one\n",
      15_000,
    );
    await until("one checkpoint left", async () => (await cps.count()) === 1, 15_000);
    await chat.locator('#edits .checkpoint[data-turn="1"]').click();
    await (await dialogButton("Restore")).click();
    await until("the file as before turn one", () => fs.readFileSync(demoFile, "utf8") === "CHECKPOINT BASE\n", 15_000);
    await until(
      "no checkpoint and no review left",
      async () => (await cps.count()) === 0 && (await chat.locator("#edits .edit-row").count()) === 0,
      15_000,
    );
  });

  await scenario("New Session with a pending review asks: Cancel keeps everything, Undo All restores the file", async () => {
    fs.writeFileSync(demoFile, "BEFORE THE PENDING EDIT\n");
    await sendPrompt("pending edit");
    await answerTurn();
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    await until("the pending review", async () => (await row.count()) === 1, 15_000);
    const session = await transcript.getAttribute("data-session-id");
    await runCommand("ACP: New Session"); // the view's title bar has the + (the chat's header has none)
    await until(
      "the pending-review question",
      async () => (await dialog.isVisible().catch(() => false)) && ((await dialog.textContent()) ?? "").includes("still under review"),
      15_000,
    );
    await screenshot("pending-review-question");
    await (await dialogButton("Cancel")).click();
    await until("the question closed", async () => !(await dialog.isVisible().catch(() => false)), 10_000);
    if ((await row.count()) !== 1 || (await transcript.getAttribute("data-session-id")) !== session)
      throw new Error("Cancel lost the review or the session");
    if (!fs.readFileSync(demoFile, "utf8").includes("pending edit")) throw new Error("Cancel changed the file");
    await runCommand("ACP: New Session"); // the view's title bar has the + (the chat's header has none)
    await (await dialogButton("Undo All")).click();
    await until("the file restored", () => fs.readFileSync(demoFile, "utf8") === "BEFORE THE PENDING EDIT\n", 15_000);
    await until(
      "a new session without pending edits",
      async () => (await transcript.getAttribute("data-session-id")) !== session && (await row.count()) === 0,
      30_000,
    );
  });
}
