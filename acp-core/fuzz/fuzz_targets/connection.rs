//! A whole connection: arbitrary peer bytes interleaved with well-formed peer messages, local
//! commands and the passing of time, then close. Asserts: no panic; the number of incoming
//! requests awaiting an answer never exceeds the limit; every well-formed incoming request
//! within the size limit is answered exactly once (at most once if the peer's stream ended
//! first, as nothing can be sent after that); every outgoing request completes exactly once;
//! nothing happens after `closed`.
#![no_main]

use std::collections::HashMap;

use acp_core::{Config, Connection, ErrorObject, Event, RequestOptions, Role};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

#[derive(Arbitrary, Debug)]
enum Op {
    /// Raw bytes from the peer (followed by a newline, so they cannot swallow what follows).
    PeerBytes(Vec<u8>),
    /// A well-formed request from the peer, with a unique id; `batch` wraps it in an array.
    PeerRequest { method: u8, session: bool, batch: bool },
    /// A response from the peer to (maybe) one of our ids.
    PeerResponse { id: u8, how: u8 },
    /// `$/cancel_request` from the peer for one of its requests.
    PeerCancel(u8),
    Send { method: u8, timeout: Option<u16> },
    Notify { method: u8, session: bool },
    Respond { pick: u8, error: bool },
    Cancel(u8),
    Advance(u16),
    Eof,
    Close,
}

#[derive(Arbitrary, Debug)]
struct Input {
    client: bool,
    incoming_timeout: Option<u16>,
    permission_timeout: Option<u16>,
    max_in_flight: u8,
    small_limit: bool,
    ops: Vec<Op>,
}

const METHODS: [&str; 7] = [
    "x/a",
    "session/request_permission",
    "session/prompt",
    "fs/read_text_file",
    "terminal/create",
    "initialize",
    "session/cancel",
];

#[derive(Default)]
struct Seen {
    wire: Vec<u8>,
    tokens: Vec<u64>,
    completed: HashMap<u64, usize>,
    closed: bool,
}

fn drain(c: &mut Connection<u64>, s: &mut Seen) {
    while let Some(b) = c.poll_transmit() {
        assert!(b.ends_with(b"\n"), "transmissions are whole lines");
        s.wire.extend_from_slice(&b);
    }
    while let Some(e) = c.poll_event() {
        assert!(!s.closed, "an event after `closed`: {e:?}");
        match e {
            Event::Request { token, .. } => s.tokens.push(token),
            Event::AutoAnswered { token, .. } => s.tokens.retain(|t| *t != token),
            Event::Response { id, data, .. } => {
                assert_eq!(id, data, "caller data comes back with its request");
                *s.completed.entry(id).or_default() += 1;
            }
            Event::Closed { .. } => s.closed = true,
            _ => {}
        }
    }
}

fuzz_target!(|input: Input| {
    let mut config = Config::new(if input.client { Role::Client } else { Role::Agent });
    config.incoming_request_timeout = input.incoming_timeout.map(u64::from);
    config.permission_timeout = input.permission_timeout.map(u64::from);
    config.max_incoming_in_flight = 1 + input.max_in_flight as usize % 8;
    config.max_message_bytes = if input.small_limit { 128 } else { 4096 };
    let limit = config.max_message_bytes;
    let max_in_flight = config.max_incoming_in_flight;
    let mut c: Connection<u64> = Connection::new(config);
    let mut s = Seen::default();
    let (mut now, mut next_peer_id) = (0u64, 0usize);
    let mut peer_ids: Vec<String> = Vec::new();
    let mut sent: Vec<u64> = Vec::new();
    let mut eof = false;

    for op in input.ops {
        match op {
            Op::PeerBytes(mut bytes) => {
                // Our ids contain `z`; the peer's garbage may not, so it cannot fake them.
                for b in bytes.iter_mut() {
                    if *b == b'z' || *b == b'Z' {
                        *b = b' ';
                    }
                }
                bytes.push(b'\n');
                c.handle_bytes(&bytes, now);
            }
            Op::PeerRequest { method, session, batch } => {
                let id = format!("pz{next_peer_id}");
                next_peer_id += 1;
                let method = METHODS[method as usize % METHODS.len()];
                let params = if session { json!({"sessionId": "s1"}) } else { json!({}) };
                let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                let line = if batch { format!("[{msg}]\n") } else { format!("{msg}\n") };
                // An oversize batch can only be answered as a whole (id null): only requests
                // within the limit are owed an answer with their id.
                if !eof && !s.closed && line.len() - 1 <= limit {
                    peer_ids.push(format!("\"{id}\""));
                }
                c.handle_bytes(line.as_bytes(), now);
            }
            Op::PeerResponse { id, how } => {
                let id = u64::from(id) % 16;
                let msg = match how % 4 {
                    0 => json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1}}),
                    1 => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "m"}}),
                    2 => json!({"jsonrpc": "2.0", "id": id}),
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {"pad": "x".repeat(120)}}),
                };
                c.handle_bytes(format!("{msg}\n").as_bytes(), now);
            }
            Op::PeerCancel(i) => {
                let id = format!("pz{}", i as usize % (next_peer_id + 1));
                let msg = json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}});
                c.handle_bytes(format!("{msg}\n").as_bytes(), now);
            }
            Op::Send { method, timeout } => {
                let method = METHODS[method as usize % METHODS.len()];
                let mut opts = RequestOptions::with_data(sent.len() as u64);
                opts.timeout = timeout.map(u64::from);
                match c.send_request(method, Some(&json!({"sessionId": "s1", "prompt": []})), opts, now) {
                    Ok(id) => {
                        assert_eq!(id, sent.len() as u64, "ids are issued in order");
                        sent.push(id);
                    }
                    Err(e) => assert!(
                        matches!(e.name(), "ConnectionClosed" | "PromptInFlight" | "CapabilityNotAdvertised"),
                        "{e}"
                    ),
                }
            }
            Op::Notify { method, session } => {
                let params = if session { json!({"sessionId": "s1"}) } else { json!({"x": 1}) };
                let _ = c.notify(METHODS[method as usize % METHODS.len()], Some(&params));
            }
            Op::Respond { pick, error } => {
                if !s.tokens.is_empty() {
                    let t = s.tokens.remove(pick as usize % s.tokens.len());
                    let r = if error {
                        c.respond_error(t, ErrorObject::internal("e"))
                    } else {
                        c.respond(t, &json!({}))
                    };
                    assert!(r.is_ok() || s.closed, "answering a pending request: {r:?}");
                }
            }
            Op::Cancel(i) => {
                if !sent.is_empty() {
                    let _ = c.cancel(sent[i as usize % sent.len()]);
                }
            }
            Op::Advance(ms) => {
                now += u64::from(ms);
                c.handle_timeout(now);
            }
            Op::Eof => {
                if !s.closed {
                    eof = true;
                }
                c.handle_eof(now);
            }
            Op::Close => c.close("fuzz"),
        }
        drain(&mut c, &mut s);
        assert!(c.pending_incoming() <= max_in_flight, "more requests in flight than allowed");
    }
    c.close("end");
    drain(&mut c, &mut s);
    assert!(s.closed && c.is_closed());
    assert_eq!((c.pending_incoming(), c.pending_outgoing()), (0, 0));

    for id in &sent {
        assert_eq!(s.completed.get(id).copied(), Some(1), "outgoing {id} completed {:?} times", s.completed.get(id));
    }
    assert_eq!(s.completed.len(), sent.len(), "completions for ids never sent");

    let mut answers: HashMap<String, usize> = HashMap::new();
    for line in s.wire.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
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
                *answers.entry(item["id"].to_string()).or_default() += 1;
            }
        }
    }
    for id in &peer_ids {
        let n = answers.get(id).copied().unwrap_or(0);
        if eof {
            assert!(n <= 1, "request {id} answered {n} times");
        } else {
            assert_eq!(n, 1, "request {id} answered {n} times");
        }
    }
});
