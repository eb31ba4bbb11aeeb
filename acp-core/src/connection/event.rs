//! What the connection tells the application ([`Event`]), and why it answered a request itself.

use super::*;

/// Why the engine answered an incoming request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoAnswerReason {
    /// Its deadline passed.
    Timeout,
    /// The client sent `session/cancel` for its session (permission requests only).
    SessionCancelled,
    /// The connection closed.
    Closed,
}

impl AutoAnswerReason {
    /// A stable name: `timeout`, `sessionCancelled` or `closed` (the `reason` of the event's
    /// JSON shape).
    pub fn name(self) -> &'static str {
        match self {
            AutoAnswerReason::Timeout => "timeout",
            AutoAnswerReason::SessionCancelled => "sessionCancelled",
            AutoAnswerReason::Closed => "closed",
        }
    }
}

/// What the application must know or do.
#[derive(Debug)]
pub enum Event<T> {
    /// The peer sent a request: answer it exactly once with [`Connection::respond`] (or
    /// [`Connection::respond_error`]) using `token`.
    Request {
        /// The engine's handle of the request, unique within the connection and never reused
        /// (the peer's ids may repeat or be `null`).
        token: u64,
        /// The id the peer gave it, which the answer echoes.
        id: Id,
        /// The method name, as sent.
        method: String,
        /// The params as the peer wrote them (an object or an array); `None` when absent or
        /// `null`.
        params: Option<Box<RawValue>>,
    },
    /// The peer sent a notification (handle in order; never answered). `$/cancel_request` is
    /// not one of them: it becomes [`Event::CancelRequested`].
    Notification {
        /// The method name, as sent.
        method: String,
        /// The params as the peer wrote them (an object or an array); `None` when absent or
        /// `null`.
        params: Option<Box<RawValue>>,
    },
    /// An outgoing request completed: with a result, or with why not. Every request the
    /// connection sent completes exactly once, at the latest when the connection closes.
    Response {
        /// The id [`Connection::send_request`] (or [`Connection::send_batch`]) returned.
        id: u64,
        /// The request's method.
        method: String,
        /// The caller data of its [`RequestOptions`].
        data: T,
        /// The peer's `result`, as it wrote it, or why there is none.
        result: Result<Box<RawValue>, CallError>,
    },
    /// The engine answered an incoming request itself; a later `respond` gets
    /// [`Error::AlreadyAnswered`]. UIs should close whatever they showed for it. After
    /// [`Connection::handle_eof`] nothing is sent (the peer is gone): the request is only
    /// forgotten.
    AutoAnswered {
        /// The token of the [`Event::Request`] that was answered.
        token: u64,
        /// Its method.
        method: String,
        /// Why the engine answered it.
        reason: AutoAnswerReason,
    },
    /// The peer asked (`$/cancel_request`) to cancel this incoming request. Stop work and
    /// answer it (typically with -32800 Request cancelled). The engine does not answer it
    /// for you; a cancellation of an id that is not pending is ignored.
    CancelRequested {
        /// The token of the pending [`Event::Request`] (one event per pending request with
        /// the cancelled id).
        token: u64,
    },
    /// The peer misbehaved. Informational: the engine already answered where the protocol
    /// says so, and the stream goes on.
    ProtocolError(PeerError),
    /// The connection is closed (emitted once, last).
    Closed {
        /// The reason given to [`Connection::close`], or `"the peer closed the connection"`
        /// after [`Connection::handle_eof`].
        reason: String,
    },
}

impl<T> Event<T> {
    /// The event as a JSON object in the language-neutral shape shared by the conformance
    /// vectors and the wasm build (`type`, then the fields; see `acp-wasm/API.md`). Caller
    /// data is not included. It is [`Event::write_json`]'s text, parsed: one definition of the
    /// shape, pinned field by field by the vectors in `tests/vectors/`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json_string()).expect("Event::write_json writes valid JSON")
    }
}
