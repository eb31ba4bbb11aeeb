// `acp trace` in headless Chromium: a recorded `acp chat --log-rpc` session (two turns with the
// demo agent: a permission question answered, a file read answered with an error, a second
// turn cancelled while its permission question was open) drawn with the right pairs and
// durations; filters and the summary; a file followed as it grows; a hostile trace (HTML,
// escapes, bidi, huge and deeply nested lines) shown as text in a bounded page; the API
// refusing what is not its own page. Every wait is on a page state, bounded, and says what
// it waited for; nothing here measures time.
//
// Environment (scripts/test-browser.sh sets them): ACP_BIN (the acp binary), CHROMIUM
// (default /usr/bin/chromium), ACP_TRACE_SCREENSHOT (default artifacts/trace-viewer.png).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const ACP = process.env.ACP_BIN ?? join(ROOT, "target", "debug", "acp");
const SESSION = join(HERE, "vectors", "session.trace");
const SCREENSHOT = process.env.ACP_TRACE_SCREENSHOT ?? join(ROOT, "artifacts", "trace-viewer.png");
const WAIT_MS = 30_000;

let browser;
let work;
const servers = [];

before(async () => {
  work = mkdtempSync(join(tmpdir(), "acp-trace-browser-"));
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    timeout: 60_000,
  });
});

after(async () => {
  await browser?.close();
  for (const s of servers) s.kill("SIGTERM");
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Starts `acp trace --no-open FILE`; resolves with its URL (printed on stdout). */
function serve(file) {
  const acp = spawn(ACP, ["trace", "--no-open", file], { stdio: ["ignore", "pipe", "pipe"] });
  servers.push(acp);
  let err = "";
  acp.stderr.on("data", (d) => (err += d));
  return new Promise((ok, no) => {
    acp.stdout.once("data", (d) => ok({ url: String(d).trim(), acp }));
    acp.once("exit", (code) => no(new Error(`acp trace exited with ${code}: ${err}`)));
  });
}

async function open(url) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  page.setDefaultTimeout(WAIT_MS);
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("dialog", (d) => {
    problems.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(url);
  await page.waitForSelector(".tv-row[data-n]");
  return { page, problems };
}

/** Two animation frames: what a scroll queued is drawn. */
const drawn = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** The rows on screen all loaded (no placeholder). */
const loaded = (page) => page.waitForFunction(() => [...document.querySelectorAll(".tv-rows .tv-row")].every((r) => r.dataset.n));

/** The row of trace line `line`: on screen, or found scrolling from the top down, a half
 *  screen at a time. */
async function rowOfLine(page, line) {
  const row = page.locator(".tv-rows .tv-row", { has: page.locator(".tv-line", { hasText: new RegExp(`^${line}$`) }) }).first();
  await drawn(page);
  await loaded(page);
  if ((await row.count()) === 0) {
    await page.locator(".tv-scroll").evaluate((s) => (s.scrollTop = 0));
    await drawn(page);
  }
  for (let step = 0; step < 200; step++) {
    await loaded(page);
    if ((await row.count()) > 0) break;
    const moved = await page.locator(".tv-scroll").evaluate((s) => {
      const before = s.scrollTop;
      s.scrollTop += s.clientHeight / 2;
      return s.scrollTop !== before;
    });
    if (!moved) break;
    await drawn(page);
  }
  await row.waitFor({ state: "visible" });
  return row;
}

/** What a row shows: its label, its duration, its classes. */
async function shown(page, line) {
  const row = await rowOfLine(page, line);
  return {
    label: (await row.locator(".tv-lanes").innerText()).replace(/\s+/g, " ").trim(),
    took: (await row.locator(".tv-dur").innerText()).trim(),
    turn: (await row.locator(".tv-turn").innerText()).trim(),
    error: await row.evaluate((r) => r.classList.contains("tv-error")),
    cancel: await row.evaluate((r) => r.classList.contains("tv-cancel")),
  };
}

/** Clicks the row of trace line `line` and waits for its detail. */
async function openDetail(page, line) {
  await (await rowOfLine(page, line)).click();
  await page.waitForFunction((l) => {
    const dt = [...document.querySelectorAll(".tv-detail .tv-facts dt")].find((d) => d.textContent === "line");
    return dt?.nextElementSibling?.textContent.split(",")[0] === l;
  }, String(line));
}

/** Does `action`, which changes the filters, and waits until the viewer has shown the result. */
async function filtered(page, action) {
  const settled = () => page.evaluate(() => document.querySelector(".tv").dataset.settled ?? "0");
  const before = await settled();
  await action();
  await page.waitForFunction((b) => (document.querySelector(".tv").dataset.settled ?? "0") !== b, before);
}

async function setFilters(page, f) {
  await page.locator(".tv-scroll").evaluate((s) => (s.scrollTop = 0));
  await filtered(page, () => page.locator(".tv-f-clear").click());
  if ((await page.locator(".tv-f-group").isChecked()) !== (f.group ?? false))
    await filtered(page, () => page.locator(".tv-f-group").setChecked(f.group ?? false));
  if (f.errors) await filtered(page, () => page.locator(".tv-f-errors").setChecked(true));
  if (f.method) await filtered(page, () => page.locator(".tv-f-method").selectOption(f.method));
}

async function lines(page) {
  await drawn(page);
  await loaded(page);
  return page.locator(".tv-rows .tv-row .tv-line").allInnerTexts();
}

test("a recorded session: pairs, durations, the permission question, the error, the cancelled turn", async () => {
  const { url } = await serve(SESSION);
  const { page, problems } = await open(url);
  await setFilters(page, { group: false });

  // Turn 1: the prompt (line 6), answered at line 46, 610.618 ms later. is answered at line 46, 610.618 ms later.
  assert.deepEqual(await shown(page, 6), {
    label: "session/prompt read notes.txt please",
    took: "611 ms",
    turn: "S1·T1",
    error: false,
    cancel: false,
  });
  // The error: the agent reads acp-demo.txt (line 36), acp answers -32002 (line 37).
  assert.deepEqual(await shown(page, 36), {
    label: "✕ fs/read_text_file /tmp/tracerec2/acp-demo.txt",
    took: "0.51 ms",
    turn: "S1·T1",
    error: true,
    cancel: false,
  });
  const err = await shown(page, 37);
  assert.match(err.label, /^↩ ✕ fs\/read_text_file · -32002 Resource not found: \/tmp\/tracerec2\/acp-demo\.txt/);
  assert.equal(err.took, "0.51 ms");
  // The permission question (line 39), answered allow_once (line 40).
  assert.deepEqual(await shown(page, 39), {
    label: "session/request_permission Write /tmp/tracerec2/acp-demo.txt",
    took: "0.78 ms",
    turn: "S1·T1",
    error: false,
    cancel: false,
  });
  assert.deepEqual(await shown(page, 40), {
    label: "↩ session/request_permission · selected",
    took: "0.78 ms",
    turn: "S1·T1",
    error: false,
    cancel: false,
  });
  await openDetail(page, 39);
  const facts = (await page.locator(".tv-detail .tv-facts").innerText()).replace(/\s+/g, " ");
  assert.match(facts, /answer answered at line 40 after 0\.78 ms/);
  assert.match(facts, /session demo-fece46da-1, turn 1/);
  assert.match(await page.locator(".tv-detail .tv-json").innerText(), /"allow_once"/);
  // Its answer is marked as its pair.
  assert.equal(await (await rowOfLine(page, 40)).evaluate((r) => r.classList.contains("tv-paired")), true);
  await page.screenshot({ path: SCREENSHOT });

  // Turn 2 (line 47) cancelled: the permission question (75) answered `cancelled` (77)
  // after session/cancel (76); the prompt's answer (79) says cancelled, 512.798 ms later.
  assert.deepEqual(await shown(page, 75), {
    label: "⊘ session/request_permission Write /tmp/tracerec2/acp-demo.txt",
    took: "0.64 ms",
    turn: "S1·T2",
    error: false,
    cancel: true,
  });
  assert.deepEqual(await shown(page, 76), { label: "⊘ session/cancel", took: "", turn: "S1·T2", error: false, cancel: true });
  assert.deepEqual(await shown(page, 77), {
    label: "↩ ⊘ session/request_permission · cancelled",
    took: "0.64 ms",
    turn: "S1·T2",
    error: false,
    cancel: true,
  });
  assert.deepEqual(await shown(page, 79), {
    label: "↩ ⊘ session/prompt · cancelled",
    took: "513 ms",
    turn: "S1·T2",
    error: false,
    cancel: true,
  });
  await openDetail(page, 79);
  await page.locator(".tv-detail .tv-link").click();
  await page.waitForFunction(() => document.querySelector(".tv-row.tv-selected .tv-line")?.textContent === "47");

  // Filters: errors only are the failed read and its request; one method; grouped updates.
  await setFilters(page, { errors: true });
  assert.deepEqual(await lines(page), ["36", "37"]);
  await setFilters(page, { method: "session/prompt" });
  assert.deepEqual(await lines(page), ["6", "46", "47", "79"]);
  await setFilters(page, { group: true });
  const grouped = await rowOfLine(page, 9);
  assert.match(await grouped.innerText(), /session\/update ×9 · agent_message_chunk Hello from the acp/);

  // The summary: turns by stop reason, p50/p99 per method, bytes each way, slowest calls.
  await page.locator("button[data-tab=summary]").click();
  await page.waitForSelector(".tv-summary table");
  const summary = await page.locator(".tv-summary").innerText();
  assert.match(summary, /session\/prompt\t2\t2\t0\t1\t513 ms\t611 ms\t611 ms/);
  assert.match(summary, /session\/request_permission\t2\t2\t0\t1\t0\.64 ms\t0\.78 ms\t0\.78 ms/);
  assert.match(summary, /fs\/read_text_file\t3\t3\t1\t0/);
  assert.match(summary, /client\tagent\t19\t/);
  assert.match(summary, /agent\tclient\t60\t/);
  assert.match(summary, /\b6\tsession\/prompt\tclient → agent\t611 ms/);
  // A slow call's row leads back to the timeline.
  await page
    .locator(".tv-summary tr.tv-click", { hasText: /^47session\/promptclient → agent513 ms$/ })
    .first()
    .click();
  await page.waitForFunction(() => document.querySelector(".tv-row.tv-selected .tv-line")?.textContent === "47");
  assert.deepEqual(problems, []);
  await page.close();
});

test("a growing file is followed; a cut last line is said", async () => {
  const file = join(work, "live.ndjson");
  const line = (t, msg, kind, dir = "recv") => JSON.stringify({ tMs: t, dir, kind, msg }) + "\n";
  writeFileSync(file, line(1, { jsonrpc: "2.0", id: 0, method: "initialize", params: {} }, "request", "send"));
  const { url } = await serve(file);
  const { page, problems } = await open(url);
  appendFileSync(file, line(21.5, { jsonrpc: "2.0", id: 0, result: {} }, "response"));
  const answer = await rowOfLine(page, 2);
  await page.waitForFunction(() => document.querySelector(".tv-rows .tv-row .tv-dur")?.textContent === "20.5 ms");
  assert.match(await answer.innerText(), /initialize/);
  appendFileSync(file, '{"tMs":30,"dir":"recv","kind":"notif');
  await page.waitForSelector(".tv-notice:has-text('The last line is incomplete (36 bytes from byte')");
  assert.deepEqual(problems, []);
  await page.close();
});

/** A trace made to attack the viewer. */
function hostileTrace() {
  const file = join(work, "hostile.ndjson");
  const html = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
  const up = (t, update, extra = {}) =>
    JSON.stringify({
      tMs: t,
      dir: "recv",
      kind: "notification",
      method: "session/update",
      msg: { jsonrpc: "2.0", method: "session/update", params: { sessionId: html, update }, ...extra },
    });
  const rows = [
    // 1: HTML as a method, a session id and a prompt
    JSON.stringify({
      tMs: 1,
      dir: "send",
      kind: "request",
      id: 1,
      method: html,
      msg: { jsonrpc: "2.0", id: 1, method: html, params: { sessionId: html, prompt: [{ type: "text", text: html }] } },
    }),
    // 2: terminal escapes (clear screen, an OSC 52 clipboard write)
    up(2, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "\u001b[2J\u001b]52;c;cGF3bmVk\u0007 clear screen and a clipboard write" },
    }),
    // 3: bidi override, zero-width characters
    up(3, { sessionUpdate: "tool_call", title: "invoice_\u202egnp.exe and \u200bzero\u2066width" }),
    // 4: a 500,000-character string (under the detail's 1 MiB: folded in the tree)
    up(4, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "z".repeat(500_000) } }),
    // 5: a 20 MiB line (over the 8 MiB the index reads whole)
    up(5, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x".repeat(20 << 20) } }),
    // 6: 8,000 plan entries
    up(6, { sessionUpdate: "plan", entries: Array.from({ length: 8000 }, (_, i) => ({ content: `step ${i} ${html}` })) }),
    // 7: nested 3,000 deep
    up(
      7,
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "deep" } },
      { _meta: JSON.parse("[".repeat(3000) + "]".repeat(3000)) },
    ),
    // 8: the extension's format, 9 MiB
    "12 ← " +
      JSON.stringify({
        jsonrpc: "2.0",
        method: "session/update",
        params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "y".repeat(9 << 20) } } },
      }),
    // 9: what the agent wrote that was not JSON
    `{"tMs":13,"dir":"recv","kind":"invalid","line":${JSON.stringify(html + "\u001b[31m")}}`,
    // 10: not a trace line
    html,
  ];
  writeFileSync(file, rows.join("\n") + "\n");
  return { file, html };
}

test("a hostile trace is shown as text and the page stays bounded", async () => {
  const { file, html } = hostileTrace();
  const { url } = await serve(file);
  const { page, problems } = await open(url);
  await setFilters(page, { group: false });
  const count = () => page.evaluate(() => document.getElementsByTagName("*").length);
  const injected = () =>
    page.evaluate(() => ({ pwned: window.__pwned ?? null, tags: document.querySelectorAll(".tv img, .tv script, .tv iframe").length }));

  const first = await shown(page, 1);
  assert.equal(first.label, `${html} ${html}`, "the method and the prompt are text");
  assert.match((await shown(page, 2)).label, /␛\[2J␛\]52;c;cGF3bmVk\\u0007 clear screen/);
  assert.match((await shown(page, 3)).label, /invoice_\\u202egnp\.exe and \\u200bzero\\u2066width/);
  assert.match(
    (await shown(page, 9)).label,
    /^✕ invalid message <img src=x onerror="window.__pwned=1"><script>window.__pwned=2<\/script>␛\[31m$/,
  );
  assert.match((await shown(page, 10)).label, /^not a trace line: <img src=x/);

  // Each of them in the detail pane, then another click still answers: the page is alive.
  for (const line of [1, 4, 5, 6, 7, 8, 9, 10]) {
    await openDetail(page, line);
    assert.ok((await count()) < 6000, `line ${line}: the page holds ${await count()} elements`);
  }
  // The long string is folded, the lines over the limit are shown from their start.
  await openDetail(page, 4);
  await page.waitForSelector(".tv-detail button:has-text('499,600 more characters')");
  await openDetail(page, 5);
  await page.waitForSelector(".tv-detail .tv-notice:has-text('only its start is shown')");
  await page.waitForSelector(".tv-detail button:has-text('Show the other 983,040 characters')");
  await openDetail(page, 8);
  await page.waitForSelector(".tv-detail .tv-notice:has-text('only its start is shown')");
  // 8,000 entries: 200 built, the rest on demand.
  await openDetail(page, 6);
  await page.locator(".tv-detail summary", { hasText: '"entries"' }).click();
  await page.waitForSelector(".tv-detail button:has-text('show 200 more of 7,800')");
  assert.ok((await count()) < 6000, `after opening 8,000 entries the page holds ${await count()} elements`);
  // Search reads every line again, the 20 MiB one included.
  await filtered(page, () => page.locator(".tv-f-search").fill("onerror"));
  assert.deepEqual(await lines(page), ["1", "2", "3", "4", "5", "6", "7", "9", "10"]);

  assert.deepEqual(await injected(), { pwned: null, tags: 0 });
  assert.deepEqual(problems, []);
  await page.close();
});

function get(url, headers) {
  return new Promise((ok, no) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, headers }, (res) => {
      res.resume();
      res.on("end", () => ok({ status: res.statusCode, headers: res.headers }));
    });
    req.on("error", no);
    req.end();
  });
}

test("the API answers only its own page, with the token", async () => {
  const { url } = await serve(SESSION);
  const u = new URL(url);
  const token = u.hash.slice("#token=".length);
  const api = `${u.origin}/api/status`;
  const bearer = { authorization: `Bearer ${token}` };
  assert.equal((await get(api, bearer)).status, 200);
  assert.equal((await get(api, {})).status, 401, "no token");
  assert.equal((await get(api, { authorization: "Bearer 0000" })).status, 401, "a wrong token");
  assert.equal((await get(api, { ...bearer, host: `rebound.example:${u.port}` })).status, 421, "DNS rebinding");
  assert.equal((await get(api, { ...bearer, origin: "http://localhost:1" })).status, 403, "another page");
  const page = await get(`${u.origin}/`, {});
  assert.equal(page.status, 200);
  assert.match(page.headers["content-security-policy"], /script-src 'self'/);
  assert.equal(page.headers["access-control-allow-origin"], undefined);
});

test("bad input gets a clear error", async () => {
  const run = (args) =>
    new Promise((ok) => {
      const p = spawn(ACP, args, { stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      p.stderr.on("data", (d) => (err += d));
      p.on("exit", (code) => ok({ code, err }));
    });
  const missing = await run(["trace", "--no-open", join(work, "nope.ndjson")]);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /cannot read .*nope\.ndjson: No such file/);
  const notTrace = join(work, "notes.md");
  writeFileSync(notTrace, "# notes\n\nsome text\n");
  const wrong = await run(["trace", "--no-open", notTrace]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.err, /not a trace this viewer reads: its first 2 line\(s\)/);
  mkdirSync(join(work, "adir"), { recursive: true });
  assert.match((await run(["trace", "--no-open", join(work, "adir")])).err, /is a directory|Is a directory/);
});
