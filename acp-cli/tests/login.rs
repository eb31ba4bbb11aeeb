//! `acp login`: a `terminal` method runs the agent's own login in the user's terminal, shown
//! first and only after a yes; `agent` methods call `authenticate` (what the agent prints that
//! is not JSON, a login URL, is shown); `env_var` methods say what to pass; nothing runs
//! uninvited.

mod cli_support;

use std::process::{Command, Output, Stdio};

use cli_support::{acp, TempDir};

/// An agent that, run with `--login`, is its own terminal login (writes `login-done` with the
/// `LOGIN_MODE` it got, exits 0); otherwise an ACP agent offering sign-in methods, logging
/// what it is asked to `calls.log`.
const AGENT: &str = r#"
import json, os, sys
if "--login" in sys.argv:
    open("login-done", "w").write(os.environ.get("LOGIN_MODE", "") + " " + " ".join(sys.argv[1:]))
    sys.exit(int(os.environ.get("LOGIN_EXIT", "0")))
calls = open("calls.log", "a")
authed = False
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        calls.write("initialize " + json.dumps(m["params"].get("clientCapabilities", {}).get("auth", {})) + "\n"); calls.flush()
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [
            {"id": "tui", "name": "Log in in the terminal", "type": "terminal", "args": ["--login"], "env": {"LOGIN_MODE": "tui"}},
            {"id": "oauth", "name": "Browser login", "description": "opens a browser"},
            {"id": "key", "name": "API key", "type": "env_var", "vars": [{"name": "DEMO_KEY"}]},
            {"id": "bad-env", "name": "Bad", "type": "terminal", "env": {"A B": "1"}},
            {"id": "pathy", "name": "Path", "type": "terminal", "args": ["--login"], "env": {"PATH": "/tmp/evil"}},
            {"id": "gh", "name": "Sign in", "type": "env_var", "varName": "GH_TOKEN"},
        ]}})
    elif m.get("method") == "session/new":
        if authed:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s1"}})
        else:
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32000, "message": "Authentication required"}})
    elif m.get("method") == "session/prompt":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"stopReason": "end_turn"}})
    elif m.get("method") == "authenticate":
        calls.write("authenticate " + m["params"]["methodId"] + "\n"); calls.flush()
        authed = True
        print("open https://example.test/login?code=1 to sign in", flush=True)
        send({"jsonrpc": "2.0", "id": m["id"], "result": {}})
"#;

fn login(dir: &TempDir, args: &[&str]) -> Output {
    std::fs::write(dir.join("agent.py"), AGENT).unwrap();
    Command::new(acp())
        .arg("login")
        .args(args)
        .args(["--", "python3", "agent.py"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run acp login")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn calls(dir: &TempDir) -> String {
    std::fs::read_to_string(dir.join("calls.log")).unwrap_or_default()
}

#[test]
fn a_terminal_method_runs_the_agents_login_shown_first() {
    let dir = TempDir::new("login-tui");
    let out = login(&dir, &["--method", "tui", "--yes"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Shown exactly as it runs: the agent's command with the method's arguments and variables.
    assert!(err.contains("python3 agent.py --login"), "{err}");
    assert!(err.contains("with LOGIN_MODE=tui"), "{err}");
    assert!(err.contains("Signed in"), "{err}");
    let done = std::fs::read_to_string(dir.join("login-done")).expect("the login ran");
    assert_eq!(done, "tui --login");
    // acp login says it can run terminal logins; it never calls `authenticate` with one.
    let calls = calls(&dir);
    assert!(
        calls.contains(r#"initialize {"terminal": true}"#),
        "{calls}"
    );
    assert!(!calls.contains("authenticate"), "{calls}");
}

#[test]
fn a_terminal_login_needs_a_yes() {
    let dir = TempDir::new("login-noyes");
    let out = login(&dir, &["--method", "pathy"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("add --yes"), "{err}");
    // A changed PATH is pointed out.
    assert!(err.contains("⚠"), "{err}");
    assert!(err.contains("PATH=/tmp/evil"), "{err}");
    assert!(!dir.join("login-done").exists(), "ran without a yes");
}

#[test]
fn a_failed_terminal_login_fails() {
    let dir = TempDir::new("login-fail");
    std::fs::write(dir.join("agent.py"), AGENT).unwrap();
    let out = Command::new(acp())
        .args(["login", "--method", "tui", "--yes", "--env", "LOGIN_EXIT=3"])
        .args(["--", "python3", "agent.py"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the login failed"), "{err}");
}

#[test]
fn an_invalid_terminal_method_is_refused_before_anything_runs() {
    let dir = TempDir::new("login-bad");
    let out = login(&dir, &["--method", "bad-env", "--yes"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("invalid environment variable name"), "{err}");
}

#[test]
fn an_agent_method_calls_authenticate_and_shows_the_url() {
    let dir = TempDir::new("login-oauth");
    let out = login(&dir, &["--method", "oauth"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("agent: open https://example.test/login?code=1"),
        "{err}"
    );
    assert!(calls(&dir).contains("authenticate oauth"));
}

#[test]
fn an_env_var_method_says_what_to_pass_then_authenticates_with_it() {
    let dir = TempDir::new("login-key");
    let out = login(&dir, &["--method", "key"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--env DEMO_KEY"), "{err}");
    assert!(!calls(&dir).contains("authenticate"));

    let out = login(&dir, &["--method", "key", "--env", "DEMO_KEY=k"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(calls(&dir).contains("authenticate key"));
}

#[test]
fn without_a_method_the_methods_are_listed_and_nothing_runs() {
    let dir = TempDir::new("login-list");
    let out = login(&dir, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for id in ["tui [terminal]", "oauth [agent]", "key [env_var]"] {
        assert!(err.contains(id), "{id}: {err}");
    }
    assert!(err.contains("--method"), "{err}");
    assert!(!calls(&dir).contains("authenticate"));
    assert!(!dir.join("login-done").exists());

    let out = login(&dir, &["--method", "nope"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no sign-in method `nope`"), "{err}");
    assert!(err.contains("`tui`"), "{err}");
}

/// An agent whose `authMethods` carry terminal escapes (clear the screen, an OSC 52 clipboard
/// write) and a bidi override in every field, `type` included: the list shows them escaped,
/// on one line each (the method's type reached the terminal raw before).
#[test]
fn a_hostile_agents_method_types_and_names_are_shown_escaped() {
    const HOSTILE: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        evil = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\u202eevil\r\nfake"
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1,
            "agentCapabilities": {}, "authMethods": [
                {"id": "m1", "name": "Sign in", "type": "terminal" + evil},
                {"id": "m2" + evil, "name": "Key" + evil, "description": "d" + evil,
                 "type": "env_var", "vars": [{"name": "K"}]}]}}), flush=True)
"#;
    let dir = TempDir::new("login-hostile");
    std::fs::write(dir.join("hostile.py"), HOSTILE).unwrap();
    let out = Command::new(acp())
        .args(["login", "--", "python3", "hostile.py"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run acp login");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for bad in ['\x1b', '\x07', '\r', '\u{202e}'] {
        assert!(!err.contains(bad), "{bad:?} reached the terminal: {err:?}");
    }
    assert!(
        err.contains("1) m1 [terminal\\e[2J\\e]52;c;cHduZWQ=\\x07\\u202eevil\\r\\nfake] Sign in"),
        "{err}"
    );
    assert!(err.contains("2) m2\\e[2J"), "{err}");
    // The list is its lines and the question, no more (no line broken by the agent).
    assert_eq!(err.lines().count(), 4, "{err}");
}

/// `acp chat` reads `authMethods` as the agent sent them: an `env_var` method (a type the
/// typed schema does not keep) whose variable is passed is used; a typed-only reading saw an
/// `agent` method named "Sign in" and never chose it.
#[test]
fn chat_authenticates_with_an_env_var_method_whose_variable_it_passes() {
    let dir = TempDir::new("login-chat");
    std::fs::write(dir.join("agent.py"), AGENT).unwrap();
    let chat = |env: &[&str]| {
        let mut c = Command::new(acp());
        c.args(["chat", "--prompt", "hi"]);
        for e in env {
            c.args(["--env", e]);
        }
        c.args(["--", "python3", "agent.py"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = chat(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--env GH_TOKEN"), "{err}");
    assert!(!calls(&dir).contains("authenticate"));

    let out = chat(&["GH_TOKEN=t"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(calls(&dir).contains("authenticate gh"), "{}", calls(&dir));
}
