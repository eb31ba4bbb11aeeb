//! The one place where errors become JS values.
//!
//! * [`core_error`]: an [`acp_core::Error`] (misuse by the caller, nothing was sent) becomes a JS
//!   `Error` whose `name` is the variant's stable name (`ConnectionClosed`, `UnknownToken`,
//!   `AlreadyAnswered`, `UnknownRequest`, `NotAllowedInBatch`, `CapabilityNotAdvertised`,
//!   `PromptInFlight`, `InvalidParams`, `InvalidMethod`) and whose `message` is its `Display`.
//! * [`invalid_params`]: a JS value that cannot be turned into JSON (a `BigInt`, a cycle, a
//!   function) is reported as the core's `InvalidParams`, the error the core gives for params
//!   that fail to serialize.
//! * [`type_error`]: an argument of the wrong JS type or range (a role that is not
//!   `"client"`/`"agent"`, a negative `nowMs`, an unknown option) is a plain JS `TypeError`.

use js_sys::JsString;
use wasm_bindgen::{JsCast, JsValue};

/// An `acp_core::Error` as a JS `Error` named after its kind.
pub fn core_error(e: acp_core::Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name(e.name());
    err.into()
}

/// A value that cannot be converted to JSON, reported as the core's `InvalidParams`.
pub fn invalid_params(why: impl Into<String>) -> JsValue {
    core_error(acp_core::Error::InvalidParams(why.into()))
}

/// A JS `TypeError` for an argument of the wrong type or range.
pub fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

/// The text of a thrown JS value (for wrapping it into another error).
pub fn describe(thrown: &JsValue) -> String {
    if let Some(err) = thrown.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    thrown
        .dyn_ref::<JsString>()
        .map(String::from)
        .unwrap_or_else(|| "value cannot be converted to JSON".into())
}
