//! Whether a token may be sent to a remote agent, for JavaScript (feature `client`):
//! acp-client's [`acp_client::remote::check_token_transport`], the rule `acp chat --connect`
//! follows too (`tests/client/remote.json`). Mechanical like the rest of the wrapper.

use wasm_bindgen::prelude::*;

use crate::string_arg;

/// The refusal (a message for the user) of sending a token to `scheme://authority` (`host`
/// its host part; `scheme` with or without its `:`), or `undefined` when it may be sent:
/// refused over `http`/`ws` to a host that is not loopback unless `allowInsecure`.
/// `howToAllow` names the face's switch in the message.
#[wasm_bindgen(js_name = checkTokenTransport)]
pub fn check_token_transport(
    #[wasm_bindgen(unchecked_param_type = "string")] scheme: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] authority: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] host: JsValue,
    #[wasm_bindgen(js_name = allowInsecure)] allow_insecure: bool,
    #[wasm_bindgen(js_name = howToAllow, unchecked_param_type = "string")] how_to_allow: JsValue,
) -> Result<Option<String>, JsValue> {
    Ok(acp_client::remote::check_token_transport(
        &string_arg(&scheme, "scheme")?,
        &string_arg(&authority, "authority")?,
        &string_arg(&host, "host")?,
        allow_insecure,
        &string_arg(&how_to_allow, "howToAllow")?,
    )
    .err())
}
