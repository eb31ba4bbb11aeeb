// e2e scenarios: The first scenario: the chat opens and the demo agent starts (every other group needs it).

import { NEW_SESSION, chat, runCommand, scenario, screenshot, until } from "../harness.mjs";

/** The first scenario: the chat opens and the demo agent starts (every other group needs it). */
export async function run() {
  await scenario("open the chat; the demo agent starts and a session opens", async () => {
    await runCommand("ACP: Open Chat");
    await chat.locator("#status").waitFor({ timeout: 30_000 });
    await until("the agent to be ready", async () => (await chat.locator("#status").getAttribute("data-state")) === "ready", 60_000);
    await until("the session notice", async () => (await chat.locator(".notice", { hasText: NEW_SESSION }).count()) === 1);
    const status = await chat.locator("#status").textContent();
    if (!/acp demo agent/i.test(status ?? "")) throw new Error(`unexpected agent title in the chat header: ${status}`);
    await screenshot("chat-open");
  });
}
