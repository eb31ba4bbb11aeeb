//! Where each agent message of an HTTP + SSE connection goes: the connection's stream or a
//! session's, sessions known from the agent's messages and answers.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use acp_core::jsonrpc::Envelope;
use acp_core::{Id, RawValue};
use tokio::sync::oneshot;

use super::super::wire::{self, Route};
use super::mailbox::Mailbox;

/// What a response does to the connection's known sessions when it succeeds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Effect {
    None,
    Opens,
    Closes,
}

impl Effect {
    /// The effect of a request for `method`.
    pub(super) fn of(method: &str) -> Effect {
        if wire::is_session_opening_method(method) {
            Effect::Opens
        } else if wire::is_session_closing_method(method) {
            Effect::Closes
        } else {
            Effect::None
        }
    }
}

/// What a successful or failed `initialize` answered.
pub(super) struct InitAnswer {
    pub(super) line: String,
    pub(super) is_error: bool,
}

/// A session's stream.
pub(super) struct SessionStream {
    pub(super) mailbox: Arc<Mailbox>,
    /// The agent has named this session on the connection.
    pub(super) confirmed: bool,
}

/// A connection's streams and the routes of the answers it waits for.
pub(super) struct Routes {
    pub(super) connection: Arc<Mailbox>,
    pub(super) sessions: HashMap<String, SessionStream>,
    /// Requests from the client not answered yet: where their response goes.
    pub(super) pending: HashMap<Id, VecDeque<(Route, Effect)>>,
    /// The initialize request, until its answer.
    pub(super) init: Option<(Id, oneshot::Sender<InitAnswer>)>,
}

impl Routes {
    /// Marks a session as known, creating its stream if needed.
    pub(super) fn confirm(&mut self, session: &str, backlog: &Arc<AtomicUsize>) -> Arc<Mailbox> {
        let stream = self
            .sessions
            .entry(session.to_string())
            .or_insert_with(|| SessionStream {
                mailbox: Arc::new(Mailbox::new(backlog.clone())),
                confirmed: false,
            });
        stream.confirmed = true;
        stream.mailbox.clone()
    }

    /// Updates the known sessions for a response and picks its stream (`None`: the
    /// connection's), as the official server does.
    pub(super) fn response_target(
        &mut self,
        route: Route,
        effect: Effect,
        result: Option<&RawValue>,
    ) -> Option<Arc<Mailbox>> {
        if effect == Effect::Opens {
            if let Some(session) = acp_core::acp::session_id_of(result.map(RawValue::get)) {
                let backlog = self.connection.backlog.clone();
                self.confirm(&session, &backlog);
            }
        }
        let Route::Session(session) = route else {
            return None;
        };
        let mut target = self.sessions.get(&session).map(|s| s.mailbox.clone());
        if result.is_some() {
            match effect {
                Effect::Closes => {
                    // A response queued on a removed stream would be lost: unless someone is
                    // reading the session's stream, it goes on the connection's.
                    if target.as_ref().is_some_and(|m| !m.is_leased()) {
                        target = None;
                    }
                    self.sessions.remove(&session);
                }
                Effect::None | Effect::Opens => {
                    let backlog = self.connection.backlog.clone();
                    self.confirm(&session, &backlog);
                }
            }
        }
        target
    }
}

/// The session a request or notification is about, for its stream (see
/// [`wire::session_id_of`]): none for `$/` methods; for `proxy/successor`, the wire's rule;
/// else `params.sessionId`.
pub(super) fn session_of(env: &Envelope<'_>) -> Option<String> {
    let method = env.method()?;
    let params = env.params()?;
    if method.starts_with("$/") {
        return None;
    }
    if method == "proxy/successor" {
        let value: serde_json::Value = serde_json::from_str(params.get()).ok()?;
        return wire::session_id_of(&method, Some(&value)).map(str::to_string);
    }
    env.session_id()
}

/// A response's `result` when it succeeded: present and not `null` (`"result": null` counts as
/// no success, for the sessions it opens or closes and for `initialize`).
pub(super) fn success<'a>(env: &Envelope<'a>) -> Option<&'a RawValue> {
    env.result().filter(|r| r.get() != "null")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_follow_their_requests_route() {
        let backlog = Arc::new(AtomicUsize::new(0));
        let mut routes = Routes {
            connection: Arc::new(Mailbox::new(backlog.clone())),
            sessions: HashMap::new(),
            pending: HashMap::new(),
            init: None,
        };
        let created = RawValue::from_string(r#"{"sessionId":"new-1"}"#.into()).unwrap();
        // session/new: to the connection's stream, and the session becomes known.
        assert!(routes
            .response_target(Route::Connection, Effect::Opens, Some(&created))
            .is_none());
        assert!(routes.sessions["new-1"].confirmed);
        // A prompt's answer goes on the session's stream.
        let ok = RawValue::from_string("{}".into()).unwrap();
        let t = routes.response_target(Route::Session("new-1".into()), Effect::None, Some(&ok));
        assert!(t.is_some_and(|m| Arc::ptr_eq(&m, &routes.sessions["new-1"].mailbox)));
        // An error for an unknown session: the connection's stream, nothing allocated.
        assert!(routes
            .response_target(Route::Session("made-up".into()), Effect::None, None)
            .is_none());
        assert!(!routes.sessions.contains_key("made-up"));
        // A close forgets the session; unread, its answer goes on the connection's stream.
        assert!(routes
            .response_target(Route::Session("new-1".into()), Effect::Closes, Some(&ok))
            .is_none());
        assert!(routes.sessions.is_empty());
    }
    #[test]
    fn a_message_s_session_is_read_from_its_envelope() {
        let session = |text: &str| session_of(&Envelope::parse(text).unwrap());
        assert_eq!(
            session(r#"{"method":"session/update","params":{"sessionId":"s1","update":{}}}"#),
            Some("s1".into())
        );
        // `$/` methods and messages without params are the connection's.
        assert_eq!(
            session(r#"{"method":"$/cancel_request","params":{"sessionId":"s1"}}"#),
            None
        );
        assert_eq!(session(r#"{"id":1,"method":"session/list"}"#), None);
        // A `proxy/successor` wrapping a cancel is the connection's; otherwise its sessionId.
        assert_eq!(
            session(
                r#"{"method":"proxy/successor","params":{"method":"$/cancel_request","params":{}}}"#
            ),
            None
        );
        assert_eq!(
            session(r#"{"method":"proxy/successor","params":{"sessionId":"s2","method":"x"}}"#),
            Some("s2".into())
        );
        // A response succeeded when its result is present and not null.
        let ok = |text: &str| success(&Envelope::parse(text).unwrap()).map(|r| r.get().to_string());
        assert_eq!(ok(r#"{"id":1,"result":{}}"#), Some("{}".into()));
        assert_eq!(ok(r#"{"id":1,"result":null}"#), None);
        assert_eq!(ok(r#"{"id":1,"error":{"code":1,"message":"m"}}"#), None);
    }
}
