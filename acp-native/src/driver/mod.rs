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
//! anything (its own calls to the peer included: their answers are not held behind it) as long
//! as the peer sends fewer than `notification_buffer` notifications in the meantime; a handler that waits for *later notifications* or for unbounded work must spawn
//! it instead. Request handlers are never subject to this: they run concurrently.
//!
//! ## Order
//!
//! What the peer sends reaches the application in the order it was sent: **the answer to a
//! call is handed to its caller only after every notification that arrived before it has been
//! handled**, so when `session/prompt` or `session/load` returns, the turn's or the replay's
//! `session/update`s have all gone through the notification handler. When no notification is
//! queued or running (the usual case) an answer is handed over at once, on the driver; otherwise
//! it waits in the notification queue behind them (its bytes counted with theirs, so reading
//! pauses as for notifications). Notifications that arrive after an answer wait for it in turn.
//! One exception keeps a notification handler from waiting on itself: the calls a notification
//! handler makes (polled inside its future) are answered at once, whatever is queued. (A
//! notification handler that waits for a call made elsewhere, on a task it spawned or by a
//! request handler, can wait for an answer queued behind it: spawn that work instead.)
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

mod answer_budget; // the answer budget: `reserve_answer_bytes`
mod config; // `DriverConfig`
mod dispatch; // the engine's events: starting handlers, completing calls
mod error; // `RpcError`
mod handle; // `ConnectionHandle`
mod incoming; // `Incoming`, `RpcService`
mod json; // serde helpers, JSON string lengths
mod notifications; // the in-order notification task
mod output; // the output queue
mod rpc_client; // `RpcClient` (a `tower::Service`), `RpcRequest`
mod shared; // what handles and the tasks share: commands, `Shared`, the handled count
mod task; // the driver task: its loop, reading, writing, deadlines, commands

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicUsize};
use std::sync::Arc;

use acp_core::{Connection, ErrorObject, RawValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, PollSender};
use tower::Service;

#[cfg(doc)] // (for links in the docs)
use acp_core::{CallError, Config};

pub use answer_budget::{reserve_answer_bytes, AnswerBudgetError};
pub(crate) use config::duration_ms;
pub use config::DriverConfig;
pub use error::RpcError;
pub use handle::ConnectionHandle;
pub use incoming::{Incoming, RpcService};
pub use json::{decode, json_escaped_len, json_string_len, to_raw};
pub use rpc_client::{RpcClient, RpcRequest};

use answer_budget::AnswerBudget;
use notifications::notification_loop;
use output::Output;
use shared::{HandledCounter, Shared};
use task::Driver;

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
            advertised: AtomicU32::new(0),
            protocol_version: AtomicU16::new(1),
            enforce_capabilities: config.core.enforce_capabilities,
            closed: closed_rx,
            token: token.clone(),
            notifications_received: AtomicU64::new(0),
            notifications_handled: HandledCounter::default(),
            deliveries_queued: AtomicU64::new(0),
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
        rbuf: Vec::with_capacity(config.read_chunk.max(1)),
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
