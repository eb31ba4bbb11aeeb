// e2e scenarios: ACP v2 (draft) with the `acp.experimental.protocolV2` setting (issue 24): the
// setting loads the engine built with v2 (after a window reload); the demo agent built with
// unstable_protocol_v2 (ACP_V2_BIN) answers 2: a turn streamed, its permission question (v2's,
// a title only) answered, a turn cancelled while its question is open (ended by the agent's
// idle state_update), the conversation reopened after a reload with the agent's replay; and a
// v1 agent with the setting on (it answers 1 and is served as v1).

import * as fs from "node:fs";

import {
  ACP_V2_BIN,
  SLOW_AGENT,
  V2_AGENT,
  acpLog,
  acpTrace,
  answerTurn,
  chat,
  dialog,
  dialogButton,
  lastAgentText,
  page,
  ready,
  reloadWindow,
  runCommand,
  scenario,
  screenshot,
  selectAgent,
  sendPrompt,
  settingsFile,
  settlePendingIfAsked,
  transcript,
  transcriptText,
  turnEnds,
  until,
} from "../harness.mjs";

const SETTING = "acp.experimental.protocolV2";

/** Turns the setting on in the Settings editor, as a user does, and waits until it is written. */
async function enableSetting() {
  await runCommand("Preferences: Open Settings (UI)");
  const editor = page.locator(".settings-editor");
  await editor.waitFor({ timeout: 15_000 });
  await editor.locator(".settings-header .suggest-input-container").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(`@id:${SETTING}`);
  const box = editor.locator(".setting-item-contents .setting-value-checkbox");
  await until(`the ${SETTING} checkbox in the Settings editor`, async () => (await box.count()) === 1, 30_000);
  // Clicked until it is checked (a click while the list still renders can be lost), then
  // written by the workbench.
  await until(
    `${SETTING} = true in settings.json`,
    async () => {
      if (JSON.parse(fs.readFileSync(settingsFile, "utf8"))[SETTING] === true) return true;
      if ((await box.getAttribute("aria-checked")) !== "true") await box.click();
      return false;
    },
    30_000,
    500,
  );
  const tab = page.locator(".tabs-container .tab", { hasText: "Settings" });
  await tab.locator(".tab-actions .action-label").click();
  await until("the Settings editor to close", async () => (await tab.count()) === 0, 10_000);
}

/** Reloads the window and waits for the extension and its chat again. */
async function reloadAndOpenChat() {
  await reloadWindow();
  await runCommand("ACP: Open Chat");
  // The conversation shown before is reopened with the agent of then: ready before anything else.
  await until("the chat ready after the reload", async () => (await ready().catch(() => false)) && !(await dialog.isVisible()), 90_000);
}

/** The `initialize` answers in the raw trace (the agent's lines), newest last. */
async function initializeAnswers() {
  return (await acpTrace()).split("\n").filter((l) => /"protocolVersion":\d/.test(l) && /"result"/.test(l));
}

/** The first scenario got the v2 agent running (the others need it). */
let v2Running = false;
const needV2 = () => {
  if (!v2Running) throw new Error("the v2 agent is not running (see the first v2 scenario)");
};

export async function run() {
  await scenario("v2: the setting loads the engine with ACP v2 (after a window reload)", async () => {
    if (!fs.existsSync(ACP_V2_BIN))
      throw new Error(`no v2 demo agent at ${ACP_V2_BIN} (cargo build -p acp-cli --features unstable_protocol_v2)`);
    // The side view's chat is the one driven here: editors left open by earlier groups (a chat
    // moved to a tab, a file changed) are closed first, their changes not saved.
    await runCommand("View: Close All Editors");
    await until(
      "every editor closed",
      async () => {
        await settlePendingIfAsked();
        const dontSave = dialog.locator(".dialog-buttons .monaco-button", { hasText: "Don't Save" });
        if ((await dialog.isVisible().catch(() => false)) && (await dontSave.count())) await dontSave.click();
        return (await page.locator(".tabs-container .tab").count()) === 0;
      },
      30_000,
      250,
    );
    await enableSetting();
    // The agent chosen before the reload (the v1 engine loaded now offers 1: the v2 build of the
    // demo agent answers 1), so that no command is needed while the reloaded window settles.
    const before = (await initializeAnswers()).length;
    await selectAgent(V2_AGENT);
    await until(
      "the v2 build of the demo agent ready on the v1 engine",
      async () => (await ready().catch(() => false)) && (await initializeAnswers()).length > before,
      60_000,
    );
    const answers = await initializeAnswers();
    if (!answers[answers.length - 1].includes('"protocolVersion":1'))
      throw new Error(`offered 1, it answered ${answers[answers.length - 1]}`);
    await reloadAndOpenChat();
    await until(
      "the v2 agent ready after the reload",
      async () => (await ready().catch(() => false)) && !!(await transcript.getAttribute("data-session-id")),
      60_000,
    );
    await until("the v2 engine in the log", async () => /protocol engine \(node\): .*acp-wasm-v2/.test(await acpLog()), 10_000);
    await until(
      "the v2 answer to initialize",
      async () => (await initializeAnswers()).some((l) => l.includes('"protocolVersion":2')),
      10_000,
    );
    if (!(await acpLog()).includes(`agent ${V2_AGENT} speaks ACP v2`)) throw new Error("the log does not say the agent speaks v2");
    v2Running = true;
  });

  await scenario("v2: a turn streamed, its permission question (a title only) answered, ended by the idle state_update", async () => {
    needV2();
    await sendPrompt("Hello over v2");
    const allow = await dialogButton("Allow");
    // v2's question has a title and no tool call: shown as it is.
    const text = (await dialog.textContent()) ?? "";
    if (!text.includes("Write acp-demo.txt?")) throw new Error(`the question does not show its title: ${text}`);
    await screenshot("v2-permission");
    await allow.click();
    await turnEnds("end_turn");
    const answer = await lastAgentText();
    if (!answer.includes("You said: Hello over v2. The write was allowed.")) throw new Error(`the streamed answer: ${answer}`);
    const users = await chat.locator(".msg.user").allTextContents();
    // The echoed user_message (keyed by the id the prompt's answer gave) is not shown twice.
    if (users.filter((t) => t.includes("Hello over v2")).length !== 1) throw new Error(`the prompt shown ${JSON.stringify(users)}`);
    if (!(await chat.locator("#send").isEnabled())) throw new Error("the chat is still busy after the turn");
    await screenshot("v2-turn");
  });

  await scenario("v2: cancel while the question is open: the agent's idle state_update ends the turn `cancelled`", async () => {
    needV2();
    await sendPrompt("Ask me over v2, then I cancel");
    const reject = await dialogButton("Reject");
    // The modal covers the workbench; the chat's Cancel button is clicked through the DOM.
    await chat.locator("#cancel").dispatchEvent("click");
    await turnEnds("cancelled", 30_000);
    if (await dialog.isVisible()) await reject.click(); // the question of a turn over: its answer is ignored
    await dialog.waitFor({ state: "hidden", timeout: 10_000 });
    const answer = await lastAgentText();
    if (answer.includes("Ask me over v2")) throw new Error(`the cancelled turn answered: ${answer}`);
    await until("the chat not busy", async () => chat.locator("#send").isEnabled(), 10_000);
    await screenshot("v2-cancelled");
  });

  await scenario("v2: after a window reload the conversation is reopened with the agent's replay", async () => {
    needV2();
    const session = await transcript.getAttribute("data-session-id");
    await reloadAndOpenChat();
    await until(
      "the conversation shown again, its session reopened",
      async () =>
        (await transcriptText().catch(() => "")).includes("Hello over v2") &&
        (await transcript.getAttribute("data-session-id").catch(() => null)) === session &&
        (await ready().catch(() => false)),
      60_000,
    );
    await until(
      "session/resume with replayFrom in the trace",
      async () => /"method":"session\/resume".*"replayFrom"/.test(await acpTrace()),
      10_000,
    );
    await sendPrompt("Still there over v2?");
    await (await dialogButton("Allow")).click();
    await turnEnds("end_turn");
    const users = await chat.locator(".msg.user").allTextContents();
    if (users.filter((t) => t.includes("Hello over v2")).length !== 1)
      throw new Error(`the replay showed the conversation twice: ${JSON.stringify(users)}`);
    if (!(await lastAgentText()).includes("You said: Still there over v2?")) throw new Error("no answer after the reopen");
    await screenshot("v2-replayed");
  });

  await scenario("v2 setting on, v1 agent: it answers 1 and its turn runs as v1", async () => {
    needV2();
    const before = (await initializeAnswers()).length;
    await selectAgent(SLOW_AGENT);
    await until(
      "the v1 agent ready",
      async () => (await ready().catch(() => false)) && (await initializeAnswers()).length > before,
      60_000,
    );
    const answers = await initializeAnswers();
    if (!answers[answers.length - 1].includes('"protocolVersion":1'))
      throw new Error(`the v1 agent's answer: ${answers[answers.length - 1]}`);
    await sendPrompt("Hello again over v1");
    await answerTurn();
    if (!(await lastAgentText()).trim()) throw new Error("the v1 turn has no answer");
    await screenshot("v2-setting-v1-agent");
  });
}
