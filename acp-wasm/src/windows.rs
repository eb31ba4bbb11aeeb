//! Starting an agent on Windows, for JavaScript (feature `client`): acp-client's
//! [`acp_client::windows`] rules (`tests/client/windows.json`), so the extension runs npm's
//! `.cmd` shims and batch files exactly as `acp` decides. Mechanical like the rest of the
//! wrapper: the face answers "is this a file" and reads the shim; the decisions are Rust's.

use acp_client::windows;
use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::string_arg;

/// The file `command` names as Windows finds it, never in the working directory: `path` and
/// `pathext` are the `PATH` and `PATHEXT` values (`pathext` `undefined`/`null`: the default),
/// `isFile(candidate)` the face's answer (a function returning a boolean). `undefined` when
/// found nowhere.
#[wasm_bindgen(js_name = windowsFindProgram)]
pub fn find_program(
    #[wasm_bindgen(unchecked_param_type = "string")] command: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | undefined")] pathext: JsValue,
    #[wasm_bindgen(js_name = isFile, unchecked_param_type = "(candidate: string) => boolean")]
    is_file: JsValue,
) -> Result<Option<String>, JsValue> {
    let command = string_arg(&command, "command")?;
    let path = string_arg(&path, "path")?;
    let pathext = if pathext.is_undefined() || pathext.is_null() {
        None
    } else {
        Some(string_arg(&pathext, "pathext")?)
    };
    let is_file: Function = is_file
        .dyn_into()
        .map_err(|_| type_error("isFile must be a function"))?;
    Ok(windows::find_program(
        &command,
        &path,
        pathext.as_deref(),
        |c| {
            is_file
                .call1(&JsValue::NULL, &JsValue::from_str(c))
                .map(|v| v.is_truthy())
                .unwrap_or(false)
        },
    ))
}

/// How to start a found file with `args` (JSON text in: `factsJson` `{file, text?, node?,
/// comspec?}`, `argsJson` a string array): JSON text of `{"spawn": {program, args, verbatim,
/// via}}` (spawn with `windowsVerbatimArguments: verbatim`) or `{"error": message}`.
#[wasm_bindgen(js_name = windowsPlanSpawn)]
pub fn plan_spawn(
    #[wasm_bindgen(js_name = factsJson, unchecked_param_type = "string")] facts_json: JsValue,
    #[wasm_bindgen(js_name = argsJson, unchecked_param_type = "string")] args_json: JsValue,
) -> Result<String, JsValue> {
    let facts: windows::Facts = serde_json::from_str(&string_arg(&facts_json, "factsJson")?)
        .map_err(|e| type_error(&format!("factsJson: {e}")))?;
    let args: Vec<String> = serde_json::from_str(&string_arg(&args_json, "argsJson")?)
        .map_err(|e| type_error(&format!("argsJson: {e}")))?;
    let out = match windows::plan(&facts, &args) {
        Ok(spawn) => serde_json::json!({ "spawn": spawn }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    Ok(out.to_string())
}

/// Whether `path` is `root` or under it as Windows compares paths (case, `/` and `\`,
/// `\\?\` forms; both absolute).
#[wasm_bindgen(js_name = windowsContains)]
pub fn contains(
    #[wasm_bindgen(unchecked_param_type = "string")] root: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
) -> Result<bool, JsValue> {
    Ok(windows::contains(
        &string_arg(&root, "root")?,
        &string_arg(&path, "path")?,
    ))
}

/// The host variables a Windows process needs, passed to agents by default beside
/// `envAllowlist()` (names compared ignoring ASCII case on Windows).
#[wasm_bindgen(js_name = windowsEnvAllowlist, unchecked_return_type = "string[]")]
pub fn env_allowlist() -> Array {
    windows::WINDOWS_ALLOWLIST
        .iter()
        .map(|p| JsValue::from_str(p))
        .collect()
}

/// The bytes of a `.cmd` file to read for `windowsPlanSpawn`'s `text` (npm's shims are far
/// smaller).
#[wasm_bindgen(js_name = windowsShimReadLimit)]
pub fn shim_read_limit() -> usize {
    windows::SHIM_READ_LIMIT
}
