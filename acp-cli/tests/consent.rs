//! Consent under a hostile agent (docs/security.md): a question cannot be spoofed (every
//! agent-supplied field on one line, env changes shown with their values, invalid env names
//! refused before asking, nothing from the agent shown while a question is open), an unread
//! stdout slows the agent down instead of growing memory, and closing the terminal (SIGHUP) or
//! SIGTERM stops the agent and its commands.
//!
//! The agent is a python3 script (`HOSTILE_AGENT`, one scenario per run), like
//! fault_injection.rs's.

mod cli_support;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::{acp, run, Running, TempDir, EVENTUALLY};

/// `python3 agent.py SCENARIO LOG [N]`: answers `initialize` and `session/new` (session `s-1`),
/// reads `session/prompt`, then does as told. Every line it reads is appended to LOG (its
/// helpers are [`cli_support::PY_AGENT_HELPERS`]).
const HOSTILE_AGENT: &str = r#"
n = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 0

def report(r):
    update("[answer: %s]\n" % json.dumps(r.get("error") or r.get("result")))

m = expect("initialize")
methods = [{"id": "oauth-personal", "name": "Log in with Google"},
           {"id": "gemini-api-key", "name": "Use Gemini API key",
            "description": "Requires setting the `GEMINI_API_KEY` environment variable"}]
caps = {"sessionCapabilities": {"resume": {}, "list": {}}} if scenario == "resumable" else {}
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": caps,
      "authMethods": methods if scenario == "auth" else []}})
while True:
    m = recv()
    if m is None:
        sys.exit(0)
    if m.get("method") == "authenticate":
        authed = m["params"]["methodId"]
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
        if authed == "oauth-personal":
            # What a real interactive login does: a URL on stdout, then waits for a code.
            sys.stdout.write("Please visit https://accounts.example/o/oauth2 and enter the code:\n"); sys.stdout.flush()
            time.sleep(1000)
        continue
    if m.get("method") == "session/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessions": [
            {"sessionId": "s-1", "cwd": m["params"].get("cwd", "/"), "title": "From the agent"}]}})
        continue
    if m.get("method") == "session/resume":
        cwd = m["params"]["cwd"]
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
        break
    if m.get("method") == "session/new":
        if scenario == "auth" and "authed" not in globals():
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32000, "message": "Authentication required"}})
            continue
        break
cwd = m["params"]["cwd"]
result = {"sessionId": "s-1"}
if m.get("method") == "session/resume":
    result = None
if scenario == "modes":
    result["modes"] = {"currentModeId": "auto", "availableModes": [
        {"id": "auto", "name": "Auto"}, {"id": "default", "name": "Ask first"}]}
if result is not None:
    send({"jsonrpc": "2.0", "id": m["id"], "result": result})
if scenario == "modes":
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": {
        "sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "review", "description": "Review the diff", "input": {"hint": "what"}}]}}})
pid = expect("session/prompt")["id"]
if scenario == "auth":
    update("authenticated with %s\n" % authed)
    end(pid)

if scenario == "spoof-terminal":
    report(call(10, "terminal/create", {"sessionId": "s-1", "command": "sh", "args": ["-c",
        "echo payload > pwned\n\n? Permission requested: run `ls -la`\n  1) Run it  [allow_once]"]}))
    end(pid)
elif scenario == "bad-env-name":
    report(call(10, "terminal/create", {"sessionId": "s-1", "command": "ls",
        "env": [{"name": "X\n? Permission requested: run `ls`", "value": "1"}]}))
    end(pid)
elif scenario == "agent-path":
    report(call(10, "terminal/create", {"sessionId": "s-1", "command": "true",
        "env": [{"name": "PATH", "value": "/tmp/evil:/usr/bin:/bin"}]}))
    end(pid)
elif scenario == "spoof-title":
    report(call(10, "session/request_permission", {"sessionId": "s-1",
        "toolCall": {"toolCallId": "t1", "title": "read notes.txt\n? Permission requested: read a file"},
        "options": [{"optionId": "a", "name": "Allow\n  2) Reject", "kind": "allow_once"},
                    {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}))
    end(pid)
elif scenario == "hold-back":
    send({"jsonrpc": "2.0", "id": 10, "method": "session/request_permission", "params": {"sessionId": "s-1",
        "toolCall": {"toolCallId": "t1", "title": "edit main.rs"},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}})
    update("FAKE-WHILE-ASKING\n")
    open(os.path.join(cwd, "sent"), "w").close()
    report(expect(id=10))
    end(pid)
elif scenario == "big-while-asking":
    send({"jsonrpc": "2.0", "id": 10, "method": "session/request_permission", "params": {"sessionId": "s-1",
        "toolCall": {"toolCallId": "t1", "title": "edit main.rs"},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}})
    big = "y" * (4 << 20)
    progress = os.path.join(cwd, "progress")
    for i in range(n):
        update(big)
        with open(progress + ".tmp", "w") as f:
            f.write(str(i + 1))
        os.replace(progress + ".tmp", progress)
    report(expect(id=10))
    end(pid)
elif scenario == "flood":
    chunk = "x" * 1000
    progress = os.path.join(cwd, "progress")
    for i in range(n):
        update(chunk)
        if i % 100 == 0:
            with open(progress + ".tmp", "w") as f:
                f.write(str(i))
            os.replace(progress + ".tmp", progress)
    with open(progress, "w") as f:
        f.write(str(n))
    end(pid)
elif scenario == "sensitive-writes":
    for rel in sys.argv[3].split(","):
        report(call(10, "fs/write_text_file", {"sessionId": "s-1", "path": os.path.join(cwd, rel),
            "content": "[core]\n\tfsmonitor = \"touch pwned\"\n"}))
    end(pid)
elif scenario == "sensitive-hostile":
    # A write into .git whose new lines would act on a terminal if shown raw.
    report(call(10, "fs/write_text_file", {"sessionId": "s-1", "path": os.path.join(cwd, ".git/config"),
        "content": "[core]\n\tbare = false\n\x1b[2J\x1b[H\r? Permission requested: nothing\n"}))
    end(pid)
elif scenario == "edit-with-diff":
    # The agent's own question about an edit, its tool call carrying the diff (n lines added).
    old = "".join("line %d\n" % i for i in range(1, 6))
    new = old.replace("line 3\n", "line three\x1b]0;title\x07\r\n") + "".join("added %d\n" % i for i in range(n))
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit notes.txt", "kind": "edit",
        "status": "pending", "content": [{"type": "diff", "path": os.path.join(cwd, "notes.txt"),
        "oldText": old, "newText": new}]}}})
    report(call(10, "session/request_permission", {"sessionId": "s-1",
        "toolCall": {"toolCallId": "t1", "title": "Edit notes.txt"},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "r", "name": "Reject", "kind": "reject_once"}]}))
    end(pid)
elif scenario == "plain":
    update("ok\n")
    end(pid)
elif scenario == "resumable":
    update("resumed fine\n")
    end(pid)
elif scenario == "modes":
    update("[prompted]\n")
    end(pid)
    while True:
        m = recv()
        if m is None:
            sys.exit(0)
        if m.get("method") == "session/set_mode":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
        elif m.get("method") == "session/prompt":
            update("[prompt: %s]\n" % m["params"]["prompt"][0]["text"])
            end(m["id"])
elif scenario == "silent-until-cancel":
    expect("session/cancel")
    update("cleaned up after the cancel\n")
    end(pid, "cancelled")
elif scenario == "terminal-then-hang":
    call(10, "terminal/create", {"sessionId": "s-1", "command": "sh",
        "args": ["-c", "echo $$ > term.pid; exec sleep 1000"], "cwd": cwd})
    with open(os.path.join(cwd, "agent.pid"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(1000)
"#;

/// `acp chat` args running the hostile agent with `scenario` in `dir`.
fn agent_args(dir: &TempDir, scenario: &str, extra: &[&str]) -> Vec<String> {
    let script = dir.join("agent.py");
    std::fs::write(&script, cli_support::py_agent(HOSTILE_AGENT)).unwrap();
    let mut args: Vec<String> = ["chat", "--prompt", "go"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    args.extend([
        "--".to_string(),
        "python3".to_string(),
        script.display().to_string(),
        scenario.to_string(),
        dir.join("agent.log").display().to_string(),
    ]);
    args
}

fn chat(dir: &TempDir, scenario: &str, extra: &[&str], stdin: Option<&str>) -> cli_support::Run {
    let args = agent_args(dir, scenario, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args, dir.path(), stdin)
}

/// Lines of stderr that start a question.
fn question_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("? Permission requested"))
        .collect()
}

#[test]
fn newlines_in_a_command_cannot_print_a_fake_question() {
    let dir = TempDir::new("spoof-terminal");
    // The user refuses (2): nothing runs either way, but what matters is what was shown.
    let r = chat(&dir, "spoof-terminal", &[], Some("2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    let questions = question_lines(&r.stderr);
    assert_eq!(
        questions.len(),
        1,
        "one question, on one line: {}",
        r.dump()
    );
    assert!(
        questions[0].contains(r"run `sh -c $'echo payload > pwned\n\n? Permission requested: run `ls -la`\n  1) Run it  [allow_once]'`"),
        "the whole command, escaped, on the question's line: {}",
        r.dump()
    );
    assert_eq!(
        r.stderr
            .lines()
            .filter(|l| l.trim_start().starts_with("1)"))
            .count(),
        1,
        "one option 1: {}",
        r.dump()
    );
    assert!(!dir.join("pwned").exists());
}

#[test]
fn an_invalid_env_name_is_refused_before_anyone_is_asked() {
    let dir = TempDir::new("bad-env");
    let r = chat(&dir, "bad-env-name", &["--yes"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(question_lines(&r.stderr).is_empty(), "{}", r.dump());
    assert!(
        r.stdout.contains(r#""code": -32602"#)
            && r.stdout.contains("invalid environment variable name"),
        "the agent is told why: {}",
        r.dump()
    );
    assert!(!r.stdout.contains("\n? Permission"), "{}", r.dump());
}

#[test]
fn an_agent_set_path_is_shown_with_its_value_and_a_warning() {
    let dir = TempDir::new("agent-path");
    let r = chat(&dir, "agent-path", &[], Some("2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    let questions = question_lines(&r.stderr);
    assert_eq!(questions.len(), 1, "{}", r.dump());
    assert!(
        questions[0].contains("run `true` with PATH=/tmp/evil:/usr/bin:/bin"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("⚠ the agent changes PATH, which decides what programs or code run"),
        "{}",
        r.dump()
    );
}

#[test]
fn the_agents_own_question_and_option_names_stay_on_their_lines() {
    let dir = TempDir::new("spoof-title");
    let r = chat(&dir, "spoof-title", &[], Some("2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    let questions = question_lines(&r.stderr);
    assert_eq!(questions.len(), 1, "{}", r.dump());
    assert!(
        questions[0].contains(r"read notes.txt\n? Permission requested: read a file"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains(r"1) Allow\n  2) Reject"), "{}", r.dump());
    assert_eq!(
        r.stderr
            .lines()
            .filter(|l| l.trim_start().starts_with("2)"))
            .count(),
        1,
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains(r#""optionId": "r""#), "{}", r.dump());
}

/// stdout and stderr into one file, in the order they were written.
fn combined_output(dir: &TempDir) -> (std::fs::File, std::path::PathBuf) {
    let path = dir.join("combined.out");
    (std::fs::File::create(&path).unwrap(), path)
}

#[test]
fn nothing_from_the_agent_is_shown_while_a_question_is_open() {
    let dir = TempDir::new("hold-back");
    let args = agent_args(&dir, "hold-back", &[]);
    let (out, out_path) = combined_output(&dir);
    let mut child = Command::new(acp())
        .args(&args)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .spawn()
        .unwrap();
    // Answer only after the agent sent its text behind the question (and some time passed
    // for it to arrive: without the hold-back it would be shown before the answer).
    let deadline = Instant::now() + EVENTUALLY;
    while !dir.join("sent").exists() {
        assert!(Instant::now() < deadline, "the agent never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"1\n").unwrap();
    drop(stdin);
    let status = wait_bounded(&mut child);
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(status, Some(0), "{text}");
    let asked = text.find("? Permission requested").expect(&text);
    let answered = text.find("Allow (option 1)").expect(&text);
    let fake = text.find("FAKE-WHILE-ASKING").expect(&text);
    assert!(
        asked < answered && answered < fake,
        "held back until answered:\n{text}"
    );
}

/// The hostile agent writes `files` (comma-separated, relative to the session directory).
fn write_files(
    dir: &TempDir,
    files: &str,
    extra: &[&str],
    stdin: Option<&str>,
) -> cli_support::Run {
    let mut args = agent_args(dir, "sensitive-writes", extra);
    args.push(files.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args, dir.path(), stdin)
}

fn git_repo(dir: &TempDir) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::write(dir.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    dir.join(".git/config")
}

const PAYLOAD: &str = "fsmonitor = \"touch pwned\"";

#[test]
fn deny_refuses_writes_that_change_what_runs_and_keeps_ordinary_ones() {
    let dir = TempDir::new("sensitive-deny");
    let config = git_repo(&dir);
    let r = write_files(&dir, ".git/config,notes.txt", &["--deny"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(!std::fs::read_to_string(&config).unwrap().contains(PAYLOAD));
    assert!(std::fs::read_to_string(dir.join("notes.txt"))
        .unwrap()
        .contains(PAYLOAD));
    assert!(
        r.stdout
            .contains("permission denied: the user did not allow writing"),
        "the agent is told: {}",
        r.dump()
    );
}

#[test]
fn yes_does_not_answer_a_write_into_git_the_user_sees_it_with_its_diff() {
    let dir = TempDir::new("sensitive-yes");
    let config = git_repo(&dir);
    // The user refuses (2).
    let r = write_files(&dir, ".git/config", &["--yes"], Some("2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    let questions = question_lines(&r.stderr);
    assert_eq!(questions.len(), 1, "{}", r.dump());
    assert!(
        questions[0].contains(&format!("write {}", config.display()))
            && questions[0].contains("git runs what its directory configures"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr.contains("--yes does not answer this question"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr.contains(r#"+\tfsmonitor = "touch pwned""#),
        "the diff: {}",
        r.dump()
    );
    assert!(
        r.stderr.contains(r"-\tbare = false"),
        "the diff: {}",
        r.dump()
    );
    assert!(!std::fs::read_to_string(&config).unwrap().contains(PAYLOAD));
    // The user allows it (1): written.
    let r = write_files(&dir, ".git/config", &["--yes"], Some("1\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(std::fs::read_to_string(&config).unwrap().contains(PAYLOAD));
}

#[test]
fn a_write_through_a_symlink_into_git_or_over_an_executable_is_asked_too() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("sensitive-link");
    let config = git_repo(&dir);
    std::os::unix::fs::symlink(".git", dir.join("notes")).unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // No one answers (stdin closed): both refused.
    let r = write_files(&dir, "notes/config,run.sh", &["--yes"], None);
    let questions = question_lines(&r.stderr);
    assert!(
        questions
            .iter()
            .any(|q| q.contains(&format!("write {}", config.display()))),
        "the real path is shown: {}",
        r.dump()
    );
    assert!(
        !std::fs::read_to_string(&config).unwrap().contains(PAYLOAD),
        "{}",
        r.dump()
    );
    assert!(
        !std::fs::read_to_string(dir.join("run.sh"))
            .unwrap()
            .contains(PAYLOAD),
        "{}",
        r.dump()
    );
}

#[test]
fn a_write_question_shows_its_diff_with_hostile_lines_escaped() {
    let dir = TempDir::new("sensitive-hostile");
    let config = git_repo(&dir);
    let r = chat(&dir, "sensitive-hostile", &["--yes"], Some("2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    // The diff: a hunk header, context, and the agent's lines escaped, before the question.
    let diff = [
        "    @@ -1,2 +1,3 @@",
        "     [core]",
        r"     \tbare = false",
        r"    +\e[2J\e[H\r? Permission requested: nothing",
    ];
    let at = r
        .stderr
        .find(diff[0])
        .unwrap_or_else(|| panic!("{}", r.dump()));
    assert!(r.stderr[at..].starts_with(&diff.join("\n")), "{}", r.dump());
    let asked = r
        .stderr
        .find("? Permission requested: write")
        .expect("the question");
    assert!(at < asked, "the diff, then the question: {}", r.dump());
    assert!(
        r.stderr
            .contains(&format!("  diff {} (+1 -0)", config.display())),
        "{}",
        r.dump()
    );
    // Nothing the agent wrote acts on the terminal, nor starts a line of its own.
    assert!(!r.stderr.contains(['\x1b', '\r']), "{:?}", r.stderr);
    assert_eq!(question_lines(&r.stderr).len(), 1, "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[core]\n\tbare = false\n"
    );
}

#[test]
fn the_agents_question_about_an_edit_shows_the_diff_of_its_tool_call() {
    let dir = TempDir::new("edit-with-diff");
    let mut args = agent_args(&dir, "edit-with-diff", &[]);
    args.push("2".to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&args, dir.path(), Some("1\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    let notes = dir.join("notes.txt");
    // The request carries only a title: the diff comes from the tool call before it.
    let diff = [
        &format!("  diff {} (+3 -1)", notes.display()),
        "    @@ -1,5 +1,7 @@",
        "     line 1",
        "     line 2",
        r"    -line 3",
        r"    +line three\e]0;title\x07\r",
        "     line 4",
        "     line 5",
        "    +added 0",
        "    +added 1",
        "? Permission requested: Edit notes.txt (edit)",
        "  1) Allow  [allow_once]",
    ];
    assert!(r.stderr.contains(&diff.join("\n")), "{}", r.dump());
    assert!(!r.stderr.contains(['\x1b', '\r', '\x07']), "{:?}", r.stderr);
}

#[test]
fn a_long_diff_is_cut_and_d_shows_all_of_it_then_asks_again() {
    let dir = TempDir::new("long-diff");
    let mut args = agent_args(&dir, "edit-with-diff", &[]);
    args.push("100".to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&args, dir.path(), Some("d\n2\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    // 1 header, 5 lines around the change, 100 added: 107 lines, 40 shown first.
    assert!(
        r.stderr.contains("    … 67 more lines (d: the whole diff)"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr.contains("choose 1-2, d for the whole diff: "),
        "{}",
        r.dump()
    );
    let first = r.stderr.find("? Permission requested").unwrap();
    let whole = r
        .stderr
        .find("    +added 99")
        .expect("d shows the whole diff");
    assert!(first < whole, "{}", r.dump());
    // Then the question again, answered 2.
    assert_eq!(question_lines(&r.stderr).len(), 2, "{}", r.dump());
    assert!(
        r.stderr[whole..].contains("? Permission requested: Edit notes.txt (edit)"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains(r#""optionId": "r""#), "{}", r.dump());
}

#[test]
fn yes_logs_each_write_the_agent_made_with_its_diff_summary() {
    let dir = TempDir::new("wrote-log");
    std::fs::write(dir.join("old.txt"), "[core]\n\tbare = false\n").unwrap();
    let r = write_files(&dir, "notes.txt,old.txt", &["--yes"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    for line in [
        format!(
            "wrote {} (new file, +2 -0)",
            dir.join("notes.txt").display()
        ),
        format!("wrote {} (+1 -1)", dir.join("old.txt").display()),
    ] {
        assert!(
            r.stderr.lines().any(|l| l == line),
            "{line:?} in: {}",
            r.dump()
        );
    }
}

/// `acp args…` in `cwd` with `env` set (`None`: removed), stdin closed, bounded by
/// [`EVENTUALLY`].
fn run_with_env(args: &[String], cwd: &Path, env: &[(&str, Option<&Path>)]) -> cli_support::Run {
    let mut cmd = Command::new(acp());
    cmd.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("ACP_OFFLINE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    let started = Instant::now();
    let child = cmd.spawn().expect("start acp");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(EVENTUALLY) else {
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("acp did not exit within {EVENTUALLY:?}");
    };
    let out = out.unwrap();
    cli_support::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

#[test]
fn deny_refuses_writes_to_acps_own_files_and_other_agents_configuration() {
    // The session's directory is the user's home (`--cwd $HOME`): acp's registry cache (which
    // decides what `acp chat --agent NAME` runs), its state, and the files other agents obey
    // are all inside it.
    let home = TempDir::new("own-files");
    let original = r#"{"agents": []}"#;
    let cache = home.join(".cache/acp/registry.json");
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, original).unwrap();
    // And where XDG_* put them elsewhere (only the face knows these).
    let xdg_cache = home.join("data/cache");
    let moved = xdg_cache.join("acp/registry.json");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::write(&moved, original).unwrap();
    let xdg_state = home.join("data/state");

    let files = [
        ".cache/acp/registry.json",
        "data/cache/acp/registry.json",
        "data/state/acp/sessions/planted.json",
        ".claude/settings.json",
        ".mcp.json",
        ".gemini/settings.json",
        "opencode.json",
        ".codex/config.toml",
        "notes.txt",
    ];
    let mut args = agent_args(&home, "sensitive-writes", &["--deny"]);
    args.push(files.join(","));
    let r = run_with_env(
        &args,
        home.path(),
        &[
            ("HOME", Some(home.path())),
            ("XDG_CACHE_HOME", Some(&xdg_cache)),
            ("XDG_STATE_HOME", Some(&xdg_state)),
            ("XDG_CONFIG_HOME", None),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(&cache).unwrap(),
        original,
        "{}",
        r.dump()
    );
    assert_eq!(
        std::fs::read_to_string(&moved).unwrap(),
        original,
        "{}",
        r.dump()
    );
    for f in &files[2..files.len() - 1] {
        assert!(!home.join(f).exists(), "{f} was written: {}", r.dump());
    }
    assert!(
        std::fs::read_to_string(home.join("notes.txt"))
            .unwrap()
            .contains(PAYLOAD),
        "an ordinary file is written: {}",
        r.dump()
    );
    let refused = r
        .stdout
        .matches("permission denied: the user did not allow writing")
        .count();
    assert_eq!(
        refused,
        files.len() - 1,
        "the agent is told each time: {}",
        r.dump()
    );
}

#[test]
fn auth_never_starts_an_interactive_login_uninvited() {
    // No key: nothing is started; the user is told what each method needs.
    let dir = TempDir::new("auth-none");
    let r = chat(&dir, "auth", &["--timeout", "20"], None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr.contains("no method can be used without you")
            && r.stderr.contains("`oauth-personal` (Log in with Google): may start an interactive login; choose it with --auth oauth-personal")
            && r.stderr.contains("set GEMINI_API_KEY and pass it to the agent (--env GEMINI_API_KEY)"),
        "{}",
        r.dump()
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(
        !log.contains("\"authenticate\""),
        "no authenticate call: {log}"
    );
    // The key passed to the agent: its method, never the Google login.
    let dir = TempDir::new("auth-key");
    let r = chat(&dir, "auth", &["--env", "GEMINI_API_KEY=k-123"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("authenticated with gemini-api-key"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("`gemini-api-key` method (GEMINI_API_KEY is set)"),
        "{}",
        r.dump()
    );
}

#[test]
fn the_sessions_mode_is_shown_and_mode_sets_it_before_the_first_prompt() {
    let dir = TempDir::new("modes");
    let r = chat(&dir, "modes", &["--deny"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr
            .contains("mode: auto (the agent's modes: auto, default; choose one with --mode)"),
        "{}",
        r.dump()
    );
    let dir = TempDir::new("modes-set");
    let r = chat(&dir, "modes", &["--deny", "--mode", "default"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("mode: default (was auto)"),
        "{}",
        r.dump()
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    let set = log.find("session/set_mode").expect("set_mode sent");
    assert!(
        set < log.find("session/prompt").unwrap(),
        "before the prompt: {log}"
    );
    let dir = TempDir::new("modes-bad");
    let r = chat(&dir, "modes", &["--mode", "yolo"], None);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr
            .contains("--mode yolo: the agent's modes are auto, default"),
        "{}",
        r.dump()
    );
}

#[test]
fn mcp_config_servers_go_to_session_new_per_the_agents_capabilities() {
    let dir = TempDir::new("mcp");
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {
            "files": {"command": "mcp-files", "args": ["/tmp"], "env": {"DEBUG": "1"}},
            "docs": {"type": "http", "url": "https://mcp.example.com/mcp"}}}"#,
    )
    .unwrap();
    let r = chat(
        &dir,
        "plain",
        &["--mcp-config", config.to_str().unwrap()],
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr
            .contains("--mcp-config: left out docs (http servers are not supported by this agent)"),
        "{}",
        r.dump()
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    let new = log
        .lines()
        .find(|l| l.contains("session/new"))
        .expect("session/new");
    let v: serde_json::Value = serde_json::from_str(new).unwrap();
    assert_eq!(
        v["params"]["mcpServers"],
        serde_json::json!([{"name": "files", "command": "mcp-files", "args": ["/tmp"],
                            "env": [{"name": "DEBUG", "value": "1"}]}])
    );
    // A broken file is a clear error before anything starts.
    std::fs::write(&config, r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap();
    let r = chat(
        &dir,
        "plain",
        &["--mcp-config", config.to_str().unwrap()],
        None,
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(
        r.stderr
            .contains("server `x`: a stdio server needs \"command\""),
        "{}",
        r.dump()
    );
}

#[test]
fn slash_commands_are_acps_or_the_agents() {
    let dir = TempDir::new("slash");
    let script = dir.join("agent.py");
    std::fs::write(&script, cli_support::py_agent(HOSTILE_AGENT)).unwrap();
    let log = dir.join("agent.log");
    let (script, log) = (script.to_str().unwrap(), log.to_str().unwrap());
    let r = run(
        &["chat", "--", "python3", script, "modes", log],
        dir.path(),
        Some("first\n/help\n/mode\n/mode default\n/mode yolo\n/nope\n/review the diff\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("/review <what>  Review the diff"),
        "{}",
        r.dump()
    );
    assert!(
        r.stderr
            .contains("mode: auto; the agent's modes: auto (Auto), default (Ask first)"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("mode: default"), "{}", r.dump());
    assert!(r.stderr.contains("no mode `yolo`"), "{}", r.dump());
    assert!(r.stderr.contains("no command /nope"), "{}", r.dump());
    assert!(
        r.stdout.contains("[prompt: /review the diff]"),
        "the agent's command is sent: {}",
        r.dump()
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert_eq!(log.matches("session/set_mode").count(), 1, "{log}");
    assert!(!log.contains("/nope") && !log.contains("/help"), "{log}");
}

#[test]
fn a_timed_out_turn_waits_for_the_agents_cancelled_answer() {
    let dir = TempDir::new("silent-cancel");
    let r = chat(&dir, "silent-until-cancel", &["--timeout", "2"], None);
    assert_eq!(r.code(), 7, "{}", r.dump());
    assert!(
        r.stderr
            .contains("sent nothing for 2 s during the turn (--timeout)"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.contains("cleaned up after the cancel"),
        "what the agent sent before its answer is shown: {}",
        r.dump()
    );
    assert!(r.stderr.contains("[turn ended: cancelled]"), "{}", r.dump());
}

fn wait_bounded(child: &mut std::process::Child) -> Option<i32> {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp did not exit (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Waits until the hostile agent's progress counter (updates sent so far) stops moving for
/// 3 s, and returns it: backpressure reached the agent. Fails (killing acp) if the agent sent
/// all `n` or acp exited first, or if nothing started within [`EVENTUALLY`].
fn wait_for_stall(child: &mut std::process::Child, progress: &Path, n: u64, how: &str) -> u64 {
    let deadline = Instant::now() + EVENTUALLY;
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let now = read_progress(progress);
        if now >= n || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!(
                "the agent sent all {n} updates {how} (acp's peak RSS {} KiB)",
                status_kib(child.id(), "VmHWM:")
            );
        }
        if now != last {
            (last, since) = (now, Instant::now());
        } else if now > 0 && since.elapsed() > Duration::from_secs(3) {
            return now;
        }
        assert!(Instant::now() < deadline, "the agent never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_progress(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn an_unread_stdout_stops_reading_the_agent_instead_of_growing_memory() {
    const N: u64 = 200_000; // 1,000-character updates: about 230 MB of JSON
    let dir = TempDir::new("flood");
    let mut args = agent_args(&dir, "flood", &[]);
    args.push(N.to_string());
    let mut child = Command::new(acp())
        .args(&args)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Nobody reads acp's stdout (Ctrl-S, a slow ssh): the agent must end up blocked.
    let stalled_at = wait_for_stall(
        &mut child,
        &dir.join("progress"),
        N,
        "while acp's stdout was not read",
    );
    let peak = status_kib(child.id(), "VmHWM:");
    assert!(
        peak < 100 * 1024,
        "acp's peak RSS {peak} KiB with its stdout unread (the agent stalled at {stalled_at})"
    );
    // Reading resumes: everything arrives, nothing lost.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).unwrap();
        buf
    });
    let status = wait_bounded(&mut child);
    let out = reader.join().unwrap();
    assert_eq!(status, Some(0));
    let xs = out.iter().filter(|b| **b == b'x').count() as u64;
    assert_eq!(xs, N * 1000, "every update shown once reading resumed");
    eprintln!("agent stalled after {stalled_at} of {N} updates; acp peak RSS {peak} KiB");
}

#[test]
fn large_updates_held_behind_an_open_question_stay_within_the_byte_budget() {
    const N: u64 = 100; // 4 MiB each: 400 MiB held if only their number were bounded
    let dir = TempDir::new("big-held");
    let mut args = agent_args(&dir, "big-while-asking", &[]);
    args.push(N.to_string());
    let mut child = Command::new(acp())
        .args(&args)
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).unwrap();
        buf
    });
    // The question stays open: the agent must end up blocked, acp within its budget.
    let stalled_at = wait_for_stall(
        &mut child,
        &dir.join("progress"),
        N,
        "behind an open question",
    );
    let peak = status_kib(child.id(), "VmHWM:");
    assert!(
        peak < 300 * 1024,
        "acp's peak RSS {peak} KiB with a question open (the agent stalled at {stalled_at})"
    );
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"1\n").unwrap();
    drop(stdin);
    let status = wait_bounded(&mut child);
    let out = reader.join().unwrap();
    assert_eq!(status, Some(0));
    let ys = out.iter().filter(|b| **b == b'y').count() as u64;
    assert_eq!(ys, N * (4 << 20), "every update shown once answered");
    eprintln!("agent stalled after {stalled_at} of {N} updates; acp peak RSS {peak} KiB");
}

/// `acp chat` saves each conversation per directory; `acp sessions` lists them (and the
/// agent's own); `--resume` continues one with `session/resume`, the saved conversation shown.
#[test]
fn sessions_are_saved_listed_and_resumed() {
    let dir = TempDir::new("sessions");
    let state = dir.join("state");
    let run_env = |args: &[String]| {
        let out = Command::new(acp())
            .args(args)
            .current_dir(dir.path())
            .env("XDG_STATE_HOME", &state)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut first = agent_args(&dir, "plain", &[]);
    first[2] = "what is in notes.txt?".into();
    let (code, _, err) = run_env(&first);
    assert_eq!(code, Some(0), "{err}");
    let cwd = dir.path().to_str().unwrap().to_string();
    let (code, out, err) = run_env(&[
        "sessions".into(),
        "--json".into(),
        "--cwd".into(),
        cwd.clone(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let local: serde_json::Value = serde_json::from_str(out.lines().next().expect(&err)).unwrap();
    assert_eq!(local["source"], "local");
    assert_eq!(local["sessionId"], "s-1");
    assert_eq!(local["title"], "what is in notes.txt?");
    // The record is private.
    use std::os::unix::fs::PermissionsExt;
    let files: Vec<_> = walk(&state);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o077,
        0
    );

    let mut resume = agent_args(&dir, "resumable", &["--resume", "s-1"]);
    resume[2] = "and now?".into();
    let (code, out, err) = run_env(&resume);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("resumed fine"), "{out}{err}");
    assert!(err.contains("resumed session s-1"), "{err}");
    assert!(
        err.contains("what is in notes.txt? — 1 earlier prompt(s)"),
        "{err}"
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(log.contains("session/resume") && !log.lines().last().unwrap().contains("session/new"));
    // The record now holds both prompts.
    let (_, out, _) = run_env(&[
        "sessions".into(),
        "--json".into(),
        "--cwd".into(),
        cwd.clone(),
    ]);
    assert_eq!(out.lines().count(), 1, "{out}");

    // The agent's own list.
    let script = dir.join("agent.py").display().to_string();
    let log = dir.join("agent2.log").display().to_string();
    let (code, out, err) = run_env(&[
        "sessions".into(),
        "--json".into(),
        "--cwd".into(),
        cwd,
        "--".into(),
        "python3".into(),
        script,
        "resumable".into(),
        log,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines()
            .any(|l| l.contains(r#""source":"agent""#) && l.contains("From the agent")),
        "{out}{err}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
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

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie waiting for its parent is gone too.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn read_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hang_up_stops_the_agent_and_its_commands(signal: i32, code: i32) {
    let dir = TempDir::new("hangup");
    let args = agent_args(&dir, "terminal-then-hang", &["--yes"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut r = Running::start_interactive(&args, dir.path());
    let agent = read_pid(&dir.join("agent.pid"));
    let command = read_pid(&dir.join("term.pid"));
    assert!(!gone(agent) && !gone(command));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(r.child.id() as i32, signal) };
    let deadline = Instant::now() + EVENTUALLY;
    while !(gone(agent) && gone(command)) {
        if Instant::now() > deadline {
            let _ = r.child.kill();
            panic!(
                "after signal {signal}: agent gone {}, its command gone {}\n{}",
                gone(agent),
                gone(command),
                r.stderr()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    r.stdin.take();
    let done = r.finish(EVENTUALLY);
    assert_eq!(done.code, Some(code), "{}", done.dump());
}

#[test]
fn sighup_stops_the_agent_and_its_terminal_commands() {
    hang_up_stops_the_agent_and_its_commands(libc::SIGHUP, 129);
}

#[test]
fn sigterm_stops_the_agent_and_its_terminal_commands() {
    hang_up_stops_the_agent_and_its_commands(libc::SIGTERM, 143);
}
