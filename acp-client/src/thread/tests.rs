use super::*;

fn chunk(kind: &str, text: &str) -> String {
    serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": kind,
        "content": {"type": "text", "text": text}}})
    .to_string()
}

#[test]
fn chunks_merge_and_deltas_coalesce() {
    let mut t = Thread::default();
    for w in ["Hel", "lo"] {
        t.apply_json(&chunk("agent_message_chunk", w)).unwrap();
    }
    let d = t.take_delta();
    assert_eq!(d.entries.len(), 1);
    assert_eq!(
        d.entries[0].1,
        &Entry::Agent {
            message_id: None,
            content: vec![Block::text("Hello")]
        }
    );
    assert!(!t.has_changes());
}

#[test]
fn junk_fields_are_skipped_without_being_built() {
    let junk = format!("[{}0]", "0,".repeat(100_000));
    let params = format!(
        r#"{{"sessionId":"s","junk":{junk},"update":{{"sessionUpdate":"agent_message_chunk","junk":{junk},"content":{{"type":"text","text":"x","junk":{junk}}}}}}}"#
    );
    let mut t = Thread::default();
    t.apply_json(&params).unwrap();
    assert!(t.to_json().len() < 300, "{}", t.to_json());
}

#[test]
fn the_byte_limit_drops_the_oldest_entries() {
    let mut t = Thread::new(Limits { max_bytes: 1000 });
    for i in 0..50 {
        t.apply_json(&chunk("user_message_chunk", &"u".repeat(100)))
            .unwrap();
        t.apply_json(&chunk("agent_message_chunk", &format!("{i:0>100}")))
            .unwrap();
    }
    assert!(t.bytes <= 1000, "{}", t.bytes);
    assert_eq!(t.dropped_entries + t.entries.len() as u64, 100);
    assert!(matches!(t.entries.last(), Some(Entry::Agent { .. })));
    // One huge chunk keeps its end.
    t.apply_json(&chunk(
        "agent_message_chunk",
        &format!("{}END", "z".repeat(5000)),
    ))
    .unwrap();
    let Some(Entry::Agent { content, .. }) = t.entries.last() else {
        panic!()
    };
    assert!(content[0].text.as_ref().unwrap().ends_with("END"));
    assert!(t.bytes <= 1000, "{}", t.bytes);
}

#[test]
fn long_arrays_are_kept_up_to_a_cap_and_counted() {
    let entries: Vec<_> = (0..300)
        .map(|i| serde_json::json!({"content": format!("step {i}"), "priority": "low", "status": "pending"}))
        .collect();
    let content: Vec<_> = (0..100)
        .map(|_| serde_json::json!({"type": "content", "content": {"type": "text", "text": "x"}}))
        .collect();
    let mut t = Thread::default();
    t.apply_json(&serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": entries}}).to_string())
        .unwrap();
    t.apply_json(&serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "content": content}}).to_string())
        .unwrap();
    assert_eq!((t.plan.len(), t.plan_more), (MAX_ITEMS, 44));
    let (_, call) = t.tool("t").unwrap();
    assert_eq!(
        (call.content.len(), call.content_more),
        (MAX_TOOL_CONTENT, 36)
    );
}

fn update(update: serde_json::Value) -> String {
    serde_json::json!({"sessionId": "s", "update": update}).to_string()
}

#[test]
fn a_replay_is_shown_until_the_thread_holds_a_conversation() {
    let mut t = Thread::default();
    assert_eq!(t.replay_view(), ReplayView::Show);
    // The face's own words are not the conversation.
    t.notice(NoticeLevel::Info, "starting");
    assert_eq!(t.replay_view(), ReplayView::Show);
    t.begin_turn(vec![Block::text("hi")]);
    assert_eq!(t.replay_view(), ReplayView::Fold);
    // Entries dropped for the memory limit were shown too.
    let mut dropped = Thread::new(Limits { max_bytes: 10 });
    dropped
        .apply_json(&chunk("agent_message_chunk", &"x".repeat(20)))
        .unwrap();
    dropped.notice(NoticeLevel::Error, &"y".repeat(20));
    assert_eq!((dropped.dropped_entries, dropped.entries.len()), (1, 1));
    assert_eq!(dropped.replay_view(), ReplayView::Fold);
}

#[test]
fn a_folded_replay_keeps_the_session_state_and_adds_no_conversation() {
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("first")]);
    t.apply_json(&chunk("agent_message_chunk", "answer"))
        .unwrap();
    t.apply_json(&update(serde_json::json!({"sessionUpdate": "tool_call",
        "toolCallId": "done", "title": "Read", "status": "completed"})))
        .unwrap();
    t.apply_json(&update(serde_json::json!({"sessionUpdate": "tool_call",
        "toolCallId": "open", "title": "Run", "status": "in_progress"})))
        .unwrap();
    t.end_turn("end_turn");
    let before = t.entries.clone();
    let replay = [
        chunk("user_message_chunk", "first"),
        chunk("agent_message_chunk", "answer"),
        chunk("agent_thought_chunk", "hmm"),
        update(
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "done",
            "title": "Read", "status": "pending"}),
        ),
        update(
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "open",
            "status": "completed"}),
        ),
        update(
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "unknown",
            "title": "Never shown"}),
        ),
        update(serde_json::json!({"sessionUpdate": "plan",
            "entries": [{"content": "step", "priority": "low", "status": "completed"}]})),
        update(
            serde_json::json!({"sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "echo", "description": "echo"}]}),
        ),
        update(
            serde_json::json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
        ),
        update(serde_json::json!({"sessionUpdate": "config_option_update", "configOptions": []})),
        update(serde_json::json!({"sessionUpdate": "usage_update", "used": 5, "size": 10})),
        update(serde_json::json!({"sessionUpdate": "session_info_update", "title": "T"})),
    ];
    let applied: Vec<_> = replay
        .iter()
        .map(|u| t.apply_replayed_json(u).unwrap())
        .collect();
    // No entry added; only the tool call still open here took the agent's state.
    assert_eq!(t.entries.len(), before.len());
    assert_eq!(t.tool("done").unwrap().1.status, "completed");
    assert_eq!(t.tool("open").unwrap().1.status, "completed");
    assert!(t.tool("unknown").is_none());
    assert_eq!(applied[..3], [None, None, None]);
    assert_eq!((applied[3].clone(), applied[5].clone()), (None, None));
    assert!(matches!(
        applied[4],
        Some(Applied::Tool { started: false, .. })
    ));
    assert_eq!(t.plan.len(), 1);
    assert_eq!(t.commands[0].name, "echo");
    assert_eq!(t.current_mode.as_deref(), Some("plan"));
    assert_eq!(t.config_options.as_ref().map(RawJson::get), Some("[]"));
    assert_eq!(t.usage.as_ref().map(|u| (u.used, u.size)), Some((5, 10)));
    assert_eq!(t.title.as_deref(), Some("T"));
    // What cannot be read is said as for any update.
    assert!(t.apply_replayed_json("{}").is_err());
}

#[test]
fn saved_threads_round_trip_and_other_formats_are_refused() {
    let mut t = Thread::default();
    t.begin_turn(vec![Block::text("hi")]);
    t.apply_json(&chunk("agent_message_chunk", "yo")).unwrap();
    t.end_turn("end_turn");
    let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
    assert_eq!(back, t);
    let other = t.to_json().replacen("\"format\":1", "\"format\":2", 1);
    assert!(Thread::from_json(&other, Limits::default())
        .unwrap_err()
        .contains("format 2"));
}

/// `Entry` and `ToolContent` are read back tag first (not through serde's tagged enums):
/// every variant reads back as written, an unknown tool content kind reads as `Unknown`,
/// and a bad entry fails naming what is wrong.
#[test]
fn every_saved_entry_and_tool_content_reads_back() {
    let tool = ToolCall {
        tool_call_id: "t1".into(),
        title: "edit".into(),
        kind: "edit".into(),
        status: "completed".into(),
        content: vec![
            ToolContent::Content {
                content: Block::text("out"),
            },
            ToolContent::Diff {
                path: "/a".into(),
                old_text: None,
                new_text: "new".into(),
            },
            ToolContent::Diff {
                path: "/b".into(),
                old_text: Some("old".into()),
                new_text: "new".into(),
            },
            ToolContent::Terminal {
                terminal_id: "term".into(),
            },
            ToolContent::Unknown,
        ],
        content_more: 2,
        locations: vec![Location {
            path: "/a".into(),
            line: Some(3),
        }],
        raw_input: Some(RawJson(
            serde_json::value::RawValue::from_string(r#"{"x":[1,2]}"#.into()).unwrap(),
        )),
        raw_output: None,
    };
    let entries = vec![
        Entry::User {
            message_id: Some("m1".into()),
            content: vec![Block::text("hi")],
        },
        Entry::Agent {
            message_id: None,
            content: vec![Block::text("yo")],
        },
        Entry::Thought {
            message_id: None,
            content: vec![],
        },
        Entry::Tool(tool),
        Entry::Notice {
            level: NoticeLevel::Warning,
            text: "careful".into(),
        },
    ];
    for e in &entries {
        let text = serde_json::to_string(e).unwrap();
        assert_eq!(&serde_json::from_str::<Entry>(&text).unwrap(), e, "{text}");
    }
    let t = Thread {
        entries,
        ..Thread::default()
    };
    let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
    assert_eq!(back.entries, t.entries);

    let later = r#"{"type":"hologram","content":{"x":1},"path":7}"#;
    assert_eq!(
        serde_json::from_str::<ToolContent>(later).unwrap(),
        ToolContent::Unknown
    );
    let bad = |text: &str| serde_json::from_str::<Entry>(text).unwrap_err().to_string();
    assert!(bad(r#"{"content":[]}"#).contains("missing field `type`"));
    assert!(bad(r#"{"type":"poem","content":[]}"#).contains("unknown variant `poem`"));
    assert!(bad(r#"{"type":"user"}"#).contains("missing field `content`"));
    assert!(
        bad(r#"{"type":"notice","level":"loud","text":"x"}"#).contains("unknown variant `loud`")
    );
    assert!(bad(r#"[1]"#).contains("invalid type"));
    let diff = r#"{"type":"tool","toolCallId":"t","title":"","kind":"edit","status":"pending","content":[{"type":"diff","path":"/a"}],"locations":[]}"#;
    assert!(bad(diff).contains("missing field `newText`"));
    let saved = Thread::default().to_json().replacen(
        "\"entries\":[]",
        "\"entries\":[{\"type\":\"user\",\"content\":7}]",
        1,
    );
    let err = Thread::from_json(&saved, Limits::default()).unwrap_err();
    assert!(
        err.starts_with("not a saved thread: invalid type: integer `7`"),
        "{err}"
    );
}

#[cfg(feature = "unstable")]
mod unstable {
    use super::*;

    #[test]
    fn turn_usage_status_and_title_are_kept_saved_and_sent_in_deltas() {
        let mut t = Thread::new(Limits::default());
        t.begin_turn(vec![Block::text("hi")]);
        let _ = t.take_delta();
        let stop = t
            .end_turn_json(r#"{"stopReason":"end_turn","usage":{"totalTokens":30,"inputTokens":20,"outputTokens":10,"cachedReadTokens":5}}"#)
            .unwrap();
        assert_eq!(stop, "end_turn");
        let want = TurnUsage {
            total_tokens: 30,
            input_tokens: 20,
            output_tokens: 10,
            cached_read_tokens: Some(5),
            ..TurnUsage::default()
        };
        assert_eq!(t.turn_usage.as_ref(), Some(&want));
        t.set_session_status("open");
        t.set_title("Refactor");
        let delta = serde_json::to_value(t.take_delta()).unwrap();
        assert_eq!(delta["meta"]["turnUsage"]["totalTokens"], 30);
        assert_eq!(delta["meta"]["sessionStatus"], "open");
        assert_eq!(delta["meta"]["title"], "Refactor");
        // Saved and read back.
        let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
        assert_eq!(back.turn_usage, Some(want.clone()));
        assert_eq!(back.session_status.as_deref(), Some("open"));
        // A turn without usage keeps the last one; a malformed one is ignored, not an error.
        t.begin_turn(vec![Block::text("again")]);
        assert_eq!(
            t.end_turn_json(r#"{"stopReason":"cancelled","usage":"lots"}"#)
                .unwrap(),
            "cancelled"
        );
        assert_eq!(t.turn_usage, Some(want));
        assert_eq!(t.last_stop.as_deref(), Some("cancelled"));
    }

    #[test]
    fn a_prompt_result_without_a_stop_reason_changes_nothing() {
        let mut t = Thread::new(Limits::default());
        t.begin_turn(vec![Block::text("hi")]);
        let err = t
            .end_turn_json(r#"{"usage":{"totalTokens":1}}"#)
            .unwrap_err();
        assert!(err.0.contains("stopReason"), "{err}");
        assert_eq!((t.turn, &t.turn_usage), (Turn::Running, &None));
    }

    #[test]
    fn format_1_threads_without_the_new_fields_still_read() {
        let old = r#"{"format":1,"entries":[],"droppedEntries":0,"plan":[],"modes":[],"commands":[],"turn":"idle"}"#;
        let t = Thread::from_json(old, Limits::default()).unwrap();
        assert_eq!((t.turn_usage, t.session_status), (None, None));
        // And what this build saves without them has none of their keys.
        assert!(!Thread::new(Limits::default())
            .to_json()
            .contains("turnUsage"));
    }
}
