//! A received batch longer than `Config::max_batch_entries` is refused as a whole: one
//! Invalid Request, one protocol error event, whatever its length (each entry of a batch can
//! cost an answer and an event, so a line of a few MB of `[0,0,…]` used to cost hundreds).

use acp_core::{Config, Connection, Event, Role};

fn agent() -> Connection {
    Connection::new(Config::new(Role::Agent))
}

fn drain(c: &mut Connection) -> (Vec<u8>, Vec<Event<()>>) {
    let mut out = Vec::new();
    while let Some(t) = c.poll_transmit() {
        out.extend_from_slice(&t);
    }
    let mut events = Vec::new();
    while let Some(e) = c.poll_event() {
        events.push(e);
    }
    (out, events)
}

fn batch_of(n: usize, entry: &str) -> Vec<u8> {
    let mut line = b"[".to_vec();
    for i in 0..n {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(entry.as_bytes());
    }
    line.extend_from_slice(b"]\n");
    line
}

#[test]
fn a_batch_over_the_limit_gets_one_error_and_one_event() {
    for n in [1025, 2000, 1_000_000] {
        let mut c = agent();
        c.handle_bytes(&batch_of(n, "0"), 0);
        let (out, events) = drain(&mut c);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{n}: {text:.300}");
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["id"], serde_json::Value::Null);
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(
            v["error"]["message"],
            format!("a batch of {n} entries is over the limit of 1024")
        );
        assert_eq!(events.len(), 1, "{n}: one protocol error event");
        assert!(
            matches!(events[0], Event::ProtocolError(_)),
            "{:?}",
            events[0]
        );
    }
}

#[test]
fn a_batch_at_the_limit_is_served_entry_by_entry() {
    let mut c = agent();
    let note = r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#;
    c.handle_bytes(&batch_of(1024, note), 0);
    let (out, events) = drain(&mut c);
    assert!(out.is_empty(), "notifications get no reply");
    let notes = events
        .iter()
        .filter(|e| matches!(e, Event::Notification { .. }))
        .count();
    assert_eq!(notes, 1024);
    // The limit is a setting.
    let mut config = Config::new(Role::Agent);
    config.max_batch_entries = 2;
    let mut c = Connection::<()>::new(config);
    c.handle_bytes(&batch_of(3, note), 0);
    let (out, _) = drain(&mut c);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("over the limit of 2"));
}
