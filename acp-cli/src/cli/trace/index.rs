//! The index of a trace file: one compact [`Row`] per message, built from the file's bytes as
//! they come (sans-IO: [`Index::feed`] takes bytes, the caller reads the file), so a growing
//! file is followed and a 1 GB one is never held in memory. What a row needs for the view
//! (its line's offset and length, time, lanes, kind, method, session, the row it pairs with,
//! its turn) is kept; the message itself is read again from the file when a page shows it.
//!
//! **Pairing.** A request waits in a table under (its lanes, its id as written) until an
//! answer comes the other way with that id; a repeated id replaces the request waiting
//! (which stays unanswered). The table holds at most [`MAX_PENDING`] requests, the oldest
//! forgotten first.
//!
//! **Turns.** A `session/prompt` request opens a turn of its session (numbered from 1 in each
//! session); the session's messages (requests and notifications naming it, and the answers
//! to those) belong to it until it closes: in ACP v1 with the prompt's answer (its stop
//! reason; `error` for an error answer), in ACP v2 with the session's idle `state_update`
//! coming back the way of the prompt's lanes on the same connection (its `stopReason`;
//! [`ENDED`] when it gives none), the prompt's answer only acknowledging it (an error answer
//! still closes it with `error`).
//!
//! **Protocol version**, per connection (a pair of lanes, whichever way): an `initialize`
//! starts a new connection, its answer's `protocolVersion` settles it (2: v2; anything else:
//! v1). Until a connection's `initialize` is seen (a trace that starts mid-way) its version is
//! unknown and taken from what is seen: a `state_update` or `replay_complete` update (kinds
//! only v2 has), or a successful `session/prompt` answer without a `stopReason`, make it v2;
//! a `session/prompt` answer with a `stopReason` closes its turn as v1 does.
//!
//! **Memory.** 48 bytes a row ([`Row`], kept in chunks: [`Rows`]), at most [`MAX_ROWS`] rows (a larger trace is read up
//! to there and says where it stopped), distinct methods, sessions and sub-kinds at most
//! 65,534 each (then `…`), 32 lanes, [`MAX_PENDING`] waiting requests, [`MAX_PENDING`] v2
//! turns waiting for their idle `state_update`, and one line of up to
//! `max_line` bytes being read (a longer line is read from its first [`CUT_PREFIX`] bytes).

use std::collections::{HashMap, VecDeque};

use super::line::{self, Kind, LineState, Parsed};

/// No row, no turn.
pub const NONE: u32 = u32::MAX;
/// No lane (a line with no direction).
pub const NO_LANE: u8 = u8::MAX;

/// Rows kept at most: 4 Mi rows of 48 bytes, 192 MiB.
pub const MAX_ROWS: usize = 4 << 20;
/// Requests waiting for their answer kept at most.
pub const MAX_PENDING: usize = 65_536;
/// The longest line read whole by default; a longer one is read from its start.
pub const MAX_LINE: usize = 8 << 20;
/// How much of a longer line is read.
pub const CUT_PREFIX: usize = 64 << 10;
/// Longest method, session or sub-kind kept (longer ones are cut).
const MAX_NAME: usize = 200;
/// Lanes at most.
const MAX_LANES: usize = 32;
/// The stop reason of a v2 turn whose idle `state_update` gave none (acp-client's session
/// engine reports an empty reason then).
pub const ENDED: &str = "ended";

pub mod flags {
    /// An error answer, a request answered with one, invalid, oversize, malformed, an error log.
    pub const ERROR: u8 = 1;
    /// `session/cancel`, `$/cancel_request`, a `cancelled` stop reason or permission outcome,
    /// error -32800, and a request answered with one of those.
    pub const CANCEL: u8 = 2;
    /// Read from its line's start only (the line is longer than the index reads whole).
    pub const CUT: u8 = 4;
}

/// One message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Where its line starts in the file, and its length (without the line break).
    pub offset: u64,
    /// Milliseconds (NaN when the trace does not say).
    pub t: f64,
    pub len: u32,
    /// 1-based line number.
    pub line: u32,
    /// The row it pairs with (a request's answer, an answer's request), or [`NONE`].
    pub pair: u32,
    /// Its turn (an index into [`Index::turns`]), or [`NONE`].
    pub turn: u32,
    /// Interned in [`Index::methods`], [`Index::subs`], [`Index::sessions`] (0: none).
    pub method: u16,
    pub sub: u16,
    pub session: u16,
    /// 1-based entry of a batch line, 0 otherwise.
    pub entry: u16,
    /// Lanes ([`Index::lanes`]) or [`NO_LANE`].
    pub from: u8,
    pub to: u8,
    pub kind: u8,
    pub flags: u8,
}

impl Row {
    pub fn kind(&self) -> Kind {
        Kind::from_u8(self.kind)
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Rows a chunk holds (2^16).
const CHUNK_BITS: u32 = 16;
const CHUNK_ROWS: usize = 1 << CHUNK_BITS;

/// The rows, in chunks of [`CHUNK_ROWS`]: growing never moves what is there (a `Vec` doubles,
/// copying: its peak is up to twice its size, three times while it copies).
#[derive(Debug, Default)]
pub struct Rows {
    chunks: Vec<Vec<Row>>,
    len: usize,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, n: usize) -> Option<&Row> {
        self.chunks.get(n >> CHUNK_BITS)?.get(n & (CHUNK_ROWS - 1))
    }

    fn push(&mut self, row: Row) {
        if self.len % CHUNK_ROWS == 0 {
            self.chunks.push(Vec::with_capacity(CHUNK_ROWS));
        }
        if let Some(last) = self.chunks.last_mut() {
            last.push(row);
            self.len += 1;
        }
    }

    /// The rows from `from` on, in order.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &Row> + '_ {
        let first = from >> CHUNK_BITS;
        let skip = from & (CHUNK_ROWS - 1);
        self.chunks
            .iter()
            .skip(first)
            .enumerate()
            .flat_map(move |(i, c)| c[if i == 0 { skip.min(c.len()) } else { 0 }..].iter())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Row> + '_ {
        self.chunks.iter().flatten()
    }
}

impl std::ops::Index<usize> for Rows {
    type Output = Row;
    fn index(&self, n: usize) -> &Row {
        &self.chunks[n >> CHUNK_BITS][n & (CHUNK_ROWS - 1)]
    }
}

impl std::ops::IndexMut<usize> for Rows {
    fn index_mut(&mut self, n: usize) -> &mut Row {
        &mut self.chunks[n >> CHUNK_BITS][n & (CHUNK_ROWS - 1)]
    }
}

/// A turn: a `session/prompt` and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub session: u16,
    /// Its number in its session, from 1.
    pub n: u32,
    /// The prompt's row, its answer's row ([`NONE`] while open).
    pub start: u32,
    pub end: u32,
    /// Its stop reason (interned in [`Index::subs`]; `error` for an error answer).
    pub stop: u16,
}

/// Names interned as small numbers; 0 is "none", the last one stands for every name past the
/// limit.
#[derive(Debug)]
pub struct Names {
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u16>,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            names: vec!["".into()],
            ids: HashMap::new(),
        }
    }
}

const OVERFLOW: u16 = u16::MAX;

impl Names {
    pub fn intern(&mut self, name: &str) -> u16 {
        let name = cut(name, MAX_NAME);
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        if self.names.len() >= OVERFLOW as usize {
            return OVERFLOW;
        }
        let id = self.names.len() as u16;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The name of `id` (`None` for 0).
    pub fn get(&self, id: u16) -> Option<&str> {
        match id {
            0 => None,
            OVERFLOW => Some("…"),
            _ => self.names.get(id as usize).map(|n| &**n),
        }
    }

    pub fn find(&self, name: &str) -> Option<u16> {
        self.ids.get(cut(name, MAX_NAME)).copied()
    }

    /// Every name, in the order first seen, with its id.
    pub fn all(&self) -> impl Iterator<Item = (u16, &str)> {
        self.names
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, n)| (i as u16, &**n))
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A waiting request's key: its lanes (from, to) and its id as written.
type Key = (u8, u8, Box<str>);

/// Requests waiting for an answer, by [`Key`], bounded.
#[derive(Default, Debug)]
struct Pending {
    /// Key -> (row, insertion number).
    rows: HashMap<Key, (u32, u64)>,
    /// Insertion order; may hold keys since answered or replaced.
    order: VecDeque<(u64, Key)>,
    next: u64,
}

impl Pending {
    fn insert(&mut self, key: Key, row: u32) {
        let seq = self.next;
        self.next += 1;
        self.rows.insert(key.clone(), (row, seq));
        self.order.push_back((seq, key));
        while self.rows.len() > MAX_PENDING {
            let Some((seq, key)) = self.order.pop_front() else {
                break;
            };
            if self.rows.get(&key).is_some_and(|e| e.1 == seq) {
                self.rows.remove(&key);
            }
        }
        if self.order.len() > 4 * MAX_PENDING {
            let rows = &self.rows;
            self.order
                .retain(|(seq, key)| rows.get(key).is_some_and(|e| e.1 == *seq));
        }
    }

    fn remove(&mut self, key: &Key) -> Option<u32> {
        self.rows.remove(key).map(|(row, _)| row)
    }
}

/// A connection: a pair of lanes.
#[derive(Debug, Default, Clone, Copy)]
struct Conn {
    /// 0 while unknown, 1, 2.
    version: u8,
    /// `initialize` requests seen on it.
    epoch: u32,
}

/// The key of the connection between lanes `a` and `b`.
fn conn_key(a: u8, b: u8) -> (u8, u8) {
    (a.min(b), a.max(b))
}

/// Where reading stopped before the end of what the file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// The first line not read, and its offset.
    pub line: u32,
    pub offset: u64,
}

/// The index; see the module's documentation.
#[derive(Debug)]
pub struct Index {
    pub rows: Rows,
    pub turns: Vec<Turn>,
    pub methods: Names,
    pub subs: Names,
    pub sessions: Names,
    pub lanes: Vec<String>,
    /// Message bytes and count per (from, to) lane pair.
    pub bytes: HashMap<(u8, u8), (u64, u64)>,
    /// Bytes read in complete lines; the incomplete line after them.
    pub read_to: u64,
    tail: Vec<u8>,
    tail_len: u64,
    tail_cut: bool,
    /// Complete lines read (blank ones included).
    pub lines: u32,
    pub malformed: u64,
    pub first_malformed: Option<u32>,
    /// Set when [`MAX_ROWS`] was reached: nothing after it is read.
    pub capped: Option<Stop>,
    open: HashMap<u16, u32>,
    turns_of: HashMap<u16, u32>,
    pending: Pending,
    /// Per connection (lanes, lower first): its protocol version (0 while unknown) and how
    /// many `initialize` requests started it.
    conns: HashMap<(u8, u8), Conn>,
    /// Turns that a v2 idle `state_update` may close: (the prompt's lanes, its session) ->
    /// (turn, the connection's `initialize` count then); at most [`MAX_PENDING`] (a prompt past
    /// that is not waited for).
    awaiting: HashMap<(u8, u8, u16), (u32, u32)>,
    state: LineState,
    max_line: usize,
    max_rows: usize,
}

impl Default for Index {
    fn default() -> Self {
        Index::new(MAX_LINE, MAX_ROWS)
    }
}

impl Index {
    /// An empty index reading lines of up to `max_line` bytes whole and keeping at most
    /// `max_rows` rows.
    pub fn new(max_line: usize, max_rows: usize) -> Index {
        Index {
            rows: Rows::default(),
            turns: Vec::new(),
            methods: Names::default(),
            subs: Names::default(),
            sessions: Names::default(),
            lanes: Vec::new(),
            bytes: HashMap::new(),
            read_to: 0,
            tail: Vec::new(),
            tail_len: 0,
            tail_cut: false,
            lines: 0,
            malformed: 0,
            first_malformed: None,
            capped: None,
            open: HashMap::new(),
            turns_of: HashMap::new(),
            pending: Pending::default(),
            conns: HashMap::new(),
            awaiting: HashMap::new(),
            state: LineState::default(),
            max_line,
            max_rows: max_rows.min(NONE as usize),
        }
    }

    /// What the incomplete line's buffer holds room for.
    #[cfg(test)]
    pub fn tail_capacity(&self) -> usize {
        self.tail.capacity()
    }

    /// v2 turns waiting for their idle `state_update`.
    #[cfg(test)]
    pub fn awaiting(&self) -> usize {
        self.awaiting.len()
    }

    /// The longest line read whole.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// The most rows kept.
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// Bytes of the file taken so far (complete lines and the incomplete one): where the next
    /// [`Index::feed`] continues.
    pub fn fed(&self) -> u64 {
        self.read_to + self.tail_len
    }

    /// The incomplete line at the end of what was fed: its offset and length so far.
    pub fn incomplete(&self) -> Option<(u64, u64)> {
        (self.tail_len > 0).then_some((self.read_to, self.tail_len))
    }

    /// Takes the next bytes of the file (continuing at [`Index::fed`]). Complete lines become
    /// rows; an incomplete one waits for the rest.
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.capped.is_none() {
            match memchr::memchr(b'\n', data) {
                Some(nl) => {
                    let (line, rest) = (&data[..nl], &data[nl + 1..]);
                    if self.tail_len == 0 {
                        let offset = self.read_to;
                        if line.len() > self.max_line {
                            let prefix = &line[..CUT_PREFIX.min(self.max_line)];
                            self.line_done(prefix, offset, line.len() as u64, true);
                        } else {
                            self.line_done(line, offset, line.len() as u64, false);
                        }
                    } else {
                        self.take_tail(line);
                        let tail = std::mem::take(&mut self.tail);
                        let (offset, len, cut) = (self.read_to, self.tail_len, self.tail_cut);
                        self.tail_len = 0;
                        self.tail_cut = false;
                        self.line_done(&tail, offset, len, cut);
                        self.tail = tail;
                        self.tail.clear();
                    }
                    data = rest;
                }
                None => {
                    self.take_tail(data);
                    data = &[];
                }
            }
        }
    }

    /// Part of an incomplete line: kept while the line is within `max_line`, then only its
    /// first [`CUT_PREFIX`] bytes.
    fn take_tail(&mut self, part: &[u8]) {
        self.tail_len += part.len() as u64;
        if self.tail_cut {
            return;
        }
        if self.tail_len > self.max_line as u64 {
            let keep = CUT_PREFIX.min(self.max_line);
            let have = self.tail.len();
            if have < keep {
                self.tail
                    .extend_from_slice(&part[..(keep - have).min(part.len())]);
            }
            self.tail.truncate(keep);
            self.tail.shrink_to(keep);
            self.tail_cut = true;
        } else {
            self.tail.extend_from_slice(part);
        }
    }

    /// A complete line: `bytes` (its start only when `cut`) at `offset`, `len` bytes long.
    fn line_done(&mut self, bytes: &[u8], offset: u64, len: u64, cut: bool) {
        if self.capped.is_some() {
            return;
        }
        let line_no = self.lines.saturating_add(1);
        let text = if cut {
            // The start may end inside a character.
            let valid = match std::str::from_utf8(bytes) {
                Ok(_) => bytes.len(),
                Err(e) => e.valid_up_to(),
            };
            String::from_utf8_lossy(&bytes[..valid])
        } else {
            String::from_utf8_lossy(bytes)
        };
        let mut parsed = Vec::new();
        line::parse_line(&text, cut, &mut self.state, &mut parsed);
        if self.rows.len() + parsed.len() > self.max_rows {
            self.capped = Some(Stop {
                line: line_no,
                offset,
            });
            return;
        }
        self.lines = line_no;
        self.read_to = offset + len + 1;
        for p in parsed {
            self.add(p, offset, len, line_no);
        }
    }

    fn lane(&mut self, name: Option<&str>) -> u8 {
        let Some(name) = name else { return NO_LANE };
        if let Some(i) = self.lanes.iter().position(|l| l == name) {
            return i as u8;
        }
        if self.lanes.len() >= MAX_LANES {
            return NO_LANE;
        }
        self.lanes.push(cut(name, MAX_NAME).to_string());
        (self.lanes.len() - 1) as u8
    }

    fn add(&mut self, p: Parsed<'_>, offset: u64, len: u64, line_no: u32) {
        let n = self.rows.len() as u32;
        let kind = p.kind.unwrap_or(Kind::Malformed);
        if kind == Kind::Malformed {
            self.malformed += 1;
            self.first_malformed.get_or_insert(line_no);
        }
        let from = self.lane(p.from.as_deref());
        let to = self.lane(p.to.as_deref());
        let mut row = Row {
            offset,
            t: p.t.filter(|t| t.is_finite()).unwrap_or(f64::NAN),
            len: u32::try_from(len).unwrap_or(u32::MAX),
            line: line_no,
            pair: NONE,
            turn: NONE,
            method: p.method.as_deref().map_or(0, |m| self.methods.intern(m)),
            sub: p.sub.as_deref().map_or(0, |s| self.subs.intern(s)),
            session: p.session.as_deref().map_or(0, |s| self.sessions.intern(s)),
            entry: p.entry,
            from,
            to,
            kind: kind as u8,
            flags: (if p.error { flags::ERROR } else { 0 })
                | (if p.cancel { flags::CANCEL } else { 0 })
                | (if p.cut { flags::CUT } else { 0 }),
        };
        if from != NO_LANE && to != NO_LANE {
            let bytes = if p.cut && p.bytes == 0 {
                len
            } else {
                p.bytes as u64
            };
            let e = self.bytes.entry((from, to)).or_default();
            e.0 += bytes;
            e.1 += 1;
        }
        let id =
            p.id.as_deref()
                .map(|id| Box::<str>::from(cut(id, MAX_NAME)));
        let lanes = from != NO_LANE && to != NO_LANE;
        let conn = conn_key(from, to);
        match kind {
            Kind::Request | Kind::Notification => {
                if lanes && kind == Kind::Request && p.method.as_deref() == Some("initialize") {
                    let c = self.conns.entry(conn).or_default();
                    c.version = 0;
                    c.epoch = c.epoch.wrapping_add(1);
                }
                if row.session != 0 {
                    if kind == Kind::Request && p.method.as_deref() == Some("session/prompt") {
                        let count = self.turns_of.entry(row.session).or_default();
                        *count += 1;
                        self.turns.push(Turn {
                            session: row.session,
                            n: *count,
                            start: n,
                            end: NONE,
                            stop: 0,
                        });
                        let t = (self.turns.len() - 1) as u32;
                        self.open.insert(row.session, t);
                        let c = self.conns.get(&conn).copied().unwrap_or_default();
                        let key = (from, to, row.session);
                        if lanes
                            && c.version != 1
                            && (self.awaiting.len() < MAX_PENDING
                                || self.awaiting.contains_key(&key))
                        {
                            self.awaiting.insert(key, (t, c.epoch));
                        }
                    }
                    if let Some(&t) = self.open.get(&row.session) {
                        row.turn = t;
                    }
                    if lanes && (p.v2_sign || p.idle) {
                        self.v2_update(&p, conn, (from, to, row.session), n);
                    }
                }
                if let (Kind::Request, Some(id), true) =
                    (kind, id, from != NO_LANE && to != NO_LANE)
                {
                    self.pending.insert((from, to, id), n);
                }
            }
            Kind::Response | Kind::Error => {
                if let (Some(id), true) = (id, from != NO_LANE && to != NO_LANE) {
                    if let Some(req) = self.pending.remove(&(to, from, id)) {
                        self.answer(&mut row, req, n, &p);
                    }
                }
            }
            _ => {}
        }
        self.rows.push(row);
    }

    /// A v2 sign (`state_update`, `replay_complete`) going `key.0` -> `key.1` about session
    /// `key.2` (row `n`): a connection of unknown version is v2; on a v2 connection an idle
    /// `state_update` closes the turn its prompt opened the other way.
    fn v2_update(&mut self, p: &Parsed<'_>, conn: (u8, u8), key: (u8, u8, u16), n: u32) {
        let c = self.conns.entry(conn).or_default();
        if c.version == 0 {
            c.version = 2;
        }
        if c.version != 2 || !p.idle {
            return;
        }
        let epoch = c.epoch;
        let (from, to, session) = key;
        let Some((t, e)) = self.awaiting.remove(&(to, from, session)) else {
            return;
        };
        if e != epoch || self.turns[t as usize].end != NONE {
            return;
        }
        let stop = self.subs.intern(p.stop.as_deref().unwrap_or(ENDED));
        self.close(t, n, stop);
    }

    /// Turn `t` ends at row `n` with stop reason `stop`.
    fn close(&mut self, t: u32, n: u32, stop: u16) {
        let turn = &mut self.turns[t as usize];
        turn.end = n;
        turn.stop = stop;
        let session = turn.session;
        if self.open.get(&session) == Some(&t) {
            self.open.remove(&session);
        }
    }

    /// `row` (number `n`, read as `p`) answers the request `req`.
    fn answer(&mut self, row: &mut Row, req: u32, n: u32, p: &Parsed<'_>) {
        let request = &mut self.rows[req as usize];
        request.pair = n;
        request.flags |= row.flags & (flags::ERROR | flags::CANCEL);
        row.pair = req;
        if row.method == 0 {
            row.method = request.method;
        }
        if row.session == 0 {
            row.session = request.session;
        }
        row.turn = request.turn;
        let (t, session, start) = (request.turn, request.session, req);
        let (rfrom, rto, method) = (request.from, request.to, request.method);
        let conn = conn_key(rfrom, rto);
        let error = row.kind() == Kind::Error;
        if !error && method != 0 && self.methods.get(method) == Some("initialize") {
            let c = self.conns.entry(conn).or_default();
            c.version = if p.version == Some(2) { 2 } else { 1 };
        }
        if t == NONE || self.turns[t as usize].start != start || self.turns[t as usize].end != NONE
        {
            return;
        }
        let version = self.conns.get(&conn).map_or(0, |c| c.version);
        if error || version == 1 || (version == 0 && p.stop.is_some()) {
            // v1: the answer ends the turn; in any version an error answer does.
            let stop = if error {
                self.subs.intern("error")
            } else {
                row.sub
            };
            self.awaiting.remove(&(rfrom, rto, session));
            self.close(t, n, stop);
        } else if version == 0 {
            // An answer without a stop reason only acknowledges the prompt: v2.
            self.conns.entry(conn).or_default().version = 2;
        }
    }

    /// A row's duration: from its request to its answer, in ms (for either of the two).
    pub fn duration(&self, n: u32) -> Option<f64> {
        let row = self.rows.get(n as usize)?;
        let other = self.rows.get(row.pair as usize)?;
        let (req, ans) = if row.kind() == Kind::Request {
            (row, other)
        } else {
            (other, row)
        };
        let d = ans.t - req.t;
        d.is_finite().then_some(d)
    }

    /// The lanes in the order the view draws them: `client` first, proxies by number, others
    /// as first seen, `agent` last. Their indexes into [`Index::lanes`].
    pub fn lane_order(&self) -> Vec<u8> {
        let rank = |name: &str| -> (u8, u64) {
            match name {
                line::CLIENT => (0, 0),
                line::AGENT => (3, 0),
                _ => match name
                    .strip_prefix("proxy:")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    Some(n) => (1, n),
                    None => (2, 0),
                },
            }
        };
        let mut order: Vec<u8> = (0..self.lanes.len() as u8).collect();
        order.sort_by_key(|&i| (rank(&self.lanes[i as usize]), i));
        order
    }
}
