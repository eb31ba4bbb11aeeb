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
    /// An event larger than the decoder's limit was skipped (its size so far).
    Oversize(usize),
}

/// An incremental SSE (`text/event-stream`) reader: feed it the body's bytes as they come,
/// in any pieces; it yields each event's data. Follows the HTML spec's parsing rules for the
/// fields this transport uses (`data`; comments and `event`/`id`/`retry` are ignored; lines
/// end in `\n`, `\r\n` or `\r`). An event above `max_event_bytes` is skipped whole and reported
/// as [`SseItem::Oversize`], so a peer cannot make the reader buffer without bound.
#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// The current line (without its end).
    line: Vec<u8>,
    /// The current event's data.
    data: String,
    has_data: bool,
    /// The current event passed the limit: drop until its end (its size so far).
    oversize: Option<usize>,
    /// While skipping: the current line is not blank.
    skipped_line: bool,
    /// The last byte was `\r` (a following `\n` belongs to the same line end).
    after_cr: bool,
    /// At the very start, a UTF-8 BOM is skipped.
    at_start: bool,
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes,
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            oversize: None,
            skipped_line: false,
            after_cr: false,
            at_start: true,
        }
    }

    /// Bytes held for an event not yet complete.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len()
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
        for &b in input {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(sink),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(sink);
                }
                _ => {
                    if let Some(n) = self.oversize.as_mut() {
                        *n += 1;
                        self.skipped_line = true;
                    } else if self.line.len() + self.data.len() >= self.max_event_bytes {
                        self.oversize = Some(self.line.len() + self.data.len() + 1);
                        self.skipped_line = true;
                        self.line.clear();
                        self.data.clear();
                        self.has_data = false;
                    } else {
                        self.line.push(b);
                    }
                }
            }
        }
    }

    fn end_line(&mut self, sink: &mut dyn FnMut(SseItem)) {
        if std::mem::take(&mut self.skipped_line) {
            return;
        }
        if self.line.is_empty() {
            // A blank line dispatches the event.
            if let Some(n) = self.oversize.take() {
                sink(SseItem::Oversize(n));
            } else if self.has_data {
                sink(SseItem::Data(std::mem::take(&mut self.data)));
            }
            self.data.clear();
            self.has_data = false;
            return;
        }
        let line = std::mem::take(&mut self.line);
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(0) => return, // a comment
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(&String::from_utf8_lossy(value));
            self.has_data = true;
        }
        self.line = line;
        self.line.clear();
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
    fn an_event_over_the_limit_is_skipped_and_reported() {
        let big = "x".repeat(100);
        let input = format!("data: {big}\ndata: {big}\n\ndata: ok\n\n");
        let out = decode_in_pieces(input.as_bytes(), 7, 50);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(matches!(out[0], SseItem::Oversize(n) if n > 50), "{out:?}");
        assert_eq!(out[1], SseItem::Data("ok".into()));
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
