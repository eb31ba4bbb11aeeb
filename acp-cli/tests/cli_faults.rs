//! `acp chat` against broken agents: each case ends with a clear message on stderr and a
//! non-zero exit, quickly, never a hang. Also a scripted "real" agent (plain sh speaking ACP).

mod cli_support;

use std::time::Duration;

use cli_support::{acp, run, TempDir};

/// A sh agent that answers `initialize` (id 0) and `session/new` (id 1), then runs `then`.
fn scripted(dir: &TempDir, then: &str) -> String {
    dir.script(
        "agent.sh",
        &format!(
            r#"read -r line
echo '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":1,"agentCapabilities":{{}}}}}}'
read -r line
echo '{{"jsonrpc":"2.0","id":1,"result":{{"sessionId":"s-1"}}}}'
read -r line
{then}"#
        ),
    )
    .to_string_lossy()
    .into_owned()
}

#[test]
fn a_scripted_agent_speaking_acp_over_stdio_works() {
    let dir = TempDir::new("scripted");
    let agent = scripted(
        &dir,
        r#"echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"scripted "}}}}'
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}'
echo '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
cat >/dev/null"#,
    );
    let r = run(&["chat", "--prompt", "hi", "--", &agent], dir.path(), None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("scripted hello"), "{}", r.dump());
}

#[test]
fn an_agent_command_that_does_not_exist_is_reported() {
    let dir = TempDir::new("notfound");
    let r = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--",
            "acp-no-such-agent-command-xyz",
            "--flag",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("cannot start the agent"), "{}", r.dump());
    assert!(
        r.stderr
            .contains("command not found: `acp-no-such-agent-command-xyz`"),
        "{}",
        r.dump()
    );
}

#[test]
fn an_agent_that_exits_during_initialize_is_reported_with_its_status_and_stderr() {
    let dir = TempDir::new("exits");
    let agent = dir.script(
        "agent.sh",
        "echo 'fatal: no API key configured' >&2\nexit 3",
    );
    let r = run(
        &["chat", "--prompt", "hi", "--", agent.to_str().unwrap()],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("`initialize`"), "{}", r.dump());
    assert!(r.stderr.contains("exited with code 3"), "{}", r.dump());
    assert!(
        r.stderr.contains("fatal: no API key configured"),
        "{}",
        r.dump()
    );
}

#[test]
fn an_agent_that_crashes_mid_turn_is_reported() {
    let dir = TempDir::new("crash");
    let agent = scripted(&dir, "echo 'panic: segfault in the model' >&2\nkill -9 $$");
    let r = run(&["chat", "--prompt", "hi", "--", &agent], dir.path(), None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("`session/prompt`"), "{}", r.dump());
    assert!(
        r.stderr.contains("killed by signal 9 (SIGKILL)"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr.contains("panic: segfault in the model"),
        "{}",
        r.dump()
    );
}

#[test]
fn an_agent_writing_garbage_to_stdout_gets_a_warning_and_a_timeout() {
    let dir = TempDir::new("garbage");
    let agent = dir.script(
        "agent.sh",
        "echo 'Welcome to my agent v1 (this is not JSON)'\ncat >/dev/null",
    );
    let r = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--timeout",
            "2",
            "--",
            agent.to_str().unwrap(),
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 7, "{}", r.dump());
    assert!(
        r.stderr
            .contains("not JSON to stdout (ignored): Welcome to my agent v1"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr.contains("did not answer `initialize` within 2 s"),
        "{}",
        r.dump()
    );
    // A hint right after its first non-JSON line, not only when the wait ends.
    let hint = r
        .stderr
        .find("is this an ACP agent? its output is not JSON-RPC; some agents need a flag such as --acp")
        .unwrap_or_else(|| panic!("no hint\n{}", r.dump()));
    assert!(
        hint < r.stderr.find("did not answer `initialize`").unwrap(),
        "{}",
        r.dump()
    );
    assert_eq!(
        r.stderr.matches("is this an ACP agent?").count(),
        1,
        "{}",
        r.dump()
    );
    assert!(r.elapsed < Duration::from_secs(30), "{}", r.dump());
}

#[test]
fn an_agent_that_never_answers_times_out_without_hanging() {
    let dir = TempDir::new("silent");
    // Ignores stdin EOF and SIGTERM: only the final SIGKILL of the group stops it.
    let agent = dir.script(
        "agent.sh",
        "trap '' TERM\necho 'starting up...' >&2\nwhile true; do sleep 1; done",
    );
    let r = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--timeout",
            "2",
            "--",
            agent.to_str().unwrap(),
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 7, "{}", r.dump());
    assert!(
        r.stderr.contains("did not answer `initialize` within 2 s"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("starting up..."), "{}", r.dump());
    assert!(r.elapsed < Duration::from_secs(30), "{}", r.dump());
}

#[test]
fn a_silent_turn_is_cancelled_after_the_timeout() {
    let dir = TempDir::new("silentturn");
    let agent = scripted(&dir, "cat >/dev/null");
    let r = run(
        &["chat", "--prompt", "hi", "--timeout", "2", "--", &agent],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 7, "{}", r.dump());
    assert!(
        r.stderr.contains("sent nothing for 2 s during the turn"),
        "{}",
        r.dump()
    );
    assert!(r.elapsed < Duration::from_secs(30), "{}", r.dump());
}

#[test]
fn an_agent_flooding_stderr_still_works() {
    let dir = TempDir::new("flood");
    let agent = dir.script(
        "agent.sh",
        &format!(
            "i=0\nwhile [ $i -lt 20000 ]; do echo \"debug line $i: lorem ipsum dolor sit amet consectetur\" >&2; i=$((i+1)); done\nexec '{}' demo-agent",
            acp()
        ),
    );
    let r = run(
        &[
            "chat",
            "--prompt",
            "flood",
            "--yes",
            "--",
            agent.to_str().unwrap(),
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("You said: \"flood\""), "{}", r.dump());
    assert!(dir.join("acp-demo.txt").exists());
    // The flood is not copied to our stderr.
    assert!(r.stderr.len() < 10_000, "{}", r.stderr.len());
}

#[test]
fn an_agent_error_answer_is_reported() {
    let dir = TempDir::new("errans");
    let agent = scripted(
        &dir,
        r#"echo '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"model overloaded"}}'
cat >/dev/null"#,
    );
    let r = run(&["chat", "--prompt", "hi", "--", &agent], dir.path(), None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr
            .contains("answered `session/prompt` with an error: model overloaded"),
        "{}",
        r.dump()
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = TempDir::new("usage");
    let r = run(&["chat", "--yes", "--deny"], dir.path(), None);
    assert_eq!(r.code(), 2, "{}", r.dump());
    let r = run(&["chat", "--timeout", "soon"], dir.path(), None);
    assert_eq!(r.code(), 2, "{}", r.dump());
}

#[test]
fn updates_sent_before_the_first_prompt_are_shown_and_none_of_the_turn_is_lost() {
    let dir = TempDir::new("early");
    let agent = dir.script(
        "agent.sh",
        r#"read -r line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
read -r line
echo '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1"}}'
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"review","description":"Review code"}]}}}'
read -r line
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"session_info_update","title":"Greeting"}}}'
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"usage_update","used":1200,"size":200000}}}'
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"last words"}}}}'
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"usage_update","used":1300,"size":200000}}}'
echo '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
cat >/dev/null"#,
    );
    let r = run(
        &["chat", "--prompt", "hi", "--", agent.to_str().unwrap()],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    // A status line, on stderr: stdout carries only the conversation.
    assert!(r.stderr.contains("[commands: /review]"), "{}", r.dump());
    assert_eq!(
        r.stdout.trim(),
        "last words",
        "only the conversation: {}",
        r.dump()
    );
    assert!(r.stderr.contains("[title: Greeting]"), "{}", r.dump());
    assert_eq!(
        r.stderr.matches("context: ").count(),
        1,
        "usage once per turn: {}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("· context: 1300 of 200000 tokens (0%) · title: Greeting]"),
        "{}",
        r.dump()
    );
}

/// A sh agent that can load sessions (not resume them): `session/new` opens `s-1`;
/// `session/load` replays what its scenario (`$1`) says, answers, and, for `replay3`, sends an
/// update of its own right behind the answer; then a turn answers `new answer`.
fn loading_agent(dir: &TempDir) -> String {
    let update = |text: &str, kind: &str| {
        format!(
            r#"echo '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s-1","update":{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"{text}"}}}}}}}}'"#
        )
    };
    let replay = [
        update("first prompt", "user_message_chunk"),
        update("first ", "agent_message_chunk"),
        update("answer", "agent_message_chunk"),
    ]
    .join("\n");
    let after = update("said right after the answer", "agent_message_chunk");
    let answer = update("new answer", "agent_message_chunk");
    dir.script(
        "agent.sh",
        &format!(
            r#"read -r line
echo '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":1,"agentCapabilities":{{"loadSession":true}}}}}}'
read -r line
case "$line" in
  *'"session/new"'*) echo '{{"jsonrpc":"2.0","id":1,"result":{{"sessionId":"s-1"}}}}' ;;
  *'"session/load"'*)
    if [ "$1" = replay3 ]; then
{replay}
    fi
    echo '{{"jsonrpc":"2.0","id":1,"result":{{}}}}'
    if [ "$1" = replay3 ]; then
{after}
    fi ;;
  *) echo "unexpected: $line" >&2; exit 9 ;;
esac
read -r line
{answer}
echo '{{"jsonrpc":"2.0","id":2,"result":{{"stopReason":"end_turn"}}}}'
cat >/dev/null"#
        ),
    )
    .to_string_lossy()
    .into_owned()
}

/// Issue 21: a load the agent answers without replaying anything did not restore the
/// conversation, and is said so, never "loaded": with `--load` (nothing on screen), and with
/// `--resume` of a session saved here (the saved copy is all there is). Before, both said
/// "loaded session".
#[test]
fn a_load_that_replays_nothing_is_reported_as_not_restored() {
    let dir = TempDir::new("load-nothing");
    let agent = loading_agent(&dir);
    let r = run(
        &[
            "chat", "--load", "old-7", "--prompt", "again", "--", &agent, "nothing",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("opened session old-7 in")
            && r.stderr
                .contains("but replayed nothing: it did not restore a conversation"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("loaded session"), "{}", r.dump());

    // A session saved here (the first run), continued with an agent that loads it empty.
    let r = run(
        &["chat", "--prompt", "first", "--", &agent, "nothing"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let r = run(
        &[
            "chat", "--resume", "s-1", "--prompt", "again", "--", &agent, "nothing",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains(
            "did not restore the conversation of session s-1 (it replayed nothing): what is \
             above is the copy saved here, and the agent does not remember it"
        ),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("loaded"), "{}", r.dump());
    assert!(r.stdout.contains("new answer"), "{}", r.dump());
}

/// The replay of a `session/load` is exactly the updates before its answer (acp-native keeps
/// wire order; while a session opens, each update waits until the chat took it): with the
/// conversation saved here (`--resume`), the 3 replayed updates are folded unshown, and the
/// update the agent sends right behind the answer is the session's, shown, however the
/// threads are scheduled.
#[test]
fn the_replay_of_a_load_ends_exactly_at_its_answer() {
    let dir = TempDir::new("load-window");
    let agent = loading_agent(&dir);
    let r = run(
        &["chat", "--prompt", "first prompt", "--", &agent, "replay3"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    for _ in 0..3 {
        let r = run(
            &[
                "chat", "--resume", "s-1", "--prompt", "again", "--", &agent, "replay3",
            ],
            dir.path(),
            None,
        );
        assert_eq!(r.code(), 0, "{}", r.dump());
        assert!(
            r.stderr
                .contains("session s-1 reloaded: 3 replayed update(s) not shown again"),
            "{}",
            r.dump()
        );
        assert!(!r.stdout.contains("first answer"), "{}", r.dump());
        let after = r
            .stdout
            .find("said right after the answer")
            .unwrap_or_else(|| panic!("the update after the answer is shown: {}", r.dump()));
        let answer = r.stdout.find("new answer").expect("the turn's answer");
        assert!(after < answer, "{}", r.dump());
    }
}

/// An agent that sends many updates before it answers one of our calls outside a turn
/// (here `session/set_mode` for `--mode`): acp-native hands the answer over only after those
/// updates were handled, so they are taken while the call is awaited. Before, they waited in
/// the full event queue (64) for a loop that waited for the answer: a hang.
#[test]
fn updates_before_an_answer_outside_a_turn_are_taken_while_it_is_awaited() {
    let dir = TempDir::new("updates-before-answer");
    let chunk = r#"echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"."}}}}'"#;
    let agent = dir.script(
        "agent.sh",
        &format!(
            r#"read -r line
echo '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":1,"agentCapabilities":{{}}}}}}'
read -r line
echo '{{"jsonrpc":"2.0","id":1,"result":{{"sessionId":"s-1","modes":{{"currentModeId":"auto","availableModes":[{{"id":"auto","name":"Auto"}},{{"id":"default","name":"Default"}}]}}}}}}'
read -r line
i=0
while [ $i -lt 300 ]; do
{chunk}
  i=$((i+1))
done
echo '{{"jsonrpc":"2.0","id":2,"result":{{}}}}'
read -r line
echo '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s-1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"answered"}}}}}}}}'
echo '{{"jsonrpc":"2.0","id":3,"result":{{"stopReason":"end_turn"}}}}'
cat >/dev/null"#
        ),
    );
    let agent = agent.to_string_lossy();
    let r = run(
        &["chat", "--mode", "default", "--prompt", "hi", "--", &agent],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("mode: default (was auto)"),
        "{}",
        r.dump()
    );
    assert_eq!(r.stdout.matches('.').count(), 300, "{}", r.dump());
    assert!(r.stdout.contains("answered"), "{}", r.dump());
}

#[test]
fn load_continues_a_session_the_agent_replays_first() {
    let dir = TempDir::new("load");
    let agent = dir.script(
        "agent.sh",
        r#"read -r line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}'
read -r line
case "$line" in *'"session/load"'*'"sessionId":"old-7"'*) ;; *) echo "expected session/load of old-7, got $line" >&2; exit 9;; esac
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"from history"}}}}'
echo '{"jsonrpc":"2.0","id":1,"result":{}}'
read -r line
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"new answer"}}}}'
echo '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
cat >/dev/null"#,
    );
    let r = run(
        &[
            "chat",
            "--load",
            "old-7",
            "--prompt",
            "again",
            "--",
            agent.to_str().unwrap(),
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let history = r
        .stdout
        .find("from history")
        .unwrap_or_else(|| panic!("{}", r.dump()));
    let answer = r
        .stdout
        .find("new answer")
        .unwrap_or_else(|| panic!("{}", r.dump()));
    assert!(history < answer, "{}", r.dump());
    assert!(r.stderr.contains("loaded session old-7"), "{}", r.dump());

    // An agent without the capability is not asked.
    let plain = scripted(&dir, "cat >/dev/null");
    let r = run(
        &["chat", "--load", "old-7", "--prompt", "x", "--", &plain],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("cannot load sessions"), "{}", r.dump());
}

#[test]
fn the_output_of_an_embedded_terminal_is_shown_when_its_tool_call_ends() {
    let dir = TempDir::new("embedded");
    let agent = scripted(
        &dir,
        r#"echo '{"jsonrpc":"2.0","id":"t1","method":"terminal/create","params":{"sessionId":"s-1","command":"echo","args":["from-a-terminal"]}}'
read -r created
tid=$(echo "$created" | sed 's/.*"terminalId":"\([^"]*\)".*/\1/')
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run echo","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"'"$tid"'"}]}}}'
echo '{"jsonrpc":"2.0","id":"t2","method":"terminal/wait_for_exit","params":{"sessionId":"s-1","terminalId":"'"$tid"'"}}'
read -r exited
echo '{"jsonrpc":"2.0","id":"t3","method":"terminal/release","params":{"sessionId":"s-1","terminalId":"'"$tid"'"}}'
read -r released
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}}}'
echo '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
cat >/dev/null"#,
    );
    // --yes: terminals are permission questions.
    let r = run(
        &["chat", "--yes", "--prompt", "hi", "--", &agent],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("Run echo (execute)"), "{}", r.dump());
    assert!(r.stdout.contains("│ from-a-terminal"), "{}", r.dump());
}

#[test]
fn a_turn_waiting_on_a_long_terminal_command_is_not_silent() {
    let dir = TempDir::new("longcmd");
    // The agent waits 3 s on `sleep 3` in our terminal, with --timeout 2: we are the ones
    // it waits for, so the turn must not time out.
    let agent = scripted(
        &dir,
        r#"echo '{"jsonrpc":"2.0","id":"t1","method":"terminal/create","params":{"sessionId":"s-1","command":"sleep","args":["3"]}}'
read -r created
tid=$(echo "$created" | sed 's/.*"terminalId":"\([^"]*\)".*/\1/')
echo '{"jsonrpc":"2.0","id":"t2","method":"terminal/wait_for_exit","params":{"sessionId":"s-1","terminalId":"'"$tid"'"}}'
read -r exited
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"slept well"}}}}'
echo '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
cat >/dev/null"#,
    );
    let r = run(
        &[
            "chat",
            "--yes",
            "--prompt",
            "hi",
            "--timeout",
            "2",
            "--",
            &agent,
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("slept well"), "{}", r.dump());
    assert!(r.elapsed >= Duration::from_secs(3), "{}", r.dump());
}
