//! Feature `unstable` (with `typed`): every draft method of the schema crate has a marker type,
//! and each marker's params and result cross a client/agent pair that advertised everything
//! (typed on one side, decoded on the other), while a pair that advertised nothing refuses
//! them (`acp_core::unstable`'s rules; the wire details are in tests/vectors/unstable-*).

use std::collections::BTreeSet;

use acp_core::pair::Pair;
use acp_core::typed::{self, schema::v1 as s, unstable as u, Method, NotificationMethod};
use acp_core::{Error, Event, RequestOptions, Role};
use serde_json::{json, Value};

/// A pair after `initialize`, the client allowing `client_caps`, the agent advertising
/// `agent_caps`.
fn pair(client_caps: Value, agent_caps: Value) -> Pair {
    let mut p: Pair = Pair::new();
    p.client
        .send_request(
            "initialize",
            Some(&json!({"protocolVersion": 1, "clientCapabilities": client_caps})),
            RequestOptions::default(),
            0,
        )
        .unwrap();
    p.pump();
    let Some(Event::Request { token, .. }) = p.agent_events().pop() else {
        panic!("initialize not delivered")
    };
    p.agent
        .respond(
            token,
            &json!({"protocolVersion": 1, "agentCapabilities": agent_caps}),
        )
        .unwrap();
    p.pump();
    assert!(matches!(
        p.client_events().pop(),
        Some(Event::Response { result: Ok(_), .. })
    ));
    p
}

fn everything() -> Pair {
    pair(
        json!({"plan": {}, "subagents": {}}),
        json!({
            "sessionCapabilities": {"fork": {}, "archive": {}, "status": {}, "title": {}},
            "auth": {"status": {}},
            "providers": {},
            "mcpCapabilities": {"acp": true}
        }),
    )
}

/// Sends `M` typed from the side that calls it and answers it typed; both ends decode.
fn round_trip<M: Method>(p: &mut Pair, params: Value, result: Value) {
    let params: M::Params = serde_json::from_value(params)
        .unwrap_or_else(|e| panic!("sample params of {} do not decode: {e}", M::NAME));
    let result: M::Result = serde_json::from_value(result)
        .unwrap_or_else(|e| panic!("sample result of {} does not decode: {e}", M::NAME));
    let (caller, handler) = match M::HANDLED_BY {
        Role::Agent => (&mut p.client, &mut p.agent),
        Role::Client => (&mut p.agent, &mut p.client),
    };
    let id = caller
        .request::<M>(&params, RequestOptions::default(), 0)
        .unwrap_or_else(|e| panic!("sending {}: {e}", M::NAME));
    handler.handle_bytes(&caller.poll_transmit().unwrap(), 0);
    let Some(Event::Request {
        token,
        method,
        params: got,
        ..
    }) = handler.poll_event()
    else {
        panic!("{} was not delivered as a request", M::NAME)
    };
    assert_eq!(method, M::NAME);
    let got = typed::decode_params::<M>(got.as_deref()).expect("params decode");
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        serde_json::to_value(&params).unwrap()
    );
    handler.respond_typed::<M>(token, &result).unwrap();
    caller.handle_bytes(&handler.poll_transmit().unwrap(), 0);
    match caller.poll_event() {
        Some(Event::Response {
            id: done,
            result: Ok(raw),
            ..
        }) if done == id => {
            let r = typed::decode_result::<M>(&raw).expect("result decodes");
            assert_eq!(
                serde_json::to_value(&r).unwrap(),
                serde_json::to_value(&result).unwrap()
            );
        }
        other => panic!("{} did not complete: {other:?}", M::NAME),
    }
}

fn notification<N: NotificationMethod>(p: &mut Pair, params: Value) {
    let params: N::Params = serde_json::from_value(params).unwrap();
    let (sender, receiver) = match N::HANDLED_BY {
        Role::Agent => (&mut p.client, &mut p.agent),
        Role::Client => (&mut p.agent, &mut p.client),
    };
    sender.notify_typed::<N>(&params).unwrap();
    receiver.handle_bytes(&sender.poll_transmit().unwrap(), 0);
    match receiver.poll_event() {
        Some(Event::Notification {
            method,
            params: got,
        }) => {
            assert_eq!(method, N::NAME);
            typed::decode_notification::<N>(got.as_deref()).expect("decodes");
        }
        other => panic!("{} not delivered: {other:?}", N::NAME),
    }
}

#[test]
fn every_draft_method_crosses_a_pair_that_advertised_it() {
    let mut p = everything();
    let sid = json!({"sessionId": "s"});
    round_trip::<u::ForkSession>(
        &mut p,
        json!({"sessionId": "s", "cwd": "/w"}),
        json!({"sessionId": "s2"}),
    );
    round_trip::<u::ArchiveSession>(&mut p, sid.clone(), json!({}));
    round_trip::<u::UnarchiveSession>(&mut p, sid.clone(), json!({}));
    round_trip::<u::SessionStatus>(&mut p, sid.clone(), json!({"status": "open"}));
    round_trip::<u::SetSessionTitle>(
        &mut p,
        json!({"sessionId": "s", "title": "Refactor"}),
        json!({"title": "Refactor"}),
    );
    round_trip::<u::AuthStatus>(&mut p, json!({}), json!({"state": "authenticated"}));
    round_trip::<u::ListProviders>(&mut p, json!({}), json!({"providers": []}));
    round_trip::<u::McpMessage>(
        &mut p,
        json!({"serverId": "m", "requestId": "r", "method": "tools/list"}),
        json!({"result": {"tools": []}}),
    );
    notification::<u::McpMessageNotification>(
        &mut p,
        json!({"serverId": "m", "requestId": "r", "method": "notifications/progress"}),
    );
    notification::<u::AuthStatusUpdate>(&mut p, json!({"state": "unauthenticated"}));
    // The draft session updates the client allowed.
    notification::<typed::SessionUpdate>(
        &mut p,
        json!({"sessionId": "s", "update": {"sessionUpdate": "session_message_chunk", "messageId": "m", "content": {"type": "text", "text": "hi"}}}),
    );
    // End-of-turn token usage decodes from a prompt result.
    let r: s::PromptResponse = serde_json::from_value(json!({"stopReason": "end_turn", "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}})).unwrap();
    assert_eq!(r.usage.map(|u| u.total_tokens), Some(30));
}

#[test]
fn a_pair_that_advertised_nothing_refuses_them() {
    let mut p = pair(json!({}), json!({}));
    let refused = |r: Result<u64, Error>| matches!(r, Err(Error::CapabilityNotAdvertised { .. }));
    let sid: s::SessionStatusRequest = serde_json::from_value(json!({"sessionId": "s"})).unwrap();
    assert!(refused(p.client.request::<u::SessionStatus>(
        &sid,
        RequestOptions::default(),
        0
    )));
    let fork: s::ForkSessionRequest =
        serde_json::from_value(json!({"sessionId": "s", "cwd": "/w"})).unwrap();
    assert!(refused(p.client.request::<u::ForkSession>(
        &fork,
        RequestOptions::default(),
        0
    )));
    let upd: s::AuthStatusUpdateNotification =
        serde_json::from_value(json!({"state": "unknown"})).unwrap();
    assert!(matches!(
        p.agent.notify_typed::<u::AuthStatusUpdate>(&upd),
        Err(Error::CapabilityNotAdvertised {
            capability: "auth.status",
            ..
        })
    ));
    let plan: s::SessionNotification = serde_json::from_value(
        json!({"sessionId": "s", "update": {"sessionUpdate": "plan_removed", "planId": "p"}}),
    )
    .unwrap();
    assert!(matches!(
        p.agent.notify_typed::<typed::SessionUpdate>(&plan),
        Err(Error::CapabilityNotAdvertised {
            capability: "plan",
            ..
        })
    ));
    assert!(p.client.poll_transmit().is_none() && p.agent.poll_transmit().is_none());
}

/// The schema crate's method maps (`AGENT_METHOD_NAMES`, `CLIENT_METHOD_NAMES`, built with its
/// `unstable` features) name no method without a marker here.
#[test]
fn every_method_of_the_schema_crates_maps_has_a_marker() {
    let mut ours: BTreeSet<&str> = [
        typed::Initialize::NAME,
        typed::Authenticate::NAME,
        typed::Logout::NAME,
        typed::NewSession::NAME,
        typed::LoadSession::NAME,
        typed::ResumeSession::NAME,
        typed::ListSessions::NAME,
        typed::CloseSession::NAME,
        typed::DeleteSession::NAME,
        typed::Prompt::NAME,
        typed::SetSessionMode::NAME,
        typed::SetSessionConfigOption::NAME,
        typed::RequestPermission::NAME,
        typed::ReadTextFile::NAME,
        typed::WriteTextFile::NAME,
        typed::CreateTerminal::NAME,
        typed::TerminalOutput::NAME,
        typed::WaitForTerminalExit::NAME,
        typed::KillTerminal::NAME,
        typed::ReleaseTerminal::NAME,
        typed::CreateElicitation::NAME,
    ]
    .into();
    ours.extend([
        typed::Cancel::NAME,
        typed::SessionUpdate::NAME,
        typed::CompleteElicitation::NAME,
    ]);
    ours.extend([
        u::ForkSession::NAME,
        u::ArchiveSession::NAME,
        u::UnarchiveSession::NAME,
        u::SessionStatus::NAME,
        u::SetSessionTitle::NAME,
        u::AuthStatus::NAME,
        u::ListProviders::NAME,
        u::SetProvider::NAME,
        u::DisableProvider::NAME,
        u::McpMessage::NAME,
        u::InitializeProxy::NAME,
        u::ProxySuccessor::NAME,
        u::AuthStatusUpdate::NAME,
    ]);
    let mut theirs = BTreeSet::new();
    for map in [
        serde_json::to_value(s::AGENT_METHOD_NAMES).unwrap(),
        serde_json::to_value(s::CLIENT_METHOD_NAMES).unwrap(),
    ] {
        for name in map.as_object().unwrap().values() {
            theirs.insert(name.as_str().unwrap().to_owned());
        }
    }
    let missing: Vec<_> = theirs
        .iter()
        .filter(|n| !ours.contains(n.as_str()))
        .collect();
    assert!(missing.is_empty(), "methods without a marker: {missing:?}");
    // And the ones the maps contain that only the unstable features add are present.
    for n in [
        "session/fork",
        "session/status",
        "session/set_title",
        "auth/status",
        "mcp/message",
    ] {
        assert!(
            theirs.contains(n),
            "{n} missing from the schema crate's maps"
        );
    }
}
