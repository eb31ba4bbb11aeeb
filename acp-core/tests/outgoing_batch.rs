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

/// A peer that refuses batches as a whole (the official SDKs, or `BatchPolicy::RejectAll`)
/// answers with one -32600 error with `id: null` (JSON-RPC 2.0, section 6): the requests of
/// that batch fail at once with it, not at their deadline.
#[test]
fn a_batch_refused_as_a_whole_fails_its_requests_at_once() {
    let mut agent = Config::new(Role::Agent);
    agent.batch_policy = BatchPolicy::RejectAll;
    let mut p: Pair = Pair::with_configs(Config::new(Role::Client), agent);
    let mut entry = request("x/a", json!({}));
    entry.request = Some(RequestOptions::default().timeout(1_000));
    let note = BatchEntry {
        method: "x/note".into(),
        params: raw(json!({})),
        request: None,
    };
    let ids = p
        .client
        .send_batch(vec![entry, note, request("x/b", json!({}))], 0)
        .unwrap();
    assert_eq!(ids, [Some(0), None, Some(1)]);
    p.pump();
    let events = p.client_events();
    let failed: Vec<(u64, i64, String)> = events
        .iter()
        .map(|e| match e {
            Event::Response {
                id,
                result: Err(acp_core::CallError::Remote(e)),
                ..
            } => (*id, e.code, e.message.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        failed,
        [
            (0, -32600, "batches are not accepted".to_string()),
            (1, -32600, "batches are not accepted".to_string())
        ]
    );
    assert_eq!(p.client.pending_outgoing(), 0);
    p.advance(1_000);
    assert!(p.client_events().is_empty(), "no timeout comes later");
}

/// Two refused batches: each error completes the oldest unanswered one, in order; a request
/// sent alone in between is not touched.
#[test]
fn refusals_complete_unanswered_batches_oldest_first() {
    let mut agent = Config::new(Role::Agent);
    agent.batch_policy = BatchPolicy::RejectAll;
    let mut p: Pair = Pair::with_configs(Config::new(Role::Client), agent);
    p.client
        .send_batch(vec![request("x/a", json!({}))], 0)
        .unwrap();
    let alone = p
        .client
        .send_request("x/alone", Some(&json!({})), RequestOptions::default(), 0)
        .unwrap();
    p.client
        .send_batch(vec![request("x/b", json!({}))], 0)
        .unwrap();
    let wire = p.client.poll_transmit().unwrap();
    p.agent.handle_bytes(&wire, 0);
    let mut tokens = Vec::new();
    for e in p.agent_events() {
        match e {
            Event::Request { token, method, .. } => {
                assert_eq!(method, "x/alone");
                tokens.push(token)
            }
            Event::ProtocolError(_) => {}
            other => panic!("{other:?}"),
        }
    }
    p.agent.respond(tokens[0], &json!({"ok": true})).unwrap();
    p.pump();
    let done: Vec<(u64, bool)> = p
        .client_events()
        .into_iter()
        .map(|e| match e {
            Event::Response { id, result, .. } => (id, result.is_ok()),
            other => panic!("{other:?}"),
        })
        .collect();
    // The agent refused both batches while reading, before it answered `x/alone`.
    assert_eq!(done, [(0, false), (2, false), (alone, true)]);
    assert_eq!(p.client.pending_outgoing(), 0);
}

/// Only a refusal on a line of its own counts; an id-null entry inside a batch reply, or an
/// id-null error once any request of the batch was answered, stays a protocol error and leaves
/// the rest of the batch pending.
#[test]
fn id_null_errors_only_complete_batches_nothing_in_which_was_answered() {
    let mut p: Pair = Pair::new();
    let error_without_id = |events: Vec<Event<()>>| {
        assert!(
            matches!(&events[..], [Event::ProtocolError(e)] if e.kind.name() == "errorWithoutId"),
            "{events:?}"
        );
    };
    let refusal = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}
"#;
    p.client.handle_bytes(refusal, 0);
    error_without_id(p.client_events());

    p.client
        .send_batch(
            vec![request("x/a", json!({})), request("x/b", json!({}))],
            0,
        )
        .unwrap();
    p.client.poll_transmit().unwrap();
    p.client.handle_bytes(
        br#"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"entry"}},{"jsonrpc":"2.0","id":0,"result":{}}]
"#,
        0,
    );
    let events = p.client_events();
    assert!(
        matches!(&events[..], [Event::ProtocolError(e), Event::Response { id: 0, result: Ok(_), .. }] if e.kind.name() == "errorWithoutId"),
        "{events:?}"
    );
    p.client.handle_bytes(refusal, 0);
    error_without_id(p.client_events());
    assert_eq!(p.client.pending_outgoing(), 1, "request 1 still waits");
}

/// A client's `session/cancel` inside a batch does what it does alone: the prompting turn
/// becomes `Cancelling` and the session's pending permission question is answered `cancelled`
/// (before, the turn stayed `Prompting` and the question pending).
#[test]
fn a_session_cancel_in_a_batch_cancels_the_turn_and_its_permission_questions() {
    use acp_core::acp::TurnState;
    use acp_core::AutoAnswerReason;
    let mut p: Pair = Pair::new();
    p.client
        .send_request(
            "session/prompt",
            Some(&json!({"sessionId":"s","prompt":[]})),
            RequestOptions::default(),
            0,
        )
        .unwrap();
    p.pump();
    let _ = p.agent_events();
    p.agent
        .send_request(
            "session/request_permission",
            Some(&json!({"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]})),
            RequestOptions::default(),
            0,
        )
        .unwrap();
    p.pump();
    let asked = p.client_events();
    assert!(
        matches!(asked.as_slice(), [Event::Request { method, .. }] if method == "session/request_permission"),
        "{asked:?}"
    );
    assert_eq!(p.client.turn_state("s"), TurnState::Prompting);

    p.client
        .send_batch(
            vec![
                BatchEntry {
                    method: "session/cancel".into(),
                    params: raw(json!({"sessionId":"s"})),
                    request: None,
                },
                request("x/other", json!({})),
            ],
            0,
        )
        .unwrap();
    assert_eq!(p.client.turn_state("s"), TurnState::Cancelling);
    let events = p.client_events();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::AutoAnswered {
                reason: AutoAnswerReason::SessionCancelled,
                ..
            }
        )),
        "{events:?}"
    );
    p.pump();
    let answered = p.agent_events().into_iter().any(|e| {
        matches!(&e, Event::Response { result: Ok(r), .. }
            if r.get().contains("\"cancelled\""))
    });
    assert!(answered, "the agent got `cancelled` for its question");
}
