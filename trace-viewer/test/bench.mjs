// `acp trace` on a large trace: how long the index takes, what it costs in memory, how fast
// the API answers, and whether the page stays responsive (headless Chromium: time to the
// first rows, a jump to the middle, the longest main-thread task). Prints a table for
// docs/benchmarks.md. Not a test: nothing here fails on a time.
//
//   node trace-viewer/test/bench.mjs [--size 1G] [--file FILE] [--keep]
//
// Environment: ACP_BIN (default target/release/acp), CHROMIUM (default /usr/bin/chromium).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { makeTrace, parseSize } from "./make-trace.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const ACP = process.env.ACP_BIN ?? join(ROOT, "target", "release", "acp");
const now = () => performance.now();
const ms = (x) => `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

let dir;
let file = arg("--file");
if (!file) {
  dir = mkdtempSync(join(tmpdir(), "acp-trace-bench-"));
  file = join(dir, "trace.ndjson");
  const t0 = now();
  const r = makeTrace(file, parseSize(arg("--size", "1G")));
  console.error(`made ${file}: ${r.bytes} bytes, ${r.lines} lines in ${ms(now() - t0)}`);
}
const size = statSync(file).size;

const acp = spawn(ACP, ["trace", "--no-open", file], { stdio: ["ignore", "pipe", "inherit"] });
const started = now();
const url = await new Promise((ok, no) => {
  acp.stdout.once("data", (d) => ok(String(d).trim()));
  acp.once("exit", (c) => no(new Error(`acp trace exited (${c})`)));
});
const { origin } = new URL(url);
const token = new URL(url).hash.replace("#token=", "");
const api = async (path) => {
  const t0 = now();
  const r = await fetch(`${origin}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  const body = await r.json();
  return { body, ms: now() - t0 };
};
const vm = () => {
  const s = readFileSync(`/proc/${acp.pid}/status`, "utf8");
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)[1]);
  return { hwm: kb("VmHWM") / 1024, rss: kb("VmRSS") / 1024 };
};

const results = [];
const row = (what, value) => {
  results.push([what, value]);
  console.error(`${what}: ${value}`);
};

// The page, opened at once: it must answer while the file is being indexed.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--enable-precise-memory-info"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
await page.addInitScript(() => {
  window.__long = [];
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) window.__long.push(e.duration);
  }).observe({ type: "longtask", buffered: true });
});
const nav = now();
await page.goto(url);
await page.waitForSelector(".tv-row[data-n]", { timeout: 120_000 });
row("page: first rows on screen after navigation (while indexing)", ms(now() - nav));

let firstRows;
let status;
for (;;) {
  status = (await api("/api/status")).body;
  if (firstRows === undefined && status.rows > 0) firstRows = now() - started;
  if (status.fed >= status.size && status.size === size) break;
  await new Promise((r) => setTimeout(r, 50));
}
const indexed = now() - started;
row(
  "trace",
  `${(size / (1 << 30)).toFixed(2)} GiB, ${status.lines.toLocaleString("en-US")} lines, ${status.rows.toLocaleString("en-US")} messages, ${status.turns.toLocaleString("en-US")} turns`,
);
row("API: first rows served after start", ms(firstRows));
row("index: whole file read", `${(indexed / 1000).toFixed(1)} s (${Math.round(size / (1 << 20) / (indexed / 1000))} MiB/s)`);
const mem = vm();
row(
  "acp trace: peak resident memory (VmHWM) after indexing",
  `${Math.round(mem.hwm)} MiB (${((mem.hwm * (1 << 20)) / status.rows).toFixed(0)} bytes a message)`,
);

const rowsAt = async (from, extra = "") => (await api(`/api/rows?from=${from}&count=200${extra}`)).ms;
const pages = [];
for (let i = 0; i < 9; i++) pages.push(await rowsAt(Math.floor((i / 9) * status.rows)));
row("API: a page of 200 rows, no filter (median of 9 places)", ms(median(pages)));
const first = await rowsAt(0, "&group=1");
const again = [];
for (let i = 0; i < 5; i++) again.push(await rowsAt(Math.floor((i / 5) * status.rows * 0.7), "&group=1"));
row("API: updates grouped, first page (the filter computed) / next pages", `${ms(first)} / ${ms(median(again))}`);
const s1 = (await api("/api/summary")).ms;
const s2 = (await api("/api/summary")).ms;
row("API: summary (first / cached)", `${ms(s1)} / ${ms(s2)}`);
const e1 = await rowsAt(0, "&errors=1");
row("API: errors only, first page", ms(e1));
const q1 = await rowsAt(0, "&q=resource%20not%20found");
const q2 = await rowsAt(1000, "&q=resource%20not%20found");
row("API: search the whole file (first page / next page)", `${ms(q1)} / ${ms(q2)}`);
const m1 = (await api(`/api/message?n=${Math.floor(status.rows / 2)}`)).ms;
row("API: one message", ms(m1));
const memAfter = vm();
row("acp trace: peak resident memory after the queries", `${Math.round(memAfter.hwm)} MiB`);

// The page once everything is indexed: jump to the middle, select a row.
await page.evaluate(() => (window.__long = []));
const jump = now();
await page.evaluate(() => {
  const s = document.querySelector(".tv-scroll");
  s.scrollTop = s.scrollHeight / 2;
});
await page.waitForFunction(() => {
  const rows = [...document.querySelectorAll(".tv-rows .tv-row")];
  return rows.length > 5 && rows.every((r) => r.dataset.n) && Number(rows[0].dataset.n) > 1000;
});
row("page: rows on screen after a jump to the middle", ms(now() - jump));
const click = now();
await page.locator(".tv-rows .tv-row[data-n]").nth(3).click();
await page.waitForSelector(".tv-detail .tv-facts");
row("page: a message's detail on screen after a click", ms(now() - click));
const scrolls = now();
for (let i = 0; i < 30; i++) {
  await page.mouse.move(400, 400);
  await page.mouse.wheel(0, 2400);
}
await page.waitForFunction(() => [...document.querySelectorAll(".tv-rows .tv-row")].every((r) => r.dataset.n));
row("page: 30 wheel scrolls of 100 rows, rows on screen", ms(now() - scrolls));
const long = await page.evaluate(() => window.__long);
row("page: longest main-thread task during these", long.length ? ms(Math.max(...long)) : "none over 50 ms");
const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
row("page: JS heap", `${(heap / (1 << 20)).toFixed(1)} MiB`);

await browser.close();
acp.kill("SIGTERM");
if (dir && !process.argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
console.log("| what | measured |\n|---|---|");
for (const [w, v] of results) console.log(`| ${w} | ${v} |`);
