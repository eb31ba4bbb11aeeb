//! Taps on the agent's stdio: the `--log-rpc` file and the "agent wrote garbage" warning.
//!
//! [`TapReader`] and [`TapWriter`] wrap the transport halves handed to the driver and see
//! every byte in both directions, so the log shows exactly what went over the wire, whatever
//! the engine made of it. Each complete line becomes one JSON line in the log:
//!
//! ```json
//! {"tMs":12.5,"dir":"send","kind":"request","id":0,"method":"initialize","msg":{...}}
//! {"tMs":20.1,"dir":"recv","kind":"response","id":0,"method":"initialize","elapsedMs":7.6,"msg":{...}}
//! {"tMs":30.0,"dir":"recv","kind":"invalid","line":"hello, I am not JSON"}
//! {"tMs":31.0,"dir":"recv","kind":"invalid","msg":{"id":1,"id":2},"why":"duplicate field `id` at line 1 column 12"}
//! ```
//!
//! `tMs` counts from the start of the command; `elapsedMs` is the time from a request to its
//! response, in either direction (`method` is the request's). Each message's envelope is read
//! as the engine reads it, with acp-core's [`Envelope`] (batches entry by entry with
//! [`each_message`]): `kind` is `request`, `notification`, `response` or `error`; `invalid` is
//! a line that is not JSON (`line`: its text) or a message whose envelope the engine refuses
//! (not an object, a member given twice: `msg` as written, `why`), which the engine answers
//! with Invalid Request instead of taking it.
//!
//! Lines are cut exactly as the engine cuts them (the same [`acp_core::framing::Decoder`], with
//! the connection's `max_message_bytes`): a valid message of any size up to the limit is one
//! line here too, and a longer one is logged as `oversize` (the engine skips and answers it)
//! instead of as pieces of "not JSON".
//!
//! Here: the [`Tap`] and the stream wrappers that feed it ([`TapReader`], [`TapWriter`]);
//! `file.rs` the private log file; `pending.rs` the bounded table of requests awaiting an
//! answer.

mod file;
mod pending;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use acp_core::framing::{Decoder, Frame};
use acp_core::jsonrpc::{each_message, Envelope};
use acp_core::RawValue;
use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use file::open_private;
use pending::{truncate, Pending, MAX_KEPT_TEXT};

/// Direction of a message, from this process's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Send,
    Recv,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::Send => "send",
            Dir::Recv => "recv",
        }
    }
}

/// What the taps do with each line.
pub struct Tap {
    start: Instant,
    log: Option<Mutex<LogFile>>,
    /// Told (once per line, at most [`MAX_WARNINGS`] times) when the peer sends a line that is
    /// not JSON, or one over the size limit.
    warn: Option<UnboundedSender<Warning>>,
    state: Mutex<TapState>,
    /// `session/update` notifications received so far (see [`Tap::updates_received`]).
    updates: AtomicU64,
    /// When the last line came from the peer.
    last_received: Mutex<Option<Instant>>,
}

/// What the peer wrote that the engine will not take as a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A line that is not JSON (its first 200 characters).
    NotJson(String),
    /// A line longer than the limit (skipped by the engine, which answers it if it was a
    /// request): its first 200 characters.
    Oversize { limit: usize, start: String },
}

/// How many warnings are passed on before going quiet.
const MAX_WARNINGS: u32 = 3;

struct LogFile {
    out: BufWriter<File>,
}

struct TapState {
    /// The line decoder per direction: the engine's, with its limit.
    decoders: [Decoder; 2],
    /// Requests awaiting a response, per direction they were sent in.
    pending: [Pending; 2],
    warnings: u32,
    /// The last `session/load` sent (see [`Tap::load_replay`]).
    load: Option<LoadWindow>,
}

/// Where the replay of a `session/load` lies in the count of `session/update`s received.
struct LoadWindow {
    /// The request's id, as written.
    id: String,
    /// Updates received before the request was sent.
    from: u64,
    /// Updates received before its answer, once it came.
    to: Option<u64>,
}

impl Tap {
    /// A tap logging to `log_path` (if any) and reporting non-JSON input on `warn` (if any);
    /// lines are cut as an engine with this `max_message_bytes` cuts them.
    pub fn new(
        log_path: Option<&Path>,
        warn: Option<UnboundedSender<Warning>>,
        max_message_bytes: usize,
    ) -> io::Result<Arc<Tap>> {
        let log = match log_path {
            Some(p) => Some(Mutex::new(LogFile {
                out: BufWriter::new(open_private(p)?),
            })),
            None => None,
        };
        Ok(Arc::new(Tap {
            start: Instant::now(),
            log,
            warn,
            state: Mutex::new(TapState {
                decoders: [
                    Decoder::new(max_message_bytes),
                    Decoder::new(max_message_bytes),
                ],
                pending: Default::default(),
                warnings: 0,
                load: None,
            }),
            updates: AtomicU64::new(0),
            last_received: Mutex::new(None),
        }))
    }

    /// Requests awaiting a response in the log's table (both directions), and the records
    /// of their order.
    #[cfg(test)]
    fn pending_entries(&self) -> (usize, usize) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let held = state.pending.iter().map(Pending::held);
        held.fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    }

    /// When the peer last sent a line (anything, even invalid).
    pub fn last_received(&self) -> Option<Instant> {
        *self.last_received.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many `session/update` notifications have arrived. The tap sees bytes before the
    /// driver does, so once a prompt's response is in, this counts every update sent before
    /// it: the UI renders until it has shown that many, and no late chunk is lost.
    pub fn updates_received(&self) -> u64 {
        self.updates.load(Ordering::SeqCst)
    }

    /// The replay of the last `session/load` sent, as positions in the count of
    /// [`Tap::updates_received`]: the updates numbered `from..to` (counting from 0) came
    /// after the request went out and before its answer (`to` is `None` until the answer
    /// is in). The tap sees the wire in order, so this holds however late the driver hands
    /// the updates and the answer over.
    pub fn load_replay(&self) -> Option<(u64, Option<u64>)> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.load.as_ref().map(|w| (w.from, w.to))
    }

    /// Feeds bytes seen going `dir`.
    pub fn bytes(&self, dir: Dir, bytes: &[u8]) {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        let mut decoder = std::mem::replace(&mut state.decoders[dir as usize], Decoder::new(1));
        decoder.decode(bytes, &mut |frame| self.frame(state, dir, frame));
        state.decoders[dir as usize] = decoder;
    }

    /// The stream in direction `dir` ended: a final unterminated line counts too.
    pub fn eof(&self, dir: Dir) {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        let mut decoder = std::mem::replace(&mut state.decoders[dir as usize], Decoder::new(1));
        decoder.finish(&mut |frame| self.frame(state, dir, frame));
        state.decoders[dir as usize] = decoder;
    }

    fn frame(&self, state: &mut TapState, dir: Dir, frame: Frame<'_>) {
        match frame {
            Frame::Line(line) => self.line(state, dir, line),
            Frame::Oversize { limit, prefix } => self.oversize(state, dir, limit, prefix),
        }
    }

    /// A line over the limit: the engine skips it (and answers it if it was a request).
    fn oversize(&self, state: &mut TapState, dir: Dir, limit: usize, prefix: &[u8]) {
        let now = Instant::now();
        let start: String = String::from_utf8_lossy(prefix).chars().take(200).collect();
        if dir == Dir::Recv {
            *self.last_received.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            if let Some(warn) = &self.warn {
                if state.warnings < MAX_WARNINGS {
                    state.warnings += 1;
                    let _ = warn.send(Warning::Oversize {
                        limit,
                        start: start.clone(),
                    });
                }
            }
        }
        let Some(log) = &self.log else { return };
        let e = json!({
            "tMs": ms(now - self.start), "dir": dir.name(), "kind": "oversize",
            "limit": limit, "start": start,
        });
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = serde_json::to_writer(&mut log.out, &e);
        let _ = log.out.write_all(b"\n");
        let _ = log.out.flush();
    }

    fn line(&self, state: &mut TapState, dir: Dir, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            return;
        }
        let now = Instant::now();
        if dir == Dir::Recv {
            *self.last_received.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        }
        let t_ms = ms(now - self.start);
        let mut log = self
            .log
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
        // Each message's envelope is read as the line is parsed (one pass, nothing built but
        // the few fields the log shows: a 60 MB message costs no more than its line).
        let mut updates = 0;
        let before = self.updates.load(Ordering::SeqCst);
        let parsed = each_message(text, |raw, in_batch| {
            let msg = Message::read(raw);
            if msg.is_update() {
                updates += 1;
            }
            let id = msg.id.map(RawValue::get).filter(|id| *id != "null");
            match (dir, msg.method.as_deref(), id) {
                (Dir::Send, Some("session/load"), Some(id)) => {
                    state.load = Some(LoadWindow {
                        id: truncate(id, MAX_KEPT_TEXT).to_string(),
                        from: before,
                        to: None,
                    });
                }
                (Dir::Recv, None, Some(id)) => {
                    if let Some(w) = state.load.as_mut().filter(|w| w.to.is_none()) {
                        if w.id == id {
                            w.to = Some(before + updates);
                        }
                    }
                }
                _ => {}
            }
            if let Some(log) = log.as_deref_mut() {
                let entry = self.entry(state, dir, now, t_ms, &msg, in_batch);
                let _ = serde_json::to_writer(&mut log.out, &entry);
                let _ = log.out.write_all(b"\n");
            }
        });
        if dir == Dir::Recv {
            self.updates.fetch_add(updates, Ordering::SeqCst);
        }
        if parsed.is_err() {
            if dir == Dir::Recv {
                if let Some(warn) = &self.warn {
                    if state.warnings < MAX_WARNINGS {
                        state.warnings += 1;
                        let shown: String = text.chars().take(200).collect();
                        let _ = warn.send(Warning::NotJson(shown));
                    }
                }
            }
            if let Some(log) = log.as_deref_mut() {
                let entry = json!({
                    "tMs": t_ms, "dir": dir.name(), "kind": "invalid", "line": text,
                });
                let _ = serde_json::to_writer(&mut log.out, &entry);
                let _ = log.out.write_all(b"\n");
            }
        }
        if let Some(log) = log.as_deref_mut() {
            let _ = log.out.flush();
        }
    }

    fn entry<'m>(
        &self,
        state: &mut TapState,
        dir: Dir,
        now: Instant,
        t_ms: f64,
        msg: &'m Message<'m>,
        in_batch: bool,
    ) -> LogEntry<'m> {
        if let Some(why) = &msg.refused {
            return LogEntry {
                t_ms,
                dir: dir.name(),
                kind: "invalid",
                id: None,
                method: None,
                elapsed_ms: None,
                batch: in_batch,
                msg: msg.raw,
                why: Some(why),
            };
        }
        let id = msg.id.filter(|id| id.get() != "null");
        let method = msg.method.as_deref();
        let mut e = LogEntry {
            t_ms,
            dir: dir.name(),
            kind: "response",
            id,
            method: method.map(Cow::Borrowed),
            elapsed_ms: None,
            batch: in_batch,
            msg: msg.raw,
            why: None,
        };
        e.kind = match (method, id) {
            (Some(m), Some(id)) => {
                state.pending[dir as usize].insert(id.get(), now, m);
                "request"
            }
            (Some(_), None) => "notification",
            (None, _) => {
                // A response answers a request that went the other way.
                let other = match dir {
                    Dir::Send => Dir::Recv,
                    Dir::Recv => Dir::Send,
                };
                if let Some((at, m)) =
                    id.and_then(|id| state.pending[other as usize].remove(id.get()))
                {
                    e.method = Some(Cow::Owned(m));
                    e.elapsed_ms = Some(ms(now - at));
                }
                if msg.is_error {
                    "error"
                } else {
                    "response"
                }
            }
        };
        e
    }
}

/// One line of the `--log-rpc` file for one message.
#[derive(Serialize)]
struct LogEntry<'a> {
    #[serde(rename = "tMs")]
    t_ms: f64,
    dir: &'static str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<Cow<'a, str>>,
    #[serde(rename = "elapsedMs", skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    batch: bool,
    /// The message as it went over the wire.
    msg: &'a RawValue,
    /// Why the engine refuses it (kind `invalid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'a str>,
}

/// What the tap reads of one JSON-RPC message: the fields it logs and counts, borrowed from
/// the line, read by acp-core's [`Envelope`] (nothing else is built).
struct Message<'a> {
    /// The whole message, as written.
    raw: &'a RawValue,
    /// `id`, if present (even `null`), as written.
    id: Option<&'a RawValue>,
    /// `method`, if it is a string.
    method: Option<Cow<'a, str>>,
    /// Whether it has an `error` member.
    is_error: bool,
    /// Why its envelope does not parse (not an object, a member given twice): the engine
    /// answers it with Invalid Request instead of taking it.
    refused: Option<String>,
}

impl<'a> Message<'a> {
    /// Reads the envelope of one (valid JSON) message.
    fn read(raw: &'a RawValue) -> Message<'a> {
        match Envelope::parse(raw.get()) {
            Ok(env) => Message {
                raw,
                id: env.id_raw(),
                method: env.method(),
                is_error: env.error().is_some(),
                refused: None,
            },
            Err(e) => Message {
                raw,
                id: None,
                method: None,
                is_error: false,
                refused: Some(e.to_string()),
            },
        }
    }

    /// A `session/update` notification (no `id` at all, as the engine reads it).
    fn is_update(&self) -> bool {
        self.id.is_none() && self.method.as_deref() == Some("session/update")
    }
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// An [`AsyncRead`] that shows everything it reads to a [`Tap`] as [`Dir::Recv`].
pub struct TapReader<R> {
    inner: R,
    tap: Arc<Tap>,
}

impl<R> TapReader<R> {
    pub fn new(inner: R, tap: Arc<Tap>) -> Self {
        TapReader { inner, tap }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for TapReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let new = &buf.filled()[before..];
            if new.is_empty() {
                self.tap.eof(Dir::Recv);
            } else {
                self.tap.bytes(Dir::Recv, new);
            }
        }
        r
    }
}

/// An [`AsyncWrite`] that shows everything written through it to a [`Tap`] as [`Dir::Send`].
pub struct TapWriter<W> {
    inner: W,
    tap: Arc<Tap>,
}

impl<W> TapWriter<W> {
    pub fn new(inner: W, tap: Arc<Tap>) -> Self {
        TapWriter { inner, tap }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for TapWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.tap.bytes(Dir::Send, &buf[..n]);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
