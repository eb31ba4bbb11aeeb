//! The wire of ACP's HTTP transport for JavaScript (feature `client`): acp-core's sans-IO
//! [`acp_core::http_sse`], which acp-native's remote client and server follow too, so the VS
//! Code extension's HTTP + SSE transport reads its streams and routes its messages by the same
//! rules: the SSE reader ([`SseDecoder`]), the session a message it sends goes with
//! ([`http_outgoing`]) and the session an answer names ([`http_answer`]).
//! `tests/client/http_routing.json` is the case table. Mechanical like the rest of the wrapper.

use acp_core::http_sse::{self, Answer, Outgoing, SkippedEvent, SseItem};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::errors::type_error;
use crate::string_arg;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** What `httpOutgoing` answers (JSON text): the message's `method`, its `id` as JSON text
 *  (`"3"`, `"\"a-1\""`; null for none or `null`), and the session it goes with (its
 *  `Acp-Session-Id` header and stream; null: the connection's). */
export interface HttpOutgoing {
  method: string | null;
  id: string | null;
  session: string | null;
}

/** What `httpAnswer` answers (JSON text): the id a response answers, as JSON text, and the
 *  session its result names (`result.sessionId`, as a `session/new` / `session/fork` answer
 *  does). */
export interface HttpAnswer {
  id: string;
  session: string | null;
}

/** An event `SseDecoder.feed` skipped because its data was over the limit (never held):
 *  its size, and what acp-core says to do with it, as on stdio: `standIn`, an error response
 *  to give the engine in its place (it was the response to one of our requests: that call
 *  fails at once saying why); `answer`, an error answer to send the agent (it was a request:
 *  the agent stops waiting); neither: it is dropped (log it). */
export interface SkippedSseEvent {
  size: number;
  standIn?: string;
  answer?: string;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

/// An incremental `text/event-stream` reader (acp-core's `SseDecoder`): feed it a stream's
/// body in any pieces; it gives each event's data. Holds at most `maxEventBytes` of one event:
/// an event whose data is larger is skipped as it streams by and reported by its size.
///
/// The object owns wasm memory: call `free()` when done; any method called afterwards throws.
#[wasm_bindgen]
pub struct SseDecoder {
    inner: http_sse::SseDecoder,
    max: usize,
}

#[wasm_bindgen]
impl SseDecoder {
    /// A reader holding at most `maxEventBytes` (a positive number; fractions truncated) of
    /// one event's data.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(js_name = maxEventBytes, unchecked_param_type = "number")]
        max_event_bytes: JsValue,
    ) -> Result<SseDecoder, JsValue> {
        let max = max_event_bytes
            .as_f64()
            .filter(|n| n.is_finite() && *n >= 1.0)
            .ok_or_else(|| type_error("maxEventBytes must be a positive number"))?;
        Ok(SseDecoder {
            inner: http_sse::SseDecoder::new(max as usize),
            max: max as usize,
        })
    }

    /// Decodes the next piece of the body (a `Uint8Array`, or text, read as UTF-8): the
    /// events it completed, in order: each one's data (its `data:` lines joined by `\n`), or
    /// for an event over the limit, which was skipped, a `SkippedSseEvent` (its size, and the
    /// stand-in response or the answer acp-core's rule gives it).
    #[wasm_bindgen(unchecked_return_type = "Array<string | SkippedSseEvent>")]
    pub fn feed(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] chunk: JsValue,
    ) -> Result<js_sys::Array, JsValue> {
        let out = js_sys::Array::new();
        let max = self.max;
        let mut sink = |item: SseItem| {
            out.push(&match item {
                SseItem::Data(text) => JsValue::from_str(&text),
                SseItem::Oversize { prefix, size } => skipped(&prefix, size, max),
            });
        };
        if let Some(text) = chunk.as_string() {
            self.inner.feed(text.as_bytes(), &mut sink);
        } else if let Some(bytes) = chunk.dyn_ref::<js_sys::Uint8Array>() {
            self.inner.feed(&bytes.to_vec(), &mut sink);
        } else {
            return Err(type_error("chunk must be a Uint8Array or a string"));
        }
        Ok(out)
    }
}

/// A `SkippedSseEvent` for an event over `max` bytes.
fn skipped(prefix: &[u8], size: usize, max: usize) -> JsValue {
    let o = js_sys::Object::new();
    let set = |k: &str, v: JsValue| js_sys::Reflect::set(&o, &JsValue::from_str(k), &v).map(|_| ());
    let _ = set("size", JsValue::from_f64(size as f64));
    let _ = match SkippedEvent::of(prefix, max) {
        SkippedEvent::StandIn(text) => set("standIn", JsValue::from_str(&text)),
        SkippedEvent::Answer(text) => set("answer", JsValue::from_str(&text)),
        SkippedEvent::Dropped => Ok(()),
    };
    o.into()
}

/// What the client side of the HTTP transport reads of a message it sends (acp-core's
/// `Outgoing`): JSON text of an `HttpOutgoing`, or `undefined` when `line` is not a JSON-RPC
/// message (not a JSON object).
#[wasm_bindgen(js_name = httpOutgoing)]
pub fn http_outgoing(
    #[wasm_bindgen(unchecked_param_type = "string")] line: JsValue,
) -> Result<Option<String>, JsValue> {
    let line = string_arg(&line, "line")?;
    Ok(Outgoing::read(&line).map(|out| {
        json!({
            "method": out.method,
            "id": out.id.as_ref().map(id_text),
            "session": out.session,
        })
        .to_string()
    }))
}

/// A response the client received (acp-core's `Answer`): JSON text of an `HttpAnswer`, or
/// `undefined` when `text` is not a response (a request, a notification, an id that is
/// `null`, not JSON).
#[wasm_bindgen(js_name = httpAnswer)]
pub fn http_answer(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
) -> Result<Option<String>, JsValue> {
    let text = string_arg(&text, "text")?;
    Ok(Answer::read(&text)
        .map(|answer| json!({"id": id_text(&answer.id), "session": answer.session}).to_string()))
}

/// An id as JSON text (a key a face can compare: the same id reads the same).
fn id_text(id: &acp_core::Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}
