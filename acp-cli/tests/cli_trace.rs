//! `acp trace` as a process: bad input gets a clear error; a trace is served on loopback to
//! requests with the token (and only them); a `acp chat --log-rpc` file written by a real chat
//! is read whole, its requests paired. (The page itself is tested in headless Chromium by
//! trace-viewer/test/browser.test.mjs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn acp() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acp"))
}

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("acp-cli-trace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = acp().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = Dir::new("bad");
    let missing = dir.0.join("nope.ndjson");
    let (code, err) = run(&["trace".as_ref(), "--no-open".as_ref(), missing.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot read") && err.contains("nope.ndjson"),
        "{err}"
    );

    let notes = dir.0.join("notes.md");
    std::fs::write(&notes, "# notes\n\nnot a trace at all\n").unwrap();
    let (code, err) = run(&["trace".as_ref(), "--no-open".as_ref(), notes.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a trace this viewer reads"), "{err}");
    assert!(
        err.contains("--log-rpc"),
        "the error names the formats: {err}"
    );

    let (code, err) = run(&["trace".as_ref(), "--no-open".as_ref(), dir.0.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("directory"), "{err}");

    let (code, _) = run(&["trace".as_ref()]);
    assert_eq!(code, 2, "no FILE is a usage error");
}

/// A running `acp trace --no-open FILE`, its URL's port and token.
struct Served {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(file: &Path) -> Served {
    let mut child = acp()
        .args(["trace", "--no-open"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim();
    let rest = url.strip_prefix("http://127.0.0.1:").expect(url);
    let (port, token) = rest.split_once("/#token=").expect(url);
    Served {
        child,
        port: port.parse().unwrap(),
        token: token.to_string(),
    }
}

/// One GET with these extra header lines; the status and the body.
fn get(port: u16, path: &str, headers: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn a_chats_log_rpc_file_is_served_with_the_token_only() {
    let dir = Dir::new("served");
    let log = dir.0.join("rpc.ndjson");
    // A real chat with the demo agent writes the trace.
    let status = acp()
        .args(["chat", "--prompt", "hello", "--deny", "--log-rpc"])
        .arg(&log)
        .arg("--cwd")
        .arg(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some(), "the chat ran");
    let served = serve(&log);
    let host = format!("Host: 127.0.0.1:{}\r\n", served.port);
    let auth = format!("Authorization: Bearer {}\r\n", served.token);

    let (code, body) = get(served.port, "/api/summary", &format!("{host}{auth}"));
    assert_eq!(code, 200, "{body}");
    let summary: serde_json::Value = serde_json::from_str(&body).unwrap();
    let prompt = summary["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "session/prompt")
        .expect("the prompt");
    assert_eq!(prompt["count"], 1);
    assert_eq!(
        prompt["answered"], 1,
        "the prompt is paired with its answer"
    );
    assert!(prompt["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(summary["turns"]["count"], 1);
    assert_eq!(summary["problems"]["malformed"], 0);

    // The page is served without the token, the API not.
    let (code, page) = get(served.port, "/", &host);
    assert_eq!(code, 200);
    assert!(page.contains("main.js"), "{page}");
    assert_eq!(get(served.port, "/api/status", &host).0, 401);
    let other = format!("Host: attacker.example:{}\r\n{auth}", served.port);
    assert_eq!(get(served.port, "/api/status", &other).0, 421);
    let origin = format!("{host}{auth}Origin: https://attacker.example\r\n");
    assert_eq!(get(served.port, "/api/status", &origin).0, 403);
}
