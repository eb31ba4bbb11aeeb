// End-to-end test of the browser client: headless Chromium loads the page from a tiny static
// server, the page talks to `acp serve --ws` (started by scripts/test-browser.sh) and its demo
// agent. Every wait is on a page state, with a bounded timeout and a message saying what was
// awaited.
//
// Environment (set by scripts/test-browser.sh):
//   ACP_WS_URL         ws:// address of `acp serve --ws`
//   ACP_SERVE_TOKEN    the token it was started with (the page gets it as #token=)
//   ACP_PROJECT_DIR    the agents' cwd (`acp serve --cwd`); also the page's session cwd
//   ACP_SCREENSHOT     where to save a screenshot of the finished allow turn
//   CHROMIUM           the browser (default /usr/bin/chromium)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile, mkdtemp, rm, mkdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), ".."); // examples/browser
const WS_URL = need("ACP_WS_URL");
const TOKEN = need("ACP_SERVE_TOKEN");
const PROJECT = need("ACP_PROJECT_DIR");
const SCREENSHOT = need("ACP_SCREENSHOT");
const WAIT_MS = 30_000;

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run scripts/test-browser.sh)`);
  return v;
}

// ---- a static file server for index.html, style.css and dist/ ------------------------------

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".wasm": "application/wasm" };
let server, base, context, userDataDir;

before(async () => {
  server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname));
    const file = join(ROOT, path === "/" ? "index.html" : path);
    if (!file.startsWith(ROOT + "/") || !TYPES[extname(file)] || file.includes("node_modules")) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)], "cache-control": "no-store" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${server.address().port}`;

  userDataDir = await mkdtemp(join(tmpdir(), "acp-browser-profile-"));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 860 },
    timeout: 60_000,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  context.setDefaultTimeout(WAIT_MS); // every click, fill, goto: bounded
});

after(async () => {
  await context?.close();
  await new Promise((ok) => (server ? server.close(ok) : ok()));
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

// ---- helpers ---------------------------------------------------------------------------------

/** Waits for `selector` to be in state `state`; the error says what we were waiting for. */
async function waitFor(page, selector, what, state = "visible") {
  try {
    await page.locator(selector).first().waitFor({ state, timeout: WAIT_MS });
  } catch {
    const shot = SCREENSHOT.replace(/\.png$/, "-failure.png");
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    const status = await page.locator("#status").textContent().catch(() => "?");
    const last = await page.locator(".turn").last().textContent().catch(() => "");
    throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what} (${selector} ${state});\n` +
      `  status line: ${status}\n  last turn: ${last}\n  screenshot: ${shot}`);
  }
}

/** A fresh page with the client loaded (not connected); `token` (null: none) goes in its #token=. */
async function loadClient(token = TOKEN) {
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()} (${m.location().url})`);
  });
  const query = new URLSearchParams({ url: WS_URL, cwd: PROJECT });
  const hash = token === null ? "" : `#${new URLSearchParams({ token })}`;
  await page.goto(`${base}/index.html?${query}${hash}`);
  await page.locator("#connect:enabled").waitFor({ timeout: WAIT_MS }); // acp-wasm loaded
  return { page, problems };
}

/** A fresh page (and so a fresh connection and agent process), connected, session open. */
async function openClient() {
  const { page, problems } = await loadClient();
  await page.click("#connect");
  await waitFor(page, '#status[data-state="ready"]', "the session to start (initialize, session/new)");
  return { page, problems };
}

async function send(page, text) {
  await page.fill("#prompt", text);
  await page.click("#send");
  await waitFor(page, '#status[data-state="busy"]', "the turn to start");
}

const lastTurn = (page) => page.locator(".turn").last();
const texts = (locator) => locator.evaluateAll((els) => els.map((e) => e.textContent));
/** The agent's text in the last turn: its messages (one element per message entry), joined. */
const agentText = async (page) => (await texts(lastTurn(page).locator(".agent"))).join("");
/** The demo agent's streamed answer to `prompt` (acp-native's demo_agent.rs, answer_chunks). */
const demoAnswer = (prompt) => `Hello from the acp demo agent. You said: "${prompt.trim()}". I am not a model; ` +
  "I show what an ACP agent can do: plans, streamed text, tool calls, permission requests, files and terminals.";

async function waitStop(page, reason) {
  await waitFor(page, ".turn:last-child .stop", "the turn to end");
  assert.equal(await lastTurn(page).locator(".stop").getAttribute("data-stop-reason"), reason);
}

// ---- the scenarios ---------------------------------------------------------------------------

test("allow: streamed text, plan, tool calls, permission, the write lands in the page's files", { timeout: 180_000 }, async () => {
  const { page, problems } = await openClient();
  // notes.txt exists on disk (so the demo agent names it) with other text than the page's copy:
  // the read tool call shows the page's copy, so fs/read_text_file went through the page.
  const prompt = "Please read notes.txt and write a summary";
  await send(page, prompt);

  await page.locator(".turn:last-child .agent", { hasText: "Hello from the acp demo agent" })
    .waitFor({ timeout: WAIT_MS });
  await waitFor(page, ".permission", "the permission prompt");
  // The streamed answer arrives whole: its chunks (several session/updates) end up in one
  // message element (one entry of acp-client's thread), as one text node, the full answer.
  const answer = demoAnswer(prompt);
  await page.waitForFunction((want) => [...document.querySelectorAll(".turn:last-child .agent")]
    .some((e) => e.textContent === want), answer, { timeout: WAIT_MS });
  const message = await page.$$eval(".turn:last-child .agent", (els) => els.map((e) =>
    ({ text: e.textContent, nodes: e.childNodes.length, chunks: Number(e.dataset.chunks), entry: e.dataset.entry })));
  const whole = message.filter((m) => m.text.includes("Hello from the acp demo agent"));
  assert.equal(whole.length, 1, `one message element holds the answer: ${JSON.stringify(message)}`);
  assert.equal(whole[0].text, answer);
  assert.equal(whole[0].nodes, 1, "drawn as one text node, not one per chunk");
  assert.ok(whole[0].chunks > 3, `streamed: it came in ${whole[0].chunks} chunks`);

  // The prompt shows the agent's own options, plus our Cancel.
  const buttons = page.locator(".permission button");
  assert.deepEqual(await texts(buttons), ["Allow this write", "Do not write", "Cancel turn"]);
  assert.deepEqual(await page.$$eval(".permission button[data-option-id]", (bs) => bs.map((b) => b.dataset.optionId)),
    ["allow", "reject"]);
  assert.match(await page.locator(".permission p").textContent(), /Write .*acp-demo\.txt/);
  await mkdir(dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, "-permission.png"), fullPage: true });

  assert.equal(await page.getAttribute('#tools li[data-id^="write"]', "data-status"), "pending");
  await page.click('.permission button[data-option-id="allow"]');
  await waitFor(page, ".permission", "the permission prompt to close", "detached");

  const written = `.file[data-path="${PROJECT}/acp-demo.txt"]`;
  await waitFor(page, written, "acp-demo.txt in the page's file view");
  assert.match(await page.locator(`${written} pre`).textContent(),
    /The acp demo agent was asked:\s+Please read notes\.txt and write a summary/);
  await waitStop(page, "end_turn");

  assert.match(await agentText(page), /I wrote acp-demo\.txt/);
  assert.ok((await agentText(page)).startsWith(answer), "the answer, then what the agent did");
  assert.deepEqual(await page.$$eval("#plan li", (ls) => ls.map((l) => l.dataset.status)),
    ["completed", "completed", "completed"]);
  const tools = await page.$$eval("#tools li", (ls) => ls.map((l) => [l.dataset.id.split("-")[0], l.dataset.status]));
  assert.deepEqual(tools, [["read", "completed"], ["write", "completed"]]);
  assert.match(await page.locator('#tools li[data-id^="read"] .content').textContent(),
    /first line: These notes live in the page/);
  assert.ok(!existsSync(join(PROJECT, "acp-demo.txt")), "the write went to the page, not to the disk");
  assert.deepEqual(problems, []);

  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  await page.close();
});

test("deny, agent text stays text, then cancel from the permission prompt", { timeout: 180_000 }, async () => {
  const { page, problems } = await openClient();
  // The agent echoes the prompt: markup in it must show as text, never become elements.
  const sneaky = `deny me <img src=x onerror="document.title='pwned'"><b>bold</b>`;
  await send(page, sneaky);
  await waitFor(page, ".permission", "the permission prompt");
  await page.click('.permission button[data-option-id="reject"]');
  await waitStop(page, "end_turn");
  const echoed = await agentText(page);
  assert.ok(echoed.includes(sneaky), `the prompt is echoed as text: ${echoed}`);
  assert.match(echoed, /OK, I did not write acp-demo\.txt/);
  assert.equal(await page.locator("#transcript img, #transcript b").count(), 0);
  assert.notEqual(await page.title(), "pwned");
  assert.equal(await page.locator(`.file[data-path="${PROJECT}/acp-demo.txt"]`).count(), 0);
  assert.equal(await page.getAttribute('#tools li[data-id^="write"]', "data-status"), "failed");

  // Second turn, same session: Cancel in the permission prompt sends session/cancel; the
  // engine answers the open request `cancelled` itself (autoAnswered), which closes the prompt.
  await send(page, "now cancel this one");
  await waitFor(page, ".permission", "the second permission prompt");
  await page.click(".permission button.cancel");
  await waitFor(page, ".permission", "the permission prompt to close", "detached");
  await waitStop(page, "cancelled");
  assert.match(await lastTurn(page).locator(".note").textContent(), /answered: sessionCancelled/);
  assert.equal(await page.locator(`.file[data-path="${PROJECT}/acp-demo.txt"]`).count(), 0);
  assert.ok(await page.isEnabled("#send"), "a new prompt can be sent");
  assert.deepEqual(problems, []);
  await page.close();
});

test("no agent at the URL: the page says so and cannot send", { timeout: 60_000 }, async () => {
  const page = await context.newPage();
  // The static server is no WebSocket endpoint: the handshake fails (HTTP 404).
  const query = new URLSearchParams({ url: base.replace("http:", "ws:") + "/nowhere", cwd: PROJECT });
  await page.goto(`${base}/index.html?${query}`);
  await page.click("#connect");
  await waitFor(page, '#status[data-state="disconnected"]', "the failed connection to be reported");
  assert.match(await page.locator("#status").textContent(), /disconnected \(WebSocket code 1006\)/);
  assert.ok(await page.isDisabled("#send"));
  await page.close();
});

test("no token or a wrong one: acp serve refuses the connection, the page says so", { timeout: 60_000 }, async () => {
  for (const [token, hint] of [[null, /Add its token to this page's address/], [`${TOKEN}x`, /is #token= its token/]]) {
    const { page } = await loadClient(token);
    await page.click("#connect");
    await waitFor(page, '#status[data-state="disconnected"]', `the refused connection (token ${token}) to be reported`);
    const status = await page.locator("#status").textContent();
    assert.match(status, /disconnected \(WebSocket code 1006\)/);
    assert.match(status, hint);
    assert.ok(await page.isDisabled("#send"));
    await page.close();
  }
});
