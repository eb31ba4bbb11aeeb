//! Every subcommand run with a stdout nobody reads (`acp sessions | head -1`, `acp agents |
//! true`) ends quietly: exit 0, no panic, nothing on stderr about it. stdout is the write end
//! of a pipe whose read end is closed before acp starts, so every write to it fails with EPIPE
//! (no race with a reader that leaves late).

mod cli_support;

use std::process::{Command, Stdio};

use cli_support::{acp, TempDir};

/// The write end of a pipe whose read end is already closed.
fn closed_pipe() -> std::fs::File {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // Close-on-exec: a child another test starts meanwhile must not inherit the read end.
    // SAFETY: `fds` has room for the two descriptors pipe2(2) writes; each is owned once below.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        0,
        "pipe2"
    );
    // SAFETY: both are new descriptors of this process, owned by nothing else.
    let (reader, writer) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    writer
}

/// `acp ARGS` in a new directory (its own state and cache), stdout a pipe nobody reads.
fn with_closed_stdout(tag: &str, args: &[&str]) -> (i32, String) {
    let dir = TempDir::new(tag);
    let writer = closed_pipe();
    let out = Command::new(acp())
        .args(args)
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        // A registry refresh is refused at once (nothing listens on port 9 here).
        .env("ACP_REGISTRY_URL", "http://127.0.0.1:9/registry.json")
        .env("NO_COLOR", "1")
        .env_remove("ACP_TOKEN")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("acp runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

fn assert_quiet(tag: &str, args: &[&str]) {
    let (code, stderr) = with_closed_stdout(tag, args);
    assert_eq!(
        code, 0,
        "acp {args:?} with stdout closed: exit {code}\n{stderr}"
    );
    for word in ["panicked", "Broken pipe", "os error 32"] {
        assert!(
            !stderr.contains(word),
            "acp {args:?} said {word:?}:\n{stderr}"
        );
    }
}

#[test]
fn agents_ends_quietly_when_nobody_reads() {
    assert_quiet("epipe-agents", &["agents"]);
    assert_quiet("epipe-agents-json", &["agents", "--json"]);
}

#[test]
fn sessions_ends_quietly_when_nobody_reads() {
    assert_quiet("epipe-sessions", &["sessions"]);
    assert_quiet("epipe-sessions-json", &["sessions", "--json"]);
    let demo = acp();
    assert_quiet(
        "epipe-sessions-agent",
        &["sessions", "--", demo, "demo-agent"],
    );
}

#[test]
fn login_ends_quietly_when_nobody_reads() {
    let demo = acp();
    assert_quiet("epipe-login", &["login", "--", demo, "demo-agent"]);
}

#[test]
fn help_ends_quietly_when_nobody_reads() {
    assert_quiet("epipe-help", &["--help"]);
    assert_quiet("epipe-chat-help", &["chat", "--help"]);
    assert_quiet("epipe-version", &["--version"]);
}

#[test]
fn a_one_shot_chat_ends_quietly_when_nobody_reads() {
    let demo = acp();
    assert_quiet(
        "epipe-chat",
        &["chat", "--yes", "-p", "hello", "--", demo, "demo-agent"],
    );
    assert_quiet(
        "epipe-chat-json",
        &[
            "chat",
            "--yes",
            "--json",
            "-p",
            "hello",
            "--",
            demo,
            "demo-agent",
        ],
    );
}
