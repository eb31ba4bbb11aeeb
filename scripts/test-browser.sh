#!/usr/bin/env bash
# End-to-end test of the browser client (acp-wasm/examples/browser) in headless Chromium:
#   1. the web-client build of acp-wasm (scripts/build-wasm.sh, only when acp-wasm/pkg is missing
#      or older than its sources: acp-core, acp-client, acp-wasm), and the `acp` binary (cargo
#      decides what to rebuild);
#   2. the example's npm packages (npm ci) and its bundle (npm run build: tsc + esbuild);
#   3. Chromium (apt-get install chromium, only if /usr/bin/chromium is missing);
#   4. `acp serve --ws 127.0.0.1:0` in its own process group (killed, whole group, on exit), in
#      a temporary project directory, with a fresh random token (ACP_SERVE_TOKEN);
#   5. node --test acp-wasm/examples/browser/test/browser.test.mjs: serves the page (the token in
#      its #token=), drives Chromium through full turns (allow, deny, cancel) and refused
#      connections (no token, a wrong one); screenshot at artifacts/browser-client.png;
#   6. the same page against `acp serve --http` (the official HTTP transport's wire): its
#      WebSocket at ws://ADDR/acp, the token as the `acp.token.TOKEN` subprotocol; the allow turn
#      (screenshot at artifacts/browser-client-http.png);
#   7. `acp trace`'s viewer (trace-viewer/): its JavaScript model against the vectors the Rust
#      model answers too, then the page in Chromium over `acp trace` (a recorded session's
#      pairs and durations, a growing file, a hostile trace, the API's checks; screenshot at
#      artifacts/trace-viewer.png, which docs/trace-viewer.png is a copy of).
# Environment: ACP_BIN=path to use an already built `acp` instead of cargo build.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
EXAMPLE="$ROOT/acp-wasm/examples/browser"
say() { echo "test-browser: $*"; }

# --- 1. the wasm package and the acp binary ----------------------------------------------------
# The page loads the client flavour (pkg/web-client: the engine and acp-client's Thread).
source "$HERE/wasm-env.sh"
if acp_wasm_pkg_stale "$ROOT/acp-wasm/pkg/web-client/acp_wasm_bg.wasm"; then
  say "building the wasm package"
  bash "$HERE/wasm-toolchain.sh"
  bash "$HERE/build-wasm.sh"
else
  say "acp-wasm/pkg is up to date"
fi
if [ -n "${ACP_BIN:-}" ]; then
  ACP="$(realpath "$ACP_BIN")"
else
  say "cargo build --release -p acp-cli"
  (cd "$ROOT" && cargo build --release -p acp-cli)
  ACP="$ROOT/target/release/acp"
fi
[ -x "$ACP" ] || { say "error: $ACP is not an executable"; exit 1; }

# --- 2. the example's packages and bundle ------------------------------------------------------
cd "$EXAMPLE"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build

# --- 3. Chromium -------------------------------------------------------------------------------
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  say "installing chromium (apt-get)"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium
fi

# --- 4. acp serve --ws, in its own process group -----------------------------------------------
WORK="$(mktemp -d -t acp-browser-test.XXXXXX)"
SERVE_PID=""
HTTP_PID=""
cleanup() {
  if [ -n "$HTTP_PID" ]; then
    kill -TERM -- "-$HTTP_PID" 2>/dev/null || true
    timeout 5 tail --pid="$HTTP_PID" -f /dev/null 2>/dev/null || true
    kill -KILL -- "-$HTTP_PID" 2>/dev/null || true
  fi
  if [ -n "$SERVE_PID" ]; then
    kill -TERM -- "-$SERVE_PID" 2>/dev/null || true
    # It stops its agents within its grace period; then whatever is left of the group goes.
    timeout 5 tail --pid="$SERVE_PID" -f /dev/null 2>/dev/null || true
    kill -KILL -- "-$SERVE_PID" 2>/dev/null || true
  fi
  [ -f "$WORK/serve.log" ] && sed 's/^/  acp serve: /' "$WORK/serve.log" | tail -n 20
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/project"
# On disk only so the demo agent names it; the page serves its own notes.txt (the test checks).
echo "ON DISK: the page should never show this" > "$WORK/project/notes.txt"
mkfifo "$WORK/serve.err"
# The token every connection must present; the page gets it in its address (#token=).
ACP_SERVE_TOKEN="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
export ACP_SERVE_TOKEN
# setsid: a new session and process group, led by acp (the script is no group leader, so setsid
# execs in place and $! is acp's pid).
setsid "$ACP" serve --ws 127.0.0.1:0 --cwd "$WORK/project" 2>"$WORK/serve.err" &
SERVE_PID=$!
exec 3<"$WORK/serve.err"
WS_URL=""
while IFS= read -r -t 60 -u 3 line; do
  echo "$line" >> "$WORK/serve.log"
  if [[ "$line" =~ listening\ on\ (ws://[^ ]+) ]]; then
    WS_URL="${BASH_REMATCH[1]}"
    break
  fi
done
[ -n "$WS_URL" ] || { say "error: acp serve exited, or did not report its address within 60 s"; exit 1; }
cat <&3 >> "$WORK/serve.log" &   # keep draining its stderr
say "acp serve (pid $SERVE_PID) on $WS_URL"

# --- 5. the browser test -----------------------------------------------------------------------
mkdir -p "$ROOT/artifacts"
ACP_WS_URL="$WS_URL" ACP_PROJECT_DIR="$WORK/project" ACP_SCREENSHOT="$ROOT/artifacts/browser-client.png" \
  node --test --test-reporter=spec test/browser.test.mjs
# The refused connections were refused by acp serve for their token (401), not lost on the way.
for _ in $(seq 100); do
  [ "$(grep -c 'refused (401 Unauthorized)' "$WORK/serve.log")" -ge 2 ] && break
  sleep 0.1
done
[ "$(grep -c 'refused (401 Unauthorized)' "$WORK/serve.log")" -ge 2 ] ||
  { say "error: acp serve did not log two refusals for a missing or wrong token"; exit 1; }

# --- 6. the page against acp serve --http (ws://ADDR/acp) ---------------------------------------
mkfifo "$WORK/http.err"
setsid "$ACP" serve --http 127.0.0.1:0 --cwd "$WORK/project" 2>"$WORK/http.err" &
HTTP_PID=$!
exec 4<"$WORK/http.err"
HTTP_WS_URL=""
while IFS= read -r -t 60 -u 4 line; do
  echo "$line" >> "$WORK/http.log"
  if [[ "$line" =~ and\ (ws://[^\;]+)\; ]]; then
    HTTP_WS_URL="${BASH_REMATCH[1]}"
    break
  fi
done
[ -n "$HTTP_WS_URL" ] || { say "error: acp serve --http did not report its address within 60 s"; exit 1; }
cat <&4 >> "$WORK/http.log" &
say "acp serve --http (pid $HTTP_PID): the page on $HTTP_WS_URL"
ACP_WS_URL="$HTTP_WS_URL" ACP_PROJECT_DIR="$WORK/project" ACP_SCREENSHOT="$ROOT/artifacts/browser-client-http.png" \
  node --test --test-reporter=spec --test-name-pattern="^allow" test/browser.test.mjs

# --- 7. acp trace's viewer --------------------------------------------------------------------
cd "$ROOT/trace-viewer"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci (trace-viewer)"
  npm ci --no-audit --no-fund --loglevel=error
fi
node --test --test-reporter=spec test/model.test.mjs
ACP_BIN="$ACP" ACP_TRACE_SCREENSHOT="$ROOT/artifacts/trace-viewer.png" \
  node --test --test-reporter=spec test/browser.test.mjs
say "ok; screenshots: artifacts/browser-client.png, artifacts/browser-client-http.png, artifacts/trace-viewer.png"
