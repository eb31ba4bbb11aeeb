//! acp's own session records (`$XDG_STATE_HOME/acp/sessions/`) against a hostile agent, a
//! planted record and a token in a URL (docs/security.md): what `acp sessions` shows of a
//! record is escaped (a title with ESC and U+202E), a `?token=` in `acp chat --connect`'s URL is
//! neither saved nor shown, and a record far over the size limit is refused by `--resume` and
//! `acp sessions` naming the file and the limit, in bounded memory.
//!
//! The agent is a python3 script ([`AGENT`]); `acp` runs with `XDG_STATE_HOME` in the test's
//! directory. Waiting is bounded polling of files the agent or `acp` write.

mod cli_support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_support::{acp, TempDir, EVENTUALLY};

/// `python3 agent.py SCENARIO LOG`: offers `session/resume`, opens session `s-1` (new or
/// resumed), answers the prompt. `hold`: at the prompt, writes `at-prompt` in its directory
/// and waits for `go` before answering (so `acp`'s peak memory is read while it runs).
const AGENT: &str = r#"
m = expect("initialize")
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1,
      "agentCapabilities": {"sessionCapabilities": {"resume": {}}}}})
while True:
    m = recv()
    if m is None:
        sys.exit(0)
    if m.get("method") == "session/new":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
        break
    if m.get("method") == "session/resume":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
        break
cwd = m["params"]["cwd"]
pid = expect("session/prompt")["id"]
if scenario == "hold":
    open(os.path.join(cwd, "at-prompt"), "w").close()
    deadline = time.time() + 300
    while not os.path.exists(os.path.join(cwd, "go")):
        if time.time() > deadline:
            sys.exit(3)
        time.sleep(0.02)
update("answered\n")
end(pid)
"#;

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

/// `acp chat --prompt PROMPT [EXTRA] -- python3 agent.py SCENARIO LOG`.
fn chat_args(dir: &TempDir, scenario: &str, prompt: &str, extra: &[&str]) -> Vec<String> {
    let script = dir.join("agent.py");
    std::fs::write(&script, cli_support::py_agent(AGENT)).unwrap();
    let mut args: Vec<String> = ["chat", "--prompt", prompt, "--deny"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend([
        "--".into(),
        "python3".into(),
        script.display().to_string(),
        scenario.into(),
        dir.join("agent.log").display().to_string(),
    ]);
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
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

/// A record planted with a title and an agent holding terminal escapes and a bidi override
/// (a record is agent text: the title is the agent's): `acp sessions` shows them escaped, on
/// one line, and the token of a URL not at all.
#[test]
fn acp_sessions_shows_a_planted_title_escaped() {
    let dir = TempDir::new("sessions-title");
    let (code, _, err) = run(&dir, &strs(&chat_args(&dir, "plain", "first", &[])));
    assert_eq!(code, Some(0), "{err}");
    let path = the_record(&dir);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["title"] = "\u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}evil\u{202e}txt.exe\nline two".into();
    record["agent"] = "ws://devbox:8765/?token=s3cr3t-t0ken-in-an-old-record".into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();

    let (code, out, err) = run(&dir, &["sessions"]);
    assert_eq!(code, Some(0), "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("s-1"))
        .unwrap_or_else(|| panic!("no s-1 in:\n{out}"));
    for bad in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!out.contains(bad), "{bad:?} reached the terminal: {out:?}");
    }
    assert!(
        line.contains("\\e[2J\\e]52;c;cHduZWQ=\\x07evil\\u202etxt.exe\\nline two"),
        "{line}"
    );
    assert!(!out.contains("s3cr3t"), "{out}");
    assert!(line.contains("ws://devbox:8765/"), "{line}");
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

/// Peak resident memory (`VmHWM`) of a running process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Waits (bounded) for `path` to exist while `child` runs.
fn wait_for_file(child: &mut Child, path: &Path) {
    let deadline = Instant::now() + EVENTUALLY;
    while !path.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "acp exited before {}",
            path.display()
        );
        assert!(Instant::now() < deadline, "no {} in time", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A session record planted at 240 MB (the review's size; a sparse file, so the disk is not
/// filled): `acp chat --resume` says the file is over the limit and goes on without it, its
/// peak memory far below the file's size (it read the whole file before: over 240 MB, 1 GB in
/// the review); `acp sessions` skips it with the same words (checked first: the resumed
/// chat saves its record again).
#[test]
fn an_oversize_session_record_is_refused_with_bounded_memory() {
    const PLANTED: u64 = 240 << 20;
    let dir = TempDir::new("sessions-oversize");
    let (code, _, err) = run(&dir, &strs(&chat_args(&dir, "plain", "first", &[])));
    assert_eq!(code, Some(0), "{err}");
    let path = the_record(&dir);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(PLANTED).unwrap();
    drop(file);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();

    let (code, out, err) = run(&dir, &["sessions"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&name) && err.contains("over the limit of 64 MiB"),
        "{err}"
    );
    assert!(out.contains("No saved sessions"), "{out}");

    let args = chat_args(&dir, "hold", "again", &["--resume", "s-1"]);
    let mut child = acp_cmd(&dir, &strs(&args))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    wait_for_file(&mut child, &dir.join("at-prompt"));
    let peak = peak_kib(child.id());
    std::fs::write(dir.join("go"), "").unwrap();
    let deadline = Instant::now() + EVENTUALLY;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp chat --resume did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = err_reader.join().unwrap();
    let out = out_reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{out}{err}");
    assert!(out.contains("answered"), "{out}{err}");
    assert!(peak > 0, "no VmHWM read");
    assert!(
        peak < 160 * 1024,
        "acp chat --resume peaked at {peak} KiB with a {PLANTED}-byte record:\n{err}"
    );
    assert!(
        err.contains(&name) && err.contains("over the limit of 64 MiB"),
        "{err}"
    );
    assert!(err.contains(&PLANTED.to_string()), "{err}");
    eprintln!("acp chat --resume with a {PLANTED}-byte record: peak {peak} KiB");
}

/// `acp ARGS` in `dir` with `input` on stdin: (exit code, stdout, stderr).
fn run_with_input(dir: &TempDir, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    use std::io::Write;
    let mut child = acp_cmd(dir, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acp");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("acp ran");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn continue_reopens_the_newest_session_here_and_sessions_show_turns() {
    let dir = TempDir::new("continue");
    let demo_state = dir.join("demo-state");
    let demo_state = demo_state.to_str().unwrap();
    let chat = |extra: &[&str], input: &str| {
        let mut args = vec!["chat", "--deny"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", acp(), "demo-agent", "--state-dir", demo_state]);
        run_with_input(&dir, &args, input)
    };
    // Nothing saved here yet: refused before any agent starts.
    let (code, _, err) = chat(&["-c"], "");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--continue: no session is saved for"), "{err}");

    // Leaving a chat says how to continue it.
    let (code, _, err) = chat(&[], "the first chat\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("continue this session with: acp chat --resume demo-"),
        "{err}"
    );
    let (code, _, err) = chat(&[], "the second chat\n");
    assert_eq!(code, Some(0), "{err}");
    let (_, out, err) = run(&dir, &["sessions"]);
    assert!(out.contains("1 turn(s)  the second chat"), "{out}{err}");
    assert!(out.contains("1 turn(s)  the first chat"), "{out}{err}");

    // -c takes the newest back (the second) and the agent continues it.
    let (code, out, err) = chat(&["-c"], "once more\n");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("the second chat — 1 earlier prompt(s)"),
        "{err}"
    );
    assert!(!err.contains("does not have session"), "{err}");
    let (_, out, _) = run(&dir, &["sessions"]);
    assert!(out.contains("2 turn(s)  the second chat"), "{out}");
    assert!(out.contains("1 turn(s)  the first chat"), "{out}");
}

#[test]
fn attachments_are_kept_in_the_record_and_named_when_it_is_continued() {
    let dir = TempDir::new("attached");
    std::fs::write(dir.join("notes.txt"), "the secret-ish content of notes\n").unwrap();
    let demo_state = dir.join("demo-state");
    let demo_state = demo_state.to_str().unwrap();
    let chat = |extra: &[&str], input: &str| {
        let mut args = vec!["chat", "--deny"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", acp(), "demo-agent", "--state-dir", demo_state]);
        run_with_input(&dir, &args, input)
    };
    let (code, out, err) = chat(&[], "look at @notes.txt please\n");
    assert_eq!(code, Some(0), "{out}{err}");
    // The record names the file (a resource_link to it), without its content.
    let records: Vec<String> = walk(&dir.join("state"))
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| t.contains("look at @notes.txt"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(records[0].contains("resource_link"), "{}", records[0]);
    assert!(records[0].contains("notes.txt\""), "{}", records[0]);
    assert!(!records[0].contains("secret-ish"), "{}", records[0]);
    // Continued: the recap names the files attached earlier.
    let (code, out, err) = chat(&["-c"], "/echo again\n");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("files attached earlier: notes.txt"), "{err}");
}
