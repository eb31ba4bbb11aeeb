#!/usr/bin/env node
// The 30-turn session, measured in a real VS Code (code-server + headless Chromium, the harness
// of the e2e suite) with the real demo agent: for each turn, the time from Enter to the agent's
// first text in the chat (taken inside the webview: the keydown's clock to the mutation that
// shows the text), the keystroke latency while typing the prompt (each keydown to the next
// animation frame, inside the webview), and the extension host's resident memory before the
// first turn and after the last. Terminal commands are allowed (the harness's setting) and the
// write's permission is answered (Allow) as it comes, so every turn runs the demo agent's whole
// script (plan, thought, terminal, write, a markdown sample with code blocks and a table).
//
//   VSIX=path/to.vsix ACP_BIN=target/release/acp node e2e/bench30.mjs [turns]
//
// Prints one JSON line (`bench30: {...}`) with medians and 95th percentiles; run it for two
// builds side by side (docs/benchmarks.md). Nothing here asserts a time.

import * as fs from "node:fs";
import * as path from "node:path";
import { answerTurn, chat, finish, log, markTurnStart, openWorkbench, screenshot, transcript, userData } from "./harness.mjs";
import * as start from "./scenarios/start.mjs";

const TURNS = Number(process.argv[2] ?? 30);

/** Resident memory (KiB) of the extension host under this run's code-server. */
function extensionHostRss() {
  const procs = [];
  for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
      procs.push({ pid: Number(pid), ppid, cmd });
    } catch {
      /* gone */
    }
  }
  const roots = procs.filter((p) => p.cmd.includes(userData)).map((p) => p.pid);
  const ours = new Set(roots);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs)
      if (!ours.has(p.pid) && ours.has(p.ppid)) {
        ours.add(p.pid);
        grew = true;
      }
  }
  const host = procs.filter((p) => ours.has(p.pid) && /extensionHost/.test(p.cmd));
  if (host.length !== 1) throw new Error(`expected one extension host, found ${host.length}`);
  const status = fs.readFileSync(`/proc/${host[0].pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const round = (x) => Math.round(x * 10) / 10;

let out;
try {
  await openWorkbench();
  await start.run();
  // The probe, inside the chat's webview (playwright's evaluate is not bound by its CSP).
  await chat.locator("body").evaluate((body) => {
    const doc = body.ownerDocument;
    const win = doc.defaultView;
    const p = (win.__bench = { first: [], keys: [], t0: 0, agents: 0, waiting: false });
    const input = doc.getElementById("prompt");
    input.addEventListener(
      "keydown",
      (e) => {
        if (e.key === "Enter" && !e.shiftKey) {
          p.t0 = e.timeStamp;
          p.agents = doc.querySelectorAll(".msg.agent").length;
          p.waiting = true;
          return;
        }
        const t = e.timeStamp;
        win.requestAnimationFrame(() => p.keys.push(win.performance.now() - t));
      },
      true,
    );
    new win.MutationObserver(() => {
      if (!p.waiting) return;
      const msgs = doc.querySelectorAll(".msg.agent");
      if (msgs.length > p.agents && (msgs[msgs.length - 1].textContent ?? "").trim() !== "") {
        p.first.push(win.performance.now() - p.t0);
        p.waiting = false;
      }
    }).observe(doc.getElementById("transcript"), { childList: true, subtree: true, characterData: true });
  });
  const rssBefore = extensionHostRss();
  const input = chat.locator("#prompt");
  for (let i = 1; i <= TURNS; i++) {
    await markTurnStart();
    await input.click();
    await input.pressSequentially(`Turn ${i}: please say hello #markdown`);
    await input.press("Enter");
    await answerTurn(); // the write's permission, allowed
  }
  const p = await chat.locator("body").evaluate((b) => b.ownerDocument.defaultView.__bench);
  const rssAfter = extensionHostRss();
  const chars = ((await transcript.textContent()) ?? "").length;
  if (p.first.length !== TURNS) throw new Error(`first text seen in ${p.first.length} of ${TURNS} turns`);
  out = {
    turns: TURNS,
    transcriptChars: chars,
    firstTextMs: { median: round(quantile(p.first, 0.5)), p95: round(quantile(p.first, 0.95)), max: round(Math.max(...p.first)) },
    keystrokeMs: {
      n: p.keys.length,
      median: round(quantile(p.keys, 0.5)),
      p95: round(quantile(p.keys, 0.95)),
      max: round(Math.max(...p.keys)),
    },
    extensionHostRssMiB: { before: round(rssBefore / 1024), after: round(rssAfter / 1024), grew: round((rssAfter - rssBefore) / 1024) },
    vsix: path.basename(process.env.VSIX ?? "acp-rs-vscode.vsix"),
  };
} catch (e) {
  log(`bench30 failed: ${e.stack ?? e}`);
  await screenshot("bench30-failure").catch(() => {});
} finally {
  await finish();
}
if (!out) process.exit(1);
console.log(`bench30: ${JSON.stringify(out)}`);
