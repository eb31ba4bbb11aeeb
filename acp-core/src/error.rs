//! Errors: [`Error`] for misuse by the local caller (a `Result`), [`CallError`] for how an
//! outgoing request failed, and [`PeerError`] for misbehaviour of the other side (an event).

use std::fmt;

use crate::jsonrpc::{ErrorCode, ErrorObject};

/// A local command could not be carried out. Nothing was sent. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The connection is closed: start a new one.
    ConnectionClosed,
    /// No incoming request has this token: it was never issued by this connection (a token
    /// answered before gives [`Error::AlreadyAnswered`]).
    UnknownToken(u64),
    /// This incoming request was already answered (by the application, or by the engine on a
    /// deadline, a `session/cancel` or close): do not answer it again.
    AlreadyAnswered(u64),
    /// No outgoing request with this id is pending (never sent, or already completed).
    UnknownRequest(u64),
    /// This method must be sent on its own, never inside a batch.
    NotAllowedInBatch(String),
    /// The peer did not advertise the capability this call needs.
    CapabilityNotAdvertised {
        /// The method that was refused.
        method: String,
        /// The capability it needs, as a path in the capabilities object (`terminal`,
        /// `fs.readTextFile`, `sessionCapabilities.fork`, …).
        capability: &'static str,
    },
    /// A prompt is already in flight for this session: wait for its response or cancel it.
    PromptInFlight {
        /// The session of the refused `session/prompt`.
        session_id: String,
    },
    /// The params are not a JSON object or array, or failed to serialize (for
    /// [`Connection::respond`](crate::Connection::respond): the result failed to serialize;
    /// for [`Connection::send_batch`](crate::Connection::send_batch): the batch is empty). The
    /// string says why.
    InvalidParams(String),
    /// The method name is empty.
    InvalidMethod(String),
    /// The message breaks a rule of ACP v2, the version this connection negotiated (feature
    /// `unstable_protocol_v2`, `acp_core::v2`): a method or update kind v2 removed, an upsert
    /// without its key, a reserved enum value, a turn or replay out of order, an `initialize`
    /// answer of version 2 to a client that did not ask for it. The string says which.
    ProtocolVersionRule(String),
}

impl Error {
    /// A stable name per kind (also the JS `Error.name` in the wasm build).
    pub fn name(&self) -> &'static str {
        match self {
            Error::ConnectionClosed => "ConnectionClosed",
            Error::UnknownToken(_) => "UnknownToken",
            Error::AlreadyAnswered(_) => "AlreadyAnswered",
            Error::UnknownRequest(_) => "UnknownRequest",
            Error::NotAllowedInBatch(_) => "NotAllowedInBatch",
            Error::CapabilityNotAdvertised { .. } => "CapabilityNotAdvertised",
            Error::PromptInFlight { .. } => "PromptInFlight",
            Error::InvalidParams(_) => "InvalidParams",
            Error::InvalidMethod(_) => "InvalidMethod",
            Error::ProtocolVersionRule(_) => "ProtocolVersionRule",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ConnectionClosed => f.write_str("the connection is closed"),
            Error::UnknownToken(t) => write!(f, "no incoming request has token {t}"),
            Error::AlreadyAnswered(t) => {
                write!(f, "incoming request {t} was already answered")
            }
            Error::UnknownRequest(id) => write!(f, "no outgoing request {id} is pending"),
            Error::NotAllowedInBatch(m) => {
                write!(f, "{m} must be sent on its own, not inside a batch")
            }
            Error::CapabilityNotAdvertised { method, capability } => write!(
                f,
                "cannot call {method}: the `{capability}` capability was not advertised in initialize"
            ),
            Error::PromptInFlight { session_id } => write!(
                f,
                "a prompt is already in flight for session {session_id}: wait for it or cancel it"
            ),
            Error::InvalidParams(why) => write!(f, "invalid params: {why}"),
            Error::InvalidMethod(m) => write!(f, "invalid method name {m:?}"),
            Error::ProtocolVersionRule(why) => write!(f, "not allowed in ACP v2: {why}"),
        }
    }
}

impl std::error::Error for Error {}

/// Why an outgoing request completed without a result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The peer answered with an error object.
    Remote(ErrorObject),
    /// The deadline passed; the peer was sent `$/cancel_request`.
    TimedOut {
        /// The request's timeout, in milliseconds.
        after_ms: u64,
    },
    /// The local side cancelled it; the peer was sent `$/cancel_request`.
    Cancelled,
    /// The connection closed before an answer came.
    Closed {
        /// Why it closed (the [`Event::Closed`](crate::Event::Closed) reason).
        reason: String,
    },
    /// The peer answered with something that is not a valid response: a malformed response
    /// object, a response too large to read, or an `initialize` result without
    /// `protocolVersion`.
    InvalidResponse {
        /// What was wrong with it.
        reason: String,
    },
    /// The agent answered `initialize` with a protocol version this engine does not speak
    /// (not [`PROTOCOL_VERSION`](crate::acp::PROTOCOL_VERSION)). The connection stays open;
    /// the client should close it.
    UnsupportedProtocolVersion {
        /// The `protocolVersion` the agent sent, as it sent it.
        version: serde_json::Value,
    },
}

impl CallError {
    /// A short kind name: `remote`, `timeout`, `cancelled`, `closed`, `invalidResponse`,
    /// `unsupportedProtocolVersion`.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Remote(_) => "remote",
            CallError::TimedOut { .. } => "timeout",
            CallError::Cancelled => "cancelled",
            CallError::Closed { .. } => "closed",
            CallError::InvalidResponse { .. } => "invalidResponse",
            CallError::UnsupportedProtocolVersion { .. } => "unsupportedProtocolVersion",
        }
    }

    /// The failure as a JSON-RPC error object (the remote one as is).
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            CallError::Remote(e) => e.clone(),
            CallError::TimedOut { after_ms } => ErrorObject::new(
                ErrorCode::RequestCancelled,
                format!("request timed out after {after_ms} ms"),
            )
            .with_data(serde_json::json!({ "reason": "timeout", "timeoutMs": after_ms })),
            CallError::Cancelled => ErrorObject::from_code(ErrorCode::RequestCancelled),
            CallError::Closed { reason } => ErrorObject::new(
                ErrorCode::InternalError,
                format!("connection closed: {reason}"),
            )
            .with_data(serde_json::json!({ "reason": "closed" })),
            CallError::InvalidResponse { reason } => ErrorObject::new(
                ErrorCode::InternalError,
                format!("invalid response from peer: {reason}"),
            ),
            CallError::UnsupportedProtocolVersion { version } => ErrorObject::new(
                ErrorCode::InternalError,
                format!(
                    "agent answered with unsupported protocol version {version}; this client speaks {}",
                    crate::acp::PROTOCOL_VERSION
                ),
            ),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Remote(e) => write!(f, "peer answered with an error: {e}"),
            other => f.write_str(&other.to_error_object().message),
        }
    }
}

impl std::error::Error for CallError {}

/// Kinds of peer misbehaviour (reported as [`crate::Event::ProtocolError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerErrorKind {
    /// A line was not valid UTF-8 JSON, or nested deeper than
    /// [`MAX_NESTING`](crate::jsonrpc::MAX_NESTING); answered with -32700.
    ParseError,
    /// A message (or batch entry) had no valid shape, or a batch was refused as a whole
    /// (empty, over [`Config::max_batch_entries`](crate::Config::max_batch_entries), or
    /// [`BatchPolicy::RejectAll`](crate::BatchPolicy::RejectAll)); answered with -32600. A
    /// malformed response to a pending request of ours is not answered: that request
    /// completes with [`CallError::InvalidResponse`].
    InvalidRequest,
    /// A line exceeded the size limit and was skipped. A response to a pending request of
    /// ours (as far as its first bytes tell) completes that request with
    /// [`CallError::InvalidResponse`]; anything else is answered with -32600, echoing the id
    /// of a request when its first bytes show one (else `id: null`).
    Oversize,
    /// A response carried an id no request of ours has.
    UnknownResponseId,
    /// A response came for a request that already completed (answered, timed out, cancelled).
    LateResponse,
    /// The peer sent a response with `id: null`, usually an error (it could not read
    /// something we sent). One that refuses a batch of ours is not reported: it completes
    /// the batch's requests.
    ErrorWithoutId,
    /// An incoming request was refused (-32603) because
    /// [`Config::max_incoming_in_flight`](crate::Config::max_incoming_in_flight) are already
    /// in flight.
    TooManyRequests,
    /// A received batch held a method that must not be batched; that entry was refused
    /// (-32600, with its id) and the rest of the batch processed.
    NotAllowedInBatch,
    /// The peer used an unstable method or update that needs a capability it was not given
    /// (feature `unstable`): a request was answered -32601, a notification dropped.
    CapabilityNotAdvertised,
    /// The peer broke a rule of ACP v2 on a connection that negotiated it (feature
    /// `unstable_protocol_v2`, `acp_core::v2`): a request of a method v2 removed (answered
    /// -32601), a malformed or removed `session/update` kind or a `replay_complete` nobody
    /// asked for (dropped), a `session/resume` answered before its replay completed
    /// (delivered).
    ProtocolVersionRule,
}

impl PeerErrorKind {
    /// A stable camelCase name (`parseError`, `oversize`, …): the `kind` of the event's JSON
    /// shape.
    pub fn name(self) -> &'static str {
        match self {
            PeerErrorKind::ParseError => "parseError",
            PeerErrorKind::InvalidRequest => "invalidRequest",
            PeerErrorKind::Oversize => "oversize",
            PeerErrorKind::UnknownResponseId => "unknownResponseId",
            PeerErrorKind::LateResponse => "lateResponse",
            PeerErrorKind::ErrorWithoutId => "errorWithoutId",
            PeerErrorKind::TooManyRequests => "tooManyRequests",
            PeerErrorKind::NotAllowedInBatch => "notAllowedInBatch",
            PeerErrorKind::CapabilityNotAdvertised => "capabilityNotAdvertised",
            PeerErrorKind::ProtocolVersionRule => "protocolVersionRule",
        }
    }
}

/// One report of peer misbehaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerError {
    /// What kind of misbehaviour it was.
    pub kind: PeerErrorKind,
    /// A human-readable description (for logs; not a stable format).
    pub message: String,
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}
