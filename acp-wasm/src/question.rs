//! The permission question's model ([`acp_client::question`]) for JavaScript (feature
//! `client`): what a face shows to ask for permission — the title, the options in order, the
//! tool call's kind and locations, the change as a unified diff — built once in acp-client
//! from the agent's `session/request_permission` (and what the conversation knows of its tool
//! call) or from a write that changes what runs. Mechanical like the rest of the wrapper:
//! arguments are JSON text, read into a `serde_json::Value`; the answer is serde's JSON text of
//! the model (`tests/client/question.json`'s `expect`), for the caller to parse.

use acp_client::question::{self, WriteRequest};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::policy::{by_name, REASONS};

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** One changed region of an edit (tests/client/hunks.json): 1-based starts; a pure insertion's
 *  oldStart (a pure removal's newStart) is the line it follows. */
export interface EditHunk {
  oldStart: number;
  removed: number;
  newStart: number;
  added: number;
}
/** A change to one file as a question shows it (tests/client/question.json). Every string is
 *  one escaped line. */
export interface QuestionDiff {
  path: string;
  /** `+3 -1`, `new file, +12`, `no changes`, `binary content, 10 → 12 bytes`… */
  summary: string;
  newFile: boolean;
  /** A NUL byte in either text: no lines. */
  binary: boolean;
  /** Too large to align line by line: the changed region removed, then added. */
  whole: boolean;
  added: number;
  removed: number;
  /** The unified diff (`@@` headers, ` `/`-`/`+`/`\` lines), at most 2000 for a question. */
  lines: string[];
  /** How many of `lines` the question shows (the first ones). */
  shown: number;
  /** Lines not shown ("… N more lines"), those past `lines` included. */
  hidden: number;
}

/** One option of a question: its number (from 1), the id to answer with, its escaped name. */
export interface QuestionChoice { number: number; optionId: string; name: string; kind: PermissionOptionKind }

/** What a face shows to ask for permission (acp-client's `question::Question`). */
export interface PermissionQuestion {
  /** One line: what the agent wants to do (`Edit a.rs (edit)`, `write /w/.git/config (why)`). */
  title: string;
  kind: string | null;
  /** `path` or `path:line`. */
  locations: string[];
  /** The command line, exactly what runs (a terminal/create). */
  command: string | null;
  diffs: QuestionDiff[];
  /** Further lines: warnings (`⚠ …`), the tool's text, locations no diff shows, its input. */
  detail: string[];
  options: QuestionChoice[];
}

"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_QUESTION: &'static str = TS_TYPES;

fn json_arg(text: &JsValue, what: &str) -> Result<Value, JsValue> {
    text.as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| type_error(what))
}

/// The question of a `session/request_permission` (JSON text of a `PermissionQuestion`).
/// `paramsJson`: the request's params as the agent sent them; `knownJson`: the tool call as
/// the conversation knows it (`title`, `kind`, `locations`, `content`, `rawInput`; what the
/// request leaves out is taken from it), or `null`.
#[wasm_bindgen(js_name = permissionQuestion, unchecked_return_type = "string")]
pub fn permission_question(
    #[wasm_bindgen(js_name = paramsJson, unchecked_param_type = "string")] params_json: JsValue,
    #[wasm_bindgen(js_name = knownJson, unchecked_param_type = "string | null")]
    known_json: JsValue,
) -> Result<String, JsValue> {
    let params = json_arg(
        &params_json,
        "paramsJson must be the JSON text of session/request_permission's params",
    )?;
    let known = if known_json.is_null() || known_json.is_undefined() {
        None
    } else {
        Some(json_arg(
            &known_json,
            "knownJson must be the JSON text of a tool call, or null",
        )?)
    };
    Ok(question::permission(&params, known.as_ref()).to_json())
}

/// The question about a write that changes what runs (JSON text of a `PermissionQuestion`):
/// the real path, why, the diff; options `write` and `refuse`. `path`: the real path the write
/// reaches; `askedPath`: the path the agent named (shown when it differs) or null; `oldText`:
/// the current text, null when the file does not exist (`exists`) or cannot be read as text.
/// ACP v2's permission question read as v1's (acp-client's `question::v2::as_v1`):
/// `paramsJson` with a `toolCall` about its `title`; `undefined` when it is not a v2 question
/// (a v1 request, no `title`, not an object), to be read as it is.
#[wasm_bindgen(js_name = permissionAsV1)]
pub fn permission_as_v1(#[wasm_bindgen(js_name = paramsJson)] params_json: &str) -> Option<String> {
    question::v2::as_v1(params_json)
}

#[wasm_bindgen(js_name = writeQuestion, unchecked_return_type = "string")]
#[allow(clippy::too_many_arguments)]
pub fn write_question(
    #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    #[wasm_bindgen(js_name = askedPath, unchecked_param_type = "string | null")]
    asked_path: JsValue,
    #[wasm_bindgen(unchecked_param_type = "WriteReason")] reason: JsValue,
    exists: bool,
    executable: bool,
    #[wasm_bindgen(js_name = oldText, unchecked_param_type = "string | null")] old_text: JsValue,
    #[wasm_bindgen(js_name = newText, unchecked_param_type = "string")] new_text: JsValue,
) -> Result<String, JsValue> {
    let (Some(path), Some(new_text)) = (path.as_string(), new_text.as_string()) else {
        return Err(type_error("path and newText must be strings"));
    };
    let reason = reason
        .as_string()
        .and_then(|r| by_name(REASONS, &r))
        .ok_or_else(|| type_error("reason must be a WriteReason"))?;
    let (asked_path, old_text) = (asked_path.as_string(), old_text.as_string());
    let q = question::write(&WriteRequest {
        path: &path,
        asked_path: asked_path.as_deref(),
        reason,
        exists,
        executable,
        old_text: old_text.as_deref(),
        new_text: &new_text,
    });
    Ok(q.to_json())
}

/// The changed regions from `oldText` to `newText` (JSON text of an array of `EditHunk`,
/// `tests/client/hunks.json`), for a review that accepts or rejects each.
#[wasm_bindgen(js_name = editHunks, unchecked_return_type = "string")]
pub fn edit_hunks(
    #[wasm_bindgen(js_name = oldText, unchecked_param_type = "string")] old_text: JsValue,
    #[wasm_bindgen(js_name = newText, unchecked_param_type = "string")] new_text: JsValue,
) -> Result<String, JsValue> {
    let (Some(old), Some(new)) = (old_text.as_string(), new_text.as_string()) else {
        return Err(type_error("oldText and newText must be strings"));
    };
    Ok(serde_json::to_string(&question::hunks::hunks(&old, &new)).expect("hunks serialize"))
}

/// The text with the hunks of `editHunks(oldText, newText)` whose indexes are in `take`
/// taken from `newText`, the others from `oldText`.
#[wasm_bindgen(js_name = selectHunks)]
pub fn select_hunks(
    #[wasm_bindgen(js_name = oldText, unchecked_param_type = "string")] old_text: JsValue,
    #[wasm_bindgen(js_name = newText, unchecked_param_type = "string")] new_text: JsValue,
    take: Vec<u32>,
) -> Result<String, JsValue> {
    let (Some(old), Some(new)) = (old_text.as_string(), new_text.as_string()) else {
        return Err(type_error("oldText and newText must be strings"));
    };
    Ok(question::hunks::select(&old, &new, |i| {
        take.iter().any(|&t| t as usize == i)
    }))
}
