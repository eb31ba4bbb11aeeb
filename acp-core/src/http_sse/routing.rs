//! Which session a message belongs to on the HTTP transport: the one rule the server (which
//! stream carries an agent's message) and the client (which session's header and stream go
//! with a message it sends) both follow. Two readings of it: over a parsed
//! [`serde_json::Value`] ([`session_id_of`], [`route_of_agent_message`]) and over an
//! [`Envelope`] that builds nothing ([`session_of`], [`Outgoing`], [`Answer`]); they answer the
//! same (`tests/client/http_routing.json`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::jsonrpc::{Envelope, Id};

/// The method of a proxy chain's envelope (unstable ACP): `params` holds the wrapped message's
/// `method` and `params`.
const PROXY_SUCCESSOR: &str = "proxy/successor";
/// The one protocol method that stays on the connection inside a `proxy/successor` envelope.
const CANCEL_REQUEST: &str = "$/cancel_request";

/// Messages that belong to the connection whatever session they name: `$/…` protocol
/// methods, and `$/cancel_request` also inside `proxy/successor` envelopes (nested to any
/// depth). Any other message wrapped in `proxy/successor` goes with the envelope's own
/// `params.sessionId`.
pub fn is_connection_scoped(method: &str, params: Option<&Value>) -> bool {
    connection_scoped_by(method, params, |p| {
        let inner = p.get("method")?.as_str()?;
        Some((Cow::Borrowed(inner), p.get("params")))
    })
}

/// The session a request or notification is about: `params.sessionId` (a string), unless the
/// message is [`is_connection_scoped`].
pub fn session_id_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    if is_connection_scoped(method, params) {
        return None;
    }
    params?.get("sessionId")?.as_str()
}

/// [`session_id_of`] for a message read with [`Envelope::parse`], building nothing: the session
/// a request or notification is about (`None` for a response, or a message that names none or
/// is [`is_connection_scoped`]).
pub fn session_of(envelope: &Envelope<'_>) -> Option<String> {
    let method = envelope.method()?;
    let params = envelope.params();
    if connection_scoped_by(&method, params, proxied_raw) {
        return None;
    }
    params.filter(|p| is_object(p))?;
    envelope.session_id()
}

/// Where an agent-to-client message goes on an HTTP+SSE connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The connection's stream.
    Connection,
    /// That session's stream.
    Session(String),
}

/// The route of an agent-to-client request or notification (responses follow their request:
/// the server keeps that table).
pub fn route_of_agent_message(method: &str, params: Option<&Value>) -> Route {
    match session_id_of(method, params) {
        Some(id) => Route::Session(id.to_string()),
        None => Route::Connection,
    }
}

/// What the client side of the transport reads of a message it sends, without building it:
/// which lane it goes on, which session's header and stream go with it, and whether its
/// answer opens a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outgoing {
    /// `method`, when it is a string (requests and notifications).
    pub method: Option<String>,
    /// `id`, when it is a string or a number (requests and responses; not `null`).
    pub id: Option<Id>,
    /// The session it goes with ([`session_of`]): sent in
    /// [`HEADER_SESSION_ID`](super::HEADER_SESSION_ID), after that session's stream was
    /// opened. `None`: the connection's.
    pub session: Option<String>,
}

impl Outgoing {
    /// Reads a message; `None` when `text` is not one (not a JSON object, malformed, or a
    /// member given twice).
    pub fn read(text: &str) -> Option<Outgoing> {
        let envelope = Envelope::parse(text).ok()?;
        Some(Outgoing {
            method: envelope.method().map(Cow::into_owned),
            id: envelope.id(),
            session: session_of(&envelope),
        })
    }

    /// A response (the client's answer to one of the agent's requests: no method, an id): it
    /// goes on a lane of its own, so an answer never waits behind a request that waits for it.
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// The `initialize` request: the first message, which creates the connection.
    pub fn is_initialize(&self) -> bool {
        self.method.as_deref() == Some("initialize") && self.id.is_some()
    }

    /// A `session/new` / `session/fork` request: its answer names a session whose stream the
    /// client opens at once ([`Answer`]).
    pub fn opens_session(&self) -> bool {
        self.id.is_some()
            && self
                .method
                .as_deref()
                .is_some_and(super::is_session_opening_method)
    }
}

/// A response the client receives, as far as the transport cares: the id it answers and the
/// session its result names (`result.sessionId`, as a `session/new` / `session/fork` answer
/// does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The id of the request it answers.
    pub id: Id,
    /// `result.sessionId`, when the result is an object with a string `sessionId`.
    pub session: Option<String>,
}

impl Answer {
    /// Reads a response; `None` unless `text` is one (no `method`, an `id` that is a string or
    /// a number).
    pub fn read(text: &str) -> Option<Answer> {
        let envelope = Envelope::parse(text).ok()?;
        if !envelope.is_response() {
            return None;
        }
        let id = envelope.id()?;
        let session = envelope
            .result()
            .filter(|r| is_object(r))
            .and_then(|r| crate::acp::session_id_of(Some(r.get())));
        Some(Answer { id, session })
    }
}

/// The rule of [`is_connection_scoped`], over any reading of params: `unwrap` gives a
/// `proxy/successor` envelope's inner method and params.
fn connection_scoped_by<'a, P: Copy>(
    method: &str,
    params: Option<P>,
    unwrap: impl Fn(P) -> Option<(Cow<'a, str>, Option<P>)>,
) -> bool {
    if method.starts_with("$/") {
        return true;
    }
    if method != PROXY_SUCCESSOR {
        return false;
    }
    let mut params = params;
    loop {
        let Some((inner, inner_params)) = params.and_then(&unwrap) else {
            return false;
        };
        if inner != PROXY_SUCCESSOR {
            return inner == CANCEL_REQUEST;
        }
        params = inner_params;
    }
}

/// A `proxy/successor` envelope's inner method and params, from its raw params.
fn proxied_raw(params: &RawValue) -> Option<(Cow<'_, str>, Option<&RawValue>)> {
    #[derive(Deserialize)]
    struct Proxied<'a> {
        #[serde(borrow)]
        method: Cow<'a, str>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    if !is_object(params) {
        return None;
    }
    let inner: Proxied<'_> = serde_json::from_str(params.get()).ok()?;
    Some((inner.method, inner.params))
}

/// serde reads a struct from an array too (by position): only objects have members here.
fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn session_routing_follows_the_official_transport() {
        let p = json!({"sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("session/update", Some(&p)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("session/request_permission", Some(&p)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("$/progress", Some(&p)),
            Route::Connection
        );
        let cancel = json!({"requestId": 1, "sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("$/cancel_request", Some(&cancel)),
            Route::Connection
        );
        let wrapped = json!({"method": "proxy/successor", "params": {"method": "$/cancel_request", "params": {"requestId": 1}}, "sessionId": "s1"});
        assert!(is_connection_scoped("proxy/successor", Some(&wrapped)));
        let other = json!({"method": "session/update", "params": {}, "sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("proxy/successor", Some(&other)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("fs/read_text_file", None),
            Route::Connection
        );
        assert_eq!(
            route_of_agent_message("x", Some(&json!({"sessionId": 5}))),
            Route::Connection
        );
    }

    #[test]
    fn outgoing_messages_and_answers() {
        let out = Outgoing::read(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}"#,
        )
        .unwrap();
        assert!(out.opens_session() && !out.is_response() && !out.is_initialize());
        assert_eq!(out.session, None);
        let answer = Outgoing::read(r#"{"jsonrpc":"2.0","id":"a-1","result":{}}"#).unwrap();
        assert!(answer.is_response());
        assert_eq!(answer.id, Some(Id::from("a-1")));
        // An error for an unreadable message (id null) is no answer to a request.
        let unreadable = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#;
        assert!(!Outgoing::read(unreadable).unwrap().is_response());
        assert_eq!(Outgoing::read("not json"), None);
        assert_eq!(Outgoing::read("[1]"), None);
        assert_eq!(
            Answer::read(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-new"}}"#),
            Some(Answer {
                id: Id::from(1),
                session: Some("s-new".into())
            })
        );
        assert_eq!(
            Answer::read(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#),
            None
        );
    }
}
