//! Property tests of the engine's invariants:
//! - a byte stream split at any boundaries gives the same output and events as the whole;
//! - arbitrary bytes never panic, and the decoder never holds more than the limit + 1 bytes;
//! - every incoming request is answered exactly once (by the application or the engine) once
//!   the connection is closed;
//! - every outgoing request completes exactly once, at the latest on close.

use std::collections::HashMap;

use acp_core::framing::{Decoder, Frame};
use acp_core::{Config, Connection, ErrorObject, Event, RequestOptions, Role};
use proptest::prelude::*;
use serde_json::{json, Value};

// ----- a generator of peer traffic -----

/// One piece of what a peer may write, valid or not.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        (0u64..6).prop_map(|n| n.to_string()),
        "[a-c]{1,2}".prop_map(|s| format!("\"{s}\"")),
        Just("null".to_owned()),
    ];
    let method = prop::sample::select(vec![
        "x/a",
        "session/request_permission",
        "session/prompt",
        "initialize",
        "fs/read_text_file",
    ]);
    let object = prop_oneof![
        (id.clone(), method.clone()).prop_map(|(id, m)| format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}","params":{{"sessionId":"s1","p":[1,"é"]}}}}"#
        )),
        method.prop_map(|m| format!(r#"{{"jsonrpc":"2.0","method":"{m}","params":null}}"#)),
        id.clone()
            .prop_map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":1}}}}"#)),
        id.clone().prop_map(|id| format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":"no"}}}}"#
        )),
        id.clone().prop_map(|id| format!(
            r#"{{"jsonrpc":"2.0","method":"$/cancel_request","params":{{"requestId":{id}}}}}"#
        )),
        id.prop_map(|id| format!(r#"{{"jsonrpc":"1.0","id":{id}}}"#)),
        Just("42".to_owned()),
    ];
    let line = prop_oneof![
        4 => object.clone(),
        2 => prop::collection::vec(object, 0..4).prop_map(|v| format!("[{}]", v.join(","))),
        1 => Just(r#"{"jsonrpc":"2.0","method":"#.to_owned()),
        1 => Just(format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"pad":"{}"}}}}"#, "x".repeat(300))),
        1 => Just(format!("{}{}", "[".repeat(130), "]".repeat(130))),
        // Oversize, with the envelope's keys before and after the limit.
        1 => Just(format!(r#"{{"jsonrpc":"2.0","id":3,"method":"x","params":{{"pad":"{}"}}}}"#, "x".repeat(300))),
        1 => Just(format!(r#"{{"jsonrpc":"2.0","method":"x","params":{{"pad":"{}"}},"id":4}}"#, "x".repeat(300))),
        1 => Just(format!(r#"{{"jsonrpc":"2.0","result":{{"pad":"{}"}},"id":0}}"#, "x".repeat(300))),
        1 => Just("   ".to_owned()),
    ];
    let ending = prop::sample::select(vec!["\n", "\r\n"]);
    prop_oneof![
        8 => (line, ending).prop_map(|(l, e)| format!("{l}{e}").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..12),
    ]
}

/// The event as JSON; its two renderings (`to_json`, and the text of `write_json` that the wasm
/// build uses) must agree.
fn rendered<T>(e: &Event<T>) -> Value {
    let v = e.to_json();
    let mut text = Vec::new();
    e.write_json(&mut text);
    let w: Value = serde_json::from_slice(&text).expect("write_json writes JSON");
    assert_eq!(w, v, "write_json and to_json disagree");
    v
}

/// Output of a connection fed a stream: transmitted bytes and rendered events.
fn run(stream: &[u8], cuts: &[usize], role: Role) -> (Vec<u8>, Vec<Value>) {
    let mut config = Config::new(role);
    config.max_message_bytes = 256;
    let mut c: Connection = Connection::new(config);
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
        let cut = cut.clamp(from, stream.len());
        c.handle_bytes(&stream[from..cut], 0);
        from = cut;
        while let Some(b) = c.poll_transmit() {
            out.extend_from_slice(&b);
        }
        while let Some(e) = c.poll_event() {
            events.push(rendered(&e));
        }
    }
    c.handle_eof(0);
    while let Some(e) = c.poll_event() {
        events.push(rendered(&e));
    }
    (out, events)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_split_decodes_to_the_same_output_and_events(
        parts in prop::collection::vec(message(), 0..12),
        mut cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        client in any::<bool>(),
    ) {
        let stream: Vec<u8> = parts.concat();
        let role = if client { Role::Client } else { Role::Agent };
        let whole = run(&stream, &[], role);
        let mut at: Vec<usize> = cuts.drain(..).map(|i| i.index(stream.len() + 1)).collect();
        at.sort_unstable();
        prop_assert_eq!(&run(&stream, &at, role), &whole);
        // Byte by byte, the most extreme split.
        let every: Vec<usize> = (0..stream.len()).collect();
        prop_assert_eq!(&run(&stream, &every, role), &whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_the_decoder_stays_bounded(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..24),
        max in 1usize..40,
    ) {
        let mut d = Decoder::new(max);
        let mut lines = 0;
        for chunk in &chunks {
            d.decode(chunk, &mut |f| {
                if let Frame::Line(l) = f {
                    assert!(l.len() <= max, "a line longer than the limit was handed out");
                    lines += 1;
                }
            });
            prop_assert!(d.buffered() <= max + 1, "buffered {} > {}", d.buffered(), max + 1);
        }
        d.finish(&mut |_| {});
        prop_assert_eq!(d.buffered(), 0);

        let mut config = Config::new(Role::Agent);
        config.max_message_bytes = max * 8;
        let mut c: Connection = Connection::new(config);
        for chunk in &chunks {
            c.handle_bytes(chunk, 0);
            while c.poll_transmit().is_some() {}
            while let Some(e) = c.poll_event() {
                let _ = e.to_json();
            }
        }
        c.handle_eof(0);
        prop_assert!(c.is_closed());
    }
}

// ----- every incoming request answered exactly once -----

#[derive(Debug, Clone)]
enum InOp {
    /// The peer sends requests (ids are unique); `batch` puts them in one array.
    PeerRequests { methods: Vec<u8>, batch: bool },
    /// The application answers the pending request with this index (modulo), or fails it.
    Answer { pick: usize, error: bool },
    /// Time passes.
    Advance(u64),
    /// Client side: `session/cancel` for session s0 or s1.
    CancelSession(u8),
    /// The peer cancels one of its requests.
    PeerCancel(usize),
}

fn in_op() -> impl Strategy<Value = InOp> {
    prop_oneof![
        4 => (prop::collection::vec(0u8..5, 1..4), any::<bool>())
            .prop_map(|(methods, batch)| InOp::PeerRequests { methods, batch }),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(pick, error)| InOp::Answer { pick, error }),
        1 => (0u64..300).prop_map(InOp::Advance),
        1 => (0u8..2).prop_map(InOp::CancelSession),
        1 => any::<usize>().prop_map(InOp::PeerCancel),
    ]
}

const IN_METHODS: [&str; 5] = [
    "session/request_permission",
    "fs/read_text_file",
    "x/custom",
    "session/prompt",
    "terminal/output",
];

/// Counts the responses per id in the transmitted bytes (batch arrays flattened).
fn responses_by_id(wire: &[u8]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for line in wire.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).expect("the engine writes JSON lines");
        let items = match v {
            Value::Array(a) => {
                assert!(!a.is_empty(), "never an empty array");
                a
            }
            other => vec![other],
        };
        for item in items {
            if item.get("method").is_none() {
                *counts.entry(item["id"].to_string()).or_default() += 1;
            }
        }
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_incoming_request_is_answered_exactly_once(
        ops in prop::collection::vec(in_op(), 0..40),
        incoming_timeout in prop::option::of(1u64..200),
        max_in_flight in 1usize..6,
        client in any::<bool>(),
    ) {
        let mut config = Config::new(if client { Role::Client } else { Role::Agent });
        config.incoming_request_timeout = incoming_timeout;
        config.max_incoming_in_flight = max_in_flight;
        let mut c: Connection = Connection::new(config);
        let (mut now, mut next, mut wire) = (0u64, 0usize, Vec::new());
        let mut sent_ids = Vec::new();
        let mut tokens: Vec<u64> = Vec::new();
        let drain = |c: &mut Connection, wire: &mut Vec<u8>, tokens: &mut Vec<u64>| {
            while let Some(b) = c.poll_transmit() {
                wire.extend_from_slice(&b);
            }
            while let Some(e) = c.poll_event() {
                match e {
                    Event::Request { token, .. } => tokens.push(token),
                    Event::AutoAnswered { token, .. } => tokens.retain(|t| *t != token),
                    _ => {}
                }
            }
        };
        for op in ops {
            match op {
                InOp::PeerRequests { methods, batch } => {
                    let msgs: Vec<String> = methods.iter().map(|&m| {
                        let id = format!("q{next}");
                        next += 1;
                        sent_ids.push(format!("\"{id}\""));
                        json!({"jsonrpc":"2.0","id":id,"method":IN_METHODS[m as usize],
                               "params":{"sessionId":format!("s{}", next % 2)}}).to_string()
                    }).collect();
                    let text = if batch { format!("[{}]\n", msgs.join(",")) } else { msgs.join("\n") + "\n" };
                    c.handle_bytes(text.as_bytes(), now);
                }
                InOp::Answer { pick, error } => {
                    if !tokens.is_empty() {
                        let t = tokens.remove(pick % tokens.len());
                        if error {
                            c.respond_error(t, ErrorObject::internal("x")).unwrap();
                        } else {
                            c.respond(t, &json!({})).unwrap();
                        }
                    }
                }
                InOp::Advance(ms) => {
                    now += ms;
                    c.handle_timeout(now);
                }
                InOp::CancelSession(s) => {
                    let _ = c.notify("session/cancel", Some(&json!({"sessionId": format!("s{s}")})));
                }
                InOp::PeerCancel(i) => {
                    if next > 0 {
                        let line = json!({"jsonrpc":"2.0","method":"$/cancel_request",
                                          "params":{"requestId":format!("q{}", i % next)}});
                        c.handle_bytes(format!("{line}\n").as_bytes(), now);
                    }
                }
            }
            drain(&mut c, &mut wire, &mut tokens);
        }
        c.close("end");
        drain(&mut c, &mut wire, &mut tokens);
        prop_assert_eq!(c.pending_incoming(), 0);
        let counts = responses_by_id(&wire);
        for id in &sent_ids {
            prop_assert_eq!(counts.get(id).copied(), Some(1), "request {} answered {:?} times", id, counts.get(id));
        }
        prop_assert_eq!(counts.len(), sent_ids.len(), "answers for ids never sent: {:?}", counts);
    }
}

// ----- every outgoing request completed exactly once -----

#[derive(Debug, Clone)]
enum OutOp {
    Send {
        timeout: Option<u64>,
        prompt: Option<u8>,
    },
    Cancel(usize),
    Advance(u64),
    /// The peer answers id `id` (maybe one never used, or twice): 0 result, 1 error, 2 invalid.
    PeerAnswer {
        id: u64,
        how: u8,
        batch: bool,
    },
    PeerEof,
}

fn out_op() -> impl Strategy<Value = OutOp> {
    prop_oneof![
        4 => (prop::option::of(1u64..100), prop::option::of(0u8..2))
            .prop_map(|(timeout, prompt)| OutOp::Send { timeout, prompt }),
        1 => any::<usize>().prop_map(OutOp::Cancel),
        1 => (0u64..120).prop_map(OutOp::Advance),
        3 => (0u64..24, 0u8..3, any::<bool>()).prop_map(|(id, how, batch)| OutOp::PeerAnswer { id, how, batch }),
        1 => Just(OutOp::PeerEof),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_outgoing_request_completes_exactly_once(
        ops in prop::collection::vec(out_op(), 0..40),
        client in any::<bool>(),
    ) {
        let mut c: Connection<u64> =
            Connection::new(Config::new(if client { Role::Client } else { Role::Agent }));
        let mut now = 0;
        let mut sent: Vec<u64> = Vec::new();
        let mut completed: HashMap<u64, usize> = HashMap::new();
        let mut drain = |c: &mut Connection<u64>| {
            while c.poll_transmit().is_some() {}
            while let Some(e) = c.poll_event() {
                if let Event::Response { id, data, .. } = e {
                    assert_eq!(id, data, "the caller's data comes back with its request");
                    *completed.entry(id).or_default() += 1;
                }
            }
        };
        for op in ops {
            match op {
                OutOp::Send { timeout, prompt } => {
                    let mut opts = RequestOptions::with_data(sent.len() as u64);
                    opts.timeout = timeout;
                    let r = match prompt {
                        Some(s) => c.send_request("session/prompt", Some(&json!({"sessionId": format!("s{s}"), "prompt": []})), opts, now),
                        None => c.send_request("x/req", Some(&json!({})), opts, now),
                    };
                    match r {
                        Ok(id) => { assert_eq!(id, sent.len() as u64); sent.push(id) }
                        Err(e) => assert!(
                            matches!(e, acp_core::Error::PromptInFlight { .. } | acp_core::Error::ConnectionClosed),
                            "{e}"
                        ),
                    }
                }
                OutOp::Cancel(i) => {
                    if !sent.is_empty() {
                        let _ = c.cancel(sent[i % sent.len()]);
                    }
                }
                OutOp::Advance(ms) => {
                    now += ms;
                    c.handle_timeout(now);
                }
                OutOp::PeerAnswer { id, how, batch } => {
                    let msg = match how {
                        0 => json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}}),
                        1 => json!({"jsonrpc":"2.0","id":id,"error":{"code":-32603,"message":"m"}}),
                        _ => json!({"jsonrpc":"2.0","id":id}),
                    };
                    let text = if batch { format!("[{msg}]\n") } else { format!("{msg}\n") };
                    c.handle_bytes(text.as_bytes(), now);
                }
                OutOp::PeerEof => c.handle_eof(now),
            }
            drain(&mut c);
        }
        c.close("end");
        drain(&mut c);
        prop_assert_eq!(c.pending_outgoing(), 0);
        for id in &sent {
            prop_assert_eq!(completed.get(id).copied(), Some(1), "request {} completed {:?} times", id, completed.get(id));
        }
        prop_assert_eq!(completed.len(), sent.len());
    }
}
