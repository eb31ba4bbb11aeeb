//! ACP v2 (feature `unstable_protocol_v2`): the rules the vectors cannot show because the hosts
//! answer through handlers (an agent's answers refused locally), the negotiated version, and
//! the v2 vectors' updates checked against the schema crate's v2 types.

use acp_core::{Config, Connection, Error, Event, Role};
use serde_json::{json, Value};

fn agent() -> Connection {
    Connection::new(Config::new(Role::Agent))
}

/// Feeds one line and returns the token of the request it carries.
fn request(c: &mut Connection, line: Value) -> u64 {
    c.handle_bytes(format!("{line}\n").as_bytes(), 0);
    let mut token = None;
    while let Some(ev) = c.poll_event() {
        if let Event::Request { token: t, .. } = ev {
            token = Some(t);
        }
    }
    token.expect("the line is a request")
}

fn sent(c: &mut Connection) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(b) = c.poll_transmit() {
        out.extend(b);
    }
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn rule(e: Error) -> String {
    match e {
        Error::ProtocolVersionRule(why) => why,
        other => panic!("expected ProtocolVersionRule, got {other:?}"),
    }
}

fn v2_agent() -> Connection {
    let mut c = agent();
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}}}),
    );
    c.respond(
        t,
        &json!({"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"a","version":"1"}}),
    )
    .unwrap();
    sent(&mut c);
    assert_eq!(c.protocol_version(), 2);
    c
}

#[test]
fn an_agent_answers_version_2_only_to_a_client_that_asked_for_it() {
    let mut c = agent();
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}),
    );
    let why = rule(
        c.respond(
            t,
            &json!({"protocolVersion":2,"info":{"name":"a","version":"1"}}),
        )
        .unwrap_err(),
    );
    assert_eq!(
        why,
        "the client asked for protocol version 1: answer it (or 1), not 2"
    );
    assert!(sent(&mut c).is_empty(), "nothing is sent");
    assert_eq!(c.pending_incoming(), 1, "the request can still be answered");
    c.respond(t, &json!({"protocolVersion":1})).unwrap();
    assert_eq!(
        sent(&mut c),
        [json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}})]
    );
    assert_eq!(c.protocol_version(), 1);
}

#[test]
fn a_v2_prompt_answer_carries_the_message_id() {
    let mut c = v2_agent();
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}),
    );
    for bad in [
        json!({"stopReason":"end_turn"}),
        json!({"messageId":7}),
        json!({}),
    ] {
        let why = rule(c.respond(t, &bad).unwrap_err());
        assert!(why.contains("messageId"), "{why}");
    }
    assert!(sent(&mut c).is_empty());
    c.respond(t, &json!({"messageId":"u1"})).unwrap();
    assert_eq!(
        sent(&mut c),
        [json!({"jsonrpc":"2.0","id":1,"result":{"messageId":"u1"}})]
    );
}

#[test]
fn a_resume_with_replay_is_answered_after_its_replay_complete() {
    let mut c = v2_agent();
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","replayFrom":{"type":"start"}}}),
    );
    let why = rule(c.respond(t, &json!({})).unwrap_err());
    assert_eq!(
        why,
        "send replay_complete for session s before answering its session/resume"
    );
    // Another session's marker does not end this replay.
    let other = json!({"sessionId":"other","update":{"sessionUpdate":"replay_complete"}});
    assert!(c.notify("session/update", Some(&other)).is_err());
    let done = json!({"sessionId":"s","update":{"sessionUpdate":"replay_complete"}});
    c.notify("session/update", Some(&done)).unwrap();
    c.respond(t, &json!({})).unwrap();
    assert!(
        c.notify("session/update", Some(&done)).is_err(),
        "replay over"
    );
    // A resume that fails ends its replay.
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","replayFrom":{"type":"start"}}}),
    );
    c.respond_error(
        t,
        acp_core::ErrorObject::new(acp_core::ErrorCode::InvalidParams, "no"),
    )
    .unwrap();
    assert!(
        c.notify("session/update", Some(&done)).is_err(),
        "replay failed"
    );
    // A resume without replayFrom has no replay to complete.
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","replayFrom":null}}),
    );
    assert!(c.notify("session/update", Some(&done)).is_err());
    c.respond(t, &json!({})).unwrap();
}

#[test]
fn a_client_on_v1_has_version_1_and_one_on_v2_version_2() {
    for (answer, version) in [(1, 1), (2, 2)] {
        let mut c: Connection = Connection::new(Config::new(Role::Client));
        let params =
            json!({"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}});
        c.send_request("initialize", Some(&params), Default::default(), 0)
            .unwrap();
        c.handle_bytes(
            format!(
                "{}\n",
                json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":answer}})
            )
            .as_bytes(),
            0,
        );
        while c.poll_event().is_some() {}
        assert_eq!(c.protocol_version(), version);
        let load = json!({"sessionId":"s","cwd":"/w"});
        let r = c.send_request("session/load", Some(&load), Default::default(), 0);
        assert_eq!(r.is_ok(), version == 1, "{r:?}");
    }
}

/// Every `session/update` of the v2 vectors that the engine accepts from a sender decodes as
/// the schema crate's v2 notification, as a kind it knows unless it is a custom one: the
/// vectors speak the v2 the official schema defines.
#[test]
fn the_v2_vectors_updates_are_schema_v2_updates() {
    use agent_client_protocol_schema::v2::{SessionUpdate, UpdateSessionNotification};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("v2-") || name.starts_with("v2-negotiation") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let Some((tag, arg)) = line.split_once(' ') else {
                continue;
            };
            let v: Value = match tag {
                ">" | "<" | "$" | "!" => match serde_json::from_str(arg) {
                    Ok(v) => v,
                    Err(_) => continue,
                },
                _ => continue,
            };
            if v["method"] != "session/update" || v.get("throws").is_some() {
                continue;
            }
            let params = v["params"].to_string();
            if acp_core::v2::check_update(&params, true).is_err() {
                continue;
            }
            let n: UpdateSessionNotification =
                serde_json::from_str(&params).unwrap_or_else(|e| panic!("{name}: {params}: {e}"));
            let custom = v["params"]["update"]["sessionUpdate"]
                .as_str()
                .is_some_and(|k| k.starts_with('_'));
            assert_eq!(
                matches!(n.update, SessionUpdate::Other(_)),
                custom,
                "{name}: {params}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} updates checked");
}

/// A v2 agent whose client advertised `capabilities` (JSON).
fn v2_agent_for(client_caps: Value) -> (Connection, u64) {
    let mut c = agent();
    let t = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":client_caps}}),
    );
    (c, t)
}

fn not_advertised(e: Error) -> (String, &'static str) {
    match e {
        Error::CapabilityNotAdvertised { method, capability } => (method, capability),
        other => panic!("expected CapabilityNotAdvertised, got {other:?}"),
    }
}

#[test]
fn an_agent_offers_terminal_auth_only_to_a_client_that_advertised_it() {
    let answer = json!({"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"a","version":"1"},
        "authMethods":[{"methodId":"tui","name":"Terminal","type":"terminal"}]});
    let (mut c, t) = v2_agent_for(json!({}));
    assert_eq!(
        not_advertised(c.respond(t, &answer).unwrap_err()),
        ("initialize".to_owned(), "auth.terminal")
    );
    assert!(sent(&mut c).is_empty(), "nothing is sent");
    let (mut c, t) = v2_agent_for(json!({"auth":{"terminal":{}}}));
    c.respond(t, &answer).unwrap();
    assert_eq!(sent(&mut c).len(), 1);
    // Its authMethods are not empty: auth/login exists for this client.
    let login = request(
        &mut c,
        json!({"jsonrpc":"2.0","id":1,"method":"auth/login","params":{"methodId":"tui"}}),
    );
    c.respond(login, &json!({})).unwrap();
}

#[test]
fn an_agent_asks_elicitations_only_in_the_modes_the_client_advertised() {
    let form = json!({"sessionId":"s","mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{}}});
    let url = json!({"sessionId":"s","mode":"url","message":"Sign in","url":"https://example.invalid/","elicitationId":"e"});
    let (mut c, t) = v2_agent_for(json!({"elicitation":{"form":{},"url":null}}));
    c.respond(
        t,
        &json!({"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"a","version":"1"}}),
    )
    .unwrap();
    sent(&mut c);
    let err = c
        .send_request("elicitation/create", Some(&url), Default::default(), 0)
        .unwrap_err();
    assert_eq!(
        not_advertised(err),
        ("elicitation/create".to_owned(), "elicitation.url")
    );
    assert!(sent(&mut c).is_empty());
    c.send_request("elicitation/create", Some(&form), Default::default(), 0)
        .unwrap();
    assert_eq!(sent(&mut c)[0]["params"]["mode"], "form");
}

#[test]
fn a_v2_client_does_not_batch_lifecycle_messages_and_reports_unasked_terminal_auth() {
    use acp_core::{BatchEntry, RequestOptions};
    let mut c: Connection = Connection::new(Config::new(Role::Client));
    let params = json!({"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":{}});
    c.send_request("initialize", Some(&params), Default::default(), 0)
        .unwrap();
    let answer = json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},
        "info":{"name":"a","version":"1"},"authMethods":[{"methodId":"tui","name":"T","type":"terminal"}]}});
    c.handle_bytes(format!("{answer}\n").as_bytes(), 0);
    let mut reported = Vec::new();
    while let Some(ev) = c.poll_event() {
        if let Event::ProtocolError(e) = ev {
            reported.push(e.message);
        }
    }
    assert_eq!(
        reported,
        ["initialize offers an auth method that needs the client capability auth.terminal, which was not advertised"]
    );
    sent(&mut c);
    let entry = |method: &str| BatchEntry {
        method: method.to_owned(),
        params: Some(
            serde_json::value::to_raw_value(&json!({"sessionId":"s","cwd":"/w"})).unwrap(),
        ),
        request: Some(RequestOptions::default()),
    };
    let err = c
        .send_batch(vec![entry("session/list"), entry("session/resume")], 0)
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotAllowedInBatch(m) if m == "session/resume"),
        "{err:?}"
    );
    assert!(sent(&mut c).is_empty(), "nothing of the batch is sent");
    assert_eq!(
        c.send_batch(vec![entry("session/list"), entry("session/close")], 0)
            .unwrap()
            .len(),
        2
    );
}

/// acp-core's idempotency-key rule agrees with the schema crate's `IdempotencyKey` on every
/// case: what one accepts the other does.
#[test]
fn idempotency_keys_agree_with_the_schema_crate() {
    use agent_client_protocol_schema::v2::PromptRequest;
    let max = "é".repeat(255);
    let long = "k".repeat(256);
    for key in [
        json!(null),
        json!(""),
        json!("k"),
        json!(max),
        json!(long),
        json!(7),
        json!({"k":1}),
        json!(["k"]),
    ] {
        let params =
            json!({"sessionId":"s","prompt":[{"type":"text","text":"hi"}],"idempotencyKey":key});
        let ours = acp_core::v2::capabilities::check_idempotency_key(&params.to_string()).is_ok();
        let theirs = serde_json::from_value::<PromptRequest>(params.clone()).is_ok();
        assert_eq!(ours, theirs, "{key}");
    }
}

#[test]
fn cancellable_items_agree_with_the_schema_crate() {
    use acp_core::v2::cancel::Cancellable;
    use agent_client_protocol_schema::v2::{
        CancelTerminalRequest, CancelToolCallRequest, SessionUpdate, ToolCallStatus,
        UpdateSessionNotification,
    };
    // What the schema crate reads of a tool call's capabilities and status, against the
    // engine's table: cancellable when `capabilities.cancel` is an object and the status is
    // not final.
    for caps in [
        json!({"cancel":{}}),
        json!({"cancel":{"_meta":{"x":1}}}),
        json!({"cancel":null}),
        json!({"cancel":true}),
        json!({}),
        json!(null),
    ] {
        for status in [
            "pending",
            "in_progress",
            "paused",
            "completed",
            "failed",
            "cancelled",
        ] {
            let params = json!({"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":status,"capabilities":caps}});
            let n: UpdateSessionNotification = serde_json::from_value(params.clone()).unwrap();
            let SessionUpdate::ToolCallUpdate(u) = n.update else {
                panic!("{params}")
            };
            let advertised = u
                .capabilities
                .clone()
                .take()
                .is_some_and(|c| c.cancel.is_some());
            let final_ = matches!(
                u.status.clone().take(),
                Some(
                    ToolCallStatus::Completed | ToolCallStatus::Failed | ToolCallStatus::Cancelled
                )
            );
            let mut table = Cancellable::default();
            table.observe(&params.to_string());
            let ours = table
                .check("tool_call/cancel", r#"{"sessionId":"s","toolCallId":"t"}"#)
                .is_ok();
            assert_eq!(ours, advertised && !final_, "{params}");
        }
    }
    // The requests' params are the schema crate's.
    let tool: CancelToolCallRequest =
        serde_json::from_str(r#"{"sessionId":"s","toolCallId":"t"}"#).unwrap();
    assert_eq!(&*tool.tool_call_id.0, "t");
    let term: CancelTerminalRequest =
        serde_json::from_str(r#"{"sessionId":"s","terminalId":"x"}"#).unwrap();
    assert_eq!(&*term.terminal_id.0, "x");
    assert!(serde_json::from_str::<CancelTerminalRequest>(r#"{"sessionId":"s"}"#).is_err());
}
