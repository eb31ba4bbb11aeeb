#!/usr/bin/env bash
# Runs every acp-core fuzz target for a short while (FUZZ_SECONDS, default 60 s each), starting
# from the seeds in acp-core/fuzz/seeds/. CI calls it; a crash, an out-of-memory or a timeout
# fails the script and leaves the input in acp-core/fuzz/artifacts/<target>/
# (reproduce: cd acp-core && cargo +nightly fuzz run <target> <file>).
#
# Usage: scripts/fuzz-short.sh [target...]   (default: framer batch connection)
# Needs cargo-fuzz (installed from crates.io if missing) and libFuzzer's -Z flags: the nightly
# toolchain when there is one, else the stable one with RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "$0")/../acp-core"
secs="${FUZZ_SECONDS:-60}"
if [ $# -gt 0 ]; then targets=("$@"); else targets=(framer batch connection); fi

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked || cargo install cargo-fuzz
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  echo "fuzz-short: no nightly toolchain; using stable with RUSTC_BOOTSTRAP=1" >&2
  export RUSTC_BOOTSTRAP=1
fi

cargo "${toolchain[@]}" fuzz build -O
mkdir -p fuzz/logs
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  rm -rf "fuzz/artifacts/$t"
  echo "fuzz-short: $t for ${secs}s"
  status=0
  cargo "${toolchain[@]}" fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -max_len=4096 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
    >"fuzz/logs/$t.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "fuzz/logs/$t.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "fuzz/logs/$t.log" >&2
    echo "fuzz-short: $t FAILED (exit $status); input in acp-core/fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
echo "fuzz-short: no failures"
