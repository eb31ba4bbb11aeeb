//! The wire of ACP's HTTP transport (HTTP + SSE), as `agent-client-protocol-http` 5 (the
//! official Rust SDK's HTTP crate) speaks it: its constants, which session a message belongs
//! to, and the SSE framing. Sans-IO like the rest of the crate: the hosts (acp-native's
//! `RemoteServer` and remote client, the VS Code extension through acp-wasm's client build)
//! do the HTTP; every rule they must agree on is here, once.
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
//! its result; a successful `session/close` / `session/delete` forgets it. A client sends each
//! message with the session it names by the same rule ([`Outgoing`]), opening that session's
//! stream before the first one, and the stream of the session a `session/new` /
//! `session/fork` answer names at once ([`Answer`]). The rule's case table is
//! `tests/client/http_routing.json`, replayed here and by the VS Code extension.
//!
//! Authentication is acp-rs's own (the official crate has none): a bearer token on every
//! request (`Authorization: Bearer TOKEN`, [`bearer`]; browsers, which cannot set headers on a
//! WebSocket or an `EventSource`, may use `?token=TOKEN` ([`TOKEN_QUERY_PARAM`]) or the
//! WebSocket subprotocol `acp.token.TOKEN` ([`TOKEN_PROTOCOL_PREFIX`])).
//!
//! ```
//! use acp_core::http_sse::{Outgoing, SseDecoder, SseItem};
//!
//! // The client posts a prompt with its session's header, after opening that session's stream.
//! let prompt = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#;
//! let out = Outgoing::read(prompt).unwrap();
//! assert_eq!(out.session.as_deref(), Some("s1"));
//! assert!(!out.is_response());
//!
//! // The stream's events come in any pieces.
//! let mut events = Vec::new();
//! let mut decoder = SseDecoder::new(1 << 20);
//! for piece in [&b"data: {\"jsonrpc\":\"2.0\","[..], b"\"method\":\"session/update\"}\n", b"\n"] {
//!     decoder.feed(piece, &mut |item| events.push(item));
//! }
//! assert_eq!(events, [SseItem::Data(r#"{"jsonrpc":"2.0","method":"session/update"}"#.into())]);
//! ```

use std::time::Duration;

mod routing;
mod sse;

pub use routing::{
    is_connection_scoped, route_of_agent_message, session_id_of, session_of, Answer, Outgoing,
    Route,
};
pub use sse::{sse_event, SkippedEvent, SseDecoder, SseItem, SSE_OVERSIZE_PREFIX_BYTES};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_methods_need_a_session() {
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
        assert!(is_session_opening_method("session/fork"));
        assert!(is_session_closing_method("session/delete"));
        assert_eq!(bearer("t"), "Bearer t");
    }
}
