//! [`ConnectionHandle`]: the cloneable handle to a driven connection, and the commands it
//! hands to the driver task.

use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use acp_core::acp::{ext_name, Advertised, ClientCapabilities};
use acp_core::{CallError, RawValue, Role};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, PollSender};

use super::answer_budget::polling_notification_handler;
use super::shared::{Command, Control, Shared};
use super::{decode, to_raw, RpcClient, RpcError};
#[cfg(doc)] // (for links in the docs)
use super::{reserve_answer_bytes, DriverConfig};

/// A cloneable handle to a driven connection: send requests and notifications, watch it end.
#[derive(Clone)]
pub struct ConnectionHandle {
    // One `Arc`: every incoming message carries a clone (`Incoming::peer`).
    pub(super) shared: Arc<Shared>,
}

impl fmt::Debug for ConnectionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionHandle")
            .field("role", &self.shared.role)
            .field("closed", &self.close_reason())
            .finish()
    }
}

impl ConnectionHandle {
    /// Which side this connection plays.
    pub fn role(&self) -> Role {
        self.shared.role
    }

    /// Whether both handles drive the same connection.
    pub(crate) fn same_connection(&self, other: &ConnectionHandle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Sends a request and awaits its result. `timeout` is an engine deadline: when it passes
    /// the call fails with [`CallError::TimedOut`] and the peer is sent `$/cancel_request`.
    /// Dropping the future before it completes cancels the request the same way.
    pub async fn request(
        &self,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, RpcError> {
        let (tx, rx) = oneshot::channel();
        let key = self.shared.next_key.fetch_add(1, Ordering::Relaxed);
        let cmd = Command::Request {
            key,
            method: method.into(),
            params,
            timeout,
            reply: tx,
            ordered: !polling_notification_handler(),
        };
        self.shared
            .cmd
            .send(cmd)
            .await
            .map_err(|_| self.closed_error())?;
        self.await_reply(key, rx).await
    }

    pub(super) async fn await_reply(
        &self,
        key: u64,
        rx: oneshot::Receiver<Result<Box<RawValue>, RpcError>>,
    ) -> Result<Box<RawValue>, RpcError> {
        let mut guard = CancelOnDrop {
            key,
            ctl: Some(&self.shared.ctl),
        };
        let out = rx.await;
        guard.ctl = None;
        out.unwrap_or_else(|_| Err(self.closed_error()))
    }

    /// Sends a typed request (see [`acp_core::typed`]) and decodes its result.
    pub async fn request_typed<M: acp_core::typed::Method>(
        &self,
        params: &M::Params,
        timeout: Option<Duration>,
    ) -> Result<M::Result, RpcError> {
        let raw = self
            .request(M::NAME, Some(to_raw(params)?), timeout)
            .await?;
        decode(M::NAME, &raw)
    }

    /// Like [`request_typed`](Self::request_typed), taking the params by value: they are
    /// serialized and dropped before the call waits for its answer, so a large request (a
    /// 64 MiB `fs/write_text_file`) is not held twice meanwhile.
    pub async fn request_typed_owned<M: acp_core::typed::Method>(
        &self,
        params: M::Params,
        timeout: Option<Duration>,
    ) -> Result<M::Result, RpcError> {
        let raw = to_raw(&params)?;
        drop(params);
        let raw = self.request(M::NAME, Some(raw), timeout).await?;
        decode(M::NAME, &raw)
    }

    /// Sends a notification. Resolves once it is queued for the connection (waiting while the
    /// queue is full, which it stays while the writer is above its high-water mark); a later
    /// close still sends it first.
    pub async fn notify(
        &self,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Result<(), RpcError> {
        // Fire and forget once queued: the bounded command queue (which the driver stops
        // draining while its write buffer is above the high-water mark) is the backpressure.
        // The only refusals a notification can meet are checked here, so no round trip to the
        // driver is needed per notification.
        let method = method.into();
        if method.is_empty() {
            return Err(RpcError::Refused(acp_core::Error::InvalidMethod(method)));
        }
        if let Some(p) = &params {
            if !matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) {
                return Err(RpcError::Refused(acp_core::Error::InvalidParams(
                    "params must serialize to a JSON object or array".into(),
                )));
            }
        }
        #[cfg(feature = "unstable_protocol_v2")]
        if self.protocol_version() == acp_core::v2::PROTOCOL_VERSION {
            // ACP v2's rules for a notification need no state but the version (the replay
            // order's does: the engine checks it and the driver logs a refusal).
            let refused = |why| RpcError::Refused(acp_core::Error::ProtocolVersionRule(why));
            if let Some(why) = acp_core::v2::removed_method(&method) {
                return Err(refused(why));
            }
            // `tool_call/cancel`, `terminal/cancel`: the client's requests, never notifications.
            let from_agent = self.shared.role == acp_core::Role::Agent;
            if let Some(why) = acp_core::v2::cancel::misuse(&method, from_agent, false) {
                return Err(refused(why));
            }
            if self.shared.role == acp_core::Role::Agent
                && method == acp_core::acp::client::SESSION_UPDATE
            {
                let p = params.as_deref().map_or("", RawValue::get);
                acp_core::v2::check_update(p, true).map_err(refused)?;
            }
        }
        if self.shared.enforce_capabilities && self.protocol_version() == 1 {
            let bits = self.shared.advertised.load(Ordering::Relaxed);
            let missing = Advertised::from_bits(bits).missing_for_notification(
                self.shared.role,
                &method,
                params.as_deref().map(RawValue::get),
            );
            if let Some(capability) = missing {
                return Err(RpcError::Refused(
                    acp_core::Error::CapabilityNotAdvertised { method, capability },
                ));
            }
        }
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.shared
            .cmd
            .send(Command::Notify { method, params })
            .await
            .map_err(|_| self.closed_error())
    }

    /// Sends a typed notification.
    pub async fn notify_typed<N: acp_core::typed::NotificationMethod>(
        &self,
        params: &N::Params,
    ) -> Result<(), RpcError> {
        self.notify(N::NAME, Some(to_raw(params)?)).await
    }

    /// An extension request (`method` gets a leading `_` if it lacks one), JSON in and out.
    pub async fn ext_method(
        &self,
        method: &str,
        params: serde_json::Value,
        timeout: Option<Duration>,
    ) -> Result<serde_json::Value, RpcError> {
        let method = ext_name(method);
        let raw = self
            .request(&*method, Some(to_raw(&params)?), timeout)
            .await?;
        decode(&method, &raw)
    }

    /// An extension notification (`method` gets a leading `_` if it lacks one).
    pub async fn ext_notification(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<(), RpcError> {
        self.notify(ext_name(method), Some(to_raw(&params)?)).await
    }

    /// The outgoing side as a cloneable `tower::Service`, to stack `timeout`, `retry`,
    /// `concurrency_limit`, `buffer`...
    pub fn client(&self) -> RpcClient {
        RpcClient {
            handle: self.clone(),
            sender: PollSender::new(self.shared.cmd.clone()),
        }
    }

    /// Closes the connection: pending incoming requests are answered, pending outgoing calls
    /// fail with [`CallError::Closed`] carrying `reason`, the transport is flushed and shut.
    /// Also the way to give an EOF a better reason (see [`DriverConfig::eof_grace`]).
    pub fn close_with_reason(&self, reason: impl Into<String>) {
        let _ = self.shared.ctl.send(Control::Close {
            reason: reason.into(),
        });
    }

    /// Like [`close_with_reason`](Self::close_with_reason), but only once the input has ended:
    /// everything the peer wrote before is still read and handled (its last updates, its
    /// answers). For a process owner whose peer exited: the pipe may still hold its last
    /// messages, which an immediate close would drop. Does not wait for an EOF that never
    /// comes (a grandchild holding the pipe): follow with a bounded
    /// [`close_with_reason`](Self::close_with_reason).
    pub fn close_at_eof_with_reason(&self, reason: impl Into<String>) {
        let _ = self.shared.ctl.send(Control::CloseAtEof {
            reason: reason.into(),
        });
    }

    /// [`close_with_reason`](Self::close_with_reason) with a generic reason.
    pub fn close(&self) {
        self.close_with_reason("closed locally");
    }

    /// Resolves once the connection has closed and everything it had to send was written and
    /// the transport shut down (or writing failed). A process that exits when its connection
    /// closes awaits this (bounded) first, so that its last answers are not lost.
    pub fn flushed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shared.writer_done.clone();
        async move {
            let _ = rx.wait_for(|done| *done).await;
        }
    }

    /// Resolves with the reason once the connection has closed.
    pub fn closed(&self) -> impl Future<Output = String> + Send + 'static {
        let mut rx = self.shared.closed.clone();
        async move {
            let seen = rx
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|r| r.clone());
            seen.or_else(|| rx.borrow().clone())
                .unwrap_or_else(|| "connection driver stopped".into())
        }
    }

    /// Whether the connection has closed (or its driver stopped); calls then fail at once with
    /// [`CallError::Closed`].
    pub fn is_closed(&self) -> bool {
        self.shared.closed.borrow().is_some() || self.shared.cmd.is_closed()
    }

    /// Resolves once every notification received so far has been handled. (An answer to a call
    /// already waits for the notifications that arrived before it: see the driver's docs,
    /// "Order". This is for a point that is not an answer.)
    pub fn notifications_handled(&self) -> impl Future<Output = ()> + Send + 'static {
        let target = self.shared.notifications_received.load(Ordering::SeqCst);
        let shared = self.shared.clone();
        async move { shared.notifications_handled.wait_for(target).await }
    }

    /// Why it closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.shared.closed.borrow().clone()
    }

    /// Cancelled when the connection closes (pass it to work that should stop with it).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.shared.token.clone()
    }

    /// The protocol version `initialize` settled on ([`acp_core::Connection::protocol_version`]):
    /// 1, or 2 with the feature `unstable_protocol_v2` when both sides offered ACP v2.
    pub fn protocol_version(&self) -> u16 {
        self.shared.protocol_version.load(Ordering::Relaxed)
    }

    /// What the client advertised in `initialize`, as far as the engine acts on it: received
    /// by an agent, sent by a client (all false before).
    pub fn client_capabilities(&self) -> ClientCapabilities {
        Advertised::from_bits(self.shared.advertised.load(Ordering::Relaxed)).client
    }

    pub(super) fn closed_error(&self) -> RpcError {
        RpcError::Call(CallError::Closed {
            reason: self
                .close_reason()
                .unwrap_or_else(|| "connection driver stopped".into()),
        })
    }
}

struct CancelOnDrop<'a> {
    key: u64,
    ctl: Option<&'a mpsc::UnboundedSender<Control>>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(ctl) = self.ctl {
            let _ = ctl.send(Control::Cancel { key: self.key });
        }
    }
}
