//! Interop with the official ACP TypeScript SDK (`@agentclientprotocol/sdk`, pinned by
//! `tests/interop/package-lock.json`), in both directions, over real stdio pipes:
//!
//! - our client against their agent: `acp chat ... -- node tests/interop/ts-agent.mjs`;
//! - their client against our agent: `node tests/interop/ts-client.mjs ... -- acp demo-agent`;
//! - their client over the SDK's WebSocket transport through `acp serve --ws`, to our agent and
//!   to theirs;
//! - their client against their agent (`tests/interop/selftest.mjs`), which proves the fixtures.
//!
//! Besides the SDK's own validation of every request and notification it receives, the two
//! programs check every *response* they receive against the SDK's zod schemas
//! (`tests/interop/validate.mjs`); the tests fail on any violation.
//!
//! Needs `node` (>= 18) on PATH; installs the npm packages itself (`npm ci`, once, under a file
//! lock) when `tests/interop/node_modules` is missing or stale. Every child runs in its own
//! process group and is killed, group and all, when it overruns its bound.

#[path = "../../acp-native/tests/host_support/mod.rs"]
mod host_support;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use host_support::TempDir;
use serde_json::Value;

/// Our binary.
const ACP: &str = env!("CARGO_BIN_EXE_acp");
/// Bound for one whole interop run (process start, node start-up, one prompt turn, exit).
const RUN_BOUND: Duration = Duration::from_secs(90);
/// Bound for `npm ci` (a fresh install downloads two small packages).
const NPM_BOUND: Duration = Duration::from_secs(300);

/// What the TypeScript agent writes through the client's `fs/write_text_file` when allowed.
const TS_AGENT_FILE: &str = "ts-agent-output.txt";
const TS_AGENT_CONTENT: &str = "written by the TypeScript SDK agent through fs/write_text_file\n";

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/interop")
        .canonicalize()
        .expect("tests/interop is missing")
}

// ---------------------------------------------------------------------------------------------
// Running children with a bound.

struct Ran {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn describe(&self, what: &str) -> String {
        format!(
            "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// A child in its own process group, stdin closed, stdout read line by line.
struct Running {
    what: String,
    pid: libc::pid_t,
    lines: mpsc::Receiver<String>,
    stdout: String,
    stderr_lines: mpsc::Receiver<String>,
    stderr: String,
    exited: mpsc::Receiver<std::io::Result<std::process::ExitStatus>>,
}

impl Running {
    fn start(what: &str, cmd: &mut Command) -> Running {
        Running::start_with_input(what, cmd, None)
    }

    /// Like [`Running::start`], with `input` written to stdin (then closed) when given.
    fn start_with_input(what: &str, cmd: &mut Command, input: Option<Vec<u8>>) -> Running {
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
        let pid = child.id() as libc::pid_t;
        if let Some(input) = input {
            let mut stdin = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(&input);
            });
        }
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let (line_tx, lines) = mpsc::channel();
        std::thread::spawn(move || read_lines(out, line_tx));
        let (err_tx, stderr) = mpsc::channel();
        std::thread::spawn(move || read_lines(err, err_tx));
        let (exit_tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = exit_tx.send(child.wait());
        });
        Running {
            what: what.to_owned(),
            pid,
            lines,
            stdout: String::new(),
            stderr_lines: stderr,
            stderr: String::new(),
            exited,
        }
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: a plain syscall on the child's pid.
        unsafe { libc::kill(self.pid, sig) };
    }

    fn kill_group(&self) {
        // SAFETY: a plain syscall; the group id is the child's pid (process_group(0)). ESRCH
        // (the group is gone already) is fine.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
    }

    /// Reads stdout until a line satisfies `pred` and returns it; fails (after killing the
    /// group) on EOF or when `bound` passes first.
    fn wait_for_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        bound: Duration,
        looking_for: &str,
    ) -> String {
        self.wait_for(false, pred, bound, looking_for)
    }

    /// [`Running::wait_for_line`] on stderr.
    fn wait_for_stderr_line(
        &mut self,
        pred: impl Fn(&str) -> bool,
        bound: Duration,
        looking_for: &str,
    ) -> String {
        self.wait_for(true, pred, bound, looking_for)
    }

    fn wait_for(
        &mut self,
        on_stderr: bool,
        pred: impl Fn(&str) -> bool,
        bound: Duration,
        looking_for: &str,
    ) -> String {
        let deadline = std::time::Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let (lines, acc) = if on_stderr {
                (&self.stderr_lines, &mut self.stderr)
            } else {
                (&self.lines, &mut self.stdout)
            };
            match lines.recv_timeout(left) {
                Ok(line) => {
                    acc.push_str(&line);
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => {
                    let why = match e {
                        mpsc::RecvTimeoutError::Timeout => format!("not within {bound:?}"),
                        mpsc::RecvTimeoutError::Disconnected => "stdout closed".to_owned(),
                    };
                    self.kill_group();
                    let what = format!("{}: never printed {looking_for} ({why})", self.what);
                    let ran = self.finish(bound);
                    panic!("{}", ran.describe(&what));
                }
            }
        }
    }

    /// Waits for the exit (killing the group and failing when `bound` passes first), then
    /// collects the rest of the output.
    fn finish(&mut self, bound: Duration) -> Ran {
        let (status, overran) = match self.exited.recv_timeout(bound) {
            Ok(status) => (status.expect("wait failed"), false),
            Err(_) => {
                self.kill_group();
                (self.exited.recv().unwrap().expect("wait failed"), true)
            }
        };
        // The leader is gone; kill any descendant still holding the pipes, so readers hit EOF.
        self.kill_group();
        let grace = Duration::from_secs(10);
        let drain = |lines: &mpsc::Receiver<String>, acc: &mut String| loop {
            match lines.recv_timeout(grace) {
                Ok(line) => acc.push_str(&line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    acc.push_str("<still open: some other process holds the pipe>\n");
                    break;
                }
            }
        };
        drain(&self.lines, &mut self.stdout);
        drain(&self.stderr_lines, &mut self.stderr);
        let ran = Ran {
            status,
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        };
        if overran {
            panic!(
                "{}",
                ran.describe(&format!(
                    "{} did not finish within {bound:?} and was killed",
                    self.what
                ))
            );
        }
        ran
    }
}

/// Sends `r`'s lines (terminators kept) to `tx` until EOF.
fn read_lines(r: impl Read, tx: mpsc::Sender<String>) {
    let mut r = std::io::BufReader::new(r);
    loop {
        let mut line = Vec::new();
        match std::io::BufRead::read_until(&mut r, b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if tx
                    .send(String::from_utf8_lossy(&line).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
}

/// Runs `cmd` to completion (stdin closed, own process group); when it overruns `bound`, the
/// whole group is killed and the test fails with everything it printed so far.
fn run(what: &str, cmd: &mut Command, bound: Duration) -> Ran {
    Running::start(what, cmd).finish(bound)
}

// ---------------------------------------------------------------------------------------------
// node and the npm packages.

/// The `node` to use: `$NODE` or `node` on PATH, version >= 18 (web streams in `node:stream`).
fn node() -> &'static str {
    static NODE: OnceLock<String> = OnceLock::new();
    NODE.get_or_init(|| {
        let node = std::env::var("NODE").unwrap_or_else(|_| "node".to_owned());
        let version = Command::new(&node)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "the TypeScript SDK interop tests need Node.js >= 18, but `{node} --version` \
                     failed: {e}. Install Node.js (e.g. `apt-get install nodejs npm`, or \
                     scripts/install-code-server.sh which installs Node 24) or set NODE=/path/to/node."
                )
            });
        let v = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        let major: u32 = v
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        assert!(
            version.status.success() && major >= 18,
            "the TypeScript SDK interop tests need Node.js >= 18; `{node} --version` says {v:?}"
        );
        node
    })
}

/// Makes sure `tests/interop/node_modules` holds the locked package versions, running
/// `npm ci --no-audit --no-fund` at most once per process, under an exclusive file lock so
/// concurrent test processes do not install over each other.
fn npm_deps() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        node();
        let dir = interop_dir();
        let lock_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("interop-npm-ci.lock");
        let lock = std::fs::File::create(&lock_path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
        // SAFETY: flock on a file descriptor we own; released when `lock` is dropped.
        let rc =
            unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        assert_eq!(
            rc,
            0,
            "flock {}: {}",
            lock_path.display(),
            std::io::Error::last_os_error()
        );
        if stale_npm_packages(&dir).is_empty() {
            return;
        }
        let ran = run(
            "npm ci in tests/interop",
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir),
            NPM_BOUND,
        );
        assert!(
            ran.status.success(),
            "{}",
            ran.describe(
                "`npm ci --no-audit --no-fund` in tests/interop failed (npm must be on PATH and \
                 the npm registry reachable)"
            )
        );
        let stale = stale_npm_packages(&dir);
        assert!(
            stale.is_empty(),
            "npm ci succeeded but these packages do not match package-lock.json: {stale:?}"
        );
        drop(lock);
    });
}

/// The packages `package-lock.json` pins whose installed version differs or is missing
/// (empty: node_modules is up to date).
fn stale_npm_packages(dir: &Path) -> Vec<String> {
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("package-lock.json")).expect("package-lock.json"),
    )
    .expect("package-lock.json is JSON");
    let packages = lock["packages"].as_object().expect("lockfile v2/v3");
    assert!(
        packages.contains_key("node_modules/@agentclientprotocol/sdk"),
        "package-lock.json does not lock @agentclientprotocol/sdk"
    );
    packages
        .iter()
        .filter(|(key, _)| key.starts_with("node_modules/"))
        .filter(|(key, locked)| {
            let installed = std::fs::read_to_string(dir.join(key).join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok());
            installed.as_ref().map(|v| &v["version"]) != Some(&locked["version"])
        })
        .map(|(key, _)| key.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Their client (ts-client.mjs) and its summary.

/// Runs `node ts-client.mjs ARGS -- AGENT...` and returns its exit status and parsed summary.
fn ts_client(args: &[&str], agent: &[&str]) -> (Ran, Value) {
    npm_deps();
    let ran = run(
        "ts-client.mjs",
        Command::new(node())
            .arg(interop_dir().join("ts-client.mjs"))
            .args(["--timeout", "60"])
            .args(args)
            .args(if agent.is_empty() {
                &[][..]
            } else {
                &["--"][..]
            })
            .args(agent),
        RUN_BOUND,
    );
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "{}",
            ran.describe(&format!("ts-client.mjs printed no JSON summary ({e})"))
        )
    });
    // The SDK validates what it receives except responses; ts-client checks those with the
    // SDK's zod schemas (tests/interop/validate.mjs).
    assert_eq!(
        summary["schemaViolations"],
        serde_json::json!([]),
        "responses of the agent that fail the SDK's schemas"
    );
    (ran, summary)
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The fixtures against each other.

#[test]
fn ts_selftest_their_client_against_their_agent() {
    npm_deps();
    let ran = run(
        "node --test selftest.mjs",
        Command::new(node())
            .args(["--test", "selftest.mjs"])
            .current_dir(interop_dir()),
        RUN_BOUND * 2,
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("tests/interop/selftest.mjs failed")
    );
    assert!(ran.stdout.contains("# fail 0"), "{}", ran.stdout);
}

// ---------------------------------------------------------------------------------------------
// Our client (`acp chat --json`) and its output.

/// Runs `acp chat ARGS -- node ts-agent.mjs` with the session cwd `cwd`.
fn acp_chat_with_ts_agent(cwd: &Path, args: &[&str], trace: &Path) -> Ran {
    npm_deps();
    run(
        "acp chat against ts-agent.mjs",
        Command::new(ACP)
            .arg("chat")
            .args(["--json", "--timeout", "60", "--cwd"])
            .arg(cwd)
            .args(args)
            .args(["--env", "ACP_INTEROP_TRACE"])
            .arg("--")
            .arg(node())
            .arg(interop_dir().join("ts-agent.mjs"))
            .env("ACP_INTEROP_TRACE", trace),
        RUN_BOUND,
    )
}

/// Every stdout line of `acp chat --json` must be one JSON value. Also fails when ts-agent
/// reported responses of ours that fail the SDK's schemas (its "SCHEMA-VIOLATIONS" chunk).
fn json_lines(ran: &Ran) -> Vec<Value> {
    assert_no_schema_violations(&ran.stdout);
    ran.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "{}",
                    ran.describe(&format!(
                        "acp chat --json printed a non-JSON line ({e}): {l}"
                    ))
                )
            })
        })
        .collect()
}

/// ts-agent checks every response our client sends against the SDK's zod schemas
/// (tests/interop/validate.mjs) and reports failures in a "SCHEMA-VIOLATIONS" chunk.
fn assert_no_schema_violations(output: &str) {
    if let Some(at) = output.find("SCHEMA-VIOLATIONS") {
        let end = output[at..].find('\n').map_or(output.len(), |n| at + n);
        panic!(
            "ts-agent found responses of acp chat that fail the SDK's schemas: {}",
            &output[at..end]
        );
    }
}

/// Every object carrying a `sessionUpdate` field, at any depth, in order.
fn session_updates(lines: &[Value]) -> Vec<&Value> {
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Object(m) => {
                if m.get("sessionUpdate").is_some_and(Value::is_string) {
                    out.push(v);
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    lines.iter().for_each(|l| walk(l, &mut out));
    out
}

fn update_kinds<'a>(updates: &[&'a Value]) -> Vec<&'a str> {
    let mut kinds = Vec::new();
    for u in updates {
        let k = u["sessionUpdate"].as_str().unwrap();
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds
}

/// The concatenated text of the `agent_message_chunk` updates.
fn message_text(updates: &[&Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The messages of a wire trace written by trace.mjs that went in one direction
/// (`"-> "`: sent by the traced program, `"<- "`: received by it).
fn traced_messages(trace: &Path, prefix: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(trace)
        .unwrap_or_else(|e| panic!("no wire trace at {}: {e}", trace.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("traced line is not JSON ({e}): {l}"))
        })
        .collect()
}

fn with_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

/// The last `tool_call` / `tool_call_update` status reported for `id`.
fn final_status<'a>(updates: &[&'a Value], id: &str) -> Option<&'a str> {
    updates
        .iter()
        .rev()
        .filter(|u| u["toolCallId"] == id)
        .find_map(|u| u["status"].as_str())
}

// ---------------------------------------------------------------------------------------------
// (a) Our client against their agent.

#[test]
fn acp_chat_yes_runs_a_full_turn_with_the_ts_agent() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    std::fs::write(cwd.join("input.txt"), "hello from input\n").unwrap();
    let ran = acp_chat_with_ts_agent(
        cwd.path(),
        &[
            "--prompt",
            "Please read @input.txt. \u{dc}n\u{ef}c\u{f6}d\u{e9} \u{2713} \u{1f980}",
            "--yes",
        ],
        &trace,
    );
    assert!(ran.status.success(), "{}", ran.describe("acp chat --yes"));
    let lines = json_lines(&ran);
    assert_eq!(
        lines.last().unwrap(),
        &serde_json::json!({"sessionId": "ts-session-1", "stopReason": "end_turn"}),
        "{}",
        ran.describe("the last --json line is the turn's end")
    );
    let updates = session_updates(&lines);
    assert_eq!(
        update_kinds(&updates),
        [
            "plan",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update"
        ],
        "{}",
        ran.stdout
    );
    // Every session/update the SDK agent sent was printed, once, in order.
    let sent = traced_messages(&trace, "-> ");
    let sent_updates: Vec<&Value> = with_method(&sent, "session/update")
        .into_iter()
        .map(|m| &m["params"])
        .collect();
    let printed: Vec<&Value> = lines[..lines.len() - 1].iter().collect();
    assert_eq!(printed, sent_updates, "--json lines vs the agent's updates");

    let plan = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .unwrap();
    assert_eq!(plan["entries"].as_array().unwrap().len(), 3);
    let text = message_text(&updates);
    for expected in [
        "Hello from the TypeScript SDK agent. You said: Please read @input.txt. \u{dc}n\u{ef}c\u{f6}d\u{e9} \u{2713} \u{1f980}",
        "input.txt says: hello from input",
        "Wrote ts-agent-output.txt.",
        "terminal said: interop (exit 0)",
        "Done.",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text:?}");
    }
    // fs/read_text_file and fs/write_text_file went through our client, confined to --cwd.
    assert_eq!(final_status(&updates, "ts-read-1"), Some("completed"));
    assert_eq!(final_status(&updates, "ts-write-1"), Some("completed"));
    assert_eq!(
        std::fs::read_to_string(cwd.join(TS_AGENT_FILE)).unwrap(),
        TS_AGENT_CONTENT
    );
    // The terminal really ran `echo interop` and the agent saw its output and exit code.
    assert_eq!(final_status(&updates, "ts-terminal-1"), Some("completed"));
    let raw_output = updates
        .iter()
        .find(|u| u["toolCallId"] == "ts-terminal-1" && u.get("rawOutput").is_some())
        .map(|u| &u["rawOutput"])
        .unwrap();
    assert_eq!(
        raw_output,
        &serde_json::json!({"exitCode": 0, "signal": null, "output": "interop\n"})
    );
    // What our client answered, as the SDK agent received it.
    let received = traced_messages(&trace, "<- ");
    let init = with_method(&received, "initialize")[0];
    assert_eq!(init["params"]["protocolVersion"], 1);
    assert_eq!(
        init["params"]["clientCapabilities"]["fs"],
        serde_json::json!({"readTextFile": true, "writeTextFile": true})
    );
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], true);
    let permission_id = with_method(&sent, "session/request_permission")[0]["id"].clone();
    let answer = received
        .iter()
        .find(|m| m["id"] == permission_id && m.get("method").is_none())
        .expect("our client answered session/request_permission");
    assert_eq!(
        answer["result"],
        serde_json::json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
}

#[test]
fn acp_chat_deny_leaves_the_ts_agents_file_unwritten() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let ran = acp_chat_with_ts_agent(
        cwd.path(),
        &["--prompt", "hello", "--deny"],
        &traces.join("ts-agent.trace"),
    );
    let lines = json_lines(&ran);
    let updates = session_updates(&lines);
    assert_eq!(final_status(&updates, "ts-write-1"), Some("failed"));
    assert!(message_text(&updates).contains("Permission denied (reject); not writing"));
    assert!(!cwd.join(TS_AGENT_FILE).exists(), "written despite --deny");
    // The terminal is a permission question too: --deny refuses it with an error naming the
    // command, which this agent passes on as the prompt's error (exit 1).
    assert!(
        ran.stderr
            .contains("permission denied: the user did not allow running echo interop"),
        "{}",
        ran.describe("acp chat --deny")
    );
    assert_eq!(
        ran.status.code(),
        Some(1),
        "{}",
        ran.describe("acp chat --deny")
    );
    assert_ne!(final_status(&updates, "ts-terminal-1"), Some("completed"));
}

/// Without --yes/--deny, end of input at the permission question cancels the turn.
#[test]
fn acp_chat_permission_at_end_of_input_cancels_the_ts_agents_turn() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let ran = acp_chat_with_ts_agent(cwd.path(), &["--prompt", "hello"], &trace);
    assert_eq!(
        ran.status.code(),
        Some(3),
        "{}",
        ran.describe("acp chat exits 3 for a cancelled turn")
    );
    let lines = json_lines(&ran);
    assert_eq!(lines.last().unwrap()["stopReason"], "cancelled");
    assert!(!cwd.join(TS_AGENT_FILE).exists());
    let received = traced_messages(&trace, "<- ");
    let answered = received
        .iter()
        .position(|m| m["result"] == serde_json::json!({"outcome": {"outcome": "cancelled"}}))
        .expect("the permission request was answered `cancelled`");
    // Per the schema, `cancelled` is the answer of a client that sent `session/cancel`: it
    // comes first.
    let cancelled = received
        .iter()
        .position(|m| m["method"] == "session/cancel")
        .expect("acp chat sent session/cancel");
    assert!(cancelled < answered, "{received:#?}");
    assert_eq!(with_method(&received, "session/cancel").len(), 1);
}

/// Ctrl-C during a turn sends `session/cancel`; the SDK agent's turn ends `cancelled`.
#[test]
fn acp_chat_sigint_cancels_a_ts_agent_turn() {
    npm_deps();
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let mut acp = Running::start(
        "acp chat against ts-agent.mjs (wait-for-cancel)",
        Command::new(ACP)
            .args([
                "chat",
                "--json",
                "--yes",
                "--prompt",
                "wait-for-cancel",
                "--cwd",
            ])
            .arg(cwd.path())
            .args(["--env", "ACP_INTEROP_TRACE"])
            .arg("--")
            .arg(node())
            .arg(interop_dir().join("ts-agent.mjs"))
            .env("ACP_INTEROP_TRACE", &trace),
    );
    // The agent announces that it waits; nothing else can end the turn now.
    acp.wait_for_line(
        |l| l.contains("Waiting for session/cancel."),
        RUN_BOUND,
        "the agent's waiting chunk",
    );
    acp.signal(libc::SIGINT);
    let ran = acp.finish(RUN_BOUND);
    assert_eq!(
        ran.status.code(),
        Some(3),
        "{}",
        ran.describe("acp chat exits 3 for a cancelled turn")
    );
    let lines = json_lines(&ran);
    assert_eq!(
        lines.last().unwrap(),
        &serde_json::json!({"sessionId": "ts-session-1", "stopReason": "cancelled"})
    );
    let received = traced_messages(&trace, "<- ");
    let cancels = with_method(&received, "session/cancel");
    assert_eq!(cancels.len(), 1, "{received:?}");
    assert_eq!(cancels[0]["params"]["sessionId"], "ts-session-1");
    assert!(
        cancels[0].get("id").is_none(),
        "session/cancel is a notification"
    );
}

/// `--timeout` bounds the agent's silence during a turn: acp chat cancels and exits 7. (The
/// same bound applies to start-up and `initialize`, so it leaves room for node on a loaded
/// machine.)
#[test]
fn acp_chat_timeout_cancels_a_silent_ts_agent_turn() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    npm_deps();
    let ran = run(
        "acp chat --timeout 6 against ts-agent.mjs (wait-for-cancel)",
        Command::new(ACP)
            .args(["chat", "--json", "--yes", "--timeout", "6"])
            .args(["--prompt", "wait-for-cancel", "--cwd"])
            .arg(cwd.path())
            .args(["--env", "ACP_INTEROP_TRACE"])
            .arg("--")
            .arg(node())
            .arg(interop_dir().join("ts-agent.mjs"))
            .env("ACP_INTEROP_TRACE", &trace),
        RUN_BOUND,
    );
    assert_eq!(
        ran.status.code(),
        Some(7),
        "{}",
        ran.describe("acp chat exits 7 when the agent stays silent past --timeout")
    );
    assert!(ran.stderr.contains("--timeout"), "{}", ran.stderr);
    let lines = json_lines(&ran);
    let text = message_text(&session_updates(&lines));
    assert!(text.contains("Waiting for session/cancel."), "{text:?}");
    // It said it cancelled the turn: the agent got the `session/cancel` before its stdin closed.
    let received = traced_messages(&trace, "<- ");
    assert_eq!(
        with_method(&received, "session/cancel").len(),
        1,
        "{received:?}"
    );
}

/// The SDK agent probes our client's fs and terminal methods at their edges (`#edge` in
/// ts-agent.mjs) and reports what it got back.
#[test]
fn acp_chat_answers_the_ts_agents_edge_probes() {
    let cwd = TempDir::new();
    let outside = TempDir::new();
    let traces = TempDir::new();
    std::fs::write(cwd.join("lines.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    let prompt = format!("#edge outside={}", outside.path().display());
    let ran = acp_chat_with_ts_agent(
        cwd.path(),
        &["--prompt", &prompt, "--yes"],
        &traces.join("ts-agent.trace"),
    );
    assert!(ran.status.success(), "{}", ran.describe("acp chat #edge"));
    let lines = json_lines(&ran);
    assert_eq!(lines.last().unwrap()["stopReason"], "end_turn");
    let updates = session_updates(&lines);
    let text = message_text(&updates);
    let (_, results) = text
        .split_once("EDGE-RESULTS ")
        .unwrap_or_else(|| panic!("no EDGE-RESULTS in {}", ran.stdout));
    let r: Value = serde_json::from_str(results).unwrap();
    let ok = |name: &str| -> &Value {
        assert_eq!(r[name]["ok"], true, "{name}: {}", r[name]);
        &r[name]["value"]
    };
    let refused = |name: &str| -> i64 {
        assert_eq!(
            r[name]["ok"], false,
            "{name} should be refused: {}",
            r[name]
        );
        r[name]["code"].as_i64().unwrap()
    };

    // fs/read_text_file: 1-based line + limit, terminators kept; -32002 for a missing file;
    // nothing outside --cwd, directly or through `..`.
    assert_eq!(ok("read_line_limit"), "two\nthree\n");
    assert_eq!(refused("read_missing"), -32002);
    assert_eq!(refused("read_outside"), -32602);
    assert_eq!(refused("read_dotdot"), -32602);
    // fs/write_text_file: parents created; nothing written outside --cwd; text round-trips
    // byte for byte (non-ASCII, astral plane, CRLF, quotes, backslashes).
    ok("write_nested");
    assert_eq!(
        std::fs::read_to_string(cwd.join("sub/dir/nested.txt")).unwrap(),
        "nested\n"
    );
    assert_eq!(refused("write_outside"), -32602);
    assert!(!outside.join("written-outside.txt").exists());
    assert_eq!(ok("write_read_unicode"), true);
    assert_eq!(
        std::fs::read_to_string(cwd.join("unicode.txt")).unwrap(),
        "h\u{e9}llo \u{2014} \u{2713} \u{1f980}\r\nline 2 \"quoted\" \\ back\n"
    );
    // terminal/*: env, default cwd, exit code, stderr captured, output limit kept at a
    // character boundary with `truncated`, kill reported as a signal, cwd confined, unknown
    // command and released terminal refused.
    let env_exit = ok("terminal_env_exit");
    assert_eq!(env_exit["exitCode"], 3, "{env_exit}");
    assert_eq!(
        env_exit["output"],
        format!("from-env|{}", cwd.path().display())
    );
    assert_eq!(ok("terminal_stderr")["output"], "to-stderr");
    let truncated = ok("terminal_truncate");
    assert_eq!(truncated["truncated"], true, "{truncated}");
    let out = truncated["output"].as_str().unwrap();
    assert!(out.ends_with("\u{e9}END") && out.len() <= 100, "{out:?}");
    let killed = ok("terminal_kill");
    assert_eq!(killed["exitCode"], Value::Null, "{killed}");
    assert!(killed["signal"].is_string(), "{killed}");
    refused("terminal_cwd_outside");
    refused("terminal_missing_command");
    assert_eq!(refused("terminal_output_after_release"), -32002);
    // An unknown client method is -32601, not a hang or a crash.
    assert_eq!(refused("unknown_client_method"), -32601);
    // A 256 KiB update arrives whole.
    assert_eq!(ok("big_chunk"), 262_144);
    assert!(updates.iter().any(|u| u["content"]["text"]
        .as_str()
        .is_some_and(|t| t.len() == 262_144)));
}

/// `acp chat`'s exit code follows the SDK agent's stop reason.
#[test]
fn acp_chat_exit_codes_follow_the_ts_agents_stop_reasons() {
    for (reason, code) in [("max_tokens", 4), ("max_turn_requests", 5), ("refusal", 6)] {
        let cwd = TempDir::new();
        let traces = TempDir::new();
        let ran = acp_chat_with_ts_agent(
            cwd.path(),
            &["--prompt", &format!("#stop={reason}"), "--yes"],
            &traces.join("ts-agent.trace"),
        );
        assert_eq!(ran.status.code(), Some(code), "{}", ran.describe(reason));
        assert_eq!(json_lines(&ran).last().unwrap()["stopReason"], reason);
    }
}

/// An error answer to `session/prompt` and an agent that dies mid-turn both end `acp chat`
/// with exit code 1 and a message that says what happened.
#[test]
fn acp_chat_reports_a_failing_and_a_crashing_ts_agent() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let ran = acp_chat_with_ts_agent(cwd.path(), &["--prompt", "#fail", "--yes"], &trace);
    assert_eq!(ran.status.code(), Some(1), "{}", ran.describe("#fail"));
    assert!(
        ran.stderr.contains("ts-agent failed on purpose") && ran.stderr.contains("-32603"),
        "{}",
        ran.stderr
    );
    let ran = acp_chat_with_ts_agent(cwd.path(), &["--prompt", "#crash", "--yes"], &trace);
    assert_eq!(ran.status.code(), Some(1), "{}", ran.describe("#crash"));
    assert!(ran.stderr.contains("exited with code 42"), "{}", ran.stderr);
    // The updates sent before the crash were still printed.
    let text = message_text(&session_updates(&json_lines(&ran)));
    assert!(
        text.contains("Hello from the TypeScript SDK agent."),
        "{text:?}"
    );
}

/// A non-JSON line on the agent's stdout is reported and skipped; the turn goes on.
#[test]
fn acp_chat_skips_a_non_json_line_from_the_ts_agent() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let ran = acp_chat_with_ts_agent(cwd.path(), &["--prompt", "#garbage", "--yes"], &trace);
    assert!(ran.status.success(), "{}", ran.describe("#garbage"));
    assert_eq!(json_lines(&ran).last().unwrap()["stopReason"], "end_turn");
    assert!(
        ran.stderr.contains("this line is not JSON (#garbage)"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join(TS_AGENT_FILE)).unwrap(),
        TS_AGENT_CONTENT
    );
    // As JSON-RPC 2.0 asks, the unreadable line got a -32700 error with `id: null`; the SDK
    // agent took it in its stride.
    let received = traced_messages(&trace, "<- ");
    assert!(
        received
            .iter()
            .any(|m| m["id"].is_null() && m["error"]["code"] == -32700),
        "{received:?}"
    );
}

/// Interactive `acp chat` (no --prompt): one line per turn, in one session, until EOF.
#[test]
fn acp_chat_runs_two_interactive_turns_with_the_ts_agent() {
    npm_deps();
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let ran = Running::start_with_input(
        "interactive acp chat against ts-agent.mjs",
        Command::new(ACP)
            .args(["chat", "--json", "--yes", "--cwd"])
            .arg(cwd.path())
            .args(["--env", "ACP_INTEROP_TRACE"])
            .arg("--")
            .arg(node())
            .arg(interop_dir().join("ts-agent.mjs"))
            .env("ACP_INTEROP_TRACE", &trace),
        Some(b"first turn\nsecond turn #stop=end_turn\n".to_vec()),
    )
    .finish(RUN_BOUND);
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("interactive acp chat")
    );
    let ends: Vec<Value> = json_lines(&ran)
        .into_iter()
        .filter(|l| l.get("stopReason").is_some())
        .collect();
    assert_eq!(
        ends,
        vec![
            serde_json::json!({"sessionId": "ts-session-1", "stopReason": "end_turn"}),
            serde_json::json!({"sessionId": "ts-session-1", "stopReason": "end_turn"}),
        ],
        "{}",
        ran.stdout
    );
    let received = traced_messages(&trace, "<- ");
    assert_eq!(with_method(&received, "session/new").len(), 1);
    let prompts: Vec<&Value> = with_method(&received, "session/prompt")
        .into_iter()
        .map(|m| &m["params"]["prompt"])
        .collect();
    assert_eq!(
        prompts,
        [
            &serde_json::json!([{"type": "text", "text": "first turn"}]),
            &serde_json::json!([{"type": "text", "text": "second turn #stop=end_turn"}]),
        ]
    );
}

/// Messages over 1 MiB both ways: a 3.2 MB `fs/write_text_file` request from the SDK agent, the
/// 2.5 MB file read back, a 1.5 MiB `agent_message_chunk`.
#[test]
fn acp_chat_carries_big_messages_with_the_ts_agent() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let ran = acp_chat_with_ts_agent(
        cwd.path(),
        &["--prompt", "#big-io", "--yes"],
        &traces.join("ts-agent.trace"),
    );
    assert!(ran.status.success(), "{}", ran.describe("acp chat #big-io"));
    let expected: String = (0..80_000)
        .map(|i| format!("line {i:07} \"quoted\" \\ \u{e9} \u{2713}\n"))
        .collect();
    assert_eq!(
        std::fs::read_to_string(cwd.join("big-io.txt")).unwrap(),
        expected
    );
    let lines = json_lines(&ran);
    assert_eq!(lines.last().unwrap()["stopReason"], "end_turn");
    let updates = session_updates(&lines);
    assert!(
        updates
            .iter()
            .any(|u| u["content"]["text"].as_str().map(str::len) == Some(1536 * 1024)),
        "the 1.5 MiB chunk was not printed whole"
    );
    // The tap cuts lines as the engine does (cli/rpc_log.rs): no spurious "not JSON" warning
    // on valid messages over 1 MiB, and the turn's final drain waits for every update,
    // the last chunk ("BIG-IO {...}") included.
    assert!(!ran.stderr.contains("not JSON"), "{}", ran.stderr);
    let text = message_text(&updates);
    let (_, report) = text
        .split_once("BIG-IO ")
        .unwrap_or_else(|| panic!("the turn's last chunk is missing: {}", ran.stdout));
    let report: Value = serde_json::from_str(report.trim()).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"bytes": 2_480_000, "roundTrip": true})
    );
}

/// Update kinds our v1 schema does not know (the SDK's stable `notice`, a custom `_` kind) and
/// unknown fields pass through `acp chat --json` verbatim and do not disturb the human view.
#[test]
fn acp_chat_passes_unknown_update_kinds_from_the_ts_agent_through() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-agent.trace");
    let ran = acp_chat_with_ts_agent(
        cwd.path(),
        &["--prompt", "#unknown-updates", "--yes"],
        &trace,
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("acp chat #unknown-updates")
    );
    let lines = json_lines(&ran);
    let sent = traced_messages(&trace, "-> ");
    let sent_updates: Vec<&Value> = with_method(&sent, "session/update")
        .into_iter()
        .map(|m| &m["params"])
        .collect();
    let printed: Vec<&Value> = lines[..lines.len() - 1].iter().collect();
    assert_eq!(printed, sent_updates);
    let kinds = update_kinds(&session_updates(&lines));
    assert!(kinds.contains(&"notice") && kinds.contains(&"_acp_interop_custom"));
    assert!(message_text(&session_updates(&lines)).ends_with("after unknown updates"));

    // Without --json: rendered somehow, the turn still ends normally.
    npm_deps();
    let human = run(
        "acp chat (human view) #unknown-updates",
        Command::new(ACP)
            .args(["chat", "--yes", "--prompt", "#unknown-updates", "--cwd"])
            .arg(cwd.path())
            .arg("--")
            .arg(node())
            .arg(interop_dir().join("ts-agent.mjs")),
        RUN_BOUND,
    );
    assert!(human.status.success(), "{}", human.describe("human view"));
    assert_no_schema_violations(&human.stdout);
    assert!(
        human.stdout.contains("after unknown updates"),
        "{}",
        human.stdout
    );
}

/// The permission question answered on stdin: by number, after invalid answers.
#[test]
fn acp_chat_asks_the_ts_agents_permission_question_on_stdin() {
    npm_deps();
    // The last answer is for the terminal question that follows (1: run it).
    for (input, allowed, option) in [
        ("1\n1\n", true, "allow"),
        ("2\n1\n", false, "reject"),
        ("x\n9\n1\n1\n", true, "allow"),
    ] {
        let cwd = TempDir::new();
        let traces = TempDir::new();
        let trace = traces.join("ts-agent.trace");
        let ran = Running::start_with_input(
            "acp chat answering on stdin",
            Command::new(ACP)
                .args(["chat", "--json", "--prompt", "hello", "--cwd"])
                .arg(cwd.path())
                .args(["--env", "ACP_INTEROP_TRACE"])
                .arg("--")
                .arg(node())
                .arg(interop_dir().join("ts-agent.mjs"))
                .env("ACP_INTEROP_TRACE", &trace),
            Some(input.as_bytes().to_vec()),
        )
        .finish(RUN_BOUND);
        assert!(ran.status.success(), "{}", ran.describe(input));
        assert_eq!(cwd.join(TS_AGENT_FILE).exists(), allowed, "{input:?}");
        let received = traced_messages(&trace, "<- ");
        assert!(
            received.iter().any(|m| m["result"]
                == serde_json::json!({"outcome": {"outcome": "selected", "optionId": option}})),
            "{input:?}: {received:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Their client against our agent.

const DEMO_FILE: &str = "acp-demo.txt";

fn demo_agent() -> [&'static str; 2] {
    [ACP, "demo-agent"]
}

/// Every `session/update` the agent sent (per the client's wire trace) reached the SDK
/// client's handler: none was dropped by the SDK's schema validation.
fn assert_sdk_accepted_every_update(summary: &Value, trace: &Path) {
    let received = traced_messages(trace, "<- ");
    let on_wire = with_method(&received, "session/update").len() as u64;
    let handled: u64 = summary["updateCounts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        handled, on_wire,
        "the SDK client handled {handled} of the {on_wire} session/update notifications \
         (an invalid one is dropped by its schema validation); summary: {summary:#}"
    );
}

#[test]
fn ts_client_runs_a_full_turn_with_acp_demo_agent() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-client.trace");
    std::fs::write(cwd.join("input.txt"), "hello from input\n").unwrap();
    let prompt = "Please read input.txt and run `echo interop`";
    let cwd_arg = cwd.path().to_str().unwrap();
    let (ran, summary) = ts_client(
        &[
            "--cwd",
            cwd_arg,
            "--prompt",
            prompt,
            "--trace",
            trace.to_str().unwrap(),
        ],
        &demo_agent(),
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client against acp demo-agent")
    );
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(summary["error"], Value::Null);
    assert_eq!(summary["protocolVersion"], 1);
    assert_eq!(summary["agentInfo"]["name"], "acp-demo-agent");
    let kinds = strings(&summary["updateKinds"]);
    for kind in [
        "plan",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ] {
        assert!(kinds.contains(&kind), "{kind} not in {kinds:?}");
    }
    assert_sdk_accepted_every_update(&summary, &trace);
    let text = summary["text"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "Hello from the acp demo agent. You said: \"{prompt}\""
        )),
        "{text:?}"
    );
    // The last plan has every step completed.
    let plan = summary["plan"].as_array().unwrap();
    assert_eq!(plan.len(), 4, "{plan:?}");
    assert!(plan.iter().all(|e| e["status"] == "completed"), "{plan:?}");
    // fs/read_text_file through the SDK client.
    let input = cwd.join("input.txt");
    assert_eq!(
        summary["filesRead"],
        serde_json::json!([{"path": input, "bytes": 17}])
    );
    // The permission request, answered with the first allow option.
    let asks = summary["permissionRequests"].as_array().unwrap();
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert_eq!(asks[0]["answer"], "allow");
    let kinds: Vec<&str> = asks[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "reject_once"]);
    // fs/write_text_file through the SDK client's handler: on disk, in the session cwd.
    let written = cwd.join(DEMO_FILE);
    let content = format!("The acp demo agent was asked:\n\n{prompt}\n");
    assert_eq!(
        summary["filesWritten"],
        serde_json::json!([{"path": written, "content": content}])
    );
    assert_eq!(std::fs::read_to_string(&written).unwrap(), content);
    // terminal/* through the SDK client: `echo interop` really ran.
    let terms = summary["terminals"].as_array().unwrap();
    assert_eq!(terms.len(), 1, "{terms:?}");
    assert_eq!(terms[0]["command"], "echo");
    assert_eq!(terms[0]["args"], serde_json::json!(["interop"]));
    assert_eq!(terms[0]["exitCode"], 0);
    assert_eq!(terms[0]["output"], "interop\n");
    // Every tool call ended completed.
    let calls = summary["toolCalls"].as_object().unwrap();
    assert_eq!(calls.len(), 3, "{calls:?}");
    for (id, call) in calls {
        assert_eq!(call["status"], "completed", "{id}: {call}");
    }
    // The demo agent exits cleanly when the SDK client closes its stdin.
    assert_eq!(
        summary["agentExit"],
        serde_json::json!({"code": 0, "signal": null})
    );
}

#[test]
fn ts_client_deny_leaves_acp_demo_agents_file_unwritten() {
    let cwd = TempDir::new();
    let (ran, summary) = ts_client(
        &["--cwd", cwd.path().to_str().unwrap(), "--deny"],
        &demo_agent(),
    );
    assert!(ran.status.success(), "{}", ran.describe("ts-client --deny"));
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(summary["permissionRequests"][0]["answer"], "reject");
    assert_eq!(summary["filesWritten"], serde_json::json!([]));
    assert!(!cwd.join(DEMO_FILE).exists());
    assert!(summary["text"]
        .as_str()
        .unwrap()
        .contains("OK, I did not write acp-demo.txt."));
    let failed: Vec<&String> = summary["toolCalls"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| c["status"] == "failed")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(failed.len(), 1, "{summary:#}");
    assert!(failed[0].starts_with("write-"), "{failed:?}");
}

#[test]
fn ts_client_without_fs_and_terminal_gets_neither_from_acp_demo_agent() {
    let cwd = TempDir::new();
    std::fs::write(cwd.join("input.txt"), "hello\n").unwrap();
    let (ran, summary) = ts_client(
        &[
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--no-fs",
            "--no-terminal",
            "--prompt",
            "read input.txt",
        ],
        &demo_agent(),
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client --no-fs --no-terminal")
    );
    assert_eq!(summary["stopReason"], "end_turn");
    for key in [
        "filesRead",
        "filesWritten",
        "terminals",
        "permissionRequests",
    ] {
        assert_eq!(summary[key], serde_json::json!([]), "{key}: {summary:#}");
    }
    assert!(!cwd.join(DEMO_FILE).exists());
}

/// The SDK client cancels while our agent waits for the permission answer: it sends
/// `session/cancel` and answers `cancelled`, as the protocol requires; the turn ends `cancelled`.
#[test]
fn ts_client_cancel_at_permission_ends_acp_demo_agents_turn_cancelled() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-client.trace");
    let (ran, summary) = ts_client(
        &[
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--cancel-on-permission",
            "--expect-stop",
            "cancelled",
            "--trace",
            trace.to_str().unwrap(),
        ],
        &demo_agent(),
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client --cancel-on-permission")
    );
    assert_eq!(summary["stopReason"], "cancelled");
    assert_eq!(summary["cancelSent"], true);
    assert!(!cwd.join(DEMO_FILE).exists());
    let sent = traced_messages(&trace, "-> ");
    assert_eq!(with_method(&sent, "session/cancel").len(), 1);
    assert_eq!(
        summary["agentExit"],
        serde_json::json!({"code": 0, "signal": null})
    );
}

/// A cancel in the middle of a turn: with a long pause between steps (the demo agent's hidden
/// `--delay-ms`), the turn can only end through the SDK client's `session/cancel`.
#[test]
fn ts_client_cancel_mid_turn_ends_acp_demo_agents_turn_cancelled() {
    let (ran, summary) = ts_client(
        &[
            "--cancel-after-update",
            "plan",
            "--expect-stop",
            "cancelled",
        ],
        &[ACP, "demo-agent", "--delay-ms", "600000"],
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client --cancel-after-update plan")
    );
    assert_eq!(summary["stopReason"], "cancelled");
    assert_eq!(summary["cancelSent"], true);
    // The demo agent announces its slash commands right behind `session/new`'s answer; of the
    // turn, only the plan came before the cancel.
    assert_eq!(
        summary["updateCounts"],
        serde_json::json!({"available_commands_update": 1, "plan": 1})
    );
}

/// The other stop reasons our agent can produce pass the SDK's validation as they are.
#[test]
fn ts_client_accepts_acp_demo_agents_refusal_and_max_tokens() {
    for (prompt, reason) in [("#refuse", "refusal"), ("#max-tokens", "max_tokens")] {
        let (ran, summary) = ts_client(
            &["--prompt", prompt, "--expect-stop", reason, "--no-terminal"],
            &demo_agent(),
        );
        assert!(ran.status.success(), "{}", ran.describe(prompt));
        assert_eq!(summary["stopReason"], reason);
    }
}

/// After a turn, the SDK client probes our agent's edges: error codes, a second turn with a
/// resource link, and `session/load` replaying the history through the SDK's validation.
#[test]
fn ts_client_probes_acp_demo_agents_edges() {
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let trace = traces.join("ts-client.trace");
    let (ran, summary) = ts_client(
        &[
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--probe",
            "--no-terminal",
            "--trace",
            trace.to_str().unwrap(),
        ],
        &demo_agent(),
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client --probe")
    );
    let p = &summary["probes"];
    assert_eq!(p["unknown_agent_method"]["code"], -32601, "{p:#}");
    assert_eq!(p["new_session_relative_cwd"]["code"], -32602, "{p:#}");
    // As the SDK (`RequestError.sessionNotFound`, "as the protocol expects"): an unknown
    // session is -32002 (Resource not found) with `data.sessionId`.
    assert_eq!(p["prompt_unknown_session"]["ok"], false, "{p:#}");
    assert_eq!(p["prompt_unknown_session"]["code"], -32002, "{p:#}");
    assert_eq!(
        p["prompt_unknown_session"]["data"]["sessionId"], "acp-interop-no-such-session",
        "{p:#}"
    );
    // A second turn in the same session, with a resource_link block, ends normally.
    let second = &p["second_prompt_resource_link"];
    assert_eq!(second["value"]["stopReason"], "end_turn", "{p:#}");
    assert!(second["updates"].as_u64().unwrap() > 0, "{p:#}");
    // session/load (advertised) replays the history, user messages included, and every
    // replayed update passes the SDK's schema validation.
    assert_eq!(summary["agentCapabilities"]["loadSession"], true);
    assert_eq!(p["load_session"]["ok"], true, "{p:#}");
    assert!(p["load_session"]["updates"].as_u64().unwrap() > 0, "{p:#}");
    assert!(strings(&summary["updateKinds"]).contains(&"user_message_chunk"));
    assert_sdk_accepted_every_update(&summary, &trace);
}

/// The SDK's own request cancellation (`$/cancel_request` for the pending `session/prompt`)
/// ends our agent's turn: it answers the prompt with stop reason `cancelled`.
#[test]
fn ts_client_cancel_request_ends_acp_demo_agents_turn() {
    let traces = TempDir::new();
    let trace = traces.join("ts-client.trace");
    let (ran, summary) = ts_client(
        &[
            "--abort-after-update",
            "plan",
            "--expect-stop",
            "cancelled",
            "--trace",
            trace.to_str().unwrap(),
        ],
        &[ACP, "demo-agent", "--delay-ms", "600000"],
    );
    assert!(
        ran.status.success(),
        "{}",
        ran.describe("ts-client --abort-after-update plan")
    );
    assert_eq!(summary["promptAborted"], true);
    assert_eq!(summary["stopReason"], "cancelled");
    let sent = traced_messages(&trace, "-> ");
    let cancel = with_method(&sent, "$/cancel_request");
    assert_eq!(cancel.len(), 1, "{sent:?}");
    let prompt = with_method(&sent, "session/prompt")[0];
    assert_eq!(cancel[0]["params"]["requestId"], prompt["id"]);
}

/// `_meta` on initialize, session/new, session/prompt and a content block, and capabilities
/// from newer schemas (`session.notices`, `session.compaction`), are ignored by our agent.
#[test]
fn ts_client_meta_and_newer_capabilities_are_ignored_by_acp_demo_agent() {
    let cwd = TempDir::new();
    let (ran, summary) = ts_client(
        &["--cwd", cwd.path().to_str().unwrap(), "--meta"],
        &demo_agent(),
    );
    assert!(ran.status.success(), "{}", ran.describe("ts-client --meta"));
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(summary["error"], Value::Null);
    assert!(cwd.join(DEMO_FILE).exists());
}

// ---------------------------------------------------------------------------------------------
// Their client over WebSocket (the SDK's experimental ws-client) to `acp serve --ws`.

/// The token `acp serve` is started with (`ACP_SERVE_TOKEN`).
const SERVE_TOKEN: &str = "interop-token-9c41d7e0b2a6";

/// Starts `acp serve --ws 127.0.0.1:0 -- AGENT...` and returns it with a `ws://` URL carrying
/// its token (`?token=`, which any WebSocket client can send).
fn acp_serve(agent: &[&OsStr]) -> (Running, String) {
    let mut serve = Running::start(
        "acp serve --ws",
        Command::new(ACP)
            .env("ACP_SERVE_TOKEN", SERVE_TOKEN)
            .args(["serve", "--ws", "127.0.0.1:0", "--"])
            .args(agent),
    );
    let line = serve.wait_for_stderr_line(
        |l| l.contains("listening on ws://"),
        RUN_BOUND,
        "its listening address",
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap();
    (serve, format!("{url}/?token={SERVE_TOKEN}"))
}

/// Stops `acp serve` with Ctrl-C and returns what it printed.
fn stop_serve(mut serve: Running) -> Ran {
    serve.signal(libc::SIGINT);
    serve.finish(RUN_BOUND)
}

#[test]
fn ts_ws_client_runs_a_turn_through_acp_serve_with_acp_demo_agent() {
    npm_deps();
    let cwd = TempDir::new();
    let (serve, url) = acp_serve(&[OsStr::new(ACP), OsStr::new("demo-agent")]);
    let prompt = "over a WebSocket, run `echo interop`";
    let (ran, summary) = ts_client(
        &[
            "--ws",
            &url,
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--prompt",
            prompt,
        ],
        &[],
    );
    let served = stop_serve(serve);
    assert!(
        ran.status.success(),
        "{}\n{}",
        ran.describe("ts-client --ws against acp serve"),
        served.describe("acp serve")
    );
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(summary["agentInfo"]["name"], "acp-demo-agent");
    assert_eq!(
        std::fs::read_to_string(cwd.join(DEMO_FILE)).unwrap(),
        format!("The acp demo agent was asked:\n\n{prompt}\n")
    );
    assert_eq!(summary["permissionRequests"][0]["answer"], "allow");
    assert_eq!(summary["terminals"][0]["output"], "interop\n");
    assert!(
        served.stderr.contains("connected; agent pid"),
        "{}",
        served.stderr
    );
}

#[test]
fn ts_ws_client_and_ts_agent_talk_through_acp_serve() {
    npm_deps();
    let cwd = TempDir::new();
    let traces = TempDir::new();
    let client_trace = traces.join("ts-client.trace");
    let agent = interop_dir().join("ts-agent.mjs");
    let (serve, url) = acp_serve(&[OsStr::new(node()), agent.as_os_str()]);
    let (ran, summary) = ts_client(
        &[
            "--ws",
            &url,
            "--cwd",
            cwd.path().to_str().unwrap(),
            "--trace",
            client_trace.to_str().unwrap(),
        ],
        &[],
    );
    // The bridge stops the agent when the WebSocket closes; wait for its report of that.
    let mut serve = serve;
    let exit_line = serve.wait_for_stderr_line(
        |l| l.contains("exited"),
        RUN_BOUND,
        "the agent's exit after the WebSocket closed",
    );
    let served = stop_serve(serve);
    assert!(
        ran.status.success(),
        "{}\n{}",
        ran.describe("ts-client --ws against acp serve -- node ts-agent.mjs"),
        served.describe("acp serve")
    );
    assert_eq!(summary["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(cwd.join(TS_AGENT_FILE)).unwrap(),
        TS_AGENT_CONTENT
    );
    assert_eq!(summary["terminals"][0]["output"], "interop\n");
    assert_sdk_accepted_every_update(&summary, &client_trace);
    // ... and the agent ended cleanly (its stdin closed, it exited 0).
    assert!(
        exit_line.contains("exited with code 0"),
        "{exit_line}\n{}",
        served.stderr
    );
}
