//! `acp chat` built with ACP v2 (feature `unstable_protocol_v2`) offers v2 in `initialize`;
//! against `acp demo-agent` (which takes the offer) it completes prompt turns ended by
//! `state_update`, permission questions (answered by flag, typed, or left unanswered), a
//! cancel by Ctrl-C, and `--load` / `--resume` with the agent's replay (`--state-dir`: the
//! agent restarts between the runs). A v1 agent still gets a v1 chat from the same build.

mod cli_support;
#[path = "cli_support/tmux.rs"]
mod tmux;

use cli_support::{acp, json_lines, py_chat, run, update_kinds, Running, TempDir, EVENTUALLY};

/// `acp chat ARGS -- acp demo-agent AGENT_ARGS` in `dir`.
fn chat(dir: &TempDir, args: &[&str], agent: &[&str], stdin: Option<&str>) -> cli_support::Run {
    let mut all: Vec<&str> = vec!["chat"];
    all.extend(args);
    all.extend(["--", acp(), "demo-agent"]);
    all.extend(agent);
    run(&all, dir.path(), stdin)
}

#[test]
fn a_v2_turn_with_a_permission_question_ends_on_its_idle_state_update() {
    let dir = TempDir::new("v2-turn");
    let r = chat(
        &dir,
        &["--prompt", "hello there", "--yes", "--json"],
        &[],
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let out = json_lines(&r.stdout);
    let kinds = update_kinds(&out);
    // v2's updates (keyed upserts, the turn's state), so v2 was negotiated.
    assert_eq!(kinds.first(), Some(&"user_message"), "{}", r.dump());
    assert!(kinds.contains(&"requires_action") || kinds.contains(&"state_update"));
    assert_eq!(kinds.last(), Some(&"state_update"), "{}", r.dump());
    let end = out.last().unwrap();
    assert_eq!(end["stopReason"], "end_turn", "{}", r.dump());
    assert!(r.stderr.contains("Allow (--yes)"), "{}", r.dump());

    // The same in the human view: the answer, nothing of the turn's state shown as unknown.
    let r = chat(&dir, &["--prompt", "hello there", "--deny"], &[], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("You said: hello there. The write was rejected."),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.contains("Write acp-demo.txt · failed"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("[session update:"), "{}", r.dump());
}

#[test]
fn a_v2_question_answered_on_stdin_or_left_unanswered() {
    let dir = TempDir::new("v2-typed");
    // Typed: a wrong answer is asked again, then option 1.
    let r = chat(&dir, &["--prompt", "typed"], &[], Some("9\n1\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("Write acp-demo.txt?"), "{}", r.dump());
    assert!(
        r.stdout.contains("You said: typed. The write was allowed."),
        "{}",
        r.dump()
    );
    // Stdin closed at the question: answered `cancelled`, so the turn is cancelled (the
    // agent's idle `state_update` says so) and the chat exits 3.
    let r = chat(&dir, &["--prompt", "unanswered"], &[], None);
    assert_eq!(r.code(), 3, "{}", r.dump());
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
    assert!(!r.stdout.contains("You said"), "{}", r.dump());
}

#[test]
fn ctrl_c_at_a_v2_question_cancels_the_turn() {
    let dir = TempDir::new("v2-sigint");
    let mut running = Running::start_interactive(
        &["chat", "--prompt", "hi", "--", acp(), "demo-agent"],
        dir.path(),
    );
    running.wait_for_stderr("choose 1-2:", EVENTUALLY);
    running.interrupt();
    let r = running.finish(EVENTUALLY);
    assert_eq!(r.code(), 3, "{}", r.dump());
    assert!(r.stderr.contains("cancelling the turn"), "{}", r.dump());
    assert!(
        r.stderr.contains("withdrawn (the turn was cancelled)"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
}

#[test]
fn load_and_resume_replay_a_v2_session_from_another_agent_process() {
    let dir = TempDir::new("v2-replay");
    let state = dir.join("agent-state");
    let state = state.to_str().unwrap();
    let agent = ["--state-dir", state];
    let r = chat(
        &dir,
        &["--prompt", "first words", "--yes", "--json"],
        &agent,
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let id = json_lines(&r.stdout).last().unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // --load: a new agent process replays the session (v2: session/resume with replayFrom),
    // shown as the conversation, then a turn goes on in it.
    let r = chat(
        &dir,
        &["--load", &id, "--prompt", "second", "--yes"],
        &agent,
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains(&format!("loaded session {id}")) && r.stderr.contains("(2 replayed"),
        "{}",
        r.dump()
    );
    let first = r
        .stdout
        .find("You said: first words.")
        .unwrap_or_else(|| panic!("the replay is shown\n{}", r.dump()));
    let second = r.stdout.find("You said: second.").unwrap();
    assert!(
        first < second,
        "the replay comes before the turn\n{}",
        r.dump()
    );

    // --resume of the conversation saved here: the replay is folded into it (nothing shown
    // twice), what this copy lacked (the second turn) is added.
    let r = chat(
        &dir,
        &["--resume", &id, "--prompt", "third", "--yes"],
        &agent,
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("resumed with a replay of 4 update(s)"),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("first words"), "{}", r.dump());
    assert!(r.stdout.contains("You said: third."), "{}", r.dump());

    // A session the agent does not have: refused, said so.
    let r = chat(
        &dir,
        &["--load", "no-such-session", "--prompt", "x"],
        &agent,
        None,
    );
    assert_ne!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("no-such-session"), "{}", r.dump());
}

/// The same build against a v1 agent: it answers 1 to the offer of 2, and the chat is v1 (the
/// `session/prompt` answer ends the turn; `session/new` as v1 has it).
#[test]
fn a_v1_agent_gets_a_v1_chat_from_the_same_build() {
    let dir = TempDir::new("v2-v1agent");
    let r = py_chat(
        &dir,
        &["--prompt", "hi"],
        "s",
        r#"
m = expect("initialize")
assert m["params"]["protocolVersion"] == 2, m
assert "clientCapabilities" in m["params"], m
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
m = expect("session/new")
assert "mcpServers" in m["params"], m
send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
m = expect("session/prompt")
update("a v1 answer")
end(m["id"])
expect("never")
"#,
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("a v1 answer"), "{}", r.dump());
}

#[test]
fn a_v2_agent_s_config_options_are_listed_and_set_with_slash_config() {
    let dir = TempDir::new("v2-config");
    let r = chat(
        &dir,
        &[],
        &[],
        Some("/config\n/config permissions always\n/config permissions allow\n/config permissions\nwrite it\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    // Listed from the session/new answer (v2's `configId`).
    assert!(
        r.stderr
            .contains("permissions = ask (Permissions; ask, allow)"),
        "{}",
        r.dump()
    );
    // A value the agent refuses: its -32602 shown, nothing changed.
    assert!(
        r.stderr.contains("(-32602)") && r.stderr.contains("permissions is ask or allow"),
        "{}",
        r.dump()
    );
    // Set: the answer's full set replaces the session's (listed again with the new value).
    assert!(
        r.stderr
            .contains("permissions = allow (Permissions; ask, allow)"),
        "{}",
        r.dump()
    );
    // And the agent acts on it: no question before the write.
    assert!(
        r.stdout
            .contains("You said: write it. The write was allowed (permissions: allow)."),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("Write acp-demo.txt?"), "{}", r.dump());
}

#[test]
fn a_v2_turn_ended_without_a_stop_reason_or_with_an_error_says_so() {
    let dir = TempDir::new("v2-no-reason");
    // Idle without a stop reason: the turn is over and nothing failed (exit 0); the chat says
    // the reason was not given instead of calling it unknown.
    let r = chat(&dir, &["--prompt", "#no-reason"], &[], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("Done; I give no stop reason."),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("[turn ended: the agent gave no stop reason]"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("does not know"), "{}", r.dump());
    let r = chat(&dir, &["--prompt", "#no-reason", "--json"], &[], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    let end = json_lines(&r.stdout).pop().unwrap();
    assert!(
        end.get("stopReason")
            .is_some_and(serde_json::Value::is_null),
        "{end}"
    );
    // v2's error stop reason: the agent's message, exit 1.
    let r = chat(&dir, &["--prompt", "#error"], &[], None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr
            .contains("the turn failed: the demo agent failed on purpose (#error)"),
        "{}",
        r.dump()
    );
}

/// `/cancel-tool` during a v2 turn (typed in a real terminal, tmux): an unknown id is refused
/// by the engine before it is sent; with no id, the one running tool call (`#long-task`'s,
/// which advertises `capabilities.cancel`) is cancelled: it shows `cancelled` and the turn
/// goes on to `end_turn` (no `[turn ended: …]` notice, exit status 0). Between turns there is nothing to cancel.
#[test]
fn slash_cancel_tool_cancels_the_running_tool_call_and_the_turn_goes_on() {
    if let Err(why) = tmux::ensure_tmux() {
        println!("SKIPPED slash_cancel_tool_cancels_the_running_tool_call_and_the_turn_goes_on: tmux is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("v2-cancel-tool");
    let term = tmux::start_chat("cancel-tool", dir.path(), "");
    term.wait_for("type a prompt");
    // Listed in /help, completed by Tab; between turns there is nothing to cancel.
    term.keys(&["/help", "Enter"]);
    term.wait_for("/cancel-tool [ID] during a turn cancels one tool call");
    term.keys(&["/cancel-", "Tab"]);
    term.wait_for("> /cancel-tool");
    term.keys(&["Enter"]);
    term.wait_for("no turn is running: there is no tool call to cancel");
    term.keys(&["run #long-task", "Enter"]);
    term.wait_for("Run the long task");
    term.keys(&["/cancel-tool no-such-tool", "Enter"]);
    term.wait_for("/cancel-tool no-such-tool: not cancelled:");
    term.wait_for("does not advertise capabilities.cancel");
    term.keys(&["/cancel-tool", "Enter"]);
    // The agent's answer and its update come in either order.
    term.wait_in_order(
        "the agent's acceptance",
        &[
            "the agent accepted cancelling tool call ",
            " (Run the long task) (the turn goes on)",
        ],
    );
    term.wait_in_order(
        "the tool call cancelled, then the turn's end",
        &[
            "Run the long task · cancelled",
            "The long task was cancelled; the turn goes on without it.",
        ],
    );
    term.wait_prompt();
    // `end_turn`: any other stop reason is shown as `[turn ended: …]`, and the chat's exit
    // status is the last turn's (0 for end_turn, 3 for cancelled).
    assert!(!term.pane().contains("[turn ended"), "{}", term.pane());
    term.keys(&["C-d"]);
    term.wait_for("acp exited with 0");
}

/// `/cancel-tool` with a v1 agent: v1 cancels only whole turns, and the chat says so.
#[test]
fn slash_cancel_tool_with_a_v1_agent_says_only_the_turn_can_be_cancelled() {
    let dir = TempDir::new("v2-cancel-tool-v1");
    let r = py_chat(
        &dir,
        &[],
        "s",
        r#"
m = expect("initialize")
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
m = expect("session/new")
send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
expect("never")
"#,
        Some("/cancel-tool t1\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr
            .contains("the agent speaks ACP v1: only the whole turn can be cancelled (Ctrl-C)"),
        "{}",
        r.dump()
    );
}
