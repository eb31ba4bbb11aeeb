// e2e scenarios: Layout, session modes and config options, an image refused.

import * as path from "node:path";
import {
  FIXTURE_AGENT,
  chat,
  scenario,
  screenshot,
  selectAgent,
  sendPrompt,
  tmp,
  transcript,
  transcriptText,
  turnEnds,
  until,
} from "../harness.mjs";

/** Layout, session modes and config options, an image refused. */
export async function run() {
  await scenario("layout: no horizontal overflow at the default sidebar width, long paths included", async () => {
    const long = `/echo ${"/very-long-directory-name".repeat(12)}/file.txt`;
    await sendPrompt(long);
    await turnEnds("end_turn");
    // Measured in the webview (the element's own document).
    const sizes = await chat.locator("body").evaluate((body) => {
      const doc = body.ownerDocument;
      const t = doc.getElementById("transcript");
      return {
        body: [body.scrollWidth, body.clientWidth],
        doc: [doc.documentElement.scrollWidth, doc.documentElement.clientWidth],
        transcript: [t.scrollWidth, t.clientWidth],
      };
    });
    for (const [what, [scroll, client]] of Object.entries(sizes))
      if (scroll > client) throw new Error(`${what} overflows horizontally: scrollWidth ${scroll} > clientWidth ${client}`);
    await screenshot("layout-sidebar");
  });

  await scenario("session modes and config options offered by the agent", async () => {
    const seqBefore = await transcript.getAttribute("data-session-seq");
    await selectAgent(FIXTURE_AGENT);
    await until(
      "the fixture agent's session",
      async () =>
        (await transcript.getAttribute("data-session-seq")) !== seqBefore &&
        (await transcript.getAttribute("data-session-id")) === "sess-1",
      30_000,
    );
    const mode = chat.locator("#mode-select");
    await mode.waitFor({ timeout: 10_000 });
    // The agent's commands, sent right behind its session/new answer, are shown (from the thread).
    await until(
      "the agent's /review command",
      async () => (await chat.locator("#session-info .command", { hasText: "/review" }).count()) === 1,
      10_000,
    );
    const modes = await mode.locator("option").allTextContents();
    if (modes.join(",") !== "Ask,Code" || (await mode.inputValue()) !== "ask")
      throw new Error(`modes: ${modes} (${await mode.inputValue()})`);
    await mode.selectOption("code");
    await until("the agent to confirm the mode", async () => (await transcriptText()).includes("mode is now code"), 10_000);
    const model = chat.locator("#session-controls label", { hasText: "Model" }).locator("select");
    if ((await model.inputValue()) !== "small") throw new Error("config option not shown with its current value");
    await model.selectOption("large");
    await until("the agent to confirm the option", async () => (await transcriptText()).includes("model is now large"), 10_000);
    await until(
      "the option's new value from the agent's answer",
      async () => (await chat.locator("#session-controls label", { hasText: "Model" }).locator("select").inputValue()) === "large",
      10_000,
    );
    if ((await chat.locator("#mode-select").inputValue()) !== "code") throw new Error("the mode went back after the option changed");
    await screenshot("modes-and-options");
  });

  await scenario("image refused: an agent without promptCapabilities.image; the prompt stays in the input with why", async () => {
    const png = path.join(tmp, "dot.png");
    await chat.locator("#image-file").setInputFiles(png);
    await until("the image chip", async () => (await chat.locator("#attachments .chip-image").count()) === 1, 5000);
    await chat.locator("#prompt").fill("what is in this picture?");
    await chat.locator("#send").click();
    await until(
      "the refusal under the input",
      async () => ((await chat.locator("#input-error").textContent()) ?? "").includes("does not accept images"),
      10_000,
    );
    if ((await chat.locator("#prompt").inputValue()) !== "what is in this picture?") throw new Error("the prompt was lost");
    if ((await chat.locator("#attachments .chip-image").count()) !== 1) throw new Error("the image was lost");
    await screenshot("image-refused");
    await chat.locator("#attachments .chip-remove").click();
    await chat.locator("#prompt").fill("");
  });
}
