//! The driver: the async loop around one [`acp_core::Connection`].
//!
//! One task (the *driver*) owns the sans-IO connection, the transport's reader and its writer:
//!
//! * it **reads** the transport into one reusable buffer and feeds it straight to
//!   [`Connection::handle_bytes`], with a millisecond clock taken from `tokio::time::Instant`
//!   (so `tokio::time::pause` works in tests);
//! * it **writes** what the engine produced from an output queue (small messages coalesced,
//!   large ones written from the engine's own buffer, never copied), as one more thing it polls
//!   alongside reading: it never awaits a whole write while not reading, so two peers writing
//!   large messages to each other at once cannot deadlock. Above
//!   [`DriverConfig::write_high_water`] unwritten bytes it stops taking local commands
//!   (requests, notifications, responses), so callers wait in `send`; above
//!   [`DriverConfig::read_pause_bytes`] it also stops reading: a peer that does not read cannot
//!   make this process buffer without bound;
//! * the engine's deadline ([`Connection::poll_timeout`]) is a tokio timer that calls
//!   [`Connection::handle_timeout`];
//! * **incoming requests** are started on the driver: the service is called and the handler's
//!   future polled once, inline (panics caught). A handler that answers without waiting is
//!   answered right there (no task, no channel); one that waits (on the peer, a timer, a lock)
//!   goes on on its own spawned task, so a slow handler, or one awaiting a call to the peer,
//!   never blocks reading or other requests. (A handler should still not *compute* for long
//!   before its first `.await`: that part runs on the driver.)
//! * **incoming notifications** are handled one at a time, in order: when no earlier one is
//!   still running, the next is started inline like a request; otherwise it (and, in order, a
//!   started one that is still pending) goes through a bounded queue to a single task that
//!   finishes them one at a time.
//!
//! A local call (`request`, `notify`) is one hand-off: a bounded command queue to the driver,
//! which sends it and writes the bytes in the same wake-up.
//!
//! ## The answer budget
//!
//! The count of incoming requests in flight is bounded by the engine
//! ([`Config::max_incoming_in_flight`]), but not what their answers weigh: 64 reads of a 10 MiB
//! file of control characters are 64 answers of 60 MB each once JSON-escaped (`\u0001`). So a
//! handler that is about to build a large answer first calls [`reserve_answer_bytes`] with its
//! escaped size: it waits, in order, until that many bytes of the connection's budget
//! ([`DriverConfig::answer_budget`]) are free, and the bytes stay reserved until the answer has
//! been *written* to the transport (not merely handed over), so a peer that reads slowly holds
//! back the next large answers instead of letting them pile up in memory. A single answer
//! larger than the whole budget takes all of it (it waits for the others, then goes alone), so
//! valid large answers always work. A reservation that waits while the writer makes no progress
//! for [`DriverConfig::answer_stall`] (the peer stopped reading) fails with
//! [`AnswerBudgetError`], a JSON-RPC error naming the limit, so that waiting handlers end.
//!
//! ## The notification contract
//!
//! Notifications are handled one at a time, in arrival order. While a notification handler
//! runs, reading goes on (responses, requests and further notifications keep flowing) until
//! [`DriverConfig::notification_buffer`] notifications, or [`DriverConfig::notification_bytes`]
//! of their params, are queued behind it; then the driver stops reading the transport until the
//! queue drains. So a notification handler may await
//! anything as long as the peer sends fewer than `notification_buffer` notifications in the
//! meantime; a handler that waits for *later notifications* or for unbounded work must spawn
//! it instead. Request handlers are never subject to this: they run concurrently.
//!
//! ## Ending
//!
//! The connection ends on the transport's EOF or a read/write error, on
//! [`ConnectionHandle::close`], or when the engine closes. Then every pending outgoing call
//! fails at once with [`CallError::Closed`], incoming handlers' cancellation tokens fire, the
//! connection's [`CancellationToken`] is cancelled and [`ConnectionHandle::closed`] resolves with
//! the reason. Whoever owns the peer process can make that reason carry its exit status and
//! stderr tail: set [`DriverConfig::eof_grace`] and call [`ConnectionHandle::close_with_reason`]
//! when the process has exited; an EOF waits up to that grace for it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::acp::{ext_name, ClientCapabilities};
use acp_core::{
    AutoAnswerReason, CallError, Config, Connection, ErrorCode, ErrorObject, Event, Id, Millis,
    RawValue, RequestOptions, Role,
};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, PollSender};
use tower::util::BoxCloneService;
use tower::{Service, ServiceExt};

/// The service that answers incoming requests and notifications: params in, a raw JSON result
/// or a JSON-RPC error out. See [`crate::Router`] for a typed one.
pub type RpcService = BoxCloneService<Incoming, Box<RawValue>, ErrorObject>;

/// Settings of one driven connection.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// The engine's settings (role, timeouts, limits).
    pub core: Config,
    /// Bytes queued for the transport and not yet written above which local commands wait.
    /// 1 MiB.
    pub write_high_water: usize,
    /// Above this many unwritten bytes the driver also stops reading (bounds what a peer that
    /// floods us without reading our answers can make us buffer). 16 MiB.
    pub read_pause_bytes: usize,
    /// Notifications queued for the in-order notification handler before reading pauses. 1024.
    pub notification_buffer: usize,
    /// Bytes (of params) of the notifications queued for the in-order notification handler
    /// above which reading pauses too: the count alone lets 1024 large notifications pile up
    /// behind a slow handler. 64 MiB (one notification larger than that is still taken).
    pub notification_bytes: usize,
    /// Local commands queued for the driver (beyond that, senders wait). 64.
    pub command_buffer: usize,
    /// Size of one transport read. 64 KiB.
    pub read_chunk: usize,
    /// On the transport's EOF, how long to wait for [`ConnectionHandle::close_with_reason`]
    /// before closing with a generic reason. Zero (close at once).
    pub eof_grace: Duration,
    /// On the transport's EOF (the peer closed its end, a half-close), how long the requests
    /// already received may still be answered before the connection closes: it closes as soon
    /// as the last one is answered, or at this deadline (the rest then get the engine's
    /// "connection closing" treatment). Calls the handlers make to the peer meanwhile cannot be
    /// answered any more and wait until the close. An agent: 5 s (so that `printf request |
    /// agent` answers); a client: zero (an agent that closed its stdout is gone).
    pub answer_on_eof: Duration,
    /// Bytes of answers to the peer's requests that handlers may hold reservations for at once
    /// ([`reserve_answer_bytes`]): reserved before a large answer is built, given back once it
    /// is written to the transport. 64 MiB.
    pub answer_budget: usize,
    /// A waiting reservation of the answer budget fails ([`AnswerBudgetError`]) once output
    /// has been unwritten with no progress of the writer for this long (the peer does not
    /// read). 10 s.
    pub answer_stall: Duration,
}

impl DriverConfig {
    pub fn new(role: Role) -> Self {
        DriverConfig::with_core(Config::new(role))
    }

    pub fn with_core(core: Config) -> Self {
        let answer_on_eof = match core.role {
            Role::Agent => Duration::from_secs(5),
            Role::Client => Duration::ZERO,
        };
        DriverConfig {
            answer_on_eof,
            core,
            write_high_water: 1 << 20,
            read_pause_bytes: 16 << 20,
            notification_buffer: 1024,
            notification_bytes: 64 << 20,
            command_buffer: 64,
            read_chunk: 64 << 10,
            eof_grace: Duration::ZERO,
            answer_budget: 64 << 20,
            answer_stall: Duration::from_secs(10),
        }
    }

    /// Sets the deadline for outgoing requests that set none.
    pub fn default_request_timeout(mut self, d: Duration) -> Self {
        self.core.default_request_timeout = Some(duration_ms(d));
        self
    }

    pub fn eof_grace(mut self, d: Duration) -> Self {
        self.eof_grace = d;
        self
    }

    /// See [`DriverConfig::answer_on_eof`].
    pub fn answer_on_eof(mut self, d: Duration) -> Self {
        self.answer_on_eof = d;
        self
    }

    pub fn write_high_water(mut self, bytes: usize) -> Self {
        self.write_high_water = bytes;
        self
    }

    pub fn notification_buffer(mut self, n: usize) -> Self {
        self.notification_buffer = n.max(1);
        self
    }

    /// See [`DriverConfig::notification_bytes`].
    pub fn notification_bytes(mut self, bytes: usize) -> Self {
        self.notification_bytes = bytes;
        self
    }

    /// See [`DriverConfig::answer_budget`] (at least 1 byte).
    pub fn answer_budget(mut self, bytes: usize) -> Self {
        self.answer_budget = bytes.max(1);
        self
    }

    /// See [`DriverConfig::answer_stall`].
    pub fn answer_stall(mut self, d: Duration) -> Self {
        self.answer_stall = d;
        self
    }
}

/// How a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcError {
    /// Sent, then failed: the peer's error, a timeout, a cancellation, the connection closing,
    /// an invalid response.
    Call(CallError),
    /// Not sent: the engine refused it locally (capability not advertised, a prompt already in
    /// flight for the session, params that are not an object...).
    Refused(acp_core::Error),
    /// A result came but did not decode into the expected type.
    Decode { method: String, details: String },
    /// A failure from a `tower` layer stacked on [`RpcClient`] (see
    /// [`crate::layers::rpc_error_from_box`]).
    Other(String),
}

impl RpcError {
    /// The peer's JSON-RPC error, if that is how it failed.
    pub fn remote(&self) -> Option<&ErrorObject> {
        match self {
            RpcError::Call(CallError::Remote(e)) => Some(e),
            _ => None,
        }
    }

    /// Whether it failed because the connection is (or was) closed.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            RpcError::Call(CallError::Closed { .. })
                | RpcError::Refused(acp_core::Error::ConnectionClosed)
        )
    }

    /// The failure as a JSON-RPC error object (to pass on to another peer).
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            RpcError::Call(e) => e.to_error_object(),
            RpcError::Refused(e) => ErrorObject::new(ErrorCode::InternalError, e.to_string()),
            RpcError::Decode { method, details } => ErrorObject::new(
                ErrorCode::InternalError,
                format!("invalid result for {method}: {details}"),
            ),
            RpcError::Other(e) => ErrorObject::new(ErrorCode::InternalError, e.clone()),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Call(e) => e.fmt(f),
            RpcError::Refused(e) => write!(f, "not sent: {e}"),
            RpcError::Decode { method, details } => {
                write!(f, "invalid result for {method}: {details}")
            }
            RpcError::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RpcError {}

impl From<CallError> for RpcError {
    fn from(e: CallError) -> Self {
        RpcError::Call(e)
    }
}

/// One outgoing request, as the [`RpcClient`] tower service takes it.
#[derive(Debug, Clone)]
pub struct RpcRequest {
    pub method: String,
    /// Raw JSON params (an object or array), or none.
    pub params: Option<Box<RawValue>>,
    /// The engine-level deadline (the peer is sent `$/cancel_request` when it passes).
    pub timeout: Option<Duration>,
}

impl RpcRequest {
    pub fn new(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        RpcRequest {
            method: method.into(),
            params,
            timeout: None,
        }
    }

    /// A request with serialized params.
    pub fn with_params<P: Serialize + ?Sized>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, RpcError> {
        Ok(RpcRequest::new(method, Some(to_raw(params)?)))
    }

    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
}

/// An incoming request or notification, as the [`RpcService`] receives it.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub method: String,
    pub params: Option<Box<RawValue>>,
    /// The peer's id for a request; `None` for a notification.
    pub id: Option<Id>,
    /// Fires when the peer cancels this request (`$/cancel_request`), when the engine answered
    /// it itself (deadline, `session/cancel`), or when the connection closes.
    pub cancel: CancellationToken,
    /// The connection it came on, to call the peer back.
    pub peer: ConnectionHandle,
}

impl Incoming {
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }
}

// ---------------------------------------------------------------------------------------------
// The handle
// ---------------------------------------------------------------------------------------------

type Reply = oneshot::Sender<Result<Box<RawValue>, RpcError>>;

enum Command {
    Request {
        key: u64,
        method: String,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
        reply: oneshot::Sender<Result<Box<RawValue>, RpcError>>,
    },
    Notify {
        method: String,
        params: Option<Box<RawValue>>,
    },
    Respond {
        token: u64,
        result: Result<Box<RawValue>, ErrorObject>,
        /// The handler's reservation of the answer budget, held until the answer is written.
        reserved: Option<OwnedSemaphorePermit>,
    },
}

/// Commands that bypass backpressure (small, bounded by the number of calls).
enum Control {
    Cancel {
        key: u64,
    },
    Close {
        reason: String,
    },
    /// Close with this reason once everything the peer sent is read (see
    /// [`ConnectionHandle::close_at_eof_with_reason`]).
    CloseAtEof {
        reason: String,
    },
    /// A request handler's task ended without answering (it panicked or was aborted).
    Abandoned {
        token: u64,
    },
    /// The notification queue fell below [`DriverConfig::notification_bytes`]: reading may
    /// resume.
    NotificationsDrained,
}

struct Shared {
    cmd: mpsc::Sender<Command>,
    ctl: mpsc::UnboundedSender<Control>,
    role: Role,
    next_key: AtomicU64,
    /// Client capabilities as the engine read them (agent side), as bits.
    client_caps: AtomicU8,
    closed: watch::Receiver<Option<String>>,
    token: CancellationToken,
    /// Notifications received from the peer (counted by the driver as they arrive).
    notifications_received: AtomicU64,
    /// Notifications the handlers are done with.
    notifications_handled: HandledCounter,
    /// True once the writer wrote everything and shut the transport down (or failed).
    writer_done: watch::Receiver<bool>,
    /// The answer budget (see [`reserve_answer_bytes`]).
    budget: Arc<AnswerBudget>,
    /// Bytes of params of the notifications queued for (or being handled by) the notification
    /// task, and the limit above which reading pauses.
    notification_bytes: AtomicUsize,
    notification_limit: usize,
}

/// A cloneable handle to a driven connection: send requests and notifications, watch it end.
#[derive(Clone)]
pub struct ConnectionHandle {
    // One `Arc`: every incoming message carries a clone (`Incoming::peer`).
    shared: Arc<Shared>,
}

/// How many notifications the handlers are done with; wakes
/// [`ConnectionHandle::notifications_handled`] (only when someone waits: counting is on the
/// path of every notification).
#[derive(Default)]
struct HandledCounter {
    count: AtomicU64,
    waiters: AtomicUsize,
    /// No more notifications will be handled (the notification task ended).
    ended: AtomicBool,
    changed: Notify,
}

impl HandledCounter {
    fn add_one(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.changed.notify_waiters();
        }
    }

    fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    async fn wait_for(&self, target: u64) {
        if self.count.load(Ordering::SeqCst) >= target {
            return;
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiters);
        loop {
            // Created before the check: a `notify_waiters` after it wakes this one.
            let changed = self.changed.notified();
            if self.count.load(Ordering::SeqCst) >= target || self.ended.load(Ordering::SeqCst) {
                return;
            }
            changed.await;
        }
    }
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
    pub fn role(&self) -> Role {
        self.shared.role
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
        };
        self.shared
            .cmd
            .send(cmd)
            .await
            .map_err(|_| self.closed_error())?;
        self.await_reply(key, rx).await
    }

    async fn await_reply(
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

    pub fn is_closed(&self) -> bool {
        self.shared.closed.borrow().is_some() || self.shared.cmd.is_closed()
    }

    /// Resolves once every notification received so far has been handled. Responses are
    /// delivered without waiting for notification handlers (so a notification handler can call
    /// the peer), which means a `session/prompt` result can reach its caller while the turn's
    /// last `session/update`s are still being handled: await this to be sure they were.
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

    /// Agent side: what the client advertised in `initialize` (all false before).
    pub fn client_capabilities(&self) -> ClientCapabilities {
        let bits = self.shared.client_caps.load(Ordering::Relaxed);
        ClientCapabilities {
            read_text_file: bits & 1 != 0,
            write_text_file: bits & 2 != 0,
            terminal: bits & 4 != 0,
        }
    }

    fn closed_error(&self) -> RpcError {
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

// ---------------------------------------------------------------------------------------------
// The outgoing tower service
// ---------------------------------------------------------------------------------------------

/// Outgoing calls as a `tower::Service<RpcRequest>`. `poll_ready` waits for room in the
/// driver's command queue (backpressure); cloning is cheap.
pub struct RpcClient {
    handle: ConnectionHandle,
    sender: PollSender<Command>,
}

impl Clone for RpcClient {
    fn clone(&self) -> Self {
        self.handle.client()
    }
}

impl fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcClient")
            .field("handle", &self.handle)
            .finish()
    }
}

impl RpcClient {
    pub fn handle(&self) -> &ConnectionHandle {
        &self.handle
    }
}

impl Service<RpcRequest> for RpcClient {
    type Response = Box<RawValue>;
    type Error = RpcError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, RpcError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        match self.sender.poll_reserve(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(_)) => Poll::Ready(Err(self.handle.closed_error())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, req: RpcRequest) -> Self::Future {
        let handle = self.handle.clone();
        let (tx, rx) = oneshot::channel();
        let key = handle.shared.next_key.fetch_add(1, Ordering::Relaxed);
        let sent = self.sender.send_item(Command::Request {
            key,
            method: req.method,
            params: req.params,
            timeout: req.timeout,
            reply: tx,
        });
        Box::pin(async move {
            if sent.is_err() {
                return Err(handle.closed_error());
            }
            handle.await_reply(key, rx).await
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The answer budget
// ---------------------------------------------------------------------------------------------

/// A connection's budget of answer bytes (see the module docs, "The answer budget").
struct AnswerBudget {
    /// One permit per byte.
    permits: Arc<Semaphore>,
    /// The budget's size (what a reservation is clamped to).
    total: usize,
    /// How long a reservation may wait without the writer making progress.
    stall: Duration,
    /// Bytes the writer has written so far (progress, for the stall rule).
    written: AtomicU64,
    /// Bytes queued for the transport and not written yet.
    unwritten: AtomicUsize,
    /// When the writer last made progress (or output became pending after none was).
    progress_at: std::sync::Mutex<Instant>,
}

impl AnswerBudget {
    fn new(total: usize, stall: Duration) -> AnswerBudget {
        // `acquire_many` counts in u32: a budget is at most 4 GiB - 1.
        let total = total.clamp(1, u32::MAX as usize);
        AnswerBudget {
            permits: Arc::new(Semaphore::new(total)),
            total,
            stall,
            written: AtomicU64::new(0),
            unwritten: AtomicUsize::new(0),
            progress_at: std::sync::Mutex::new(Instant::now()),
        }
    }
}

/// The reservation of the request handler being polled (set by [`Budgeted`] around each poll).
struct AnswerSlot {
    budget: Arc<AnswerBudget>,
    permit: Option<OwnedSemaphorePermit>,
}

thread_local! {
    /// The slot of the request handler being polled on this thread, if any.
    static CURRENT_ANSWER: std::cell::RefCell<Option<AnswerSlot>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` on the slot of the request handler being polled (`None` outside one).
fn with_current_slot<R>(f: impl FnOnce(Option<&mut AnswerSlot>) -> R) -> R {
    CURRENT_ANSWER.with(|c| f(c.borrow_mut().as_mut()))
}

/// A handler's future with its answer slot: the slot is current while the future is polled,
/// and what it reserved is taken with the result ([`Budgeted::take_reserved`]).
struct Budgeted {
    fut: HandlerFuture,
    /// `None` for notifications (nothing to answer).
    slot: Option<AnswerSlot>,
}

impl Budgeted {
    fn new(fut: HandlerFuture, budget: Option<&Arc<AnswerBudget>>) -> Budgeted {
        Budgeted {
            fut,
            slot: budget.map(|b| AnswerSlot {
                budget: b.clone(),
                permit: None,
            }),
        }
    }

    /// What the handler reserved (to hold until its answer is written).
    fn take_reserved(&mut self) -> Option<OwnedSemaphorePermit> {
        self.slot.as_mut().and_then(|s| s.permit.take())
    }
}

impl Future for Budgeted {
    type Output = Result<Box<RawValue>, ErrorObject>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        /// Puts the slot back where it belongs, even if the handler panics.
        struct Restore<'a> {
            slot: &'a mut Option<AnswerSlot>,
            outer: Option<Option<AnswerSlot>>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                let outer = self.outer.take().unwrap_or_default();
                *self.slot = CURRENT_ANSWER.with(|c| c.replace(outer));
            }
        }
        let this = &mut *self;
        let outer = CURRENT_ANSWER.with(|c| c.replace(this.slot.take()));
        let _restore = Restore {
            slot: &mut this.slot,
            outer: Some(outer),
        };
        this.fut.as_mut().poll(cx)
    }
}

/// A reservation of the answer budget that could not be made: the peer has not read what was
/// already answered (see [`reserve_answer_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerBudgetError {
    /// The bytes asked for.
    pub needed: usize,
    /// The connection's budget ([`DriverConfig::answer_budget`]).
    pub budget: usize,
    /// Bytes written to the peer and not read by it yet (at least those queued here).
    pub unwritten: usize,
    /// How long the writer made no progress.
    pub stalled: Duration,
}

impl fmt::Display for AnswerBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "answer budget exhausted: this answer needs {} bytes of the {}-byte answer budget, \
             which earlier answers still hold ({} bytes of them unread by the peer for {} s)",
            self.needed,
            self.budget,
            self.unwritten,
            self.stalled.as_secs()
        )
    }
}

impl std::error::Error for AnswerBudgetError {}

impl From<AnswerBudgetError> for ErrorObject {
    fn from(e: AnswerBudgetError) -> ErrorObject {
        ErrorObject::new(ErrorCode::InternalError, e.to_string()).with_data(serde_json::json!({
            "reason": "answer_budget",
            "needed": e.needed,
            "budget": e.budget,
        }))
    }
}

/// Inside a request handler: reserves `bytes` of the connection's answer budget for this
/// request's answer, waiting (in order with other reservations) until they are free. Call it
/// before building a large answer, with its serialized size (for text, [`json_string_len`]);
/// the reservation is given back once the answer has been written to the transport, or when
/// the handler ends without an answer.
///
/// `bytes` is clamped to the budget: an answer larger than the whole budget waits until every
/// other reservation is given back, then takes all of it. Calling it again replaces the
/// reservation: a smaller one gives the difference back at once (an estimate made exact); a
/// larger one gives everything back and waits again (never holding while waiting).
///
/// Returns the bytes reserved; `Ok(0)` when called outside a request handler polled by the
/// driver (a notification, a task of its own). Fails when it waited while the writer made no
/// progress for [`DriverConfig::answer_stall`] with output unwritten (the peer does not read):
/// the handler should answer with that error (it converts to a JSON-RPC error naming the
/// limit, `data.reason = "answer_budget"`).
pub async fn reserve_answer_bytes(bytes: usize) -> Result<usize, AnswerBudgetError> {
    enum Next {
        Done(usize),
        Wait(Arc<AnswerBudget>, usize),
    }
    let next = with_current_slot(|slot| {
        let Some(slot) = slot else {
            return Next::Done(0);
        };
        let want = bytes.min(slot.budget.total);
        let held = slot.permit.as_ref().map_or(0, |p| p.num_permits());
        if want <= held && held > 0 {
            if let Some(p) = slot.permit.as_mut() {
                drop(p.split(held - want));
            }
            return Next::Done(want);
        }
        // Never hold while waiting (two handlers each holding part could wait forever).
        slot.permit = None;
        if want == 0 {
            return Next::Done(0);
        }
        Next::Wait(slot.budget.clone(), want)
    });
    let (budget, want) = match next {
        Next::Done(n) => return Ok(n),
        Next::Wait(budget, want) => (budget, want),
    };
    let acquire = budget.permits.clone().acquire_many_owned(want as u32);
    tokio::pin!(acquire);
    // Checked a few times per stall period: it fails within 1.25 periods of the stall.
    let check = (budget.stall / 4).max(Duration::from_millis(1));
    loop {
        tokio::select! {
            permit = &mut acquire => {
                let permit = permit.expect("the budget's semaphore is never closed");
                with_current_slot(|slot| {
                    if let Some(slot) = slot {
                        slot.permit = Some(permit);
                    }
                });
                return Ok(want);
            }
            _ = tokio::time::sleep(check) => {
                let unwritten = budget.unwritten.load(Ordering::Relaxed);
                let since = budget
                    .progress_at
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .elapsed();
                if unwritten > 0 && since >= budget.stall {
                    return Err(AnswerBudgetError {
                        needed: bytes,
                        budget: budget.total,
                        unwritten,
                        stalled: since,
                    });
                }
            }
        }
    }
}

/// The length of `text` serialized as a JSON string, quotes included, exactly as serde_json
/// writes it: `"` and `\` and the controls `\b \t \n \f \r` take 2 bytes, the other controls
/// below 0x20 take 6 (`\u0001`), everything else is copied.
pub fn json_string_len(text: &str) -> usize {
    2 + text.bytes().map(json_escaped_len).sum::<usize>()
}

/// The bytes serde_json writes for byte `b` of a string (see [`json_string_len`]).
pub fn json_escaped_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
        0x00..=0x1f => 6,
        _ => 1,
    }
}

// ---------------------------------------------------------------------------------------------
// Spawning
// ---------------------------------------------------------------------------------------------

/// Starts driving a connection over `reader`/`writer` with `service` answering the peer.
/// Must be called inside a tokio runtime.
pub fn spawn<R, W, S>(reader: R, writer: W, service: S, config: DriverConfig) -> ConnectionHandle
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    spawn_with(reader, writer, config, move |_| service)
}

/// Like [`spawn`], building the service from the handle (so handlers can call the peer).
pub fn spawn_with<R, W, S, F>(
    reader: R,
    writer: W,
    config: DriverConfig,
    make: F,
) -> ConnectionHandle
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
    F: FnOnce(ConnectionHandle) -> S,
{
    let (cmd_tx, cmd_rx) = mpsc::channel(config.command_buffer.max(1));
    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
    let (closed_tx, closed_rx) = watch::channel(None);
    let token = CancellationToken::new();
    let (writer_done_tx, writer_done_rx) = watch::channel(false);
    let handle = ConnectionHandle {
        shared: Arc::new(Shared {
            cmd: cmd_tx,
            ctl: ctl_tx,
            role: config.core.role,
            next_key: AtomicU64::new(0),
            client_caps: AtomicU8::new(0),
            closed: closed_rx,
            token: token.clone(),
            notifications_received: AtomicU64::new(0),
            notifications_handled: HandledCounter::default(),
            writer_done: writer_done_rx,
            budget: Arc::new(AnswerBudget::new(config.answer_budget, config.answer_stall)),
            notification_bytes: AtomicUsize::new(0),
            notification_limit: config.notification_bytes,
        }),
    };
    let service = RpcService::new(make(handle.clone()));

    let (notif_tx, notif_rx) = mpsc::channel(config.notification_buffer.max(1));
    tokio::spawn(notification_loop(
        notif_rx,
        service.clone(),
        handle.shared.clone(),
    ));

    let driver = Driver {
        conn: Connection::new(config.core.clone()),
        start: Instant::now(),
        rbuf: vec![0; config.read_chunk.max(1)],
        config,
        handle: handle.clone(),
        pristine: service.clone(),
        service,
        handlers: HashMap::new(),
        calls: HashMap::new(),
        overflow: VecDeque::new(),
        closed: false,
        eof_deadline: None,
        answer_deadline: None,
        eof_reason: None,
        reading: true,
        notif_poll: PollSender::new(notif_tx.clone()),
        notif_tx,
        closed_tx,
        cmd_rx,
        commands_done: 0,
        deferred: VecDeque::new(),
        ctl_rx,
        reader: Some(reader),
        writer,
        out: Output::default(),
        need_flush: false,
        write_failed: false,
        sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
        sleep_at: None,
    };
    tokio::spawn(driver.run(writer_done_tx));
    handle
}

/// A handler's future, as the service returns it.
type HandlerFuture = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

/// Work for the in-order notification task, and the bytes of its params.
enum NotifWork {
    /// Not started: the task calls the service.
    Call(Incoming, usize),
    /// Started by the driver (polled once inline) and still pending: the task finishes it.
    Started {
        method: String,
        fut: Budgeted,
        bytes: usize,
    },
}

async fn notification_loop(
    mut rx: mpsc::Receiver<NotifWork>,
    mut service: RpcService,
    shared: Arc<Shared>,
) {
    use futures::FutureExt;
    /// Waiters of `notifications_handled` stop waiting once no more will be handled.
    struct Ended(Arc<Shared>);
    impl Drop for Ended {
        fn drop(&mut self) {
            self.0.notifications_handled.end();
        }
    }
    let shared = Ended(shared);
    while let Some(work) = rx.recv().await {
        let (method, r, bytes) = match work {
            NotifWork::Call(n, bytes) => {
                let method = n.method.clone();
                let call = async {
                    match service.ready().await {
                        Ok(s) => s.call(n).await,
                        Err(e) => Err(e),
                    }
                };
                (method, AssertUnwindSafe(call).catch_unwind().await, bytes)
            }
            NotifWork::Started { method, fut, bytes } => {
                (method, AssertUnwindSafe(fut).catch_unwind().await, bytes)
            }
        };
        notification_done(&method, r.map_err(|_| ()));
        shared.0.notifications_handled.add_one();
        let shared = &shared.0;
        let before = shared.notification_bytes.fetch_sub(bytes, Ordering::SeqCst);
        if before >= shared.notification_limit && before - bytes < shared.notification_limit {
            let _ = shared.ctl.send(Control::NotificationsDrained);
        }
    }
}

/// Logs how a notification handler ended (`Err(())`: it panicked).
fn notification_done(method: &str, r: Result<Result<Box<RawValue>, ErrorObject>, ()>) {
    match r {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::debug!(method = %method, "notification handler failed: {e}"),
        Err(()) => tracing::error!(method = %method, "notification handler panicked"),
    }
}

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

/// Output below this size is appended to the previous unwritten buffer (one write for many
/// small messages); larger output is queued as its own buffer (never copied).
const COALESCE: usize = 64 << 10;
/// A written buffer up to this capacity is kept for the next output; larger ones are freed.
const RETAIN: usize = 256 << 10;
/// Rounds of the driver loop per wake-up before it yields to the runtime.
const ROUNDS_PER_WAKE: usize = 64;
/// Local commands taken in one round (their output is then written together).
const COMMANDS_PER_ROUND: usize = 64;

/// Bytes the engine produced and the transport has not taken yet.
#[derive(Default)]
struct Output {
    bufs: VecDeque<Vec<u8>>,
    /// Bytes of `bufs[0]` already written.
    pos: usize,
    /// Unwritten bytes in all of `bufs`.
    len: usize,
    /// An empty buffer to swap with the engine's output buffer (no copy).
    spare: Vec<u8>,
    /// Bytes ever queued / written (offsets for `held`).
    queued_total: u64,
    written_total: u64,
    /// Reservations of the answer budget, each given back once `written_total` reaches its
    /// offset (the end of its answer).
    held: VecDeque<(u64, OwnedSemaphorePermit)>,
}

impl Output {
    /// Takes what the engine has to send.
    fn take_from(&mut self, conn: &mut Connection<u64>) {
        if !conn.poll_transmit_into(&mut self.spare) {
            return;
        }
        let fresh = std::mem::take(&mut self.spare);
        self.len += fresh.len();
        self.queued_total += fresh.len() as u64;
        match self.bufs.back_mut() {
            Some(back) if fresh.len() < COALESCE && back.len() < COALESCE => {
                back.extend_from_slice(&fresh);
                self.recycle(fresh);
            }
            _ => self.bufs.push_back(fresh),
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare.capacity() < buf.capacity() && buf.capacity() <= RETAIN {
            buf.clear();
            self.spare = buf;
        }
    }

    /// Holds `reserved` until everything queued so far is written.
    fn hold_until_written(&mut self, reserved: OwnedSemaphorePermit) {
        if self.len > 0 {
            self.held.push_back((self.queued_total, reserved));
        }
    }

    /// `n` more bytes of the first buffer were written.
    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.len -= n;
        self.written_total += n as u64;
        while self
            .held
            .front()
            .is_some_and(|(end, _)| *end <= self.written_total)
        {
            self.held.pop_front();
        }
        if self.bufs.front().is_some_and(|b| self.pos >= b.len()) {
            self.pos = 0;
            let done = self.bufs.pop_front().expect("checked");
            self.recycle(done);
        }
    }

    fn clear(&mut self) {
        self.bufs.clear();
        self.pos = 0;
        self.len = 0;
        self.written_total = self.queued_total;
        self.held.clear();
    }
}

/// An answer given inline that waits for the commands queued before it: (commands done by
/// then, token, result, its reservation of the answer budget).
type Deferred = (
    u64,
    u64,
    Result<Box<RawValue>, ErrorObject>,
    Option<OwnedSemaphorePermit>,
);

/// The driver task: owns the engine, reads the transport, writes to it, runs the timers, and
/// starts the handlers.
struct Driver<R, W> {
    conn: Connection<u64>,
    start: Instant,
    config: DriverConfig,
    handle: ConnectionHandle,
    service: RpcService,
    /// A clone of the service as built, to start over from if a handler panics inside `call`.
    pristine: RpcService,
    /// Incoming requests being handled: their cancellation tokens.
    handlers: HashMap<u64, CancellationToken>,
    /// Outgoing requests by caller key: the engine's id and where the result goes. (The
    /// engine's caller data is the key: `send_request` drops its data when it refuses a call,
    /// and the refusal must still reach the caller.)
    calls: HashMap<u64, (u64, Reply)>,
    /// Notifications the queue had no room for (reading pauses while any).
    overflow: VecDeque<NotifWork>,
    closed: bool,
    eof_deadline: Option<Instant>,
    /// After EOF: until when requests already received may be answered (see
    /// [`DriverConfig::answer_on_eof`]).
    answer_deadline: Option<Instant>,
    /// The reason to close with at EOF ([`Control::CloseAtEof`]).
    eof_reason: Option<String>,
    reading: bool,
    notif_tx: mpsc::Sender<NotifWork>,
    notif_poll: PollSender<NotifWork>,
    closed_tx: watch::Sender<Option<String>>,
    cmd_rx: mpsc::Receiver<Command>,
    /// Commands processed so far.
    commands_done: u64,
    /// Answers of handlers that finished inline while commands were queued: each waits until
    /// the commands queued before it are processed (`.0`), so that what a handler sent before
    /// answering (its `session/update`s) goes out before its answer, as through the queue.
    deferred: VecDeque<Deferred>,
    ctl_rx: mpsc::UnboundedReceiver<Control>,
    /// The transport (`None` once closed).
    reader: Option<R>,
    rbuf: Vec<u8>,
    writer: W,
    out: Output,
    /// Bytes were written since the last flush.
    need_flush: bool,
    /// Writing failed: output is dropped, the transport is not shut down.
    write_failed: bool,
    /// The next deadline (engine timer, half-close, EOF grace).
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    sleep_at: Option<Instant>,
}

impl<R, W> Driver<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    async fn run(mut self, writer_done: watch::Sender<bool>) {
        std::future::poll_fn(|cx| self.poll_run(cx)).await;
        // Closed: whatever the engine still produced goes out, then the writer shuts down.
        self.drain();
        if !self.overflow.is_empty() {
            // (A blocked notification handler must not keep the transport open.)
            let tx = self.notif_tx.clone();
            let rest = std::mem::take(&mut self.overflow);
            tokio::spawn(async move {
                for n in rest {
                    if tx.send(n).await.is_err() {
                        break;
                    }
                }
            });
        }
        let (mut writer, mut out, failed) = self.into_writer();
        if !failed {
            let r = std::future::poll_fn(|cx| {
                while let Some(front) = out.bufs.front() {
                    match std::pin::Pin::new(&mut writer).poll_write(cx, &front[out.pos..]) {
                        Poll::Ready(Ok(0)) => return Poll::Ready(Err(write_zero())),
                        Poll::Ready(Ok(n)) => out.advance(n),
                        Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                Poll::Ready(Ok(()))
            })
            .await;
            if r.is_ok() && writer.flush().await.is_ok() {
                let _ = writer.shutdown().await;
            }
        }
        drop(writer);
        writer_done.send_replace(true);
    }

    /// Keeps only what writing the rest needs; the reader and everything else is dropped.
    fn into_writer(self) -> (W, Output, bool) {
        (self.writer, self.out, self.write_failed)
    }

    /// One wake-up of the driver: rounds of (control, deadlines, writing, notification queue,
    /// reading, commands) until nothing makes progress; `Ready` once closed.
    fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        for _ in 0..ROUNDS_PER_WAKE {
            if self.settle() {
                return Poll::Ready(());
            }
            if let Some(until) = self.answer_deadline {
                // Half-closed: every request received is answered (or the time is up).
                if self.handlers.is_empty() || Instant::now() >= until {
                    self.answer_deadline = None;
                    self.input_ended();
                    continue;
                }
                // The handlers' own calls to the peer can never be answered: fail them now
                // rather than keep the handlers waiting until the deadline.
                for (_, (_, reply)) in self.calls.drain() {
                    let _ = reply.send(Err(half_closed()));
                }
            }
            let mut progress = false;

            // Local control (not subject to backpressure).
            if let Poll::Ready(Some(c)) = self.ctl_rx.poll_recv(cx) {
                if matches!(c, Control::Close { .. }) {
                    // What was handed to the connection before the close goes first (an
                    // answer already given is sent as given, not as "connection closing").
                    while let Ok(cmd) = self.cmd_rx.try_recv() {
                        self.on_command(cmd);
                    }
                }
                self.on_control(c);
                progress = true;
                if self.settle() {
                    return Poll::Ready(());
                }
            }

            // Deadlines.
            if self.poll_deadline(cx) {
                progress = true;
                if self.settle() {
                    return Poll::Ready(());
                }
            }

            // Writing (before reading, so that what we owe goes out first).
            if self.poll_write(cx) {
                progress = true;
                if self.settle() {
                    return Poll::Ready(());
                }
            }

            // Notifications waiting for room in the notification queue.
            while !self.overflow.is_empty() {
                match self.notif_poll.poll_reserve(cx) {
                    Poll::Ready(Ok(())) => {
                        let n = self.overflow.pop_front().expect("non-empty");
                        let _ = self.notif_poll.send_item(n);
                    }
                    Poll::Ready(Err(_)) => self.overflow.clear(),
                    Poll::Pending => break,
                }
                progress = true;
            }

            // Reading.
            if self.may_read() {
                let reader = self.reader.as_mut().expect("reading");
                let mut buf = tokio::io::ReadBuf::new(&mut self.rbuf);
                match std::pin::Pin::new(reader).poll_read(cx, &mut buf) {
                    Poll::Ready(Ok(())) => {
                        let n = buf.filled().len();
                        if n == 0 {
                            self.on_eof();
                        } else {
                            let now = self.now();
                            self.conn.handle_bytes(&self.rbuf[..n], now);
                        }
                        progress = true;
                    }
                    Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
                        progress = true;
                    }
                    Poll::Ready(Err(e)) => {
                        self.fail(format!("reading from the peer failed: {e}"));
                        progress = true;
                    }
                    Poll::Pending => {}
                }
                if progress && self.settle() {
                    return Poll::Ready(());
                }
            }

            // Local commands (requests, notifications, answers), while below the high-water
            // mark. Their output is written at the start of the next round, in this wake-up.
            let mut taken = 0;
            while taken < COMMANDS_PER_ROUND && self.accepting() {
                match self.cmd_rx.poll_recv(cx) {
                    Poll::Ready(Some(c)) => {
                        self.on_command(c);
                        self.take_output();
                        taken += 1;
                    }
                    _ => break,
                }
            }
            if taken > 0 {
                progress = true;
            }

            if !progress {
                return Poll::Pending;
            }
        }
        // Plenty done: let other tasks run, then go on.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// The drain rule; true once closed.
    fn settle(&mut self) -> bool {
        self.drain();
        self.closed
    }

    fn accepting(&self) -> bool {
        !self.closed && self.out.len < self.config.write_high_water
    }

    fn may_read(&self) -> bool {
        self.reading
            && !self.closed
            && self.eof_deadline.is_none()
            && self.overflow.is_empty()
            && self.out.len < self.config.read_pause_bytes
            && self.handle.shared.notification_bytes.load(Ordering::SeqCst)
                < self.handle.shared.notification_limit
    }

    /// Arms the timer for the next deadline and handles those that passed; true if any did.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> bool {
        let engine = self
            .conn
            .poll_timeout()
            .map(|ms| self.start + Duration::from_millis(ms));
        let next = [engine, self.answer_deadline, self.eof_deadline]
            .into_iter()
            .flatten()
            .min();
        let Some(at) = next else {
            return false;
        };
        if self.sleep_at != Some(at) {
            self.sleep.as_mut().reset(at);
            self.sleep_at = Some(at);
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return false;
        }
        self.sleep_at = None;
        let now = Instant::now();
        if engine.is_some_and(|t| t <= now) {
            let ms = self.now();
            self.conn.handle_timeout(ms);
        }
        if self.eof_deadline.is_some_and(|t| t <= now) {
            let ms = self.now();
            self.conn.handle_eof(ms);
        }
        // (A passed half-close deadline is seen at the top of the next round.)
        true
    }

    /// Writes what it can of the output, then flushes; true if anything moved (or failed).
    fn poll_write(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        while let Some(front) = self.out.bufs.front() {
            match std::pin::Pin::new(&mut self.writer).poll_write(cx, &front[self.out.pos..]) {
                Poll::Ready(Ok(0)) => {
                    self.write_error(write_zero());
                    return true;
                }
                Poll::Ready(Ok(n)) => {
                    self.out.advance(n);
                    self.need_flush = true;
                    progress = true;
                }
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => {
                    self.write_error(e);
                    return true;
                }
                Poll::Pending => return progress,
            }
        }
        if self.need_flush {
            match std::pin::Pin::new(&mut self.writer).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.need_flush = false;
                    progress = true;
                }
                Poll::Ready(Err(e)) => {
                    self.write_error(e);
                    return true;
                }
                Poll::Pending => {}
            }
        }
        progress
    }

    fn write_error(&mut self, e: std::io::Error) {
        self.write_failed = true;
        self.need_flush = false;
        self.out.clear();
        self.fail(format!("writing to the peer failed: {e}"));
    }

    fn on_eof(&mut self) {
        self.reading = false;
        // A final unterminated line counts (as `handle_eof` would); the requests read so far
        // may still be answered (see `DriverConfig::answer_on_eof`).
        let now = self.now();
        self.conn.handle_bytes(b"\n", now);
        self.answer_deadline = Some(Instant::now() + self.config.answer_on_eof);
    }

    /// The input ended and the requests received are answered: close (after the grace).
    fn input_ended(&mut self) {
        if let Some(reason) = self.eof_reason.take() {
            self.close_with(reason);
        } else if self.config.eof_grace.is_zero() {
            let now = self.now();
            self.conn.handle_eof(now);
        } else {
            self.eof_deadline = Some(Instant::now() + self.config.eof_grace);
        }
    }

    /// A transport failure: close with that reason.
    fn fail(&mut self, reason: String) {
        self.reading = false;
        self.close_with(reason);
    }

    fn close_with(&mut self, reason: String) {
        if self.conn.is_closed() {
            return;
        }
        if !self.reading {
            // The input has ended: process a final unterminated line, as `handle_eof` would,
            // then close with our reason (`handle_eof`'s is fixed). A close while the input is
            // still open drops a partial line, as `Connection::close` does.
            let now = self.now();
            self.conn.handle_bytes(b"\n", now);
        }
        self.conn.close(&reason);
    }

    fn on_control(&mut self, c: Control) {
        match c {
            Control::Cancel { key } => {
                if let Some((id, _)) = self.calls.get(&key) {
                    let _ = self.conn.cancel(*id);
                }
            }
            Control::Close { reason } => self.close_with(reason),
            Control::CloseAtEof { reason } => {
                if self.eof_deadline.is_some() {
                    // The input ended already and waits for a reason: here it is.
                    self.close_with(reason);
                } else {
                    self.eof_reason = Some(reason);
                }
            }
            // Nothing to do: waking up re-checks whether reading may resume.
            Control::NotificationsDrained => {}
            Control::Abandoned { token } => {
                if self.handlers.remove(&token).is_some() {
                    let e = ErrorObject::internal("the request handler ended without answering");
                    let _ = self.conn.respond_error(token, e);
                }
            }
        }
    }

    fn on_command(&mut self, c: Command) {
        self.run_command(c);
        self.commands_done += 1;
        while let Some((after, token, result, reserved)) = self.deferred.pop_front() {
            if after > self.commands_done {
                self.deferred.push_front((after, token, result, reserved));
                break;
            }
            self.handlers.remove(&token);
            self.answer(token, result, reserved);
        }
    }

    fn run_command(&mut self, c: Command) {
        match c {
            Command::Request {
                key,
                method,
                params,
                timeout,
                reply,
            } => {
                if reply.is_closed() {
                    return; // the caller is gone already
                }
                if self.answer_deadline.is_some() {
                    let _ = reply.send(Err(half_closed()));
                    return;
                }
                let mut opts = RequestOptions::with_data(key);
                opts.timeout = timeout.map(duration_ms);
                let now = self.now();
                match self
                    .conn
                    .send_request(&method, params.as_deref(), opts, now)
                {
                    Ok(id) => {
                        self.calls.insert(key, (id, reply));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(refused(e)));
                    }
                }
            }
            Command::Notify { method, params } => {
                if let Err(e) = self.conn.notify(&method, params.as_deref()) {
                    tracing::debug!(method, "notification not sent: {e}");
                }
            }
            Command::Respond {
                token,
                result,
                reserved,
            } => {
                self.handlers.remove(&token);
                self.answer(token, result, reserved);
            }
        }
    }

    /// Hands a handler's answer to the engine; its reservation of the answer budget is held
    /// until the answer is written.
    fn answer(
        &mut self,
        token: u64,
        result: Result<Box<RawValue>, ErrorObject>,
        reserved: Option<OwnedSemaphorePermit>,
    ) {
        let r = match result {
            Ok(raw) => self.conn.respond(token, &raw),
            Err(e) => self.conn.respond_error(token, e),
        };
        if let Err(e) = r {
            tracing::debug!(token, "response not sent: {e}");
        }
        if let Some(reserved) = reserved {
            self.take_output();
            self.out.hold_until_written(reserved);
        }
    }

    /// Drains the engine's events and output (the drain rule).
    fn drain(&mut self) {
        while let Some(ev) = self.conn.poll_event() {
            self.on_event(ev);
        }
        self.publish_caps();
        self.take_output();
    }

    fn publish_caps(&self) {
        let caps = self.conn.client_capabilities();
        let bits = u8::from(caps.read_text_file)
            | (u8::from(caps.write_text_file) << 1)
            | (u8::from(caps.terminal) << 2);
        self.handle
            .shared
            .client_caps
            .store(bits, Ordering::Relaxed);
    }

    /// Moves what the engine has to send into the output (dropped once writing failed).
    fn take_output(&mut self) {
        self.out.take_from(&mut self.conn);
        if self.write_failed {
            self.out.clear();
        }
        self.publish_progress();
    }

    /// Tells waiting reservations of the answer budget how the writer is doing.
    fn publish_progress(&self) {
        let budget = &self.handle.shared.budget;
        let wrote = budget
            .written
            .swap(self.out.written_total, Ordering::Relaxed)
            != self.out.written_total;
        let started = budget.unwritten.swap(self.out.len, Ordering::Relaxed) == 0;
        if wrote || (started && self.out.len > 0) {
            *budget.progress_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
    }

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

    fn queue_notification(&mut self, n: NotifWork) {
        let bytes = match &n {
            NotifWork::Call(_, bytes) | NotifWork::Started { bytes, .. } => *bytes,
        };
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

    fn on_event(&mut self, ev: Event<u64>) {
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
                // In order: run it here only if every earlier one is done.
                let idle = self.overflow.is_empty()
                    && shared.notifications_handled.count.load(Ordering::SeqCst) == before;
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
                if let Some((_, tx)) = self.calls.remove(&data) {
                    let _ = tx.send(result.map_err(RpcError::Call));
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

fn write_zero() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::WriteZero,
        "failed to write whole buffer",
    )
}

/// A call made (or pending) after the peer closed its end: no answer can come.
fn half_closed() -> RpcError {
    RpcError::Call(CallError::Closed {
        reason: "the peer closed the connection".into(),
    })
}

fn refused(e: acp_core::Error) -> RpcError {
    RpcError::Refused(e)
}

/// Milliseconds of a duration, rounded up (a deadline of 0.5 ms is not "now").
pub(crate) fn duration_ms(d: Duration) -> Millis {
    let ms = d.as_millis();
    let ms = if Duration::from_millis(ms as u64) < d {
        ms + 1
    } else {
        ms
    };
    ms.min(u128::from(u64::MAX)) as Millis
}

/// Serializes params to raw JSON.
pub fn to_raw<P: Serialize + ?Sized>(p: &P) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(p)
        .map_err(|e| RpcError::Refused(acp_core::Error::InvalidParams(e.to_string())))
}

/// Decodes a raw result.
pub fn decode<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, RpcError> {
    serde_json::from_str(raw.get()).map_err(|e| RpcError::Decode {
        method: method.to_owned(),
        details: e.to_string(),
    })
}
