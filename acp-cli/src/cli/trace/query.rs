//! What the view asks of the index: the rows a filter keeps (a page at a time), where a row
//! is in them, the summary, and what the page shows of each row. Written once more in
//! `trace-viewer/model.js` for the VS Code face; the vectors of `trace-viewer/test/vectors/`
//! hold both to the same answers.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::index::{flags, Index, Row, NONE, NO_LANE};
use super::line::Kind;

/// Which rows the view shows. Every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// The row's method (an answer has its request's).
    pub method: Option<String>,
    pub session: Option<String>,
    /// A turn (an index of [`Index::turns`]).
    pub turn: Option<u32>,
    /// Only rows flagged as errors.
    pub errors: bool,
    /// Only requests and answers that took at least this many ms.
    pub min_ms: Option<f64>,
    /// Text the row's line contains (ASCII case ignored).
    pub q: Option<String>,
    /// Consecutive notifications of the same lanes, method, sub-kind, session and turn
    /// shown as one item.
    pub group: bool,
}

impl Filter {
    /// From a query string's pairs (`method`, `session`, `turn`, `errors=1`, `minMs`, `q`,
    /// `group=1`); unknown names are ignored, bad numbers are an error naming them.
    pub fn from_pairs<'a>(
        pairs: impl Iterator<Item = (&'a str, String)>,
    ) -> Result<Filter, String> {
        let mut f = Filter::default();
        for (name, value) in pairs {
            let value = Some(value).filter(|v| !v.is_empty());
            match name {
                "method" => f.method = value,
                "session" => f.session = value,
                "turn" => {
                    f.turn = value
                        .map(|v| {
                            v.parse::<u32>()
                                .map_err(|_| format!("turn: {v:?} is not a number"))
                        })
                        .transpose()?
                }
                "errors" => f.errors = value.as_deref() == Some("1"),
                "group" => f.group = value.as_deref() == Some("1"),
                "minMs" => {
                    f.min_ms = value
                        .map(|v| match v.parse::<f64>() {
                            Ok(n) if n.is_finite() => Ok(n),
                            _ => Err(format!("minMs: {v:?} is not a number")),
                        })
                        .transpose()?
                }
                "q" => f.q = value,
                _ => {}
            }
        }
        Ok(f)
    }

    /// A key naming this filter in caches (the search text included).
    pub fn key(&self) -> String {
        format!("{self:?}")
    }
}

/// One item of the view: a row, or a group of `count` rows starting there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub row: u32,
    pub count: u32,
}

/// Rows matching a search (a bit per row).
#[derive(Debug, Clone, Default)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    pub fn set(&mut self, n: usize) {
        let w = n / 64;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (n % 64);
    }

    pub fn get(&self, n: usize) -> bool {
        self.words
            .get(n / 64)
            .is_some_and(|w| w & (1 << (n % 64)) != 0)
    }
}

/// The items `filter` keeps, in order. `found`: the rows matching `filter.q` (ignored when
/// `q` is not set).
pub fn select(index: &Index, filter: &Filter, found: Option<&Bits>) -> Vec<Item> {
    let method = match &filter.method {
        Some(m) => match index.methods.find(m) {
            Some(id) => Some(id),
            None => return Vec::new(),
        },
        None => None,
    };
    let session = match &filter.session {
        Some(s) => match index.sessions.find(s) {
            Some(id) => Some(id),
            None => return Vec::new(),
        },
        None => None,
    };
    let mut items: Vec<Item> = Vec::new();
    let mut last: Option<Row> = None;
    for (n, row) in index.rows.iter().enumerate() {
        if method.is_some_and(|m| row.method != m)
            || session.is_some_and(|s| row.session != s)
            || filter.turn.is_some_and(|t| row.turn != t)
            || (filter.errors && !row.has(flags::ERROR))
            || filter.q.is_some() && !found.is_some_and(|f| f.get(n))
        {
            continue;
        }
        if let Some(min) = filter.min_ms {
            if !index.duration(n as u32).is_some_and(|d| d >= min) {
                continue;
            }
        }
        if filter.group && row.kind() == Kind::Notification {
            if let (Some(prev), Some(item)) = (last, items.last_mut()) {
                if prev.kind() == Kind::Notification
                    && (
                        prev.from,
                        prev.to,
                        prev.method,
                        prev.sub,
                        prev.session,
                        prev.turn,
                    ) == (row.from, row.to, row.method, row.sub, row.session, row.turn)
                {
                    item.count += 1;
                    last = Some(*row);
                    continue;
                }
            }
        }
        items.push(Item {
            row: n as u32,
            count: 1,
        });
        last = Some(*row);
    }
    items
}

/// Where row `n` is among `items`: the item holding it (a group holds the rows from its
/// first to the next item's), or `None` when the filter does not keep it.
pub fn locate(items: &[Item], n: u32) -> Option<usize> {
    let i = items.partition_point(|it| it.row <= n).checked_sub(1)?;
    let it = items[i];
    (it.row == n || it.count > 1).then_some(i)
}

/// `q`-th quantile by nearest rank of sorted durations.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn lane(index: &Index, l: u8) -> Value {
    if l == NO_LANE {
        Value::Null
    } else {
        json!(index.lanes[l as usize])
    }
}

fn num(t: f64) -> Value {
    if t.is_finite() {
        json!(t)
    } else {
        Value::Null
    }
}

/// The summary of the whole trace: messages by kind, turns by stop reason, sessions,
/// requests by method with p50/p99/max durations, notifications by method, bytes each way,
/// the slowest calls, and the problems.
pub fn summary(index: &Index) -> Value {
    let mut kinds: HashMap<&'static str, u64> = HashMap::new();
    let mut first = f64::NAN;
    let mut last = f64::NAN;
    #[derive(Default)]
    struct ByMethod {
        count: u64,
        answered: u64,
        errors: u64,
        cancelled: u64,
        ms: Vec<f64>,
    }
    let mut requests: HashMap<u16, ByMethod> = HashMap::new();
    let mut notifications: HashMap<u16, u64> = HashMap::new();
    let mut per_session: HashMap<u16, u64> = HashMap::new();
    let mut slowest: Vec<(f64, u32)> = Vec::new();
    let (mut unanswered, mut errors) = (0u64, 0u64);
    for (n, row) in index.rows.iter().enumerate() {
        *kinds.entry(row.kind().name()).or_default() += 1;
        if row.t.is_finite() {
            if first.is_nan() {
                first = row.t;
            }
            last = row.t;
        }
        if row.session != 0 {
            *per_session.entry(row.session).or_default() += 1;
        }
        if row.has(flags::ERROR) && row.kind() != Kind::Request {
            errors += 1;
        }
        match row.kind() {
            Kind::Request => {
                let m = requests.entry(row.method).or_default();
                m.count += 1;
                if row.pair == NONE {
                    unanswered += 1;
                } else {
                    m.answered += 1;
                    if row.has(flags::ERROR) {
                        m.errors += 1;
                    }
                    if row.has(flags::CANCEL) {
                        m.cancelled += 1;
                    }
                    if let Some(d) = index.duration(n as u32) {
                        m.ms.push(d);
                        slowest.push((d, n as u32));
                    }
                }
            }
            Kind::Notification => *notifications.entry(row.method).or_default() += 1,
            _ => {}
        }
    }
    let mut requests: Vec<(u16, ByMethod)> = requests.into_iter().collect();
    for (_, m) in requests.iter_mut() {
        m.ms.sort_by(f64::total_cmp);
    }
    let name = |id: u16| index.methods.get(id).unwrap_or("").to_string();
    requests.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(name(a.0).cmp(&name(b.0))));
    let mut notifications: Vec<(u16, u64)> = notifications.into_iter().collect();
    notifications.sort_by(|a, b| b.1.cmp(&a.1).then(name(a.0).cmp(&name(b.0))));
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    slowest.truncate(10);
    let mut stops: HashMap<String, u64> = HashMap::new();
    let mut open = 0;
    let mut turns_per_session: HashMap<u16, u64> = HashMap::new();
    for turn in &index.turns {
        *turns_per_session.entry(turn.session).or_default() += 1;
        if turn.end == NONE {
            open += 1;
        } else {
            let stop = index.subs.get(turn.stop).unwrap_or("(none)");
            *stops.entry(stop.to_string()).or_default() += 1;
        }
    }
    let order = index.lane_order();
    let pos = |l: u8| order.iter().position(|&o| o == l).unwrap_or(usize::MAX);
    let mut bytes: Vec<_> = index.bytes.iter().collect();
    bytes.sort_by_key(|((f, t), _)| (pos(*f), pos(*t)));
    json!({
        "messages": index.rows.len(),
        "kinds": kinds,
        "span": if first.is_finite() { json!({"first": first, "last": last}) } else { Value::Null },
        "turns": {"count": index.turns.len(), "open": open, "stops": stops},
        "sessions": index.sessions.all().map(|(id, s)| json!({
            "id": s,
            "turns": turns_per_session.get(&id).copied().unwrap_or(0),
            "messages": per_session.get(&id).copied().unwrap_or(0),
        })).collect::<Vec<_>>(),
        "requests": requests.iter().map(|(id, m)| json!({
            "method": index.methods.get(*id),
            "count": m.count,
            "answered": m.answered,
            "errors": m.errors,
            "cancelled": m.cancelled,
            "p50": if m.ms.is_empty() { Value::Null } else { json!(quantile(&m.ms, 0.5)) },
            "p99": if m.ms.is_empty() { Value::Null } else { json!(quantile(&m.ms, 0.99)) },
            "max": m.ms.last().map_or(Value::Null, |v| json!(v)),
        })).collect::<Vec<_>>(),
        "notifications": notifications.iter().map(|(id, c)| json!({
            "method": index.methods.get(*id), "count": c,
        })).collect::<Vec<_>>(),
        "bytes": bytes.iter().map(|((f, t), (b, c))| json!({
            "from": lane(index, *f), "to": lane(index, *t), "bytes": b, "messages": c,
        })).collect::<Vec<_>>(),
        "slowest": slowest.iter().map(|(ms, n)| {
            let row = &index.rows[*n as usize];
            json!({
                "n": n, "line": row.line, "method": index.methods.get(row.method), "ms": ms,
                "from": lane(index, row.from), "to": lane(index, row.to),
            })
        }).collect::<Vec<_>>(),
        "problems": {
            "errors": errors,
            "invalid": kinds.get("invalid").copied().unwrap_or(0),
            "oversize": kinds.get("oversize").copied().unwrap_or(0),
            "malformed": index.malformed,
            "unanswered": unanswered,
        },
    })
}

/// The turns of `session` (at most `max`): their index, number, stop reason, the lines of
/// their prompt and of what closed them (v1: its answer; v2: the idle `state_update`), and
/// how long they took (from the one to the other).
pub fn turns(index: &Index, session: &str, max: usize) -> Value {
    let Some(id) = index.sessions.find(session) else {
        return json!({ "turns": [] });
    };
    let list: Vec<Value> = index
        .turns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.session == id)
        .take(max)
        .map(|(k, t)| {
            let end = index.rows.get(t.end as usize);
            json!({
                "turn": k,
                "n": t.n,
                "stop": index.subs.get(t.stop),
                "line": index.rows[t.start as usize].line,
                "endLine": end.map(|r| r.line),
                "ms": end
                    .map(|e| e.t - index.rows[t.start as usize].t)
                    .filter(|d| d.is_finite())
                    .map_or(Value::Null, |d| json!(d)),
            })
        })
        .collect();
    json!({ "turns": list })
}

/// What the view shows of row `n` in a list (`preview`: a short text from its message).
pub fn row_json(index: &Index, n: u32, count: u32, preview: Option<String>) -> Value {
    let row = &index.rows[n as usize];
    let turn = index.turns.get(row.turn as usize);
    json!({
        "n": n,
        "line": row.line,
        "entry": if row.entry == 0 { Value::Null } else { json!(row.entry) },
        "t": num(row.t),
        "from": lane(index, row.from),
        "to": lane(index, row.to),
        "kind": row.kind().name(),
        "method": index.methods.get(row.method),
        "sub": index.subs.get(row.sub),
        "session": index.sessions.get(row.session),
        "turn": turn.map(|_| row.turn),
        "turnN": turn.map(|t| t.n),
        "error": row.has(flags::ERROR),
        "cancel": row.has(flags::CANCEL),
        "cut": row.has(flags::CUT),
        "pair": if row.pair == NONE { Value::Null } else { json!(row.pair) },
        "pairLine": index.rows.get(row.pair as usize).map(|p| p.line),
        "ms": index.duration(n).map_or(Value::Null, |d| json!(d)),
        "count": count,
        "preview": preview,
    })
}

/// The longest preview, in characters.
pub const PREVIEW_CHARS: usize = 160;

/// A short text from a message (see [`super::detail::message_of`]): the message itself when it
/// is text, else the first of these that is a string: an update's text (v2's whole messages:
/// their first block's) or title, a tool call's title, a v2 permission question's title, a
/// prompt's first text, a path, a command, an error's message, a stop reason,
/// a permission outcome, a new session's id (in `result`, or the conductor's `payload`), a
/// log event's message.
pub fn preview(message: &Value) -> Option<String> {
    const POINTERS: [&str; 19] = [
        "/params/update/content/text",
        "/params/update/content/0/text",
        "/params/update/title",
        "/params/toolCall/title",
        "/params/title",
        "/params/prompt/0/text",
        "/params/path",
        "/params/command",
        "/error/message",
        "/result/stopReason",
        "/result/outcome/outcome",
        "/result/sessionId",
        "/payload/message",
        "/payload/stopReason",
        "/payload/outcome/outcome",
        "/payload/sessionId",
        "/message",
        "/start",
        "/why",
    ];
    let text = match message {
        Value::String(s) => Some(s.as_str()),
        _ => POINTERS
            .iter()
            .find_map(|p| message.pointer(p).and_then(Value::as_str)),
    };
    text.map(|s| s.chars().take(PREVIEW_CHARS).collect())
}

/// The preview of a line's message (see [`preview`]).
pub fn line_preview(line: &str, entry: u16) -> Option<String> {
    let m = super::detail::message_of(line, entry);
    if m.json {
        serde_json::from_str::<Value>(&m.text)
            .ok()
            .and_then(|v| preview(&v))
    } else {
        preview(&Value::String(m.text.into_owned()))
    }
}
