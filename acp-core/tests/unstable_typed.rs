//! Feature `unstable` (with `typed`): every draft method of the schema crate has a marker type,
//! and each marker's params and result cross a client/agent pair that advertised everything
//! (typed on one side, decoded on the other, every line validated against the draft JSON
//! Schema generated from the schema crate: `tests/schema_support`), while a pair that
//! advertised nothing refuses them (the rules of `acp_core::unstable`; the wire details are in
//! tests/vectors/unstable-*). The draft session updates and fields (prompt suggestions,
//! cursors, initial config options, the `speed` config category, end-of-turn token usage)
//! validate and decode too.

mod schema_support;

use std::collections::BTreeSet;

use acp_core::typed::{self, schema::v1 as s, unstable as u, Method, NotificationMethod};
use acp_core::{Error, RequestOptions};
use schema_support::{initialized, notification, round_trip, Schema};
use serde_json::{json, Value};

fn every_client_capability() -> Value {
    json!({"plan": {}, "subagents": {},
           "session": {"promptSuggestions": {"image": {}, "audio": {}, "embeddedContext": {}},
                       "cursors": {}}})
}

fn every_agent_capability() -> Value {
    json!({
        "sessionCapabilities": {"fork": {}, "archive": {}, "status": {}, "title": {},
                                "options": {}, "list": {}, "systemPrompt": {}},
        "auth": {"status": {}},
        "providers": {},
        "mcpCapabilities": {"acp": true}
    })
}

#[test]
fn every_draft_method_crosses_a_pair_that_advertised_it() {
    let mut sc = Schema::load();
    let mut p = initialized(&mut sc, every_client_capability(), every_agent_capability());
    let s = &mut sc;
    let sid = json!({"sessionId": "s"});
    round_trip::<u::ForkSession>(
        s,
        &mut p,
        json!({"sessionId": "s", "cwd": "/w", "cursorId": "cur-1",
               "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "x"}]},
               "configOptions": [{"configId": "model", "value": "fast"},
                                 {"configId": "auto", "type": "boolean", "value": true}]}),
        json!({"sessionId": "s2"}),
    );
    round_trip::<u::ArchiveSession>(s, &mut p, sid.clone(), json!({}));
    round_trip::<u::UnarchiveSession>(s, &mut p, sid.clone(), json!({}));
    round_trip::<u::SessionStatus>(s, &mut p, sid.clone(), json!({"status": "open"}));
    round_trip::<u::SetSessionTitle>(
        s,
        &mut p,
        json!({"sessionId": "s", "title": "Refactor"}),
        json!({"title": "Refactor"}),
    );
    round_trip::<u::SessionOptions>(
        s,
        &mut p,
        json!({"cwd": "/w", "additionalDirectories": ["/lib"]}),
        json!({"configOptions": [{"id": "speed", "name": "Speed", "category": "speed",
                                  "type": "select", "currentValue": "normal",
                                  "options": [{"value": "normal", "name": "Normal"},
                                              {"value": "fast", "name": "Fast"}]}]}),
    );
    // Initial config options in the stable session methods.
    round_trip::<typed::NewSession>(
        s,
        &mut p,
        json!({"cwd": "/w", "mcpServers": [], "configOptions": [{"configId": "model", "value": "fast"}]}),
        json!({"sessionId": "s3"}),
    );
    round_trip::<u::AuthStatus>(
        s,
        &mut p,
        json!({}),
        json!({"state": "authenticated", "accounts": [{"label": "work", "description": "API key helper"}]}),
    );
    round_trip::<u::ListProviders>(s, &mut p, json!({}), json!({"providers": []}));
    round_trip::<u::McpMessage>(
        s,
        &mut p,
        json!({"serverId": "m", "requestId": "r", "method": "tools/list"}),
        json!({"result": {"tools": []}}),
    );
    notification::<u::McpMessageNotification>(
        s,
        &mut p,
        json!({"serverId": "m", "requestId": "r", "method": "notifications/progress"}),
    );
    notification::<u::AuthStatusUpdate>(s, &mut p, json!({"state": "unauthenticated"}));
    // The draft session updates the client allowed.
    for update in [
        json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": [
            {"prompt": [{"type": "text", "text": "Run the tests"}]},
            {"prompt": [{"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
                        {"type": "image", "data": "", "mimeType": "image/png"}]}]}),
        json!({"sessionUpdate": "cursor_update", "cursorId": "cur-1",
               "anchor": {"type": "agent_message", "messageId": "m1", "position": "after"},
               "capabilities": {"fork": {}}}),
        json!({"sessionUpdate": "cursor_update", "cursorId": "cur-1", "capabilities": null}),
        json!({"sessionUpdate": "cursor_update", "cursorId": "cur-2",
               "anchor": {"type": "tool_call", "toolCallId": "t1", "position": "before"}}),
    ] {
        notification::<typed::SessionUpdate>(
            s,
            &mut p,
            json!({"sessionId": "s", "update": update}),
        );
    }
    // End-of-turn token usage decodes from a prompt result.
    let r: s::PromptResponse = serde_json::from_value(json!({"stopReason": "end_turn", "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}})).unwrap();
    assert_eq!(r.usage.map(|u| u.total_tokens), Some(30));

    // Every draft session update kind of the draft schema was sent.
    let drafts: BTreeSet<String> = [
        acp_core::unstable::PROMPT_SUGGESTIONS_UPDATE,
        acp_core::unstable::CURSOR_UPDATE,
    ]
    .map(str::to_owned)
    .into();
    assert!(
        sc.tags("SessionUpdate", "sessionUpdate")
            .is_superset(&drafts),
        "{:?}",
        sc.tags("SessionUpdate", "sessionUpdate")
    );
}

#[test]
fn a_pair_that_advertised_nothing_refuses_them() {
    let mut sc = Schema::load();
    let mut p = initialized(&mut sc, json!({}), json!({}));
    let refused = |r: Result<u64, Error>, cap: &str| matches!(r, Err(Error::CapabilityNotAdvertised { capability, .. }) if capability == cap);
    let sid: s::SessionStatusRequest = serde_json::from_value(json!({"sessionId": "s"})).unwrap();
    assert!(refused(
        p.client
            .request::<u::SessionStatus>(&sid, RequestOptions::default(), 0),
        "sessionCapabilities.status"
    ));
    let fork: s::ForkSessionRequest =
        serde_json::from_value(json!({"sessionId": "s", "cwd": "/w"})).unwrap();
    assert!(refused(
        p.client
            .request::<u::ForkSession>(&fork, RequestOptions::default(), 0),
        "sessionCapabilities.fork"
    ));
    let options: s::SessionOptionsRequest = serde_json::from_value(json!({"cwd": "/w"})).unwrap();
    assert!(refused(
        p.client
            .request::<u::SessionOptions>(&options, RequestOptions::default(), 0),
        "sessionCapabilities.options"
    ));
    let new: s::NewSessionRequest = serde_json::from_value(
        json!({"cwd": "/w", "mcpServers": [], "configOptions": [{"configId": "model", "value": "fast"}]}),
    )
    .unwrap();
    assert!(refused(
        p.client
            .request::<typed::NewSession>(&new, RequestOptions::default(), 0),
        "sessionCapabilities.options"
    ));
    let upd: s::AuthStatusUpdateNotification =
        serde_json::from_value(json!({"state": "unknown"})).unwrap();
    assert!(matches!(
        p.agent.notify_typed::<u::AuthStatusUpdate>(&upd),
        Err(Error::CapabilityNotAdvertised {
            capability: "auth.status",
            ..
        })
    ));
    for (update, cap) in [
        (
            json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": []}),
            "session.promptSuggestions",
        ),
        (
            json!({"sessionUpdate": "cursor_update", "cursorId": "c"}),
            "session.cursors",
        ),
    ] {
        let n: s::SessionNotification =
            serde_json::from_value(json!({"sessionId": "s", "update": update})).unwrap();
        assert!(matches!(
            p.agent.notify_typed::<typed::SessionUpdate>(&n),
            Err(Error::CapabilityNotAdvertised { capability, .. }) if capability == cap
        ));
    }
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
        typed::CancelRequest::NAME,
    ]);
    ours.extend([
        u::ForkSession::NAME,
        u::ArchiveSession::NAME,
        u::UnarchiveSession::NAME,
        u::SessionStatus::NAME,
        u::SetSessionTitle::NAME,
        u::SessionOptions::NAME,
        u::AuthStatus::NAME,
        u::ListProviders::NAME,
        u::SetProvider::NAME,
        u::DisableProvider::NAME,
        u::McpMessage::NAME,
        u::InitializeProxy::NAME,
        u::ProxySuccessor::NAME,
        u::AuthStatusUpdate::NAME,
    ]);
    let theirs = schema_support::meta_methods();
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
        "session/options",
        "auth/status",
        "mcp/message",
    ] {
        assert!(
            theirs.contains(n),
            "{n} missing from the schema crate's maps"
        );
    }
}
