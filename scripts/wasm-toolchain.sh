#!/usr/bin/env bash
# Installs what building and testing acp-wasm needs, and nothing that is already there:
#   1. a Rust toolchain for wasm32-unknown-unknown:
#      - an installed rustup target (`rustup target list --installed`) is used as is (plain cargo);
#      - otherwise Debian's rustc-web, cargo-web, rust-web-src and lld (apt) with -Zbuild-std.
#        (`rustup target add` is not attempted: it downloads from outside the package registries.)
#   2. wasm-bindgen-cli at exactly the wasm-bindgen version in Cargo.lock (crates.io, cargo install);
#      it also provides wasm-bindgen-test-runner.
#   3. wasm-opt from binaryen >= 116: one on PATH if new enough, else the npm package `binaryen`
#      (pinned; installed under target-wasm/tools). Debian bookworm's binaryen 108 is too old: it
#      rewrites wasm-bindgen's externref table as anyref and the module fails to load.
# Idempotent; takes about a second when everything is present. Prints every decision.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/wasm-env.sh"

say() { echo "wasm-toolchain: $*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

APT_UPDATED=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    say "error: apt-get not found; install these yourself: $*" >&2
    return 1
  fi
  # Update the package lists once if they are empty or the install cannot find a package.
  if [ "$APT_UPDATED" = 0 ] && ! ls /var/lib/apt/lists/*Packages* >/dev/null 2>&1; then
    say "apt-get update (package lists are empty)"
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    APT_UPDATED=1
  fi
  say "apt-get install $*"
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@"; then
    if [ "$APT_UPDATED" = 0 ]; then
      say "apt-get install failed; apt-get update and retry"
      $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
      APT_UPDATED=1
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@"
    else
      return 1
    fi
  fi
}

# --- 1. Rust for wasm32-unknown-unknown ---------------------------------------------------------
case "$ACP_WASM_MODE" in
  rustup)
    say "rust: using the installed rustup target wasm32-unknown-unknown ($(cd "$ACP_ROOT" && rustc --version))"
    ;;
  debian)
    say "rust: using Debian's rustc-web with -Zbuild-std ($($ACP_DEBIAN_RUSTC --version)), linker $(command -v wasm-ld)"
    ;;
  none)
    say "rust: no rustup wasm32-unknown-unknown target installed; installing Debian's rustc-web recipe"
    if ! command -v apt-get >/dev/null 2>&1; then
      say "error: no apt-get here; install the target yourself: rustup target add wasm32-unknown-unknown" >&2
      exit 1
    fi
    apt_install rustc-web cargo-web rust-web-src lld
    unset ACP_WASM_MODE_FORCE
    source "$(dirname "${BASH_SOURCE[0]}")/wasm-env.sh"
    if [ "$ACP_WASM_MODE" != debian ]; then
      say "error: Debian's rustc-web recipe is still not usable after installing it" >&2
      exit 1
    fi
    say "rust: using Debian's rustc-web with -Zbuild-std ($($ACP_DEBIAN_RUSTC --version)), linker $(command -v wasm-ld)"
    ;;
esac

# --- 2. wasm-bindgen-cli == Cargo.lock's wasm-bindgen ---------------------------------------------
want="$(acp_locked_wasm_bindgen_version)"
if [ -z "$want" ]; then
  say "error: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi
have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
have_runner="$(wasm-bindgen-test-runner --version 2>/dev/null | awk '{print $2}' || true)"
if [ "$have" = "$want" ] && [ "$have_runner" = "$want" ]; then
  say "wasm-bindgen-cli: $have already installed (matches Cargo.lock)"
else
  say "wasm-bindgen-cli: have '${have:-none}', Cargo.lock wants $want; cargo install (takes ~10 min)"
  # The host toolchain builds the CLI; it is a native tool.
  cargo install wasm-bindgen-cli --version "$want" --force
  have="$(wasm-bindgen --version | awk '{print $2}')"
  [ "$have" = "$want" ] || { say "error: installed wasm-bindgen $have, want $want" >&2; exit 1; }
fi

# --- 3. wasm-opt (binaryen >= $ACP_MIN_BINARYEN) --------------------------------------------------
if wasm_opt="$(acp_find_wasm_opt)"; then
  say "wasm-opt: using $wasm_opt (version $(acp_wasm_opt_version "$wasm_opt"))"
else
  old="$(command -v wasm-opt 2>/dev/null || true)"
  [ -n "$old" ] && say "wasm-opt: $old is version $(acp_wasm_opt_version "$old"), too old (< $ACP_MIN_BINARYEN: it breaks externref tables)"
  say "wasm-opt: installing the npm package binaryen@$ACP_NPM_BINARYEN_VERSION into ${ACP_TOOLS_DIR#"$ACP_ROOT"/}"
  mkdir -p "$ACP_TOOLS_DIR"
  npm install --prefix "$ACP_TOOLS_DIR" --no-save --no-audit --no-fund --loglevel=error \
    "binaryen@$ACP_NPM_BINARYEN_VERSION"
  wasm_opt="$(acp_find_wasm_opt)" || { say "error: no usable wasm-opt after installing binaryen" >&2; exit 1; }
  say "wasm-opt: using $wasm_opt (version $(acp_wasm_opt_version "$wasm_opt"))"
fi

say "ready (mode=$ACP_WASM_MODE)"
