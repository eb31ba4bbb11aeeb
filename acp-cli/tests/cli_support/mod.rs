//! Helpers for the `acp` command's tests: run the built binary with a deadline, temp dirs,
//! scripted agents. Waiting is always bounded polling of an observable condition with a clear
//! panic message on timeout; nothing sleeps to synchronise.
#![allow(dead_code)]

#[path = "../../../acp-native/tests/common/executable.rs"]
mod executable;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `acp` binary under test.
pub fn acp() -> &'static str {
    env!("CARGO_BIN_EXE_acp")
}

/// Bound for anything that must happen on a loaded 2-core machine: a hang guard only (every
/// use waits for something that must happen, so a passing run never waits it out). 60 s was
/// passed by the consent flood tests at a load of 12 on 2 cores; 180 s leaves room for that.
pub const EVENTUALLY: Duration = Duration::from_secs(180);

/// The start of the scripted python agents (`python3 agent.py SCENARIO LOG …`): `scenario`,
/// `log` (every line read is appended to LOG) and the helpers `send`, `recv`, `expect` (answers
/// `session/set_mode` while waiting), `update`, `end`, `call` and `handshake` (`initialize`
/// answered with v1 and no capabilities, `session/new` with `s-1`). A test's own part follows.
pub const PY_AGENT_HELPERS: &str = r#"
import json, os, sys, time
scenario, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a")

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()

def recv():
    line = sys.stdin.readline()
    if not line:
        return None
    log.write(line); log.flush()
    return json.loads(line)

def expect(method=None, id=None):
    while True:
        m = recv()
        if m is None:
            sys.exit(0)
        if method is not None and m.get("method") == method:
            return m
        if m.get("method") == "session/set_mode":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
            continue
        if id is not None and m.get("id") == id and "method" not in m:
            return m

def update(text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1",
          "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})

def end(pid, reason="end_turn"):
    send({"jsonrpc": "2.0", "id": pid, "result": {"stopReason": reason}})

def call(id, method, params):
    send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    return expect(id=id)

def handshake():
    m = expect("initialize")
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    m = expect("session/new")
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
"#;

/// A scripted python agent: [`PY_AGENT_HELPERS`] then `body`.
pub fn py_agent(body: &str) -> String {
    format!("{PY_AGENT_HELPERS}{body}")
}

/// `acp chat ARGS -- python3 agent.py SCENARIO agent.log` in `dir`, the agent being
/// [`py_agent`]`(body)` (written to `dir/agent.py`; what it reads is logged to `dir/agent.log`).
pub fn py_chat(
    dir: &TempDir,
    args: &[&str],
    scenario: &str,
    body: &str,
    stdin: Option<&str>,
) -> Run {
    let script = dir.join("agent.py");
    std::fs::write(&script, py_agent(body)).unwrap();
    let log = dir.join("agent.log");
    let mut all = vec!["chat"];
    all.extend(args);
    all.extend([
        "--",
        "python3",
        script.to_str().unwrap(),
        scenario,
        log.to_str().unwrap(),
    ]);
    run(&all, dir.path(), stdin)
}

/// The lines of `acp chat --json`'s stdout, each parsed (a line that is not JSON fails).
pub fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// The `sessionUpdate` kinds among `acp chat --json` lines, in order.
pub fn update_kinds(lines: &[serde_json::Value]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| l["update"]["sessionUpdate"].as_str())
        .collect()
}

/// A temporary directory, removed on drop; canonical path.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "acp-cli-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(std::fs::canonicalize(dir).unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }

    /// Writes an executable `#!/bin/sh` script.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.join(name);
        executable::write_executable(&path, &format!("#!/bin/sh\n{body}\n"));
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A finished `acp` run.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| panic!("acp was killed by a signal\n{}", self.dump()))
    }

    pub fn dump(&self) -> String {
        format!(
            "exit: {:?} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// A running `acp` whose output is collected in the background.
pub struct Running {
    pub child: Child,
    /// Kept open when started with [`Running::start_interactive`].
    pub stdin: Option<std::process::ChildStdin>,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    started: Instant,
}

fn collect(mut r: impl Read + Send + 'static, buf: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
}

impl Running {
    /// Starts `acp args...` in `cwd` with `stdin` written then closed (`None`: stdin closed).
    pub fn start(args: &[&str], cwd: &Path, stdin: Option<&str>) -> Running {
        let mut r = Running::start_interactive(args, cwd);
        let mut input = r.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        r
    }

    /// Starts `acp args...` with stdin left open (write to [`Running::stdin`]).
    pub fn start_interactive(args: &[&str], cwd: &Path) -> Running {
        let mut child = Command::new(acp())
            .args(args)
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            // Session records go to a scratch place, not the user's state directory.
            .env(
                "XDG_STATE_HOME",
                std::env::temp_dir().join(format!("acp-test-state-{}", std::process::id())),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start acp");
        let input = child.stdin.take();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        collect(child.stdout.take().unwrap(), stdout.clone());
        collect(child.stderr.take().unwrap(), stderr.clone());
        Running {
            child,
            stdin: input,
            stdout,
            stderr,
            started: Instant::now(),
        }
    }

    /// Ctrl-C: SIGINT to `acp`.
    #[cfg(unix)]
    pub fn interrupt(&self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Polls until stdout contains `needle` (bounded).
    pub fn wait_for_stdout(&mut self, needle: &str, within: Duration) {
        self.wait_for(needle, within, Running::stdout)
    }

    /// Polls until stderr contains `needle` (bounded).
    pub fn wait_for_stderr(&mut self, needle: &str, within: Duration) {
        self.wait_for(needle, within, Running::stderr)
    }

    fn wait_for(&mut self, needle: &str, within: Duration, read: fn(&Running) -> String) {
        let deadline = Instant::now() + within;
        while !read(self).contains(needle) {
            if Instant::now() > deadline || self.child.try_wait().unwrap().is_some() {
                let _ = self.child.kill();
                panic!(
                    "the output never contained {needle:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit (bounded; kills and panics on timeout), then for the output pipes.
    pub fn finish(mut self, within: Duration) -> Run {
        let deadline = self.started + within;
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "acp did not exit within {within:?} (a hang)\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let elapsed = self.started.elapsed();
        // The collector threads finish at EOF, right after the exit; poll briefly for it.
        let settle = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&self.stdout) > 1 || Arc::strong_count(&self.stderr) > 1 {
            if Instant::now() > settle {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Run {
            code: status.code(),
            stdout: self.stdout(),
            stderr: self.stderr(),
            elapsed,
        }
    }
}

/// Runs `acp args...` to completion (bounded by [`EVENTUALLY`]).
pub fn run(args: &[&str], cwd: &Path, stdin: Option<&str>) -> Run {
    Running::start(args, cwd, stdin).finish(EVENTUALLY)
}
