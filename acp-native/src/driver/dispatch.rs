//! The driver task's handling of the engine's events: incoming requests and notifications
//! start their handlers (polled once inline, then on a task of their own if they wait),
//! responses reach their callers, the close is published.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use acp_core::{AutoAnswerReason, ErrorObject, Event, RawValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tower::{Service, ServiceExt};

use super::answer_budget::Budgeted;
use super::notifications::{notification_done, NotifWork};
use super::shared::{Command, Control};
use super::task::Driver;
use super::{Incoming, RpcError};

/// Sends `Abandoned` for a request whose handler task ends without answering.
struct AnswerGuard {
    token: u64,
    ctl: Option<mpsc::UnboundedSender<Control>>,
}

impl Drop for AnswerGuard {
    fn drop(&mut self) {
        if let Some(ctl) = self.ctl.take() {
            let _ = ctl.send(Control::Abandoned { token: self.token });
        }
    }
}

/// What the first, inline poll of a handler gave.
enum FirstPoll {
    /// It finished (with what it reserved of the answer budget).
    Done(
        Result<Box<RawValue>, ErrorObject>,
        Option<OwnedSemaphorePermit>,
    ),
    /// `call` or the first poll panicked.
    Panicked,
    /// It waits for something: it goes on elsewhere.
    Pending(Budgeted),
    /// The service was not ready: the whole call runs elsewhere (on a clone of the service).
    NotReady(Incoming),
}

impl<R, W> Driver<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    /// Calls the service and polls the handler's future once, here on the driver task
    /// (panics caught). A handler that answers without waiting costs no task and no channel.
    fn start_handler(&mut self, incoming: Incoming) -> FirstPoll {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        let service = &mut self.service;
        // Requests may reserve answer bytes; notifications answer nothing.
        let budget = (!incoming.is_notification()).then_some(&self.handle.shared.budget);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            match service.poll_ready(&mut cx) {
                Poll::Pending => return FirstPoll::NotReady(incoming),
                Poll::Ready(Err(e)) => return FirstPoll::Done(Err(e), None),
                Poll::Ready(Ok(())) => {}
            }
            let mut fut = Budgeted::new(service.call(incoming), budget);
            // The waker of this poll is a no-op: a pending future moves to a task, whose first
            // poll registers the real one.
            match std::pin::Pin::new(&mut fut).poll(&mut cx) {
                Poll::Ready(r) => FirstPoll::Done(r, fut.take_reserved()),
                Poll::Pending => FirstPoll::Pending(fut),
            }
        }));
        r.unwrap_or_else(|_| {
            // The service may have been left inside `call`: start over from a fresh clone.
            self.service = self.pristine.clone();
            FirstPoll::Panicked
        })
    }

    /// Runs a request handler on its own task (it waits for something).
    fn spawn_request(&self, token: u64, mut fut: Budgeted) {
        let cmd = self.handle.shared.cmd.clone();
        let guard = AnswerGuard {
            token,
            ctl: Some(self.handle.shared.ctl.clone()),
        };
        tokio::spawn(async move {
            let mut guard = guard; // moved in whole: dropped when the task ends
            let result = (&mut fut).await;
            let reserved = fut.take_reserved();
            drop(fut);
            let respond = Command::Respond {
                token,
                result,
                reserved,
            };
            if cmd.send(respond).await.is_ok() {
                guard.ctl = None;
            }
        });
    }

    /// Nothing is queued for the notification task or running on it: every notification
    /// received so far was handled and every answer queued behind them handed over.
    fn notifications_idle(&self) -> bool {
        let shared = &self.handle.shared;
        self.overflow.is_empty()
            && shared.notifications_handled.count.load(Ordering::SeqCst)
                == shared.notifications_received.load(Ordering::SeqCst)
            && shared.deliveries_queued.load(Ordering::SeqCst) == 0
    }

    fn queue_notification(&mut self, n: NotifWork) {
        let bytes = n.bytes();
        self.handle
            .shared
            .notification_bytes
            .fetch_add(bytes, Ordering::SeqCst);
        if self.overflow.is_empty() {
            match self.notif_tx.try_send(n) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(n)) => self.overflow.push_back(n),
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        } else {
            self.overflow.push_back(n);
        }
    }

    pub(super) fn on_event(&mut self, ev: Event<u64>) {
        match ev {
            Event::Request {
                token,
                id,
                method,
                params,
            } => {
                let cancel = self.handle.shared.token.child_token();
                self.handlers.insert(token, cancel.clone());
                let incoming = Incoming {
                    method,
                    params,
                    id: Some(id),
                    cancel,
                    peer: self.handle.clone(),
                };
                // (What an `initialize` answered just before may be read by this handler.)
                self.publish_caps();
                match self.start_handler(incoming) {
                    FirstPoll::Done(result, reserved) => {
                        // Commands the handler queued (notifications) go out before its answer.
                        let queued = self.cmd_rx.len() as u64;
                        if queued == 0 && self.deferred.is_empty() {
                            if self.handlers.remove(&token).is_some() {
                                self.answer(token, result, reserved);
                            }
                        } else {
                            let after = self.commands_done + queued;
                            self.deferred.push_back((after, token, result, reserved));
                        }
                    }
                    FirstPoll::Panicked => {
                        // As for a handler task that ends without answering.
                        if self.handlers.remove(&token).is_some() {
                            let e = ErrorObject::internal(
                                "the request handler ended without answering",
                            );
                            let _ = self.conn.respond_error(token, e);
                        }
                    }
                    FirstPoll::Pending(fut) => self.spawn_request(token, fut),
                    FirstPoll::NotReady(incoming) => {
                        let mut service = self.service.clone();
                        let fut = Box::pin(async move {
                            match service.ready().await {
                                Ok(s) => s.call(incoming).await,
                                Err(e) => Err(e),
                            }
                        });
                        let budget = Some(&self.handle.shared.budget);
                        self.spawn_request(token, Budgeted::new(fut, budget));
                    }
                }
            }
            Event::Notification { method, params } => {
                let bytes = params.as_ref().map_or(0, |p| p.get().len());
                let shared = &self.handle.shared;
                let before = shared.notifications_received.fetch_add(1, Ordering::SeqCst);
                let n = Incoming {
                    method,
                    params,
                    id: None,
                    // The connection's own token (a notification cannot be cancelled alone).
                    cancel: self.handle.shared.token.clone(),
                    peer: self.handle.clone(),
                };
                // In order: run it here only if every earlier one is done (and every answer
                // queued behind them handed over).
                let idle = self.overflow.is_empty()
                    && shared.notifications_handled.count.load(Ordering::SeqCst) == before
                    && shared.deliveries_queued.load(Ordering::SeqCst) == 0;
                if !idle {
                    self.queue_notification(NotifWork::Call(n, bytes));
                    return;
                }
                let method = n.method.clone();
                match self.start_handler(n) {
                    FirstPoll::Done(r, _) => {
                        notification_done(&method, Ok(r));
                        self.handle.shared.notifications_handled.add_one();
                    }
                    FirstPoll::Panicked => {
                        notification_done(&method, Err(()));
                        self.handle.shared.notifications_handled.add_one();
                    }
                    FirstPoll::Pending(fut) => {
                        self.queue_notification(NotifWork::Started { method, fut, bytes })
                    }
                    FirstPoll::NotReady(n) => self.queue_notification(NotifWork::Call(n, bytes)),
                }
            }
            Event::Response {
                id: _,
                method: _,
                data,
                result,
            } => {
                if let Some((_, reply, ordered)) = self.calls.remove(&data) {
                    let result = result.map_err(RpcError::Call);
                    if ordered && !self.notifications_idle() {
                        // Notifications that came before it are still queued or running: it
                        // is handed over after them, in wire order.
                        let bytes = result.as_ref().map_or(0, |r| r.get().len());
                        self.handle
                            .shared
                            .deliveries_queued
                            .fetch_add(1, Ordering::SeqCst);
                        self.queue_notification(NotifWork::Deliver {
                            reply,
                            result,
                            bytes,
                        });
                    } else {
                        let _ = reply.send(result);
                    }
                }
            }
            Event::AutoAnswered {
                token,
                method,
                reason,
            } => {
                if reason != AutoAnswerReason::Closed {
                    tracing::debug!(token, method = %method, reason = reason.name(), "request answered by the engine");
                }
                if let Some(c) = self.handlers.remove(&token) {
                    c.cancel();
                }
            }
            Event::CancelRequested { token } => {
                if let Some(c) = self.handlers.get(&token) {
                    c.cancel();
                }
            }
            Event::ProtocolError(e) => {
                tracing::warn!(kind = e.kind.name(), "peer protocol error: {}", e.message);
            }
            Event::Closed { reason } => {
                tracing::debug!(
                    role = self.handle.role().name(),
                    "connection closed: {reason}"
                );
                self.closed = true;
                for (_, c) in self.handlers.drain() {
                    c.cancel();
                }
                self.closed_tx.send_replace(Some(reason));
                self.handle.shared.token.cancel();
                // Stop reading at once (the peer's writes to us fail instead of blocking).
                self.reader = None;
            }
        }
    }
}
