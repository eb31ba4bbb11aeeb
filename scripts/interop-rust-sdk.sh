#!/usr/bin/env bash
# Interop with the official ACP Rust SDK, both directions: `agent-client-protocol` 5.2.0 and its
# HTTP transport `agent-client-protocol-http` 5.0.0 (benches/acp-bench/tests/interop_*.rs), and
# ACP v2 with the SDK's v2 connection types (acp-cli/tests/interop_rust_sdk_v2.rs).
#
# The SDK pins its own version of the schema crate (=1.17.0 for 5.2.0), which cannot be in one
# build with acp-core's (=1.20.0), so the SDK's side is its own program, `rust-sdk-peer`
# (tests/rust-sdk, its own Cargo workspace), and acp-rs's side is the bench crate (its own
# workspace too, which keeps both out of the main workspace's `cargo test`). The tests run the
# peer as a process: what crosses between the two is the wire. Release profile with
# `--features native`, as scripts/bench.sh builds them, so what bench.sh built is reused.
#
# ACP_RUST_SDK_VERSIONS="5.2.0 5.0.0" also runs the suite against the peer built with SDK
# 5.0.0 (tests/rust-sdk/sdk-5.0: the same sources, the previous pin); the default is 5.2.0.
#
# The SDK's client spawns our `acp demo-agent`: target/release/acp, built here (incremental;
# scripts/test-browser.sh builds the same binary earlier in scripts/test.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release -p acp-cli
export ACP_BIN="$ROOT/target/release/acp"

versions="${ACP_RUST_SDK_VERSIONS:-5.2.0}"
for v in $versions; do
  case "$v" in
    5.2.0) dir=tests/rust-sdk ;;
    5.0.0) dir=tests/rust-sdk/sdk-5.0 ;;
    *)
      echo "interop-rust-sdk: no peer for SDK $v (5.2.0, 5.0.0)" >&2
      exit 2
      ;;
  esac
  echo "interop-rust-sdk: the official Rust SDK $v ($dir)" >&2
  cargo build --release --manifest-path "$dir/Cargo.toml"
  export ACP_RUST_SDK_PEER="$ROOT/$dir/target/release/rust-sdk-peer"
  # interop_rust_sdk: the SDK's client against `acp demo-agent` and an acp-native agent, our
  # client against the SDK's agent (stdio).
  # interop_http_server: the official HTTP transport's client (HttpClient over SSE and
  # WebSocket) against `acp serve --http -- acp demo-agent`.
  # interop_http_client: our client (acp_native::remote::client) against the official server
  # (AcpHttpServer, behind a bearer-token check) hosting the SDK's agent, over SSE and WebSocket.
  cargo test --release --features native --manifest-path benches/acp-bench/Cargo.toml \
    --test interop_rust_sdk --test interop_http_server --test interop_http_client "$@"
  # ACP v2 (draft) with the SDK's v2 connection types (the peer's feature `v2`, 5.2.0 only):
  # its v2 client against `acp demo-agent`, `acp chat` against its v2 agent. acp's side is
  # acp-cli built with unstable_protocol_v2 (the debug build scripts/test.sh's v2 steps made).
  if [ "$v" = 5.2.0 ]; then
    cargo test --locked -p acp-cli --features unstable_protocol_v2 --test interop_rust_sdk_v2 "$@"
  fi
done
