//! The driver: the async loop around one [`acp_core::Connection`].
//!
//! One task (the *driver*) owns the sans-IO connection. Around it:
//!
//! * a **reader task** reads the transport and hands chunks to the driver (bounded channel),
//!   which feeds them to [`Connection::handle_bytes`] with a millisecond clock taken from
//!   `tokio::time::Instant` (so `tokio::time::pause` works in tests);
//! * a **writer task** writes what the engine produced. The driver counts bytes handed to the
//!   writer and not yet written; above [`DriverConfig::write_high_water`] it stops taking local
//!   commands (requests, notifications, responses), so callers wait in `send`: a peer that does
//!   not read cannot make this process buffer without bound;
//! * the engine's deadline ([`Connection::poll_timeout`]) is a tokio timer that calls
//!   [`Connection::handle_timeout`];
//! * **incoming requests** are each handled on their own spawned task (concurrently), so a slow
//!   handler, or one awaiting a call to the peer, never blocks the reader;
//! * **incoming notifications** go, in order, through a bounded queue to a single task that
//!   calls the service for one at a time.
//!
//! ## The notification contract
//!
//! Notifications are handled one at a time, in arrival order. While a notification handler
//! runs, reading goes on (responses, requests and further notifications keep flowing) until
//! [`DriverConfig::notification_buffer`] notifications are queued behind it; then the driver
//! stops reading the transport until the queue drains. So a notification handler may await
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
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::acp::ClientCapabilities;
use acp_core::{
    AutoAnswerReason, CallError, Config, Connection, ErrorCode, ErrorObject, Event, Id, Millis,
    RawValue, RequestOptions, Role,
};
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
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
    /// Bytes handed to the writer and not yet written above which local commands wait. 1 MiB.
    pub write_high_water: usize,
    /// Above this many unwritten bytes the driver also stops reading (bounds what a peer that
    /// floods us without reading our answers can make us buffer). 16 MiB.
    pub read_pause_bytes: usize,
    /// Notifications queued for the in-order notification handler before reading pauses. 1024.
    pub notification_buffer: usize,
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
            command_buffer: 64,
            read_chunk: 64 << 10,
            eof_grace: Duration::ZERO,
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
}

enum WriterMsg {
    Written(usize),
    Failed(String),
}

enum ReadMsg {
    Bytes(Vec<u8>),
    Eof,
    Failed(String),
}

struct Shared {
    role: Role,
    next_key: AtomicU64,
    /// Client capabilities as the engine read them (agent side), as bits.
    client_caps: AtomicU8,
    closed: watch::Receiver<Option<String>>,
    token: CancellationToken,
    /// Notifications received from the peer (counted by the driver as they arrive).
    notifications_received: AtomicU64,
    /// Notifications the notification handler is done with.
    notifications_handled: watch::Receiver<u64>,
    /// True once the writer wrote everything and shut the transport down (or failed).
    writer_done: watch::Receiver<bool>,
}

/// A cloneable handle to a driven connection: send requests and notifications, watch it end.
#[derive(Clone)]
pub struct ConnectionHandle {
    cmd: mpsc::Sender<Command>,
    ctl: mpsc::UnboundedSender<Control>,
    shared: Arc<Shared>,
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
        self.cmd.send(cmd).await.map_err(|_| self.closed_error())?;
        self.await_reply(key, rx).await
    }

    async fn await_reply(
        &self,
        key: u64,
        rx: oneshot::Receiver<Result<Box<RawValue>, RpcError>>,
    ) -> Result<Box<RawValue>, RpcError> {
        let mut guard = CancelOnDrop {
            key,
            ctl: Some(&self.ctl),
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
        self.cmd
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
        let method = crate::router::ext_name(method);
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
        self.notify(crate::router::ext_name(method), Some(to_raw(&params)?))
            .await
    }

    /// The outgoing side as a cloneable `tower::Service`, to stack `timeout`, `retry`,
    /// `concurrency_limit`, `buffer`...
    pub fn client(&self) -> RpcClient {
        RpcClient {
            handle: self.clone(),
            sender: PollSender::new(self.cmd.clone()),
        }
    }

    /// Closes the connection: pending incoming requests are answered, pending outgoing calls
    /// fail with [`CallError::Closed`] carrying `reason`, the transport is flushed and shut.
    /// Also the way to give an EOF a better reason (see [`DriverConfig::eof_grace`]).
    pub fn close_with_reason(&self, reason: impl Into<String>) {
        let _ = self.ctl.send(Control::Close {
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
        let _ = self.ctl.send(Control::CloseAtEof {
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
        self.shared.closed.borrow().is_some() || self.cmd.is_closed()
    }

    /// Resolves once every notification received so far has been handled. Responses are
    /// delivered without waiting for notification handlers (so a notification handler can call
    /// the peer), which means a `session/prompt` result can reach its caller while the turn's
    /// last `session/update`s are still being handled: await this to be sure they were.
    pub fn notifications_handled(&self) -> impl Future<Output = ()> + Send + 'static {
        let target = self.shared.notifications_received.load(Ordering::Acquire);
        let mut rx = self.shared.notifications_handled.clone();
        async move {
            let _ = rx.wait_for(|n| *n >= target).await;
        }
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
    let (handled_tx, handled_rx) = watch::channel(0);
    let (writer_done_tx, writer_done_rx) = watch::channel(false);
    let handle = ConnectionHandle {
        cmd: cmd_tx,
        ctl: ctl_tx,
        shared: Arc::new(Shared {
            role: config.core.role,
            next_key: AtomicU64::new(0),
            client_caps: AtomicU8::new(0),
            closed: closed_rx,
            token: token.clone(),
            notifications_received: AtomicU64::new(0),
            notifications_handled: handled_rx,
            writer_done: writer_done_rx,
        }),
    };
    let service = RpcService::new(make(handle.clone()));

    let (read_tx, read_rx) = mpsc::channel(4);
    tokio::spawn(read_loop(
        reader,
        read_tx,
        config.read_chunk.max(1),
        token.clone(),
    ));
    let (write_tx, write_rx) = mpsc::unbounded_channel();
    let (written_tx, written_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        write_loop(writer, write_rx, written_tx).await;
        writer_done_tx.send_replace(true);
    });
    let (notif_tx, notif_rx) = mpsc::channel(config.notification_buffer.max(1));
    tokio::spawn(notification_loop(notif_rx, service.clone(), handled_tx));

    let driver = Driver {
        conn: Connection::new(config.core.clone()),
        start: Instant::now(),
        config,
        handle: handle.clone(),
        service,
        handlers: HashMap::new(),
        calls: HashMap::new(),
        overflow: VecDeque::new(),
        unwritten: 0,
        out: Vec::new(),
        closed: false,
        eof_deadline: None,
        answer_deadline: None,
        eof_reason: None,
        reading: true,
        write_tx: Some(write_tx),
        notif_tx,
        closed_tx,
    };
    tokio::spawn(driver.run(read_rx, cmd_rx, ctl_rx, written_rx));
    handle
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    tx: mpsc::Sender<ReadMsg>,
    chunk: usize,
    token: CancellationToken,
) {
    let mut buf = vec![0u8; chunk];
    loop {
        let r = tokio::select! {
            _ = token.cancelled() => return,
            r = reader.read(&mut buf) => r,
        };
        let msg = match r {
            Ok(0) => ReadMsg::Eof,
            Ok(n) => ReadMsg::Bytes(buf[..n].to_vec()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => ReadMsg::Failed(format!("reading from the peer failed: {e}")),
        };
        let last = !matches!(msg, ReadMsg::Bytes(_));
        if tx.send(msg).await.is_err() || last {
            return;
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    done: mpsc::UnboundedSender<WriterMsg>,
) {
    const COALESCE: usize = 64 << 10;
    let mut failed = false;
    while let Some(mut buf) = rx.recv().await {
        if failed {
            let _ = done.send(WriterMsg::Written(buf.len()));
            continue;
        }
        while buf.len() < COALESCE {
            match rx.try_recv() {
                Ok(more) => buf.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        let r = async {
            writer.write_all(&buf).await?;
            writer.flush().await
        }
        .await;
        let _ = done.send(WriterMsg::Written(buf.len()));
        if let Err(e) = r {
            failed = true;
            let _ = done.send(WriterMsg::Failed(format!(
                "writing to the peer failed: {e}"
            )));
        }
    }
    if !failed {
        let _ = writer.shutdown().await;
    }
}

async fn notification_loop(
    mut rx: mpsc::Receiver<Incoming>,
    mut service: RpcService,
    handled: watch::Sender<u64>,
) {
    use futures::FutureExt;
    while let Some(n) = rx.recv().await {
        let method = n.method.clone();
        let call = async {
            match service.ready().await {
                Ok(s) => s.call(n).await,
                Err(e) => Err(e),
            }
        };
        match std::panic::AssertUnwindSafe(call).catch_unwind().await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::debug!(method = %method, "notification handler failed: {e}"),
            Err(_) => tracing::error!(method = %method, "notification handler panicked"),
        }
        handled.send_modify(|n| *n += 1);
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

struct Driver {
    conn: Connection<u64>,
    start: Instant,
    config: DriverConfig,
    handle: ConnectionHandle,
    service: RpcService,
    /// Incoming requests being handled: their cancellation tokens.
    handlers: HashMap<u64, CancellationToken>,
    /// Outgoing requests by caller key: the engine's id and where the result goes. (The
    /// engine's caller data is the key: `send_request` drops its data when it refuses a call,
    /// and the refusal must still reach the caller.)
    calls: HashMap<u64, (u64, Reply)>,
    /// Notifications the queue had no room for (reading pauses while any).
    overflow: VecDeque<Incoming>,
    /// Bytes handed to the writer and not yet written.
    unwritten: usize,
    out: Vec<u8>,
    closed: bool,
    eof_deadline: Option<Instant>,
    /// After EOF: until when requests already received may be answered (see
    /// [`DriverConfig::answer_on_eof`]).
    answer_deadline: Option<Instant>,
    /// The reason to close with at EOF ([`Control::CloseAtEof`]).
    eof_reason: Option<String>,
    reading: bool,
    write_tx: Option<mpsc::UnboundedSender<Vec<u8>>>,
    notif_tx: mpsc::Sender<Incoming>,
    closed_tx: watch::Sender<Option<String>>,
}

impl Driver {
    fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    async fn run(
        mut self,
        mut read_rx: mpsc::Receiver<ReadMsg>,
        mut cmd_rx: mpsc::Receiver<Command>,
        mut ctl_rx: mpsc::UnboundedReceiver<Control>,
        mut written_rx: mpsc::UnboundedReceiver<WriterMsg>,
    ) {
        loop {
            self.drain();
            if self.closed {
                // (Queued notifications are handed over below: a blocked notification handler
                // must not keep the transport open.)
                break;
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
            let answering = self.answer_deadline;
            let accept = !self.closed && self.unwritten < self.config.write_high_water;
            let read = self.reading
                && !self.closed
                && self.eof_deadline.is_none()
                && self.overflow.is_empty()
                && self.unwritten < self.config.read_pause_bytes;
            let timer = self
                .conn
                .poll_timeout()
                .map(|ms| self.start + Duration::from_millis(ms));
            let eof = self.eof_deadline;
            let notif = (!self.overflow.is_empty()).then(|| self.notif_tx.clone());
            // Unbiased: neither a peer flooding us nor local senders can starve the other.
            tokio::select! {
                Some(c) = ctl_rx.recv() => {
                    if matches!(c, Control::Close { .. }) {
                        // What was handed to the connection before the close goes first (an
                        // answer already given is sent as given, not as "connection closing").
                        while let Ok(cmd) = cmd_rx.try_recv() {
                            self.on_command(cmd);
                        }
                    }
                    self.on_control(c)
                }
                Some(w) = written_rx.recv() => match w {
                    WriterMsg::Written(n) => self.unwritten = self.unwritten.saturating_sub(n),
                    WriterMsg::Failed(reason) => self.fail(reason),
                },
                permit = async { notif.as_ref().expect("checked").reserve().await }, if notif.is_some() => match permit {
                    Ok(p) => p.send(self.overflow.pop_front().expect("non-empty")),
                    Err(_) => self.overflow.clear(),
                },
                _ = tokio::time::sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                    let now = self.now();
                    self.conn.handle_timeout(now);
                }
                _ = tokio::time::sleep_until(answering.unwrap_or_else(Instant::now)), if answering.is_some() => {}
                _ = tokio::time::sleep_until(eof.unwrap_or_else(Instant::now)), if eof.is_some() => {
                    let now = self.now();
                    self.conn.handle_eof(now);
                }
                msg = read_rx.recv(), if read => match msg {
                    Some(ReadMsg::Bytes(b)) => {
                        let now = self.now();
                        self.conn.handle_bytes(&b, now);
                    }
                    Some(ReadMsg::Eof) | None => self.on_eof(),
                    Some(ReadMsg::Failed(reason)) => self.fail(reason),
                },
                Some(c) = cmd_rx.recv(), if accept => self.on_command(c),
            }
        }
        // Closed: whatever the engine still produced goes out, then the writer shuts down.
        self.flush();
        drop(self.write_tx.take());
        if !self.overflow.is_empty() {
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
            Control::Abandoned { token } => {
                if self.handlers.remove(&token).is_some() {
                    let e = ErrorObject::internal("the request handler ended without answering");
                    let _ = self.conn.respond_error(token, e);
                }
            }
        }
    }

    fn on_command(&mut self, c: Command) {
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
            Command::Respond { token, result } => {
                self.handlers.remove(&token);
                let r = match result {
                    Ok(raw) => self.conn.respond(token, &raw),
                    Err(e) => self.conn.respond_error(token, e),
                };
                if let Err(e) = r {
                    tracing::debug!(token, "response not sent: {e}");
                }
            }
        }
    }

    /// Drains the engine's events and output (the drain rule).
    fn drain(&mut self) {
        while let Some(ev) = self.conn.poll_event() {
            self.on_event(ev);
        }
        let caps = self.conn.client_capabilities();
        let bits = u8::from(caps.read_text_file)
            | (u8::from(caps.write_text_file) << 1)
            | (u8::from(caps.terminal) << 2);
        self.handle
            .shared
            .client_caps
            .store(bits, Ordering::Relaxed);
        self.flush();
    }

    fn flush(&mut self) {
        if self.conn.poll_transmit_into(&mut self.out) {
            let buf = std::mem::take(&mut self.out);
            if let Some(tx) = &self.write_tx {
                self.unwritten += buf.len();
                if tx.send(buf).is_err() {
                    self.unwritten = 0;
                }
            }
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
                let mut service = self.service.clone();
                let cmd = self.handle.cmd.clone();
                let guard = AnswerGuard {
                    token,
                    ctl: Some(self.handle.ctl.clone()),
                };
                tokio::spawn(async move {
                    let mut guard = guard; // moved in whole: dropped when the task ends
                    let result = match service.ready().await {
                        Ok(s) => s.call(incoming).await,
                        Err(e) => Err(e),
                    };
                    if cmd.send(Command::Respond { token, result }).await.is_ok() {
                        guard.ctl = None;
                    }
                });
            }
            Event::Notification { method, params } => {
                self.handle
                    .shared
                    .notifications_received
                    .fetch_add(1, Ordering::AcqRel);
                let n = Incoming {
                    method,
                    params,
                    id: None,
                    // The connection's own token (a notification cannot be cancelled alone).
                    cancel: self.handle.shared.token.clone(),
                    peer: self.handle.clone(),
                };
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
            }
        }
    }
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
