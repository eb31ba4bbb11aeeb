#!/usr/bin/env bash
# Windows without a Windows machine (issue 25): the test suites of the crates that build for
# Windows, compiled for x86_64-pc-windows-gnu and run under wine64 (scripts/test.sh, step
# windows):
#   * acp-core (the engine: framing, JSON-RPC, batches, vectors, properties) and acp-client
#     (every case table, windows.json included): every suite;
#   * acp-native: its unit tests and the suites that need no Unix shell, python agent or Unix
#     files (driver, fast path, answer budget, notifications, trace, vectors, remote sockets),
#     plus process_windows (job objects end an agent's whole tree, PATHEXT lookup, an npm
#     `.cmd` shim run with exactly its arguments) and fs_windows (the confined fs/* service);
#   * acp-cli: `acp.exe` and the suites that need no `sh`/python agent (help, host roles, the
#     trace viewer, the remote server), and `acp chat` with the built-in demo agent completing
#     one turn.
# What does not run, and why: docs/reliability.md, "Windows". Its own build directory
# (target-win, kept between runs like target/) makes a second run a few minutes.
#
# Installs what it needs (Debian's mingw-w64 and wine64; a Rust compiler with the standard
# library's sources, for -Zbuild-std) and is quick when they are there. Toolchain, in order:
#   1. rustup with the x86_64-pc-windows-gnu target installed (users' machines): plain cargo;
#   2. Debian's rustc-web with rust-web-src, extracted (not installed) into the cache, so the
#      system's compiler is left alone: its version is the newest the archive serves (the
#      workspace's dependencies need a newer rustc than Debian 12's first rustc-web).
# Wine 8 lacks bcryptprimitives.dll (whose ProcessPrng Rust's std calls for random bytes): a
# five-line DLL built with mingw (calling RtlGenRandom) goes into the wine prefix.
#
# Exits 0 with a loud notice, without running anything, only when wine cannot start here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${ACP_CACHE_DIR:-$HOME/.cache/acp-rs}
TARGET_DIR=${ACP_WINDOWS_TARGET_DIR:-$ROOT/target-win}
TARGET=x86_64-pc-windows-gnu
# The suites run (see above); the rest of acp-native's and acp-cli's need a Unix shell, python
# agents or Unix files (docs/reliability.md, "Windows").
NATIVE_TESTS=(--lib --test process_windows --test host_driver_answer_budget --test host_driver_fast_path
  --test host_driver_notification_bytes --test host_trace --test host_vectors
  --test remote_sockets --test fs_windows)
CLI_TESTS=(--test cli_help --test host_roles --test cli_trace --test remote_server)
WINE=/usr/lib/wine/wine64
export WINEPREFIX=$CACHE/wineprefix WINEDEBUG=-all
mkdir -p "$CACHE"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() {
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@"
}

missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(mingw-w64)
[ -x "$WINE" ] || missing+=(wine64)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt_install "${missing[@]}" >/dev/null
fi

# --- the compiler -------------------------------------------------------------------------
cargo_env=()
build_std=()
if command -v rustup >/dev/null && rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  echo "toolchain: rustup's $TARGET target"
else
  version=$(apt-cache policy rustc-web | awk '/Candidate:/ { print $2 }')
  [ -n "$version" ] && [ "$version" != "(none)" ] || { echo "no rustc-web in the Debian archive" >&2; exit 1; }
  short=$(echo "$version" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
  prefix=$CACHE/rust-web-$version
  if [ ! -x "$prefix/usr/bin/rustc" ]; then
    echo "toolchain: extracting Debian's rustc-web $version into $prefix"
    [ ${#missing[@]} -gt 0 ] || $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
    llvm=$(apt-cache depends "libstd-rust-web-$short" | awk '/Depends: libllvm/ { print $2; exit }')
    debs=$(mktemp -d)
    # apt's download user must be able to write there.
    chmod 777 "$debs"
    (cd "$debs" && apt-get download -qq "rustc-web=$version" "rust-web-src=$version" \
      "libstd-rust-web-$short=$version" "libstd-rust-web-dev=$version" "$llvm")
    rm -rf "$prefix.tmp" && mkdir -p "$prefix.tmp"
    for deb in "$debs"/*.deb; do dpkg -x "$deb" "$prefix.tmp"; done
    rm -rf "$debs" "$prefix" && mv "$prefix.tmp" "$prefix"
  fi
  echo "toolchain: Debian's rustc-web $version (-Zbuild-std)"
  lib=$(dirname "$(find "$prefix/usr/lib" -name 'librustc_driver-*.so' | head -1)")
  llvm_lib=$(dirname "$(find "$prefix/usr/lib" -name 'libLLVM*.so*' | head -1)")
  cargo_env=(-u RUSTUP_TOOLCHAIN "LD_LIBRARY_PATH=$lib:$llvm_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    "RUSTC=$prefix/usr/bin/rustc" "RUSTDOC=$prefix/usr/bin/rustdoc" RUSTC_BOOTSTRAP=1)
  build_std=(-Zbuild-std=std,panic_abort)
fi

# --- wine ---------------------------------------------------------------------------------
if ! timeout 300 "$WINE" cmd /c echo wine-ok 2>/dev/null | grep -q wine-ok; then
  echo "!!! ====================================================================== !!!"
  echo "!!! wine64 cannot start on this machine: the Windows suites were NOT run.    !!!"
  echo "!!! ====================================================================== !!!"
  exit 0
fi
system32=$WINEPREFIX/drive_c/windows/system32
if [ ! -f "$system32/bcryptprimitives.dll" ]; then
  stub=$(mktemp -d)
  cat >"$stub/bcryptprimitives.c" <<'EOF'
#include <windows.h>
#include <ntsecapi.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  return RtlGenRandom(data, (ULONG)len);
}
EOF
  x86_64-w64-mingw32-gcc -shared -O2 -o "$system32/bcryptprimitives.dll" \
    "$stub/bcryptprimitives.c" -ladvapi32
  rm -rf "$stub"
fi

# --- build and run ------------------------------------------------------------------------
started=$SECONDS
# cargo runs each test executable through wine (the runner), from its package's directory.
wcargo() {
  env "${cargo_env[@]}" \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$WINE" \
    cargo "$1" --locked --target "$TARGET" "${build_std[@]}" --target-dir "$TARGET_DIR" "${@:2}"
}
wcargo test -p acp-core -p acp-client --lib --tests
wcargo test -p acp-native "${NATIVE_TESTS[@]}"
wcargo test -p acp-cli "${CLI_TESTS[@]}"

# `acp chat` with the built-in demo agent (started as `acp.exe demo-agent`): one turn, its
# questions answered no, in a directory of its own.
wcargo build -p acp-cli --bin acp
acp_exe=$TARGET_DIR/$TARGET/debug/acp.exe
chat_dir=$(mktemp -d)
trap 'rm -rf "$chat_dir"' EXIT
set +e
(cd "$chat_dir" && timeout 300 "$WINE" "$acp_exe" chat -p "hello from wine" --deny \
  >"$chat_dir/out" 2>"$chat_dir/err")
code=$?
set -e
if [ "$code" -ne 0 ] || ! grep -qF 'You said: "hello from wine"' "$chat_dir/out" ||
  ! grep -qF 'connected to acp demo agent' "$chat_dir/err" ||
  ! grep -qF 'OK, I did not write acp-demo.txt.' "$chat_dir/out"; then
  echo "acp chat under wine64 failed (exit $code):" >&2
  cat "$chat_dir/out" "$chat_dir/err" >&2
  exit 1
fi
echo "acp chat under wine64: the demo agent's turn completed (exit 0)"
echo "windows step: build and suites took $((SECONDS - started))s"
