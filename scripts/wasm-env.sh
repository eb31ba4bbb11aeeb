# shellcheck shell=bash
# Sourced by scripts/wasm-toolchain.sh, scripts/build-wasm.sh, scripts/test-wasm.sh,
# scripts/test-browser.sh and scripts/test-vscode.sh.
# Decides HOW to compile for wasm32-unknown-unknown on this machine, without installing anything:
#
#   rustup : the active rustup toolchain has the wasm32-unknown-unknown target installed
#            -> plain `cargo build --target wasm32-unknown-unknown`
#   debian : Debian's rustc-web/cargo-web/rust-web-src + lld are installed
#            -> /usr/bin/cargo with RUSTC=/usr/bin/rustc, RUSTC_BOOTSTRAP=1, -Zbuild-std, wasm-ld
#   none   : neither is available (run scripts/wasm-toolchain.sh)
#
# Exports ACP_WASM_MODE, ACP_ROOT, ACP_WASM_TARGET_DIR and defines wasm_cargo (a function that
# runs cargo for the wasm target with the right environment; pass cargo arguments after "build")
# and acp_wasm_pkg_stale (whether acp-wasm/pkg must be rebuilt; scripts/test-browser.sh and
# scripts/test-vscode.sh source this file for it).

ACP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ACP_WASM_TARGET_DIR="${ACP_WASM_TARGET_DIR:-$ACP_ROOT/target-wasm}"
export ACP_ROOT ACP_WASM_TARGET_DIR
export PATH="$HOME/.cargo/bin:$PATH"

# Debian's packages install these paths.
ACP_DEBIAN_RUSTC=/usr/bin/rustc
ACP_DEBIAN_CARGO=/usr/bin/cargo

acp_have_rustup_wasm_target() {
  command -v rustup >/dev/null 2>&1 || return 1
  (cd "$ACP_ROOT" && rustup target list --installed 2>/dev/null) | grep -qx 'wasm32-unknown-unknown'
}

acp_have_debian_wasm() {
  [ -x "$ACP_DEBIAN_RUSTC" ] && [ -x "$ACP_DEBIAN_CARGO" ] || return 1
  command -v wasm-ld >/dev/null 2>&1 || return 1
  local sysroot
  sysroot="$("$ACP_DEBIAN_RUSTC" --print sysroot 2>/dev/null)" || return 1
  [ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ]
}

if [ -n "${ACP_WASM_MODE_FORCE:-}" ]; then
  ACP_WASM_MODE="$ACP_WASM_MODE_FORCE"
elif acp_have_rustup_wasm_target; then
  ACP_WASM_MODE=rustup
elif acp_have_debian_wasm; then
  ACP_WASM_MODE=debian
else
  ACP_WASM_MODE=none
fi
export ACP_WASM_MODE

# The wasm target features every build uses, on top of the caller's RUSTFLAGS (with --target
# they reach only the wasm artifacts): bulk memory, which rustc >= 1.87 enables by default, so
# that the Debian rustc (1.85) builds the same module: memcpy/memset are the memory.copy/fill
# instructions instead of byte loops in compiler_builtins (about 5 % of the time acp-wasm spends
# reading and folding a session/update, and 1.1 KB smaller). Every runtime acp-wasm supports has
# it (node >= 12.5, Chrome 75, Firefox 79, Safari 15); wasm-opt is run with it enabled.
ACP_WASM_RUSTFLAGS="-Ctarget-feature=+bulk-memory"

# Runs `cargo <subcommand> --target wasm32-unknown-unknown [build-std flags] <args...>`.
wasm_cargo() {
  local sub="$1"; shift
  local rustflags="${RUSTFLAGS:+$RUSTFLAGS }$ACP_WASM_RUSTFLAGS"
  case "$ACP_WASM_MODE" in
    rustup)
      (cd "$ACP_ROOT" && RUSTFLAGS="$rustflags" cargo "$sub" --target wasm32-unknown-unknown \
        --target-dir "$ACP_WASM_TARGET_DIR" "$@")
      ;;
    debian)
      (cd "$ACP_ROOT" && env -u RUSTUP_TOOLCHAIN RUSTFLAGS="$rustflags" \
        RUSTC="$ACP_DEBIAN_RUSTC" RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
        CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld \
        "$ACP_DEBIAN_CARGO" "$sub" --target wasm32-unknown-unknown \
        -Zbuild-std=std,panic_abort --target-dir "$ACP_WASM_TARGET_DIR" "$@")
      ;;
    *)
      echo "error: no wasm32-unknown-unknown toolchain; run scripts/wasm-toolchain.sh" >&2
      return 1
      ;;
  esac
}

# The wasm-bindgen version pinned in Cargo.lock (wasm-bindgen-cli must match it exactly).
acp_locked_wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' \
    "$ACP_ROOT/Cargo.lock"
}

# wasm-opt: Debian bookworm's binaryen (108) predates the externref/anyref split and corrupts
# the externref table wasm-bindgen emits, so a binaryen >= ACP_MIN_BINARYEN is needed. The one
# used is the first of: $ACP_WASM_OPT, a wasm-opt on PATH that is new enough, the npm package
# `binaryen` (pinned, installed by wasm-toolchain.sh under target-wasm/tools, git-ignored).
ACP_MIN_BINARYEN=116
ACP_NPM_BINARYEN_VERSION=132.0.0
ACP_TOOLS_DIR="${ACP_WASM_TOOLS_DIR:-$ACP_ROOT/target-wasm/tools}"

acp_wasm_opt_version() { # prints the major version of the wasm-opt at $1, or nothing
  "$1" --version 2>/dev/null | sed -n 's/^wasm-opt version \([0-9]*\).*/\1/p' | head -1
}

acp_find_wasm_opt() {
  local cand v
  for cand in ${ACP_WASM_OPT:-} "$(command -v wasm-opt 2>/dev/null || true)" \
              "$ACP_TOOLS_DIR/node_modules/.bin/wasm-opt"; do
    [ -n "$cand" ] && [ -x "$cand" ] || continue
    v="$(acp_wasm_opt_version "$cand")"
    if [ -n "$v" ] && [ "$v" -ge "$ACP_MIN_BINARYEN" ]; then
      echo "$cand"
      return 0
    fi
  done
  return 1
}

# What the packages in acp-wasm/pkg are built from (relative to ACP_ROOT): the engine, the
# client's decisions and thread model (the `client` flavour), the wrapper, the package template,
# the lock file and the build script itself.
ACP_WASM_SOURCES=(acp-core/src acp-core/Cargo.toml acp-client/src acp-client/Cargo.toml
  acp-wasm/src acp-wasm/Cargo.toml acp-wasm/js Cargo.lock scripts/build-wasm.sh scripts/wasm-env.sh)

# Succeeds when the packages must be (re)built for a user of the given .wasm files
# (acp-wasm/pkg/<dir>/acp_wasm_bg.wasm): one of them is missing, or a source is newer than the
# oldest of them.
acp_wasm_pkg_stale() {
  local f oldest="" s
  local sources=()
  for f in "$@"; do
    [ -f "$f" ] || return 0
    if [ -z "$oldest" ] || [ "$f" -ot "$oldest" ]; then oldest="$f"; fi
  done
  [ -n "$oldest" ] || return 0
  for s in "${ACP_WASM_SOURCES[@]}"; do
    [ -e "$ACP_ROOT/$s" ] && sources+=("$ACP_ROOT/$s")
  done
  [ "${#sources[@]}" -gt 0 ] || return 1
  [ -n "$(find "${sources[@]}" -newer "$oldest" -print -quit 2>/dev/null)" ]
}
