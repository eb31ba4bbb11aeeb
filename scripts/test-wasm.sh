#!/usr/bin/env bash
# Everything acp-wasm is tested with, in order; exits non-zero on the first failure:
#   1. scripts/wasm-toolchain.sh   (installs what is missing; quick when all is there)
#   2. scripts/build-wasm.sh       (the npm package at acp-wasm/pkg, both flavours, built once:
#                                   fails when the default one is over the 250 KB goal or the
#                                   client one over its budget)
#   3. acp-wasm/tests/no-env-imports.mjs  (no import from module "env", every module)
#   4. the wrapper's host unit tests with the `client` feature (cargo test --lib: the TypeScript
#      names of policy.rs, thread.rs, restart.rs in step with acp-client's enums; the
#      workspace's `cargo test` builds acp-wasm without the feature)
#   5. wasm-bindgen-test tests of the wrapper under node (cargo test, wasm-bindgen-test-runner)
#   6. node --test on the built packages (round trips, timeouts, oversize, free, conformance
#      vectors on the default flavour; every tests/client/*.json table, Thread, CrashBudget on
#      the client flavour)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

step() { echo; echo "=== test-wasm: $* ==="; }

step "toolchain"
bash "$HERE/wasm-toolchain.sh"
source "$HERE/wasm-env.sh"

step "build"
# The 250 KB goal of the default wasm and the client flavour's budget are enforced here
# (ACP_WASM_ENFORCE_SIZE=0 to only warn).
ACP_WASM_ENFORCE_SIZE="${ACP_WASM_ENFORCE_SIZE:-1}" bash "$HERE/build-wasm.sh"

# ACP v2 (draft): the client flavour with unstable_protocol_v2 (pkg/nodejs-client-v2), for the
# node tests' v2 vectors (vectors.test.mjs; ACP_WASM_V2=1 makes it required there). One more
# wasm build; the default packages stay v1.
step "build (client-v2: ACP v2 test build)"
ACP_WASM_FLAVOURS=client-v2 bash "$HERE/build-wasm.sh"
export ACP_WASM_V2=1

step "no env imports"
node "$ACP_ROOT/acp-wasm/tests/no-env-imports.mjs"

step "host unit tests (--features client)"
(cd "$ACP_ROOT" && cargo test -p acp-wasm --features client --lib --locked)

step "wasm-bindgen-test (node)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}" \
  wasm_cargo test -p acp-wasm --tests

step "node --test (built package)"
cd "$ACP_ROOT/acp-wasm/tests/node"
node --test --test-reporter=spec *.test.mjs
