// e2e scenarios: VS Code for the Web (issue 23 item 8). A second code-server whose user settings
// put the extension in the browser's web worker extension host (`remote.extensionKind`:
// ["web"]: VS Code then runs package.json's "browser" entry, dist/extension.browser.js, with
// the web build of the wasm engine), opened in a second tab of the same Chromium. There the
// extension completes a turn with a remote demo agent (`acp serve --http` over WebSocket, the
// token sent as a subprotocol), refuses a local agent with its words, and is shown in light and
// dark themes; reads and writes a workspace file for the agent through the browser's fs bridge
// (vscode.workspace.fs) after the permission question; then the same over the official HTTP transport (POST + SSE through `fetch`). Its code-server runs in its own process group and is stopped at the end.

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ACP_BIN,
  DEMO_FILE,
  ARTIFACTS,
  CODE_SERVER,
  REMOTE_TOKEN,
  context,
  csEnv,
  extensionsDir,
  freePort,
  log,
  remoteServer,
  scenario,
  tmp,
  until,
  workspace,
} from "../harness.mjs";

const EXTENSION_ID = "acp-rs.acp-rs-vscode";
const WEB_REMOTE = "remote in the browser (acp serve --http)";
const WEB_SSE = "remote over HTTP in the browser (acp serve --http)";
const WEB_LOCAL = "local in the browser (refused)";
const userData = path.join(tmp, "web-user-data");
fs.mkdirSync(path.join(userData, "User"), { recursive: true });
fs.writeFileSync(
  path.join(userData, "User", "settings.json"),
  JSON.stringify(
    {
      // The extension in the browser's web worker extension host, not the server's Node one.
      "remote.extensionKind": { [EXTENSION_ID]: ["web"] },
      "acp.agents": [
        { name: WEB_REMOTE, url: remoteServer.url },
        { name: WEB_SSE, url: remoteServer.sseUrl },
        { name: WEB_LOCAL, command: ACP_BIN, args: ["demo-agent"] },
      ],
      "acp.defaultAgent": WEB_REMOTE,
      "workbench.colorTheme": "Default Light Modern",
      "workbench.startupEditor": "none",
      "workbench.editor.useModal": "off",
      "workbench.tips.enabled": false,
      "workbench.welcomePage.walkthroughs.openOnInstall": false,
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      "update.mode": "none",
      "chat.disableAIFeatures": true,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
    },
    null,
    2,
  ),
);

/** code-server for the browser host: the extensions the first one installed, its own profile. */
async function startWebCodeServer() {
  const port = await freePort();
  const configFile = path.join(tmp, "web-code-server.yaml");
  fs.writeFileSync(configFile, "auth: none\ncert: false\n");
  const args = ["--config", configFile, "--user-data-dir", userData, "--extensions-dir", extensionsDir, "--auth", "none"];
  args.push("--bind-addr", `127.0.0.1:${port}`, "--disable-workspace-trust", "--disable-telemetry", "--disable-update-check");
  args.push("--disable-getting-started-override", workspace);
  const cs = spawn(CODE_SERVER, args, { env: csEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const out = fs.createWriteStream(path.join(ARTIFACTS, "code-server-web.log"));
  let seen = "";
  const exited = new Promise((r) => cs.once("exit", r));
  for (const s of [cs.stdout, cs.stderr]) s.on("data", (b) => ((seen += b.toString()), out.write(b)));
  await until("the browser-host code-server to listen", () => /HTTP server listening on/.test(seen), 60_000);
  log(`browser-host code-server on 127.0.0.1:${port}`);
  return {
    url: `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`,
    async stop() {
      try {
        process.kill(-cs.pid, "SIGTERM");
      } catch {}
      await exited;
    },
  };
}

/** The chat, the commands and screenshots of one workbench tab. */
function workbench(page) {
  const chat = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  let shot = 0;
  return {
    chat,
    async runCommand(title) {
      await page.keyboard.press("F1");
      const input = page.locator(".quick-input-widget input");
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill(`>${title}`);
      // The entry itself, wherever the palette ranks it ("Color Theme" ranks below "Browse
      // Color Themes in Marketplace").
      const row = page.locator(".quick-input-list .monaco-list-row", { has: page.getByText(title, { exact: true }) });
      await until(`command palette entry "${title}"`, async () => (await row.count()) > 0, 10_000);
      await row.first().click();
    },
    /** Picks an agent (ACP: Select Agent), answering the switch question and the token box. */
    async selectAgent(name, token) {
      await this.runCommand("ACP: Select Agent");
      await page.locator(".quick-input-widget input").fill(name);
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: name });
      await until(`${name} in the picker`, async () => (await row.count()) > 0, 10_000);
      await row.first().click();
      const dialog = page.locator(".monaco-dialog-box");
      const widget = page.locator(".quick-input-widget");
      const password = widget.locator('input[type="password"]');
      const tokenAsked = async () => (await password.count()) === 1 && (await password.isVisible());
      if (token) {
        await until("the switch question or the token box", async () => (await dialog.isVisible()) || (await tokenAsked()), 30_000);
        if (await dialog.isVisible()) await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Switch" }).click();
        await until("the token box", tokenAsked, 30_000);
        // Into the box itself (fill focuses it): typed keys could reach the page before the
        // box has the focus, and Enter would then answer it empty.
        await password.fill(token);
        await password.press("Enter");
      } else {
        await until("the switch question", async () => await dialog.isVisible(), 30_000);
        await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Switch" }).click();
      }
    },
    /** Sends `text` and waits for the turn's end (the n-th end_turn of the view). */
    async turn(text, n) {
      await chat.locator("#prompt").fill(text);
      await chat.locator("#send").click();
      await until("the turn to end", async () => (await chat.locator(".turn-end.stop-end_turn").count()) === n, 60_000);
      const answer = (await chat.locator(".msg.agent").last().textContent()) ?? "";
      if (!answer.includes(text.replace(/^\/echo /, ""))) throw new Error(`the agent's answer is not the echo: ${answer}`);
    },
    async screenshot(name) {
      const file = path.join(ARTIFACTS, `web-${String(++shot).padStart(2, "0")}-${name}.png`);
      await page.screenshot({ path: file });
      log(`screenshot ${path.basename(file)}`);
    },
  };
}

export async function run() {
  const server = await startWebCodeServer();
  const page = await context.newPage();
  const consoleLog = fs.createWriteStream(path.join(ARTIFACTS, "browser-console-web.log"));
  page.on("console", (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));
  const wb = workbench(page);
  const { chat } = wb;
  try {
    await page.goto(server.url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });

    await scenario("browser host: the extension runs in the web worker extension host", async () => {
      await wb.runCommand("Developer: Show Running Extensions");
      const row = page.locator(".runtime-extensions-editor .monaco-list-row", { hasText: "ACP (acp-rs)" });
      await until("the extension in the running extensions", async () => (await row.count()) === 1, 60_000);
      await wb.screenshot("running-extensions");
      // The row names the host: "web worker" (the server's Node host shows its address).
      const text = (await row.textContent()) ?? "";
      if (!/web worker/i.test(text)) throw new Error(`the extension is not in the web worker host: ${text}`);
      await wb.runCommand("View: Close All Editors");
    });

    await scenario("browser host: a turn with a remote demo agent (acp serve --http over WebSocket)", async () => {
      await wb.runCommand("ACP: Open Chat");
      await chat.locator("#status").waitFor({ timeout: 60_000 });
      const widget = page.locator(".quick-input-widget");
      const password = widget.locator('input[type="password"]');
      await until(
        "the token box",
        async () =>
          (await password.count()) === 1 &&
          (await password.isVisible()) &&
          ((await widget.textContent()) ?? "").includes("token for ws://"),
        60_000,
      );
      // Into the box itself (fill focuses it; see selectAgent).
      await password.fill(REMOTE_TOKEN);
      await password.press("Enter");
      await until(
        "the remote agent to be ready",
        async () => (await chat.locator("#status").getAttribute("data-state")) === "ready",
        60_000,
      );
      await until("a session", async () => !!(await chat.locator("#transcript").getAttribute("data-session-id")), 30_000);
      await wb.turn("/echo hello from the browser host", 1);
      await wb.screenshot("turn-light");
      await wb.runCommand("Preferences: Color Theme");
      await page.locator(".quick-input-widget input").fill("Dark Modern");
      // The picker shows themes by label ("Dark Modern"; the setting's value is "Default Dark Modern").
      const dark = page.locator(".quick-input-list .monaco-list-row", { has: page.getByText("Dark Modern", { exact: true }) });
      await until("Dark Modern in the theme picker", async () => (await dark.count()) > 0, 10_000);
      await dark.first().click();
      await until(
        "the dark theme",
        async () => ((await page.locator(".monaco-workbench").getAttribute("class")) ?? "").includes("vs-dark"),
        15_000,
      );
      await wb.screenshot("turn-dark");
    });

    await scenario(
      "browser host: the agent reads and writes a workspace file (vscode.workspace.fs), after the permission question",
      async () => {
        const demo = path.join(workspace, DEMO_FILE);
        fs.writeFileSync(demo, "before the browser turn\n");
        await chat.locator("#prompt").fill("Remember the browser walrus");
        await chat.locator("#send").click();
        const dialog = page.locator(".monaco-dialog-box");
        const allow = dialog.locator(".dialog-buttons .monaco-button", { hasText: "Allow this write" });
        await until("the write question", async () => (await dialog.isVisible().catch(() => false)) && (await allow.count()) > 0, 60_000);
        // The diff's old side is what fs/read_text_file read through the browser's bridge.
        const text = (await dialog.textContent()) ?? "";
        for (const want of ["-before the browser turn", "+The acp demo agent was asked:"])
          if (!text.includes(want)) throw new Error(`the question does not show ${JSON.stringify(want)}: ${text}`);
        await allow.click();
        await until("the turn to end", async () => (await chat.locator(".turn-end.stop-end_turn").count()) === 2, 60_000);
        const answer = (await chat.locator(".msg.agent").last().textContent()) ?? "";
        if (!answer.includes(`I wrote ${DEMO_FILE}`)) throw new Error(`the agent's answer: ${answer}`);
        await until("the file written on disk", () => fs.readFileSync(demo, "utf8").includes("Remember the browser walrus"), 10_000);
        await wb.screenshot("fs-write");
      },
    );

    await scenario("browser host: a turn over the official HTTP transport (POST + SSE through fetch)", async () => {
      await wb.selectAgent(WEB_SSE, REMOTE_TOKEN);
      const header = chat.locator("#status");
      await until(
        "the HTTP agent's session",
        async () => (await header.getAttribute("data-state")) === "ready" && (await chat.locator(".msg").count()) === 0,
        60_000,
      );
      await until("a session", async () => !!(await chat.locator("#transcript").getAttribute("data-session-id")), 30_000);
      await wb.turn("/echo hello over http from the browser host", 1);
      await wb.screenshot("turn-http-dark");
    });

    await scenario("browser host: a local agent is refused with what to do instead", async () => {
      await wb.selectAgent(WEB_LOCAL);
      const words = "local agents cannot run in VS Code for the Web";
      const toast = page.locator(".notification-toast", { hasText: words });
      await until(
        "the refusal",
        async () => (await toast.count()) > 0 || ((await chat.locator("#transcript").textContent()) ?? "").includes(words),
        60_000,
      );
      await wb.screenshot("local-agent-refused");
    });
  } finally {
    await page.close().catch(() => {});
    await server.stop();
  }
}
