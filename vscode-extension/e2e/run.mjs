#!/usr/bin/env node
// End-to-end test of the packaged extension in a real VS Code: code-server (VS Code's web build,
// installed by scripts/install-code-server.sh) driven by playwright-core in Debian's headless
// Chromium, against the real demo agent (`acp demo-agent` from target/release/acp) and the real
// wasm engine inside the .vsix.
//
// Scenarios: allow (file written, answer shown, diff opens), deny, dismiss (Escape answers the
// reject option), cancel mid-stream, cancel while the permission dialog is open, the protocol
// trace panel (its pairs, errors and cancellations), the agent
// killed mid-answer (its partial answer and the crash stay in the conversation, which goes on in
// the restarted agent's new session), a sensitive write (acp-demo.txt linked into .git: the write modal, Review
// changes, Refuse), the terminal approval modal (`acp.terminal.approval: ask`: Run, then a second
// command in the same session shown in the same terminal; Cancel,
// Escape), modes and config options, an agent that fails to start, remote agents by URL (an
// `acp serve --http` started here: WebSocket with a wrong token then the right one, a dropped
// connection resumed; HTTP + SSE), the agent picker's registry presets.
// Screenshots and logs go to artifacts/vscode-e2e/ (gitignored). Exit code 0 only if all pass.
//
// Waiting is on events or bounded polling with a clear timeout error; never a bare sleep.
//
// Environment: ACP_BIN (default <repo>/target/release/acp), VSIX (default
// vscode-extension/acp-rs-vscode.vsix), ACP_CACHE_DIR (default ~/.cache/acp-rs), ARTIFACTS.

import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(EXT, "..");
const ACP_BIN = path.resolve(process.env.ACP_BIN ?? path.join(ROOT, "target", "release", "acp"));
const VSIX = path.resolve(process.env.VSIX ?? path.join(EXT, "acp-rs-vscode.vsix"));
const CACHE = process.env.ACP_CACHE_DIR ?? path.join(os.homedir(), ".cache", "acp-rs");
const CODE_SERVER = path.join(CACHE, "code-server", "node_modules", ".bin", "code-server");
const NODE24_BIN = path.join(CACHE, "node24", "bin");
const ARTIFACTS = path.resolve(process.env.ARTIFACTS ?? path.join(ROOT, "artifacts", "vscode-e2e"));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const DEMO_FILE = "acp-demo.txt";
// The demo agent pauses this long between steps, so a turn can be cancelled half-way.
const DELAY_MS = Number(process.env.ACP_E2E_DELAY_MS ?? 300);

const log = (...a) => console.log(`[e2e ${new Date().toISOString().slice(11, 19)}]`, ...a);

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
async function until(what, fn, timeoutMs = 30_000, intervalMs = 100) {
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

function freePort() {
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
const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-e2e-")));
const workspace = path.join(tmp, "workspace");
const userData = path.join(tmp, "user-data");
const extensionsDir = path.join(tmp, "extensions");
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
const SLOW_AGENT = "demo (e2e, slow)";
const BROKEN_AGENT = "broken (e2e)";
const FIXTURE_AGENT = "fixture (modes)";
const AUTH_AGENT = "auth (e2e)";
const SECRET = "e2e-secret-token-4711";
// A remote agent (issue 14): `acp serve --http` serving the demo agent, reached by URL over
// WebSocket with a token; its sessions kept on disk, so a dropped connection resumes.
const REMOTE_AGENT = "remote (e2e, acp serve --http)";
const REMOTE_SSE_AGENT = "remote over SSE (e2e)";
const REMOTE_TOKEN = "e2e-remote-token-0123456789abcdef";
const remoteTokenFile = path.join(tmp, "remote-token");
fs.writeFileSync(remoteTokenFile, REMOTE_TOKEN);
const remoteServerLog = fs.createWriteStream(path.join(ARTIFACTS, "acp-serve.log"));
/** `acp serve --http ADDR -- acp demo-agent --state-dir …`, once it listens. */
async function startRemoteServer(listen) {
  const args = ["serve", "--http", listen, "--token-file", remoteTokenFile, "--cwd", workspace, "--", ACP_BIN, "demo-agent"];
  const child = spawn(ACP_BIN, [...args, "--state-dir", path.join(tmp, "remote-state")], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (t) => ((err += t), remoteServerLog.write(t)));
  const addr = await until("acp serve --http to listen", () => /listening on http:\/\/(\S+)\/acp/.exec(err)?.[1], 15_000);
  log(`acp serve --http on ${addr}`);
  return { child, addr, url: `ws://${addr}/acp`, sseUrl: `http://${addr}/acp` };
}
const remoteServer = await startRemoteServer("127.0.0.1:0");
const settingsFile = path.join(userData, "User", "settings.json");
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
const csEnv = { ...process.env, PATH: `${NODE24_BIN}${path.delimiter}${process.env.PATH}` };
const csArgs = ["--config", configFile, "--user-data-dir", userData, "--extensions-dir", extensionsDir];

log(`installing ${path.basename(VSIX)} into a fresh profile`);
const installOut = execFileSync(CODE_SERVER, [...csArgs, "--install-extension", VSIX], { env: csEnv, encoding: "utf8" });
if (!/successfully installed/i.test(installOut)) throw new Error(`--install-extension did not succeed:\n${installOut}`);

// ---- start code-server in its own process group ------------------------------------------------

const port = await freePort();
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

async function stopCodeServer() {
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

const context = await chromium.launchPersistentContext(chromeProfile, {
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
const page = context.pages()[0] ?? (await context.newPage());
const consoleLog = fs.createWriteStream(path.join(ARTIFACTS, "browser-console.log"));
page.on("console", (m) => consoleLog.write(`[${m.type()}] ${m.text()}\n`));

let shot = 0;
async function screenshot(name) {
  const file = path.join(ARTIFACTS, `${String(++shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  log(`screenshot ${path.relative(ROOT, file)}`);
}

const chat = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
const transcript = chat.locator("#transcript");
const dialog = page.locator(".monaco-dialog-box");

async function runCommand(title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(`>${title}`);
  await until(
    `command palette entry "${title}"`,
    async () => (await page.locator(".quick-input-list .monaco-list-row").first().textContent())?.includes(title),
    10_000,
  );
  await page.keyboard.press("Enter");
}

async function openFileWithUnsavedEdit(name, typed) {
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

async function transcriptText() {
  return (await transcript.textContent()) ?? "";
}

async function turnEnds(stopReason, timeoutMs = 60_000) {
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
let turnsBefore = 0;
const stopCountBefore = {};
async function sendPrompt(text) {
  turnsBefore = await chat.locator(".turn-end").count();
  for (const r of ["end_turn", "cancelled", "refusal", "max_tokens", "error"])
    stopCountBefore[r] = await chat.locator(`.turn-end.stop-${r}`).count();
  await chat.locator("#prompt").fill(text);
  await chat.locator("#send").click();
}

/** The pending-review question before another conversation, answered `answer` if it is open. */
async function settlePendingIfAsked(answer = "Keep All") {
  if (!(await dialog.isVisible().catch(() => false))) return;
  if (!((await dialog.textContent().catch(() => "")) ?? "").includes("still under review")) return;
  await dialog
    .locator(".dialog-buttons .monaco-button", { hasText: answer })
    .click()
    .catch(() => {});
}

async function newSession() {
  const before = await transcript.getAttribute("data-session-seq");
  await chat.locator("#new-session").click();
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

async function dialogButton(name) {
  await dialog.waitFor({ state: "visible", timeout: 60_000 });
  return dialog.locator(".dialog-buttons .monaco-button", { hasText: name });
}

/** Sets `acp.terminal.approval` as a user does, in the Settings editor, and waits until the
 *  workbench has written it to settings.json. (A settings.json edited behind the workbench's
 *  back was not picked up by code-server in this test.) */
async function setTerminalApproval(value) {
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
async function terminalModal(commandLine) {
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
function newestFile(dir, re) {
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
const acpLog = async () =>
  fs.readFileSync(await until("the ACP log file", () => newestFile(path.join(userData, "logs"), /^(\d+-)?ACP\.log$/), 10_000), "utf8");
const acpTrace = async () =>
  fs.readFileSync(
    await until("the ACP raw trace file", () => newestFile(path.join(userData, "logs"), /^(\d+-)?ACP Trace\.log$/), 10_000),
    "utf8",
  );

/** The message of a raw-trace line going to the agent (`12.345 → {…}`; older traces had no
 *  time), if it is one. */
const sentText = (line) => /^(?:[0-9.]+ )?→ (.*)$/.exec(line)?.[1];

const demoFile = path.join(workspace, DEMO_FILE);
const results = [];
async function scenario(name, fn) {
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

const logText = acpLog;
const noticeCount = (text) => chat.locator(".notice", { hasText: text }).count();
// What acp-client's session engine says when a session is resumed (after a reload, from the
// history, after a restart), when one is opened anew, and when the agent is started again.
const RESUMED = /resumed session |session \S+ resumed/;
const NEW_SESSION = /connected to .*; session |new session \S+ with /;
const RESTARTING = "restarting it in";
const ready = async () => (await chat.locator("#status").getAttribute("data-state")) === "ready";

async function crashKeepsTheConversation() {
  fs.rmSync(demoFile, { force: true });
  await newSession();
  const sessionBefore = await transcript.getAttribute("data-session-id");
  const resumedBefore = await noticeCount(RESUMED);
  // The demo agent streams its answer, writes a line on stderr and exits with code 70.
  await sendPrompt("An answer the crash cuts short #crash");
  await turnEnds("error", 30_000);
  const crash = chat.locator(".notice.error", { hasText: "exited with code 70" });
  await until("the crash in the conversation", async () => (await crash.count()) === 1, 10_000);
  const shown = (await crash.textContent()) ?? "";
  if (!shown.includes("crashing mid-answer as asked (#crash)")) throw new Error(`the crash notice lacks the stderr tail: ${shown}`);
  const partial = (await chat.locator(".msg.agent").last().textContent()) ?? "";
  if (!/Hello from the acp/.test(partial)) throw new Error(`the partial answer is not shown: ${partial}`);
  const toast = page.locator(".notification-toast", { hasText: "exited with code 70" });
  await until("the crash notification", async () => (await toast.count()) > 0, 10_000);
  const toastText = (await toast.first().textContent()) ?? "";
  if (!toastText.includes("stderr:") || !toastText.includes("#crash"))
    throw new Error(`the notification lacks the stderr tail: ${toastText}`);
  // acp-client's default restart policy (the same as acp chat's): 500 ms for the first crash.
  await until("the restart with backoff in the log", async () => /restarting .* in 500 ms: .*\(restart 1\)/.test(await logText()), 5_000);
  await until(
    "the restarted agent to resume the same session",
    async () =>
      (await noticeCount(RESUMED)) === resumedBefore + 1 &&
      (await transcript.getAttribute("data-session-id")) === sessionBefore &&
      (await ready()),
    30_000,
  );
  // The conversation went on: the prompt, the partial answer and the crash are all still there.
  if (!((await chat.locator(".msg.user").last().textContent()) ?? "").includes("An answer the crash cuts short"))
    throw new Error("the prompt is gone");
  if (!(await transcriptText()).includes(partial.trim())) throw new Error(`the partial answer is gone: ${partial}`);
  if ((await crash.count()) !== 1) throw new Error("the crash notice is gone after the restart");
  if ((await chat.locator(".tool.status-in_progress, .tool.status-pending").count()) !== 0)
    throw new Error("a tool call still shows as running after the crash");
  await until(
    "session/resume of the crashed session in the trace",
    async () => (await acpTrace()).includes(`"method":"session/resume","params":{"sessionId":"${sessionBefore}"`),
    10_000,
  );
  await screenshot("crash-kept-in-conversation");
  await sendPrompt("After the crash");
  await (await dialogButton("Allow this write")).click();
  await turnEnds("end_turn");
  if (!fs.existsSync(demoFile)) throw new Error("the restarted agent did not write the file");
  if ((await transcript.getAttribute("data-session-id")) !== sessionBefore) throw new Error("the session changed");
  await runCommand("Notifications: Clear All Notifications");
  await screenshot("restarted-after-crash");
}

async function mcpServersReachTheAgent() {
  await newSession();
  await until("the left-out notice", async () => (await noticeCount("MCP server left out: e2e-web (http servers are not supported")) === 1);
  await sendPrompt("#mcp");
  await turnEnds("end_turn");
  const answer = (await chat.locator(".msg.agent").last().textContent()) ?? "";
  if (!answer.includes("MCP servers: e2e-files")) throw new Error(`the agent did not get the MCP server: ${answer}`);
  const want = [{ name: "e2e-files", command: "/bin/true", args: ["--e2e"], env: [] }];
  const lastNew = async () => {
    const news = (await acpTrace())
      .split("\n")
      .map(sentText)
      .filter((l) => l !== undefined && l.includes('"method":"session/new"'))
      .map((l) => JSON.parse(l));
    return news[news.length - 1]?.params?.mcpServers;
  };
  const canon = (v) =>
    JSON.stringify(v, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
  await until("session/new with the stdio MCP server in the trace", async () => canon(await lastNew()) === canon(want), 10_000);
  const trace = await acpTrace();
  if (trace.includes("example.invalid")) throw new Error("the http server was sent to an agent that does not advertise http");
  await screenshot("mcp-servers");
}

async function reloadAndContinue() {
  await newSession();
  fs.rmSync(demoFile, { force: true });
  await sendPrompt("Remember the walrus");
  await (await dialogButton("Allow this write")).click();
  await turnEnds("end_turn");
  const sessionBefore = await transcript.getAttribute("data-session-id");
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
  await runCommand("ACP: Open Chat");
  await until(
    "the saved conversation shown and its session resumed",
    async () =>
      (await transcriptText().catch(() => "")).includes("Remember the walrus") &&
      (await noticeCount(RESUMED).catch(() => 0)) >= 1 &&
      (await transcript.getAttribute("data-session-id").catch(() => null)) === sessionBefore &&
      (await ready().catch(() => false)),
    60_000,
  );
  await screenshot("reloaded-conversation");
  fs.rmSync(demoFile, { force: true });
  await sendPrompt("And the carpenter");
  await (await dialogButton("Allow this write")).click();
  await turnEnds("end_turn");
  const users = await chat.locator(".msg.user").allTextContents();
  if (!users.some((t) => t.includes("Remember the walrus")) || !users.some((t) => t.includes("And the carpenter")))
    throw new Error(`the conversation did not go on: ${JSON.stringify(users)}`);
  if ((await transcript.getAttribute("data-session-id")) !== sessionBefore) throw new Error("not the same session after the reload");
}

async function reopenFromHistory() {
  const current = await transcript.getAttribute("data-session-id");
  await runCommand("ACP: Session History");
  const input = page.locator(".quick-input-widget input");
  await input.fill("mcp");
  const row = page.locator(".quick-input-list .monaco-list-row").first();
  await until("the #mcp session in the history", async () => ((await row.textContent()) ?? "").includes("#mcp"), 10_000);
  await screenshot("history-list");
  await page.keyboard.press("Enter");
  await until(
    "the earlier session reopened",
    async () =>
      (await settlePendingIfAsked()) === undefined &&
      (await transcriptText()).includes("MCP servers: e2e-files") &&
      !(await transcriptText()).includes("And the carpenter") &&
      (await transcript.getAttribute("data-session-id")) !== current &&
      (await noticeCount(RESUMED)) >= 1 &&
      (await ready()),
    30_000,
  );
  await screenshot("history-reopened");
}

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
  await page.keyboard.type(SECRET);
  await page.keyboard.press("Enter");
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
  await page.keyboard.type("not-the-right-token-000000");
  await page.keyboard.press("Enter");
  const toast = page.locator(".notification-toast", { hasText: "refused the token (HTTP 401" });
  await until("the wrong-token notification", async () => (await toast.count()) > 0, 30_000);
  await screenshot("remote-wrong-token");
  await toast.first().locator(".monaco-button", { hasText: "Enter Token" }).click();
  await until("the token box again", tokenAsked, 15_000);
  await page.keyboard.type(REMOTE_TOKEN);
  await page.keyboard.press("Enter");
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
  await page.keyboard.type(REMOTE_TOKEN);
  await page.keyboard.press("Enter");
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

let exitCode = 1;
try {
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await until(
    "the ACP status bar item (extension activated)",
    async () => (await page.locator(".statusbar-item", { hasText: "ACP" }).count()) > 0,
    90_000,
  );

  await scenario("open the chat; the demo agent starts and a session opens", async () => {
    await runCommand("ACP: Open Chat");
    await chat.locator("#status").waitFor({ timeout: 30_000 });
    await until("the agent to be ready", async () => (await chat.locator("#status").getAttribute("data-state")) === "ready", 60_000);
    await until("the session notice", async () => (await chat.locator(".notice", { hasText: NEW_SESSION }).count()) === 1);
    const status = await chat.locator("#status").textContent();
    if (!/acp demo agent/i.test(status ?? "")) throw new Error(`unexpected agent title in the chat header: ${status}`);
    await screenshot("chat-open");
  });

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

  // ---- issue 11: crash, MCP, reload, history, sign-in (scenarios of their own) ------------

  await scenario(
    "crash mid-answer: exit code and stderr in the chat and a notification; the conversation kept and the same session resumed",
    crashKeepsTheConversation,
  );
  await scenario("MCP servers from the settings reach session/new (the http one left out: not advertised)", mcpServersReachTheAgent);
  await scenario("reload the window: the conversation is shown again and continues in the same session", reloadAndContinue);
  await scenario("history: an earlier session reopened from the list (session/resume)", reopenFromHistory);

  await scenario("sensitive write: acp-demo.txt links into .git; the write modal, Review changes, Refuse; nothing written", async () => {
    // The demo agent only ever writes acp-demo.txt; a link by that name into a repository's
    // .git makes its write one that git would execute (core.fsmonitor, hooks). The extension
    // classifies the real path (acp-client) and asks, whatever the agent was allowed before.
    const repo = path.join(workspace, "e2e-repo");
    const gitConfig = path.join(repo, ".git", "config");
    const original = "[core]\n\trepositoryformatversion = 0\n";
    fs.mkdirSync(path.dirname(gitConfig), { recursive: true });
    fs.writeFileSync(gitConfig, original);
    fs.rmSync(demoFile, { force: true });
    fs.symlinkSync(path.join("e2e-repo", ".git", "config"), demoFile);
    try {
      await newSession();
      await sendPrompt("Write the demo file through the link");
      await (await dialogButton("Allow this write")).click();
      // Then the extension's own question about the write.
      const writeModal = async () => {
        await until(
          "the sensitive-write modal",
          async () => ((await dialog.textContent()) ?? "").includes("The agent wants to write a file that can change what runs"),
          60_000,
        );
        const text = (await dialog.textContent()) ?? "";
        for (const want of [
          `write ${gitConfig} (git runs what its directory configures`,
          `the agent asked for ${demoFile}, which leads there`,
          "-[core]",
          "+The acp demo agent was asked:",
        ]) {
          if (!text.includes(want)) throw new Error(`the write modal lacks ${JSON.stringify(want)}: ${text}`);
        }
        for (const b of ["Review changes", "Allow write", "Refuse"])
          if (!(await dialog.locator(".dialog-buttons .monaco-button", { hasText: b }).count()))
            throw new Error(`the write modal has no ${b} button`);
      };
      await writeModal();
      await screenshot("sensitive-write-modal");
      await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).click();
      // The diff editor opens with the old and new text, and the question comes back.
      await until(
        "the review diff editor tab",
        async () => (await page.locator(".tab", { hasText: "agent's write: review before allowing" }).count()) > 0,
        15_000,
      );
      await writeModal();
      await screenshot("sensitive-write-review");
      await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Refuse" }).click();
      await turnEnds("end_turn");
      const failed = chat.locator(".tool.status-failed", { hasText: `Write ${DEMO_FILE}` });
      await until(
        "the write tool call to fail with the refusal",
        async () =>
          (await failed.count()) === 1 &&
          ((await failed.textContent()) ?? "").includes("permission denied: the user did not allow writing"),
        15_000,
      );
      if (fs.readFileSync(gitConfig, "utf8") !== original) throw new Error(".git/config was changed although the write was refused");
      if (!fs.lstatSync(demoFile).isSymbolicLink()) throw new Error("the link was replaced");
      await until(
        "the refusal in the ACP log",
        async () => {
          const l = await acpLog();
          return (
            l.includes(`fs/write_text_file ${gitConfig}: refused by the user`) &&
            /→ #\d+ fs\/write_text_file error -32603 .*permission denied: the user did not allow writing/.test(l)
          );
        },
        10_000,
      );
      await screenshot("sensitive-write-refused");
    } finally {
      fs.rmSync(demoFile, { force: true });
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  await scenario("terminal approval (ask): the modal, Run, the command runs in the terminal panel", async () => {
    await setTerminalApproval("ask");
    fs.rmSync(demoFile, { force: true });
    await newSession();
    await sendPrompt("Run this after I approve it: `echo e2e-approved-output`");
    await terminalModal("echo e2e-approved-output");
    for (const b of ["Run", "Cancel"])
      if (!(await dialog.locator(".dialog-buttons .monaco-button", { hasText: b }).count()))
        throw new Error(`the terminal modal has no ${b} button`);
    if ((await chat.locator(".tool", { hasText: "e2e-approved-output" }).filter({ hasText: "exit code" }).count()) !== 0)
      throw new Error("the command ran before it was approved");
    await screenshot("terminal-approval-modal");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Run" }).click();
    // The process's output reaches the agent (it reports it in the tool call) and the panel.
    await until(
      "the terminal tool call to complete with the output",
      async () =>
        (await chat.locator(".tool.status-completed", { hasText: "e2e-approved-output" }).filter({ hasText: "[exit code 0]" }).count()) ===
        1,
      30_000,
    );
    await until(
      "the output in the terminal panel",
      async () =>
        (await page.locator(".xterm-rows", { hasText: "e2e-approved-output" }).filter({ hasText: "process exited with code 0" }).count()) >
        0,
      15_000,
    );
    // Then the turn goes on to the file-write permission.
    await (await dialogButton("Do not write")).click();
    await turnEnds("end_turn");
    const t = await transcriptText();
    if (!t.includes(`OK, I did not write ${DEMO_FILE}`)) throw new Error(`the turn did not finish normally: ${t}`);
    await until(
      "the started terminal in the ACP log",
      async () => /terminal term-\d+: \["echo","e2e-approved-output"\]/.test(await acpLog()),
      10_000,
    );
    await screenshot("terminal-approved-ran");
    // The session's next command is shown in the same terminal, under its own header line.
    await sendPrompt("Run this after I approve it too: `echo e2e-second-output`");
    await terminalModal("echo e2e-second-output");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Run" }).click();
    await until(
      "both commands, each with its header and exit status, in one terminal",
      async () =>
        (await page
          .locator(".xterm-rows", { hasText: "$ echo e2e-approved-output" })
          .filter({ hasText: "$ echo e2e-second-output" })
          .filter({ hasText: /e2e-second-output\s*\[process exited with code 0\]/ })
          .count()) > 0,
      15_000,
    );
    await (await dialogButton("Do not write")).click();
    await turnEnds("end_turn");
    await screenshot("terminal-session-shared");
  });

  // Cancel and Escape both refuse: the agent gets an error for terminal/create, nothing runs.
  for (const [how, refuse] of [
    ["Cancel", () => dialog.locator(".dialog-buttons .monaco-button", { hasText: "Cancel" }).click()],
    ["Escape", () => page.keyboard.press("Escape")],
  ]) {
    await scenario(`terminal approval (ask): ${how} refuses; no process, the agent gets an error, the turn ends`, async () => {
      const marker = `e2e-refused-${how.toLowerCase()}.txt`;
      fs.rmSync(path.join(workspace, marker), { force: true });
      await newSession();
      await sendPrompt(`Do not let me run \`touch ${marker}\``);
      await terminalModal(`touch ${marker}`);
      if (how === "Cancel") await screenshot("terminal-approval-refuse");
      await refuse();
      // The agent reports the refused call as a failed tool call, then goes on to the write.
      const failed = chat.locator(".tool.status-failed", { hasText: `touch ${marker}` });
      await until("the terminal tool call to fail", async () => (await failed.count()) === 1, 30_000);
      const toolText = (await failed.textContent()) ?? "";
      if (!toolText.includes("could not start") || !toolText.includes("permission denied"))
        throw new Error(`the tool call does not carry the client's error: ${toolText}`);
      await (await dialogButton("Do not write")).click();
      await turnEnds("end_turn");
      if (fs.existsSync(path.join(workspace, marker))) throw new Error(`${marker} exists: the refused command ran`);
      // The extension's log: the refusal and the -32603 answer, and no process for the command.
      const answered = new RegExp(
        `→ #\\d+ terminal/create error -32603 .*permission denied: the user did not allow running touch ${marker.replace(/\./g, "\\.")}`,
      );
      const logText = await until(
        "the refusal and the -32603 answer in the ACP log",
        async () => {
          const l = await acpLog();
          return l.includes(`terminal/create refused by the user: touch ${marker}`) && answered.test(l) && l;
        },
        10_000,
      );
      if (new RegExp(`terminal term-\\d+: \\["touch"`).test(logText)) throw new Error("a terminal was started for the refused command");
      // What the agent received (the raw trace): a JSON-RPC error answering its terminal/create.
      await until(
        "the error response in the raw trace",
        async () =>
          (await acpTrace())
            .split("\n")
            .some(
              (l) =>
                sentText(l) !== undefined &&
                l.includes('"error"') &&
                l.includes(`permission denied: the user did not allow running touch ${marker}`),
            ),
        10_000,
      );
      if ((await page.locator(".xterm-rows", { hasText: marker }).count()) !== 0)
        throw new Error("a terminal panel shows the refused command");
      if (!(await chat.locator("#send").isEnabled())) throw new Error("the chat is still busy");
      if (how === "Cancel") await screenshot("terminal-refused");
    });
  }

  async function selectAgent(name) {
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

  // ---- prompt input, edit review, layout (issue 11 items 2, 5, 7) ----------------------------------
  const lastAgentText = async () => (await chat.locator(".msg.agent").last().textContent()) ?? "";

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
    turnsBefore = await chat.locator(".turn-end").count();
    for (const r of ["end_turn", "cancelled", "error"]) stopCountBefore[r] = await chat.locator(`.turn-end.stop-${r}`).count();
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
    turnsBefore = await chat.locator(".turn-end").count();
    stopCountBefore.end_turn = await chat.locator(".turn-end.stop-end_turn").count();
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

  await scenario("edit review: Review changes opens the diff; after the turn Undo restores the file", async () => {
    fs.writeFileSync(demoFile, "ORIGINAL CONTENT\n");
    await sendPrompt("review me");
    // The terminal step's question (acp.terminal.approval is "ask" by now) comes first: Run.
    await until(
      "the edit's permission question",
      async () => {
        if (!(await dialog.isVisible().catch(() => false))) return false;
        const run = dialog.locator(".dialog-buttons .monaco-button", { hasText: /^Run$/ });
        if (await run.count()) await run.click();
        return (await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).count()) === 1;
      },
      60_000,
    );
    await screenshot("edit-permission-review-choice");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Review changes" }).click();
    await until(
      "the review diff tab",
      async () => (await page.locator(".tab", { hasText: "review before answering" }).count()) > 0,
      15_000,
    );
    // The same modal comes back, the diff open behind it.
    await until(
      "the same modal again",
      async () =>
        (await dialog.isVisible().catch(() => false)) &&
        ((await dialog.textContent()) ?? "").includes("the change is open in the diff editor"),
      15_000,
    );
    const buttons = await dialog.locator(".dialog-buttons .monaco-button").allTextContents();
    for (const b of ["Allow this write", "Review changes"])
      if (!buttons.some((t) => t.includes(b))) throw new Error(`no ${b} after review: ${buttons}`);
    const focused = await page.evaluate(() => globalThis.document.activeElement?.textContent ?? "");
    log(`permission modal after review: buttons ${JSON.stringify(buttons)}, focus on ${JSON.stringify(focused)}`);
    await screenshot("edit-review-diff");
    await dialog.locator(".dialog-buttons .monaco-button", { hasText: "Allow this write" }).click();
    await until(
      "the proposed change's diff tab closed",
      async () => (await page.locator(".tab", { hasText: "review before answering" }).count()) === 0,
      15_000,
    );
    await until("the edit written", () => fs.readFileSync(demoFile, "utf8").includes("review me"), 30_000);
    await turnEnds("end_turn");
    if ((await chat.locator(".tool-diff", { hasText: "Edit" }).count()) < 1) throw new Error("the overwrite is not shown as an edit");
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    await until("the Keep/Undo row", async () => (await row.count()) === 1, 10_000);
    await screenshot("edit-review-list");
    await row.locator(".edit-undo").click();
    await until("the file restored", () => fs.readFileSync(demoFile, "utf8") === "ORIGINAL CONTENT\n", 15_000);
    await until("the row gone", async () => (await chat.locator("#edits .edit-row").count()) === 0, 10_000);
  });

  /** Answers the turn's questions (Run, then the write's `allow`) until the turn ends. */
  async function answerTurn(allow = "Allow this write") {
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
  async function screenshotThemes(name) {
    const dark = async () => (await page.locator(".monaco-workbench.vs-dark").count()) > 0;
    const was = await dark();
    await screenshot(`${name}-${was ? "dark" : "light"}`);
    await runCommand("Preferences: Toggle between Light/Dark Themes");
    await until("the other theme", async () => (await dark()) !== was, 15_000);
    await screenshot(`${name}-${was ? "light" : "dark"}`);
    await runCommand("Preferences: Toggle between Light/Dark Themes");
    await until("the theme back", async () => (await dark()) === was, 15_000);
  }

  await scenario("per-hunk review: Reject one change from the chat, Accept the other in the diff editor (CodeLens)", async () => {
    await newSession();
    const asked = "hunks please";
    fs.writeFileSync(demoFile, `The acp demo agent was told:\n\n${asked}\nOLD TAIL\n`);
    await sendPrompt(asked);
    await answerTurn();
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    const hunks = chat.locator("#edits .hunk-row");
    await until("the two changes listed", async () => (await hunks.count()) === 2, 15_000);
    const counts = (await row.locator(".counts").textContent()) ?? "";
    if (!counts.includes("+1") || !counts.includes("\u22122")) throw new Error(`the file's counts are not +1 \u22122: ${counts}`);
    await screenshotThemes("per-hunk-list");
    await row.locator(".edit-diff").click();
    const lenses = page.locator(".codelens-decoration a", { hasText: "Accept change" });
    await until("Accept / Reject above each change in the diff editor", async () => (await lenses.count()) === 2, 20_000);
    await screenshotThemes("per-hunk-diff-codelens");
    // The second change (OLD TAIL removed) rejected from the chat: the line comes back.
    await hunks.nth(1).locator(".hunk-reject").click();
    await until(
      "the rejected change taken out of the file",
      () => fs.readFileSync(demoFile, "utf8") === `The acp demo agent was asked:\n\n${asked}\nOLD TAIL\n`,
      15_000,
    );
    // One change left: the file's row stands for it in the chat; the diff shows one lens.
    await until(
      "one change left, in the chat and the diff",
      async () => (await hunks.count()) === 0 && (await lenses.count()) === 1,
      15_000,
    );
    const left = (await row.locator(".counts").textContent()) ?? "";
    if (!left.includes("+1") || !left.includes("\u22121")) throw new Error(`the change left is not +1 \u22121: ${left}`);
    await lenses.first().click();
    await until(
      "the file reviewed: its row and its diff gone",
      async () => (await row.count()) === 0 && (await lenses.count()) === 0,
      15_000,
    );
    if (fs.readFileSync(demoFile, "utf8") !== `The acp demo agent was asked:\n\n${asked}\nOLD TAIL\n`)
      throw new Error("accepting changed the file");
  });

  await scenario("checkpoints: the files restored to before turn 2, then before turn 1", async () => {
    await newSession();
    fs.writeFileSync(demoFile, "CHECKPOINT BASE\n");
    await sendPrompt("turn one");
    await answerTurn();
    await until("turn one written", () => fs.readFileSync(demoFile, "utf8").includes("turn one"), 15_000);
    await sendPrompt("turn two");
    await answerTurn();
    await until("turn two written", () => fs.readFileSync(demoFile, "utf8").includes("turn two"), 15_000);
    const cps = chat.locator("#edits .checkpoint");
    await until("two checkpoints", async () => (await cps.count()) === 2, 15_000);
    await screenshotThemes("checkpoints");
    await chat.locator('#edits .checkpoint[data-turn="2"]').click();
    await (await dialogButton("Restore")).click();
    await until(
      "the file as turn one left it",
      () => fs.readFileSync(demoFile, "utf8") === "The acp demo agent was asked:\n\nturn one\n",
      15_000,
    );
    await until("one checkpoint left", async () => (await cps.count()) === 1, 15_000);
    await chat.locator('#edits .checkpoint[data-turn="1"]').click();
    await (await dialogButton("Restore")).click();
    await until("the file as before turn one", () => fs.readFileSync(demoFile, "utf8") === "CHECKPOINT BASE\n", 15_000);
    await until(
      "no checkpoint and no review left",
      async () => (await cps.count()) === 0 && (await chat.locator("#edits .edit-row").count()) === 0,
      15_000,
    );
  });

  await scenario("New Session with a pending review asks: Cancel keeps everything, Undo All restores the file", async () => {
    fs.writeFileSync(demoFile, "BEFORE THE PENDING EDIT\n");
    await sendPrompt("pending edit");
    await answerTurn();
    const row = chat.locator("#edits .edit-row", { hasText: DEMO_FILE });
    await until("the pending review", async () => (await row.count()) === 1, 15_000);
    const session = await transcript.getAttribute("data-session-id");
    await chat.locator("#new-session").click();
    await until(
      "the pending-review question",
      async () => (await dialog.isVisible().catch(() => false)) && ((await dialog.textContent()) ?? "").includes("still under review"),
      15_000,
    );
    await screenshot("pending-review-question");
    await (await dialogButton("Cancel")).click();
    await until("the question closed", async () => !(await dialog.isVisible().catch(() => false)), 10_000);
    if ((await row.count()) !== 1 || (await transcript.getAttribute("data-session-id")) !== session)
      throw new Error("Cancel lost the review or the session");
    if (!fs.readFileSync(demoFile, "utf8").includes("pending edit")) throw new Error("Cancel changed the file");
    await chat.locator("#new-session").click();
    await (await dialogButton("Undo All")).click();
    await until("the file restored", () => fs.readFileSync(demoFile, "utf8") === "BEFORE THE PENDING EDIT\n", 15_000);
    await until(
      "a new session without pending edits",
      async () => (await transcript.getAttribute("data-session-id")) !== session && (await row.count()) === 0,
      30_000,
    );
  });

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

  exitCode = results.every(([, ok]) => ok) ? 0 : 1;
} catch (e) {
  log(`e2e setup failed: ${e.stack ?? e}`);
  await screenshot("setup-failure").catch(() => {});
  results.push(["setup", false, e]);
} finally {
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

for (const [name, ok, err] of results) console.log(`${ok ? "ok" : "not ok"} - ${name}${ok ? "" : `: ${err?.message ?? err}`}`);
const passed = results.filter(([, ok]) => ok).length;
console.log(`e2e: ${passed} passed, ${results.length - passed} failed`);
process.exit(results.length > 0 ? exitCode : 1);
