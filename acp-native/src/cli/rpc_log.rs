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
//! ```
//!
//! `tMs` counts from the start of the command; `elapsedMs` is the time from a request to its
//! response, in either direction (`method` is the request's).
//!
//! Lines are cut exactly as the engine cuts them (the same [`acp_core::framing::Decoder`], with
//! the connection's `max_message_bytes`): a valid message of any size up to the limit is one
//! line here too, and a longer one is logged as `oversize` (the engine skips and answers it)
//! instead of as pieces of "not JSON".

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use acp_core::framing::{Decoder, Frame};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

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
    /// Requests awaiting a response, per direction they were sent in: id -> (time, method).
    pending: [HashMap<String, (Instant, String)>; 2],
    warnings: u32,
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
                out: BufWriter::new(File::create(p)?),
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
            }),
            updates: AtomicU64::new(0),
            last_received: Mutex::new(None),
        }))
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
        let parsed: Option<Value> = serde_json::from_str(text).ok();
        if dir == Dir::Recv {
            *self.last_received.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            let is_update = |m: &Value| {
                m.get("method").and_then(Value::as_str) == Some("session/update")
                    && m.get("id").is_none()
            };
            let n = match &parsed {
                Some(Value::Array(batch)) => batch.iter().filter(|m| is_update(m)).count(),
                Some(m) => usize::from(is_update(m)),
                None => 0,
            };
            self.updates.fetch_add(n as u64, Ordering::SeqCst);
        }
        if parsed.is_none() && dir == Dir::Recv {
            if let Some(warn) = &self.warn {
                if state.warnings < MAX_WARNINGS {
                    state.warnings += 1;
                    let shown: String = text.chars().take(200).collect();
                    let _ = warn.send(Warning::NotJson(shown));
                }
            }
        }
        let Some(log) = &self.log else { return };
        let t_ms = ms(now - self.start);
        let mut entries = Vec::new();
        match &parsed {
            None => entries.push(json!({
                "tMs": t_ms, "dir": dir.name(), "kind": "invalid", "line": text,
            })),
            Some(Value::Array(batch)) => {
                for msg in batch {
                    entries.push(self.entry(state, dir, now, t_ms, msg, true));
                }
            }
            Some(msg) => entries.push(self.entry(state, dir, now, t_ms, msg, false)),
        }
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries {
            let _ = serde_json::to_writer(&mut log.out, &e);
            let _ = log.out.write_all(b"\n");
        }
        let _ = log.out.flush();
    }

    fn entry(
        &self,
        state: &mut TapState,
        dir: Dir,
        now: Instant,
        t_ms: f64,
        msg: &Value,
        in_batch: bool,
    ) -> Value {
        let id = msg.get("id").filter(|v| !v.is_null());
        let method = msg.get("method").and_then(Value::as_str);
        let mut e = json!({ "tMs": t_ms, "dir": dir.name() });
        let kind = match (method, id) {
            (Some(m), Some(id)) => {
                state.pending[dir as usize].insert(id.to_string(), (now, m.to_owned()));
                e["method"] = json!(m);
                "request"
            }
            (Some(m), None) => {
                e["method"] = json!(m);
                "notification"
            }
            (None, _) => {
                // A response answers a request that went the other way.
                let other = match dir {
                    Dir::Send => Dir::Recv,
                    Dir::Recv => Dir::Send,
                };
                if let Some((at, m)) =
                    id.and_then(|id| state.pending[other as usize].remove(&id.to_string()))
                {
                    e["method"] = json!(m);
                    e["elapsedMs"] = json!(ms(now - at));
                }
                if msg.get("error").is_some() {
                    "error"
                } else {
                    "response"
                }
            }
        };
        e["kind"] = json!(kind);
        if let Some(id) = id {
            e["id"] = id.clone();
        }
        if in_batch {
            e["batch"] = json!(true);
        }
        e["msg"] = msg.clone();
        e
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_are_logged_with_response_times() {
        let dir = std::env::temp_dir().join(format!("acp-rpc-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.ndjson");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tap = Tap::new(Some(&path), Some(tx), 1 << 20).unwrap();
        tap.bytes(
            Dir::Send,
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
        );
        tap.bytes(Dir::Send, b"\n");
        let reply = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}
not json
"#;
        for b in reply.chunks(7) {
            tap.bytes(Dir::Recv, b);
        }
        tap.bytes(
            Dir::Recv,
            br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
        );
        tap.eof(Dir::Recv);
        let log = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4, "{log}");
        assert_eq!(lines[0]["kind"], "request");
        assert_eq!(lines[1]["kind"], "response");
        assert_eq!(lines[1]["method"], "initialize");
        assert!(lines[1]["elapsedMs"].as_f64().unwrap() >= 0.0);
        assert_eq!(lines[2]["kind"], "invalid");
        assert_eq!(lines[3]["kind"], "notification");
        assert_eq!(rx.try_recv().unwrap(), Warning::NotJson("not json".into()));
        assert_eq!(tap.updates_received(), 1);
        assert!(rx.try_recv().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A valid message longer than any read (and than the old 1 MiB cut) is one message:
    /// no warning, and a `session/update` is counted. One over the limit is reported as such
    /// (not as "not JSON") and the next line is read normally, as the engine does.
    #[test]
    fn lines_are_cut_as_the_engine_cuts_them() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let limit = 4 << 20;
        let tap = Tap::new(None, Some(tx), limit).unwrap();
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(3 << 20)
        );
        for chunk in big.as_bytes().chunks(64 << 10) {
            tap.bytes(Dir::Recv, chunk);
        }
        assert!(rx.try_recv().is_err(), "a valid 3 MiB message was reported");
        assert_eq!(tap.updates_received(), 1);
        let over = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}\n",
            "y".repeat(limit)
        );
        for chunk in over.as_bytes().chunks(64 << 10) {
            tap.bytes(Dir::Recv, chunk);
        }
        match rx.try_recv().unwrap() {
            Warning::Oversize { limit: l, start } => {
                assert_eq!(l, limit);
                assert!(
                    start.starts_with("{\"jsonrpc\":\"2.0\",\"id\":1"),
                    "{start}"
                );
            }
            w => panic!("expected an oversize warning, got {w:?}"),
        }
        tap.bytes(
            Dir::Recv,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n",
        );
        assert!(rx.try_recv().is_err());
        assert_eq!(tap.updates_received(), 2);
    }
}
