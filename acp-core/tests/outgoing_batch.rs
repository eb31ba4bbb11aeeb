//! `Connection::send_batch` (not in the wasm API, so not in the vectors): outgoing batches,
//! their answers, and what is refused before anything is sent.

use acp_core::pair::Pair;
use acp_core::{BatchEntry, BatchPolicy, Config, Error, Event, RawValue, RequestOptions, Role};
use serde_json::{json, Value};

fn raw(v: Value) -> Option<Box<RawValue>> {
    Some(RawValue::from_string(v.to_string()).expect("JSON"))
}

fn request(method: &str, params: Value) -> BatchEntry<()> {
    BatchEntry {
        method: method.into(),
        params: raw(params),
        request: Some(RequestOptions::default()),
    }
}

#[test]
fn a_batch_goes_out_as_one_array_and_its_answers_complete_each_request() {
    let mut p: Pair = Pair::new();
    let ids = p
        .client
        .send_batch(
            vec![
                request("session/set_mode", json!({"sessionId":"s","modeId":"a"})),
                BatchEntry {
                    method: "session/cancel".into(),
                    params: raw(json!({"sessionId":"s"})),
                    request: None,
                },
                request("session/set_mode", json!({"sessionId":"s","modeId":"b"})),
            ],
            0,
        )
        .unwrap();
    assert_eq!(ids, [Some(0), None, Some(1)]);
    let wire = p.client.poll_transmit().unwrap();
    assert_eq!(wire.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
    let v: Value = serde_json::from_slice(&wire).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(3));
    p.agent.handle_bytes(&wire, 0);

    let mut tokens = Vec::new();
    let mut notifications = 0;
    for e in p.agent_events() {
        match e {
            Event::Request { token, .. } => tokens.push(token),
            Event::Notification { .. } => notifications += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((tokens.len(), notifications), (2, 1));
    p.agent.respond(tokens[1], &json!({})).unwrap();
    assert!(
        p.agent.poll_transmit().is_none(),
        "the reply waits for the whole batch"
    );
    p.agent.respond(tokens[0], &json!({})).unwrap();
    p.pump();
    let done: Vec<u64> = p
        .client_events()
        .into_iter()
        .map(|e| match e {
            Event::Response {
                id, result: Ok(_), ..
            } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(done, [1, 0]);
    assert_eq!(p.client.pending_outgoing(), 0);
}

#[test]
fn refused_batches_send_nothing_and_use_no_ids() {
    let mut p: Pair = Pair::new();
    let prompt = request("session/prompt", json!({"sessionId":"s","prompt":[]}));
    assert_eq!(
        p.client
            .send_batch(vec![request("x/a", json!({})), prompt], 0),
        Err(Error::NotAllowedInBatch("session/prompt".into()))
    );
    assert!(matches!(
        p.client.send_batch(
            vec![request("x/a", json!({})), request("x/b", json!("text"))],
            0
        ),
        Err(Error::InvalidParams(_))
    ));
    assert!(matches!(
        p.client.send_batch(vec![], 0),
        Err(Error::InvalidParams(_))
    ));
    assert!(p.client.poll_transmit().is_none());
    let id = p
        .client
        .send_request("x/a", Some(&json!({})), RequestOptions::default(), 0)
        .unwrap();
    assert_eq!(id, 0, "no id was used by the refused batches");
}

/// FIXME(known gap): a peer that refuses batches as a whole (the official SDKs: one -32600
/// with `id: null`) leaves the batch's requests pending; the engine cannot tell which requests
/// that error is about. They complete on their deadline or on close. This test pins today's
/// behaviour.
#[test]
fn a_batch_refused_as_a_whole_leaves_its_requests_to_their_deadlines() {
    let mut agent = Config::new(Role::Agent);
    agent.batch_policy = BatchPolicy::RejectAll;
    let mut p: Pair = Pair::with_configs(Config::new(Role::Client), agent);
    let mut entry = request("x/a", json!({}));
    entry.request = Some(RequestOptions::default().timeout(1_000));
    p.client.send_batch(vec![entry], 0).unwrap();
    p.pump();
    let events = p.client_events();
    assert!(
        matches!(&events[..], [Event::ProtocolError(e)] if e.kind.name() == "errorWithoutId"),
        "{events:?}"
    );
    assert_eq!(p.client.pending_outgoing(), 1);
    p.advance(1_000);
    let events = p.client_events();
    assert!(
        matches!(&events[..], [Event::Response { id: 0, result: Err(e), .. }] if e.kind() == "timeout"),
        "{events:?}"
    );
}
