//! Interop with the official ACP TypeScript SDK (`@agentclientprotocol/sdk`, pinned by
//! `tests/interop/package-lock.json`), in both directions, over real stdio pipes:
//!
//! - our client against their agent: `acp chat ... -- node tests/interop/ts-agent.mjs`;
//! - their client against our agent: `node tests/interop/ts-client.mjs ... -- acp demo-agent`;
//! - their client against their agent (`tests/interop/selftest.mjs`), which proves the fixtures.
//!
//! Needs `node` (>= 18) on PATH; installs the npm packages itself (`npm ci`, once, under a file
//! lock) when `tests/interop/node_modules` is missing or stale. Every child runs in its own
//! process group and is killed, group and all, when it overruns its bound.

mod host_support;

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

/// Runs `cmd` to completion with stdin closed, in its own process group. When it overruns
/// `bound`, the whole group is killed and the test fails with everything it printed so far.
fn run(what: &str, cmd: &mut Command, bound: Duration) -> Ran {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let (status, overran) = match rx.recv_timeout(bound) {
        Ok(status) => (status.expect("wait failed"), false),
        Err(_) => {
            // SAFETY: plain syscall; the group id is the child's pid (process_group(0)).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            (rx.recv().unwrap().expect("wait failed"), true)
        }
    };
    // The group leader is gone; kill any descendant still holding the pipes open, so the
    // readers reach EOF.
    // SAFETY: as above; ESRCH (no such group) is fine.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let ran = Ran {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    };
    if overran {
        panic!(
            "{}",
            ran.describe(&format!(
                "{what} did not finish within {bound:?} and was killed"
            ))
        );
    }
    ran
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

/// Makes sure `tests/interop/node_modules` holds the locked SDK version, running
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
        if installed_sdk_version(&dir) == Some(locked_sdk_version(&dir)) {
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
        assert_eq!(
            installed_sdk_version(&dir),
            Some(locked_sdk_version(&dir)),
            "npm ci succeeded but node_modules/@agentclientprotocol/sdk does not match the lock"
        );
        drop(lock);
    });
}

fn locked_sdk_version(dir: &Path) -> String {
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("package-lock.json")).expect("package-lock.json"),
    )
    .expect("package-lock.json is JSON");
    lock["packages"]["node_modules/@agentclientprotocol/sdk"]["version"]
        .as_str()
        .expect("package-lock.json locks @agentclientprotocol/sdk")
        .to_owned()
}

fn installed_sdk_version(dir: &Path) -> Option<String> {
    let text =
        std::fs::read_to_string(dir.join("node_modules/@agentclientprotocol/sdk/package.json"))
            .ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    // zod is the SDK's (peer) dependency; a half-finished install lacks it.
    if !dir.join("node_modules/zod/package.json").exists() {
        return None;
    }
    Some(v["version"].as_str()?.to_owned())
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
            .arg("--")
            .args(agent),
        RUN_BOUND,
    );
    let summary: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "{}",
            ran.describe(&format!("ts-client.mjs printed no JSON summary ({e})"))
        )
    });
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
