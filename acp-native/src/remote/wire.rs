//! The wire of ACP's remote transport, as `agent-client-protocol-http` 5 (the official Rust
//! SDK's HTTP crate) speaks it, shared by our server ([`super::server`]) and client.
//!
//! One endpoint, [`ENDPOINT_PATH`] (`/acp`), plus `GET` [`HEALTH_PATH`] answering `ok`:
//!
//! * `POST` (`Content-Type: application/json`, else 415) carries one client-to-agent JSON-RPC
//!   message (a batch array is answered 400 with an invalid-request error for id `null`).
//!   * An `initialize` request creates a connection: the answer is `200` with the initialize
//!     response as its JSON body and the new connection's id in [`HEADER_CONNECTION_ID`]
//!     (an initialize *error* is answered `200` with the error and no connection).
//!   * Any other message needs [`HEADER_CONNECTION_ID`] (400 without, 404 for an unknown id)
//!     and is answered `202 Accepted` with no body. A request whose method is session-scoped
//!     ([`method_requires_session_header`]) needs a session id, in [`HEADER_SESSION_ID`] or in
//!     `params.sessionId` (400 `Acp-Session-Id header required` without; 400 when both are
//!     present and differ); the header's id is added to params that lack one.
//!   * Bodies over [`MAX_POST_BODY_BYTES`] are answered 413.
//! * `GET` with `Accept: text/event-stream` (else 406) and [`HEADER_CONNECTION_ID`] opens an
//!   SSE stream: the connection's stream, or with [`HEADER_SESSION_ID`] that session's stream
//!   (one reader each at a time: a second gets 409; a session the agent has not named yet
//!   gets a stream only while fewer than [`MAX_UNCONFIRMED_SESSION_STREAMS`] such are open,
//!   else 404). Each event is `data: <one JSON-RPC message>` ([`sse_event`]); a comment
//!   [`SSE_KEEPALIVE`] goes out every [`SSE_KEEPALIVE_INTERVAL`]. The response echoes the ids.
//! * `GET` with a WebSocket upgrade on the same path: one text frame per JSON-RPC message in
//!   each direction, one agent per socket; the `101` carries [`HEADER_CONNECTION_ID`]. No
//!   subprotocol is negotiated (the official client refuses a `Sec-WebSocket-Protocol` in the
//!   answer it did not ask for).
//! * `DELETE` with [`HEADER_CONNECTION_ID`] ends the connection: `202`, or 400/404.
//!
//! Which SSE stream carries an agent-to-client message ([`route_of_agent_message`]):
//! a request or notification naming a `sessionId` (not [`is_connection_scoped`]) goes on that
//! session's stream (and makes the session known); a response goes where the request it
//! answers was routed (the session's stream for a session-scoped request whose session has a
//! stream, else the connection's stream); everything else, including malformed output, goes
//! on the connection's stream. A successful `session/new` / `session/fork` names the session in
//! its result; a successful `session/close` / `session/delete` forgets it.
//!
//! Authentication is ours (the official crate has none): a bearer token on every request
//! (`Authorization: Bearer TOKEN`; browsers, which cannot set headers on a WebSocket or an
//! `EventSource`, may use `?token=TOKEN` or the WebSocket subprotocol `acp.token.TOKEN`).

use std::time::Duration;

/// The ACP endpoint's path.
pub const ENDPOINT_PATH: &str = "/acp";
/// The health route's path (`GET` answers `200 ok`).
pub const HEALTH_PATH: &str = "/health";
/// Header naming the connection (set by the server on the initialize answer).
pub const HEADER_CONNECTION_ID: &str = "acp-connection-id";
/// Header naming the session a POST or an SSE stream is about.
pub const HEADER_SESSION_ID: &str = "acp-session-id";
/// The SSE media type (`Accept` of a stream GET, `Content-Type` of its answer).
pub const EVENT_STREAM_MIME_TYPE: &str = "text/event-stream";
/// The media type of POST bodies and of the initialize answer.
pub const JSON_MIME_TYPE: &str = "application/json";
/// The official server's POST body limit (ours is configurable, this by default).
pub const MAX_POST_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Session streams a client may hold open for sessions the agent has not named yet.
pub const MAX_UNCONFIRMED_SESSION_STREAMS: usize = 16;
/// How often an idle SSE stream carries [`SSE_KEEPALIVE`].
pub const SSE_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
/// An SSE comment (an empty one, as the official server sends), ignored by readers.
pub const SSE_KEEPALIVE: &str = ":\n\n";
/// The WebSocket subprotocol prefix of a token offered by a browser (`acp.token.TOKEN`).
pub const TOKEN_PROTOCOL_PREFIX: &str = "acp.token.";
/// The query parameter a token may travel in (`/acp?token=TOKEN`).
pub const TOKEN_QUERY_PARAM: &str = "token";

/// `Authorization` header value for `token`.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Client methods that are about one session: their POST needs [`HEADER_SESSION_ID`] or
/// `params.sessionId`.
pub fn method_requires_session_header(method: &str) -> bool {
    matches!(
        method,
        "session/prompt"
            | "session/cancel"
            | "session/close"
            | "session/delete"
            | "session/fork"
            | "session/load"
            | "session/resume"
            | "session/set_config_option"
            | "session/set_mode"
            | "session/set_model"
    )
}

/// Methods whose successful result names a new session (`result.sessionId`).
pub fn is_session_opening_method(method: &str) -> bool {
    matches!(method, "session/new" | "session/fork")
}

/// Methods whose successful result ends the session they are scoped to.
pub fn is_session_closing_method(method: &str) -> bool {
    matches!(method, "session/close" | "session/delete")
}

/// Messages that belong to the connection whatever session they name: `$/…` protocol
/// methods and `$/cancel_request`, also inside `proxy/successor` envelopes.
pub fn is_connection_scoped(method: &str, params: Option<&serde_json::Value>) -> bool {
    if method.starts_with("$/") {
        return true;
    }
    // A `proxy/successor` envelope wrapping a cancel request (possibly nested).
    let (mut method, mut params) = (method, params);
    while method == "proxy/successor" {
        let Some(inner) = params
            .and_then(|p| p.get("method"))
            .and_then(|m| m.as_str())
        else {
            return false;
        };
        method = inner;
        params = params.and_then(|p| p.get("params"));
    }
    method == "$/cancel_request"
}

/// The session a request or notification is about: `params.sessionId` (a string), unless the
/// message is [`is_connection_scoped`].
pub fn session_id_of<'a>(method: &str, params: Option<&'a serde_json::Value>) -> Option<&'a str> {
    if is_connection_scoped(method, params) {
        return None;
    }
    params?.get("sessionId")?.as_str()
}

/// Where an agent-to-client message goes on an HTTP+SSE connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The connection's stream.
    Connection,
    /// That session's stream.
    Session(String),
}

/// The route of an agent-to-client request or notification (responses follow their request:
/// the server keeps that table).
pub fn route_of_agent_message(method: &str, params: Option<&serde_json::Value>) -> Route {
    match session_id_of(method, params) {
        Some(id) => Route::Session(id.to_string()),
        None => Route::Connection,
    }
}

/// One SSE event carrying `data` (a JSON-RPC message): `data: …\n\n`, each line of `data` on
/// its own `data:` line (compact JSON has none).
pub fn sse_event(data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 8);
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// What an [`SseDecoder`] gives for each event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event's data (its `data:` lines joined by `\n`); events without data are skipped.
    Data(String),
    /// An event whose data was over the decoder's limit, skipped without being held.
    Oversize {
        /// The first bytes of its data: [`SSE_OVERSIZE_PREFIX_BYTES`], or one more than the
        /// limit if that is less (the same however the input was split), for
        /// [`acp_core::sniff`] to read its id and method.
        prefix: Vec<u8>,
        /// The size of its whole data.
        size: usize,
    },
}

/// How much of an oversize event's data an [`SseDecoder`] keeps: as much as acp-core keeps
/// of an oversize NDJSON line.
pub const SSE_OVERSIZE_PREFIX_BYTES: usize = acp_core::framing::SNIFF_PREFIX_BYTES;

/// Where an [`SseDecoder`] is in the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SseLine {
    /// At its start (a line end here is a blank line: the event is dispatched).
    Start,
    /// In the field name: `len` bytes so far, `data` while they are a prefix of `data`.
    Field { len: usize, data: bool },
    /// A comment (`:` first): ignored.
    Comment,
    /// In a field's value (`fresh`: right after the `:`, where one space is skipped); only
    /// a `data` field's value is kept.
    Value { data: bool, fresh: bool },
}

/// An incremental SSE (`text/event-stream`) reader: feed it the body's bytes as they come,
/// in any pieces; it yields each event's data. Follows the HTML spec's parsing rules for the
/// fields this transport uses (`data`; comments and `event`/`id`/`retry` are ignored; lines
/// end in `\n`, `\r\n` or `\r`). Only an event's data is held, never a line: comments and other
/// fields are skipped as they stream by. An event whose data passes `max_event_bytes` is not
/// held either: its first bytes are kept, the rest is counted and dropped until the event
/// ends, and it is reported as [`SseItem::Oversize`] (so its id can be read: the caller skips
/// it as acp-core skips an oversize line). A peer cannot make the reader hold more than the
/// limit ([`SseDecoder::capacity`]).
#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// The current event's data; once it is over the limit, only its first bytes.
    data: Vec<u8>,
    /// The size of the current event's data so far (with the `\n`s between its lines).
    size: usize,
    has_data: bool,
    /// The current event's data passed the limit.
    oversize: bool,
    line: SseLine,
    /// The last byte was `\r` (a following `\n` belongs to the same line end).
    after_cr: bool,
    /// At the very start, a UTF-8 BOM is skipped.
    at_start: bool,
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes: max_event_bytes.max(1),
            data: Vec::new(),
            size: 0,
            has_data: false,
            oversize: false,
            line: SseLine::Start,
            after_cr: false,
            at_start: true,
        }
    }

    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Bytes held for an event not yet complete (at most the limit; while an oversize event
    /// is skipped, at most its prefix).
    pub fn buffered(&self) -> usize {
        self.data.len()
    }

    /// Bytes allocated for an event not yet complete (at most the limit, or the prefix's size
    /// if that is larger).
    pub fn capacity(&self) -> usize {
        self.data.capacity()
    }

    /// The prefix kept of an oversize event: see [`SseItem::Oversize`].
    fn prefix_cap(&self) -> usize {
        SSE_OVERSIZE_PREFIX_BYTES.min(self.max_event_bytes + 1)
    }

    /// Decodes `input`, calling `sink` for each complete event.
    pub fn feed(&mut self, mut input: &[u8], sink: &mut dyn FnMut(SseItem)) {
        if self.at_start && !input.is_empty() {
            // The BOM may arrive split; only a whole one at the start is skipped.
            if input.starts_with(b"\xEF\xBB\xBF") {
                input = &input[3..];
            }
            self.at_start = false;
        }
        while let Some(&b) = input.first() {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                input = &input[1..];
                continue;
            }
            if b == b'\n' || b == b'\r' {
                self.after_cr = b == b'\r';
                self.end_line(sink);
                input = &input[1..];
                continue;
            }
            match self.line {
                SseLine::Start if b == b':' => self.line = SseLine::Comment,
                SseLine::Start => {
                    self.line = SseLine::Field {
                        len: 1,
                        data: b == b'd',
                    }
                }
                SseLine::Field { len, data } if b == b':' => {
                    let data = data && len == 4;
                    if data {
                        self.start_data_line();
                    }
                    self.line = SseLine::Value { data, fresh: true };
                }
                SseLine::Field { len, data } => {
                    self.line = SseLine::Field {
                        len: len.saturating_add(1),
                        data: data && len < 4 && b == b"data"[len],
                    }
                }
                SseLine::Value { data, fresh: true } => {
                    self.line = SseLine::Value { data, fresh: false };
                    if b == b' ' {
                        input = &input[1..];
                    }
                    continue;
                }
                SseLine::Comment | SseLine::Value { .. } => {
                    // The rest of the line, at once.
                    let end = input
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .unwrap_or(input.len());
                    if self.line
                        == (SseLine::Value {
                            data: true,
                            fresh: false,
                        })
                    {
                        self.push_data(&input[..end]);
                    }
                    input = &input[end..];
                    continue;
                }
            }
            input = &input[1..];
        }
    }

    fn end_line(&mut self, sink: &mut dyn FnMut(SseItem)) {
        match std::mem::replace(&mut self.line, SseLine::Start) {
            // A blank line dispatches the event.
            SseLine::Start => self.dispatch(sink),
            // `data` alone: a data line with an empty value.
            SseLine::Field { len: 4, data: true } => self.start_data_line(),
            _ => {}
        }
    }

    /// A `data` line begins: lines after the first are joined with `\n`.
    fn start_data_line(&mut self) {
        if self.has_data {
            self.push_data(b"\n");
        }
        self.has_data = true;
    }

    fn push_data(&mut self, bytes: &[u8]) {
        self.size = self.size.saturating_add(bytes.len());
        if self.oversize {
            let room = self.prefix_cap().saturating_sub(self.data.len());
            self.data.extend_from_slice(&bytes[..bytes.len().min(room)]);
            return;
        }
        let need = self.data.len() + bytes.len();
        if need <= self.max_event_bytes {
            if need > self.data.capacity() {
                // Doubling, but never past the limit.
                let target = (self.data.capacity() * 2).clamp(need, self.max_event_bytes);
                self.data.reserve_exact(target - self.data.len());
            }
            self.data.extend_from_slice(bytes);
            return;
        }
        // Over the limit: keep the first bytes, drop the rest until the event ends.
        self.oversize = true;
        let cap = self.prefix_cap();
        if self.data.len() >= cap {
            self.data.truncate(cap);
        } else {
            let more = cap - self.data.len();
            self.data.reserve_exact(more);
            self.data.extend_from_slice(&bytes[..more]);
        }
        self.data.shrink_to(cap);
    }

    fn dispatch(&mut self, sink: &mut dyn FnMut(SseItem)) {
        let data = std::mem::take(&mut self.data);
        if self.oversize {
            sink(SseItem::Oversize {
                prefix: data,
                size: self.size,
            });
        } else if self.has_data {
            let text = String::from_utf8(data)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            sink(SseItem::Data(text));
        }
        self.size = 0;
        self.has_data = false;
        self.oversize = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode_in_pieces(input: &[u8], piece: usize, limit: usize) -> Vec<SseItem> {
        let mut d = SseDecoder::new(limit);
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            d.feed(chunk, &mut |e| out.push(e));
        }
        out
    }

    #[test]
    fn sse_events_decode_split_at_every_offset() {
        let input = b"\xEF\xBB\xBF: hello\n\ndata: {\"a\":1}\n\ndata:x\r\ndata: y\r\rid: 3\nevent: m\ndata\n\nretry: 5\n\n";
        let expected = vec![
            SseItem::Data("{\"a\":1}".into()),
            SseItem::Data("x\ny".into()),
            SseItem::Data("".into()),
        ];
        for piece in 1..input.len() {
            assert_eq!(decode_in_pieces(input, piece, 1 << 20), expected, "{piece}");
        }
    }

    #[test]
    fn an_event_over_the_limit_is_skipped_and_reported_with_its_first_bytes() {
        // A response whose data passes the limit, over two data lines, with a comment and an
        // `id` field inside it; then a small event.
        let data = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"t\":\"{}\n{}\"}}}}",
            "x".repeat(100),
            "y".repeat(100)
        );
        let (first, second) = data.split_once('\n').unwrap();
        let input = format!("data: {first}\n: a comment\nid: 5\ndata:{second}\n\ndata: ok\n\n");
        let limit = 100;
        let expected = vec![
            SseItem::Oversize {
                prefix: data.as_bytes()[..limit + 1].to_vec(),
                size: data.len(),
            },
            SseItem::Data("ok".into()),
        ];
        for piece in 1..input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), piece, limit),
                expected,
                "{piece}"
            );
        }
        let SseItem::Oversize { prefix, .. } = &expected[0] else {
            unreachable!()
        };
        let sniffed = acp_core::sniff::sniff(prefix);
        assert_eq!(sniffed.response_id(), Some(&acp_core::Id::from(7)));
        // Exactly at the limit is not over it.
        let at = "z".repeat(limit);
        assert_eq!(
            decode_in_pieces(format!("data: {at}\n\n").as_bytes(), 3, limit),
            vec![SseItem::Data(at)]
        );
    }

    #[test]
    fn comments_and_other_fields_are_never_held() {
        let long = "c".repeat(10_000);
        let input = format!(": {long}\nevent: {long}\n{long}\ndata: ok\n\n");
        let mut d = SseDecoder::new(100);
        let mut out = Vec::new();
        for chunk in input.as_bytes().chunks(1000) {
            d.feed(chunk, &mut |e| out.push(e));
            assert!(d.capacity() <= 100, "{}", d.capacity());
        }
        assert_eq!(out, vec![SseItem::Data("ok".into())]);
    }

    /// A 50 MiB event (one long data line, then one of many short lines) through a decoder
    /// limited to 1 MiB: what it holds never passes the limit, each is reported with its first
    /// bytes and whole size, and the event after them arrives.
    #[test]
    fn a_50_mib_event_is_skipped_in_bounded_memory() {
        const LIMIT: usize = 1 << 20;
        const BIG: usize = 50 << 20;
        let mut d = SseDecoder::new(LIMIT);
        let mut out = Vec::new();
        let mut most = 0;
        let mut feed = |d: &mut SseDecoder, bytes: &[u8]| {
            for chunk in bytes.chunks(64 << 10) {
                d.feed(chunk, &mut |e| out.push(e));
                most = most.max(d.capacity()).max(d.buffered());
            }
        };
        let head = r#"{"jsonrpc":"2.0","id":3,"result":{"text":""#;
        let filler = vec![b'a'; 1 << 20];
        let filler_line = [b"data: ".as_slice(), &[b'b'; 1018], b"\n"].concat();
        // One line.
        feed(&mut d, format!("data: {head}").as_bytes());
        for _ in 0..BIG / filler.len() {
            feed(&mut d, &filler);
        }
        feed(&mut d, b"\"}}\n\n");
        // Many lines (each 1018 bytes of data and the `\n` joining it to the next).
        feed(&mut d, format!("data: {head}\n").as_bytes());
        let lines = BIG / filler_line.len();
        let block = filler_line.repeat(1024);
        for _ in 0..lines / 1024 {
            feed(&mut d, &block);
        }
        feed(&mut d, b"data: \"}}\n\ndata: {\"after\":1}\n\n");
        assert!(most <= LIMIT, "held {most} bytes for a {LIMIT}-byte limit");
        assert_eq!(out.len(), 3, "{:?}", &out[2..]);
        let sizes = [
            head.len() + BIG + 3,
            head.len() + 1 + (lines / 1024) * 1024 * 1019 + 3,
        ];
        for (item, size) in out.iter().zip(sizes) {
            let SseItem::Oversize { prefix, size: got } = item else {
                panic!("not skipped: {:.100?}", item);
            };
            assert_eq!(*got, size);
            assert_eq!(prefix.len(), SSE_OVERSIZE_PREFIX_BYTES);
            assert!(prefix.starts_with(head.as_bytes()));
            let sniffed = acp_core::sniff::sniff(prefix);
            assert_eq!(sniffed.response_id(), Some(&acp_core::Id::from(3)));
        }
        assert_eq!(out[2], SseItem::Data("{\"after\":1}".into()));
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn sse_event_round_trips() {
        for data in ["{\"jsonrpc\":\"2.0\"}", "a\nb", ""] {
            let mut d = SseDecoder::new(1 << 10);
            let mut out = Vec::new();
            d.feed(sse_event(data).as_bytes(), &mut |e| out.push(e));
            assert_eq!(out, vec![SseItem::Data(data.into())]);
        }
        assert_eq!(sse_event("{}"), "data: {}\n\n");
    }

    #[test]
    fn session_routing_follows_the_official_transport() {
        let p = json!({"sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("session/update", Some(&p)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("session/request_permission", Some(&p)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("$/progress", Some(&p)),
            Route::Connection
        );
        let cancel = json!({"requestId": 1, "sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("$/cancel_request", Some(&cancel)),
            Route::Connection
        );
        let wrapped = json!({"method": "proxy/successor", "params": {"method": "$/cancel_request", "params": {"requestId": 1}}, "sessionId": "s1"});
        assert!(is_connection_scoped("proxy/successor", Some(&wrapped)));
        let other = json!({"method": "session/update", "params": {}, "sessionId": "s1"});
        assert_eq!(
            route_of_agent_message("proxy/successor", Some(&other)),
            Route::Session("s1".into())
        );
        assert_eq!(
            route_of_agent_message("fs/read_text_file", None),
            Route::Connection
        );
        assert_eq!(
            route_of_agent_message("x", Some(&json!({"sessionId": 5}))),
            Route::Connection
        );
        for m in [
            "session/prompt",
            "session/cancel",
            "session/load",
            "session/set_mode",
        ] {
            assert!(method_requires_session_header(m), "{m}");
        }
        for m in ["initialize", "session/new", "session/list", "authenticate"] {
            assert!(!method_requires_session_header(m), "{m}");
        }
        assert_eq!(bearer("t"), "Bearer t");
    }
}
