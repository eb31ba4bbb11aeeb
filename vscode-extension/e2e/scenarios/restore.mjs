// e2e scenarios: a conversation's place (issue 23's leftovers): the side view's running
// conversation moved into an editor tab (same session, its turn goes on there, its write question
// answered, the side view starts anew), and that tab brought back by a window reload with its
// history, its session resumed at its next prompt; or, when the agent no longer has the session,
// the tab saying so and going on in a new one.
//
// The moved turn is held running by the command the demo agent runs for it (multi.mjs's
// holdTurn: a script that waits for the test's "go" file), so "it goes on in the tab" is a state
// the test holds, not a race.

import * as fs from "node:fs";
import * as path from "node:path";
import {
  RESUMED,
  SLOW_AGENT,
  chat,
  newSession,
  page,
  reloadWindow,
  runCommand,
  scenario,
  selectAgent,
  sendPrompt,
  setTerminalApproval,
  tmp,
  until,
} from "../harness.mjs";
import { allowWrite, busy, chatAt, holdTurn, turnEndsIn, webviewCount } from "./multi.mjs";

/** The chat webviews' session ids and transcripts, by index. */
async function chats() {
  const out = [];
  const n = await webviewCount();
  for (let i = 0; i < n; i++) {
    const t = chatAt(i).locator("#transcript");
    out.push({
      at: chatAt(i),
      sessionId: await t.getAttribute("data-session-id", { timeout: 2000 }).catch(() => null),
      text: (await t.textContent({ timeout: 2000 }).catch(() => null)) ?? "",
    });
  }
  return out;
}

/** The one chat webview `pick` chooses, once there is exactly one. */
async function chatWhere(what, pick, timeoutMs = 60_000) {
  let found;
  await until(
    what,
    async () => {
      const hits = (await chats()).filter(pick);
      if (hits.length !== 1) return false;
      found = hits[0].at;
      return true;
    },
    timeoutMs,
  );
  return found;
}

/** Sends `text` from chat `c` and waits for the demo agent's answer to `/echo` (its last text). */
async function echoIn(c, word) {
  const agentBefore = await c.locator(".msg.agent").count();
  await c.locator("#prompt").fill(`/echo ${word}`);
  await c.locator("#send").click();
  await until(
    `the answer "${word}"`,
    async () =>
      (await c.locator(".msg.agent").count()) > agentBefore &&
      ((await c.locator(".msg.agent").last().textContent()) ?? "").trim() === word &&
      !(await busy(c)),
    60_000,
  );
}

/** Moving a conversation into a tab, and the tab restored after a reload. */
export async function run() {
  let movedSession;
  await scenario("move the side view's running conversation into an editor tab: its session and turn go on there", async () => {
    if ((await page.locator(".statusbar-item", { hasText: SLOW_AGENT }).count()) === 0) {
      await selectAgent(SLOW_AGENT);
      await until("the demo agent ready", async () => (await chat.locator("#status").getAttribute("data-state")) === "ready", 60_000);
    }
    await setTerminalApproval("allow");
    await newSession();
    movedSession = await chat.locator("#transcript").getAttribute("data-session-id");
    const h = holdTurn("move");
    await sendPrompt(`move me ${h.command}`);
    await until("the side view's turn running", () => busy(chat), 10_000);

    await runCommand("ACP: Move Chat to Editor Tab");
    // Two chats: the tab with the moved session and its prompt, the side view with neither.
    await until("the tab and the side view", async () => (await webviewCount()) === 2, 30_000);
    const tab = await chatWhere("the moved conversation in the tab", (c) => c.sessionId === movedSession && c.text.includes("move me"));
    const side = await chatWhere("a new conversation in the side view", (c) => c.sessionId === "" && !c.text.includes("move me"));
    await until("the moved turn still running, shown in the tab", () => busy(tab), 10_000);
    if (await busy(side)) throw new Error("the side view still shows the moved turn running");

    // The turn ends in the tab: its command released, its write question answered.
    h.release();
    await allowWrite();
    await turnEndsIn(tab, 0);
    if (!((await tab.locator(".msg.agent").last().textContent()) ?? "").includes("I wrote"))
      throw new Error(`the moved turn's answer: ${await tab.locator(".msg.agent").last().textContent()}`);

    // The side view's next prompt opens a session of its own.
    await echoIn(side, "fresh-side");
    const sideSession = await side.locator("#transcript").getAttribute("data-session-id");
    if (!sideSession || sideSession === movedSession) throw new Error(`the side view's session: ${sideSession}`);
    if ((await tab.locator("#transcript").getAttribute("data-session-id")) !== movedSession)
      throw new Error("the tab's session changed when the side view opened one");
  });

  await scenario("reload the window: the editor tab is back with its history and goes on in its session", async () => {
    if (!movedSession) throw new Error("needs the previous scenario's tab");
    await reloadWindow();
    await runCommand("ACP: Open Chat");
    // The restored tab shows the saved conversation before its session is reopened.
    const tab = await chatWhere(
      "the tab restored with its history",
      (c) => c.text.includes("move me") && c.text.includes("I wrote"),
      90_000,
    );
    await chatWhere("the side view with its own conversation", (c) => c.text.includes("fresh-side") && !c.text.includes("move me"), 30_000);
    // Its next prompt reopens the same session (resumed by the agent, which keeps it on disk).
    await echoIn(tab, "after-reload");
    await until(
      "the tab's session resumed",
      async () =>
        (await tab.locator(".notice", { hasText: RESUMED }).count()) >= 1 &&
        (await tab.locator("#transcript").getAttribute("data-session-id")) === movedSession,
      30_000,
    );
  });

  await scenario("reload the window when the agent has lost the tab's session: the tab says so and goes on in a new one", async () => {
    if (!movedSession) throw new Error("needs the previous scenarios' tab");
    // (The tab is in front after the reload: no command needed to show it.)
    await reloadWindow();
    const tab = await chatWhere("the tab restored with its history", (c) => c.text.includes("after-reload"), 90_000);
    // The demo agent keeps its sessions in --state-dir, read when a session is loaded: gone now.
    fs.rmSync(path.join(tmp, "demo-state", `${movedSession}.json`));
    await echoIn(tab, "lost-session");
    const notice = tab.locator(".notice", { hasText: "does not remember" });
    await until("the tab saying the agent does not remember it", async () => (await notice.count()) >= 1, 30_000);
    const now = await tab.locator("#transcript").getAttribute("data-session-id");
    if (!now || now === movedSession) throw new Error(`the tab's session after the agent lost it: ${now}`);
    if (!((await tab.locator("#transcript").textContent()) ?? "").includes("move me")) throw new Error("the tab's history is gone");
    // Closed: the groups after this one have the side view's chat alone.
    await page.locator(".tabs-container .tab", { hasText: "move me" }).locator(".tab-actions .action-label").click();
    await until("one chat webview left", async () => (await webviewCount()) === 1, 15_000);
  });
}
