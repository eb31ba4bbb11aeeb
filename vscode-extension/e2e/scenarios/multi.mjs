// e2e scenarios: several conversations at once (issue 23 item 1): a conversation in an editor
// tab beside the side view's, both turns running at once; the prompt queue (typed while the agent
// works, shown, edited, removed, sent in order when the turn ends); a notification when a turn
// ends while the conversation is not focused.
//
// A turn is held running, without a timer, by the command the demo agent runs for it: a
// script in the workspace that waits until the test creates its "go" file. So "running at once"
// and "typed while it works" are states the test holds, not races it hopes to win.

import * as fs from "node:fs";
import * as path from "node:path";
import {
  NEW_SESSION,
  SLOW_AGENT,
  chat,
  dialog,
  lastAgentText,
  newSession,
  page,
  runCommand,
  scenario,
  screenshotThemes,
  selectAgent,
  sendPrompt,
  setTerminalApproval,
  turnEnds,
  until,
  workspace,
} from "../harness.mjs";

/** A script the demo agent runs for a turn (`sh wait-<name>.sh`): it ends once `go-<name>`
 *  exists. Returns the prompt's command part and the function that lets it end. */
export function holdTurn(name) {
  const go = path.join(workspace, `go-${name}`);
  fs.rmSync(go, { force: true });
  fs.writeFileSync(path.join(workspace, `wait-${name}.sh`), `while [ ! -f go-${name} ]; do sleep 0.1; done\necho released ${name}\n`);
  return { command: `\`sh wait-${name}.sh\``, release: () => fs.writeFileSync(go, "go\n") };
}

/** The chat webviews open (the side view's and the editor tabs'), by index. */
export const chatAt = (i) => page.frameLocator("iframe.webview.ready").nth(i).frameLocator("iframe#active-frame");
export const webviewCount = () => page.locator("iframe.webview.ready").count();

/** The chat of the editor tab: the webview whose session is not `sideSession`. */
export async function tabChat(sideSession) {
  let found;
  await until(
    "the editor tab's chat with its own session",
    async () => {
      const n = await webviewCount();
      for (let i = 0; i < n; i++) {
        const id = await chatAt(i)
          .locator("#transcript")
          .getAttribute("data-session-id", { timeout: 2000 })
          .catch(() => null);
        if (id && id !== sideSession) {
          found = chatAt(i);
          return true;
        }
      }
      return false;
    },
    60_000,
  );
  return found;
}

/** The side view's chat while a tab is open (`chat` would match both webviews). */
async function sideChat(sideSession) {
  let found;
  await until("the side view's chat", async () => {
    const n = await webviewCount();
    for (let i = 0; i < n; i++)
      if (
        (await chatAt(i)
          .locator("#transcript")
          .getAttribute("data-session-id", { timeout: 2000 })
          .catch(() => null)) === sideSession
      ) {
        found = chatAt(i);
        return true;
      }
    return false;
  });
  return found;
}

export const busy = async (c) => (await c.locator("body.busy").count()) === 1;

/** Answers the write question of a turn (the demo agent's last step) once its modal is up. */
export async function allowWrite() {
  const btn = dialog.locator(".dialog-buttons .monaco-button", { hasText: "Allow this write" });
  await until("the write question", async () => (await dialog.isVisible().catch(() => false)) && (await btn.count()) > 0, 60_000);
  await btn.click();
}

export async function turnEndsIn(c, before) {
  await until("the turn to end", async () => (await c.locator(".turn-end.stop-end_turn").count()) > before, 90_000);
}

/** Several conversations, the prompt queue, notifications. */
export async function run() {
  await scenario("several conversations: one in an editor tab runs its turn while the side view's runs", async () => {
    // The demo agent (an earlier group may have left another one selected), and its commands
    // run without asking (the turns below are held by theirs).
    if ((await page.locator(".statusbar-item", { hasText: SLOW_AGENT }).count()) === 0) {
      await selectAgent(SLOW_AGENT);
      await until("the demo agent ready", async () => (await chat.locator("#status").getAttribute("data-state")) === "ready", 60_000);
    }
    await setTerminalApproval("allow");
    await runCommand("Notifications: Clear All Notifications");
    await newSession();
    const sideSession = await chat.locator("#transcript").getAttribute("data-session-id");
    const a = holdTurn("a");
    const b = holdTurn("b");
    await sendPrompt(`side conversation ${a.command}`);
    await until("the side view's turn running", () => busy(chat), 10_000);

    // Another conversation, opened mid-turn, in an editor tab.
    await runCommand("ACP: New Chat in Editor Tab");
    const tab = await tabChat(sideSession);
    await until("the tab's session", async () => (await tab.locator(".notice", { hasText: NEW_SESSION }).count()) === 1, 30_000);
    const side = await sideChat(sideSession);
    await tab.locator("#prompt").fill(`tab conversation ${b.command}`);
    await tab.locator("#send").click();
    await until("the tab's turn running", () => busy(tab), 10_000);
    // Both run now (neither can end before its go file exists).
    if (!(await busy(side))) throw new Error("the side view's turn stopped when the tab's started");
    const tabTitle = page.locator(".tabs-container .tab", { hasText: "● " });
    await until("the running mark on the tab's title", async () => (await tabTitle.count()) === 1, 10_000);
    await until(
      "the side view's header says a turn runs",
      async () => (await page.locator(".part.sidebar", { hasText: "running…" }).count()) > 0,
      10_000,
    );
    await screenshotThemes("two-conversations-running");

    // The side view's turn ends (its command released, its write allowed); the tab's goes on.
    const sideEnds = await side.locator(".turn-end.stop-end_turn").count();
    a.release();
    await allowWrite();
    await turnEndsIn(side, sideEnds);
    if (!(await busy(tab))) throw new Error("the tab's turn ended with the side view's");
    if (!((await side.locator(".msg.agent").last().textContent()) ?? "").includes("I wrote"))
      throw new Error("the side view's turn did not finish its write");
    const tabEnds = await tab.locator(".turn-end.stop-end_turn").count();
    b.release();
    await allowWrite();
    await turnEndsIn(tab, tabEnds);
    await until("the running mark gone from the tab", async () => (await tabTitle.count()) === 0, 10_000);
    // The tab closed: its conversation is saved and released; the side view goes on alone.
    await page.locator(".tabs-container .tab.active .tab-actions .action-label").click();
    await until("one chat webview left", async () => (await webviewCount()) === 1, 15_000);
  });

  await scenario("prompt queue: prompts typed while the agent works wait, are edited and removed, and go in order", async () => {
    const c = holdTurn("c");
    await sendPrompt(`queue behind ${c.command}`);
    await until("the turn running", () => busy(chat), 10_000);
    const input = chat.locator("#prompt");
    for (const text of ["/echo queued-one", "/echo queued-two", "/echo queued-three"]) {
      await input.fill(text);
      await input.press("Enter");
    }
    const items = chat.locator("#queue .queue-item");
    await until("three prompts queued", async () => (await items.count()) === 3, 10_000);
    // Edit the second (its box: Enter saves), remove the third.
    await items.nth(1).locator("button[aria-label='Edit']").click();
    const box = chat.locator("#queue .queue-edit");
    await box.fill("/echo queued-two-edited");
    await box.press("Enter");
    await until("the edit shown", async () => ((await items.nth(1).textContent()) ?? "").includes("queued-two-edited"), 10_000);
    await items.nth(2).locator("button[aria-label='Remove']").click();
    await until("two prompts queued", async () => (await items.count()) === 2, 10_000);
    await screenshotThemes("prompt-queue");
    if (!(await busy(chat))) throw new Error("the turn ended before its command was released");

    const agentBefore = await chat.locator(".msg.agent").count();
    c.release();
    await allowWrite();
    // The queued prompts go one by one, in order, each its own turn.
    await until(
      "both queued prompts answered",
      async () => (await chat.locator(".msg.agent").count()) >= agentBefore + 2 && !(await busy(chat)) && (await items.count()) === 0,
      90_000,
    );
    const answers = await chat.locator(".msg.agent").allTextContents();
    const tail = answers.slice(-2).map((t) => t.trim());
    if (tail[0] !== "queued-one" || tail[1] !== "queued-two-edited")
      throw new Error(`queued answers: ${JSON.stringify(answers.slice(-3))}`);
    if ((await chat.locator(".msg.user", { hasText: "queued-three" }).count()) !== 0) throw new Error("the removed prompt was sent");
  });

  await scenario("notification: a turn that ends while its conversation is not focused is told, Show reveals it", async () => {
    await runCommand("Notifications: Clear All Notifications");
    await newSession();
    const d = holdTurn("d");
    await sendPrompt(`notify me ${d.command}`);
    await until("the turn running", () => busy(chat), 10_000);
    // Keyboard focus leaves the conversation: the README in the editor.
    await runCommand("Go to File...");
    await page.keyboard.type("README.md");
    await until(
      "README.md in quick open",
      async () => ((await page.locator(".quick-input-list .monaco-list-row").first().textContent()) ?? "").includes("README.md"),
      10_000,
    );
    await page.keyboard.press("Enter");
    await page.locator(".editor-instance .monaco-editor").first().waitFor({ timeout: 10_000 });
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    d.release();
    await allowWrite();
    await turnEnds("end_turn");
    const toast = page.locator(".notification-toast", { hasText: "ended" });
    await until("the turn-ended notification", async () => (await toast.count()) > 0, 20_000);
    const text = (await toast.first().textContent()) ?? "";
    if (!text.includes("notify me")) throw new Error(`the notification does not name the conversation: ${text}`);
    await screenshotThemes("turn-ended-notification");
    await toast.first().locator(".monaco-button", { hasText: "Show" }).click();
    // Show: keyboard focus goes to the chat (a webview), away from the editor.
    await until(
      "the chat focused",
      async () => (await page.evaluate(() => globalThis.document.activeElement?.tagName)) === "IFRAME",
      10_000,
    );
    if (!(await lastAgentText()).includes("I wrote")) throw new Error(`the turn's answer: ${await lastAgentText()}`);
  });
}
