//! A prompt turn to its end, on either protocol version: on ACP v1 the `session/prompt` answer
//! ends the turn; on ACP v2 (feature `unstable_protocol_v2`) the answer only acknowledges the
//! prompt and the turn ends with the session's idle `state_update`, which the supervisor sees
//! by wrapping the host's service ([`Watched`]). A turn whose agent crashes (or is stopped by
//! the probe, or shut down) before that update ends with the connection's close reason (its
//! exit status and stderr tail): never a wait without end.
//!
//! A turn is watched on its connection: after a crash, the restarted agent's replay ends with
//! the session's idle state, which must not pass for the end of the crashed turn.
//!
//! Memory: one entry per session with a watched v2 turn, added only by the local caller's
//! [`SupervisedAgent::prompt`](super::SupervisedAgent::prompt) (one turn per session at a
//! time) and removed when its [`Turn`] ends or is dropped; what the agent sends never adds one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use acp_core::{CallError, RawValue};
use tokio::sync::oneshot;

use crate::{ClientSideConnection, ConnectionHandle, RpcError};

/// Where a turn's stop reason goes, with the number of its watch (so that a guard removes its
/// own only) and the connection it runs on (only that connection's idle state ends it).
type Waiter = (u64, ConnectionHandle, oneshot::Sender<Option<String>>);

/// The v2 turns waited for, by session id: each gets its idle `state_update`'s stop reason.
#[derive(Default)]
pub(super) struct Turns {
    waiting: Mutex<HashMap<String, Waiter>>,
    watches: std::sync::atomic::AtomicU64,
}

impl Turns {
    /// Starts waiting for `session`'s end of turn on `connection`; one turn per session at a
    /// time.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    pub(super) fn watch(
        self: &Arc<Self>,
        session: &str,
        connection: &ConnectionHandle,
    ) -> Result<(oneshot::Receiver<Option<String>>, WatchGuard), RpcError> {
        let mut waiting = self.waiting.lock().expect("not poisoned");
        if waiting.contains_key(session) {
            return Err(RpcError::Other(format!(
                "a turn is already running in session {session}: wait for its end (or cancel it) \
                 before the next prompt"
            )));
        }
        let (tx, rx) = oneshot::channel();
        let number = self
            .watches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        waiting.insert(session.to_string(), (number, connection.clone(), tx));
        let guard = WatchGuard {
            turns: self.clone(),
            session: session.to_string(),
            number,
        };
        Ok((rx, guard))
    }

    /// `session`'s idle `state_update` came on `connection` (and the host's service handled
    /// it): the end of the turn watched there, if any.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    fn ended(&self, session: &str, connection: &ConnectionHandle, stop_reason: Option<String>) {
        let mut waiting = self.waiting.lock().expect("not poisoned");
        if !waiting
            .get(session)
            .is_some_and(|(_, on, _)| on.same_connection(connection))
        {
            return;
        }
        if let Some((_, _, tx)) = waiting.remove(session) {
            let _ = tx.send(stop_reason);
        }
    }

    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    fn is_empty(&self) -> bool {
        self.waiting.lock().expect("not poisoned").is_empty()
    }

    /// How many turns are waited for (for the memory test).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.lock().expect("not poisoned").len()
    }
}

/// Stops waiting for a session's turn when dropped (its turn ended, failed, or was let go).
pub(super) struct WatchGuard {
    turns: Arc<Turns>,
    session: String,
    number: u64,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        let mut waiting = self.turns.waiting.lock().expect("not poisoned");
        // Only its own: after its end, the session's next turn may be waited for already.
        if waiting
            .get(&self.session)
            .is_some_and(|(n, _, _)| *n == self.number)
        {
            waiting.remove(&self.session);
        }
    }
}

/// A prompt turn started by [`SupervisedAgent::prompt`](super::SupervisedAgent::prompt).
pub struct Turn {
    answer: Box<RawValue>,
    end: End,
}

enum End {
    /// v1: the answer ended it, with this stop reason.
    Answered(Option<String>),
    /// v2: waiting for the idle `state_update`, or the connection's end.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    Waiting {
        ended: oneshot::Receiver<Option<String>>,
        connection: ClientSideConnection,
        _guard: WatchGuard,
    },
}

impl Turn {
    /// A v1 turn: its `session/prompt` answer ended it.
    pub(super) fn answered(answer: Box<RawValue>) -> Turn {
        let stop = serde_json::from_str::<serde_json::Value>(answer.get())
            .ok()
            .and_then(|v| v.get("stopReason")?.as_str().map(str::to_string));
        Turn {
            answer,
            end: End::Answered(stop),
        }
    }

    /// A v2 turn the agent acknowledged: it ends with the idle `state_update` `watch` waits for.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    pub(super) fn acknowledged(
        answer: Box<RawValue>,
        watch: (oneshot::Receiver<Option<String>>, WatchGuard),
        connection: ClientSideConnection,
    ) -> Turn {
        Turn {
            answer,
            end: End::Waiting {
                ended: watch.0,
                connection,
                _guard: watch.1,
            },
        }
    }

    /// The `session/prompt` answer: v1's result (with its `stopReason`), or v2's
    /// acknowledgement (the user message's `messageId`).
    pub fn answer(&self) -> &RawValue {
        &self.answer
    }

    /// Waits for the turn's end and returns its stop reason as the agent named it (`end_turn`,
    /// `cancelled`, …, or a v2 agent's custom `_` value; `None` when an idle state named
    /// none). A v1 turn has ended already. A v2 turn ends with its session's idle
    /// `state_update`, once the host's service has handled it (so every update of the turn was
    /// handled before); if the agent's connection ends first (a crash, the probe stopping a
    /// silent agent, a shutdown), this fails with [`CallError::Closed`] and the close reason
    /// (a crash's exit status and stderr tail), as a pending v1 prompt fails.
    pub async fn ended(self) -> Result<Option<String>, RpcError> {
        match self.end {
            End::Answered(stop) => Ok(stop),
            End::Waiting {
                mut ended,
                connection,
                _guard,
            } => {
                tokio::select! {
                    biased;
                    stop = &mut ended => stop.map_err(|_| RpcError::Other(
                        "the turn's watch ended without its end (the supervisor stopped)".into(),
                    )),
                    reason = connection.closed() => {
                        // An end handled just before the close still counts.
                        match ended.try_recv() {
                            Ok(stop) => Ok(stop),
                            Err(_) => Err(RpcError::Call(CallError::Closed { reason })),
                        }
                    }
                }
            }
        }
    }
}

#[cfg(feature = "unstable_protocol_v2")]
pub(super) use watched::Watched;

#[cfg(feature = "unstable_protocol_v2")]
mod watched {
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use acp_core::{ErrorObject, RawValue};
    use futures::future::BoxFuture;
    use serde::Deserialize;
    use tower::Service;

    use super::Turns;
    use crate::driver::Incoming;

    /// The host's service with an eye on v2 turns: an idle `state_update` of a session whose
    /// turn is waited for ends that turn once the service has handled it. Everything goes to
    /// the service unchanged.
    #[derive(Clone)]
    pub(in crate::supervisor) struct Watched<S> {
        pub(in crate::supervisor) inner: S,
        pub(in crate::supervisor) turns: Arc<Turns>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Update {
        session_id: String,
        update: Kind,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Kind {
        session_update: String,
        #[serde(default)]
        state: Option<String>,
        #[serde(default)]
        stop_reason: Option<String>,
    }

    /// The session and stop reason of an idle `state_update` on a v2 connection, if that is
    /// what `req` is (read only while some turn is waited for, and only when the params name
    /// a state update at all).
    fn idle_of(turns: &Turns, req: &Incoming) -> Option<(String, Option<String>)> {
        if req.method != acp_core::acp::client::SESSION_UPDATE
            || !req.is_notification()
            || req.peer.protocol_version() != acp_core::v2::PROTOCOL_VERSION
            || turns.is_empty()
        {
            return None;
        }
        let params = req.params.as_deref()?.get();
        if !params.contains(acp_core::v2::STATE_UPDATE) {
            return None;
        }
        let u: Update = serde_json::from_str(params).ok()?;
        (u.update.session_update == acp_core::v2::STATE_UPDATE
            && u.update.state.as_deref() == Some("idle"))
        .then_some((u.session_id, u.update.stop_reason))
    }

    impl<S> Service<Incoming> for Watched<S>
    where
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
        S::Future: Send + 'static,
    {
        type Response = Box<RawValue>;
        type Error = ErrorObject;
        type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, req: Incoming) -> Self::Future {
            let end = idle_of(&self.turns, &req).map(|end| (end, req.peer.clone()));
            let handled = self.inner.call(req);
            let turns = self.turns.clone();
            Box::pin(async move {
                let out = handled.await;
                if let Some(((session, stop), connection)) = end {
                    turns.ended(&session, &connection, stop);
                }
                out
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client connection over an in-memory pipe (its peer's end dropped: never used).
    fn connection() -> ConnectionHandle {
        let ((r, w), _peer) = crate::transport::duplex(1024);
        let config = crate::DriverConfig::new(acp_core::Role::Client);
        ClientSideConnection::connect(r, w, crate::Router::new(), config)
            .handle()
            .clone()
    }

    #[tokio::test]
    async fn one_watched_turn_per_session_and_a_dropped_turn_is_forgotten() {
        let (a, b) = (connection(), connection());
        let turns = Arc::new(Turns::default());
        let (mut rx, guard) = turns.watch("s1", &a).unwrap();
        let Err(RpcError::Other(why)) = turns.watch("s1", &a) else {
            panic!("a second turn in s1 was watched");
        };
        assert!(why.contains("already running in session s1"), "{why}");
        let other = turns.watch("s2", &a).unwrap();
        assert_eq!(turns.len(), 2);
        // An end for a session nobody waits for adds nothing.
        turns.ended("s3", &a, None);
        assert_eq!(turns.len(), 2);
        // The session's idle state on another connection (a restarted agent's replay) does
        // not end the turn watched on the first.
        turns.ended("s1", &b, None);
        assert!(rx.try_recv().is_err());
        assert_eq!(turns.len(), 2);
        turns.ended("s1", &a, Some("end_turn".into()));
        assert_eq!(rx.try_recv().unwrap().as_deref(), Some("end_turn"));
        // The session's next turn, watched before the ended one is let go, stays watched.
        let next = turns.watch("s1", &b).unwrap();
        drop(guard);
        assert_eq!(turns.len(), 2);
        drop(next);
        drop(other);
        assert_eq!(turns.len(), 0);
        // Free again.
        drop(turns.watch("s1", &a).unwrap());
        assert_eq!(turns.len(), 0);
    }

    #[test]
    fn a_v1_answer_carries_its_stop_reason() {
        let answer = RawValue::from_string(r#"{"stopReason":"max_tokens"}"#.into()).unwrap();
        let turn = Turn::answered(answer);
        assert_eq!(turn.answer().get(), r#"{"stopReason":"max_tokens"}"#);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(
            rt.block_on(turn.ended()).unwrap().as_deref(),
            Some("max_tokens")
        );
    }
}
