#!/usr/bin/env bash
# The VS Code extension's suite: build, typecheck, format check and lint, unit tests (node --test, with the real wasm
# engine), package the .vsix, and the end-to-end test in a real VS Code (code-server + headless
# Chromium) against the real demo agent. Exits non-zero if any step fails.
#
# Installs what it needs and is quick when it is there: npm packages (npm ci), the wasm engine
# (scripts/build-wasm.sh when acp-wasm/pkg is missing or older than the Rust sources), the `acp`
# binary (cargo build --release -p acp-cli; incremental), the v2 demo agent (target/acp-v2/acp, left
# by scripts/test.sh's v2-demo-agent step; built when missing), code-server + Node 24 + chromium
# (scripts/install-code-server.sh).
#
#   SKIP_E2E=1              stop after packaging (unit tests only)
#   ACP_E2E_PROFILE=debug   test with target/debug/acp instead of target/release/acp
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXT="$ROOT/vscode-extension"
# The demo agent's build profile: release by default; ACP_E2E_PROFILE=debug reuses `cargo test`'s build.
PROFILE="${ACP_E2E_PROFILE:-release}"
ACP_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/acp"
# The demo agent built with unstable_protocol_v2 (ACP v2, draft), for the e2e's v2 group.
ACP_V2_BIN="${ACP_V2_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/acp-v2/acp}"
say() { echo "test-vscode: $*"; }

# --- prerequisites -------------------------------------------------------------------------------
cd "$EXT"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund
fi

# Rebuilt when the client flavour (nodejs-client, what the extension loads on Node; web-client,
# what its browser entry bundles) or the default one
# is missing, or older than any of their sources (acp-core, acp-client, acp-wasm, Cargo.lock,
# build-wasm.sh: ACP_WASM_SOURCES in wasm-env.sh).
if (source "$ROOT/scripts/wasm-env.sh" &&
  acp_wasm_pkg_stale "$ROOT/acp-wasm/pkg/nodejs-client/acp_wasm_bg.wasm" "$ROOT/acp-wasm/pkg/node/acp_wasm_bg.wasm") ||
  [ ! -f "$ROOT/acp-wasm/pkg/nodejs-client/acp_wasm.js" ] || [ ! -f "$ROOT/acp-wasm/pkg/web-client/acp_wasm.js" ]; then
  say "building the wasm engine (scripts/build-wasm.sh)"
  bash "$ROOT/scripts/wasm-toolchain.sh"
  bash "$ROOT/scripts/build-wasm.sh"
fi

# The ACP v2 build of the engine (pkg/nodejs-client-v2: packaged as dist/acp-wasm-v2 for the
# acp.experimental.protocolV2 setting); scripts/test-wasm.sh builds it too.
if (source "$ROOT/scripts/wasm-env.sh" && acp_wasm_pkg_stale "$ROOT/acp-wasm/pkg/nodejs-client-v2/acp_wasm_bg.wasm") ||
  [ ! -f "$ROOT/acp-wasm/pkg/nodejs-client-v2/acp_wasm.js" ]; then
  say "building the ACP v2 wasm engine (ACP_WASM_FLAVOURS=client-v2 scripts/build-wasm.sh)"
  bash "$ROOT/scripts/wasm-toolchain.sh"
  ACP_WASM_FLAVOURS=client-v2 bash "$ROOT/scripts/build-wasm.sh"
fi

if [ -z "${SKIP_E2E:-}" ]; then
  # The demo agent speaking ACP v2 (draft) for the e2e's v2 group: `acp` built with
  # unstable_protocol_v2. scripts/test.sh's v2-demo-agent step leaves one at target/acp-v2/acp
  # (a copy of its debug build); built here (debug, incremental) only when missing.
  if [ ! -x "$ACP_V2_BIN" ]; then
    say "building the v2 demo agent (cargo build -p acp-cli --features unstable_protocol_v2 -> $ACP_V2_BIN)"
    (cd "$ROOT" && cargo build -p acp-cli --features unstable_protocol_v2 --locked)
    mkdir -p "$(dirname "$ACP_V2_BIN")"
    cp "${CARGO_TARGET_DIR:-$ROOT/target}/debug/acp" "$ACP_V2_BIN"
  fi
  say "building the demo agent (cargo build --profile $PROFILE -p acp-cli)"
  case "$PROFILE" in
    release) cargo_profile=(--release) ;;
    debug) cargo_profile=() ;;
    *) cargo_profile=(--profile "$PROFILE") ;;
  esac
  (cd "$ROOT" && cargo build "${cargo_profile[@]}" -p acp-cli --locked)
  bash "$ROOT/scripts/install-code-server.sh"
fi

# --- build, typecheck, unit tests, package ------------------------------------------------------
say "typecheck"
npx tsc -p . --noEmit
say "format check (prettier; npm run format rewrites) and lint (eslint)"
# The shared trace viewer (../trace-viewer/, bundled into the trace panel) with the same rules.
npx prettier --check . "../trace-viewer/**/*.{js,mjs,ts}"
npx eslint .
say "unit tests"
node esbuild.mjs --tests
# The remote-agent tests (test/unit/remote.test.ts) run `acp serve --http`: with the binary built
# above they must run; with SKIP_E2E they use the newest target/*/acp, or are skipped without one.
# test/unit/v2.test.ts runs the v2 demo agent the same way (ACP_V2_BIN).
if [ -z "${SKIP_E2E:-}" ]; then export ACP_BIN ACP_V2_BIN; fi
ACP_REQUIRE_WASM=1 node --test out/test/
say "package"
rm -f acp-rs-vscode.vsix
npm run --silent package
# (grep without -q reads all its input: with pipefail, -q would make a SIGPIPE'd lister fail the check)
python3 -m zipfile -l acp-rs-vscode.vsix | grep "extension/dist/acp-wasm/acp_wasm_bg.wasm" >/dev/null || { say "the .vsix lacks the wasm engine"; exit 1; }
# The browser entry (package.json "browser") and the web build of the engine it instantiates.
python3 -m zipfile -l acp-rs-vscode.vsix | grep "extension/dist/acp-wasm-v2/acp_wasm_bg.wasm" >/dev/null || { say "the .vsix lacks the ACP v2 wasm engine"; exit 1; }
for f in extension/dist/extension.browser.js extension/dist/acp-wasm-web/acp_wasm_bg.wasm; do
  python3 -m zipfile -l acp-rs-vscode.vsix | grep "$f" >/dev/null || { say "the .vsix lacks $f (the browser entry)"; exit 1; }
done

if [ -n "${SKIP_E2E:-}" ]; then
  say "SKIP_E2E set: not running the end-to-end test"
  exit 0
fi

# --- end to end ---------------------------------------------------------------------------------
say "end-to-end (artifacts in artifacts/vscode-e2e/)"
ACP_BIN="$ACP_BIN" ACP_V2_BIN="$ACP_V2_BIN" VSIX="$EXT/acp-rs-vscode.vsix" ARTIFACTS="$ROOT/artifacts/vscode-e2e" node e2e/run.mjs
