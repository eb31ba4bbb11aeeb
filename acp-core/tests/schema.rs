//! Everything the engine transmits validates against the official ACP JSON Schema
//! (`shared/acp-schema/v1/schema.json`): typed messages of every stable method in both
//! directions (built with `acp_core::typed`, sent through a `pair::Pair`), and the messages the
//! engine writes on its own (`$/cancel_request`, the `cancelled` permission outcome, error
//! responses).
//!
//! Each transmitted line is validated twice: whole, against the schema's root (a message of the
//! Agent, the Client or the protocol level), and its params/result against the `$defs` entry
//! for that method (found through the schema's own `x-method` annotations).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use acp_core::pair::Pair;
use acp_core::typed::{self, Method, NotificationMethod};
use acp_core::{Config, Connection, Event, RequestOptions, Role};
use serde_json::{json, Value};

struct Schema {
    root: Value,
    validators: HashMap<String, jsonschema::Validator>,
    /// (method, "Request" | "Response" | "Notification") -> $defs name.
    defs_by_method: HashMap<(String, &'static str), String>,
    /// Defs that validated at least one message.
    used: BTreeSet<String>,
    /// Lines validated against the root.
    lines: usize,
}

impl Schema {
    fn load() -> Schema {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acp-schema/v1/schema.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "the official ACP schema is missing: cannot read {} ({e}); it is expected beside \
                 the repository, in shared/acp-schema/v1/",
                path.display()
            )
        });
        let root: Value = serde_json::from_str(&text).expect("schema.json is JSON");
        let mut defs_by_method = HashMap::new();
        for (name, def) in root["$defs"].as_object().expect("$defs") {
            if let Some(m) = def.get("x-method").and_then(Value::as_str) {
                for kind in ["Request", "Response", "Notification"] {
                    if name.ends_with(kind) {
                        defs_by_method.insert((m.to_owned(), kind), name.clone());
                    }
                }
            }
        }
        let mut validators = HashMap::new();
        validators.insert(
            "".to_owned(),
            jsonschema::validator_for(&root).expect("the root schema compiles"),
        );
        Schema {
            root,
            validators,
            defs_by_method,
            used: BTreeSet::new(),
            lines: 0,
        }
    }

    fn def_for(&self, method: &str, kind: &'static str) -> String {
        self.defs_by_method
            .get(&(method.to_owned(), kind))
            .unwrap_or_else(|| panic!("the schema has no {kind} for {method}"))
            .clone()
    }

    /// Validates `instance` against `$defs/<def>` ("" for the root).
    fn check(&mut self, def: &str, instance: &Value) {
        if !self.validators.contains_key(def) {
            let schema = json!({
                "$schema": self.root["$schema"],
                "$defs": self.root["$defs"],
                "$ref": format!("#/$defs/{def}"),
            });
            let v = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("$defs/{def} does not compile: {e}"));
            self.validators.insert(def.to_owned(), v);
        }
        let errors: Vec<String> = self.validators[def]
            .iter_errors(instance)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        let what = if def.is_empty() {
            "the schema root"
        } else {
            def
        };
        assert!(
            errors.is_empty(),
            "{instance}\ndoes not validate against {what}:\n{}",
            errors.join("\n")
        );
        if !def.is_empty() {
            self.used.insert(def.to_owned());
        }
    }

    /// Validates every line of transmitted bytes against the root (batch arrays element by
    /// element) and returns the messages.
    fn wire(&mut self, bytes: &[u8]) -> Vec<Value> {
        let mut out = Vec::new();
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).expect("the engine writes JSON lines");
            let items = match v {
                Value::Array(a) => a,
                other => vec![other],
            };
            for item in items {
                self.check("", &item);
                self.lines += 1;
                out.push(item);
            }
        }
        out
    }
}

fn one(mut msgs: Vec<Value>) -> Value {
    assert_eq!(msgs.len(), 1, "expected one message: {msgs:?}");
    msgs.pop().expect("one")
}

/// Sends a typed request of `M` from the side that calls it, answers it with a typed result,
/// and validates both messages on the wire.
fn round_trip<M: Method>(s: &mut Schema, p: &mut Pair, params: Value, result: Value) {
    let params: M::Params = serde_json::from_value(params)
        .unwrap_or_else(|e| panic!("sample params of {} do not decode: {e}", M::NAME));
    let result: M::Result = serde_json::from_value(result)
        .unwrap_or_else(|e| panic!("sample result of {} does not decode: {e}", M::NAME));
    let (caller, handler) = match M::HANDLED_BY {
        Role::Agent => (&mut p.client, &mut p.agent),
        Role::Client => (&mut p.agent, &mut p.client),
    };
    let id = caller
        .request::<M>(&params, RequestOptions::default(), p.now)
        .unwrap_or_else(|e| panic!("sending {}: {e}", M::NAME));
    let bytes = caller.poll_transmit().expect("the request is sent");
    let req = one(s.wire(&bytes));
    assert_eq!(req["method"], M::NAME);
    assert_eq!(req["id"], json!(id));
    let def = s.def_for(M::NAME, "Request");
    s.check(&def, &req["params"]);

    handler.handle_bytes(&bytes, p.now);
    let Some(Event::Request {
        token, params: got, ..
    }) = handler.poll_event()
    else {
        panic!("{} was not delivered as a request", M::NAME)
    };
    typed::decode_params::<M>(got.as_deref()).expect("the params decode on the other side");
    handler.respond_typed::<M>(token, &result).expect("answer");
    let bytes = handler.poll_transmit().expect("the response is sent");
    let resp = one(s.wire(&bytes));
    let def = s.def_for(M::NAME, "Response");
    s.check(&def, &resp["result"]);

    caller.handle_bytes(&bytes, p.now);
    match caller.poll_event() {
        Some(Event::Response {
            id: done,
            result: Ok(raw),
            ..
        }) if done == id => {
            typed::decode_result::<M>(&raw).expect("the result decodes on the calling side");
        }
        other => panic!("{} did not complete: {other:?}", M::NAME),
    }
}

/// Sends a typed notification of `N` and validates it.
fn notification<N: NotificationMethod>(s: &mut Schema, p: &mut Pair, params: Value) {
    let params: N::Params = serde_json::from_value(params)
        .unwrap_or_else(|e| panic!("sample params of {} do not decode: {e}", N::NAME));
    let (sender, receiver) = match N::HANDLED_BY {
        Role::Agent => (&mut p.client, &mut p.agent),
        Role::Client => (&mut p.agent, &mut p.client),
    };
    sender.notify_typed::<N>(&params).expect("notify");
    let bytes = sender.poll_transmit().expect("sent");
    let msg = one(s.wire(&bytes));
    assert_eq!(msg["method"], N::NAME);
    let def = s.def_for(N::NAME, "Notification");
    s.check(&def, &msg["params"]);
    receiver.handle_bytes(&bytes, p.now);
    while let Some(e) = receiver.poll_event() {
        if let Event::Notification { params, .. } = e {
            typed::decode_notification::<N>(params.as_deref()).expect("decodes on the other side");
        }
    }
}

#[test]
fn typed_messages_of_every_stable_method_validate() {
    use typed::*;
    let mut s = Schema::load();
    let mut p: Pair = Pair::new();
    let perm_request = json!({"sessionId":"s1","toolCall":{"toolCallId":"call-1","title":"Edit main.rs","kind":"edit","status":"pending"},
        "options":[{"optionId":"allow","name":"Allow once","kind":"allow_once"},{"optionId":"deny","name":"Reject","kind":"reject_once"}]});

    round_trip::<Initialize>(
        &mut s,
        &mut p,
        json!({"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},
               "clientInfo":{"name":"editor","version":"1.0"}}),
        json!({"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":true},
               "mcpCapabilities":{"http":true,"sse":false}},"authMethods":[{"id":"oauth","name":"OAuth"}],"agentInfo":{"name":"agent","version":"0.1"}}),
    );
    round_trip::<Authenticate>(&mut s, &mut p, json!({"methodId":"oauth"}), json!({}));
    round_trip::<NewSession>(
        &mut s,
        &mut p,
        json!({"cwd":"/home/u/project","mcpServers":[{"name":"fs","command":"/usr/bin/mcp-fs","args":["--root","/"],"env":[{"name":"A","value":"1"}]}]}),
        json!({"sessionId":"s1","modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"Writes code"}]}}),
    );
    round_trip::<LoadSession>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","cwd":"/home/u/project","mcpServers":[]}),
        json!({}),
    );
    round_trip::<ResumeSession>(
        &mut s,
        &mut p,
        json!({"sessionId":"s1","cwd":"/home/u/project"}),
        json!({}),
    );
    round_trip::<ListSessions>(
        &mut s,
        &mut p,
        json!({"cwd":"/home/u/project"}),
        json!({"sessions":[{"sessionId":"s1","cwd":"/home/u/project","title":"First"}]}),
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
    for update in [
        json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}),
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Looking…"}}),
        json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}),
        json!({"sessionUpdate":"tool_call","toolCallId":"call-1","title":"Read main.rs","kind":"read","status":"pending",
               "locations":[{"path":"/home/u/project/src/main.rs","line":3}],"rawInput":{"path":"src/main.rs"}}),
        json!({"sessionUpdate":"tool_call_update","toolCallId":"call-1","status":"completed",
               "content":[{"type":"content","content":{"type":"text","text":"done"}},{"type":"diff","path":"/a.rs","oldText":"a","newText":"b"}]}),
        json!({"sessionUpdate":"plan","entries":[{"content":"Step 1","priority":"high","status":"in_progress"}]}),
        json!({"sessionUpdate":"available_commands_update","availableCommands":[{"name":"test","description":"Run tests"}]}),
        json!({"sessionUpdate":"current_mode_update","currentModeId":"code"}),
    ] {
        notification::<SessionUpdate>(&mut s, &mut p, json!({"sessionId":"s1","update":update}));
    }

    // Every stable method named by the schema's meta.json was exercised.
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/acp-schema/v1/meta.json"),
        )
        .expect("meta.json beside schema.json"),
    )
    .expect("JSON");
    let mut missing = Vec::new();
    for group in ["agentMethods", "clientMethods", "protocolMethods"] {
        for method in meta[group].as_object().expect(group).values() {
            let m = method.as_str().expect("method name");
            let covered = ["Request", "Notification"].iter().any(|k| {
                s.defs_by_method
                    .get(&(m.to_owned(), *k))
                    .is_some_and(|d| s.used.contains(d))
            });
            if !covered {
                missing.push(m.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "stable methods not exercised: {missing:?}"
    );
    assert_eq!(s.lines, 53, "lines validated");
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
