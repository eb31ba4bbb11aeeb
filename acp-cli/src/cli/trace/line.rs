//! One line of a trace file, read into what the index keeps of it ([`Parsed`]), whatever the
//! format: acp's `--log-rpc` entries, the VS Code extension's trace lines, the official SDK
//! conductor's trace events. The rules are written once more, in JavaScript, for the VS Code
//! face (`trace-viewer/model.js`); `trace-viewer/test/vectors/` holds both to the same answers.
//!
//! * **acp `--log-rpc`** (`cli/rpc_log/`): `{"tMs":12.5,"dir":"send","kind":"request",…,
//!   "msg":{…}}`; `send` goes from the client (acp) to the agent. `kind` `invalid` (`line`: a
//!   line that was not JSON, or `msg` + `why`) and `oversize` (`limit`, `start`) are kept as
//!   such; any other entry is read from its `msg`.
//! * **The extension's trace** (`vscode-extension/src/host/trace.ts`, the "ACP Trace" output
//!   channel): `12.345 → {…}` (to the agent), `12.345 ← {…}` (from it), `12.345 stderr text`;
//!   the time (ms) is optional (older versions wrote none). A line without an arrow that is a
//!   JSON-RPC message goes the way of the arrow before it (older versions wrote a chunk of
//!   several lines after one arrow).
//! * **The SDK conductor** (`agent-client-protocol-conductor`'s `--trace`, and sacp's before
//!   it): `{"type":"request"|"response"|"notification"|"trace","ts":SECONDS,"from":…,"to":…}`
//!   with `id`, `method`, `params`, `payload`, `is_error`, `session`; components `Client`,
//!   `Proxy(0)`, `Agent` (sacp: `client`, `proxy:0`, `agent`) become lanes `client`,
//!   `proxy:0`, `agent`.
//!
//! A line that is none of these is [`Kind::Malformed`]: shown as text, never a reason to stop.

use std::borrow::Cow;

use acp_core::RawValue;
use serde::Deserialize;

/// What a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Request = 0,
    Notification = 1,
    Response = 2,
    /// A JSON-RPC error response.
    Error = 3,
    /// What the engine refused: a line that is not JSON, an envelope it does not take.
    Invalid = 4,
    /// A message over the size limit (acp's `oversize` entries).
    Oversize = 5,
    /// A log line: the agent's stderr, the conductor's `trace` events.
    Log = 6,
    /// A trace line that is none of the formats.
    Malformed = 7,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
            Kind::Invalid => "invalid",
            Kind::Oversize => "oversize",
            Kind::Log => "log",
            Kind::Malformed => "malformed",
        }
    }

    pub fn from_u8(k: u8) -> Kind {
        match k {
            0 => Kind::Request,
            1 => Kind::Notification,
            2 => Kind::Response,
            3 => Kind::Error,
            4 => Kind::Invalid,
            5 => Kind::Oversize,
            6 => Kind::Log,
            _ => Kind::Malformed,
        }
    }

    pub fn is_answer(self) -> bool {
        matches!(self, Kind::Response | Kind::Error)
    }
}

/// The lanes of acp's and the extension's traces (acp and the extension are the client).
pub const CLIENT: &str = "client";
pub const AGENT: &str = "agent";

/// What the index keeps of one message (one row). A line is one row, but a batch (a JSON
/// array) in the extension's trace is one row per entry.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed<'a> {
    /// Milliseconds since the trace started, when the format says.
    pub t: Option<f64>,
    /// Lanes; `None` for a line with no direction (malformed).
    pub from: Option<Cow<'a, str>>,
    pub to: Option<Cow<'a, str>>,
    pub kind: Option<Kind>,
    /// The request id as JSON text (`7`, `"a"`), for pairing; never `null`.
    pub id: Option<Cow<'a, str>>,
    pub method: Option<Cow<'a, str>>,
    /// The session the message names: `params.sessionId` (`session` in the conductor's
    /// events), or a response's `result.sessionId` (the session `session/new` made).
    pub session: Option<Cow<'a, str>>,
    /// What kind of `session/update` (`params.update.sessionUpdate`), a response's
    /// `stopReason` or permission `outcome`, an error's `code`.
    pub sub: Option<Cow<'a, str>>,
    pub cancel: bool,
    pub error: bool,
    /// Bytes of the message as it went over the wire (the `msg` member, the text after the
    /// arrow; the whole line for the conductor's events).
    pub bytes: usize,
    /// 1-based entry of a batch line (0: not in a batch).
    pub entry: u16,
    /// The line was longer than the index reads whole: what is known came from its start.
    pub cut: bool,
    /// A stop reason: a response's `result.stopReason`, an idle `state_update`'s `stopReason`.
    pub stop: Option<Cow<'a, str>>,
    /// A response's `result.protocolVersion` (an `initialize` answer's).
    pub version: Option<i64>,
    /// ACP v2: a `session/update` whose update is a `state_update` to `idle` (the end of a
    /// v2 turn).
    pub idle: bool,
    /// A sign of ACP v2 on its lanes: a `state_update` or `replay_complete` update (kinds only
    /// v2 has).
    pub v2_sign: bool,
}

impl<'a> Parsed<'a> {
    fn kind(&self) -> Kind {
        self.kind.unwrap_or(Kind::Malformed)
    }
}

/// What reading a file carries from line to line: the direction of the extension's last
/// arrow (for older traces' continuation lines).
#[derive(Debug, Default, Clone)]
pub struct LineState {
    last_arrow: Option<bool>,
}

/// The members of every format's line, read at once (unknown members skipped).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    // acp --log-rpc
    #[serde(rename = "tMs")]
    t_ms: Option<f64>,
    #[serde(borrow)]
    dir: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    msg: Option<&'a RawValue>,
    #[serde(borrow)]
    line: Option<Cow<'a, str>>,
    // the conductor
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    ts: Option<f64>,
    #[serde(borrow)]
    from: Option<Cow<'a, str>>,
    #[serde(borrow)]
    to: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    session: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    is_error: Option<bool>,
    #[serde(borrow)]
    component: Option<Cow<'a, str>>,
    #[serde(borrow)]
    level: Option<Cow<'a, str>>,
    // a bare JSON-RPC message (a continuation line)
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
}

/// Reads one line (without its line break) into rows pushed on `out` (none for a blank
/// line). `cut`: the line is longer than `text`, which is its start.
pub fn parse_line<'a>(text: &'a str, cut: bool, state: &mut LineState, out: &mut Vec<Parsed<'a>>) {
    let text = text.strip_suffix('\r').unwrap_or(text);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return;
    }
    if cut {
        out.push(parse_cut(text, state));
        return;
    }
    if trimmed.starts_with('{') {
        if let Ok(line) = serde_json::from_str::<Line<'a>>(text) {
            if let Some(p) = from_object(line, text, state, out) {
                out.push(p);
            }
            return;
        }
        out.push(malformed());
        return;
    }
    if let Some((t, arrow, rest)) = extension_line(text) {
        match arrow {
            Arrow::Send | Arrow::Recv => {
                let send = arrow == Arrow::Send;
                state.last_arrow = Some(send);
                wire_line(rest, t, send, out);
            }
            Arrow::Stderr => out.push(Parsed {
                t,
                from: Some(Cow::Borrowed(AGENT)),
                kind: Some(Kind::Log),
                bytes: rest.len(),
                ..Parsed::default()
            }),
        }
        return;
    }
    out.push(malformed());
}

fn malformed<'a>() -> Parsed<'a> {
    Parsed {
        kind: Some(Kind::Malformed),
        error: true,
        ..Parsed::default()
    }
}

/// A JSON object line: acp's entry, the conductor's event, or a continuation line.
fn from_object<'a>(
    line: Line<'a>,
    text: &'a str,
    state: &mut LineState,
    out: &mut Vec<Parsed<'a>>,
) -> Option<Parsed<'a>> {
    if let (Some(ty), true) = (&line.ty, line.ts.is_some() || line.from.is_some()) {
        return Some(conductor(&line, ty, text));
    }
    if line.dir.is_some() || line.t_ms.is_some() {
        return Some(acp_entry(line));
    }
    if line.jsonrpc.is_some() {
        if let Some(send) = state.last_arrow {
            wire_line(text, None, send, out);
            return None;
        }
    }
    Some(malformed())
}

/// The lanes of a message going `send` (client to agent) or not.
fn lanes<'a>(send: bool) -> (Option<Cow<'a, str>>, Option<Cow<'a, str>>) {
    let (a, b) = if send {
        (CLIENT, AGENT)
    } else {
        (AGENT, CLIENT)
    };
    (Some(Cow::Borrowed(a)), Some(Cow::Borrowed(b)))
}

/// An entry of acp's `--log-rpc` file.
fn acp_entry(line: Line<'_>) -> Parsed<'_> {
    let send = match line.dir.as_deref() {
        Some("send") => true,
        Some("recv") => false,
        _ => return malformed(),
    };
    let (from, to) = lanes(send);
    let base = Parsed {
        t: line.t_ms,
        from,
        to,
        ..Parsed::default()
    };
    match line.kind.as_deref() {
        Some("invalid") => Parsed {
            kind: Some(Kind::Invalid),
            error: true,
            bytes: match (&line.line, line.msg) {
                (Some(l), _) => l.len(),
                (None, Some(m)) => m.get().len(),
                _ => 0,
            },
            ..base
        },
        Some("oversize") => Parsed {
            kind: Some(Kind::Oversize),
            error: true,
            ..base
        },
        _ => match line.msg {
            Some(msg) => {
                let mut p = message(msg.get(), base);
                if p.kind.is_none() {
                    p.kind = Some(Kind::Invalid);
                    p.error = true;
                }
                p
            }
            None => malformed(),
        },
    }
}

/// The text after an arrow of the extension's trace: one message, a batch, or not JSON.
fn wire_line<'a>(rest: &'a str, t: Option<f64>, send: bool, out: &mut Vec<Parsed<'a>>) {
    let (from, to) = lanes(send);
    let base = || Parsed {
        t,
        from: from.clone(),
        to: to.clone(),
        ..Parsed::default()
    };
    if rest.trim_start().starts_with('[') {
        let mut entries = Vec::new();
        let whole = acp_core::jsonrpc::each_message(rest, |raw, _| entries.push(raw));
        if whole.is_ok() && !entries.is_empty() {
            for (i, raw) in entries.into_iter().enumerate() {
                let mut p = message(raw.get(), base());
                if p.kind.is_none() {
                    p.kind = Some(Kind::Invalid);
                    p.error = true;
                }
                p.entry = u16::try_from(i + 1).unwrap_or(u16::MAX);
                out.push(p);
            }
            return;
        }
    }
    let mut p = message(rest, base());
    if p.kind.is_none() {
        p.kind = Some(Kind::Invalid);
        p.error = true;
        p.bytes = rest.len();
    }
    out.push(p);
}

/// A JSON-RPC message's envelope and the few members the view shows; `kind` stays `None`
/// when `text` is not a JSON object with an envelope the engine takes.
fn message<'a>(text: &'a str, base: Parsed<'a>) -> Parsed<'a> {
    let Ok(env) = acp_core::jsonrpc::Envelope::parse(text) else {
        return base;
    };
    let method = env.method();
    let id = env.id_raw().filter(|r| r.get() != "null");
    let mut p = analyse(method, id, env.params(), env.result(), env.error(), base);
    p.bytes = text.len();
    p
}

/// Kind, session, sub-kind and flags from a message's parts (shared by the wire formats and
/// the conductor's events).
fn analyse<'a>(
    method: Option<Cow<'a, str>>,
    id: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    base: Parsed<'a>,
) -> Parsed<'a> {
    let mut p = base;
    p.id = id.map(|r| Cow::Borrowed(r.get()));
    match method {
        Some(m) => {
            p.kind = Some(if id.is_some() {
                Kind::Request
            } else {
                Kind::Notification
            });
            if let Some(params) = params {
                let params = ParamsView::read(params, m == "session/update");
                p.session = params.session;
                if let Some(kind) = params.update_kind {
                    v2_update(&mut p, kind, params.update);
                }
            }
            p.cancel |= is_cancel_method(&m);
            p.method = Some(m);
        }
        None => {
            if let Some(error) = error {
                p.kind = Some(Kind::Error);
                p.error = true;
                if let Some(code) = object_member(error, "code").and_then(integer) {
                    p.cancel = code == -32800;
                    p.sub = Some(Cow::Owned(code.to_string()));
                }
            } else {
                p.kind = Some(Kind::Response);
                if let Some(result) = result {
                    let stop = object_member(result, "stopReason").and_then(string);
                    let outcome = object_member(result, "outcome")
                        .and_then(|o| object_member(o, "outcome"))
                        .and_then(string);
                    p.session = object_member(result, "sessionId").and_then(string);
                    p.version = object_member(result, "protocolVersion").and_then(integer);
                    p.stop = stop.clone();
                    p.sub = stop.or(outcome);
                    p.cancel = p.sub.as_deref() == Some("cancelled");
                }
            }
        }
    }
    p
}

/// The methods whose message is a cancellation: v1's and v2's `session/cancel`,
/// `$/cancel_request`, and v2's `tool_call/cancel` and `terminal/cancel`.
pub fn is_cancel_method(method: &str) -> bool {
    matches!(
        method,
        "session/cancel" | "$/cancel_request" | "tool_call/cancel" | "terminal/cancel"
    )
}

/// The sub-kind of a `session/update` of kind `kind` (its `update` object is `update`): the
/// kind, and for v2's `state_update` its state and stop reason (`state_update: running`,
/// `state_update: idle (end_turn)`, `state_update: idle` when no reason is given). An idle one
/// ends a v2 turn (`idle`, `stop`; `cancel` when its reason is `cancelled`).
fn v2_update<'a>(p: &mut Parsed<'a>, kind: Cow<'a, str>, update: Option<&'a RawValue>) {
    p.v2_sign = kind == "state_update" || kind == "replay_complete";
    if kind != "state_update" {
        p.sub = Some(kind);
        return;
    }
    let member = |name: &str| update.and_then(|u| object_member(u, name)).and_then(string);
    let state = member("state");
    let reason = member("stopReason");
    p.idle = state.as_deref() == Some("idle");
    p.sub = Some(match (&state, &reason) {
        (Some(s), Some(r)) if p.idle => Cow::Owned(format!("state_update: {s} ({r})")),
        (Some(s), _) => Cow::Owned(format!("state_update: {s}")),
        (None, _) => kind,
    });
    if p.idle {
        p.cancel = reason.as_deref() == Some("cancelled");
        p.stop = reason;
    }
}

/// `params.sessionId`, and a `session/update`'s `params.update` and its `sessionUpdate`
/// (when they are strings).
struct ParamsView<'a> {
    session: Option<Cow<'a, str>>,
    update: Option<&'a RawValue>,
    update_kind: Option<Cow<'a, str>>,
}

impl<'a> ParamsView<'a> {
    fn read(params: &'a RawValue, is_update: bool) -> ParamsView<'a> {
        let update = is_update.then(|| object_member(params, "update")).flatten();
        ParamsView {
            session: object_member(params, "sessionId").and_then(string),
            update,
            update_kind: update
                .and_then(|u| object_member(u, "sessionUpdate"))
                .and_then(string),
        }
    }
}

/// One member of a JSON object, as written (`None` when `raw` is not an object, has no such
/// member, or gives it twice). Only the object's top level is read.
pub fn object_member<'a>(raw: &'a RawValue, name: &str) -> Option<&'a RawValue> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct Find<'n>(&'n str);
    impl<'de, 'n> Visitor<'de> for Find<'n> {
        type Value = Option<&'de RawValue>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == self.0 {
                    if found.is_some() {
                        return Err(serde::de::Error::custom("duplicate member"));
                    }
                    found = Some(map.next_value::<&'de RawValue>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let text = raw.get();
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Find(name)).ok().flatten()
}

/// A JSON string's value (`None` for any other JSON value).
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Cow<'_, str>>(raw.get()).ok()
}

/// A JSON integer's value (`None` for anything else, fractions included).
fn integer(raw: &RawValue) -> Option<i64> {
    serde_json::from_str::<i64>(raw.get()).ok()
}

/// A conductor trace event.
fn conductor<'a>(line: &Line<'a>, ty: &str, text: &'a str) -> Parsed<'a> {
    let base = Parsed {
        t: line.ts.map(|s| s * 1000.0),
        from: line.from.as_deref().map(|f| lane_name(f).into()),
        to: line.to.as_deref().map(|t| lane_name(t).into()),
        bytes: text.len(),
        ..Parsed::default()
    };
    let method = line.method.and_then(string);
    let id = line.id.filter(|r| r.get() != "null");
    let mut p = match ty {
        "request" | "notification" => {
            let id = if ty == "request" { id } else { None };
            let mut p = analyse(method, id, line.params, None, None, base);
            if p.kind == Some(Kind::Notification) && ty == "request" {
                // A request event without an id cannot be paired, but it is a request.
                p.kind = Some(Kind::Request);
            }
            p
        }
        "response" => {
            let (result, error) = if line.is_error == Some(true) {
                (None, line.payload)
            } else {
                (line.payload, None)
            };
            let mut p = analyse(None, id, None, result, error, base);
            if line.is_error == Some(true) && p.kind != Some(Kind::Error) {
                p.kind = Some(Kind::Error);
                p.error = true;
            }
            p
        }
        "trace" => Parsed {
            from: line
                .component
                .as_deref()
                .map(|c| lane_name(c).into())
                .or(base.from.clone()),
            to: None,
            kind: Some(Kind::Log),
            error: line.level.as_deref() == Some("error"),
            ..base
        },
        _ => return malformed(),
    };
    if p.session.is_none() {
        p.session = line.session.and_then(string);
    }
    if p.kind.is_none() || (p.kind() != Kind::Log && (p.from.is_none() || p.to.is_none())) {
        return malformed();
    }
    p
}

/// A conductor component's lane: `Client` and `client` are `client`, `Proxy(0)` and
/// `proxy:0` are `proxy:0`, `Agent` and `agent` are `agent`; others as written.
pub fn lane_name(component: &str) -> String {
    match component {
        "Client" | "client" => CLIENT.to_string(),
        "Agent" | "agent" => AGENT.to_string(),
        c => match c
            .strip_prefix("Proxy(")
            .and_then(|r| r.strip_suffix(')'))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            Some(n) => format!("proxy:{n}"),
            None => c.to_string(),
        },
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrow {
    Send,
    Recv,
    Stderr,
}

/// `[TIME ](→|←|stderr) REST`: the extension's trace line.
fn extension_line(text: &str) -> Option<(Option<f64>, Arrow, &str)> {
    let (t, rest) = match text.split_once(' ') {
        Some((first, rest))
            if !first.is_empty()
                && first.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && first.bytes().next().is_some_and(|b| b.is_ascii_digit()) =>
        {
            (first.parse::<f64>().ok(), rest)
        }
        _ => (None, text),
    };
    for (mark, arrow) in [
        ("→ ", Arrow::Send),
        ("← ", Arrow::Recv),
        ("stderr ", Arrow::Stderr),
    ] {
        if let Some(rest) = rest.strip_prefix(mark) {
            return Some((t, arrow, rest));
        }
    }
    if rest == "stderr" {
        return Some((t, Arrow::Stderr, ""));
    }
    None
}

/// A line longer than the index reads whole: what its start says (`text` is that start).
/// The scalar members before the first large value are read (every format writes its times,
/// directions, ids and methods first); the message's own id and method from the start of its
/// `msg` (or of the text after the arrow).
fn parse_cut<'a>(text: &'a str, state: &mut LineState) -> Parsed<'a> {
    let mut p = if text.trim_start().starts_with('{') {
        let m = super::scan::members(text);
        let get = |k: &str| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        let number = |k: &str| get(k).and_then(|v| v.parse::<f64>().ok());
        let text_of = |k: &str| get(k).and_then(super::scan::string_value);
        if let Some(ty) = text_of("type") {
            let mut p = Parsed {
                t: number("ts").map(|s| s * 1000.0),
                from: text_of("from").map(|f| lane_name(&f).into()),
                to: text_of("to").map(|t| lane_name(&t).into()),
                id: get("id").filter(|v| *v != "null").map(Cow::Borrowed),
                method: text_of("method").map(Cow::Owned),
                ..Parsed::default()
            };
            p.kind = match ty.as_str() {
                "request" => Some(Kind::Request),
                "notification" => Some(Kind::Notification),
                "response" if get("is_error") == Some("true") => Some(Kind::Error),
                "response" => Some(Kind::Response),
                "trace" => Some(Kind::Log),
                _ => None,
            };
            p
        } else if let Some(dir) = text_of("dir") {
            let (from, to) = match dir.as_str() {
                "send" => lanes(true),
                "recv" => lanes(false),
                _ => (None, None),
            };
            let mut p = Parsed {
                t: number("tMs"),
                from,
                to,
                id: get("id").filter(|v| *v != "null").map(Cow::Borrowed),
                method: text_of("method").map(Cow::Owned),
                ..Parsed::default()
            };
            p.kind = match text_of("kind").as_deref() {
                Some("request") => Some(Kind::Request),
                Some("notification") => Some(Kind::Notification),
                Some("response") => Some(Kind::Response),
                Some("error") => Some(Kind::Error),
                Some("invalid") => Some(Kind::Invalid),
                Some("oversize") => Some(Kind::Oversize),
                _ => None,
            };
            p
        } else if state.last_arrow.is_some() && get("jsonrpc").is_some() {
            let send = state.last_arrow == Some(true);
            cut_message(text, None, send)
        } else {
            Parsed::default()
        }
    } else if let Some((t, arrow, rest)) = extension_line(text) {
        match arrow {
            Arrow::Stderr => Parsed {
                t,
                from: Some(Cow::Borrowed(AGENT)),
                kind: Some(Kind::Log),
                ..Parsed::default()
            },
            _ => {
                let send = arrow == Arrow::Send;
                state.last_arrow = Some(send);
                cut_message(rest, t, send)
            }
        }
    } else {
        Parsed::default()
    };
    if p.kind.is_none() || (p.kind != Some(Kind::Log) && (p.from.is_none() || p.to.is_none())) {
        p = malformed();
    }
    if matches!(p.kind(), Kind::Error | Kind::Invalid | Kind::Oversize) {
        p.error = true;
    }
    if p.kind() != Kind::Request {
        // A request's id pairs it; any other kind but an answer keeps none.
        if !p.kind().is_answer() {
            p.id = None;
        }
    }
    p.cancel = p.method.as_deref().is_some_and(is_cancel_method);
    p.cut = true;
    p
}

/// The start of a JSON-RPC message too long to read whole.
fn cut_message(text: &str, t: Option<f64>, send: bool) -> Parsed<'_> {
    let (from, to) = lanes(send);
    let m = super::scan::members(text);
    let get = |k: &str| m.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
    let method = get("method").and_then(super::scan::string_value);
    let id = get("id").filter(|v| *v != "null");
    let kind = match (&method, id) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, _) if m.iter().any(|(k, _)| k == "error") => Kind::Error,
        (None, _) => Kind::Response,
    };
    Parsed {
        t,
        from,
        to,
        kind: Some(kind),
        id: id.map(Cow::Borrowed),
        method: method.map(Cow::Owned),
        ..Parsed::default()
    }
}
