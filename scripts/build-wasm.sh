#!/usr/bin/env bash
# Builds the acp-wasm npm package at acp-wasm/pkg/:
#   pkg/node/  wasm-bindgen --target nodejs (CommonJS; what node and VS Code load)
#   pkg/web/   wasm-bindgen --target web    (ES module; call the default export init() first)
#   pkg/package.json  (from acp-wasm/js/package.json; exports map node -> node/, browser/default -> web/)
# with the workspace [profile.wasm] (opt-level s, LTO, panic=abort, strip) and wasm-opt -Oz.
# Prints the size (raw and gzip -9) of every .wasm it builds.
# Environment: ACP_WASM_PROFILE (default wasm), ACP_WASM_OUT (default acp-wasm/pkg),
# ACP_WASM_TARGET_DIR (default target-wasm), ACP_WASM_ENFORCE_SIZE=1 (fail over 250 KB), and
# cargo's own CARGO_PROFILE_WASM_* / RUSTFLAGS for variants (see docs/wasm.md).
# Needs the tools of scripts/wasm-toolchain.sh (run that first on a fresh machine).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/wasm-env.sh"

say() { echo "build-wasm: $*"; }

if [ "$ACP_WASM_MODE" = none ]; then
  say "error: no wasm32-unknown-unknown toolchain; run scripts/wasm-toolchain.sh first" >&2
  exit 1
fi
for tool in wasm-bindgen node; do
  command -v "$tool" >/dev/null 2>&1 || { say "error: $tool not found; run scripts/wasm-toolchain.sh" >&2; exit 1; }
done
WASM_OPT="$(acp_find_wasm_opt)" || { say "error: no wasm-opt >= $ACP_MIN_BINARYEN; run scripts/wasm-toolchain.sh" >&2; exit 1; }
want="$(acp_locked_wasm_bindgen_version)"
have="$(wasm-bindgen --version | awk '{print $2}')"
if [ "$have" != "$want" ]; then
  say "error: wasm-bindgen-cli is $have but Cargo.lock has wasm-bindgen $want; run scripts/wasm-toolchain.sh" >&2
  exit 1
fi

PROFILE="${ACP_WASM_PROFILE:-wasm}"
say "mode=$ACP_WASM_MODE profile=$PROFILE target-dir=$ACP_WASM_TARGET_DIR"
wasm_cargo build -p acp-wasm --profile "$PROFILE"

RAW="$ACP_WASM_TARGET_DIR/wasm32-unknown-unknown/$PROFILE/acp_wasm.wasm"
[ -f "$RAW" ] || { say "error: $RAW was not built" >&2; exit 1; }

PKG="${ACP_WASM_OUT:-$ACP_ROOT/acp-wasm/pkg}" # ACP_WASM_OUT: elsewhere, for size experiments
rm -rf "$PKG"
mkdir -p "$PKG"

# Features the Rust wasm32-unknown-unknown target enables by default (rustc >= 1.82/1.87);
# wasm-opt must accept them (wasm-bindgen strips the target_features section).
WASM_OPT_FEATURES=(--enable-mutable-globals --enable-sign-ext --enable-reference-types
  --enable-multivalue --enable-bulk-memory --enable-nontrapping-float-to-int)

for target in nodejs web; do
  dir=node; [ "$target" = web ] && dir=web
  wasm-bindgen --target "$target" --out-dir "$PKG/$dir" --out-name acp_wasm "$RAW"
done
# Both targets get the same wasm bytes (only the JS glue differs): optimize once when so.
say "wasm-opt -Oz ($WASM_OPT)"
"$WASM_OPT" -Oz "${WASM_OPT_FEATURES[@]}" "$PKG/node/acp_wasm_bg.wasm" -o "$PKG/node/acp_wasm_bg.wasm.opt"
if cmp -s "$PKG/node/acp_wasm_bg.wasm" "$PKG/web/acp_wasm_bg.wasm"; then
  cp "$PKG/node/acp_wasm_bg.wasm.opt" "$PKG/web/acp_wasm_bg.wasm"
else
  "$WASM_OPT" -Oz "${WASM_OPT_FEATURES[@]}" "$PKG/web/acp_wasm_bg.wasm" -o "$PKG/web/acp_wasm_bg.wasm.opt"
  mv "$PKG/web/acp_wasm_bg.wasm.opt" "$PKG/web/acp_wasm_bg.wasm"
fi
mv "$PKG/node/acp_wasm_bg.wasm.opt" "$PKG/node/acp_wasm_bg.wasm"
# Tell node how to read each half regardless of the root package.json.
echo '{ "type": "commonjs" }' > "$PKG/node/package.json"
echo '{ "type": "module" }' > "$PKG/web/package.json"

version="$(awk -F'"' '/^\[workspace.package\]/ { w = 1 } w && /^version/ { print $2; exit }' "$ACP_ROOT/Cargo.toml")"
sed "s/\"version\": \"0.0.0\"/\"version\": \"$version\"/" "$ACP_ROOT/acp-wasm/js/package.json" > "$PKG/package.json"
cp "$ACP_ROOT/acp-wasm/API.md" "$PKG/README.md"

size_line() {
  local f="$1"
  printf '  %-60s raw %8d B   gzip -9 %8d B\n' "${f#"$ACP_ROOT"/}" "$(wc -c < "$f")" "$(gzip -9 -c "$f" | wc -c)"
}
say "wasm sizes:"
size_line "$RAW"
size_line "$PKG/node/acp_wasm_bg.wasm"
size_line "$PKG/web/acp_wasm_bg.wasm"

LIMIT="${ACP_WASM_SIZE_LIMIT:-250000}"
node_size="$(wc -c < "$PKG/node/acp_wasm_bg.wasm")"
if [ "$node_size" -gt "$LIMIT" ]; then
  say "warning: the nodejs wasm is $node_size B, over the size goal ($LIMIT B)" >&2
  if [ "${ACP_WASM_ENFORCE_SIZE:-0}" = 1 ]; then exit 1; fi
else
  say "the nodejs wasm is $node_size B: within the size goal ($LIMIT B)"
fi
say "done: $PKG"
