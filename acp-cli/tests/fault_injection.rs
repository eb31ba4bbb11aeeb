//! Fault injection: `acp chat` (and `acp demo-agent`) against a scripted misbehaving agent
//! (python3, `FAULT_AGENT` below, one scenario per run). Each case states the user-visible
//! result, ends within a bound (`EVENTUALLY`, a hang fails the test with the output so far) and
//! checks that no data is half-written. The scenario table is in docs/reliability.md
//! ("Fault injection"); cases already covered elsewhere (cli_faults.rs, host_*.rs,
//! supervisor.rs, process_supervision.rs) are not repeated here.

mod cli_support;

use std::process::{Command, Stdio};

use cli_support::{acp, run, Running, TempDir, EVENTUALLY};

/// The misbehaving agent: `python3 agent.py SCENARIO LOG`. It answers `initialize` and
/// `session/new` (session `s-1`), reads `session/prompt`, then misbehaves as told. Every line it
/// reads is appended to LOG (the environment is not passed to agents by default). Its helpers
/// are [`cli_support::PY_AGENT_HELPERS`].
const FAULT_AGENT: &str = r#"

m = expect("initialize")
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
m = expect("session/new")
cwd = m["params"]["cwd"]
send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
pid = expect("session/prompt")["id"]
limit = int(os.environ.get("FAULT_LIMIT", "65536"))

if scenario == "ansi":
    sys.stdout.write("\x1b[2J\x1b]0;pwned-title\x07 not json\n"); sys.stdout.flush()
    update("text with \x1b[31mescapes\x1b[0m and \x1b]52;c;cHduZWQ=\x07 clipboard")
    end(pid)
elif scenario == "bidi":
    sys.stdout.write("not json \u202egnp.exe\n"); sys.stdout.flush()
    update("invoice_\u202egnp.exe and \u2066isolated\u2069 zero\u200bwidth\n")
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read \u202etxt.exe", "status": "completed"}}})
    end(pid)
elif scenario == "oversize-update":
    update("x" * 100000)
    update("after the big one")
    end(pid)
elif scenario == "oversize-response":
    send({"jsonrpc": "2.0", "id": pid, "result": {"stopReason": "end_turn", "pad": "y" * 100000}})
    time.sleep(600)
elif scenario == "unknown-ids":
    send({"jsonrpc": "2.0", "id": 999, "result": {}})
    send({"jsonrpc": "2.0", "id": "nope", "error": {"code": -32603, "message": "stray"}})
    update("still talking")
    end(pid)
elif scenario == "answer-twice":
    update("once")
    end(pid)
    end(pid, "refusal")
    for _ in sys.stdin:
        pass
elif scenario == "flood":
    for i in range(20000):
        update("n%d " % i)
    end(pid)
elif scenario == "no-read":
    big = os.path.join(cwd, "big.txt")
    for i in range(300):
        send({"jsonrpc": "2.0", "id": "r%d" % i, "method": "fs/read_text_file",
              "params": {"sessionId": "s-1", "path": big}})
    time.sleep(600)
elif scenario == "killed-during-permission":
    send({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {
        "sessionId": "s-1", "toolCall": {"toolCallId": "c1", "title": "Write f.txt"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}})
    log.write("asked %d\n" % os.getpid()); log.flush()
    time.sleep(600)
elif scenario == "crash-after-write":
    send({"jsonrpc": "2.0", "id": "w1", "method": "fs/write_text_file", "params": {
        "sessionId": "s-1", "path": os.path.join(cwd, "out.txt"), "content": "z" * (4 << 20)}})
    os._exit(1)
elif scenario == "deny-no-reject":
    send({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {
        "sessionId": "s-1", "toolCall": {"toolCallId": "c1", "title": "Do it"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}})
    while True:
        m = recv()
        if m is None:
            sys.exit(0)
        if m.get("method") == "session/cancel":
            cancelled = True
        if m.get("id") == "p1" and "method" not in m:
            break
    end(pid, "cancelled")
elif scenario == "terminal":
    r = call("t1", "terminal/create", {"sessionId": "s-1", "command": "echo",
                                       "args": ["$HOME; rm -rf /"], "cwd": cwd})
    if "error" in r:
        update("refused: " + r["error"]["message"])
    else:
        tid = r["result"]["terminalId"]
        call("t2", "terminal/wait_for_exit", {"sessionId": "s-1", "terminalId": tid})
        out = call("t3", "terminal/output", {"sessionId": "s-1", "terminalId": tid})
        update("output: " + out["result"]["output"])
    end(pid)
elif scenario == "concurrency":
    tid = call("t1", "terminal/create", {"sessionId": "s-1", "command": "sleep", "args": ["1"]})["result"]["terminalId"]
    for w in ("w1", "w2"):
        send({"jsonrpc": "2.0", "id": w, "method": "terminal/wait_for_exit",
              "params": {"sessionId": "s-1", "terminalId": tid}})
    got = {}
    while len(got) < 2:
        m = recv()
        if m is None:
            sys.exit(0)
        if m.get("id") in ("w1", "w2") and "method" not in m:
            got[m["id"]] = "error" if "error" in m else "ok"
    update("waits: " + json.dumps(got, sort_keys=True))
    end(pid)
elif scenario == "env":
    update("env: " + json.dumps(sorted(k for k in os.environ if k.startswith("ACP_FAULT_"))))
    update(" path-set: %s" % ("PATH" in os.environ))
    end(pid)
elif scenario == "fs-escape":
    results = []
    for i, path in enumerate([os.path.join(cwd, "..", "escaped.txt"), os.path.join(cwd, "link", "escaped.txt"), "relative.txt"]):
        r = call("f%d" % i, "fs/write_text_file", {"sessionId": "s-1", "path": path, "content": "pwned"})
        results.append(r.get("error", {}).get("code"))
    update("codes: " + json.dumps(results))
    end(pid)
"#;

/// Writes the agent; returns the agent command (after `--`) and the log path.
fn agent(dir: &TempDir, scenario: &str) -> (Vec<String>, std::path::PathBuf) {
    let script = dir.join("fault_agent.py");
    std::fs::write(&script, cli_support::py_agent(FAULT_AGENT)).unwrap();
    let log = dir.join("agent.log");
    (
        vec![
            "python3".into(),
            script.to_string_lossy().into_owned(),
            scenario.into(),
            log.to_string_lossy().into_owned(),
        ],
        log,
    )
}

fn chat(dir: &TempDir, scenario: &str, opts: &[&str]) -> (cli_support::Run, String) {
    let (cmd, log) = agent(dir, scenario);
    let cwd = dir.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.to_string_lossy().into_owned();
    let mut args = vec!["chat", "--prompt", "go", "--cwd", &cwd];
    args.extend_from_slice(opts);
    args.push("--");
    args.extend(cmd.iter().map(String::as_str));
    let r = run(&args, dir.path(), None);
    let log = std::fs::read_to_string(log).unwrap_or_default();
    (r, log)
}

fn received(log: &str) -> Vec<serde_json::Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// ANSI/OSC escapes on stdout (outside JSON, and inside text): a warning, the text shown with
/// the escapes made visible; nothing reaches the user's terminal as an escape sequence.
#[test]
fn escape_sequences_from_the_agent_are_shown_not_interpreted() {
    let dir = TempDir::new("fi-ansi");
    let (r, _) = chat(&dir, "ansi", &[]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("not JSON"), "{}", r.dump());
    assert!(r.stdout.contains("escapes"), "{}", r.dump());
    assert!(!r.stdout.contains('\x1b'), "{}", r.dump());
    assert!(!r.stderr.contains('\x1b'), "{}", r.dump());
    assert!(!r.stderr.contains('\x07'), "{}", r.dump());
}

/// Bidi overrides and isolates and zero-width characters (which reorder or hide text: a file
/// named `invoice_\u202egnp.exe` shows as `invoice_exe.png`) in agent text, a tool title and a
/// line that is not JSON: shown escaped (`\u202e`), never passed to the terminal (they passed
/// before).
#[test]
fn bidi_overrides_from_the_agent_are_shown_escaped() {
    let dir = TempDir::new("fi-bidi");
    let (r, _) = chat(&dir, "bidi", &[]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    for c in ['\u{202e}', '\u{2066}', '\u{2069}', '\u{200b}'] {
        assert!(!r.stdout.contains(c), "{c:?} on stdout: {}", r.dump());
        assert!(!r.stderr.contains(c), "{c:?} on stderr: {}", r.dump());
    }
    assert!(
        r.stdout
            .contains("invoice_\\u202egnp.exe and \\u2066isolated\\u2069 zero\\u200bwidth"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("read \\u202etxt.exe"), "{}", r.dump());
    assert!(r.stderr.contains("\\u202egnp.exe"), "{}", r.dump());
}

/// A notification over --max-message-bytes: warned about as such (not as "not JSON"),
/// skipped, and the turn goes on with the next update.
#[test]
fn an_oversize_update_is_skipped_with_a_warning_and_the_turn_goes_on() {
    let dir = TempDir::new("fi-big-update");
    let (r, _) = chat(&dir, "oversize-update", &["--max-message-bytes", "65536"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("over the 65536-byte limit"),
        "{}",
        r.dump()
    );
    assert!(!r.stderr.contains("not JSON"), "{}", r.dump());
    assert!(r.stdout.contains("after the big one"), "{}", r.dump());
}

/// The prompt's response over the limit: the prompt fails at once with a size error (exit 1),
/// not at a timeout; the agent (which then sleeps) is stopped.
#[test]
fn an_oversize_response_fails_the_call_at_once() {
    let dir = TempDir::new("fi-big-response");
    let (r, _) = chat(&dir, "oversize-response", &["--max-message-bytes", "65536"]);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("65536"), "{}", r.dump());
}

/// Responses with ids we never used are dropped; the turn completes normally.
#[test]
fn responses_with_unknown_ids_are_ignored() {
    let dir = TempDir::new("fi-unknown-ids");
    let (r, _) = chat(&dir, "unknown-ids", &[]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("still talking"), "{}", r.dump());
}

/// The prompt answered twice: the first answer counts (end_turn, exit 0), the second is
/// dropped.
#[test]
fn a_request_answered_twice_keeps_the_first_answer() {
    let dir = TempDir::new("fi-twice");
    let (r, _) = chat(&dir, "answer-twice", &["--json"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    let ends: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains("stopReason"))
        .collect();
    assert_eq!(ends.len(), 1, "{}", r.dump());
    assert!(ends[0].contains("end_turn"), "{}", r.dump());
}

/// 20 000 notifications as fast as the agent can write: every one is shown, in order.
#[test]
fn a_notification_flood_loses_nothing() {
    let dir = TempDir::new("fi-flood");
    let (r, _) = chat(&dir, "flood", &["--json"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    let texts: Vec<String> = r
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["update"]["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(texts.len(), 20000);
    assert!(texts
        .iter()
        .enumerate()
        .all(|(i, t)| *t == format!("n{i} ")));
}

/// An agent that floods us with requests (300 reads of a 1 MiB file) and stops reading its
/// stdin: our writes back up, reading pauses (bounded buffering), and --timeout still ends the
/// turn (exit 7); nothing hangs.
#[test]
fn an_agent_that_stops_reading_cannot_hang_the_chat() {
    let dir = TempDir::new("fi-no-read");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/big.txt"), "b".repeat(1 << 20)).unwrap();
    let (r, _) = chat(&dir, "no-read", &["--timeout", "2"]);
    assert_eq!(r.code(), 7, "{}", r.dump());
}

/// The agent dies while our permission question is open (stdin stays open, nobody answers):
/// the question is dropped, the chat ends with the agent's exit status (exit 1).
#[test]
fn an_agent_killed_during_a_permission_question_ends_the_chat() {
    let dir = TempDir::new("fi-killed");
    let (cmd, log) = agent(&dir, "killed-during-permission");
    let cwd = dir.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.to_string_lossy().into_owned();
    let mut args = vec!["chat", "--prompt", "go", "--cwd", &cwd, "--"];
    args.extend(cmd.iter().map(String::as_str));
    let mut acp_run = Running::start_interactive(&args, dir.path());
    acp_run.wait_for_stderr("choose 1-1:", EVENTUALLY);
    let log = std::fs::read_to_string(&log).unwrap();
    let pid: i32 = log
        .lines()
        .find_map(|l| l.strip_prefix("asked "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the agent did not log its pid: {log}"));
    // SAFETY: signalling the agent process this test started (its pid, from its own log).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill {pid}");
    let r = acp_run.finish(EVENTUALLY);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("the agent stopped"), "{}", r.dump());
    assert!(r.stderr.contains("SIGKILL"), "{}", r.dump());
}

/// The agent asks for a 4 MiB write and dies at once: the file is either fully written or not
/// there at all (writes are atomic: temp file + rename), never truncated.
#[test]
fn a_write_interrupted_by_the_agents_crash_is_all_or_nothing() {
    let dir = TempDir::new("fi-crash-write");
    let (r, _) = chat(&dir, "crash-after-write", &["--yes"]);
    assert_eq!(r.code(), 1, "{}", r.dump());
    match std::fs::read(dir.join("work/out.txt")) {
        Ok(bytes) => assert!(
            bytes.len() == 4 << 20 && bytes.iter().all(|&b| b == b'z'),
            "a partial file: {} bytes",
            bytes.len()
        ),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "out.txt")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// --deny with no reject option: the answer is `cancelled`, preceded (as the schema wants) by
/// `session/cancel`; the turn ends cancelled (exit 3).
#[test]
fn deny_without_a_reject_option_sends_session_cancel_first() {
    let dir = TempDir::new("fi-deny-cancel");
    let (r, log) = chat(&dir, "deny-no-reject", &["--deny"]);
    assert_eq!(r.code(), 3, "{}", r.dump());
    let got = received(&log);
    let cancel = got
        .iter()
        .position(|m| m["method"] == "session/cancel")
        .unwrap_or_else(|| panic!("no session/cancel: {log}"));
    let answer = got
        .iter()
        .position(|m| m["id"] == "p1" && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer: {log}"));
    assert!(cancel < answer, "{log}");
    assert_eq!(got[answer]["result"]["outcome"]["outcome"], "cancelled");
}

/// `terminal/create` is a permission question showing the exact command line; --deny refuses
/// it with an error the agent can read; --yes runs it, without a shell (`$HOME; rm -rf /` is
/// one literal argument to echo).
#[test]
fn terminals_need_permission_and_run_without_a_shell() {
    let dir = TempDir::new("fi-terminal");
    let (r, log) = chat(&dir, "terminal", &["--deny"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr
            .contains("permission for run `echo '$HOME; rm -rf /'`"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout
            .contains("refused: permission denied: the user did not allow running echo"),
        "{}",
        r.dump()
    );
    assert!(!log.contains("terminalId"), "{log}");

    let dir = TempDir::new("fi-terminal-yes");
    let (r, _) = chat(&dir, "terminal", &["--yes"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("output: $HOME; rm -rf /"), "{}", r.dump());
}

/// `--max-terminals` reaches the terminal service: with 0, even an allowed command is refused
/// with the limit in the error.
#[test]
fn the_terminal_limit_is_configurable() {
    let dir = TempDir::new("fi-max-terminals");
    let (r, _) = chat(&dir, "terminal", &["--yes", "--max-terminals", "0"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("refused: too many terminals (limit 0)"),
        "{}",
        r.dump()
    );
}

/// `--max-concurrent-requests` reaches the engine: with 1, a second request while one is being
/// served is refused at once; the first is answered normally.
#[test]
fn the_concurrent_request_limit_is_configurable() {
    let dir = TempDir::new("fi-max-requests");
    let (r, _) = chat(
        &dir,
        "concurrency",
        &["--yes", "--max-concurrent-requests", "1"],
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains(r#"waits: {"w1": "ok", "w2": "error"}"#),
        "{}",
        r.dump()
    );
}

/// The agent sees the allowlisted environment only, plus what --env passes.
#[test]
fn the_agents_environment_is_explicit() {
    let see = |opts: &[&str]| {
        let dir = TempDir::new("fi-env");
        let (cmd, _) = agent(&dir, "env");
        let out = Command::new(acp())
            .args(["chat", "--json", "--prompt", "go", "--cwd"])
            .arg(dir.path())
            .args(opts)
            .arg("--")
            .args(&cmd)
            .env("ACP_FAULT_SECRET", "hunter2")
            .env("ACP_FAULT_OTHER", "x")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let by_default = see(&[]);
    assert!(by_default.contains(r#"env: []"#), "{by_default}");
    assert!(by_default.contains("path-set: True"), "{by_default}");
    let passed = see(&["--env", "ACP_FAULT_SECRET", "--env", "ACP_FAULT_SET=1"]);
    assert!(
        passed.contains(r#"env: [\"ACP_FAULT_SECRET\", \"ACP_FAULT_SET\"]"#),
        "{passed}"
    );
    let all = see(&["--inherit-env"]);
    assert!(
        all.contains(r#"env: [\"ACP_FAULT_OTHER\", \"ACP_FAULT_SECRET\"]"#),
        "{all}"
    );
}

/// Writes outside the session directory (`..`, a symlink to outside, a relative path) are
/// refused with -32602 and nothing is written outside.
#[test]
fn writes_cannot_leave_the_session_directory() {
    let dir = TempDir::new("fi-fs-escape");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::os::unix::fs::symlink(dir.join("outside"), dir.join("work/link")).unwrap();
    let (r, _) = chat(&dir, "fs-escape", &["--yes"]);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("codes: [-32602, -32602, -32602]"),
        "{}",
        r.dump()
    );
    assert!(!dir.join("escaped.txt").exists());
    assert!(!dir.join("outside/escaped.txt").exists());
}

/// Half-close: `printf request | acp demo-agent` answers the request before exiting.
#[test]
fn the_demo_agent_answers_what_it_read_before_stdin_ended() {
    let dir = TempDir::new("fi-half-close");
    let r = run(
        &["demo-agent"],
        dir.path(),
        Some(
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n",
        ),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    let answer: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| {
        panic!("{e}: {}", r.dump());
    });
    assert_eq!(answer["id"], 0);
    assert_eq!(answer["result"]["protocolVersion"], 1);
}
