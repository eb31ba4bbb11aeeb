//! Everything the engine transmits validates against the official ACP JSON Schema, generated
//! from the schema crate itself (`tests/schema_support`): typed messages of every stable method
//! and of every stable `session/update` kind in both directions (built with `acp_core::typed`,
//! sent through a `pair::Pair`), and the messages the engine writes on its own
//! (`$/cancel_request`, the `cancelled` permission outcome, error responses).
//!
//! Each transmitted line is validated twice: whole, against the schema's root (a message of the
//! Agent, the Client or the protocol level), and its params/result against the `$defs` entry
//! for that method (found through the schema's own `x-method` annotations).

mod schema_support;

use std::collections::BTreeSet;

use acp_core::pair::Pair;
use acp_core::typed;
use acp_core::{Config, Connection, RequestOptions, Role};
use schema_support::{initialized, notification, one, round_trip, Schema};
use serde_json::{json, Value};

/// What a client that takes every stable optional message advertises.
fn every_client_capability() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true,
           "plan": {}, "subagents": {},
           "session": {"notices": {}, "compaction": {}, "configOptions": {}}})
}

/// What an agent that takes every stable optional message advertises.
fn every_agent_capability() -> Value {
    json!({"loadSession": true,
           "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
           "mcpCapabilities": {"http": true, "sse": false},
           "sessionCapabilities": {"list": {}, "delete": {}, "resume": {}, "close": {},
                                   "additionalDirectories": {},
                                   "systemPrompt": {"mode": {"override": {}}}}})
}

/// One sample of every stable `session/update` kind.
fn every_stable_update() -> Vec<Value> {
    vec![
        json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"},"messageId":"u1"}),
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Looking…"}}),
        json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}),
        json!({"sessionUpdate":"tool_call","toolCallId":"call-1","title":"Read main.rs","kind":"read","status":"pending",
               "locations":[{"path":"/home/u/project/src/main.rs","line":3}],"rawInput":{"path":"src/main.rs"}}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call-1","status":"completed",
               "content":[{"type":"content","content":{"type":"text","text":"done"}},{"type":"diff","path":"/a.rs","oldText":"a","newText":"b"},
                          {"type":"terminal","terminalId":"term-1"},{"type":"session","sessionId":"child-1"}]}),
        json!({"sessionUpdate":"plan","entries":[{"content":"Step 1","priority":"high","status":"in_progress"}]}),
        json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":[{"content":"Step 1","priority":"low","status":"pending"}]}}),
        json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"p2","content":"# Plan\n- one","path":"/home/u/project/PLAN.md"}}),
        json!({"sessionUpdate":"plan_removed","planId":"p2"}),
        json!({"sessionUpdate":"available_commands_update","availableCommands":[{"name":"test","description":"Run tests","input":{"hint":"filter"}}]}),
        json!({"sessionUpdate":"current_mode_update","currentModeId":"code"}),
        json!({"sessionUpdate":"config_option_update","configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"fast",
               "options":[{"value":"fast","name":"Fast"},{"value":"smart","name":"Smart"}]}]}),
        json!({"sessionUpdate":"session_info_update","title":"Fix the bug","updatedAt":"2026-11-28T10:00:00Z"}),
        json!({"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.02,"currency":"USD"}}),
        json!({"sessionUpdate":"notice","severity":"warning","title":"Rate limited","description":"retrying in 5 s"}),
        json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}),
        json!({"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"So far…"}}),
        json!({"sessionUpdate":"subagent_update","sessionId":"child-1","title":"Search","cwd":"/home/u/project",
               "state":{"state":"running"},"capabilities":{"cancel":{}}}),
        json!({"sessionUpdate":"session_message","messageId":"m1","senderSessionId":"s1","recipientSessionId":"child-1",
               "content":[{"type":"text","text":"Find the callers"}]}),
        json!({"sessionUpdate":"session_message_chunk","messageId":"m1","content":{"type":"text","text":" of parse()"}}),
    ]
}

#[test]
fn typed_messages_of_every_stable_method_validate() {
    use typed::*;
    let mut s = Schema::load();
    let mut p = initialized(&mut s, every_client_capability(), every_agent_capability());
    let perm_request = json!({"sessionId":"s1","toolCall":{"toolCallId":"call-1","title":"Edit main.rs","kind":"edit","status":"pending"},
        "options":[{"optionId":"allow","name":"Allow once","kind":"allow_once"},{"optionId":"deny","name":"Reject","kind":"reject_once"}]});

    round_trip::<Authenticate>(&mut s, &mut p, json!({"methodId":"oauth"}), json!({}));
    round_trip::<NewSession>(
        &mut s,
        &mut p,
        json!({"cwd":"/home/u/project","additionalDirectories":["/home/u/lib"],
               "mcpServers":[{"name":"fs","command":"/usr/bin/mcp-fs","args":["--root","/"],"env":[{"name":"A","value":"1"}]},
                             {"type":"http","name":"web","url":"https://mcp.example.com","headers":[{"name":"X-Key","value":"k"}]}],
               "systemPrompt":{"mode":"append","content":[{"type":"text","text":"Be brief."}]}}),
        json!({"sessionId":"s1","modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"Writes code"}]}}),
    );
    round_trip::<LoadSession>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","cwd":"/home/u/project","mcpServers":[],
               "systemPrompt":{"mode":"override","content":[{"type":"text","text":"You are terse."}]}}),
        json!({}),
    );
    round_trip::<ResumeSession>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","cwd":"/home/u/project","systemPrompt":null}),
        json!({}),
    );
    round_trip::<ListSessions>(
        &mut s,
        &mut p,
        json!({"cwd":"/home/u/project"}),
        json!({"sessions":[{"sessionId":"s1","cwd":"/home/u/project","title":"First","additionalDirectories":["/home/u/lib"]}],"nextCursor":"c2"}),
    );
    round_trip::<SetSessionMode>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","modeId":"code"}),
        json!({}),
    );
    round_trip::<SetSessionConfigOption>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","configId":"model","value":"fast"}),
        json!({"configOptions":[]}),
    );
    round_trip::<Prompt>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","prompt":[{"type":"text","text":"Fix the bug"},
               {"type":"resource_link","uri":"file:///home/u/project/src/main.rs","name":"main.rs"},
               {"type":"resource","resource":{"uri":"file:///a.txt","text":"hello","mimeType":"text/plain"}}]}),
        json!({"stopReason":"end_turn"}),
    );
    round_trip::<CloseSession>(&mut s, &mut p, json!({"sessionId":"s1"}), json!({}));
    round_trip::<DeleteSession>(&mut s, &mut p, json!({"sessionId":"s1"}), json!({}));
    round_trip::<Logout>(&mut s, &mut p, json!({}), json!({}));

    round_trip::<RequestPermission>(
        &mut s,
        &mut p,
        perm_request.clone(),
        json!({"outcome":{"outcome":"selected","optionId":"allow"}}),
    );
    round_trip::<ReadTextFile>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","path":"/home/u/project/src/main.rs","line":1,"limit":10}),
        json!({"content":"fn main() {}\n"}),
    );
    round_trip::<WriteTextFile>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","path":"/home/u/project/b.rs","content":"x\ny\r\n"}),
        json!({}),
    );
    round_trip::<CreateTerminal>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","command":"cargo","args":["test"],"env":[{"name":"RUST_LOG","value":"info"}],"cwd":"/home/u/project","outputByteLimit":1048576}),
        json!({"terminalId":"term-1"}),
    );
    round_trip::<TerminalOutput>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","terminalId":"term-1"}),
        json!({"output":"running 3 tests\n","truncated":false,"exitStatus":{"exitCode":0}}),
    );
    round_trip::<WaitForTerminalExit>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","terminalId":"term-1"}),
        json!({"exitCode":0}),
    );
    round_trip::<KillTerminal>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","terminalId":"term-1"}),
        json!({}),
    );
    round_trip::<ReleaseTerminal>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","terminalId":"term-1"}),
        json!({}),
    );
    round_trip::<CreateElicitation>(
        &mut s,
        &mut p,
        json!({"message":"Sign in to continue","mode":"url","elicitationId":"el-1","url":"https://example.com/login","sessionId":"s1"}),
        json!({"action":"decline"}),
    );

    notification::<Cancel>(&mut s, &mut p, json!({"sessionId":"s1"}));
    notification::<CompleteElicitation>(&mut s, &mut p, json!({"elicitationId":"el-1"}));
    notification::<CancelRequest>(&mut s, &mut p, json!({"requestId":12}));
    let mut kinds = BTreeSet::new();
    let mut tool_contents = BTreeSet::new();
    for update in every_stable_update() {
        kinds.insert(update["sessionUpdate"].as_str().unwrap().to_owned());
        let tool = update["sessionUpdate"]
            .as_str()
            .unwrap()
            .starts_with("tool_call");
        for c in update["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|_| tool)
        {
            if let Some(t) = c["type"].as_str() {
                tool_contents.insert(t.to_owned());
            }
        }
        notification::<SessionUpdate>(&mut s, &mut p, json!({"sessionId":"s1","update":update}));
    }

    // Every stable method of the schema crate's maps, every stable session update kind and
    // every tool call content type of the schema was exercised.
    let missing: Vec<String> = schema_support::meta_methods()
        .into_iter()
        .filter(|m| !s.covered(m) && !is_draft_method(m))
        .collect();
    assert!(
        missing.is_empty(),
        "stable methods not exercised: {missing:?}"
    );
    let schema_kinds: BTreeSet<String> = s
        .tags("SessionUpdate", "sessionUpdate")
        .into_iter()
        .filter(|k| !is_draft_update(k))
        .collect();
    assert_eq!(kinds, schema_kinds, "session update kinds");
    assert_eq!(tool_contents, s.tags("ToolCallContent", "type"));
    assert_eq!(s.lines, 65, "lines validated");
}

/// The methods only the schema crate's draft features add (tests/unstable_typed.rs covers
/// them); none without the feature `unstable`.
fn is_draft_method(method: &str) -> bool {
    #[cfg(feature = "unstable")]
    {
        use acp_core::unstable as u;
        [
            u::SESSION_FORK,
            u::SESSION_ARCHIVE,
            u::SESSION_UNARCHIVE,
            u::SESSION_STATUS,
            u::SESSION_SET_TITLE,
            u::SESSION_OPTIONS,
            u::AUTH_STATUS,
            u::PROVIDERS_LIST,
            u::PROVIDERS_SET,
            u::PROVIDERS_DISABLE,
            u::MCP_MESSAGE,
            u::PROXY_INITIALIZE,
            u::PROXY_SUCCESSOR,
            u::AUTH_STATUS_UPDATE,
        ]
        .contains(&method)
    }
    #[cfg(not(feature = "unstable"))]
    {
        let _ = method;
        false
    }
}

/// The session update kinds only the draft features add.
fn is_draft_update(kind: &str) -> bool {
    #[cfg(feature = "unstable")]
    {
        [
            acp_core::unstable::PROMPT_SUGGESTIONS_UPDATE,
            acp_core::unstable::CURSOR_UPDATE,
        ]
        .contains(&kind)
    }
    #[cfg(not(feature = "unstable"))]
    {
        let _ = kind;
        false
    }
}

#[test]
fn messages_the_engine_writes_itself_validate() {
    let mut s = Schema::load();
    let mut client_cfg = Config::new(Role::Client);
    client_cfg.permission_timeout = Some(1_000);
    client_cfg.incoming_request_timeout = Some(500);
    let mut p: Pair = Pair::with_configs(client_cfg, Config::new(Role::Agent));

    // The `cancelled` permission outcome: on a deadline, on session/cancel, on close.
    let perm = json!({"sessionId":"s1","toolCall":{"toolCallId":"c"},"options":[{"optionId":"a","name":"A","kind":"allow_once"}]});
    let def = s.def_for("session/request_permission", "Response");
    p.agent
        .send_request(
            "session/request_permission",
            Some(&perm),
            RequestOptions::default(),
            0,
        )
        .unwrap();
    let bytes = p.agent.poll_transmit().unwrap();
    p.client.handle_bytes(&bytes, 0);
    p.client.handle_timeout(1_000);
    let resp = one(s.wire(&p.client.poll_transmit().expect("auto-answered")));
    assert_eq!(resp["result"], json!({"outcome":{"outcome":"cancelled"}}));
    s.check(&def, &resp["result"]);

    p.agent
        .send_request(
            "session/request_permission",
            Some(&perm),
            RequestOptions::default(),
            0,
        )
        .unwrap();
    p.client
        .handle_bytes(&p.agent.poll_transmit().unwrap(), 1_000);
    p.client
        .notify("session/cancel", Some(&json!({"sessionId":"s1"})))
        .unwrap();
    let msgs = s.wire(&p.client.poll_transmit().unwrap());
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    s.check(
        &s.def_for("session/cancel", "Notification"),
        &msgs[0]["params"],
    );
    s.check(&def, &msgs[1]["result"]);

    // `$/cancel_request`, on a timeout and on a local cancel.
    let a = p
        .client
        .send_request(
            "session/set_mode",
            Some(&json!({"sessionId":"s1","modeId":"m"})),
            RequestOptions::default().timeout(10),
            1_000,
        )
        .unwrap();
    let b = p
        .client
        .send_request(
            "session/set_mode",
            Some(&json!({"sessionId":"s1","modeId":"m"})),
            RequestOptions::default(),
            1_000,
        )
        .unwrap();
    s.wire(&p.client.poll_transmit().unwrap());
    p.client.handle_timeout(1_010);
    p.client.cancel(b).unwrap();
    let cancels = s.wire(&p.client.poll_transmit().unwrap());
    assert_eq!(cancels.len(), 2);
    for (c, id) in cancels.iter().zip([a, b]) {
        assert_eq!(c["method"], "$/cancel_request");
        assert_eq!(c["params"]["requestId"], json!(id));
        s.check("CancelRequestNotification", &c["params"]);
    }

    // Error responses the engine writes: parse error, invalid request, oversize, not allowed in
    // a batch, incoming deadline, too many requests, closing.
    let mut cfg = Config::new(Role::Agent);
    cfg.max_message_bytes = 200;
    cfg.max_incoming_in_flight = 2;
    cfg.incoming_request_timeout = Some(100);
    let mut agent: Connection = Connection::new(cfg);
    let input = format!(
        "{{\"jsonrpc\":\n[]\n{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}}\n[1,{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{{}}}}]\n{{\"pad\":\"{}\"}}\n{}\n",
        "x".repeat(300),
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"s\",\"modeId\":\"m\"}}\n".repeat(3),
    );
    agent.handle_bytes(input.as_bytes(), 0);
    agent.handle_timeout(100);
    agent.handle_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"s\",\"modeId\":\"m\"}}\n", 100);
    agent.close("done");
    let errors = s.wire(&agent.poll_transmit().unwrap());
    let codes: Vec<i64> = errors
        .iter()
        .map(|e| e["error"]["code"].as_i64().expect("an error"))
        .collect();
    assert_eq!(
        codes,
        [-32700, -32600, -32600, -32600, -32600, -32600, -32603, -32603, -32603, -32603],
        "{errors:?}"
    );
    for e in &errors {
        s.check("Error", &e["error"]);
    }
    assert!(s.lines >= 17);
}

/// The validation above can fail: the schema refuses wrong messages.
#[test]
fn the_schema_refuses_invalid_messages() {
    let s = Schema::load();
    let mut s = s;
    let bad_outcome = json!({"outcome":{"outcome":"maybe"}});
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.check("RequestPermissionResponse", &bad_outcome)
    }));
    assert!(caught.is_err(), "an unknown permission outcome validated");
    for line in [
        json!({"jsonrpc":"2.0","id":1.5,"result":{}}),
        json!({"jsonrpc":"1.0","method":"session/cancel","params":{"sessionId":"s"}}),
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32600}}),
    ] {
        assert!(!s.validators[""].is_valid(&line), "{line} validated");
    }
}
