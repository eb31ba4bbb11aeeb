//! Events as plain JS objects with a `type` field, and the TypeScript types of the package.
//!
//! An [`acp_core::Event`] is written by the core as one JSON object and handed to JS through a
//! single `JSON.parse`, so the objects are plain data, identical to the events the native
//! conformance harness records, and an event costs one crossing of the wasm boundary.

use acp_core::Event;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
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
  | "errorWithoutId" | "tooManyRequests" | "notAllowedInBatch";

/** The `name` of the Errors thrown by AcpConnection methods (besides TypeError for arguments
 *  of the wrong type). */
export type AcpErrorName =
  | "ConnectionClosed" | "UnknownToken" | "AlreadyAnswered" | "UnknownRequest"
  | "NotAllowedInBatch" | "CapabilityNotAdvertised" | "PromptInFlight" | "InvalidParams"
  | "InvalidMethod";
"#;

/// An event as a plain JS object: the core's language-neutral JSON shape
/// ([`acp_core::Event::to_json`], shared with the conformance vectors), through one `JSON.parse`.
pub fn event_to_js(event: &Event<()>) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(&event.to_json().to_string())
}
