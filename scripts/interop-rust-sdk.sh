#!/usr/bin/env bash
# Interop with the official ACP Rust SDK (`agent-client-protocol` 5.x), both directions:
# benches/acp-bench/tests/interop_rust_sdk.rs. It lives in the bench crate (its own Cargo
# workspace, which already depends on the SDK) so the main workspace's `cargo test` never
# compiles the SDK. Release profile with `--features native`, as scripts/bench.sh builds it, so
# the dependencies bench.sh built are reused.
#
# The SDK's client spawns our `acp demo-agent`: target/release/acp, built here (incremental;
# scripts/test-browser.sh builds the same binary earlier in scripts/test.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release -p acp-cli
export ACP_BIN="$ROOT/target/release/acp"
# interop_http_server: the official HTTP transport's client (agent-client-protocol-http 5,
# HttpClient over SSE and WebSocket) against `acp serve --http -- acp demo-agent`.
# interop_http_client: our client (acp_native::remote::client) against the official server
# (AcpHttpServer, behind a bearer-token check) hosting an SDK agent, over SSE and WebSocket.
exec cargo test --release --features native --manifest-path benches/acp-bench/Cargo.toml \
  --test interop_rust_sdk --test interop_http_server --test interop_http_client "$@"
