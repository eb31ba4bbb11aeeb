//! acp's own session records (`$XDG_STATE_HOME/acp/sessions/`) and a token in a URL
//! (docs/security.md): a `?token=` in `acp chat --connect`'s URL is neither saved nor shown.
//!
//! `acp` runs with `XDG_STATE_HOME` in the test's directory. Waiting is bounded polling.

mod cli_support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_support::{acp, TempDir, EVENTUALLY};

/// `acp ARGS` in `dir`, its records in `dir/state`, stdin closed.
fn acp_cmd(dir: &TempDir, args: &[&str]) -> Command {
    let mut cmd = Command::new(acp());
    cmd.args(args)
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("NO_COLOR", "1")
        .env_remove("ACP_TOKEN")
        .stdin(Stdio::null());
    cmd
}

fn run(dir: &TempDir, args: &[&str]) -> (Option<i32>, String, String) {
    let out: Output = acp_cmd(dir, args).output().expect("run acp");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The one session record a first chat saved.
fn the_record(dir: &TempDir) -> PathBuf {
    let files = walk(&dir.join("state").join("acp").join("sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// `acp chat --connect 'ws://…/?token=…'` (the URL `acp serve` used to print): the token is
/// neither in the saved record nor in what `acp chat` and `acp sessions` print.
#[test]
fn a_token_in_the_connect_url_is_not_saved_or_shown() {
    const TOKEN: &str = "token-in-the-url-7c1e5b9a0d2f4e68";
    let dir = TempDir::new("sessions-token");
    let mut serve = acp_cmd(&dir, &["serve", "--ws", "127.0.0.1:0"])
        .env("ACP_SERVE_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(serve.id());
    let mut stderr = serve.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let deadline = Instant::now() + EVENTUALLY;
    let addr = loop {
        let text = log.lock().unwrap().clone();
        if let Some(at) = text.find("listening on ws://") {
            let rest = &text[at + "listening on ws://".len()..];
            if let Some(end) = rest.find(' ') {
                break rest[..end].to_string();
            }
        }
        assert!(
            Instant::now() < deadline,
            "acp serve never listened:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let url = format!("ws://{addr}/?token={TOKEN}");
    let (code, out, err) = run(
        &dir,
        &["chat", "--prompt", "hello", "--deny", "--connect", &url],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains(TOKEN) && !out.contains(TOKEN), "{out}{err}");
    let saved = std::fs::read_to_string(the_record(&dir)).unwrap();
    assert!(
        !saved.contains(TOKEN),
        "the record keeps the token: {saved}"
    );
    assert!(saved.contains(&format!("ws://{addr}/")), "{saved}");
    for args in [&["sessions"][..], &["sessions", "--json"][..]] {
        let (code, out, err) = run(&dir, args);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains(&format!("ws://{addr}/")), "{out}");
        assert!(!out.contains(TOKEN) && !err.contains(TOKEN), "{out}{err}");
    }
    drop(server);
    let _ = serve.wait();
}

/// Stops `acp serve` (SIGTERM: it stops its agents) when the test ends, however it ends.
struct Server(u32);

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0 as i32, libc::SIGTERM) };
    }
}
