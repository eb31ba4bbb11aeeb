//! The driver task: owns the engine, reads the transport, writes to it, runs the timers and
//! takes local commands (see the module docs of [`crate::driver`]). What it does with the
//! engine's events is in `dispatch.rs`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::{Connection, ErrorObject, Millis, RawValue, RequestOptions};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, PollSender};

use super::error::{half_closed, refused};
use super::notifications::NotifWork;
use super::output::{write_zero, Output};
use super::shared::{Command, Control, Reply};
use super::{duration_ms, ConnectionHandle, DriverConfig, RpcService};

/// Rounds of the driver loop per wake-up before it yields to the runtime.
const ROUNDS_PER_WAKE: usize = 64;
/// Local commands taken in one round (their output is then written together).
const COMMANDS_PER_ROUND: usize = 64;

/// An answer given inline that waits for the commands queued before it: (commands done by
/// then, token, result, its reservation of the answer budget).
pub(super) type Deferred = (
    u64,
    u64,
    Result<Box<RawValue>, ErrorObject>,
    Option<OwnedSemaphorePermit>,
);

/// The driver task: owns the engine, reads the transport, writes to it, runs the timers, and
/// starts the handlers.
pub(super) struct Driver<R, W> {
    pub(super) conn: Connection<u64>,
    pub(super) start: Instant,
    pub(super) config: DriverConfig,
    pub(super) handle: ConnectionHandle,
    pub(super) service: RpcService,
    /// A clone of the service as built, to start over from if a handler panics inside `call`.
    pub(super) pristine: RpcService,
    /// Incoming requests being handled: their cancellation tokens.
    pub(super) handlers: HashMap<u64, CancellationToken>,
    /// Outgoing requests by caller key: the engine's id and where the result goes. (The
    /// engine's caller data is the key: `send_request` drops its data when it refuses a call,
    /// and the refusal must still reach the caller.)
    /// Calls awaiting their answer, by key: the engine's id, the reply, and whether the answer
    /// is handed over in wire order (`Command::Request::ordered`).
    pub(super) calls: HashMap<u64, (u64, Reply, bool)>,
    /// Notifications the queue had no room for (reading pauses while any).
    pub(super) overflow: VecDeque<NotifWork>,
    pub(super) closed: bool,
    pub(super) eof_deadline: Option<Instant>,
    /// After EOF: until when requests already received may be answered (see
    /// [`DriverConfig::answer_on_eof`]).
    pub(super) answer_deadline: Option<Instant>,
    /// The reason to close with at EOF ([`Control::CloseAtEof`]).
    pub(super) eof_reason: Option<String>,
    pub(super) reading: bool,
    pub(super) notif_tx: mpsc::Sender<NotifWork>,
    pub(super) notif_poll: PollSender<NotifWork>,
    pub(super) closed_tx: watch::Sender<Option<String>>,
    pub(super) cmd_rx: mpsc::Receiver<Command>,
    /// Commands processed so far.
    pub(super) commands_done: u64,
    /// Answers of handlers that finished inline while commands were queued: each waits until
    /// the commands queued before it are processed (`.0`), so that what a handler sent before
    /// answering (its `session/update`s) goes out before its answer, as through the queue.
    pub(super) deferred: VecDeque<Deferred>,
    pub(super) ctl_rx: mpsc::UnboundedReceiver<Control>,
    /// The transport (`None` once closed).
    pub(super) reader: Option<R>,
    pub(super) rbuf: Vec<u8>,
    pub(super) writer: W,
    pub(super) out: Output,
    /// Bytes were written since the last flush.
    pub(super) need_flush: bool,
    /// Writing failed: output is dropped, the transport is not shut down.
    pub(super) write_failed: bool,
    /// The next deadline (engine timer, half-close, EOF grace).
    pub(super) sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    pub(super) sleep_at: Option<Instant>,
}

impl<R, W> Driver<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    pub(super) fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    pub(super) async fn run(mut self, writer_done: watch::Sender<bool>) {
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
                for (_, (_, reply, _)) in self.calls.drain() {
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
                // Read into the buffer's spare capacity: never zero-filled, so only what reads
                // have written is resident (an idle connection holds a page, not 64 KiB).
                self.rbuf.clear();
                match tokio_util::io::poll_read_buf(std::pin::Pin::new(reader), cx, &mut self.rbuf)
                {
                    Poll::Ready(Ok(n)) => {
                        if n == 0 {
                            self.on_eof();
                        } else {
                            let now = self.now();
                            self.conn.handle_bytes(&self.rbuf, now);
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
        if self.handlers.is_empty() {
            // No request of the peer's to answer: the input has ended now. (Waiting for the
            // next round would let calls made meanwhile fail with a generic "the peer closed
            // the connection" instead of the reason `eof_grace` waits for.)
            self.input_ended();
        } else {
            self.answer_deadline = Some(Instant::now() + self.config.answer_on_eof);
        }
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
                if let Some((id, _, _)) = self.calls.get(&key) {
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
                ordered,
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
                        self.calls.insert(key, (id, reply, ordered));
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
    pub(super) fn answer(
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
        // Published before the events are handed over: a caller given the `initialize`
        // answer reads the version and capabilities it settled (`protocol_version`).
        self.publish_caps();
        while let Some(ev) = self.conn.poll_event() {
            self.on_event(ev);
        }
        self.publish_caps();
        self.take_output();
    }

    pub(super) fn publish_caps(&self) {
        self.handle
            .shared
            .advertised
            .store(self.conn.advertised().to_bits(), Ordering::Relaxed);
        self.handle
            .shared
            .protocol_version
            .store(self.conn.protocol_version(), Ordering::Relaxed);
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
}
