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

/// A v2 replay folded into the conversation held (after a crash) adds only the messages the
/// conversation lacks, in their place, and shows nothing twice.
#[cfg(feature = "unstable_protocol_v2")]
#[test]
fn a_v2_replay_into_the_conversation_held_adds_only_what_it_lacks() {
    use crate::thread::{Block, Entry};
    let init = r#"{"protocolVersion":2,"info":{"name":"demo"},"capabilities":{}}"#;
    let up = |u: serde_json::Value| serde_json::json!({"sessionId": "s1", "update": u}).to_string();
    let msg = |kind: &str, id: &str, text: &str| {
        up(serde_json::json!({"sessionUpdate": kind, "messageId": id,
            "content": [{"type": "text", "text": text}]}))
    };
    let mut s = session();
    s.initialized(init).unwrap();
    assert!(s.is_v2());
    s.opened(r#"{"sessionId":"s1"}"#).unwrap();
    s.thread_mut().begin_turn(vec![Block::text("one")]);
    assert_eq!(s.prompt_answered(r#"{"messageId":"u1"}"#).unwrap(), None);
    s.update(&msg("agent_message", "a1", "first")).unwrap();
    s.update(&up(serde_json::json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})))
        .unwrap();
    assert_eq!(s.turn_ended().as_deref(), Some("end_turn"));
    s.agent_ended(Duration::from_secs(1), "exit 1");
    assert_eq!(
        s.initialized(init).unwrap(),
        Open::Replay {
            session_id: "s1".into()
        }
    );
    for u in [
        msg("user_message", "u1", "one"),
        msg("agent_message", "a1", "first"),
        msg("user_message", "u2", "two"),
        msg("agent_message", "a2", "second"),
        up(serde_json::json!({"sessionUpdate": "replay_complete"})),
    ] {
        assert_eq!(s.update(&u).unwrap(), Routed::Folded);
    }
    let opened = s.opened("{}").unwrap();
    assert_eq!(opened.memory, Memory::Replayed);
    let said: Vec<(String, String)> = s
        .thread()
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::User {
                message_id,
                content,
            }
            | Entry::Agent {
                message_id,
                content,
            } => Some((
                message_id.clone().unwrap_or_default(),
                content.iter().filter_map(|b| b.text.clone()).collect(),
            )),
            _ => None,
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        said,
        [
            pair("u1", "one"),
            pair("a1", "first"),
            pair("u2", "two"),
            pair("a2", "second")
        ]
    );
}

/// The v2 reopen a supervisor uses after a restart: a replay wherever v1 would resume or load,
/// nothing where v1 can do neither.
#[cfg(feature = "unstable_protocol_v2")]
#[test]
fn reopen_v2_replays_where_v1_would_resume_or_load() {
    let v2 = AgentFacts::read(r#"{"protocolVersion":2,"info":{"name":"demo"},"capabilities":{}}"#)
        .unwrap();
    for holds in [true, false] {
        assert_eq!(
            super::reopen_v2(&v2, "s1", holds),
            Some(Open::Replay {
                session_id: "s1".into()
            })
        );
    }
    let neither = AgentFacts::read(r#"{"protocolVersion":1,"agentCapabilities":{}}"#).unwrap();
    assert_eq!(super::reopen_v2(&neither, "s1", true), None);
}
