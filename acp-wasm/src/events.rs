//! Events as plain JS objects with a `type` field, and the TypeScript types of the package.
//!
//! An [`acp_core::Event`] is written by the core as one JSON object and handed to JS through a
//! single `JSON.parse`, so the objects are plain data, identical to the events the native
//! conformance harness records, and an event costs one crossing of the wasm boundary.

use acp_core::Event;
use wasm_bindgen::prelude::*;

/// Emitted into the generated `.d.ts` (below); a named constant so tests can read it.
#[allow(dead_code)] // read through the custom section, which rustc does not count as a use
const TS_TYPES: &str = r#"
/** Which side of the protocol a connection plays. */
export type Role = "client" | "agent";

/** Options of `new AcpConnection(role, options)`; every field is optional. */
export interface ConnectionOptions {
  /** Largest message (one NDJSON line) accepted, in bytes; larger lines are skipped and
   *  answered with -32600. Default 64 MiB. */
  maxMessageBytes?: number;
  /** How received batches (JSON arrays) are treated. Default "seed" (JSON-RPC 2.0 batch rules);
   *  "rejectAll" answers any array with one Invalid Request. */
  batchPolicy?: "seed" | "rejectAll";
  /** Default deadline (ms) of outgoing requests that do not pass their own. None if absent. */
  requestTimeoutMs?: number;
  /** The engine answers incoming requests not answered within this (ms). None if absent. */
  incomingTimeoutMs?: number;
  /** Incoming session/request_permission not answered within this (ms) are answered
   *  `cancelled`; overrides incomingTimeoutMs for that method. None if absent. */
  permissionTimeoutMs?: number;
  /** At most this many incoming requests may await an answer; more are refused. Default 1024. */
  maxIncomingInFlight?: number;
  /** Agent side: refuse to call fs/* and terminal/* unless the client advertised them in
   *  initialize. Default true. */
  enforceCapabilities?: boolean;
}

/** A JSON-RPC error object. */
export interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** How an outgoing request failed. */
export type RequestFailureKind =
  | "remote" | "timeout" | "cancelled" | "closed" | "invalidResponse" | "unsupportedProtocolVersion";

/** What the application must know or do; drained with `pollEvent()`. */
export type AcpEvent =
  /** The peer sent a request: answer it exactly once with respond/respondError(token, ...). */
  | { type: "request"; token: number; id: string | number | null; method: string; params?: unknown }
  /** The peer sent a notification (handle in order; never answered). */
  | { type: "notification"; method: string; params?: unknown }
  /** An outgoing request completed successfully. */
  | { type: "response"; requestId: number; method: string; result: unknown }
  /** An outgoing request failed; `kind` tells why, `error` is the JSON-RPC error (the peer's
   *  own for "remote"). */
  | { type: "requestFailed"; requestId: number; method: string; kind: RequestFailureKind; error: JsonRpcError }
  /** The engine answered an incoming request itself; a later respond(token) throws
   *  AlreadyAnswered. */
  | { type: "autoAnswered"; token: number; method: string; reason: "timeout" | "sessionCancelled" | "closed" }
  /** The peer asked ($/cancel_request) to cancel the incoming request with this token. */
  | { type: "cancelRequested"; token: number }
  /** The peer misbehaved (informational; the engine already answered where the protocol says). */
  | { type: "protocolError"; kind: ProtocolErrorKind; message: string }
  /** The connection is closed (emitted once, last). */
  | { type: "closed"; reason: string };

/** Kinds of peer misbehaviour reported by "protocolError" events. */
export type ProtocolErrorKind =
  | "parseError" | "invalidRequest" | "oversize" | "unknownResponseId" | "lateResponse"
  | "errorWithoutId" | "tooManyRequests" | "notAllowedInBatch"
  /** Feature `unstable` only: a draft method or update without its capability. */
  | "capabilityNotAdvertised"
  | "protocolVersionRule";

/** The `name` of the Errors thrown by AcpConnection methods (besides TypeError for arguments
 *  of the wrong type). */
export type AcpErrorName =
  | "ConnectionClosed" | "UnknownToken" | "AlreadyAnswered" | "UnknownRequest"
  | "NotAllowedInBatch" | "CapabilityNotAdvertised" | "PromptInFlight" | "InvalidParams"
  | "InvalidMethod" | "ProtocolVersionRule";
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

/// An event as a plain JS object: the core's language-neutral JSON shape
/// ([`acp_core::Event::to_json`], shared with the conformance vectors), through one `JSON.parse`.
pub fn event_to_js(event: &Event<()>) -> Result<JsValue, JsValue> {
    // Written straight to JSON text by the core (raw params copied, not re-parsed), then one
    // `JSON.parse` on the JS side.
    js_sys::JSON::parse(&event.to_json_string())
}

/// Events as one JS array: written by the core into one JSON array text (each element exactly
/// what [`event_to_js`] hands over), then one `JSON.parse`.
pub fn events_to_js(events: impl Iterator<Item = Event<()>>) -> Result<JsValue, JsValue> {
    let mut events = events.peekable();
    if events.peek().is_none() {
        // The common "nothing new" poll: no text to decode.
        return Ok(js_sys::Array::new().into());
    }
    let text = acp_core::events_to_json_array(events);
    js_sys::JSON::parse(&text)
}

#[cfg(test)]
mod tests {
    //! The TypeScript above is written by hand: these tests keep it in step with the core's
    //! names. The matches are exhaustive, so a new core variant fails to compile here.
    use super::TS_TYPES;
    use acp_core::{AutoAnswerReason, CallError, Error, ErrorObject, PeerErrorKind};

    fn assert_in_ts(what: &str, name: &str) {
        assert!(
            TS_TYPES.contains(&format!("\"{name}\"")),
            "{what} {name:?} is missing from the TypeScript types in events.rs"
        );
    }

    #[test]
    fn protocol_error_kinds() {
        use PeerErrorKind as K;
        let all = [
            K::ParseError,
            K::InvalidRequest,
            K::Oversize,
            K::UnknownResponseId,
            K::LateResponse,
            K::ErrorWithoutId,
            K::TooManyRequests,
            K::NotAllowedInBatch,
            K::CapabilityNotAdvertised,
            K::ProtocolVersionRule,
        ];
        for k in all {
            match k {
                K::ParseError
                | K::InvalidRequest
                | K::Oversize
                | K::UnknownResponseId
                | K::LateResponse
                | K::ErrorWithoutId
                | K::TooManyRequests
                | K::NotAllowedInBatch
                | K::CapabilityNotAdvertised
                | K::ProtocolVersionRule => assert_in_ts("PeerErrorKind", k.name()),
            }
        }
    }

    #[test]
    fn request_failure_kinds() {
        let all = [
            CallError::Remote(ErrorObject {
                code: 1,
                message: String::new(),
                data: None,
            }),
            CallError::TimedOut { after_ms: 1 },
            CallError::Cancelled,
            CallError::Closed {
                reason: String::new(),
            },
            CallError::InvalidResponse {
                reason: String::new(),
            },
            CallError::UnsupportedProtocolVersion {
                version: serde_json::Value::Null,
            },
        ];
        for e in &all {
            match e {
                CallError::Remote(_)
                | CallError::TimedOut { .. }
                | CallError::Cancelled
                | CallError::Closed { .. }
                | CallError::InvalidResponse { .. }
                | CallError::UnsupportedProtocolVersion { .. } => {
                    assert_in_ts("CallError kind", e.kind())
                }
            }
        }
    }

    #[test]
    fn auto_answer_reasons() {
        use AutoAnswerReason as R;
        for r in [R::Timeout, R::SessionCancelled, R::Closed] {
            match r {
                R::Timeout | R::SessionCancelled | R::Closed => {
                    assert_in_ts("AutoAnswerReason", r.name())
                }
            }
        }
    }

    #[test]
    fn error_names() {
        let all = [
            Error::ConnectionClosed,
            Error::UnknownToken(0),
            Error::AlreadyAnswered(0),
            Error::UnknownRequest(0),
            Error::NotAllowedInBatch(String::new()),
            Error::CapabilityNotAdvertised {
                method: String::new(),
                capability: "",
            },
            Error::PromptInFlight {
                session_id: String::new(),
            },
            Error::InvalidParams(String::new()),
            Error::InvalidMethod(String::new()),
            Error::ProtocolVersionRule(String::new()),
        ];
        for e in &all {
            match e {
                Error::ConnectionClosed
                | Error::UnknownToken(_)
                | Error::AlreadyAnswered(_)
                | Error::UnknownRequest(_)
                | Error::NotAllowedInBatch(_)
                | Error::CapabilityNotAdvertised { .. }
                | Error::PromptInFlight { .. }
                | Error::InvalidParams(_)
                | Error::InvalidMethod(_)
                | Error::ProtocolVersionRule(_) => assert_in_ts("Error name", e.name()),
            }
        }
    }
}
