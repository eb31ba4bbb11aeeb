#!/usr/bin/env bash
# The project's one test command (README.md; CI's .ci/run calls it).
#
# Runs every suite on a fresh machine too: each step installs what it needs itself (Debian
# packages, wasm-bindgen-cli at the Cargo.lock version, npm packages, code-server), and is quick
# when everything is already there. Exits non-zero if any suite fails; prints a summary.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()

step() {
  local name=$1
  shift
  echo
  echo "=== [$name] $*"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== [$name] ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== [$name] FAILED ($((SECONDS - start)) s)"
  fi
}

# tmux for the interactive `acp chat` test and HAProxy for the deployment test (each would
# otherwise try to install it itself).
ensure_packages() {
  local missing=()
  command -v tmux >/dev/null || missing+=(tmux)
  command -v haproxy >/dev/null || missing+=(haproxy)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}"
}

step setup ensure_packages
step format cargo fmt --all -- --check
# Lints ([workspace.lints] in Cargo.toml, clippy's defaults), warnings as errors, with the
# default features and with every optional one (draft ACP, the wasm client flavour).
step clippy cargo clippy --workspace --all-targets --locked -- -D warnings
step clippy-all-features cargo clippy --workspace --all-targets --locked --features acp-core/unstable,acp-client/unstable,acp-native/unstable,acp-cli/unstable,acp-wasm/client -- -D warnings
step rust-tests cargo test --workspace --all-targets --locked
step doc-tests cargo test --workspace --doc --locked
# The libraries' API documentation: every public item documented (#![warn(missing_docs)]),
# every intra-doc link resolving, warnings as errors.
step api-docs env RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p acp-core -p acp-client -p acp-native
# acp-native/API.md followed alone: its Cargo lines and examples in a new project, built offline
# and run against `acp demo-agent`.
step api-md scripts/test-api-md.sh
# Unstable (draft) ACP, feature `unstable` (off in the steps above): the engine's and the
# thread's tests with it (tests/vectors/unstable-*, the draft markers), then the tokio driver's
# vector replay and `acp chat` with it.
step unstable-core cargo test --locked -p acp-core -p acp-client --features acp-core/unstable,acp-client/unstable --lib --test vectors --test unstable_typed
step unstable-native cargo test --locked -p acp-native --features unstable --test host_vectors
step unstable-cli cargo test --locked -p acp-cli --features unstable --test cli_unstable
# ACP v2 (draft), feature `unstable_protocol_v2` (off in the steps above): the engine's rules and
# the v2-* vectors, the driver's vector replay, the thread's v2 folding and the session engine's
# (every client case table, session_v2.json included), the supervisor (a v1 agent offered v2),
# the demo agent, `acp chat` and `SupervisedAgent` over v2, v2 over the remote transports (one
# build), and their lints.
step v2-core cargo test --locked -p acp-core -p acp-client --features acp-core/unstable_protocol_v2,acp-client/unstable_protocol_v2 --lib --test vectors --test v2_rules --test cases
step v2-native cargo test --locked -p acp-native --features unstable_protocol_v2 --lib --test host_vectors --test host_v2 --test supervisor
step v2-demo-agent cargo test --locked -p acp-cli --features unstable_protocol_v2 --bin acp --test demo_agent_v2 --test chat_v2 --test supervisor_v2 --test remote_v2
# That step's `acp` (built with unstable_protocol_v2) kept aside for the VS Code e2e's v2 group
# (scripts/test-vscode.sh: later steps rebuild target/debug/acp without the feature).
step v2-demo-agent-keep sh -c 't="${CARGO_TARGET_DIR:-target}"; mkdir -p "$t/acp-v2" && cp "$t/debug/acp" "$t/acp-v2/acp"'
step v2-clippy cargo clippy --locked -p acp-core -p acp-client -p acp-native -p acp-cli -p acp-wasm --all-targets --features acp-core/unstable_protocol_v2,acp-client/unstable_protocol_v2,acp-native/unstable_protocol_v2,acp-cli/unstable_protocol_v2,acp-wasm/client,acp-wasm/unstable_protocol_v2 -- -D warnings
step wasm scripts/test-wasm.sh
step browser scripts/test-browser.sh
step vscode scripts/test-vscode.sh
# Windows without a Windows machine: acp-core, acp-client and most of acp-native and acp-cli built for
# x86_64-pc-windows-gnu and run under wine64 (installs mingw-w64 and wine64 itself).
step windows scripts/test-windows.sh
step fuzz-short scripts/fuzz-short.sh
step bench-short scripts/bench.sh --short
step real-agents scripts/test-real-agents.sh
step interop-rust-sdk scripts/interop-rust-sdk.sh

echo
if [ "$failed" -gt 0 ]; then
  echo "failed suites: ${failures[*]}"
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
