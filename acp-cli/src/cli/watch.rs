//! What `acp chat` (and `acp login`) notice of the agent's stream without reading its messages: a line that
//! cannot be a JSON-RPC message (what an agent prints to stdout by mistake: a banner, a log
//! line) or that is over the size limit, and when the agent last wrote anything (a turn is not
//! silent while it writes). [`Watch`] looks at each line's ends and length only: the messages
//! themselves are read once, by the engine (and, with `--log-rpc`, by the log's [`Tap`]).
//!
//! [`AgentReader`] and [`AgentWriter`] wrap the transport halves handed to the driver (the
//! agent's stdio, or a remote agent's link): the reader shows every byte to the [`Watch`],
//! and both show them to the `--log-rpc` [`Tap`] when there is one.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use crate::cli::rpc_log::{Dir, Tap};

/// What the agent wrote that the engine will not take as a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A line that cannot be a JSON-RPC message: it does not start with `{` or `[`, or does
    /// not end with `}` or `]` (its first 200 characters).
    NotJson(String),
    /// A line longer than the limit (skipped by the engine, which answers it if it was a
    /// request): its first 200 characters.
    Oversize { limit: usize, start: String },
}

/// How many warnings are passed on before going quiet.
const MAX_WARNINGS: u32 = 3;
/// Characters of a line a warning shows.
const SHOWN_CHARS: usize = 200;
/// Bytes of a line kept for its warning (enough for [`SHOWN_CHARS`] characters).
const KEPT_BYTES: usize = SHOWN_CHARS * 4;

/// The agent's stream, line by line, as far as the warnings and the silence limit need.
pub struct Watch {
    start: Instant,
    /// Milliseconds from `start` to the last bytes received, plus one (0: none yet).
    last_received: AtomicU64,
    warn: UnboundedSender<Warning>,
    line: Mutex<Line>,
}

/// The line being read: its length, its first bytes, its last byte that is not white space.
struct Line {
    limit: usize,
    len: usize,
    kept: Vec<u8>,
    first: Option<u8>,
    last: Option<u8>,
    /// Over the limit (said once; the rest of it is skipped, as the engine skips it).
    oversize: bool,
    warnings: u32,
}

impl Watch {
    /// A watch cutting lines as an engine with this `max_message_bytes` cuts them, telling
    /// `warn` what is not a message.
    pub fn new(max_message_bytes: usize, warn: UnboundedSender<Warning>) -> Arc<Watch> {
        Arc::new(Watch {
            start: Instant::now(),
            last_received: AtomicU64::new(0),
            warn,
            line: Mutex::new(Line {
                limit: max_message_bytes,
                len: 0,
                kept: Vec::new(),
                first: None,
                last: None,
                oversize: false,
                warnings: 0,
            }),
        })
    }

    /// When the agent last wrote anything (even what is not a message).
    pub fn last_received(&self) -> Option<Instant> {
        match self.last_received.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(self.start + Duration::from_millis(ms - 1)),
        }
    }

    /// Bytes the agent wrote.
    pub fn bytes(&self, mut bytes: &[u8]) {
        let ms = self.start.elapsed().as_millis() as u64 + 1;
        self.last_received.fetch_max(ms, Ordering::Relaxed);
        let mut line = self.line.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(nl) = memchr::memchr(b'\n', bytes) {
            line.take(&bytes[..nl]);
            self.end_of_line(&mut line);
            bytes = &bytes[nl + 1..];
        }
        line.take(bytes);
        if line.len > line.limit && !line.oversize {
            line.oversize = true;
            let start = shown(&line.kept);
            let limit = line.limit;
            self.tell(&mut line, Warning::Oversize { limit, start });
        }
    }

    /// The stream ended: an unterminated last line counts too.
    pub fn eof(&self) {
        let mut line = self.line.lock().unwrap_or_else(|e| e.into_inner());
        self.end_of_line(&mut line);
    }

    fn end_of_line(&self, line: &mut Line) {
        let (first, last) = (line.first, line.last);
        let warning = if line.len > line.limit {
            (!line.oversize).then(|| Warning::Oversize {
                limit: line.limit,
                start: shown(&line.kept),
            })
        } else {
            match (first, last) {
                // Blank.
                (None, _) => None,
                (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']')) => None,
                _ => Some(Warning::NotJson(shown(&line.kept))),
            }
        };
        line.len = 0;
        line.kept.clear();
        line.first = None;
        line.last = None;
        line.oversize = false;
        if let Some(w) = warning {
            self.tell(line, w);
        }
    }

    fn tell(&self, line: &mut Line, warning: Warning) {
        if line.warnings < MAX_WARNINGS {
            line.warnings += 1;
            let _ = self.warn.send(warning);
        }
    }
}

impl Line {
    /// A piece of the current line (no newline in it).
    fn take(&mut self, piece: &[u8]) {
        self.len += piece.len();
        if self.kept.len() < KEPT_BYTES {
            let room = KEPT_BYTES - self.kept.len();
            self.kept.extend_from_slice(&piece[..piece.len().min(room)]);
        }
        let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
        if self.first.is_none() {
            self.first = piece.iter().find(|b| !blank(b)).copied();
        }
        if let Some(b) = piece.iter().rev().find(|b| !blank(b)) {
            self.last = Some(*b);
        }
    }
}

/// The first [`SHOWN_CHARS`] characters of a line, without its line ending.
fn shown(kept: &[u8]) -> String {
    let text = String::from_utf8_lossy(kept);
    text.trim_end_matches('\r')
        .chars()
        .take(SHOWN_CHARS)
        .collect()
}

/// The agent's output as the driver reads it, shown to the [`Watch`] (and to the `--log-rpc`
/// [`Tap`], if any) as it is read.
pub struct AgentReader<R> {
    inner: R,
    watch: Arc<Watch>,
    tap: Option<Arc<Tap>>,
}

impl<R> AgentReader<R> {
    pub fn new(inner: R, watch: Arc<Watch>, tap: Option<Arc<Tap>>) -> Self {
        AgentReader { inner, watch, tap }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for AgentReader<R> {
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
                self.watch.eof();
                if let Some(tap) = &self.tap {
                    tap.eof(Dir::Recv);
                }
            } else {
                self.watch.bytes(new);
                if let Some(tap) = &self.tap {
                    tap.bytes(Dir::Recv, new);
                }
            }
        }
        r
    }
}

/// What the driver writes to the agent, shown to the `--log-rpc` [`Tap`] (if any).
pub struct AgentWriter<W> {
    inner: W,
    tap: Option<Arc<Tap>>,
}

impl<W> AgentWriter<W> {
    pub fn new(inner: W, tap: Option<Arc<Tap>>) -> Self {
        AgentWriter { inner, tap }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for AgentWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(tap)) = (&r, &self.tap) {
            tap.bytes(Dir::Send, &buf[..*n]);
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

    fn watch(limit: usize) -> (Arc<Watch>, tokio::sync::mpsc::UnboundedReceiver<Warning>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Watch::new(limit, tx), rx)
    }

    /// Lines split anywhere are whole lines; what cannot be a message is said (its start,
    /// without the line ending), messages and blank lines are not; an unterminated last line
    /// counts at the end.
    #[test]
    fn lines_that_cannot_be_messages_are_reported() {
        let (w, mut rx) = watch(1 << 20);
        assert!(w.last_received().is_none());
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\r\nnot json\r\n\n  \t\n[{\"a\":1}]\n  {\"b\":2}  \n";
        for piece in input.chunks(3) {
            w.bytes(piece);
        }
        assert!(w.last_received().is_some());
        assert_eq!(rx.try_recv().unwrap(), Warning::NotJson("not json".into()));
        assert!(rx.try_recv().is_err());
        // Cut short (the agent died mid-write): not a message.
        w.bytes(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/upd");
        assert!(rx.try_recv().is_err());
        w.eof();
        assert_eq!(
            rx.try_recv().unwrap(),
            Warning::NotJson("{\"jsonrpc\":\"2.0\",\"method\":\"session/upd".into())
        );
        // Three warnings, then quiet.
        w.bytes(b"a\nb\nc\n");
        assert_eq!(rx.try_recv().unwrap(), Warning::NotJson("a".into()));
        assert!(rx.try_recv().is_err());
    }

    /// A valid message longer than any read is one line: no warning. One over the limit is
    /// reported as such (not as "not JSON") as soon as it crosses it, once, with its start;
    /// the next line is read normally, as the engine does. A long line keeps only its start.
    #[test]
    fn lines_are_cut_as_the_engine_cuts_them() {
        let limit = 4 << 20;
        let (w, mut rx) = watch(limit);
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"text\":\"{}\"}}}}\n",
            "x".repeat(3 << 20)
        );
        for chunk in big.as_bytes().chunks(64 << 10) {
            w.bytes(chunk);
        }
        assert!(rx.try_recv().is_err(), "a valid 3 MiB message was reported");
        let over = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}\n",
            "y".repeat(limit)
        );
        let (head, tail) = over.as_bytes().split_at(limit + 10);
        for chunk in head.chunks(64 << 10) {
            w.bytes(chunk);
        }
        match rx.try_recv().unwrap() {
            Warning::Oversize { limit: l, start } => {
                assert_eq!(l, limit);
                assert!(
                    start.starts_with("{\"jsonrpc\":\"2.0\",\"id\":1"),
                    "{start}"
                );
                assert_eq!(start.chars().count(), SHOWN_CHARS);
            }
            w => panic!("expected an oversize warning, got {w:?}"),
        }
        assert!(w.line.lock().unwrap().kept.len() <= KEPT_BYTES);
        w.bytes(tail);
        w.bytes(b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n");
        assert!(
            rx.try_recv().is_err(),
            "said once; the next line is a message"
        );
    }
}
