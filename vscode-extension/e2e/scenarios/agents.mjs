// e2e scenarios: Sign-in, read-only history, remote agents (WebSocket, HTTP + SSE), the agent picker, a start failure.

import {
  AUTH_AGENT,
  BROKEN_AGENT,
  NEW_SESSION,
  REMOTE_AGENT,
  REMOTE_SSE_AGENT,
  REMOTE_TOKEN,
  RESTARTING,
  RESUMED,
  SECRET,
  acpTrace,
  chat,
  dialog,
  dialogButton,
  logText,
  noticeCount,
  page,
  ready,
  remoteServer,
  runCommand,
  scenario,
  screenshot,
  selectAgent,
  sendPrompt,
  settlePendingIfAsked,
  startRemoteServer,
  transcript,
  transcriptText,
  turnEnds,
  until,
} from "../harness.mjs";

async function signInWithEnvVar() {
  await runCommand("ACP: Select Agent");
  await page.locator(".quick-input-widget input").fill(AUTH_AGENT);
  await until(
    `${AUTH_AGENT} in the picker`,
    async () => ((await page.locator(".quick-input-list .monaco-list-row").first().textContent()) ?? "").includes(AUTH_AGENT),
    10_000,
  );
  await page.keyboard.press("Enter");
  const widget = page.locator(".quick-input-widget");
  const signInShown = async () => ((await widget.textContent().catch(() => "")) ?? "").includes("needs you to sign in");
  // Switching agents may ask first (the chat holds a conversation; it stays in the history).
  await until("the switch question or the sign-in methods", async () => (await dialog.isVisible()) || (await signInShown()), 30_000);
  if (await dialog.isVisible()) await (await dialogButton("Switch")).click();
  await until("the sign-in methods", signInShown, 30_000);
  await until(
    "the Demo token method",
    async () => ((await widget.locator(".monaco-list-row").first().textContent()) ?? "").includes("Demo token"),
    10_000,
  );
  await screenshot("sign-in-methods");
  await page.keyboard.press("Enter");
  const password = widget.locator('input[type="password"]');
  await until("the password box for DEMO_TOKEN", async () => (await password.count()) === 1 && (await password.isVisible()), 10_000);
  await password.fill(SECRET); // into the box itself: fill focuses it
  await password.press("Enter");
  await until(
    "the session after signing in",
    async () => (await ready()) && (await noticeCount(NEW_SESSION)) >= 1 && !!(await transcript.getAttribute("data-session-id")),
    30_000,
  );
  // (The output channels reach their files a little later.)
  await until(
    "authenticate in the trace",
    async () => (await acpTrace()).includes(`"method":"authenticate","params":{"methodId":"demo-env-token"}`),
    10_000,
  );
  if ((await acpTrace()).includes(SECRET) || (await logText()).includes(SECRET)) throw new Error("the secret reached a log");
  await screenshot("signed-in");
}

async function readOnlyFromHistory() {
  // The current agent is the sign-in one: a conversation held with the slow demo agent is
  // shown read-only, and the next prompt continues it in a new session with this agent.
  await runCommand("ACP: Session History");
  await page.locator(".quick-input-widget input").fill("walrus");
  const row = page.locator(".quick-input-list .monaco-list-row").first();
  await until("the walrus session in the history", async () => ((await row.textContent()) ?? "").includes("Remember the walrus"), 10_000);
  await page.keyboard.press("Enter");
  await until(
    "the read-only conversation",
    async () =>
      (await settlePendingIfAsked()) === undefined &&
      (await transcriptText()).includes("Remember the walrus") &&
      (await noticeCount("it is read-only here")) === 1,
    15_000,
  );
  await screenshot("history-read-only");
  await sendPrompt("#mcp");
  await turnEnds("end_turn");
  const t = await transcriptText();
  if (!t.includes("Remember the walrus") || !t.includes("And the carpenter")) throw new Error("the earlier conversation is gone");
  if ((await noticeCount(NEW_SESSION)) < 1) throw new Error("no new session for the continued conversation");
  if (!((await chat.locator(".msg.agent").last().textContent()) ?? "").includes("MCP servers: e2e-files"))
    throw new Error("the continued conversation got no answer");
  await screenshot("history-continued");
}

async function remoteAgentByUrl() {
  await runCommand("ACP: Select Agent");
  await page.locator(".quick-input-widget input").fill(REMOTE_AGENT);
  await until(
    `${REMOTE_AGENT} in the picker`,
    async () => ((await page.locator(".quick-input-list .monaco-list-row").first().textContent()) ?? "").includes(REMOTE_AGENT),
    10_000,
  );
  await page.keyboard.press("Enter");
  const widget = page.locator(".quick-input-widget");
  const password = widget.locator('input[type="password"]');
  const tokenAsked = async () =>
    (await password.count()) === 1 && (await password.isVisible()) && ((await widget.textContent()) ?? "").includes("token for ws://");
  await until("the switch question or the token box", async () => (await dialog.isVisible()) || (await tokenAsked()), 30_000);
  if (await dialog.isVisible()) await (await dialogButton("Switch")).click();
  // A wrong token first: HTTP 401, said so, with "Enter Token" to ask again.
  await until("the token box", tokenAsked, 15_000);
  await screenshot("remote-token-box");
  await password.fill("not-the-right-token-000000"); // into the box itself: fill focuses it
  await password.press("Enter");
  const toast = page.locator(".notification-toast", { hasText: "refused the token (HTTP 401" });
  await until("the wrong-token notification", async () => (await toast.count()) > 0, 30_000);
  await screenshot("remote-wrong-token");
  await toast.first().locator(".monaco-button", { hasText: "Enter Token" }).click();
  await until("the token box again", tokenAsked, 15_000);
  await password.fill(REMOTE_TOKEN); // into the box itself: fill focuses it
  await password.press("Enter");
  await until(
    "the remote agent's session",
    async () => (await ready()) && (await noticeCount(NEW_SESSION)) >= 1 && !!(await transcript.getAttribute("data-session-id")),
    30_000,
  );
  if (!/agent remote \(e2e, acp serve --http\) connected: ws:\/\//.test(await logText()))
    throw new Error("the log does not show the connection");
  await sendPrompt("/echo hello from afar");
  await turnEnds("end_turn");
  if (!((await chat.locator(".msg.agent").last().textContent()) ?? "").includes("hello from afar"))
    throw new Error("no answer from the remote agent");
  await screenshot("remote-turn");
  // The server goes away: the extension tries again (within the crash budget) until it is back
  // on the same address, then resumes the session.
  const before = await transcript.getAttribute("data-session-id");
  const exited = new Promise((r) => remoteServer.child.once("exit", r));
  remoteServer.child.kill("SIGTERM");
  await exited;
  await until("a failed reconnection, to be tried again", async () => (await noticeCount("cannot be reached")) >= 1, 30_000);
  Object.assign(remoteServer, await startRemoteServer(remoteServer.addr));
  await until("the session resumed once the server is back", async () => (await ready()) && (await noticeCount(RESUMED)) >= 1, 30_000);
  if ((await transcript.getAttribute("data-session-id")) !== before) throw new Error("not the same session after the server came back");
  await screenshot("remote-server-back");
  // The remote demo agent crashes: the server closes the connection, which the extension takes
  // as a crash: it reconnects (a new agent behind the server) and resumes the same session.
  const sessionId = await transcript.getAttribute("data-session-id");
  const [restartsBefore, resumedBefore] = [await noticeCount(RESTARTING), await noticeCount(RESUMED)];
  await sendPrompt("#crash now");
  await until("the dropped connection in the chat", async () => (await noticeCount(RESTARTING)) > restartsBefore, 30_000);
  await until(
    "the session resumed over a new connection",
    async () => (await ready()) && (await noticeCount(RESUMED)) > resumedBefore,
    30_000,
  );
  if ((await transcript.getAttribute("data-session-id")) !== sessionId) throw new Error("not the same session after reconnecting");
  await sendPrompt("/echo still here");
  await turnEnds("end_turn");
  if (!((await chat.locator(".msg.agent").last().textContent()) ?? "").includes("still here"))
    throw new Error("no answer after reconnecting");
  const trace = await acpTrace();
  if (!trace.includes('"method":"session/resume"')) throw new Error("no session/resume in the trace");
  if (trace.includes(REMOTE_TOKEN) || (await logText()).includes(REMOTE_TOKEN)) throw new Error("the token reached a log");
  await screenshot("remote-reconnected");
}

async function remoteAgentOverSse() {
  await runCommand("ACP: Select Agent");
  await page.locator(".quick-input-widget input").fill(REMOTE_SSE_AGENT);
  await until(
    `${REMOTE_SSE_AGENT} in the picker`,
    async () => ((await page.locator(".quick-input-list .monaco-list-row").first().textContent()) ?? "").includes(REMOTE_SSE_AGENT),
    10_000,
  );
  await page.keyboard.press("Enter");
  const widget = page.locator(".quick-input-widget");
  const password = widget.locator('input[type="password"]');
  // Another origin (http://, not ws://): its token is asked for.
  const tokenAsked = async () =>
    (await password.count()) === 1 && (await password.isVisible()) && ((await widget.textContent()) ?? "").includes("token for http://");
  await until("the switch question or the token box", async () => (await dialog.isVisible()) || (await tokenAsked()), 30_000);
  if (await dialog.isVisible()) await (await dialogButton("Switch")).click();
  await until("the token box", tokenAsked, 15_000);
  await password.fill(REMOTE_TOKEN); // into the box itself: fill focuses it
  await password.press("Enter");
  await until(
    "the session over HTTP + SSE",
    async () => (await ready()) && (await noticeCount(NEW_SESSION)) >= 1 && !!(await transcript.getAttribute("data-session-id")),
    30_000,
  );
  await sendPrompt("/echo over server-sent events");
  await turnEnds("end_turn");
  if (!((await chat.locator(".msg.agent").last().textContent()) ?? "").includes("over server-sent events"))
    throw new Error("no answer over SSE");
  await screenshot("remote-sse-turn");
}

async function pickerShowsPresets() {
  await runCommand("ACP: Select Agent");
  const input = page.locator(".quick-input-widget input");
  const first = page.locator(".quick-input-list .monaco-list-row").first();
  await input.fill(REMOTE_SSE_AGENT);
  await until("the current agent marked", async () => /current/.test((await first.textContent()) ?? ""), 10_000);
  await input.fill("");
  await until("the whole list", async () => (await page.locator(".quick-input-list .monaco-list-row").count()) >= 8, 10_000);
  await screenshot("agent-picker");
  // The registry's presets (acp-client's snapshot through the engine), with what they run.
  await input.fill("Claude Code");
  await until(
    "the Claude Code preset",
    async () => ((await first.textContent()) ?? "").includes("npx -y @agentclientprotocol/claude-agent-acp"),
    10_000,
  );
  await screenshot("agent-picker-presets");
  await page.keyboard.press("Escape");
}

/** Sign-in, read-only history, remote agents (WebSocket, HTTP + SSE), the agent picker, a start failure. */
export async function run() {
  await scenario("sign-in: an env_var method asks once (password box, SecretStorage), authenticate, the session opens", signInWithEnvVar);
  await scenario("history: another agent's conversation is read-only; the next prompt continues it in a new session", readOnlyFromHistory);
  await scenario(
    "remote agent by URL (acp serve --http): token asked (a wrong one: 401, Enter Token), a turn, the server restarted and the agent crashed: reconnected, the session resumed",
    remoteAgentByUrl,
  );
  await scenario("remote agent over HTTP + SSE: its token asked (another origin), a turn", remoteAgentOverSse);
  await scenario("agent picker: the current agent marked, the ACP registry's presets offered with their command", pickerShowsPresets);

  await scenario("an agent that fails to start: a notification with its stderr tail", async () => {
    await selectAgent(BROKEN_AGENT);
    const toast = page.locator(".notification-toast", { hasText: "before initialize completed" });
    await until("the start-failure notification", async () => (await toast.count()) > 0, 30_000);
    const text = (await toast.first().textContent()) ?? "";
    if (!/exited with code \d+/.test(text) || !text.includes("stderr:") || !text.includes("no-such-flag"))
      throw new Error(`notification lacks the exit or stderr tail: ${text}`);
    for (const b of ["Show Log", "Retry"])
      if (!(await toast.first().locator(".monaco-button", { hasText: b }).count())) throw new Error(`no ${b} button`);
    await until(
      "the failed state in the chat header",
      async () => (await chat.locator("#status").getAttribute("data-state")) === "failed",
      10_000,
    );
    if (!(await page.locator(".statusbar-item", { hasText: "failed to start" }).count()))
      throw new Error("the status bar does not show the failure");
    await screenshot("start-failure");
  });
}
