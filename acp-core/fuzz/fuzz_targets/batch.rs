//! The batch handler: a batch of fuzzed entries (requests with unique ids, notifications,
//! responses, non-objects, raw JSON) is answered by the rules of seed 002: one single error for
//! an unparsable or empty batch; otherwise one array (never empty) sent once every request is
//! answered, holding exactly one response per request, and nothing for notifications.
#![no_main]

use std::collections::HashMap;

use acp_core::{BatchPolicy, Config, Connection, ErrorObject, Event, Role};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
enum Entry {
    Request { method: u8, params: u8 },
    Notification { method: u8 },
    Response { id: u8, error: bool },
    Json(String),
    Number(i64),
}

#[derive(Arbitrary, Debug)]
struct Input {
    entries: Vec<Entry>,
    /// Bytes spliced into the line (may break its JSON).
    raw: Option<(u8, Vec<u8>)>,
    /// The order in which the application answers, and how.
    answers: Vec<(u8, bool)>,
    reject_all: bool,
    client: bool,
}

const METHODS: [&str; 8] = [
    "x/a",
    "session/request_permission",
    "initialize",
    "session/prompt",
    "session/set_mode",
    "$/cancel_request",
    "session/cancel",
    "fs/read_text_file",
];

fuzz_target!(|input: Input| {
    let mut ids = Vec::new();
    let mut parts = Vec::new();
    for (n, e) in input.entries.iter().enumerate() {
        parts.push(match e {
            Entry::Request { method, params } => {
                let id = format!("fz{n}");
                ids.push(format!("\"{id}\""));
                let params = match params % 4 {
                    0 => String::new(),
                    1 => r#","params":null"#.to_owned(),
                    2 => r#","params":{"sessionId":"s1"}"#.to_owned(),
                    _ => r#","params":[1,2]"#.to_owned(),
                };
                format!(
                    r#"{{"jsonrpc":"2.0","id":"{id}","method":"{}"{params}}}"#,
                    METHODS[*method as usize % METHODS.len()]
                )
            }
            Entry::Notification { method } => format!(
                r#"{{"jsonrpc":"2.0","method":"{}","params":{{"sessionId":"s1","requestId":"fz0"}}}}"#,
                METHODS[*method as usize % METHODS.len()]
            ),
            Entry::Response { id, error } => {
                if *error {
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"m"}}}}"#)
                } else {
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
                }
            }
            Entry::Json(s) => serde_json::to_string(&s.replace('z', "y")).unwrap(),
            Entry::Number(n) => n.to_string(),
        });
    }
    let mut line = format!("[{}]", parts.join(",")).into_bytes();
    if let Some((at, raw)) = &input.raw {
        let at = *at as usize % (line.len() + 1);
        let raw: Vec<u8> = raw.iter().map(|&b| if b == b'\n' || b == b'z' { b' ' } else { b }).collect();
        line.splice(at..at, raw);
    }
    line.push(b'\n');

    let mut config = Config::new(if input.client { Role::Client } else { Role::Agent });
    if input.reject_all {
        config.batch_policy = BatchPolicy::RejectAll;
    }
    let mut c: Connection = Connection::new(config);
    c.handle_bytes(&line, 0);
    let mut wire = c.poll_transmit().unwrap_or_default();
    let mut tokens = Vec::new();
    while let Some(e) = c.poll_event() {
        if let Event::Request { token, .. } = e {
            tokens.push(token);
        }
    }
    for (pick, error) in &input.answers {
        if tokens.is_empty() {
            break;
        }
        let t = tokens.remove(*pick as usize % tokens.len());
        if *error {
            c.respond_error(t, ErrorObject::internal("e")).unwrap();
        } else {
            c.respond(t, &serde_json::json!({})).unwrap();
        }
        if let Some(b) = c.poll_transmit() {
            // The reply goes out only once the last request is answered.
            assert!(tokens.is_empty(), "batch reply sent with {} requests unanswered", tokens.len());
            wire.extend_from_slice(&b);
        }
    }
    c.close("end");
    if let Some(b) = c.poll_transmit() {
        wire.extend_from_slice(&b);
    }
    assert_eq!(c.pending_incoming(), 0);

    // At most one line answers the batch; count the responses per id.
    let lines: Vec<&[u8]> = wire.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert!(lines.len() <= 1, "the batch was answered with {} lines", lines.len());
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut parse_failed = false;
    if let Some(l) = lines.first() {
        let v: Value = serde_json::from_slice(l).expect("the engine writes JSON");
        match v {
            Value::Array(items) => {
                assert!(!items.is_empty(), "never an empty array");
                for item in items {
                    *counts.entry(item["id"].to_string()).or_default() += 1;
                }
            }
            single => {
                // A single error: the batch was unparsable, empty, or refused as a whole.
                let code = single["error"]["code"].as_i64().expect("an error response");
                assert!(code == -32700 || code == -32600, "code {code}");
                assert_eq!(single["id"], Value::Null);
                parse_failed = true;
            }
        }
    }
    let batch_processed = !parse_failed && !input.reject_all;
    if batch_processed && input.raw.is_none() {
        for id in &ids {
            assert_eq!(counts.get(id).copied(), Some(1), "request {id} answered {:?} times", counts.get(id));
        }
    }
    // Spliced bytes can turn one id into another (`"fz1"` + `4` is `"fz14"`): two requests with
    // one id are then two answers with it, rightly.
    if input.raw.is_none() {
        for id in &ids {
            assert!(counts.get(id).copied().unwrap_or(0) <= 1, "request {id} answered twice");
        }
    }
});
