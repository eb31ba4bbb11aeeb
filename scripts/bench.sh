#!/usr/bin/env bash
# Side-by-side benchmarks: acp-rs (acp-core, acp-native, acp-wasm) against the official ACP
# SDKs (Rust `agent-client-protocol` 5.x, TypeScript `@agentclientprotocol/sdk` 2.4.x).
#
#   scripts/bench.sh [--short] [--rounds N] [--only notify,rt-seq,rt-conc,large,scale]
#   scripts/bench.sh --remote-scale [acp-bench remote-scale options: --sessions N, --prompters P, ...]
#
# --remote-scale: remote agents at scale instead (10,000 WebSocket sessions, 10,000 SSE
# sessions over 2,000 connections, to one server process: acp-native's RemoteServer against
# the official agent-client-protocol-http server; benches/acp-bench/src/remote_scale.rs),
# written to benches/acp-bench/target/remote-scale.md. --short also runs its smoke variant
# (200 sessions on each server, each completing a turn; no timing asserted).
#
# Builds benches/acp-bench (its own Cargo workspace, release profile) and the official Rust
# SDK's side, tests/rust-sdk (`rust-sdk-peer`, its own workspace too: the SDK pins another
# version of the schema crate than acp-core), installs the node side (benches/node, npm ci),
# then runs every contestant of each scenario alternately
# (A, B, C, A, B, C, ...), each measurement in its own process, and prints medians and ratios
# as markdown (also written to benches/acp-bench/target/results.md).
# --short: tiny counts and one round; only checks that every contestant completes (for CI).
# Exit status is non-zero when a contestant that can be measured fails (the TS SDK's
# 32 MiB message cap on the 64 MiB case is a documented result, not a failure).
# See docs/benchmarks.md, "Side by side with the official SDKs".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
say() { echo "bench: $*" >&2; }

unavailable=()
features=()
remote_scale=0
short=0
for a in "$@"; do
  case "$a" in
    --remote-scale) remote_scale=1 ;;
    --short) short=1 ;;
  esac
done

# --- node side: the official TypeScript SDK (and acp-wasm, run in node) ---
if [ "$remote_scale" = 1 ]; then
  : # the remote scale benchmark is Rust only
elif command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  if [ ! -f benches/node/node_modules/@agentclientprotocol/sdk/package.json ]; then
    say "installing benches/node (npm ci)"
    if ! (cd benches/node && npm ci --no-audit --no-fund --loglevel=error >&2); then
      unavailable+=(--unavailable "ts=npm ci failed" --unavailable "ts-stdio=npm ci failed")
    fi
  fi
  if [ ! -f acp-wasm/pkg/node/acp_wasm.js ] && [ "${ACP_BENCH_BUILD_WASM:-1}" != 0 ]; then
    say "building acp-wasm (scripts/build-wasm.sh)"
    bash scripts/build-wasm.sh >&2 || say "acp-wasm did not build; its rows are reported as not measurable"
  fi
  if [ ! -f acp-wasm/pkg/node/acp_wasm.js ]; then
    unavailable+=(--unavailable "wasm=the acp-wasm package does not build yet (scripts/build-wasm.sh)")
  fi
else
  for k in ts ts-stdio wasm; do unavailable+=(--unavailable "$k=node/npm not installed"); done
fi

# --- acp-native: measured once its API has landed (acp-native/API.md) and it builds ---
if [ -f acp-native/API.md ]; then
  features=(--features native)
fi

MANIFEST=benches/acp-bench/Cargo.toml
say "building benches/acp-bench (release)"
if [ ${#features[@]} -gt 0 ] && ! cargo build --release --manifest-path "$MANIFEST" "${features[@]}" >&2; then
  say "acp-bench does not build with acp-native; measuring without it"
  features=()
  why="acp-native contestant did not build against the current acp-native"
  unavailable+=(--unavailable "native=$why" --unavailable "native-stdio=$why")
fi
if [ ${#features[@]} -eq 0 ]; then
  cargo build --release --manifest-path "$MANIFEST" >&2
fi

# --- the official Rust SDK's contestants and its remote server: rust-sdk-peer ---
sdk_peer=()
say "building tests/rust-sdk (release)"
if cargo build --release --manifest-path tests/rust-sdk/Cargo.toml >&2; then
  sdk_peer=(--sdk-peer "$ROOT/tests/rust-sdk/target/release/rust-sdk-peer")
else
  say "tests/rust-sdk does not build; the official Rust SDK is not measured"
fi

mkdir -p benches/acp-bench/target
if [ "$remote_scale" = 1 ]; then
  args=()
  for a in "$@"; do [ "$a" = --remote-scale ] || args+=("$a"); done
  exec benches/acp-bench/target/release/acp-bench remote-scale \
    --md benches/acp-bench/target/remote-scale.md "${sdk_peer[@]}" "${args[@]}"
fi
if [ "$short" = 1 ]; then
  say "remote-scale smoke: 200 sessions per transport on each server, every one completing a turn"
  benches/acp-bench/target/release/acp-bench remote-scale --smoke \
    --md benches/acp-bench/target/remote-scale-smoke.md "${sdk_peer[@]}"
fi
exec benches/acp-bench/target/release/acp-bench drive \
  --node-dir benches/node --md benches/acp-bench/target/results.md \
  "${sdk_peer[@]}" "${unavailable[@]}" "$@"
