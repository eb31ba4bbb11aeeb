//! The official ACP JSON Schema, generated here from the schema crate the engine's typed layer
//! uses (`agent-client-protocol-schema`, its `schemars` feature), as the protocol's own
//! generator builds `schema/v1/schema.json`: a root that is any message of the Agent, the
//! Client or the protocol level, and a `$defs` entry per type carrying `x-method` annotations.
//! Built with acp-core's feature `unstable`, the crate's draft features are on and the schema
//! is the draft one (`schema.unstable.json`). Also the crate's method-name maps (`meta.json`).
//!
//! Shared by `tests/schema.rs` (the stable methods) and `tests/unstable_typed.rs` (the drafts).

#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};

use acp_core::pair::Pair;
use acp_core::typed::{self, Method, NotificationMethod};
use acp_core::{Event, RequestOptions, Role};
use agent_client_protocol_schema::v1 as s;
use schemars::JsonSchema;
use serde_json::{json, Value};

/// What an agent sends: a request, a response or a notification.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
enum AgentMessage {
    Request(s::Request<s::AgentRequest>),
    Response(s::Response<s::AgentResponse>),
    Notification(s::Notification<s::AgentNotification>),
}

/// What a client sends.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
enum ClientMessage {
    Request(s::Request<s::ClientRequest>),
    Response(s::Response<s::ClientResponse>),
    Notification(s::Notification<s::ClientNotification>),
}

/// Any one ACP message (JSON-RPC 2.0 envelope included).
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(title = "Agent Client Protocol")]
#[allow(dead_code, clippy::large_enum_variant)]
enum Acp {
    Agent(s::JsonRpcMessage<AgentMessage>),
    Client(s::JsonRpcMessage<ClientMessage>),
    ProtocolLevel(s::JsonRpcMessage<s::Notification<s::ProtocolLevelNotification>>),
}

/// The schema crate's method-name maps, as its generator writes them to `meta.json`.
pub fn meta() -> Value {
    json!({
        "agentMethods": s::AGENT_METHOD_NAMES,
        "clientMethods": s::CLIENT_METHOD_NAMES,
        "protocolMethods": s::PROTOCOL_LEVEL_METHOD_NAMES,
    })
}

/// Every method name of [`meta`].
pub fn meta_methods() -> BTreeSet<String> {
    let meta = meta();
    let mut out = BTreeSet::new();
    for group in ["agentMethods", "clientMethods", "protocolMethods"] {
        for name in meta[group].as_object().expect(group).values() {
            out.insert(name.as_str().expect("method name").to_owned());
        }
    }
    out
}

pub struct Schema {
    pub root: Value,
    pub validators: HashMap<String, jsonschema::Validator>,
    /// (method, "Request" | "Response" | "Notification") -> $defs name.
    pub defs_by_method: HashMap<(String, &'static str), String>,
    /// Defs that validated at least one message.
    pub used: BTreeSet<String>,
    /// Lines validated against the root.
    pub lines: usize,
}

impl Schema {
    pub fn load() -> Schema {
        let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let root = serde_json::to_value(generator.into_root_schema_for::<Acp>())
            .expect("the schema serializes");
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

    pub fn def_for(&self, method: &str, kind: &'static str) -> String {
        self.defs_by_method
            .get(&(method.to_owned(), kind))
            .unwrap_or_else(|| panic!("the schema has no {kind} for {method}"))
            .clone()
    }

    /// The values of the `const` of `property` in each variant of `$defs/<def>` (a tagged
    /// enum: `SessionUpdate`'s `sessionUpdate`, `ToolCallContent`'s `type`).
    pub fn tags(&self, def: &str, property: &str) -> BTreeSet<String> {
        let d = &self.root["$defs"][def];
        let variants = d
            .get("oneOf")
            .or_else(|| d.get("anyOf"))
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("$defs/{def} is not a tagged enum"));
        variants
            .iter()
            .filter_map(|v| v["properties"][property]["const"].as_str())
            .map(str::to_owned)
            .collect()
    }

    /// Validates `instance` against `$defs/<def>` ("" for the root).
    pub fn check(&mut self, def: &str, instance: &Value) {
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
    pub fn wire(&mut self, bytes: &[u8]) -> Vec<Value> {
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

    /// Whether a request or notification of `method` validated.
    pub fn covered(&self, method: &str) -> bool {
        ["Request", "Notification"].iter().any(|k| {
            self.defs_by_method
                .get(&(method.to_owned(), *k))
                .is_some_and(|d| self.used.contains(d))
        })
    }
}

pub fn one(mut msgs: Vec<Value>) -> Value {
    assert_eq!(msgs.len(), 1, "expected one message: {msgs:?}");
    msgs.pop().expect("one")
}

/// Sends a typed request of `M` from the side that calls it, answers it with a typed result,
/// and validates both messages on the wire; both ends decode what they got, equal to what was
/// sent.
pub fn round_trip<M: Method>(s: &mut Schema, p: &mut Pair, params: Value, result: Value) {
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
    let got =
        typed::decode_params::<M>(got.as_deref()).expect("the params decode on the other side");
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        serde_json::to_value(&params).unwrap()
    );
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
            let r =
                typed::decode_result::<M>(&raw).expect("the result decodes on the calling side");
            assert_eq!(
                serde_json::to_value(&r).unwrap(),
                serde_json::to_value(&result).unwrap()
            );
        }
        other => panic!("{} did not complete: {other:?}", M::NAME),
    }
}

/// Sends a typed notification of `N`, validates it, and checks the other side got it and
/// decodes it.
pub fn notification<N: NotificationMethod>(s: &mut Schema, p: &mut Pair, params: Value) {
    let params: N::Params = serde_json::from_value(params)
        .unwrap_or_else(|e| panic!("sample params of {} do not decode: {e}", N::NAME));
    let (sender, receiver) = match N::HANDLED_BY {
        Role::Agent => (&mut p.client, &mut p.agent),
        Role::Client => (&mut p.agent, &mut p.client),
    };
    sender
        .notify_typed::<N>(&params)
        .unwrap_or_else(|e| panic!("notify {}: {e}", N::NAME));
    let bytes = sender.poll_transmit().expect("sent");
    let msg = one(s.wire(&bytes));
    assert_eq!(msg["method"], N::NAME);
    let def = s.def_for(N::NAME, "Notification");
    s.check(&def, &msg["params"]);
    receiver.handle_bytes(&bytes, p.now);
    let mut delivered = 0;
    while let Some(e) = receiver.poll_event() {
        match e {
            Event::Notification { params, .. } => {
                typed::decode_notification::<N>(params.as_deref())
                    .expect("decodes on the other side");
                delivered += 1;
            }
            // The `$/cancel_request` the engine handles itself.
            Event::CancelRequested { .. } => delivered += 1,
            other => panic!("{} arrived as {other:?}", N::NAME),
        }
    }
    if N::NAME != acp_core::acp::CANCEL_REQUEST {
        assert_eq!(delivered, 1, "{} was not delivered", N::NAME);
    }
}

/// A pair after `initialize`: the client sent `client_caps`, the agent answered
/// `agent_caps`; both validated.
pub fn initialized(s: &mut Schema, client_caps: Value, agent_caps: Value) -> Pair {
    let mut p: Pair = Pair::new();
    round_trip::<typed::Initialize>(
        s,
        &mut p,
        json!({"protocolVersion": 1, "clientCapabilities": client_caps,
               "clientInfo": {"name": "editor", "version": "1.0"}}),
        json!({"protocolVersion": 1, "agentCapabilities": agent_caps,
               "authMethods": [{"id": "oauth", "name": "OAuth"}],
               "agentInfo": {"name": "agent", "version": "0.1"}}),
    );
    p
}
