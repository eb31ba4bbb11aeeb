//! [`Event::write_json`]: the language-neutral event shape of [`Event::to_json`], written
//! straight to JSON text. Raw params and results are copied as the peer wrote them (key order
//! kept) instead of being parsed into a `serde_json::Value` and printed again, so a host that
//! hands events over as text (the wasm build: one `JSON.parse` per event in JS) pays for one
//! copy, not two parses and a print.

use serde_json::value::RawValue;

use crate::connection::Event;
use crate::jsonrpc::{write_json, write_json_str};

fn key(out: &mut Vec<u8>, k: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(k.as_bytes());
    out.extend_from_slice(b"\":");
}

fn num(out: &mut Vec<u8>, n: u64) {
    write_json(out, &n).expect("numbers serialize");
}

fn raw(out: &mut Vec<u8>, k: &str, v: &RawValue) {
    key(out, k);
    out.extend_from_slice(v.get().as_bytes());
}

impl<T> Event<T> {
    /// Appends the event as one JSON object (see [`Event::to_json`] for the shape).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Event::Request {
                token,
                id,
                method,
                params,
            } => {
                out.extend_from_slice(b"{\"type\":\"request\"");
                key(out, "token");
                num(out, *token);
                key(out, "id");
                write_json(out, id).expect("ids serialize");
                key(out, "method");
                write_json_str(out, method);
                if let Some(p) = params {
                    raw(out, "params", p);
                }
            }
            Event::Notification { method, params } => {
                out.extend_from_slice(b"{\"type\":\"notification\"");
                key(out, "method");
                write_json_str(out, method);
                if let Some(p) = params {
                    raw(out, "params", p);
                }
            }
            Event::Response {
                id, method, result, ..
            } => {
                match result {
                    Ok(_) => out.extend_from_slice(b"{\"type\":\"response\""),
                    Err(_) => out.extend_from_slice(b"{\"type\":\"requestFailed\""),
                }
                key(out, "requestId");
                num(out, *id);
                key(out, "method");
                write_json_str(out, method);
                match result {
                    Ok(r) => raw(out, "result", r),
                    Err(e) => {
                        key(out, "kind");
                        write_json_str(out, e.kind());
                        key(out, "error");
                        write_json(out, &e.to_error_object()).expect("error objects serialize");
                    }
                }
            }
            Event::AutoAnswered {
                token,
                method,
                reason,
            } => {
                out.extend_from_slice(b"{\"type\":\"autoAnswered\"");
                key(out, "token");
                num(out, *token);
                key(out, "method");
                write_json_str(out, method);
                key(out, "reason");
                write_json_str(out, reason.name());
            }
            Event::CancelRequested { token } => {
                out.extend_from_slice(b"{\"type\":\"cancelRequested\"");
                key(out, "token");
                num(out, *token);
            }
            Event::ProtocolError(e) => {
                out.extend_from_slice(b"{\"type\":\"protocolError\"");
                key(out, "kind");
                write_json_str(out, e.kind.name());
                key(out, "message");
                write_json_str(out, &e.message);
            }
            Event::Closed { reason } => {
                out.extend_from_slice(b"{\"type\":\"closed\"");
                key(out, "reason");
                write_json_str(out, reason);
            }
        }
        out.push(b'}');
    }

    /// The event as JSON text (see [`Event::write_json`]).
    pub fn to_json_string(&self) -> String {
        let mut out = Vec::with_capacity(self.json_len_hint());
        self.write_json(&mut out);
        String::from_utf8(out).expect("JSON written from str and valid raw JSON is UTF-8")
    }

    /// About how many bytes [`Event::write_json`] writes (exact up to the short fields), so a
    /// large message's text is allocated once instead of grown by doubling.
    pub fn json_len_hint(&self) -> usize {
        let (method, raw) = match self {
            Event::Request { method, params, .. } | Event::Notification { method, params } => {
                (method.len(), params.as_deref())
            }
            Event::Response {
                method,
                result: Ok(r),
                ..
            } => (method.len(), Some(&**r)),
            _ => (0, None),
        };
        128 + method + raw.map_or(0, |r| r.get().len())
    }
}

/// Events as one JSON array text (`[]` when there is none), each element written by
/// [`Event::write_json`]: what the wasm build hands to one `JSON.parse` per batch of events.
pub fn events_to_json_array<T>(events: impl IntoIterator<Item = Event<T>>) -> String {
    let mut out = Vec::new();
    out.push(b'[');
    for (i, e) in events.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.reserve(e.json_len_hint());
        e.write_json(&mut out);
    }
    out.push(b']');
    String::from_utf8(out).expect("JSON written from str and valid raw JSON is UTF-8")
}

#[cfg(test)]
mod tests {
    use crate::pair::Pair;
    use crate::{Config, Connection, Event, RequestOptions, Role};
    use serde_json::json;

    /// Every event's text is one valid JSON object with its `type` first. (The fields of each
    /// kind are pinned by the conformance vectors, which compare whole events.)
    fn check_all(events: Vec<Event<()>>) -> usize {
        let n = events.len();
        for e in events {
            let text = e.to_json_string();
            let parsed: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|err| panic!("invalid JSON {text}: {err}"));
            assert!(parsed.is_object(), "{text}");
            assert!(text.starts_with("{\"type\":"), "{text}");
            assert!(!text.contains('\n'), "one line: {text}");
        }
        n
    }

    #[test]
    fn every_kind_is_written_as_one_json_object() {
        let mut p: Pair = Pair::with_configs(
            Config {
                permission_timeout: Some(10),
                ..Config::new(Role::Client)
            },
            Config::new(Role::Agent),
        );
        let mut seen = 0;
        // response, requestFailed (remote, timeout, cancelled), request, notification.
        p.client
            .send_request(
                "a",
                Some(&json!({"z": 1, "a": [1, "\n"]})),
                RequestOptions::default(),
                0,
            )
            .unwrap();
        p.client
            .send_request("b", None::<&()>, RequestOptions::default(), 0)
            .unwrap();
        let slow = p
            .client
            .send_request(
                "c",
                Some(&json!([])),
                RequestOptions::default().timeout(5),
                0,
            )
            .unwrap();
        let gone = p
            .client
            .send_request("d", Some(&json!({})), RequestOptions::default(), 0)
            .unwrap();
        p.client.cancel(gone).unwrap();
        p.client.notify("n", Some(&json!({"x": "é\"\\"}))).unwrap();
        p.pump();
        let agent_events = p.agent_events();
        let tokens: Vec<u64> = agent_events
            .iter()
            .filter_map(|e| match e {
                Event::Request { token, .. } => Some(*token),
                _ => None,
            })
            .collect();
        seen += check_all(agent_events);
        p.agent.respond(tokens[0], &json!({"ok": true})).unwrap();
        p.agent
            .respond_error(tokens[1], crate::ErrorObject::method_not_found("b"))
            .unwrap();
        p.pump();
        p.advance(10);
        let _ = slow;
        seen += check_all(p.client_events());
        seen += check_all(p.agent_events());
        // autoAnswered, cancelRequested, protocolError, closed.
        let mut c: Connection = Connection::new(Config {
            permission_timeout: Some(1),
            ..Config::new(Role::Client)
        });
        c.handle_bytes(
            br#"{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":"s"}}
{"jsonrpc":"2.0","id":7,"method":"x"}
{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}
nonsense
"#,
            0,
        );
        c.handle_timeout(1);
        c.close("bye");
        let events: Vec<Event<()>> = std::iter::from_fn(|| c.poll_event()).collect();
        let kinds: Vec<String> = events
            .iter()
            .map(|e| e.to_json()["type"].as_str().unwrap().to_owned())
            .collect();
        for k in [
            "request",
            "cancelRequested",
            "protocolError",
            "autoAnswered",
            "closed",
        ] {
            assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
        }
        seen += check_all(events);
        assert!(seen >= 14, "only {seen} events checked");
    }

    #[test]
    fn array_of_events_is_the_events_in_order() {
        assert_eq!(super::events_to_json_array(Vec::<Event<()>>::new()), "[]");
        let mut c: Connection = Connection::new(Config::new(Role::Client));
        c.handle_bytes(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"x\":[1,\"\\n\"]}}\nnonsense\n{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"b\"}\n",
            0,
        );
        let events: Vec<Event<()>> = std::iter::from_fn(|| c.poll_event()).collect();
        let expected: Vec<serde_json::Value> = events.iter().map(Event::to_json).collect();
        assert_eq!(expected.len(), 3);
        let text = super::events_to_json_array(events);
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, serde_json::Value::Array(expected), "{text}");
    }
}
