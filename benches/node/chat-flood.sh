#!/bin/sh
# The whole-process flood of docs/benchmarks.md ("acp chat --json, whole process"): `acp chat
# --json --prompt go` and the official TypeScript SDK's client doing the same
# (chat-json-client.mjs), each spawning the same agent (flood-agent.mjs: N agent_message_chunk
# updates, then the prompt's answer) and printing one JSON line per update. Each program is
# timed as a whole process, from its start to its exit, agent included (/usr/bin/time), its
# stdout read through a pipe and its lines counted (N + 1 expected). The two alternate, the order
# rotating each round, after one warm-up run each; medians of ROUNDS runs, and the ratio of the
# medians (TS SDK / acp).
#
#   benches/node/chat-flood.sh [ACP_BINARY] [N] [ROUNDS]
#   (defaults: target/release/acp, 200000, 7; run `cargo build --release -p acp-cli` and
#   `(cd benches/node && npm ci)` first)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
acp=${1:-target/release/acp}
n=${2:-200000}
rounds=${3:-7}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME: one timed run, its wall, user and system seconds appended to $tmp/NAME.
run() {
  case $1 in
    acp) set -- "$1" "$acp" chat --json --prompt go -- node "$here/flood-agent.mjs" "$n" ;;
    ts) set -- "$1" node "$here/chat-json-client.mjs" -- node "$here/flood-agent.mjs" "$n" ;;
  esac
  name=$1
  shift
  lines=$(/usr/bin/time -f '%e %U %S' -o "$tmp/last" "$@" 2>/dev/null | wc -l)
  if [ "$lines" -ne $((n + 1)) ]; then
    echo "$name printed $lines lines, not $((n + 1))" >&2
    exit 1
  fi
  cat "$tmp/last" >>"$tmp/$name"
}

run acp && run ts && rm -f "$tmp/acp" "$tmp/ts" # the warm-up
i=0
while [ "$i" -lt "$rounds" ]; do
  if [ $((i % 2)) -eq 0 ]; then run acp && run ts; else run ts && run acp; fi
  i=$((i + 1))
done

# median FILE COLUMN (1 wall, 2 user, 3 system, 4 user + system)
median() {
  awk -v c="$2" '{ print (c == 4 ? $2 + $3 : $c) }' "$1" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
for who in acp ts; do
  printf '%-4s wall %6.3f s  cpu %6.3f s  (medians of %s; runs: %s)\n' "$who" \
    "$(median "$tmp/$who" 1)" "$(median "$tmp/$who" 4)" "$rounds" \
    "$(awk '{ printf "%s%s", sep, $1; sep = " " }' "$tmp/$who")"
done
awk -v tw="$(median "$tmp/ts" 1)" -v aw="$(median "$tmp/acp" 1)" \
  -v tc="$(median "$tmp/ts" 4)" -v ac="$(median "$tmp/acp" 4)" \
  'BEGIN { printf "TS SDK / acp: wall %.2fx, cpu %.2fx\n", tw / aw, tc / ac }'
