//! `acp chat` after its agent crashes: the crash is reported (exit status, stderr tail), the
//! agent is started again within the shared crash budget (acp-client `restart`) and the
//! session continues (`session/resume` here: the demo agent keeps sessions in --state-dir);
//! the crash after the budget ends the chat with the reason.

mod cli_support;

use std::io::Write;
use std::process::{Command, Stdio};

use cli_support::{acp, TempDir};

fn chat(dir: &TempDir, input: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(acp())
        .args(["chat", "--deny", "--", acp(), "demo-agent", "--state-dir"])
        .arg(dir.join("state"))
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join("xdg"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_crashed_agent_is_restarted_and_the_session_continues() {
    let dir = TempDir::new("restart");
    let (code, out, err) = chat(&dir, "first\n#crash now\nafter the crash\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("exited with code 70"), "{err}");
    assert!(
        err.contains("crashing mid-answer as asked"),
        "the stderr tail: {err}"
    );
    assert!(
        err.contains("restarting the agent in 500 milliseconds"),
        "{err}"
    );
    // The same session, resumed.
    let id = err
        .split("session ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("a session id")
        .to_string();
    assert!(
        err.contains(&format!("resumed session {id}")),
        "session {id} resumed: {err}"
    );
    assert!(out.contains("You said: \"after the crash\""), "{out}");
}

#[test]
fn crashes_past_the_budget_end_the_chat() {
    let dir = TempDir::new("restart-budget");
    let (code, out, err) = chat(
        &dir,
        "#crash 1\n#crash 2\n#crash 3\n#crash 4\n#crash 5\nnever\n",
    );
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("restarting the agent").count(), 4, "{err}");
    assert!(
        err.contains("agent crashed 5 times in 2 minutes; not restarting"),
        "{err}"
    );
    assert!(!out.contains("You said: \"never\""), "{out}");
}
