#!/usr/bin/env node
// End-to-end test of the packaged extension in a real VS Code: code-server (VS Code's web build,
// installed by scripts/install-code-server.sh) driven by playwright-core in Debian's headless
// Chromium, against the real demo agent (`acp demo-agent` from target/release/acp) and the real
// wasm engine inside the .vsix.
//
// harness.mjs sets up the profile, code-server, the browser and the remote `acp serve --http`,
// and holds the helpers; each file under scenarios/ is one group of scenarios, run below in order
// (later groups start from the state the earlier ones leave: the chat open, the demo agent
// running). Screenshots and logs go to artifacts/vscode-e2e/ (gitignored). Exit code 0 only if
// all pass.
//
// ACP_E2E_GROUPS=edits,composer runs only those groups (after `start`, which every group needs):
// for working on one group; CI runs them all.

import { finish, log, openWorkbench, results, screenshot } from "./harness.mjs";
import * as start from "./scenarios/start.mjs";
import * as basics from "./scenarios/basics.mjs";
import * as lifecycle from "./scenarios/lifecycle.mjs";
import * as consent from "./scenarios/consent.mjs";
import * as composer from "./scenarios/composer.mjs";
import * as edits from "./scenarios/edits.mjs";
import * as agentFeatures from "./scenarios/agentFeatures.mjs";
import * as agents from "./scenarios/agents.mjs";
import * as view from "./scenarios/view.mjs";
import * as multi from "./scenarios/multi.mjs";
import * as restore from "./scenarios/restore.mjs";
import * as web from "./scenarios/web.mjs";
import * as v2 from "./scenarios/v2.mjs";

/** The groups in the order they run. */
const GROUPS = { basics, lifecycle, consent, composer, edits, agentFeatures, agents, view, multi, restore, web, v2 };

const only = process.env.ACP_E2E_GROUPS?.split(",")
  .map((g) => g.trim())
  .filter(Boolean);
for (const g of only ?? []) {
  if (!(g in GROUPS)) {
    console.error(`e2e: no scenario group ${g} (have: ${Object.keys(GROUPS).join(", ")})`);
    await finish();
    process.exit(2);
  }
}

let exitCode = 1;
try {
  await openWorkbench();
  await start.run();
  for (const [name, group] of Object.entries(GROUPS)) {
    if (only && !only.includes(name)) continue;
    log(`=== group ${name}`);
    await group.run();
  }
  exitCode = results.every(([, ok]) => ok) ? 0 : 1;
} catch (e) {
  log(`e2e setup failed: ${e.stack ?? e}`);
  await screenshot("setup-failure").catch(() => {});
  results.push(["setup", false, e]);
} finally {
  await finish();
}

for (const [name, ok, err] of results) console.log(`${ok ? "ok" : "not ok"} - ${name}${ok ? "" : `: ${err?.message ?? err}`}`);
const passed = results.filter(([, ok]) => ok).length;
console.log(`e2e: ${passed} passed, ${results.length - passed} failed`);
if (only) console.log(`e2e: only the groups ${only.join(", ")} (ACP_E2E_GROUPS)`);
process.exit(results.length > 0 ? exitCode : 1);
