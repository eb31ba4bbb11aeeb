//! ACP v2 folded into the thread (feature `unstable_protocol_v2`).

use serde_json::{json, Value};

use super::*;

fn up(update: Value) -> String {
    json!({"sessionId": "s", "update": update}).to_string()
}

fn v2(t: &mut Thread, update: Value) -> Applied {
    t.apply_v2_json(&up(update)).unwrap()
}

fn texts(t: &Thread) -> Vec<(String, Option<String>, String)> {
    t.entries
        .iter()
        .map(|e| match e {
            Entry::User {
                message_id,
                content,
            } => ("user".into(), message_id.clone(), join(content)),
            Entry::Agent {
                message_id,
                content,
            } => ("agent".into(), message_id.clone(), join(content)),
            Entry::Thought {
                message_id,
                content,
            } => ("thought".into(), message_id.clone(), join(content)),
            Entry::Tool(c) => (
                "tool".into(),
                Some(c.tool_call_id.clone()),
                c.status.clone(),
            ),
            Entry::Notice { text, .. } => ("notice".into(), None, text.clone()),
        })
        .collect()
}

fn join(content: &[Block]) -> String {
    content.iter().filter_map(|b| b.text.clone()).collect()
}

fn s(v: &str) -> String {
    v.to_string()
}

#[test]
fn a_v2_turn_shows_as_a_v1_turn() {
    // v1: the prompt, chunks, a tool call, the answer's stop reason.
    let mut one = Thread::default();
    one.begin_turn(vec![Block::text("hi")]);
    for u in [
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "status": "pending"}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
    ] {
        one.apply_json(&up(u)).unwrap();
    }
    one.end_turn("end_turn");

    // v2: the same turn, acknowledged, echoed, keyed, ended by an idle state_update.
    let mut two = Thread::default();
    two.begin_turn(vec![Block::text("hi")]);
    two.v2_prompt_accepted(r#"{"messageId":"u1"}"#);
    v2(
        &mut two,
        json!({"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "hi"}]}),
    );
    v2(
        &mut two,
        json!({"sessionUpdate": "state_update", "state": "running"}),
    );
    assert_eq!(two.turn, Turn::Running);
    v2(
        &mut two,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Hel"}}),
    );
    v2(
        &mut two,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "lo"}}),
    );
    let a = v2(
        &mut two,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Read", "status": "pending"}),
    );
    assert_eq!(
        a,
        Applied::Tool {
            entry: 2,
            started: true
        }
    );
    v2(
        &mut two,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
    );
    assert_eq!(two.turn, Turn::Running, "the turn goes on after the answer");
    v2(
        &mut two,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    );
    assert_eq!(two.turn, Turn::Idle);
    assert_eq!(two.last_stop.as_deref(), Some("end_turn"));

    let strip = |t: &Thread| {
        texts(t)
            .into_iter()
            .map(|(k, id, text)| (k.clone(), if k == "tool" { id } else { None }, text))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&one), strip(&two));
    assert_eq!(
        texts(&two),
        [
            (s("user"), Some(s("u1")), s("hi")),
            (s("agent"), Some(s("a1")), s("Hello")),
            (s("tool"), Some(s("t")), s("completed")),
        ]
    );
}

#[test]
fn chunks_append_to_their_message_by_id_across_other_entries() {
    let mut t = Thread::default();
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "one "}}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Run"}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_thought_chunk", "messageId": "a1", "content": {"type": "text", "text": "hmm"}}),
    );
    let a = v2(
        &mut t,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "two"}}),
    );
    assert_eq!(
        a,
        Applied::Chunk {
            entry: 0,
            started: false,
            block: Box::new(Block::text("two"))
        }
    );
    // A thought with the same id is another message kind: its own entry.
    assert_eq!(
        texts(&t),
        [
            (s("agent"), Some(s("a1")), s("one two")),
            (s("tool"), Some(s("t")), s("pending")),
            (s("thought"), Some(s("a1")), s("hmm")),
        ]
    );
}

#[test]
fn message_upserts_replace_in_place_and_null_clears() {
    let mut t = Thread::default();
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message", "messageId": "a1", "content": [{"type": "text", "text": "draft"}]}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a2", "content": {"type": "text", "text": "next"}}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message", "messageId": "a1", "content": [{"type": "text", "text": "final"}]}),
    );
    // Omitted content: unchanged.
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message", "messageId": "a2"}),
    );
    assert_eq!(
        texts(&t),
        [
            (s("agent"), Some(s("a1")), s("final")),
            (s("agent"), Some(s("a2")), s("next"))
        ]
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message", "messageId": "a1", "content": null}),
    );
    assert_eq!(texts(&t)[0], (s("agent"), Some(s("a1")), s("")));
    assert_eq!(t.bytes, t.entries.iter().map(Entry::bytes).sum::<usize>());
}

#[test]
fn the_prompt_takes_its_id_from_the_echo_or_the_answer_whichever_first() {
    // The echo first (as chunks): it replaces the face's copy, no second user entry.
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("typed")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "user_message_chunk", "messageId": "u1", "content": {"type": "text", "text": "ty"}}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "user_message_chunk", "messageId": "u1", "content": {"type": "text", "text": "ped"}}),
    );
    t.v2_prompt_accepted(r#"{"messageId":"u1"}"#);
    assert_eq!(texts(&t), [(s("user"), Some(s("u1")), s("typed"))]);
    // The answer first.
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("typed")]);
    t.v2_prompt_accepted(r#"{"messageId":"u9"}"#);
    v2(
        &mut t,
        json!({"sessionUpdate": "user_message", "messageId": "u9", "content": [{"type": "text", "text": "typed"}]}),
    );
    assert_eq!(texts(&t), [(s("user"), Some(s("u9")), s("typed"))]);
    // An answer without an id changes nothing.
    t.v2_prompt_accepted(r#"{}"#);
    assert_eq!(texts(&t).len(), 1);
}

#[test]
fn states_drive_the_turn_and_a_cancel_closes_unfinished_work() {
    let mut t = Thread::default();
    for state in ["requires_action", "_waiting", "unknown"] {
        v2(
            &mut t,
            json!({"sessionUpdate": "state_update", "state": state}),
        );
        assert_eq!(t.turn, Turn::Running, "{state} is busy");
        v2(
            &mut t,
            json!({"sessionUpdate": "state_update", "state": "idle"}),
        );
        assert_eq!(t.turn, Turn::Idle);
    }
    assert_eq!(t.last_stop, None, "an idle snapshot is not a completion");
    t.begin_turn(vec![Block::text("go")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Run", "status": "in_progress"}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
    );
    assert_eq!(t.last_stop.as_deref(), Some("cancelled"));
    assert_eq!(t.tool("t").unwrap().1.status, "cancelled");
    // A repeated idle snapshot with the last stop reason does not end another turn.
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    );
    assert_eq!(t.last_stop.as_deref(), Some("cancelled"));
}

#[test]
fn plans_by_id_and_tool_content_chunks() {
    let mut t = Thread::default();
    v2(
        &mut t,
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": [{"content": "a", "priority": "high", "status": "pending"}]}}),
    );
    assert_eq!(t.plan.len(), 1);
    v2(
        &mut t,
        json!({"sessionUpdate": "plan_removed", "planId": "other"}),
    );
    assert_eq!(t.plan.len(), 1, "another plan's removal");
    v2(
        &mut t,
        json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "1. do it"}}),
    );
    assert_eq!(t.plan[0].content, "1. do it");
    v2(
        &mut t,
        json!({"sessionUpdate": "plan_removed", "planId": "p"}),
    );
    assert!(t.plan.is_empty());

    let a = v2(
        &mut t,
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": {"type": "content", "content": {"type": "text", "text": "out1"}}}),
    );
    assert_eq!(
        a,
        Applied::Tool {
            entry: 0,
            started: true
        }
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": {"type": "content", "content": {"type": "text", "text": "out2"}}}),
    );
    assert_eq!(t.tool("t").unwrap().1.content.len(), 2);
    assert_eq!(t.bytes, t.entries.iter().map(Entry::bytes).sum::<usize>());
}

#[test]
fn a_replay_adds_only_what_the_thread_does_not_hold() {
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("hi")]);
    t.v2_prompt_accepted(r#"{"messageId":"u1"}"#);
    v2(
        &mut t,
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Hello"}}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    );
    let before = texts(&t);
    assert_eq!(t.replay_view(), ReplayView::Fold);
    let replay = [
        json!({"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "hi"}]}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "Hello"}}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a2", "content": {"type": "text", "text": "while you were away"}}),
        json!({"sessionUpdate": "replay_complete"}),
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ];
    let mut skipped = 0;
    for u in replay {
        if t.apply_v2_replayed_json(&up(u)).unwrap().is_none() {
            skipped += 1;
        }
    }
    assert_eq!(skipped, 1, "the known chunk");
    let mut expected = before;
    expected.push((s("agent"), Some(s("a2")), s("while you were away")));
    assert_eq!(texts(&t), expected);
}

#[test]
fn bad_v2_updates_are_refused_with_their_kind() {
    let mut t = Thread::default();
    for (u, says) in [
        (
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}),
            "agent_message_chunk: missing field `messageId`",
        ),
        (
            json!({"sessionUpdate": "state_update"}),
            "state_update: missing field `state`",
        ),
        (
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items"}}),
            "plan_update: missing field `planId`",
        ),
    ] {
        let e = t.apply_v2_json(&up(u)).unwrap_err();
        assert!(e.0.starts_with(says), "{e}");
    }
    assert!(t.apply_v2_json("[]").is_err());
    assert!(t.entries.is_empty());
    // Kinds this version does not show, custom ones too, are ignored.
    for kind in ["terminal_update", "_mine", "hologram"] {
        let a = v2(&mut t, json!({"sessionUpdate": kind}));
        assert_eq!(a, Applied::Ignored { kind: kind.into() });
    }
}

#[test]
fn an_idle_without_a_stop_reason_ends_the_turn_with_none_and_error_fails_it() {
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("one")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    );
    assert_eq!(t.last_stop.as_deref(), Some("end_turn"));
    // The next turn's idle says no reason: over, with no reason (not the last turn's), and
    // its tool call left as the agent sent it.
    t.begin_turn(vec![Block::text("two")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Run", "status": "in_progress"}),
    );
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": null}),
    );
    assert_eq!(t.turn, Turn::Idle);
    assert_eq!(t.last_stop, None);
    assert_eq!(t.tool("t").unwrap().1.status, "in_progress");
    // v2's `error` stop reason fails the turn with the agent's message.
    t.begin_turn(vec![Block::text("three")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "model overloaded"}}),
    );
    assert_eq!(t.last_stop.as_deref(), Some("error"));
    assert_eq!(t.tool("t").unwrap().1.status, "failed");
    assert!(matches!(
        t.entries.last(),
        Some(Entry::Notice { level: NoticeLevel::Error, text }) if text == "the turn failed: model overloaded"
    ));
    t.begin_turn(vec![Block::text("four")]);
    v2(
        &mut t,
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "error"}),
    );
    assert!(matches!(
        t.entries.last(),
        Some(Entry::Notice { text, .. }) if text == "the turn failed (the agent gave no details)"
    ));
}
