use super::*;

fn init() -> &'static str {
    r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}"#
}

fn chunk(sid: &str, text: &str) -> String {
    serde_json::json!({"sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text}}})
    .to_string()
}

fn session() -> Session {
    Session::new(
        Intent::New,
        "/p",
        Limits::default(),
        RestartPolicy::default(),
    )
    .unwrap()
}

/// An agent that floods updates before it answers `session/new` gets at most
/// `MAX_HELD_UPDATES` held, and the user is told how many were dropped.
#[test]
fn updates_held_before_a_new_session_opens_are_bounded_in_count() {
    let mut s = session();
    assert_eq!(s.initialized(init()).unwrap(), Open::New);
    for i in 0..MAX_HELD_UPDATES + 10 {
        let routed = s.update(&chunk("s1", &format!("{i}"))).unwrap();
        let want = if i < MAX_HELD_UPDATES {
            Routed::Held
        } else {
            Routed::Ignored
        };
        assert_eq!(routed, want, "update {i}");
    }
    let opened = s.opened(r#"{"sessionId":"s1"}"#).unwrap();
    assert!(
        opened
            .notices
            .iter()
            .any(|n| n.text.starts_with("10 update(s)")),
        "{opened:?}"
    );
    // The held ones became one agent message, in order.
    let text: String = s
        .thread()
        .entries
        .iter()
        .filter_map(|e| match e {
            crate::thread::Entry::Agent { content, .. } => Some(
                content
                    .iter()
                    .filter_map(|b| b.text.clone())
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("0123"), "{text}");
}

#[test]
fn updates_held_before_a_new_session_opens_are_bounded_in_bytes() {
    let mut s = session();
    s.initialized(init()).unwrap();
    let big = "x".repeat(3 << 20);
    let mut held = 0;
    for _ in 0..5 {
        if s.update(&chunk("s1", &big)).unwrap() == Routed::Held {
            held += 1;
        }
    }
    assert_eq!(held, 2, "8 MiB holds two 3 MiB updates");
    assert!(s.held_bytes <= MAX_HELD_BYTES);
}

/// Updates for another session while a new one opens are held, then dropped once the session's
/// id is known (not shown).
#[test]
fn held_updates_of_another_session_are_not_shown() {
    let mut s = session();
    s.initialized(init()).unwrap();
    assert_eq!(s.update(&chunk("other", "no")).unwrap(), Routed::Held);
    s.opened(r#"{"sessionId":"s1"}"#).unwrap();
    assert!(!s
        .thread()
        .entries
        .iter()
        .any(|e| matches!(e, crate::thread::Entry::Agent { .. })));
}

#[test]
fn an_answer_without_an_open_request_is_an_error_not_a_panic() {
    let mut s = session();
    assert!(s.opened("{}").is_err());
    assert!(matches!(
        s.open_failed(-32603, "x"),
        AfterFailure::Fail { .. }
    ));
    assert!(s.initialized("not json").is_err());
    assert!(s.update("{").is_err());
}
