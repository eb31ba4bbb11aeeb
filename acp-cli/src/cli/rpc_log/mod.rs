//! The `--log-rpc` file: a tap on the agent's stream, a pure observer that exists only when
//! the log is asked for (`acp chat` reads each message once otherwise, in the engine).
//!
//! `acp chat`'s stream wrappers (`cli/watch.rs`) show the [`Tap`] every byte in both
//! directions, so the log shows exactly what went over the wire, whatever the engine made of
//! it. Each complete line becomes one JSON line in the log:
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
//! Here: the [`Tap`]; `file.rs` the private log file; `pending.rs` the bounded table of
//! requests awaiting an answer.

mod file;
mod pending;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use acp_core::framing::{Decoder, Frame};
use acp_core::jsonrpc::{each_message, Envelope};
use acp_core::RawValue;
use serde::Serialize;
use serde_json::json;

use file::open_private;
use pending::Pending;

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

/// The `--log-rpc` log: each line seen, in both directions, as one JSON line.
pub struct Tap {
    start: Instant,
    log: Mutex<LogFile>,
    state: Mutex<TapState>,
}

struct LogFile {
    out: BufWriter<File>,
}

struct TapState {
    /// The line decoder per direction: the engine's, with its limit.
    decoders: [Decoder; 2],
    /// Requests awaiting a response, per direction they were sent in.
    pending: [Pending; 2],
}

impl Tap {
    /// A tap logging to `log_path`; lines are cut as an engine with this
    /// `max_message_bytes` cuts them.
    pub fn new(log_path: &Path, max_message_bytes: usize) -> io::Result<Arc<Tap>> {
        Ok(Arc::new(Tap {
            start: Instant::now(),
            log: Mutex::new(LogFile {
                out: BufWriter::new(open_private(log_path)?),
            }),
            state: Mutex::new(TapState {
                decoders: [
                    Decoder::new(max_message_bytes),
                    Decoder::new(max_message_bytes),
                ],
                pending: Default::default(),
            }),
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
            Frame::Oversize { limit, prefix } => self.oversize(dir, limit, prefix),
        }
    }

    /// A line over the limit: the engine skips it (and answers it if it was a request).
    fn oversize(&self, dir: Dir, limit: usize, prefix: &[u8]) {
        let now = Instant::now();
        let start: String = String::from_utf8_lossy(prefix).chars().take(200).collect();
        let e = json!({
            "tMs": ms(now - self.start), "dir": dir.name(), "kind": "oversize",
            "limit": limit, "start": start,
        });
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
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
        let t_ms = ms(now - self.start);
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        // Each message's envelope is read as the line is parsed (one pass, nothing built but
        // the few fields the log shows: a 60 MB message costs no more than its line).
        let parsed = each_message(text, |raw, in_batch| {
            let msg = Message::read(raw);
            let entry = self.entry(state, dir, now, t_ms, &msg, in_batch);
            let _ = serde_json::to_writer(&mut log.out, &entry);
            let _ = log.out.write_all(b"\n");
        });
        if parsed.is_err() {
            let entry = json!({
                "tMs": t_ms, "dir": dir.name(), "kind": "invalid", "line": text,
            });
            let _ = serde_json::to_writer(&mut log.out, &entry);
            let _ = log.out.write_all(b"\n");
        }
        let _ = log.out.flush();
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
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
