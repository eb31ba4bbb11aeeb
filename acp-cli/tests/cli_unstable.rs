//! `acp chat` with the feature `unstable` (draft ACP): the turn's token usage (the draft
//! `PromptResponse.usage`) on stderr and in `--json`, `/status` (`session/status`) and
//! `/title` (`session/set_title`) when the agent advertised them, and refused by the engine
//! (nothing sent) when it did not. A scripted python agent plays the agent.

mod cli_support;

use cli_support::{py_chat, TempDir};

const AGENT: &str = r#"
m = expect("initialize")
caps = {"sessionCapabilities": {"status": {}, "title": {}}} if scenario == "drafts" else {}
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": caps}})
while True:
    m = recv()
    if m is None:
        sys.exit(0)
    method, id = m.get("method"), m.get("id")
    if method == "session/new":
        send({"jsonrpc": "2.0", "id": id, "result": {"sessionId": "s-1"}})
    elif method == "session/prompt":
        update("hello")
        usage = {"totalTokens": 1234, "inputTokens": 1000, "outputTokens": 234, "cachedReadTokens": 800}
        send({"jsonrpc": "2.0", "id": id, "result": {"stopReason": "end_turn", "usage": usage}})
    elif method == "session/status":
        send({"jsonrpc": "2.0", "id": id, "result": {"status": "open"}})
    elif method == "session/set_title":
        send({"jsonrpc": "2.0", "id": id, "result": {"title": m["params"]["title"]}})
"#;

fn chat(dir: &TempDir, scenario: &str, extra: &[&str], stdin: Option<&str>) -> cli_support::Run {
    py_chat(dir, extra, scenario, AGENT, stdin)
}

#[test]
fn the_turns_token_usage_is_shown_on_stderr_and_in_json() {
    let dir = TempDir::new("unstable-usage");
    let r = chat(&dir, "plain", &["--prompt", "hi"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr
            .contains("[turn: 1234 tokens (1000 in, 234 out; 800 cache read)]"),
        "{}",
        r.dump()
    );
    assert!(
        !r.stdout.contains("tokens"),
        "stdout is the conversation: {}",
        r.dump()
    );

    let r = chat(&dir, "plain", &["--prompt", "hi", "--json"], None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    let last: serde_json::Value =
        serde_json::from_str(r.stdout.lines().last().expect("a line")).unwrap();
    assert_eq!(last["stopReason"], "end_turn", "{}", r.dump());
    assert_eq!(last["usage"]["totalTokens"], 1234, "{}", r.dump());
    assert_eq!(last["usage"]["cachedReadTokens"], 800, "{}", r.dump());
}

#[test]
fn status_and_title_are_asked_and_shown_when_the_agent_offers_them() {
    let dir = TempDir::new("unstable-status");
    let r = chat(
        &dir,
        "drafts",
        &[],
        Some("/status\n/title Fix the parser\n/title\n"),
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stderr.contains("[session status: open]"), "{}", r.dump());
    assert!(r.stderr.contains("[title: Fix the parser]"), "{}", r.dump());
    assert!(r.stderr.contains("usage: /title TEXT"), "{}", r.dump());
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(
        log.contains(r#""title": "Fix the parser""#) || log.contains(r#""title":"Fix the parser""#),
        "{log}"
    );
}

#[test]
fn status_and_title_are_refused_without_sending_when_the_agent_did_not_advertise_them() {
    let dir = TempDir::new("unstable-refused");
    let r = chat(&dir, "plain", &[], Some("/status\n/title x\n"));
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stderr.contains("sessionCapabilities.status"),
        "the refusal names the capability: {}",
        r.dump()
    );
    assert!(
        r.stderr.contains("sessionCapabilities.title"),
        "{}",
        r.dump()
    );
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(
        !log.contains("session/status") && !log.contains("session/set_title"),
        "nothing was sent: {log}"
    );
}
