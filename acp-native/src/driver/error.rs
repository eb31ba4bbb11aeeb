//! [`RpcError`]: how a call failed.

use std::fmt;

use acp_core::{CallError, ErrorCode, ErrorObject};

#[cfg(doc)] // (for links in the docs)
use super::RpcClient;

/// How a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcError {
    /// Sent, then failed: the peer's error, a timeout, a cancellation, the connection closing,
    /// an invalid response.
    Call(CallError),
    /// Not sent: the engine refused it locally (capability not advertised, a prompt already in
    /// flight for the session, params that are not an object...).
    Refused(acp_core::Error),
    /// A result came but did not decode into the expected type.
    Decode {
        /// The method whose result it was.
        method: String,
        /// serde's message.
        details: String,
    },
    /// A failure from a `tower` layer stacked on [`RpcClient`] (see
    /// [`crate::layers::rpc_error_from_box`]).
    Other(String),
}

impl RpcError {
    /// The peer's JSON-RPC error, if that is how it failed.
    pub fn remote(&self) -> Option<&ErrorObject> {
        match self {
            RpcError::Call(CallError::Remote(e)) => Some(e),
            _ => None,
        }
    }

    /// Whether it failed because the connection is (or was) closed.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            RpcError::Call(CallError::Closed { .. })
                | RpcError::Refused(acp_core::Error::ConnectionClosed)
        )
    }

    /// The failure as a JSON-RPC error object (to pass on to another peer).
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            RpcError::Call(e) => e.to_error_object(),
            RpcError::Refused(e) => ErrorObject::new(ErrorCode::InternalError, e.to_string()),
            RpcError::Decode { method, details } => ErrorObject::new(
                ErrorCode::InternalError,
                format!("invalid result for {method}: {details}"),
            ),
            RpcError::Other(e) => ErrorObject::new(ErrorCode::InternalError, e.clone()),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::Call(e) => e.fmt(f),
            RpcError::Refused(e) => write!(f, "not sent: {e}"),
            RpcError::Decode { method, details } => {
                write!(f, "invalid result for {method}: {details}")
            }
            RpcError::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RpcError {}

impl From<CallError> for RpcError {
    fn from(e: CallError) -> Self {
        RpcError::Call(e)
    }
}

/// A call made (or pending) after the peer closed its end: no answer can come.
pub(super) fn half_closed() -> RpcError {
    RpcError::Call(CallError::Closed {
        reason: "the peer closed the connection".into(),
    })
}

pub(super) fn refused(e: acp_core::Error) -> RpcError {
    RpcError::Refused(e)
}
