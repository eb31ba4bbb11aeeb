#!/usr/bin/env bash
# A new Rust project that follows acp-native/API.md alone compiles and streams a demo-agent
# turn:
#
# 1. each example API.md shows (the ```rust block under a heading naming examples/NAME.rs) is
#    acp-native/examples/NAME.rs, byte for byte (so what CI builds is what the page says);
# 2. `cargo new` a project in a temporary directory, add API.md's ```toml Cargo lines (the path
#    to this checkout put in for path/to/acp-rs), take the client host as src/main.rs and the
#    agent and the layer as src/bin/, and build it offline (the registry cache already holds
#    every crate; this workspace's Cargo.lock keeps the same versions, and its target
#    directory is shared, so only what the new project needs differently is compiled);
# 3. run the client host against `acp demo-agent` (a streamed turn, a file read, a permission
#    answered, a file written), the client host against the example agent, and the layer.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
api=acp-native/API.md
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

fail() {
  echo "test-api-md: $*" >&2
  exit 1
}

# The body of the first ```LANG block after the first line matching PATTERN (a fixed string).
block_after() {
  awk -v pat="$1" -v lang="$2" '
    !seen && index($0, pat) { seen = 1; next }
    seen && !inside && $0 == "```" lang { inside = 1; next }
    inside && $0 == "```" { exit }
    inside { print }
  ' "$api"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The examples on the page are the files.
for name in client agent layer; do
  block_after "(\`examples/$name.rs\`)" rust >"$work/$name.rs"
  [ -s "$work/$name.rs" ] || fail "$api shows no \`\`\`rust block under examples/$name.rs"
  diff -u "acp-native/examples/$name.rs" "$work/$name.rs" ||
    fail "$api's examples/$name.rs differs from acp-native/examples/$name.rs (copy the file into the page)"
done

# 2. A new project with the page's Cargo lines and code.
project=$work/host
cargo new --quiet --vcs none --name acp-api-md-host "$project"
block_after "## Cargo lines" toml >"$work/deps.toml"
grep -q '^acp-native = ' "$work/deps.toml" || fail "$api's Cargo lines name no acp-native"
{
  sed '/^\[dependencies\]$/,$d' "$project/Cargo.toml"
  sed "s|path/to/acp-rs|$root|" "$work/deps.toml"
} >"$project/Cargo.toml.new"
mv "$project/Cargo.toml.new" "$project/Cargo.toml"
cp "$work/client.rs" "$project/src/main.rs"
mkdir -p "$project/src/bin"
cp "$work/agent.rs" "$project/src/bin/api-md-agent.rs"
cp "$work/layer.rs" "$project/src/bin/api-md-layer.rs"
cp Cargo.lock "$project/Cargo.lock"
echo "building $project:"
cat "$project/Cargo.toml"
(cd "$project" && cargo build --offline --quiet --bins)
bin=$CARGO_TARGET_DIR/debug
cargo build --locked --quiet -p acp-cli # the demo agent: acp demo-agent

# 3. Run them.
turn=$work/turn
mkdir "$turn"
printf 'first line of the notes\nsecond\n' >"$turn/notes.txt"
(cd "$turn" && "$bin/acp-api-md-host" --prompt "what is in notes.txt?" "$bin/acp" demo-agent \
  >"$work/out" 2>"$work/err") || fail "the client host failed: $(cat "$work/out" "$work/err")"
expect() { grep -qF -- "$2" "$work/$1" || fail "no '$2' in $1: $(cat "$work/out" "$work/err")"; }
expect out 'Hello from the acp demo agent. You said: "what is in notes.txt?".'
expect out "I wrote acp-demo.txt in $turn."
expect err "[tool] Read $turn/notes.txt"
expect err "[permission] Write $turn/acp-demo.txt: allow once"
expect err "[turn ended: EndTurn]"
grep -qx "what is in notes.txt?" "$turn/acp-demo.txt" || fail "acp-demo.txt was not written"

(cd "$turn" && "$bin/acp-api-md-host" --prompt "write this down" "$bin/api-md-agent" \
  >"$work/out" 2>"$work/err") || fail "the client host and agent failed: $(cat "$work/out" "$work/err")"
expect out "You said: write this down"
expect out "I wrote agent-example.txt."
expect err "[permission] Write $turn/agent-example.txt: allow once"
[ "$(cat "$turn/agent-example.txt")" = "write this down" ] || fail "agent-example.txt: $(cat "$turn/agent-example.txt")"

"$bin/api-md-layer" >"$work/out" 2>"$work/err" || fail "the layer example failed: $(cat "$work/out" "$work/err")"
expect out "read: the text of /project/notes.txt"
expect out "write: refused: fs/write_text_file refused: this client is read-only (-32603)"

echo "test-api-md: API.md's Cargo lines and examples build in a new project; the client host streamed a demo-agent turn and an example-agent turn; the layer refused the write"
