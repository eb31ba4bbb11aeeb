// The e2e harness: a fresh VS Code profile and workspace, code-server in its own process group,
// Chromium driven by playwright-core, the remote `acp serve --http` and the helpers every scenario
// group uses (run.mjs imports this module first; importing it sets everything up).
//
// Waiting is on events or bounded polling with a clear timeout error; never a bare sleep.
//
// Environment: ACP_BIN (default <repo>/target/release/acp), ACP_V2_BIN (default
// <repo>/target/acp-v2/acp, the v2 group's demo agent), VSIX (default
// vscode-extension/acp-rs-vscode.vsix), ACP_CACHE_DIR (default ~/.cache/acp-rs), ARTIFACTS.

import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

export const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = path.resolve(EXT, "..");
export const ACP_BIN = path.resolve(process.env.ACP_BIN ?? path.join(ROOT, "target", "release", "acp"));
// `acp` built with unstable_protocol_v2 (ACP v2, draft), for the v2 group (scenarios/v2.mjs).
export const ACP_V2_BIN = path.resolve(process.env.ACP_V2_BIN ?? path.join(ROOT, "target", "acp-v2", "acp"));
export const VSIX = path.resolve(process.env.VSIX ?? path.join(EXT, "acp-rs-vscode.vsix"));
export const CACHE = process.env.ACP_CACHE_DIR ?? path.join(os.homedir(), ".cache", "acp-rs");
export const CODE_SERVER = path.join(CACHE, "code-server", "node_modules", ".bin", "code-server");
export const NODE24_BIN = path.join(CACHE, "node24", "bin");
export const ARTIFACTS = path.resolve(process.env.ARTIFACTS ?? path.join(ROOT, "artifacts", "vscode-e2e"));
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const DEMO_FILE = "acp-demo.txt";
// The demo agent pauses this long between steps, so a turn can be cancelled half-way.
export const DELAY_MS = Number(process.env.ACP_E2E_DELAY_MS ?? 300);

export const log = (...a) => console.log(`[e2e ${new Date().toISOString().slice(11, 19)}]`, ...a);

for (const [what, p] of [
  ["demo agent (cargo build --release -p acp-cli)", ACP_BIN],
  ["vsix (npm run package)", VSIX],
  ["code-server (scripts/install-code-server.sh)", CODE_SERVER],
  ["chromium (apt-get install chromium)", CHROMIUM],
]) {
  if (!fs.existsSync(p)) {
    console.error(`e2e: missing ${what}: ${p}`);
    process.exit(2);
  }
}

/** Bounded polling: resolves with fn()'s first truthy value, or throws naming `what`. */
export async function until(what, fn, timeoutMs = 30_000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last.message})` : ""}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// ---- set up a fresh VS Code profile and workspace ------------------------------------------

fs.rmSync(ARTIFACTS, { recursive: true, force: true });
fs.mkdirSync(ARTIFACTS, { recursive: true });
export const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-e2e-")));
export const workspace = path.join(tmp, "workspace");
export const userData = path.join(tmp, "user-data");
export const extensionsDir = path.join(tmp, "extensions");
const chromeProfile = path.join(tmp, "chrome-profile");
for (const d of [workspace, path.join(userData, "User"), extensionsDir, chromeProfile]) fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(path.join(workspace, "README.md"), "# e2e workspace\n");
// A hostile repository's workspace settings: every one of these is user-only (scope
// "application"), so VS Code must ignore them. The permission scenarios below still see their
// modal (no auto-approval), and the terminal scenarios still see theirs once the *user* setting
// is "ask".
fs.mkdirSync(path.join(workspace, ".vscode"));
fs.writeFileSync(
  path.join(workspace, ".vscode", "settings.json"),
  JSON.stringify(
    {
      "acp.permissions.autoApprove": true,
      "acp.terminal.approval": "allow",
      "acp.terminal.useShell": true,
      "acp.fs.allowWritesOutsideWorkspace": true,
      "acp.env.inheritAll": true,
    },
    null,
    2,
  ),
);
export const SLOW_AGENT = "demo (e2e, slow)";
export const BROKEN_AGENT = "broken (e2e)";
export const FIXTURE_AGENT = "fixture (modes)";
export const AUTH_AGENT = "auth (e2e)";
export const V2_AGENT = "demo (e2e, ACP v2)";
export const SECRET = "e2e-secret-token-4711";
// A remote agent (issue 14): `acp serve --http` serving the demo agent, reached by URL over
// WebSocket with a token; its sessions kept on disk, so a dropped connection resumes.
export const REMOTE_AGENT = "remote (e2e, acp serve --http)";
export const REMOTE_SSE_AGENT = "remote over SSE (e2e)";
export const REMOTE_TOKEN = "e2e-remote-token-0123456789abcdef";
export const remoteTokenFile = path.join(tmp, "remote-token");
fs.writeFileSync(remoteTokenFile, REMOTE_TOKEN);
const remoteServerLog = fs.createWriteStream(path.join(ARTIFACTS, "acp-serve.log"));
/** `acp serve --http ADDR -- acp demo-agent --state-dir …`, once it listens. */
export async function startRemoteServer(listen) {
  const args = ["serve", "--http", listen, "--token-file", remoteTokenFile, "--cwd", workspace, "--", ACP_BIN, "demo-agent"];
  const child = spawn(ACP_BIN, [...args, "--state-dir", path.join(tmp, "remote-state")], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (t) => ((err += t), remoteServerLog.write(t)));
  const addr = await until("acp serve --http to listen", () => /listening on http:\/\/(\S+)\/acp/.exec(err)?.[1], 15_000);
  log(`acp serve --http on ${addr}`);
  return { child, addr, url: `ws://${addr}/acp`, sseUrl: `http://${addr}/acp` };
}
export const remoteServer = await startRemoteServer("127.0.0.1:0");
export const settingsFile = path.join(userData, "User", "settings.json");
fs.writeFileSync(
  settingsFile,
  JSON.stringify(
    {
      "acp.demoAgentPath": ACP_BIN,
      "acp.agents": [
        // Its sessions kept on disk: resumed after a crash or a window reload.
        {
          name: SLOW_AGENT,
          command: ACP_BIN,
          args: ["demo-agent", "--delay-ms", String(DELAY_MS), "--state-dir", path.join(tmp, "demo-state")],
        },
        // Sessions only after `authenticate` with its env_var method (DEMO_TOKEN set).
        { name: AUTH_AGENT, command: ACP_BIN, args: ["demo-agent", "--require-auth", "env:DEMO_TOKEN"] },
        { name: BROKEN_AGENT, command: ACP_BIN, args: ["demo-agent", "--no-such-flag"] },
        // The demo agent built with ACP v2: speaks v2 when offered (the v2 group's setting).
        { name: V2_AGENT, command: ACP_V2_BIN, args: ["demo-agent", "--state-dir", path.join(tmp, "demo-v2-state")] },
        { name: REMOTE_AGENT, url: remoteServer.url },
        { name: REMOTE_SSE_AGENT, url: remoteServer.sseUrl },
        // The test fixture agent (on the same wasm engine) offers modes and a config option.
        {
          name: FIXTURE_AGENT,
          command: process.execPath,
          args: [path.join(EXT, "test", "fixtures", "agent.cjs")],
          env: { ACP_WASM_ENTRY: path.join(EXT, "dist", "acp-wasm", "acp_wasm.js") },
        },
      ],
      "acp.defaultAgent": SLOW_AGENT,
      // Given to every session: the stdio one is sent; the http one is left out (the demo agent
      // does not advertise http MCP servers).
      "acp.mcpServers": {
        "e2e-files": { command: "/bin/true", args: ["--e2e"] },
        "e2e-web": { type: "http", url: "https://example.invalid/mcp" },
      },
      "acp.trace.raw": true,
      // The first scenarios are about file permissions: their terminal step runs unasked. The
      // terminal scenarios switch this to "ask" (the default) with setTerminalApproval.
      "acp.terminal.approval": "allow",
      // xterm's DOM renderer, so the terminal panel's text can be read from the page.
      "terminal.integrated.gpuAcceleration": "off",
      // The Settings editor (setTerminalApproval) as a plain tab, not a modal over the chat.
      "workbench.editor.useModal": "off",
      "workbench.startupEditor": "none",
      "files.autoSave": "off",
      "files.hotExit": "off",
      "workbench.welcomePage.walkthroughs.openOnInstall": false,
      "workbench.tips.enabled": false,
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
const configFile = path.join(tmp, "code-server.yaml");
fs.writeFileSync(configFile, "auth: none\ncert: false\n");
export const csEnv = { ...process.env, PATH: `${NODE24_BIN}${path.delimiter}${process.env.PATH}` };
export const csArgs = ["--config", configFile, "--user-data-dir", userData, "--extensions-dir", extensionsDir];

log(`installing ${path.basename(VSIX)} into a fresh profile`);
const installOut = execFileSync(CODE_SERVER, [...csArgs, "--install-extension", VSIX], { env: csEnv, encoding: "utf8" });
if (!/successfully installed/i.test(installOut)) throw new Error(`--install-extension did not succeed:\n${installOut}`);

// ---- start code-server in its own process group ------------------------------------------------

export const port = await freePort();
log(`starting code-server on 127.0.0.1:${port}`);
const cs = spawn(
  CODE_SERVER,
  [
    ...csArgs,
    "--auth",
    "none",
    "--bind-addr",
    `127.0.0.1:${port}`,
    "--disable-workspace-trust",
    "--reconnection-grace-time",
    "5",
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-getting-started-override",
    workspace,
  ],
  { env: csEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] },
);
const csLog = fs.createWriteStream(path.join(ARTIFACTS, "code-server.log"));
cs.stdout.pipe(csLog);
cs.stderr.pipe(csLog);
const csExited = new Promise((r) => cs.once("exit", (code, signal) => r({ code, signal })));
let stopping = false;

export async function stopCodeServer() {
  if (stopping) return;
  stopping = true;
  try {
    process.kill(-cs.pid, "SIGTERM");
  } catch {}
  const t = setTimeout(() => {
    try {
      process.kill(-cs.pid, "SIGKILL");
    } catch {}
  }, 5000);
  await csExited;
  clearTimeout(t);
}
process.on("SIGINT", () => void stopCodeServer().then(() => process.exit(130)));
process.on("SIGTERM", () => void stopCodeServer().then(() => process.exit(143)));

await new Promise((resolve, reject) => {
  let seen = "";
  const timer = setTimeout(() => reject(new Error(`code-server did not start listening within 60 s:\n${seen}`)), 60_000);
  const onData = (b) => {
    seen += b.toString();
    if (/HTTP server listening on/.test(seen)) {
      clearTimeout(timer);
      resolve();
    }
  };
  cs.stdout.on("data", onData);
  cs.stderr.on("data", onData);
  void csExited.then(({ code, signal }) => {
    clearTimeout(timer);
    reject(new Error(`code-server exited early (code ${code}, signal ${signal}):\n${seen}`));
  });
});

// ---- the browser ---------------------------------------------------------------------------------

export const context = await chromium.launchPersistentContext(chromeProfile, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  viewport: { width: 1500, height: 950 },
});
export const page = context.pages()[0] ?? (await context.newPage());
const consoleLog = fs.createWriteStream(path.join(ARTIFACTS, "browser-console.log"));
page.on("console", (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));

let shot = 0;
export async function screenshot(name) {
  const file = path.join(ARTIFACTS, `${String(++shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  log(`screenshot ${path.relative(ROOT, file)}`);
}

export const chat = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
export const transcript = chat.locator("#transcript");
export const dialog = page.locator(".monaco-dialog-box");

export async function runCommand(title) {
  const input = page.locator(".quick-input-widget input");
  // Right after a window reload the workbench may not take keys yet, or may close the palette
  // again as it restores its editors (a failure seen under load): open it (F1) and type the
  // command until the palette stays open with the command's entry first, then Enter.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if (!(await input.isVisible())) await page.keyboard.press("F1");
      await input.waitFor({ state: "visible", timeout: 2_000 });
      await input.fill(`>${title}`, { timeout: 5_000 });
      await until(
        `command palette entry "${title}"`,
        async () => (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(title),
        10_000,
      );
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
  }
  await page.keyboard.press("Enter");
}

/** Developer: Reload Window, and the extension back after it (its status bar item). */
export async function reloadWindow() {
  await page.evaluate(() => (globalThis.__acpE2eBeforeReload = true));
  await runCommand("Developer: Reload Window");
  await until(
    "the window to reload",
    async () => await page.evaluate(() => globalThis.__acpE2eBeforeReload === undefined).catch(() => false),
    30_000,
  );
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await until(
    "the extension after the reload",
    async () => (await page.locator(".statusbar-item", { hasText: "ACP" }).count()) > 0,
    90_000,
  );
}

export async function openFileWithUnsavedEdit(name, typed) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(name); // no ">" prefix: quick open by file name
  await until(
    `quick open entry "${name}"`,
    async () => (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(name),
    10_000,
  );
  await page.keyboard.press("Enter");
  const editor = page.locator(".editor-instance .monaco-editor").first();
  await editor.waitFor({ timeout: 10_000 });
  await editor.click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.type(typed);
  await until(
    "the editor tab to show unsaved changes",
    async () => (await page.locator(".tab.dirty", { hasText: name }).count()) > 0,
    10_000,
  );
}

export async function transcriptText() {
  return (await transcript.textContent()) ?? "";
}

export async function turnEnds(stopReason, timeoutMs = 60_000) {
  await until(
    `the turn to end with "${stopReason}"`,
    async () => {
      const t = await transcriptText();
      const ends = await chat.locator(".turn-end").count();
      const last =
        ends > 0
          ? await chat
              .locator(".turn-end")
              .nth(ends - 1)
              .getAttribute("data-stop")
          : null;
      if (last && last !== stopReason && ends > turnsBefore) {
        throw new Error(`turn ended differently: ${last} (${t.slice(-300)})`);
      }
      return (await chat.locator(`.turn-end.stop-${stopReason}`).count()) > stopCountBefore[stopReason];
    },
    timeoutMs,
  );
}
export let turnsBefore = 0;
export const stopCountBefore = {};
/** Counts the turns ended so far, so turnEnds waits for the next one: call it before a turn starts
 *  (sendPrompt does). */
export async function markTurnStart() {
  turnsBefore = await chat.locator(".turn-end").count();
  for (const r of ["end_turn", "cancelled", "refusal", "max_tokens", "error"])
    stopCountBefore[r] = await chat.locator(`.turn-end.stop-${r}`).count();
}
export async function sendPrompt(text) {
  await markTurnStart();
  await chat.locator("#prompt").fill(text);
  await chat.locator("#send").click();
}

/** The pending-review question before another conversation, answered `answer` if it is open. */
export async function settlePendingIfAsked(answer = "Keep All") {
  if (!(await dialog.isVisible().catch(() => false))) return;
  if (!((await dialog.textContent().catch(() => "")) ?? "").includes("still under review")) return;
  await dialog
    .locator(".dialog-buttons .monaco-button", { hasText: answer })
    .click()
    .catch(() => {});
}

export async function newSession() {
  const before = await transcript.getAttribute("data-session-seq");
  await runCommand("ACP: New Session"); // the view's title bar has the + (the chat's header has none)
  await until("a new session", async () => {
    await settlePendingIfAsked();
    const seq = await transcript.getAttribute("data-session-seq");
    return (
      seq !== before &&
      (await transcript.getAttribute("data-session-id")) &&
      (await chat.locator(".notice", { hasText: NEW_SESSION }).count()) === 1
    );
  });
}

export async function dialogButton(name) {
  await dialog.waitFor({ state: "visible", timeout: 60_000 });
  return dialog.locator(".dialog-buttons .monaco-button", { hasText: name });
}

/** Sets `acp.terminal.approval` as a user does, in the Settings editor, and waits until the
 *  workbench has written it to settings.json. (A settings.json edited behind the workbench's
 *  back was not picked up by code-server in this test.) */
export async function setTerminalApproval(value) {
  await runCommand("Preferences: Open Settings (UI)");
  const editor = page.locator(".settings-editor");
  await editor.waitFor({ timeout: 15_000 });
  await editor.locator(".settings-header .suggest-input-container").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type("@id:acp.terminal.approval");
  const select = editor.locator(".setting-item-contents select");
  await until("the acp.terminal.approval setting in the Settings editor", async () => (await select.count()) === 1, 30_000);
  await select.selectOption(value);
  // (The default, "ask", is written by removing the key.)
  await until(
    `acp.terminal.approval = ${value} in settings.json and the Settings editor`,
    async () =>
      (JSON.parse(fs.readFileSync(settingsFile, "utf8"))["acp.terminal.approval"] ?? "ask") === value &&
      (await select.inputValue()) === value,
    15_000,
  );
  const tab = page.locator(".tabs-container .tab", { hasText: "Settings" });
  await tab.locator(".tab-actions .action-label").click();
  await until("the Settings editor to close", async () => (await tab.count()) === 0, 10_000);
}

/** The terminal approval modal (not the file-write permission one), once it is open. */
export async function terminalModal(commandLine) {
  await dialog.waitFor({ state: "visible", timeout: 60_000 });
  const text = (await dialog.textContent()) ?? "";
  // acp-client's question: its one-line title is the message (the command, once), then how it
  // runs and the directory.
  if (!text.includes(`The agent wants to run \`${commandLine}\` in ${workspace}`))
    throw new Error(`expected the terminal approval modal, got: ${text}`);
  if (text.split(commandLine).length !== 2) throw new Error(`the command line is not shown exactly once: ${text}`);
  if (!text.includes("Run without a shell.")) throw new Error(`the modal does not say how the command runs: ${text}`);
  if (!text.includes(`Directory: ${workspace}`)) throw new Error(`the modal does not name the directory: ${text}`);
  return text;
}

/** The most recently written file under `dir` whose name matches (a reloaded window logs to a
 *  new file). */
export function newestFile(dir, re) {
  let best;
  const walk = (d) => {
    if (!fs.existsSync(d)) return;
    for (const f of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, f.name);
      if (f.isDirectory()) walk(p);
      else if (re.test(f.name)) {
        const t = fs.statSync(p).mtimeMs;
        if (!best || t > best.t) best = { p, t };
      }
    }
  };
  walk(dir);
  return best?.p;
}
export const acpLog = async () =>
  fs.readFileSync(await until("the ACP log file", () => newestFile(path.join(userData, "logs"), /^(\d+-)?ACP\.log$/), 10_000), "utf8");
export const acpTrace = async () =>
  fs.readFileSync(
    await until("the ACP raw trace file", () => newestFile(path.join(userData, "logs"), /^(\d+-)?ACP Trace\.log$/), 10_000),
    "utf8",
  );

/** The message of a raw-trace line going to the agent (`12.345 → {…}`; older traces had no
 *  time), if it is one. */
export const sentText = (line) => /^(?:[0-9.]+ )?→ (.*)$/.exec(line)?.[1];

export const demoFile = path.join(workspace, DEMO_FILE);
export const results = [];
export async function scenario(name, fn) {
  log(`--- ${name}`);
  if (results.length > 0 && !results[0][1]) {
    // Without a running agent and chat nothing else can pass: say so instead of timing out.
    results.push([name, false, new Error("not run: the chat/agent did not start")]);
    return;
  }
  try {
    await fn();
    results.push([name, true]);
    log(`ok: ${name}`);
  } catch (e) {
    results.push([name, false, e]);
    log(`FAILED: ${name}: ${e.stack ?? e}`);
    await screenshot(`FAILED-${name.replace(/\W+/g, "-")}`).catch(() => {});
    // Leave no dialog behind for the next scenario.
    if (await dialog.isVisible().catch(() => false)) await page.keyboard.press("Escape").catch(() => {});
  }
}

// ---- issue 11's scenarios ---------------------------------------------------------------------

export const logText = acpLog;
export const noticeCount = (text) => chat.locator(".notice", { hasText: text }).count();
// What acp-client's session engine says when a session is resumed (after a reload, from the
// history, after a restart), when one is opened anew, and when the agent is started again.
export const RESUMED = /resumed session |session \S+ resumed/;
export const NEW_SESSION = /connected to .*; session |new session \S+ with /;
export const RESTARTING = "restarting it in";
export const ready = async () => (await chat.locator("#status").getAttribute("data-state")) === "ready";

// ---- helpers shared by the scenario groups ----------------------------------------------------

export async function selectAgent(name) {
  await runCommand("ACP: Select Agent");
  const input = page.locator(".quick-input-widget input");
  await input.fill(name);
  await until(
    `${name} in the picker`,
    async () => (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(name),
    10_000,
  );
  await page.keyboard.press("Enter");
  // Switching asks first when the chat holds a conversation.
  if ((await chat.locator(".msg, .tool").count()) > 0) await (await dialogButton("Switch")).click();
}

export const lastAgentText = async () => (await chat.locator(".msg.agent").last().textContent()) ?? "";

/** Answers the turn's questions (Run, then the write's `allow`) until the turn ends. */
export async function answerTurn(allow = "Allow this write") {
  await until(
    "the turn's questions answered and the turn over",
    async () => {
      if (await dialog.isVisible().catch(() => false)) {
        for (const b of [/^Run$/, allow]) {
          const btn = dialog.locator(".dialog-buttons .monaco-button", { hasText: b });
          if (await btn.count()) {
            await btn.click().catch(() => {});
            return false;
          }
        }
      }
      return (await chat.locator(".turn-end").count()) > turnsBefore;
    },
    90_000,
  );
  await turnEnds("end_turn");
}

/** A screenshot in the current theme and one in the other (toggled and back). */
export async function screenshotThemes(name) {
  const dark = async () => (await page.locator(".monaco-workbench.vs-dark").count()) > 0;
  const was = await dark();
  await screenshot(`${name}-${was ? "dark" : "light"}`);
  await runCommand("Preferences: Toggle between Light/Dark Themes");
  await until("the other theme", async () => (await dark()) !== was, 15_000);
  await screenshot(`${name}-${was ? "light" : "dark"}`);
  await runCommand("Preferences: Toggle between Light/Dark Themes");
  await until("the theme back", async () => (await dark()) === was, 15_000);
}

/** Opens the workspace in the browser and waits until the extension has activated. */
export async function openWorkbench() {
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await until(
    "the ACP status bar item (extension activated)",
    async () => (await page.locator(".statusbar-item", { hasText: "ACP" }).count()) > 0,
    90_000,
  );
}

/** Closes the browser, code-server and the remote server; keeps the extension's logs beside the
 *  screenshots; removes the temporary profile. */
export async function finish() {
  await context.close().catch(() => {});
  await stopCodeServer();
  remoteServer.child.kill("SIGTERM");
  // Keep the extension's own logs (the ACP output channel, the raw trace) with the screenshots.
  const logsDir = path.join(userData, "logs");
  const copyLogs = (dir) => {
    if (!fs.existsSync(dir)) return;
    for (const f of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, f.name);
      if (f.isDirectory()) copyLogs(p);
      else if (/ACP|exthost\.log/.test(f.name)) fs.copyFileSync(p, path.join(ARTIFACTS, f.name.replace(/[^\w.-]/g, "_")));
    }
  };
  copyLogs(logsDir);
  fs.rmSync(tmp, { recursive: true, force: true });
}
