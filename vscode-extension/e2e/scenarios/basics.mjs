// e2e scenarios: Permission answers (allow, deny, dismiss), cancellation and the protocol trace panel.

import * as fs from "node:fs";
import * as path from "node:path";
import {
  DEMO_FILE,
  chat,
  demoFile,
  dialog,
  dialogButton,
  newSession,
  openFileWithUnsavedEdit,
  page,
  runCommand,
  scenario,
  screenshot,
  sendPrompt,
  transcript,
  transcriptText,
  turnEnds,
  until,
  workspace,
} from "../harness.mjs";

// "ACP: Show Protocol Trace": the shared trace viewer in a webview panel, on the session of the
// scenario before (a turn cancelled while its permission question was open, after a read of a
// missing file answered with an error).
async function protocolTracePanel() {
  const session = await transcript.getAttribute("data-session-id");
  await runCommand("ACP: Show Protocol Trace");
  // Closed again whatever happens: the chat's frame must be the only webview for the scenarios
  // after this one.
  try {
    await tracePanelShows(session);
  } finally {
    await closeTracePanel();
  }
}

async function tracePanelShows(session) {
  const frame = await until(
    "the protocol trace panel with its rows",
    async () => {
      for (const f of page.frames())
        if (
          (await f
            .locator("#trace .tv-row[data-n]")
            .count()
            .catch(() => 0)) > 0
        )
          return f;
    },
    30_000,
  );
  await until(
    "the session filter on the current session",
    async () => (await frame.locator(".tv-f-session").inputValue()) === session,
    10_000,
  );
  const settled = () => frame.locator(".tv").getAttribute("data-settled");
  const filtered = async (action) => {
    const before = await settled();
    await action();
    await until("the filtered rows", async () => (await settled()) !== before, 10_000);
  };
  const rows = async () =>
    await frame
      .locator(".tv-rows .tv-row")
      .evaluateAll((rs) =>
        rs.map((r) => [r.className, r.querySelector(".tv-lanes")?.textContent ?? "", r.querySelector(".tv-dur")?.textContent ?? ""]),
      );
  // The permission question and its answer: paired, `cancelled`, timed.
  // Each check waits for the rows it expects (a filter's render can settle more than once, as the
  // live trace pages in), and names the rows it last saw when they never come.
  const rowsWhere = async (what, ok) => {
    let last = [];
    try {
      return await until(
        what,
        async () => {
          last = await rows();
          return ok(last) ? last : undefined;
        },
        10_000,
      );
    } catch {
      throw new Error(`${what}: ${JSON.stringify(last)}`);
    }
  };
  await filtered(() => frame.locator(".tv-f-method").selectOption("session/request_permission"));
  const question = await rowsWhere(
    "the permission question and its answer",
    (q) => q.length === 2 && q.every(([c, , took]) => c.includes("tv-cancel") && /\d (ms|s)$/.test(took)),
  );
  if (!question[1][1].includes("cancelled")) throw new Error(`the answer is not 'cancelled': ${JSON.stringify(question)}`);
  // The read of the missing file: the request and its error, both marked.
  await filtered(() => frame.locator(".tv-f-method").selectOption(""));
  await filtered(() => frame.locator(".tv-f-errors").setChecked(true));
  await rowsWhere(
    "errors only",
    (e) => e.length >= 2 && e.every(([c]) => c.includes("tv-error")) && e.some(([, label]) => label.includes("-32002")),
  );
  // The turn, cancelled, with its duration.
  await filtered(() => frame.locator(".tv-f-errors").setChecked(false));
  await filtered(() => frame.locator(".tv-f-method").selectOption("session/prompt"));
  await rowsWhere("the cancelled turn", (t) =>
    t.some(([c, label, took]) => c.includes("tv-k-response") && label.includes("cancelled") && /\d (ms|s)$/.test(took)),
  );
  await frame.locator(".tv-rows .tv-row").first().click();
  await frame.locator(".tv-detail .tv-json").waitFor({ timeout: 10_000 });
  await screenshot("protocol-trace");
  await frame.locator("button[data-tab=summary]").click();
  await frame.locator(".tv-summary table").first().waitFor({ timeout: 10_000 });
  if (!/session\/request_permission/.test(await frame.locator(".tv-summary").innerText()))
    throw new Error("the summary has no permission requests");
  await screenshot("protocol-trace-summary");
}

async function closeTracePanel() {
  const tab = page.locator(".tabs-container .tab", { hasText: "ACP Protocol Trace" }).first();
  if ((await tab.count()) === 0) return;
  // A middle click closes an editor's tab (the close button is drawn differently across versions).
  await tab.click({ button: "middle" });
  await until(
    "the trace panel closed",
    async () => {
      for (const f of page.frames())
        if (
          (await f
            .locator("#trace")
            .count()
            .catch(() => 0)) > 0
        )
          return false;
      return true;
    },
    10_000,
  );
}

/** Permission answers (allow, deny, dismiss), cancellation and the protocol trace panel. */
export async function run() {
  await scenario("allow: the permission modal, the file written through the editor, the answer shown", async () => {
    fs.rmSync(demoFile, { force: true });
    // An unsaved edit in an open editor: fs/read_text_file must return the buffer, not the disk.
    await openFileWithUnsavedEdit("README.md", "UNSAVED-EDIT ");
    await sendPrompt("Please say hello, read README.md and run `echo e2e-terminal-ran`");
    const allow = await dialogButton("Allow this write");
    const text = await dialog.textContent();
    if (!text.includes(`Write ${demoFile}`)) throw new Error(`the dialog does not name the file: ${text}`);
    // acp-client's question: the change itself, from the conversation's tool call (a new file).
    for (const want of [`${demoFile} (new file, +3 -0)`, "@@ -0,0 +1,3 @@", "+The acp demo agent was asked:"])
      if (!text.includes(want)) throw new Error(`the dialog does not show the diff (${JSON.stringify(want)}): ${text}`);
    if (!(await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Do not write" }).count()))
      throw new Error("the reject option is missing");
    await screenshot("permission-modal");
    await allow.click();
    const content = await until(`${DEMO_FILE} to be written`, () => fs.existsSync(demoFile) && fs.readFileSync(demoFile, "utf8"), 30_000);
    if (!content.includes("Please say hello")) throw new Error(`unexpected file content: ${JSON.stringify(content)}`);
    await turnEnds("end_turn");
    const t = await transcriptText();
    for (const want of ["Hello from the acp demo agent", `I wrote ${DEMO_FILE}`])
      if (!t.includes(want)) throw new Error(`answer lacks ${JSON.stringify(want)}: ${t}`);
    if ((await chat.locator(".plan .plan-entry").count()) < 2) throw new Error("no plan entries rendered");
    if ((await chat.locator(".plan .plan-completed").count()) < 2) throw new Error("plan entries not completed");
    if ((await chat.locator("details.thought").count()) < 1) throw new Error("no collapsible thought");
    if ((await chat.locator(".tool.status-completed", { hasText: `Write ${DEMO_FILE}` }).count()) !== 1)
      throw new Error("write tool call not completed");
    // The terminal step ran a real process; its output is in the tool call and the terminal panel.
    await until(
      "the terminal tool call to complete",
      async () => (await chat.locator(".tool.status-completed", { hasText: "e2e-terminal-ran" }).count()) >= 1,
      10_000,
    );
    const read = (await chat.locator(".tool", { hasText: "README.md" }).first().textContent()) ?? "";
    if (!read.includes("first line: UNSAVED-EDIT # e2e workspace")) throw new Error(`the read did not see the unsaved buffer: ${read}`);
    if (fs.readFileSync(path.join(workspace, "README.md"), "utf8") !== "# e2e workspace\n") throw new Error("README.md on disk changed");
    await screenshot("allowed-answer");
    // The diff from the tool call opens in VS Code's diff editor.
    await chat
      .locator(".tool", { hasText: `Write ${DEMO_FILE}` })
      .locator("button.open-diff")
      .click();
    await until(
      "the diff editor tab",
      async () => (await page.locator(".tab", { hasText: "agent's proposed change" }).count()) > 0,
      15_000,
    );
    await until("the diff editor", async () => (await page.locator(".monaco-diff-editor").count()) > 0, 15_000);
    await screenshot("diff-editor");
  });

  await scenario("deny: the reject option is sent and nothing is written", async () => {
    fs.rmSync(demoFile, { force: true });
    await newSession();
    await sendPrompt("Hello again, but do not write");
    await (await dialogButton("Do not write")).click();
    await turnEnds("end_turn");
    const t = await transcriptText();
    if (!t.includes(`OK, I did not write ${DEMO_FILE}`)) throw new Error(`no denial in the answer: ${t}`);
    if (fs.existsSync(demoFile)) throw new Error(`${DEMO_FILE} was written although denied`);
    if ((await chat.locator(".tool.status-failed", { hasText: `Write ${DEMO_FILE}` }).count()) !== 1)
      throw new Error("write tool call not failed");
    await screenshot("denied");
  });

  await scenario("dismiss: Escape on the dialog answers the agent's reject option", async () => {
    fs.rmSync(demoFile, { force: true });
    await newSession();
    // The demo agent echoes the prompt: agent text carrying HTML and a javascript: link must be
    // rendered as text by the webview.
    await sendPrompt(
      'Dismiss the dialog please <b id="injected">not html</b> <img src=x onerror="document.body.dataset.pwned=1"> [x](javascript:alert(1))',
    );
    await dialogButton("Allow this write");
    await page.keyboard.press("Escape");
    await turnEnds("end_turn");
    const agentMsg = chat.locator(".msg.agent").first();
    if (!((await agentMsg.textContent()) ?? "").includes('<b id="injected">not html</b>'))
      throw new Error("the HTML was not shown as text");
    if ((await chat.locator("#injected, .msg.agent img, a[href^='javascript']").count()) !== 0)
      throw new Error("agent text was injected as HTML");
    if ((await chat.locator("body[data-pwned]").count()) !== 0) throw new Error("an injected handler ran");
    if (!(await transcriptText()).includes(`OK, I did not write ${DEMO_FILE}`))
      throw new Error("dismissal was not answered with the reject option");
    if (fs.existsSync(demoFile)) throw new Error(`${DEMO_FILE} was written after a dismissal`);
  });

  await scenario("cancel mid-stream: session/cancel ends the turn `cancelled`", async () => {
    fs.rmSync(demoFile, { force: true });
    await newSession();
    await sendPrompt("A long answer that I will cancel");
    await until(
      "the first streamed words",
      async () =>
        (await chat.locator(".msg.agent").count()) > 0 && /Hello/.test((await chat.locator(".msg.agent").last().textContent()) ?? ""),
      30_000,
    );
    if (await dialog.isVisible()) throw new Error("the permission dialog came before the cancel could be tested");
    await chat.locator("#cancel").click();
    await turnEnds("cancelled", 30_000);
    if (await dialog.isVisible()) throw new Error("a permission dialog appeared after the cancel");
    if (fs.existsSync(demoFile)) throw new Error(`${DEMO_FILE} was written after a cancel`);
    const answer = (await chat.locator(".msg.agent").last().textContent()) ?? "";
    if (answer.includes("I wrote")) throw new Error(`the turn went on after the cancel: ${answer}`);
    await screenshot("cancelled");
  });

  await scenario("cancel while the permission dialog is open: answered `cancelled`", async () => {
    fs.rmSync(demoFile, { force: true });
    await newSession();
    await sendPrompt("Ask me, then I cancel");
    const allow = await dialogButton("Allow this write");
    // The modal covers the workbench; the chat's Cancel button is clicked through the DOM.
    await chat.locator("#cancel").dispatchEvent("click");
    await turnEnds("cancelled", 30_000);
    await until(
      "the 'withdrawn' notification",
      async () => (await page.locator(".notification-toast", { hasText: "withdrawn" }).count()) > 0,
      10_000,
    );
    await screenshot("cancelled-during-permission");
    await allow.click(); // a late answer is ignored
    await dialog.waitFor({ state: "hidden", timeout: 10_000 });
    if (fs.existsSync(demoFile)) throw new Error(`${DEMO_FILE} was written after the request was cancelled`);
    if (!(await chat.locator("#send").isEnabled())) throw new Error("the chat is still busy");
  });

  await scenario(
    "protocol trace: ACP: Show Protocol Trace shows the session's messages, paired, timed, errors and cancellations marked",
    protocolTracePanel,
  );
}
