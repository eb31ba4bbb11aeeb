//! `acp chat` against the built-in demo agent (and the demo agent as an explicit command):
//! one-shot turns, permissions, `--json`, `--log-rpc`, stop reasons and exit codes, Ctrl-C.

mod cli_support;

use std::time::Duration;

use cli_support::{acp, json_lines, py_chat, run, update_kinds, Running, TempDir, EVENTUALLY};
use serde_json::Value;

#[test]
fn prompt_with_yes_writes_the_file_shows_the_answer_and_exits_0() {
    let dir = TempDir::new("yes");
    let r = run(
        &["chat", "--prompt", "hello there", "--yes"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("You said: \"hello there\""),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("Plan:"), "{}", r.dump());
    assert!(
        r.stdout.contains("Write acp-demo.txt (edit)"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("I wrote acp-demo.txt"), "{}", r.dump());
    assert!(
        r.stderr.contains("Allow this write (--yes)"),
        "{}",
        r.dump()
    );
    let written = std::fs::read_to_string(dir.join("acp-demo.txt")).expect("file written");
    assert!(written.contains("hello there"), "{written}");
}

#[test]
fn deny_answers_with_the_reject_option_and_nothing_is_written() {
    let dir = TempDir::new("deny");
    let r = run(&["chat", "--prompt", "hello", "--deny"], dir.path(), None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("Do not write (--deny)"), "{}", r.dump());
    assert!(
        r.stdout.contains("did not write acp-demo.txt"),
        "{}",
        r.dump()
    );
    assert!(!dir.join("acp-demo.txt").exists());
}

#[test]
fn a_refused_command_is_one_readable_line_and_its_plan_step_is_not_done() {
    let dir = TempDir::new("deny-plan");
    let r = run(&["chat", "--prompt", "hello", "--deny"], dir.path(), None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    // The client's words on one line, not a JSON-RPC error object wrapped across lines.
    assert!(
        r.stdout
            .lines()
            .any(|l| l.trim_start().trim_start_matches('│').trim()
                == "could not start: permission denied: the user did not allow running ls"),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("\"code\""), "{}", r.dump());
    // The demo's plan never marks the refused steps done.
    assert!(!r.stdout.contains("[x] Run `ls`"), "{}", r.dump());
    assert!(!r.stdout.contains("[x] Write acp-demo.txt"), "{}", r.dump());
    assert!(r.stdout.contains("[ ] Run `ls` (not done)"), "{}", r.dump());
}

#[test]
fn slash_help_shows_a_plain_backslash_and_the_agents_own_help() {
    let dir = TempDir::new("help");
    // The demo agent announces its commands after answering session/new: /help is typed once
    // they are shown, so it lists them whatever the machine's load.
    let mut running = Running::start_interactive(&["chat"], dir.path());
    running.wait_for_stderr("[commands:", EVENTUALLY);
    {
        use std::io::Write;
        let mut input = running.stdin.take().expect("stdin");
        input
            .write_all(b"/help\n/agent-help\n/mode nope\n/model nope\n")
            .expect("write stdin");
    }
    let r = running.finish(EVENTUALLY);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("a line ending in \\ (or Alt-Enter)"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("\\\\"), "{}", r.dump());
    // The demo agent has a /help of its own: listed, and reached as /agent-help.
    assert!(
        r.stderr.contains("/agent-help") && r.stderr.contains("(the agent's /help)"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("Commands:\n- /echo"), "{}", r.dump());
    // /mode and /model say the same thing the same way.
    assert!(r.stderr.contains("the agent has no modes"), "{}", r.dump());
    assert!(r.stderr.contains("the agent has no models"), "{}", r.dump());
}

#[test]
fn json_prints_one_session_update_per_line_then_the_stop_reason() {
    let dir = TempDir::new("json");
    let r = run(
        &["chat", "--prompt", "hi", "--yes", "--json"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let lines = json_lines(&r.stdout);
    let kinds = update_kinds(&lines);
    for kind in [
        "plan",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    assert!(
        kinds
            .iter()
            .filter(|k| **k == "agent_message_chunk")
            .count()
            > 3
    );
    let last = lines.last().unwrap();
    assert_eq!(last["stopReason"], "end_turn", "{}", r.dump());
    assert_eq!(last["sessionId"], lines[0]["sessionId"]);
    let text: String = lines
        .iter()
        .filter(|v| v["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|v| v["update"]["content"]["text"].as_str())
        .collect();
    assert!(text.contains("You said: \"hi\""), "{text}");
}

#[test]
fn a_permission_request_with_stdin_closed_is_cancelled_and_the_turn_ends_cancelled() {
    let dir = TempDir::new("eof");
    let r = run(&["chat", "--prompt", "hi"], dir.path(), None);
    assert_eq!(r.code(), 3, "{}", r.dump());
    // The demo agent's first request is a terminal (`ls`): a permission question too.
    assert!(
        r.stderr.contains("? Permission requested: run `ls` in "),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("1) Run it"), "{}", r.dump());
    assert!(
        r.stderr.contains("cancelled (end of input)"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
    assert!(!dir.join("acp-demo.txt").exists());
}

#[test]
fn permission_answers_typed_on_stdin_are_validated_and_re_asked() {
    let dir = TempDir::new("typed");
    // 1: run the demo agent's `ls` terminal; then the write question.
    let r = run(
        &["chat", "--prompt", "hi"],
        dir.path(),
        Some("1\n7\nyes\n2\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("Run it (option 1)"), "{}", r.dump());
    assert!(r.stderr.contains("`7` is not an option"), "{}", r.dump());
    assert!(r.stderr.contains("`yes` is not an option"), "{}", r.dump());
    assert!(r.stderr.contains("Do not write (option 2)"), "{}", r.dump());
    assert!(!dir.join("acp-demo.txt").exists());
}

#[test]
fn stop_reasons_map_to_documented_exit_codes() {
    let dir = TempDir::new("reasons");
    let refused = run(
        &["chat", "--prompt", "please #refuse", "--yes"],
        dir.path(),
        None,
    );
    assert_eq!(refused.code(), 6, "{}", refused.dump());
    assert!(
        refused.stderr.contains("[turn ended: refusal]"),
        "{}",
        refused.dump()
    );
    let capped = run(
        &["chat", "--prompt", "long #max-tokens", "--yes"],
        dir.path(),
        None,
    );
    assert_eq!(capped.code(), 4, "{}", capped.dump());
}

#[test]
fn files_named_in_the_prompt_are_read_through_the_client_and_only_inside_cwd() {
    let dir = TempDir::new("read");
    std::fs::write(dir.join("notes.txt"), "first line of notes\nsecond\n").unwrap();
    let outside = TempDir::new("outside");
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "do not leak\n").unwrap();
    let prompt = format!("summarize notes.txt and {}", secret.display());
    let r = run(&["chat", "--prompt", &prompt, "--yes"], dir.path(), None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("2 line(s); first line: first line of notes"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("could not read"), "{}", r.dump());
    assert!(!r.stdout.contains("do not leak"), "{}", r.dump());
}

#[test]
fn commands_run_in_a_client_terminal() {
    let dir = TempDir::new("term");
    let r = run(
        &["chat", "--prompt", "run `echo terminal-works`", "--yes"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("Run `echo terminal-works` (execute)"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("│ terminal-works"), "{}", r.dump());
    // Success is the call's status; the demo says no "[exit code 0]" beside it.
    assert!(r.stdout.contains("completed"), "{}", r.dump());
    assert!(!r.stdout.contains("[exit code"), "{}", r.dump());
}

#[test]
fn a_failed_command_says_how_it_ended() {
    let dir = TempDir::new("term-failed");
    let r = run(
        &["chat", "--prompt", "run `false`", "--yes"],
        dir.path(),
        None,
    );
    // The status says it failed; the text says how (the status cannot).
    assert!(r.stdout.contains("failed"), "{}", r.dump());
    assert!(r.stdout.contains("[exit code 1]"), "{}", r.dump());
}

#[test]
fn a_refused_terminal_runs_nothing_and_the_demo_agent_goes_on_to_end_its_turn() {
    let dir = TempDir::new("term-refused");
    // 2: do not run the command; 2: do not write.
    let r = run(
        &["chat", "--prompt", "do not run `touch refused-marker`"],
        dir.path(),
        Some("2\n2\n"),
    );
    // Exit code 0: the turn ended with `end_turn`, not an error or a cancel.
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("Do not run it (option 2)"),
        "{}",
        r.dump()
    );
    // The agent got the client's error for terminal/create and reported it as a failed call.
    assert!(
        r.stdout.contains("Run `touch refused-marker` · failed"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout
            .contains("could not start: permission denied: the user did not allow running touch"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.contains("OK, I did not write acp-demo.txt."),
        "{}",
        r.dump()
    );
    assert!(!dir.join("refused-marker").exists(), "{}", r.dump());
    assert!(!dir.join("acp-demo.txt").exists());
}

#[test]
fn log_rpc_records_every_message_with_response_times() {
    let dir = TempDir::new("log");
    let log = dir.join("rpc.ndjson");
    let r = run(
        &[
            "chat",
            "--prompt",
            "hi",
            "--yes",
            "--log-rpc",
            log.to_str().unwrap(),
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let entries: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let find = |dir: &str, kind: &str, method: &str| {
        entries
            .iter()
            .find(|e| e["dir"] == dir && e["kind"] == kind && e["method"] == method)
            .unwrap_or_else(|| panic!("no {dir} {kind} {method} in the log"))
    };
    find("send", "request", "initialize");
    let init = find("recv", "response", "initialize");
    assert!(init["elapsedMs"].as_f64().unwrap() >= 0.0);
    assert!(find("recv", "response", "session/prompt")["elapsedMs"]
        .as_f64()
        .is_some());
    find("recv", "notification", "session/update");
    // Requests from the agent, answered by us, are timed too.
    let perm = find("send", "response", "session/request_permission");
    assert!(perm["elapsedMs"].as_f64().is_some());
    find("recv", "request", "fs/write_text_file");
}

/// `acp chat ARGS` in `dir` under `umask 022` (the usual one, so a file created without an
/// explicit mode would be world-readable), stdin closed.
fn chat_with_umask_022(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("sh")
        .args(["-c", "umask 022; exec \"$0\" chat \"$@\"", acp()])
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run acp chat")
}

/// The `--log-rpc` file holds `--mcp-config` secrets and the text of the files the agent
/// read: created 0600; an existing one tightened to 0600 and truncated; a symbolic link
/// planted at the path refused with a clear error, its target untouched (docs/security.md).
#[test]
fn the_log_rpc_file_is_private_and_a_link_planted_at_its_path_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("log-private");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let log = dir.join("rpc.ndjson");
    let out = chat_with_umask_022(
        dir.path(),
        &[
            "--prompt",
            "hi",
            "--deny",
            "--log-rpc",
            log.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("initialize"));
    assert_eq!(mode(&log), 0o600, "a new log is readable by its owner only");

    // An existing, world-readable log: tightened, then overwritten.
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&log, "an earlier run\n").unwrap();
    let out = chat_with_umask_022(
        dir.path(),
        &[
            "--prompt",
            "hi",
            "--deny",
            "--log-rpc",
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&log), 0o600, "an existing log is tightened");
    assert!(!std::fs::read_to_string(&log)
        .unwrap()
        .contains("an earlier run"));

    // A link planted at the path (to a file someone else could read, or one to clobber).
    let target = dir.join("readable-by-all");
    std::fs::write(&target, "keep me").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.join("planted.ndjson");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = chat_with_umask_022(
        dir.path(),
        &[
            "--prompt",
            "hi",
            "--deny",
            "--log-rpc",
            link.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--log-rpc"), "{err}");
    assert!(
        err.contains("planted.ndjson") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert_eq!(mode(&target), 0o644);
}

#[test]
fn the_demo_agent_can_be_given_explicitly_after_double_dash() {
    let dir = TempDir::new("explicit");
    let r = run(
        &[
            "chat",
            "--prompt",
            "explicit",
            "--yes",
            "--",
            acp(),
            "demo-agent",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("You said: \"explicit\""), "{}", r.dump());
    assert!(dir.join("acp-demo.txt").exists());
}

#[test]
fn cwd_option_sets_the_session_directory() {
    let dir = TempDir::new("cwd");
    let elsewhere = TempDir::new("elsewhere");
    let r = run(
        &[
            "chat",
            "--prompt",
            "x",
            "--yes",
            "--cwd",
            dir.path().to_str().unwrap(),
        ],
        elsewhere.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(dir.join("acp-demo.txt").exists());
    assert!(!elsewhere.join("acp-demo.txt").exists());
}

#[test]
fn ctrl_c_cancels_a_running_turn_with_exit_code_3() {
    let dir = TempDir::new("sigint");
    let mut acp_run = Running::start(
        &[
            "chat",
            "--prompt",
            "slow one",
            "--yes",
            "--",
            acp(),
            "demo-agent",
            "--delay-ms",
            "400",
        ],
        dir.path(),
        None,
    );
    acp_run.wait_for_stdout("Hello from", EVENTUALLY);
    acp_run.interrupt();
    let r = acp_run.finish(EVENTUALLY);
    assert_eq!(r.code(), 3, "{}", r.dump());
    assert!(r.stderr.contains("cancelling the turn"), "{}", r.dump());
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
    assert!(!r.stdout.contains("I wrote"), "{}", r.dump());
    assert!(!dir.join("acp-demo.txt").exists());
}

#[test]
fn prompts_are_read_line_by_line_from_piped_stdin() {
    let dir = TempDir::new("piped");
    let r = run(&["chat", "--deny"], dir.path(), Some("first\n\nsecond\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("You said: \"first\""), "{}", r.dump());
    assert!(r.stdout.contains("You said: \"second\""), "{}", r.dump());
    assert!(r.elapsed < Duration::from_secs(60));
}

#[test]
fn ctrl_c_while_a_permission_question_waits_withdraws_it_and_cancels_the_turn() {
    let dir = TempDir::new("sigint-perm");
    let mut acp_run = Running::start_interactive(&["chat", "--prompt", "hi"], dir.path());
    acp_run.wait_for_stderr("choose 1-2:", EVENTUALLY);
    acp_run.interrupt();
    let r = acp_run.finish(EVENTUALLY);
    assert_eq!(r.code(), 3, "{}", r.dump());
    assert!(
        r.stderr.contains("withdrawn (the turn was cancelled)"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
    assert!(!dir.join("acp-demo.txt").exists());
}

/// Clients key saved sessions by id: two demo agents never hand out the same one.
#[test]
fn demo_agent_session_ids_are_unique_across_processes() {
    let new_session = || {
        let dir = TempDir::new("demo-ids");
        let input = format!(
            "{}\n{}\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
            serde_json::json!({"jsonrpc":"2.0","id":2,"method":"session/new",
                "params":{"cwd": dir.path(), "mcpServers":[]}})
        );
        let r = run(&["demo-agent"], dir.path(), Some(&input));
        let line = r
            .stdout
            .lines()
            .find(|l| l.contains("\"id\":2"))
            .unwrap_or_else(|| panic!("no session/new answer: {}", r.dump()))
            .to_string();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v["result"]["sessionId"].as_str().unwrap().to_string()
    };
    let (a, b) = (new_session(), new_session());
    assert!(a.starts_with("demo-") && b.starts_with("demo-"), "{a} {b}");
    assert_ne!(a, b);
}

#[test]
fn the_prompt_can_come_from_a_file_or_stdin() {
    let dir = TempDir::new("prompt-file");
    std::fs::write(dir.join("prompt.txt"), "hi from a file\nsecond line\n").unwrap();
    let r = run(
        &["chat", "--deny", "--json", "-f", "prompt.txt"],
        dir.path(),
        None,
    );
    assert!(r.stdout.contains("hi from a file"), "{}", r.dump());
    let r = run(
        &["chat", "--deny", "--json", "--prompt-file", "-"],
        dir.path(),
        Some("hi from stdin\n"),
    );
    assert!(r.stdout.contains("hi from stdin"), "{}", r.dump());
    let r = run(&["chat", "-f", "missing.txt"], dir.path(), None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr.contains("--prompt-file missing.txt"),
        "{}",
        r.dump()
    );
    std::fs::write(dir.join("empty.txt"), " \n").unwrap();
    let r = run(&["chat", "-f", "empty.txt"], dir.path(), None);
    assert_eq!(r.code(), 2, "{}", r.dump());
}

/// `--agent NAME` resolves the registry entry (here the built-in gemini one, and one from a
/// `--registry` agent.json) and runs its `npx` command: a fake `npx` first on PATH records its
/// arguments and runs the demo agent.
#[test]
fn agents_by_name_run_their_registry_command() {
    let dir = TempDir::new("agents");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    dir.script(
        "bin/npx",
        &format!(
            "echo \"$@\" >> '{}'\nexec '{}' demo-agent",
            dir.join("npx-args.txt").display(),
            acp()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run_with_path = |args: &[&str]| {
        let out = std::process::Command::new(acp())
            .args(args)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env("XDG_CACHE_HOME", dir.join("cache"))
            // The built-in list and the given file only: no refresh from the public registry.
            .env("ACP_OFFLINE", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run_with_path(&["chat", "--deny", "--agent", "gemini", "--prompt", "hi"]);
    assert_eq!(code, Some(0), "{err}");
    let args = std::fs::read_to_string(dir.join("npx-args.txt")).unwrap();
    assert_eq!(args.trim(), "-y @google/gemini-cli@0.61.0 --acp");

    std::fs::write(
        dir.join("mine.json"),
        r#"{"id": "mine", "name": "My agent", "version": "1.0.0", "description": "",
            "distribution": {"npx": {"package": "my-agent@1.0.0", "args": ["--acp"]}}}"#,
    )
    .unwrap();
    let (code, _, err) = run_with_path(&[
        "chat",
        "--deny",
        "--agent",
        "mine",
        "--registry",
        "mine.json",
        "--prompt",
        "hi",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let args = std::fs::read_to_string(dir.join("npx-args.txt")).unwrap();
    assert_eq!(args.lines().last().unwrap(), "-y my-agent@1.0.0 --acp");

    let (code, _, err) = run_with_path(&["chat", "--agent", "cursor", "--prompt", "hi"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--agent: no agent is called `cursor`; known agents: claude, codex, gemini, qwen, opencode"),
        "{err}"
    );
    let (code, out, _) = run_with_path(&["agents", "--json", "--registry", "mine.json"]);
    assert_eq!(code, Some(0));
    let ids: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        ids,
        ["claude", "codex", "gemini", "qwen", "opencode", "mine"]
    );
}

/// Status lines on stderr (here the agent's commands and title, arriving mid-answer) never
/// break the conversation on a piped stdout: the answer stays one line, as the agent sent it.
#[test]
fn status_lines_mid_answer_do_not_break_a_piped_answer() {
    let dir = TempDir::new("status-mid-answer");
    let r = py_chat(
        &dir,
        &["--prompt", "hi"],
        "s",
        r#"
handshake()
m = expect("session/prompt")
update("Hello from ")
send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update":
      {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "review", "description": "Review"}]}}})
send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update":
      {"sessionUpdate": "session_info_update", "title": "A title"}}})
update("the rest.")
end(m["id"])
expect("never")
"#,
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(r.stdout.contains("Hello from the rest."), "{:?}", r.stdout);
    assert!(r.stderr.contains("/review"), "{}", r.stderr);
}

/// Issue 21: `--resume` of an id that is not saved for this directory is refused before any
/// agent starts (a usage error, exit 2), saying so and what to do; `--resume-unknown` tries it
/// with the agent, which (the demo agent, like the spec's reference agents) does not have it:
/// the chat ends saying so, never "loaded" or "resumed". Before, the demo agent started the
/// unknown id empty and `acp chat` said "loaded session made-up-7".
#[test]
fn resume_of_an_id_not_saved_here_is_refused_unless_tried_and_then_told() {
    let dir = TempDir::new("resume-made-up");
    let r = run(
        &["chat", "--resume", "made-up-7", "--prompt", "hi"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 2, "{}", r.dump());
    assert!(
        r.stderr
            .contains("no session made-up-7 is saved for this directory")
            && r.stderr.contains("--resume-unknown"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("connected to"), "no agent: {}", r.dump());
    assert!(r.stdout.is_empty(), "{}", r.dump());

    let r = run(
        &[
            "chat",
            "--resume",
            "made-up-7",
            "--resume-unknown",
            "--prompt",
            "hi",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr.contains("does not have session made-up-7"),
        "{}",
        r.dump()
    );
    assert!(
        !r.stderr.contains("loaded") && !r.stderr.contains("resumed"),
        "{}",
        r.dump()
    );
    assert!(!r.stdout.contains("You said"), "no turn: {}", r.dump());

    // The same with `--load`: the agent does not have it.
    let r = run(
        &["chat", "--load", "made-up-7", "--prompt", "hi"],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr.contains("does not have session made-up-7"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("loaded session"), "{}", r.dump());
}
