//! Errors: [`Error`] for misuse by the local caller (a `Result`), [`CallError`] for how an
//! outgoing request failed, and [`PeerError`] for misbehaviour of the other side (an event).

use std::fmt;

use crate::jsonrpc::{ErrorCode, ErrorObject};

/// A local command could not be carried out. Nothing was sent. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The connection is closed: start a new one.
    ConnectionClosed,
    /// No incoming request has this token (never issued, or already answered and forgotten).
    UnknownToken(u64),
    /// This incoming request was already answered (by the application, or by the engine on a
    /// deadline, a `session/cancel` or close): do not answer it again.
    AlreadyAnswered(u64),
    /// No outgoing request with this id is pending.
    UnknownRequest(u64),
    /// This method must be sent on its own, never inside a batch.
    NotAllowedInBatch(String),
    /// The peer did not advertise the capability this call needs.
    CapabilityNotAdvertised {
        method: String,
        capability: &'static str,
    },
    /// A prompt is already in flight for this session: wait for its response or cancel it.
    PromptInFlight { session_id: String },
    /// The params are not a JSON object or array, or failed to serialize.
    InvalidParams(String),
    /// The method name is empty.
    InvalidMethod(String),
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
    TimedOut { after_ms: u64 },
    /// The local side cancelled it; the peer was sent `$/cancel_request`.
    Cancelled,
    /// The connection closed before an answer came.
    Closed { reason: String },
    /// The peer answered with something that is not a valid response.
    InvalidResponse { reason: String },
    /// The agent answered `initialize` with a protocol version this engine does not speak.
    UnsupportedProtocolVersion { version: serde_json::Value },
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
    /// A line was not valid UTF-8 JSON; answered with -32700.
    ParseError,
    /// A message (or batch entry) had no valid shape; answered with -32600.
    InvalidRequest,
    /// A line exceeded the size limit; skipped and answered with -32600.
    Oversize,
    /// A response carried an id no request of ours has.
    UnknownResponseId,
    /// A response came for a request that already completed (answered, timed out, cancelled).
    LateResponse,
    /// The peer sent an error response with `id: null` (it could not read something we sent).
    ErrorWithoutId,
    /// An incoming request was refused because too many are already in flight.
    TooManyRequests,
    /// A received batch held a method that must not be batched; that entry was refused.
    NotAllowedInBatch,
    /// The peer used an unstable method or update that needs a capability it was not given
    /// (feature `unstable`): a request was answered -32601, a notification dropped.
    CapabilityNotAdvertised,
}

impl PeerErrorKind {
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
        }
    }
}

/// One report of peer misbehaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerError {
    pub kind: PeerErrorKind,
    pub message: String,
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}
