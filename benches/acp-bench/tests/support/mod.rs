//! What the interop tests share: the programs they run (our `acp`, the official Rust SDK's
//! side `rust-sdk-peer`), bounded waits, temporary directories, and reading the peer's JSON
//! reports with acp-core's schema types (the peer's SDK pins an older schema crate: that its
//! JSON decodes here is part of the test).

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub use acp_core::typed::schema::v1 as s;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Bound for one whole test (and for one run of the peer).
pub const BOUND: Duration = Duration::from_secs(90);

/// The main workspace's root (this crate is `benches/acp-bench`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// `$VAR` if set (it must be a file), else the first of `candidates` (under the repo root)
/// that exists, else what `build` builds.
fn program(var: &str, candidates: &[&str], build: &[&str], built: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{var}={} is not a file", p.display());
        return p;
    }
    let root = repo_root();
    for c in candidates {
        let p = root.join(c);
        if p.is_file() {
            return p;
        }
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(build)
        .current_dir(&root)
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "cargo {build:?} failed: {status}");
    root.join(built)
}

/// Our `acp` binary: `$ACP_BIN`, else `target/release/acp` or `target/debug/acp` of the main
/// workspace, else it is built (`cargo build --release -p acp-cli`).
pub fn acp_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        program(
            "ACP_BIN",
            &["target/release/acp", "target/debug/acp"],
            &["build", "--release", "-p", "acp-cli"],
            "target/release/acp",
        )
    })
    .clone()
}

/// The official Rust SDK's side, `rust-sdk-peer` (tests/rust-sdk): `$ACP_RUST_SDK_PEER`, else
/// its release or debug build, else it is built (`cargo build --release` there).
pub fn sdk_peer() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        program(
            "ACP_RUST_SDK_PEER",
            &[
                "tests/rust-sdk/target/release/rust-sdk-peer",
                "tests/rust-sdk/target/debug/rust-sdk-peer",
            ],
            &[
                "build",
                "--release",
                "--manifest-path",
                "tests/rust-sdk/Cargo.toml",
            ],
            "tests/rust-sdk/target/release/rust-sdk-peer",
        )
    })
    .clone()
}

/// A fresh, empty directory (absolute, symlinks resolved), removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!(
            "acp-rs-sdk-interop-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not finished within {BOUND:?}"),
    }
}

/// Runs `rust-sdk-peer ARGS` to its end (killed past [`BOUND`]) and returns its report, the
/// JSON object of its last stdout line. Its stderr goes to the test's.
pub async fn peer_report(args: &[&str]) -> Value {
    let mut child = tokio::process::Command::new(sdk_peer())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("cannot start rust-sdk-peer");
    let mut stdout = child.stdout.take().unwrap();
    let out = bounded(&format!("rust-sdk-peer {args:?}"), async {
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut out)
            .await
            .expect("the peer's stdout");
        let _ = child.wait().await;
        out
    })
    .await;
    let text = String::from_utf8_lossy(&out);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("rust-sdk-peer {args:?} printed no report: {text}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("the report is not JSON ({e}): {line}"))
}

/// A report of a run that must have succeeded.
pub async fn peer_ok(args: &[&str]) -> Value {
    let r = peer_report(args).await;
    assert!(r.get("failed").is_none(), "rust-sdk-peer {args:?}: {r}");
    r
}

/// `v` decoded as `T` (the peer's SDK wrote it; acp-core's schema types read it).
pub fn decode<T: DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| {
        panic!(
            "{} does not decode from {v}: {e}",
            std::any::type_name::<T>()
        )
    })
}

/// A JSON-RPC error as the peer's SDK reported it.
#[derive(Debug, serde::Deserialize)]
pub struct RpcErr {
    pub code: i64,
    pub message: String,
    #[serde(default)]
    pub data: Option<Value>,
}

/// `{"error": …}` of a call's outcome in a report.
pub fn error_of(outcome: &Value) -> RpcErr {
    decode(
        outcome
            .get("error")
            .unwrap_or_else(|| panic!("not an error: {outcome}")),
    )
}

pub fn text_of(block: &s::ContentBlock) -> Option<&str> {
    match block {
        s::ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

/// The text of every `agent_message_chunk`, in order.
pub fn message_chunks(updates: &[s::SessionNotification]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|n| match &n.update {
            s::SessionUpdate::AgentMessageChunk(c) => text_of(&c.content).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// What the peer's client saw (`seen` of its report).
pub struct Seen {
    pub updates: Vec<s::SessionNotification>,
    pub permissions: Vec<s::RequestPermissionRequest>,
    pub writes: Vec<s::WriteTextFileRequest>,
    pub reads: Vec<s::ReadTextFileRequest>,
}

pub fn seen(report: &Value) -> Seen {
    let s = &report["seen"];
    Seen {
        updates: decode(&s["updates"]),
        permissions: decode(&s["permissions"]),
        writes: decode(&s["writes"]),
        reads: decode(&s["reads"]),
    }
}

/// `acp serve --http 127.0.0.1:0 --cwd DIR -- acp demo-agent ARGS` (token `token`), killed on
/// drop; its stderr lines are kept.
pub struct Server {
    child: std::process::Child,
    pub addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start(cwd: &Path, token: &str, agent_args: &[&str]) -> Server {
        let acp = acp_bin();
        let mut child = Command::new(&acp)
            .args(["serve", "--http", "127.0.0.1:0", "--cwd"])
            .arg(cwd)
            .arg("--")
            .arg(&acp)
            .arg("demo-agent")
            .args(agent_args)
            .env("ACP_SERVE_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start acp serve");
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest.split('/').next().unwrap_or_default().to_string();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                log2.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("acp serve did not print its address");
        Server { child, addr, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
