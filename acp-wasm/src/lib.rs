//! acp-wasm: the wasm-bindgen wrapper of [`acp_core::Connection`] (the JS contract is API.md).
//!
//! Mechanical by design: every export converts its arguments, calls the matching
//! `acp_core::Connection` method and converts the result. No protocol logic lives here.
//!
//! * Wire bytes cross as `Uint8Array` or string; params and results as JS values, converted with
//!   the host's `JSON.stringify`/`JSON.parse` (the core keeps them as raw JSON text).
//! * Events cross as plain objects with a `type` field ([`events`], which also holds the
//!   TypeScript types emitted into the generated `.d.ts`).
//! * Errors become JS values in one module ([`errors`]).
//! * Time is always an argument (`nowMs`, a caller-chosen monotonic millisecond clock).
//! * With the `client` feature (off by default; `scripts/build-wasm.sh` builds both flavours),
//!   everything from `acp_client`: the client's decisions as plain functions ([`policy`]:
//!   permission answers, sensitive writes, the `terminal/create` question, the environment
//!   allowlist, auth choice, fs/terminal error codes, terminal limits), the permission
//!   question's model with its diff ([`question`]), the session engine ([`session_engine`]:
//!   one session's lifecycle, its crash budget and its conversation, and
//!   `AcpConnection.pollEventsFor`, which folds `session/update`s into it inside wasm), the
//!   conversation thread alone ([`thread`]), the prompt queue ([`queue`]), the edit record and
//!   the undo decision ([`edits`]) and the HTTP transport's wire ([`http_sse`]: the
//!   SSE reader and the session routing of acp-core's `http_sse`). The default build is the
//!   engine alone, within the 250 KB goal (docs/wasm.md).

#[cfg(feature = "client")]
pub mod edits;
mod errors;
mod events;
#[cfg(feature = "client")]
pub mod http_sse;
#[cfg(feature = "client")]
pub mod policy;
#[cfg(feature = "client")]
pub mod question;
#[cfg(feature = "client")]
pub mod queue;
#[cfg(feature = "client")]
pub mod registry;
#[cfg(feature = "client")]
pub mod remote;
#[cfg(feature = "client")]
pub mod session;
#[cfg(feature = "client")]
pub mod session_engine;
#[cfg(feature = "client")]
pub mod thread;
#[cfg(feature = "client")]
pub mod windows;

use acp_core::{BatchPolicy, Config, Connection, ErrorObject, RawValue, RequestOptions, Role};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::errors::{core_error, describe, invalid_params, type_error};

/// One ACP connection (client or agent side): a sans-IO state machine.
///
/// Drain rule: after any call that mutates the connection (`feed*`, `handleTimeout`,
/// `sendRequest`, `notify`, `respond*`, `cancelRequest`, `close`), drain `pollTransmit()` and
/// `pollEvent()` until they return `undefined`, then re-arm a timer for `pollTimeout()`.
///
/// The object owns wasm memory: call `free()` when done; any method called afterwards throws.
#[wasm_bindgen]
pub struct AcpConnection {
    inner: Connection<()>,
    /// Bytes taken from the core and not handed out yet start at `tx_pos` (`pollTransmitInto`
    /// may hand out part of them). Once handed out the buffer is kept, so it goes back to the
    /// core for the next messages (`poll_transmit_into` swaps buffers) instead of being
    /// regrown each time.
    tx: Vec<u8>,
    tx_pos: usize,
}

#[wasm_bindgen]
extern "C" {
    /// A `Uint8Array`, for the one method bound below.
    #[wasm_bindgen(js_name = Uint8Array)]
    type JsBytes;

    /// `target.set(bytes)`: copies a slice of wasm memory into a JS array at offset 0, without
    /// allocating a JS array for it (the target must be at least as long).
    #[wasm_bindgen(method, js_name = set)]
    fn set_from_wasm(this: &JsBytes, bytes: &[u8]);
}

/// A transmit buffer larger than this is released after use rather than kept.
const RETAINED_TX_BYTES: usize = 1024 * 1024;

/// `ConnectionOptions` as read from JSON.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    max_message_bytes: Option<u64>,
    batch_policy: Option<JsBatchPolicy>,
    request_timeout_ms: Option<u64>,
    incoming_timeout_ms: Option<u64>,
    permission_timeout_ms: Option<u64>,
    max_incoming_in_flight: Option<u64>,
    enforce_capabilities: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum JsBatchPolicy {
    Seed,
    RejectAll,
}

#[wasm_bindgen]
impl AcpConnection {
    /// A new connection playing `role` ("client" or "agent").
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Role")] role: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ConnectionOptions")] options: JsValue,
    ) -> Result<AcpConnection, JsValue> {
        let role = match role.as_string().as_deref() {
            Some("client") => Role::Client,
            Some("agent") => Role::Agent,
            _ => return Err(type_error("role must be \"client\" or \"agent\"")),
        };
        let opts: Options = if options.is_undefined() || options.is_null() {
            Options::default()
        } else {
            let text = to_json(&options).map_err(|_| type_error("options must be an object"))?;
            serde_json::from_str(&text)
                .map_err(|e| type_error(&format!("invalid ConnectionOptions: {e}")))?
        };
        let mut config = Config::new(role);
        if let Some(n) = opts.max_message_bytes {
            config.max_message_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(p) = opts.batch_policy {
            config.batch_policy = match p {
                JsBatchPolicy::Seed => BatchPolicy::Seed,
                JsBatchPolicy::RejectAll => BatchPolicy::RejectAll,
            };
        }
        config.default_request_timeout = opts.request_timeout_ms;
        config.incoming_request_timeout = opts.incoming_timeout_ms;
        config.permission_timeout = opts.permission_timeout_ms;
        if let Some(n) = opts.max_incoming_in_flight {
            config.max_incoming_in_flight = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(b) = opts.enforce_capabilities {
            config.enforce_capabilities = b;
        }
        Ok(AcpConnection {
            inner: Connection::new(config),
            tx: Vec::new(),
            tx_pos: 0,
        })
    }

    // ----- inputs -----

    /// Feeds bytes of the peer's NDJSON stream (any chunking).
    pub fn feed(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<(), JsValue> {
        let bytes = bytes_arg(&bytes)?;
        let now = millis(now_ms, "nowMs")?;
        self.inner.handle_bytes(&bytes, now);
        Ok(())
    }

    /// Feeds text of the peer's NDJSON stream (any chunking).
    #[wasm_bindgen(js_name = feedString)]
    pub fn feed_string(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<(), JsValue> {
        let text = string_arg(&text, "text")?;
        let now = millis(now_ms, "nowMs")?;
        self.inner.handle_bytes(text.as_bytes(), now);
        Ok(())
    }

    /// The peer closed its side: a final unterminated line is processed, then everything
    /// pending completes and the connection closes.
    #[wasm_bindgen(js_name = feedEof)]
    pub fn feed_eof(
        &mut self,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<(), JsValue> {
        let now = millis(now_ms, "nowMs")?;
        self.inner.handle_eof(now);
        Ok(())
    }

    /// Fires every deadline at or before `nowMs` (call it when `pollTimeout()` has passed).
    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(
        &mut self,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<(), JsValue> {
        let now = millis(now_ms, "nowMs")?;
        self.inner.handle_timeout(now);
        Ok(())
    }

    // ----- commands -----

    /// Sends a request; returns its id (reported back by the "response"/"requestFailed" event).
    /// `params` must be an object or array, or `undefined`/`null` for none.
    #[wasm_bindgen(js_name = sendRequest)]
    pub fn send_request(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] params: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
        #[wasm_bindgen(js_name = timeoutMs)] timeout_ms: Option<f64>,
    ) -> Result<f64, JsValue> {
        let method = string_arg(&method, "method")?;
        let now = millis(now_ms, "nowMs")?;
        let opts = request_options(timeout_ms)?;
        let params = optional_raw(&params)?;
        self.inner
            .send_request(&method, params.as_deref(), opts, now)
            .map(|id| id as f64)
            .map_err(core_error)
    }

    /// Sends a notification. `params` must be an object or array, or `undefined`/`null`.
    pub fn notify(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] params: JsValue,
    ) -> Result<(), JsValue> {
        let method = string_arg(&method, "method")?;
        let params = optional_raw(&params)?;
        self.inner
            .notify(&method, params.as_deref())
            .map_err(core_error)
    }

    /// Answers the incoming request `token` with a result (`undefined` is sent as `null`).
    pub fn respond(
        &mut self,
        token: f64,
        #[wasm_bindgen(unchecked_param_type = "unknown")] result: JsValue,
    ) -> Result<(), JsValue> {
        let token = integer(token, "token")?;
        let raw = if result.is_undefined() {
            raw_json("null".into())?
        } else {
            raw_json(to_json(&result)?)?
        };
        self.inner.respond(token, &*raw).map_err(core_error)
    }

    /// Like `sendRequest`, with the params already serialized: `paramsJson` is the JSON text of
    /// an object or array (what `JSON.stringify(params)` returns), or `undefined` for none. The
    /// text is checked (invalid JSON or another kind of value throws `InvalidParams`) and sent
    /// as written (newlines outside strings become spaces), which saves the wrapper calling back
    /// into JS to stringify.
    #[wasm_bindgen(js_name = sendRequestRaw)]
    pub fn send_request_raw(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(
            js_name = paramsJson,
            unchecked_param_type = "string | null | undefined"
        )]
        params_json: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
        #[wasm_bindgen(js_name = timeoutMs)] timeout_ms: Option<f64>,
    ) -> Result<f64, JsValue> {
        let method = string_arg(&method, "method")?;
        let now = millis(now_ms, "nowMs")?;
        let opts = request_options(timeout_ms)?;
        let params = optional_raw_text(&params_json)?;
        self.inner
            .send_request(&method, params.as_deref(), opts, now)
            .map(|id| id as f64)
            .map_err(core_error)
    }

    /// Like `notify`, with the params already serialized (see `sendRequestRaw`).
    #[wasm_bindgen(js_name = notifyRaw)]
    pub fn notify_raw(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(
            js_name = paramsJson,
            unchecked_optional_param_type = "string | null"
        )]
        params_json: JsValue,
    ) -> Result<(), JsValue> {
        let method = string_arg(&method, "method")?;
        let params = optional_raw_text(&params_json)?;
        self.inner
            .notify(&method, params.as_deref())
            .map_err(core_error)
    }

    /// Like `respond`, with the result already serialized: `resultJson` is the JSON text of any
    /// value (`JSON.stringify(result)`); invalid JSON throws `InvalidParams`.
    #[wasm_bindgen(js_name = respondRaw)]
    pub fn respond_raw(
        &mut self,
        token: f64,
        #[wasm_bindgen(js_name = resultJson, unchecked_param_type = "string")] result_json: JsValue,
    ) -> Result<(), JsValue> {
        let token = integer(token, "token")?;
        let text = result_json
            .as_string()
            .ok_or_else(|| type_error("resultJson must be a string"))?;
        let raw = raw_json(text)?;
        self.inner.respond(token, &*raw).map_err(core_error)
    }

    /// Answers the incoming request `token` with a JSON-RPC error.
    #[wasm_bindgen(js_name = respondError)]
    pub fn respond_error(
        &mut self,
        token: f64,
        code: f64,
        #[wasm_bindgen(unchecked_param_type = "string")] message: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] data: JsValue,
    ) -> Result<(), JsValue> {
        let token = integer(token, "token")?;
        let message = string_arg(&message, "message")?;
        if !(code.is_finite() && code.fract() == 0.0 && code.abs() <= MAX_SAFE_INTEGER) {
            return Err(type_error("code must be an integer"));
        }
        let data = if data.is_undefined() {
            None
        } else {
            Some(
                serde_json::from_str::<serde_json::Value>(&to_json(&data)?)
                    .map_err(|e| invalid_params(e.to_string()))?,
            )
        };
        let error = ErrorObject {
            code: code as i64,
            message,
            data,
        };
        self.inner.respond_error(token, error).map_err(core_error)
    }

    /// Cancels the outgoing request `requestId`: it completes as "requestFailed" with kind
    /// "cancelled" and the peer is sent `$/cancel_request`.
    #[wasm_bindgen(js_name = cancelRequest)]
    pub fn cancel_request(
        &mut self,
        #[wasm_bindgen(js_name = requestId)] request_id: f64,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
    ) -> Result<(), JsValue> {
        let id = integer(request_id, "requestId")?;
        // The core's cancel needs no time; nowMs is validated and kept for API symmetry.
        millis(now_ms, "nowMs")?;
        self.inner.cancel(id).map_err(core_error)
    }

    /// Closes the connection: pending incoming requests are answered, pending outgoing ones
    /// fail with kind "closed", and a "closed" event is emitted. Idempotent.
    pub fn close(
        &mut self,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] reason: JsValue,
    ) -> Result<(), JsValue> {
        let reason = if reason.is_undefined() || reason.is_null() {
            None
        } else {
            Some(string_arg(&reason, "reason")?)
        };
        self.inner
            .close(reason.as_deref().unwrap_or("closed by the local side"));
        Ok(())
    }

    // ----- outputs -----

    /// NDJSON bytes to write to the peer (complete lines, possibly many), or `undefined`.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self) -> Option<js_sys::Uint8Array> {
        let pending = self.pending_tx();
        if pending.is_empty() {
            return None;
        }
        // One copy into a JS-owned array; the wasm buffer stays with us for reuse.
        let n = pending.len();
        let bytes = js_sys::Uint8Array::new_from_slice(pending);
        self.consume_tx(n);
        Some(bytes)
    }

    /// Copies bytes to write to the peer into `buffer` (from its start, at most its length)
    /// and returns how many; bytes that do not fit stay queued for the next call. 0 when
    /// nothing is pending. Unlike `pollTransmit`, allocates no JS array: write
    /// `buffer.subarray(0, n)` out before reusing the buffer.
    #[wasm_bindgen(js_name = pollTransmitInto)]
    pub fn poll_transmit_into(&mut self, buffer: &js_sys::Uint8Array) -> f64 {
        let room = buffer.length() as usize;
        let pending = self.pending_tx();
        let n = pending.len().min(room);
        if n == 0 {
            return 0.0;
        }
        buffer
            .unchecked_ref::<JsBytes>()
            .set_from_wasm(&pending[..n]);
        self.consume_tx(n);
        n as f64
    }

    /// Like `pollTransmit`, as a string.
    #[wasm_bindgen(js_name = pollTransmitString)]
    pub fn poll_transmit_string(&mut self) -> Option<String> {
        let pending = self.pending_tx();
        if pending.is_empty() {
            return None;
        }
        let n = pending.len();
        let text = String::from_utf8_lossy(pending).into_owned();
        self.consume_tx(n);
        Some(text)
    }

    /// The next event, or `undefined`.
    #[wasm_bindgen(js_name = pollEvent, unchecked_return_type = "AcpEvent | undefined")]
    pub fn poll_event(&mut self) -> Result<JsValue, JsValue> {
        match self.inner.poll_event() {
            Some(event) => events::event_to_js(&event),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Every pending event at once, oldest first (an empty array when there is none): the
    /// same objects as `pollEvent()`, written as one JSON array and handed over with one
    /// `JSON.parse`, so a burst of events costs one crossing of the wasm boundary.
    #[wasm_bindgen(js_name = pollEvents, unchecked_return_type = "AcpEvent[]")]
    pub fn poll_events(&mut self) -> Result<JsValue, JsValue> {
        events::events_to_js(std::iter::from_fn(|| self.inner.poll_event()))
    }

    /// The next deadline (absolute, on the caller's `nowMs` clock), or `undefined`.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&mut self) -> Option<f64> {
        self.inner.poll_timeout().map(|ms| ms as f64)
    }

    // ----- getters -----

    #[wasm_bindgen(getter, unchecked_return_type = "Role")]
    pub fn role(&self) -> String {
        self.inner.role().name().into()
    }

    /// Outgoing requests awaiting completion.
    #[wasm_bindgen(getter = pendingOutgoing)]
    pub fn pending_outgoing(&self) -> f64 {
        self.inner.pending_outgoing() as f64
    }

    /// Incoming requests awaiting an answer.
    #[wasm_bindgen(getter = pendingIncoming)]
    pub fn pending_incoming(&self) -> f64 {
        self.inner.pending_incoming() as f64
    }

    #[wasm_bindgen(getter = isClosed)]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

impl AcpConnection {
    /// The bytes not handed out yet: what is left of `tx`, then whatever the core has queued.
    fn pending_tx(&mut self) -> &[u8] {
        if self.tx_pos == self.tx.len() {
            self.tx.clear();
            self.tx_pos = 0;
        }
        // Swaps buffers when `tx` is empty, appends otherwise (bytes stay in order).
        self.inner.poll_transmit_into(&mut self.tx);
        &self.tx[self.tx_pos..]
    }

    /// `n` bytes of `pending_tx` were handed out.
    fn consume_tx(&mut self, n: usize) {
        self.tx_pos += n;
        if self.tx_pos == self.tx.len() {
            self.tx.clear();
            self.tx_pos = 0;
            if self.tx.capacity() > RETAINED_TX_BYTES {
                // A large message's buffer goes back to the allocator, not to the core.
                self.tx = Vec::new();
            }
        }
    }
}

const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A non-negative millisecond count (fractions are truncated).
pub(crate) fn millis(v: f64, what: &str) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 {
        Ok(v as u64)
    } else {
        Err(type_error(&format!(
            "{what} must be a non-negative finite number"
        )))
    }
}

/// A token or request id: a non-negative safe integer.
pub(crate) fn integer(v: f64, what: &str) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_SAFE_INTEGER {
        Ok(v as u64)
    } else {
        Err(type_error(&format!(
            "{what} must be a non-negative integer"
        )))
    }
}

/// `JSON.stringify(value)`; a value without a JSON form is `InvalidParams`.
fn to_json(value: &JsValue) -> Result<String, JsValue> {
    match js_sys::JSON::stringify(value) {
        Ok(s) => s
            .as_string()
            .ok_or_else(|| invalid_params("value has no JSON representation")),
        Err(thrown) => Err(invalid_params(describe(&thrown))),
    }
}

/// JSON text passed as a JS string: `undefined`/`null` for none; any other non-string is a
/// `TypeError` (checked here: the glue would otherwise hand wasm a non-string).
fn optional_text(value: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
    match value.as_string() {
        Some(text) => Ok(Some(text)),
        None if value.is_undefined() || value.is_null() => Ok(None),
        None => Err(type_error(&format!(
            "{what} must be a string (JSON text), null or undefined"
        ))),
    }
}

/// A JS string argument. (A `&str` parameter would let the glue pass any value on: a number
/// or an object made wasm trap with "memory access out of bounds".)
pub(crate) fn string_arg(value: &JsValue, what: &str) -> Result<String, JsValue> {
    value
        .as_string()
        .ok_or_else(|| type_error(&format!("{what} must be a string")))
}

/// A `Uint8Array` (a node `Buffer` is one) argument, copied into wasm memory. (A `&[u8]`
/// parameter would take a string or a number too and feed garbage bytes.)
fn bytes_arg(value: &JsValue) -> Result<Vec<u8>, JsValue> {
    value
        .dyn_ref::<js_sys::Uint8Array>()
        .map(js_sys::Uint8Array::to_vec)
        .ok_or_else(|| type_error("bytes must be a Uint8Array"))
}

/// Request options from an optional `timeoutMs`.
fn request_options(timeout_ms: Option<f64>) -> Result<RequestOptions<()>, JsValue> {
    let opts = RequestOptions::default();
    Ok(match timeout_ms {
        Some(t) => opts.timeout(millis(t, "timeoutMs")?),
        None => opts,
    })
}

/// Params given as JSON text (`paramsJson`): `undefined`/`null` for none, else checked JSON.
fn optional_raw_text(params_json: &JsValue) -> Result<Option<Box<RawValue>>, JsValue> {
    optional_text(params_json, "paramsJson")?
        .map(raw_json)
        .transpose()
}

fn raw_json(text: String) -> Result<Box<RawValue>, JsValue> {
    RawValue::from_string(text).map_err(|e| invalid_params(e.to_string()))
}

/// Params: `undefined`/`null` for none, else the value's JSON (the core checks its shape).
fn optional_raw(value: &JsValue) -> Result<Option<Box<RawValue>>, JsValue> {
    if value.is_undefined() || value.is_null() {
        Ok(None)
    } else {
        raw_json(to_json(value)?).map(Some)
    }
}
