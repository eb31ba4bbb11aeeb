// e2e scenarios: The prompt input: slash commands, @-mentions, images, Escape.

import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import {
  chat,
  lastAgentText,
  newSession,
  scenario,
  screenshot,
  sendPrompt,
  tmp,
  turnEnds,
  until,
  workspace,
  markTurnStart,
} from "../harness.mjs";

/** The prompt input: slash commands, @-mentions, images, Escape. */
export async function run() {
  // ---- prompt input, edit review, layout (issue 11 items 2, 5, 7) ----------------------------------
  await scenario("slash completion: / lists the agent's commands; choosing /echo runs it", async () => {
    await newSession();
    const input = chat.locator("#prompt");
    await input.fill("");
    await input.pressSequentially("/ec");
    await until(
      "the /echo completion",
      async () => (await chat.locator("#completions .completion", { hasText: "/echo" }).count()) === 1,
      10_000,
    );
    await screenshot("slash-completion");
    await input.press("Enter"); // chooses the completion
    if ((await input.inputValue()) !== "/echo ") throw new Error(`completion gave ${JSON.stringify(await input.inputValue())}`);
    await input.pressSequentially("slash-ran-42");
    await markTurnStart();
    await input.press("Enter");
    await turnEnds("end_turn");
    if ((await lastAgentText()).trim() !== "slash-ran-42") throw new Error(`the echo answer: ${await lastAgentText()}`);
  });

  await scenario("@-mention: a workspace file completes and reaches the agent as an embedded resource", async () => {
    fs.writeFileSync(path.join(workspace, "mention-target.txt"), "mentioned content\n");
    const input = chat.locator("#prompt");
    await input.fill("");
    await input.pressSequentially("/echo see @mention-ta");
    const item = chat.locator("#completions .completion", { hasText: "mention-target.txt" });
    await until("the file completion", async () => (await item.count()) > 0, 20_000);
    await input.press("Enter");
    await until(
      "the attachment chip",
      async () => (await chat.locator("#attachments .chip", { hasText: "mention-target.txt" }).count()) === 1,
      5000,
    );
    await screenshot("mention-chip");
    await markTurnStart();
    await input.press("Enter");
    await turnEnds("end_turn");
    const want = `[resource ${pathToFileURL(path.join(workspace, "mention-target.txt")).href} (18 characters)]`;
    if (!(await lastAgentText()).includes(want)) throw new Error(`the agent did not get the resource: ${await lastAgentText()}`);
  });

  await scenario("image: attached and accepted by an agent that advertises images", async () => {
    const png = path.join(tmp, "dot.png");
    fs.writeFileSync(
      png,
      Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64"),
    );
    await chat.locator("#image-file").setInputFiles(png);
    await until("the image chip", async () => (await chat.locator("#attachments .chip-image").count()) === 1, 5000);
    await sendPrompt("/echo picture");
    await turnEnds("end_turn");
    if (!/\[image image\/png, \d+ bytes\]/.test(await lastAgentText()))
      throw new Error(`no image reached the agent: ${await lastAgentText()}`);
  });

  await scenario("Escape stops the running turn", async () => {
    await sendPrompt("a long answer, please");
    await until("the turn to run", async () => (await chat.locator("body.busy").count()) === 1, 10_000);
    await chat.locator("#prompt").press("Escape");
    await turnEnds("cancelled");
    if (!(await chat.locator(".turn-end.stop-cancelled").last().textContent())?.includes("Cancelled"))
      throw new Error("no plain-words stop");
  });
}
