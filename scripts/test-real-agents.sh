#!/usr/bin/env bash
# Real agents under `acp chat`, offline (issue 12): the pinned builds of
# @agentclientprotocol/claude-agent-acp, @zed-industries/codex-acp, @google/gemini-cli,
# @qwen-code/qwen-code and opencode-ai from tests/real-agents/, each driven by the fake model
# server tests/real-agents/fake-model-server.mjs on 127.0.0.1.
# The tests are acp-cli/tests/real_agents.rs (ignored by a plain `cargo test`; run here with
# --ignored). Extra arguments go to the test binary (e.g. a name filter: `codex::`).
#
# Installs the agents with `npm ci` into tests/real-agents/node_modules, skipped when they are
# already installed from the same package-lock.json. If the npm registry cannot be reached for
# that install, the suite is SKIPPED with a loud notice and exits 0; any test failure fails.
# Every step is bounded in time.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/tests/real-agents"
export PATH="$HOME/.cargo/bin:$PATH"
say() { echo "test-real-agents: $*"; }

skip_loudly() {
  echo
  echo "################################################################################"
  echo "##  test-real-agents: SKIPPED — $*"
  echo "##  The real-agent tests (claude-agent-acp, codex-acp, gemini-cli, qwen-code, opencode
##  under acp chat) DID NOT RUN."
  echo "################################################################################"
  echo
  exit 0
}

for tool in node npm cargo sha256sum timeout; do
  command -v "$tool" >/dev/null || { say "$tool is needed and missing"; exit 1; }
done

# --- the pinned agents ---------------------------------------------------------------------------
cd "$DIR" || exit 1
stamp=node_modules/.acp-real-agents-installed
want="$(sha256sum package-lock.json | cut -d' ' -f1) node $(node --version)"

# The versions package.json pins are the ones installed (npm ci also checks the lock file).
pins_installed() {
  node -e '
    const fs = require("fs");
    const deps = require("./package.json").dependencies;
    for (const [name, version] of Object.entries(deps)) {
      const file = `node_modules/${name}/package.json`;
      const got = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")).version : "missing";
      if (got !== version) { console.error(`${name}: ${got}, pinned ${version}`); process.exit(1); }
    }
    // opencode-ai links its platform binary here in its postinstall script.
    if (!fs.existsSync("node_modules/opencode-ai/bin/opencode.exe")) {
      console.error("opencode-ai: no bin/opencode.exe (its postinstall did not run?)"); process.exit(1);
    }'
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && pins_installed 2>/dev/null; then
  say "agents installed at the pinned versions"
else
  say "checking the npm registry"
  if ! timeout -k 5 60 npm ping >/dev/null 2>&1; then
    skip_loudly "the npm registry is unreachable (npm ping failed), so the pinned agents cannot be installed"
  fi
  say "npm ci (pinned agents)"
  if ! timeout -k 10 900 npm ci --no-audit --no-fund --loglevel=error; then
    if ! timeout -k 5 60 npm ping >/dev/null 2>&1; then
      skip_loudly "the npm registry became unreachable during npm ci"
    fi
    say "npm ci failed"
    exit 1
  fi
  pins_installed || { say "npm ci did not install the pinned versions"; exit 1; }
  echo "$want" >"$stamp"
fi

# --- build, then run ------------------------------------------------------------------------------
cd "$ROOT" || exit 1
say "building acp and the tests (cargo test -p acp-cli --test real_agents --no-run)"
timeout -k 10 1800 cargo test -p acp-cli --locked --test real_agents --no-run || {
  say "build failed"
  exit 1
}
say "running (claude-agent-acp, codex-acp, gemini-cli, qwen-code, opencode; each acp run bounded at 120 s, the whole at 900 s)"
# Two at a time: the machine has two cores, shared.
timeout -k 10 900 cargo test -p acp-cli --locked --test real_agents -- --ignored --test-threads=2 "$@"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  say "the tests did not finish within 900 s"
fi
exit "$status"
