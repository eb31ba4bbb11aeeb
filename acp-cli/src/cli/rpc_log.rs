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

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use acp_core::framing::{Decoder, Frame};
use acp_core::RawValue;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

/// Opens the `--log-rpc` file for writing, private: the log holds secrets (`--mcp-config`'s
/// headers and variables, the text of every file the agent read).
///
/// * A new file is created 0600 (whatever the umask).
/// * An existing one must be a regular file of this user's with no other hard link; its mode
///   is **tightened** to 0600 (it is about to be overwritten: what it held is discarded, so
///   there is nothing to keep it readable for), then it is truncated.
/// * The path is opened with `O_NOFOLLOW` (and `O_NONBLOCK`, so a FIFO cannot block the
///   open): a symbolic link at the path is refused, never followed, so a link planted in a
///   shared directory cannot make acp truncate or fill another file. A link, a FIFO, a
///   directory, a device, another user's file or a hard-linked one is refused with an error
///   saying which.
pub fn open_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let refuse = |why: &str| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", path.display()),
        )
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse(
                "is a symbolic link: not followed (the log holds secrets; name the file itself)",
            ),
            Some(libc::ENXIO) => refuse("is a FIFO or a socket, not a regular file"),
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file"));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(refuse(
            "belongs to another user, who could read it: not used (the log holds secrets)",
        ));
    }
    if meta.nlink() > 1 {
        return Err(refuse(
            "has other hard links: not overwritten (the log holds secrets)",
        ));
    }
    if meta.mode() & 0o7777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.set_len(0)?;
    Ok(file)
}

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

/// Requests awaiting a response kept per direction (for `elapsedMs`); the oldest are
/// forgotten beyond (their response is then logged without `method` and `elapsedMs`).
const MAX_PENDING: usize = 1024;
/// Longest id or method name kept in the table of pending requests.
const MAX_KEPT_TEXT: usize = 256;

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
        let parsed = each_message(text, &mut |msg, in_batch| {
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
}

/// Requests awaiting a response in one direction: raw id -> (when, method), at most
/// [`MAX_PENDING`] (oldest forgotten first), so that requests never answered, or answered with
/// `id: null`, cannot make it grow without bound.
#[derive(Default)]
struct Pending {
    entries: HashMap<String, (Instant, String, u64)>,
    /// Insertion order (sequence number, id); may hold ids since answered or replaced.
    order: VecDeque<(u64, String)>,
    next: u64,
}

impl Pending {
    fn insert(&mut self, id: &str, at: Instant, method: &str) {
        if id.len() > MAX_KEPT_TEXT {
            return; // not worth keeping: its response is logged without `elapsedMs`
        }
        let seq = self.next;
        self.next += 1;
        let method = truncate(method, MAX_KEPT_TEXT).to_owned();
        self.entries.insert(id.to_owned(), (at, method, seq));
        self.order.push_back((seq, id.to_owned()));
        while self.entries.len() > MAX_PENDING {
            let Some((seq, id)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&id).is_some_and(|e| e.2 == seq) {
                self.entries.remove(&id);
            }
        }
        if self.order.len() > 4 * MAX_PENDING {
            // Mostly answered ids: keep the order of the live ones only.
            let entries = &self.entries;
            self.order
                .retain(|(seq, id)| entries.get(id).is_some_and(|e| e.2 == *seq));
        }
    }

    fn remove(&mut self, id: &str) -> Option<(Instant, String)> {
        self.entries.remove(id).map(|(at, m, _)| (at, m))
    }

    /// Entries and order records held (for tests).
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        (self.entries.len(), self.order.len())
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What the tap reads of one JSON-RPC message: the fields it logs and counts, borrowed from
/// the line. Everything else is skipped by the parser (`IgnoredAny`) without being built.
struct Message<'a> {
    /// The whole message, as written.
    raw: &'a RawValue,
    /// `id`, if present (even `null`), as written.
    id: Option<&'a RawValue>,
    /// `method`, if it is a string.
    method: Option<Cow<'a, str>>,
    /// Whether it has an `error` member.
    is_error: bool,
}

impl Message<'_> {
    /// A `session/update` notification (no `id` at all, as the engine reads it).
    fn is_update(&self) -> bool {
        self.id.is_none() && self.method.as_deref() == Some("session/update")
    }
}

/// Calls `f` for each message of a line (one, or each entry of a batch, with `true`), as the
/// line is parsed; an error if the line is not JSON (after the messages before the fault).
fn each_message<'a>(
    text: &'a str,
    f: &mut dyn FnMut(Message<'a>, bool),
) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let whole: &'a RawValue = Deserialize::deserialize(&mut de)?;
    de.end()?;
    if whole.get().trim_start().starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(whole.get());
        de.deserialize_seq(Batch(f))?;
        Ok(())
    } else {
        f(Message::read(whole)?, false);
        Ok(())
    }
}

/// Visits a batch one entry at a time (no vector of entries is built).
struct Batch<'f, 'a>(&'f mut dyn FnMut(Message<'a>, bool));

impl<'de: 'a, 'a> Visitor<'de> for Batch<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a batch")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            let msg = Message::read(raw).map_err(serde::de::Error::custom)?;
            (self.0)(msg, true);
        }
        Ok(())
    }
}

impl<'a> Message<'a> {
    /// Reads the envelope of one (valid JSON) message; anything that is not an object has
    /// none.
    fn read(raw: &'a RawValue) -> Result<Message<'a>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let (id, method, is_error) = de.deserialize_any(EnvelopeVisitor)?;
        Ok(Message {
            raw,
            id,
            method,
            is_error,
        })
    }
}

type Envelope<'a> = (Option<&'a RawValue>, Option<Cow<'a, str>>, bool);

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let (mut id, mut method, mut is_error) = (None, None, false);
        // Duplicate members: the last one counts (as serde_json's `Value`).
        while let Some(key) = map.next_key::<Member>()? {
            match key {
                Member::Id => id = Some(map.next_value::<&'de RawValue>()?),
                Member::Method => method = map.next_value::<MaybeStr<'de>>()?.0,
                Member::Error => {
                    map.next_value::<IgnoredAny>()?;
                    is_error = true;
                }
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((id, method, is_error))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((None, None, false))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }

    fn visit_str<E>(self, _: &str) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }

    fn visit_unit<E>(self) -> Result<Envelope<'de>, E> {
        Ok((None, None, false))
    }
}

/// The members of a message the tap reads.
enum Member {
    Id,
    Method,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Member, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, key: &str) -> Result<Member, E> {
                Ok(match key {
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A string (borrowed when it has no escapes), or `None` for any other JSON value.
struct MaybeStr<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeStr<'de>, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        if !raw.get().starts_with('"') {
            return Ok(MaybeStr(None));
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Borrowed(s))
            }
            fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(s.to_owned()))
            }
        }
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let s = de.deserialize_str(V).map_err(serde::de::Error::custom)?;
        Ok(MaybeStr(Some(s)))
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
    fn the_replay_of_a_session_load_is_the_updates_between_the_request_and_its_answer() {
        let tap = Tap::new(None, None, 1 << 20).unwrap();
        let update = br#"{"jsonrpc":"2.0","method":"session/update","params":{}}
"#;
        tap.bytes(Dir::Recv, update);
        assert_eq!(tap.load_replay(), None);
        tap.bytes(
            Dir::Send,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/load\",\"params\":{}}\n",
        );
        assert_eq!(tap.load_replay(), Some((1, None)));
        tap.bytes(Dir::Recv, update);
        // Another answer is not the load's.
        tap.bytes(Dir::Recv, b"{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n");
        assert_eq!(tap.load_replay(), Some((1, None)));
        // In a batch: the update before the answer is replayed, the one after is not.
        tap.bytes(
            Dir::Recv,
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}},{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}},{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}]\n",
        );
        assert_eq!(tap.load_replay(), Some((1, Some(3))));
        assert_eq!(tap.updates_received(), 4);
        // A later answer with the same id changes nothing.
        tap.bytes(Dir::Recv, update);
        tap.bytes(Dir::Recv, b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
        assert_eq!(tap.load_replay(), Some((1, Some(3))));
    }

    /// The log is private: created 0600; an existing file of ours tightened and truncated;
    /// a symbolic link planted at the path refused, its target untouched.
    #[test]
    fn the_log_file_is_private_and_never_followed_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("acp-rpc-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;

        let new = dir.join("new.ndjson");
        drop(Tap::new(Some(&new), None, 1 << 20).unwrap());
        assert_eq!(mode(&new), 0o600, "a new log");

        let old = dir.join("old.ndjson");
        std::fs::write(&old, "what an earlier run logged").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(Tap::new(Some(&old), None, 1 << 20).unwrap());
        assert_eq!(mode(&old), 0o600, "an existing log is tightened");
        assert_eq!(std::fs::read(&old).unwrap(), b"", "and truncated");

        let target = dir.join("victim");
        std::fs::write(&target, "keep me").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.join("link.ndjson");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = Tap::new(Some(&link), None, 1 << 20)
            .err()
            .expect("a link is refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(err.to_string().contains("link.ndjson"), "{err}");
        // A dangling link is not followed to create a file either.
        let dangling = dir.join("dangling.ndjson");
        std::os::unix::fs::symlink(dir.join("created-through-the-link"), &dangling).unwrap();
        assert!(Tap::new(Some(&dangling), None, 1 << 20).is_err());
        assert!(!dir.join("created-through-the-link").exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert_eq!(mode(&target), 0o644);

        // A hard link to another file is not truncated through.
        let hard = dir.join("hard.ndjson");
        std::fs::hard_link(&target, &hard).unwrap();
        let err = Tap::new(Some(&hard), None, 1 << 20).err().expect("refused");
        assert!(err.to_string().contains("hard link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");

        // Not a regular file.
        let fifo = dir.join("fifo.ndjson");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(Tap::new(Some(&fifo), None, 1 << 20).is_err());
        assert!(Tap::new(Some(&dir), None, 1 << 20).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
        let lines: Vec<serde_json::Value> = log
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

    /// Messages are read only as far as the log needs: any JSON is accepted (odd members,
    /// duplicates, escapes), `id: null` is not a notification, a batch is logged entry by
    /// entry, and `msg` is the message exactly as written.
    #[test]
    fn envelopes_are_read_from_the_line_as_written() {
        let dir = std::env::temp_dir().join(format!("acp-rpc-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.ndjson");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tap = Tap::new(Some(&path), Some(tx), 1 << 20).unwrap();
        let junk = vec!["0"; 100_000].join(",");
        let lines = [
            // An update with a large member the tap never looks into.
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s"}},"junk":[{junk}]}}"#
            ),
            // Not an update: it has an id (null).
            r#"{"jsonrpc":"2.0","id":null,"method":"session/update"}"#.to_owned(),
            // Escapes in the method, a duplicate id (the last counts), a non-string method.
            r#"{"id":1,"method":"session\/update","id":"b","x":{"method":"no"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":5}"#.to_owned(),
            r#"[{"jsonrpc":"2.0","method":"session/update"}, 7, {"id":"b","result":{}}]"#
                .to_owned(),
        ];
        for l in &lines {
            tap.bytes(Dir::Recv, format!("{l}\n").as_bytes());
        }
        assert!(rx.try_recv().is_err(), "valid JSON was reported");
        assert_eq!(tap.updates_received(), 2);
        let log = std::fs::read_to_string(&path).unwrap();
        let got: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), 7, "{log:.500}");
        assert_eq!(got[0]["kind"], "notification");
        assert_eq!(
            got[0]["msg"],
            serde_json::from_str::<serde_json::Value>(&lines[0]).unwrap()
        );
        assert_eq!(got[1]["kind"], "notification");
        assert!(got[1].get("id").is_none());
        assert_eq!(
            (&got[2]["kind"], &got[2]["id"]),
            (&"request".into(), &"b".into())
        );
        assert_eq!(got[2]["method"], "session/update");
        assert_eq!(got[3]["kind"], "response");
        assert_eq!(got[4]["batch"], true);
        assert_eq!(got[5]["msg"], 7);
        // The batch's response answers the request "b" above.
        assert_eq!(
            (&got[6]["kind"], &got[6]["id"]),
            (&"response".into(), &"b".into())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Requests answered with `id: null` (the answer to a request whose id could not be
    /// used), never answered, or with ids too long to keep, cannot make the table of requests
    /// awaiting a response grow without bound.
    #[test]
    fn the_table_of_pending_requests_stays_bounded() {
        let dir = std::env::temp_dir().join(format!("acp-rpc-pending-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tap = Tap::new(Some(&dir.join("log.ndjson")), None, 1 << 20).unwrap();
        for i in 0..20_000 {
            // A batch entry the engine answers with `id: null`...
            let req = format!("[{{\"jsonrpc\":\"1.0\",\"id\":{i},\"method\":\"m\"}}]\n");
            tap.bytes(Dir::Recv, req.as_bytes());
            let err = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"invalid\"}}\n";
            tap.bytes(Dir::Send, err.as_bytes());
            // ...and one of ours the agent never answers.
            let ours = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"fs/x\"}}\n");
            tap.bytes(Dir::Send, ours.as_bytes());
        }
        let (entries, order) = tap.pending_entries();
        assert!(entries <= 2 * MAX_PENDING, "{entries} requests kept");
        assert!(
            order <= 2 * (4 * MAX_PENDING + 1),
            "{order} order records kept"
        );
        // Still logged: requests, and the `id: null` errors as errors.
        let log = std::fs::read_to_string(dir.join("log.ndjson")).unwrap();
        let last: Vec<serde_json::Value> = log
            .lines()
            .rev()
            .take(3)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(last[0]["kind"], "request", "{log:.300}");
        assert_eq!(last[0]["method"], "fs/x");
        assert_eq!(last[1]["kind"], "error");
        assert_eq!(last[2]["kind"], "request");
        assert_eq!(last[2]["batch"], true);
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
