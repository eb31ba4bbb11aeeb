//! `acp chat` after its agent crashes: the crash is reported (exit status, stderr tail), the
//! agent is started again within the shared crash budget (acp-client `restart`) and the
//! session continues (`session/resume` here: the demo agent keeps sessions in --state-dir);
//! the crash after the budget ends the chat with the reason. An agent that can only load
//! (`--no-resume`) replays the conversation: after a crash the replay is folded without being
//! shown (the conversation is on screen already), while `--load` at start shows it.

mod cli_support;

use std::io::Write;
use std::process::{Command, Stdio};

use cli_support::{acp, TempDir};

fn chat(dir: &TempDir, input: &str) -> (Option<i32>, String, String) {
    chat_with(dir, &[], &[], input)
}

/// `acp chat --deny CHAT_ARGS -- acp demo-agent --state-dir DIR/state AGENT_ARGS` with `input`.
fn chat_with(
    dir: &TempDir,
    chat_args: &[&str],
    agent_args: &[&str],
    input: &str,
) -> (Option<i32>, String, String) {
    let mut child = Command::new(acp())
        .args(["chat", "--deny"])
        .args(chat_args)
        .args(["--", acp(), "demo-agent", "--state-dir"])
        .arg(dir.join("state"))
        .args(agent_args)
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
    assert!(err.contains("restarting it in 500 milliseconds"), "{err}");
    // The same session, resumed (acp-client's session engine says it: the agent remembers).
    let id = err
        .split("session ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("a session id")
        .to_string();
    assert!(
        err.contains(&format!(
            "session {id} resumed: it remembers the conversation"
        )),
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
    assert_eq!(err.matches("restarting it in").count(), 4, "{err}");
    assert!(
        err.contains("agent crashed 5 times in 2 minutes; not restarting"),
        "{err}"
    );
    assert!(!out.contains("You said: \"never\""), "{out}");
}

/// The session id `acp chat` names on stderr ("… session ID in …").
fn session_id(err: &str) -> String {
    err.split("session ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("a session id")
        .to_string()
}

#[test]
fn after_a_crash_an_agent_that_can_only_load_replays_the_session_unseen() {
    let dir = TempDir::new("restart-load");
    let (code, out, err) = chat_with(
        &dir,
        &[],
        &["--no-resume"],
        "first turn\n#crash now\nafter the crash\n",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("exited with code 70"), "{err}");
    let id = session_id(&err);
    // Loaded (no resume offered), said in one line with how much was replayed...
    let notice = err
        .lines()
        .find(|l| l.contains(&format!("session {id} reloaded: ")))
        .unwrap_or_else(|| panic!("the reload notice: {err}"));
    let replayed: u64 = notice
        .split("reloaded: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count in {notice}"));
    // (the first turn: its prompt, plan, answer chunks, tool calls).
    assert!(replayed > 5, "{notice}");
    assert!(notice.contains("not shown again"), "{notice}");
    assert!(!err.contains("the agent replays it"), "{err}");
    // ...and the earlier turn is on screen once, not a second time.
    let all = format!("{out}{err}");
    assert_eq!(
        all.matches("You said: \"first turn\"").count(),
        1,
        "the first answer once: {all}"
    );
    assert_eq!(all.matches("first turn").count(), 1, "{all}");
    // The session goes on, shown as usual.
    assert_eq!(
        out.matches("You said: \"after the crash\"").count(),
        1,
        "{out}"
    );
}

/// Issue 21: after a crash, an agent that keeps nothing (the demo agent without
/// `--state-dir`: it can load sessions, but only those of its own process) no longer has the
/// session: the user is told it does not, and that a new session goes on without the
/// conversation above; the conversation goes on. Before, `acp chat` said "session … reloaded
/// (0 replayed update(s) …)", as if the agent remembered it.
#[test]
fn after_a_crash_an_agent_that_keeps_nothing_is_said_to_have_lost_the_conversation() {
    let dir = TempDir::new("restart-stateless");
    let mut child = Command::new(acp())
        .args(["chat", "--deny", "--", acp(), "demo-agent"])
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
        .write_all(b"first turn\n#crash now\nafter the crash\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(err.contains("exited with code 70"), "{err}");
    let id = session_id(&err);
    assert!(
        err.contains(&format!("does not have session {id} (any more)")),
        "{err}"
    );
    assert!(
        err.contains("the agent does not remember the conversation above"),
        "{err}"
    );
    assert!(!err.contains("reloaded"), "{err}");
    assert!(!err.contains("resumed"), "{err}");
    // The conversation goes on, in the new session.
    assert_eq!(
        out.matches("You said: \"after the crash\"").count(),
        1,
        "{out}"
    );
}

#[test]
fn a_session_loaded_at_start_shows_its_replay_before_the_new_turn() {
    let dir = TempDir::new("load-at-start");
    let (code, _, err) = chat_with(&dir, &[], &["--no-resume"], "first turn\n");
    assert_eq!(code, Some(0), "{err}");
    let id = session_id(&err);
    let (code, out, err) = chat_with(
        &dir,
        &["--load", &id, "--prompt", "second turn"],
        &["--no-resume"],
        "",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(&format!("loaded session {id}")), "{err}");
    assert!(!err.contains("reloaded"), "{err}");
    // The replay is the conversation here: shown once, before the new turn's answer.
    let earlier = out
        .find("You said: \"first turn\"")
        .unwrap_or_else(|| panic!("the replay shown: {out}"));
    let answer = out
        .find("You said: \"second turn\"")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(earlier < answer, "{out}");
    assert_eq!(out.matches("You said: \"first turn\"").count(), 1, "{out}");
    // Taken in order: the session's record starts with the replayed prompt, then the new one
    // (a replay taken after the new prompt began was merged into it).
    let (code, list, err) = sessions_json(&dir);
    assert_eq!(code, Some(0), "{err}");
    let record: serde_json::Value = list
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["sessionId"] == id.as_str())
        .unwrap_or_else(|| panic!("the record of {id}: {list}"));
    assert_eq!(record["title"], "first turn", "{record}");
}

fn sessions_json(dir: &TempDir) -> (Option<i32>, String, String) {
    let out = Command::new(acp())
        .args(["sessions", "--json"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join("xdg"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 21: after a crash, an agent that can neither resume nor load sessions gets one
/// `initialize` per process and then `session/new` straight away (acp-client's session engine
/// decides from the capabilities it already has), and the user is told the conversation is
/// lost to it. Before, `acp chat` sent `initialize` twice to the restarted agent.
#[test]
fn after_a_crash_an_agent_that_cannot_reopen_is_initialized_once_and_given_a_new_session() {
    let dir = TempDir::new("restart-no-reopen");
    let log = dir.join("methods");
    let runs = dir.join("runs");
    let agent = dir.script(
        "agent.sh",
        &format!(
            r#"n=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '{runs}'
while read -r line; do
  echo "$line" | sed -n 's/.*"method":"\([^"]*\)".*/\1/p' >> '{log}'
  id=$(echo "$line" | sed -n 's/^{{"jsonrpc":"2.0","id":\([0-9]*\),.*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      echo '{{"jsonrpc":"2.0","id":'$id',"result":{{"protocolVersion":1,"agentCapabilities":{{}}}}}}' ;;
    *'"method":"session/new"'*)
      echo '{{"jsonrpc":"2.0","id":'$id',"result":{{"sessionId":"s-'$n'"}}}}' ;;
    *'"method":"session/prompt"'*'#crash'*)
      echo 'crashing as asked' >&2; exit 70 ;;
    *'"method":"session/prompt"'*)
      echo '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s-'$n'","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"answer '$n'"}}}}}}}}'
      echo '{{"jsonrpc":"2.0","id":'$id',"result":{{"stopReason":"end_turn"}}}}' ;;
    *'"id":'*)
      echo '{{"jsonrpc":"2.0","id":'$id',"error":{{"code":-32601,"message":"method not found"}}}}' ;;
  esac
done"#,
            runs = runs.display(),
            log = log.display(),
        ),
    );
    let mut child = Command::new(acp())
        .args(["chat", "--deny", "--"])
        .arg(&agent)
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
        .write_all(b"first\n#crash now\nafter the crash\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap().trim(), "2", "{err}");
    let methods = std::fs::read_to_string(&log).unwrap();
    let methods: Vec<&str> = methods.lines().collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "session/new",
            "session/prompt",
            "session/prompt",
            "initialize",
            "session/new",
            "session/prompt",
        ],
        "{err}"
    );
    assert!(
        err.contains(
            "restarted without the conversation above (it can neither resume nor load sessions)"
        ),
        "{err}"
    );
    assert!(
        !err.contains("reloaded") && !err.contains("resumed"),
        "{err}"
    );
    assert!(
        out.contains("answer 1") && out.contains("answer 2"),
        "{out}"
    );
}
