//! Opening sessions and telling the user how things went, for JavaScript (feature `client`):
//! the MCP servers to send with `session/new` / `load` / `resume` (acp-client's
//! [`mcp::parse_config`] and [`mcp::select`]), a stop reason and an agent's JSON-RPC error in
//! plain words ([`errors::stop_words`], [`errors::rpc_words`]). Mechanical like the rest of
//! the wrapper: the rules live in acp-client.

use acp_client::errors;
use acp_client::mcp::{self, McpCapabilities};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** What `mcpServers` answers: the servers to send (the wire's `McpServer` shape) and, per
 *  server left out, its name and why; or `error` for a config that cannot be read. */
export type McpSelection =
  | { servers: unknown[]; leftOut: string[] }
  | { error: string };
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_APPEND: &str = TS_TYPES;

/// The MCP servers to send: `configJson` is the JSON text of an MCP config
/// (`{"mcpServers": {"name": {...}}}`, the shape of `acp chat --mcp-config`), `capsJson` the
/// agent's `mcpCapabilities` (`{http?, sse?}`, or `null`). JSON text of an `McpSelection`.
#[wasm_bindgen(js_name = mcpServers, unchecked_return_type = "string")]
pub fn mcp_servers(
    #[wasm_bindgen(js_name = configJson, unchecked_param_type = "string")] config_json: JsValue,
    #[wasm_bindgen(js_name = capsJson, unchecked_param_type = "string")] caps_json: JsValue,
) -> Result<String, JsValue> {
    let config = config_json
        .as_string()
        .ok_or_else(|| type_error("configJson must be the JSON text of an MCP config"))?;
    let caps: Value = caps_json
        .as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| {
            type_error("capsJson must be the JSON text of the agent's mcpCapabilities or null")
        })?;
    let flag = |name: &str| caps.get(name).and_then(Value::as_bool).unwrap_or(false);
    let caps = McpCapabilities {
        http: flag("http"),
        sse: flag("sse"),
    };
    let answer = match mcp::parse_config(&config) {
        Ok(servers) => {
            let sel = mcp::select(&servers, caps);
            serde_json::json!({ "servers": sel.servers, "leftOut": sel.left_out })
        }
        Err(e) => serde_json::json!({ "error": e }),
    };
    Ok(answer.to_string())
}

/// A turn's stop reason in plain words (`end_turn` → "Done").
#[wasm_bindgen(js_name = stopWords)]
pub fn stop_words(
    #[wasm_bindgen(js_name = stopReason, unchecked_param_type = "string")] stop_reason: JsValue,
) -> Result<String, JsValue> {
    let reason = stop_reason
        .as_string()
        .ok_or_else(|| type_error("stopReason must be a string"))?;
    Ok(errors::stop_words(&reason))
}

/// An agent's JSON-RPC error in plain words: `code`, its `message`, `data.reason` or null.
#[wasm_bindgen(js_name = rpcWords)]
pub fn rpc_words(
    #[wasm_bindgen(unchecked_param_type = "number")] code: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] message: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | null")] reason: JsValue,
) -> Result<String, JsValue> {
    let code = code
        .as_f64()
        .filter(|c| c.fract() == 0.0 && c.abs() < 9.0e15)
        .ok_or_else(|| type_error("code must be an integer"))?;
    let message = message
        .as_string()
        .ok_or_else(|| type_error("message must be a string"))?;
    let reason = match reason.as_string() {
        Some(r) => Some(r),
        None if reason.is_null() || reason.is_undefined() => None,
        None => return Err(type_error("reason must be a string or null")),
    };
    Ok(errors::rpc_words(code as i64, &message, reason.as_deref()))
}
