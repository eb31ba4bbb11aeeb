//! The record of a turn's edits and the undo decision ([`acp_client::edits`]) for JavaScript
//! (feature `client`): the rule `acp chat`'s `/undo` follows, for the extension's Undo, Reject
//! and checkpoint restore (`vscode-extension/src/bridges/edits.ts`), so one rule decides for
//! both faces. `tests/client/edits.json` is the case table, replayed through [`EditRecord`] by
//! `tests/node/policy.test.mjs`.
//!
//! * [`undo_step`] (`undoStep`): what undoing one file takes, from its text before the agent's
//!   first write, what the agent left, and its text now. For a face keeping its own per-file
//!   state (the extension's review moves accepted changes into the "before" text).
//! * [`EditRecord`]: acp-client's record itself (bounded by `editRecordBudget()`, 64 MiB).
//!
//! Results are plain objects shaped as the table's `expect` (`UndoStep`), written by serde.

use acp_client::edits::{self, Prior, Refusal, UndoStep};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** Why an undo is not done: the agent did not write the file, it changed (or was deleted)
 *  since the agent's last write, its earlier text was not text, or the record's budget did not
 *  keep its texts. */
export type UndoRefusal = "unknown" | "changed_since" | "unreadable" | "not_kept";

/** What undoing one file takes (tests/client/edits.json). */
export type UndoStep =
  | { undo: "restore"; text: string }
  | { undo: "remove" }
  | { undo: "nothing" }
  | { undo: "refuse"; reason: UndoRefusal };

/** A file before the agent's first write: it did not exist, this text, or not readable as text. */
export type EditPrior = { kind: "missing" } | { kind: "text"; text: string } | { kind: "unreadable" };

/** One file of an `EditRecord` (`before`/`after` null: not kept, past the budget). */
export interface EditRecordFile { path: string; before: EditPrior | null; after: string | null; writes: number }
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(&serde_json::to_string(value).unwrap_or_default())
}

/// A string argument, or `None` for `null`/`undefined`; another type is a `TypeError`.
fn optional_string(v: &JsValue, name: &str) -> Result<Option<String>, JsValue> {
    if v.is_null() || v.is_undefined() {
        return Ok(None);
    }
    v.as_string()
        .map(Some)
        .ok_or_else(|| type_error(&format!("{name} must be a string or null")))
}

fn string(v: &JsValue, name: &str) -> Result<String, JsValue> {
    v.as_string()
        .ok_or_else(|| type_error(&format!("{name} must be a string")))
}

/// An `EditPrior` as JSON text (`{"kind":"text","text":…}`).
fn prior_arg(v: &JsValue) -> Result<Prior, JsValue> {
    let bad = || {
        type_error(
            "beforeJson must be the JSON text of {kind: \"missing\"}, {kind: \"text\", text} or {kind: \"unreadable\"}",
        )
    };
    let value: serde_json::Value = v
        .as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(bad)?;
    match value.get("kind").and_then(|k| k.as_str()) {
        Some("missing") => Ok(Prior::Missing),
        Some("unreadable") => Ok(Prior::Unreadable),
        Some("text") => value
            .get("text")
            .and_then(|t| t.as_str())
            .map(|t| Prior::Text(t.to_string()))
            .ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// What undoing one file takes (`UndoStep`). `before`: its text before the agent's first write,
/// `null` when the agent created it; `after`: the text the agent's last write left; `now`: its
/// text now, `null` when it does not exist. `force`: the user confirmed undoing although it
/// changed since. A file deleted since is refused (`changed_since`) unless `force`, which
/// writes its earlier text back; a created file deleted since needs `nothing`.
#[wasm_bindgen(js_name = undoStep, unchecked_return_type = "UndoStep")]
pub fn undo_step(
    #[wasm_bindgen(unchecked_param_type = "string | null")] before: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] after: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | null")] now: JsValue,
    force: bool,
) -> Result<JsValue, JsValue> {
    let before = match optional_string(&before, "before")? {
        Some(t) => Prior::Text(t),
        None => Prior::Missing,
    };
    let after = string(&after, "after")?;
    let now = optional_string(&now, "now")?;
    to_js(&edits::undo_step(
        Some(&before),
        Some(&after),
        now.as_deref(),
        force,
    ))
}

/// The words for an undo refused for `reason` on `path` (the path escaped for one line).
#[wasm_bindgen(js_name = describeUndoRefusal)]
pub fn describe_undo_refusal(
    #[wasm_bindgen(unchecked_param_type = "UndoRefusal")] reason: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
) -> Result<String, JsValue> {
    let reason = match reason.as_string().as_deref() {
        Some("unknown") => Refusal::Unknown,
        Some("changed_since") => Refusal::ChangedSince,
        Some("unreadable") => Refusal::Unreadable,
        Some("not_kept") => Refusal::NotKept,
        _ => return Err(type_error(
            "reason must be one of \"unknown\", \"changed_since\", \"unreadable\", \"not_kept\"",
        )),
    };
    Ok(reason.describe(&string(&path, "path")?))
}

/// The bytes of text an edit record keeps at most (acp-client's `MAX_RECORD_BYTES`, 64 MiB).
#[wasm_bindgen(js_name = editRecordBudget)]
pub fn edit_record_budget() -> f64 {
    edits::MAX_RECORD_BYTES as f64
}

/// One turn's edits (acp-client's `EditRecord`): what the agent wrote, kept within
/// `editRecordBudget()` bytes of text, and the undo decision for each file.
#[wasm_bindgen]
pub struct EditRecord {
    inner: edits::EditRecord,
}

#[derive(Serialize)]
struct FileOut<'a> {
    path: &'a str,
    before: Option<&'a Prior>,
    after: Option<&'a str>,
    writes: u32,
}

impl Default for EditRecord {
    fn default() -> Self {
        EditRecord::new()
    }
}

#[wasm_bindgen]
impl EditRecord {
    /// An empty record.
    #[wasm_bindgen(constructor)]
    pub fn new() -> EditRecord {
        EditRecord {
            inner: edits::EditRecord::new(),
        }
    }

    /// A write is applied to `path`: `beforeJson` (an `EditPrior` as JSON text) is what the file
    /// held just before it, `after` the text written.
    pub fn record(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(js_name = beforeJson, unchecked_param_type = "string")] before_json: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] after: JsValue,
    ) -> Result<(), JsValue> {
        let path = string(&path, "path")?;
        let before = prior_arg(&before_json)?;
        let after = string(&after, "after")?;
        self.inner.record(&path, before, &after);
        Ok(())
    }

    /// What undoing `path` takes, given its text `now` (`null`: it does not exist).
    pub fn undo(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | null")] now: JsValue,
        force: bool,
    ) -> Result<JsValue, JsValue> {
        let path = string(&path, "path")?;
        let now = optional_string(&now, "now")?;
        let step: UndoStep = self.inner.undo(&path, now.as_deref(), force);
        to_js(&step)
    }

    /// The face carried out `path`'s undo, or keeps the agent's text: the file leaves the
    /// record. `false`: it was not in it.
    pub fn keep(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Result<bool, JsValue> {
        Ok(self.inner.keep(&string(&path, "path")?))
    }

    /// Keeps everything (a new turn starts).
    #[wasm_bindgen(js_name = keepAll)]
    pub fn keep_all(&mut self) {
        self.inner.keep_all();
    }

    /// The files written, in the order first written.
    #[wasm_bindgen(unchecked_return_type = "EditRecordFile[]")]
    pub fn files(&self) -> Result<JsValue, JsValue> {
        let out: Vec<FileOut<'_>> = self
            .inner
            .files()
            .iter()
            .map(|f| FileOut {
                path: &f.path,
                before: f.before.as_ref(),
                after: f.after.as_deref(),
                writes: f.writes,
            })
            .collect();
        to_js(&out)
    }

    /// The bytes of text kept (at most `editRecordBudget()`).
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> f64 {
        self.inner.bytes() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::TS_TYPES;
    use acp_client::edits::{Refusal, UndoStep};

    /// The TypeScript above is written by hand: it names every wire name of acp-client's
    /// `Refusal` and `UndoStep` (the matches are exhaustive: a new variant fails to compile here
    /// until it is typed).
    #[test]
    fn every_variant_is_typed() {
        for r in [
            Refusal::Unknown,
            Refusal::ChangedSince,
            Refusal::Unreadable,
            Refusal::NotKept,
        ] {
            match r {
                Refusal::Unknown
                | Refusal::ChangedSince
                | Refusal::Unreadable
                | Refusal::NotKept => {}
            }
            let name = serde_json::to_value(r).unwrap();
            let name = name.as_str().unwrap();
            assert!(TS_TYPES.contains(&format!("\"{name}\"")), "{name}");
        }
        for s in [
            UndoStep::Restore {
                text: String::new(),
            },
            UndoStep::Remove,
            UndoStep::Nothing,
            UndoStep::Refuse {
                reason: Refusal::Unknown,
            },
        ] {
            match s {
                UndoStep::Restore { .. }
                | UndoStep::Remove
                | UndoStep::Nothing
                | UndoStep::Refuse { .. } => {}
            }
            let v = serde_json::to_value(&s).unwrap();
            let tag = v["undo"].as_str().unwrap();
            assert!(TS_TYPES.contains(&format!("undo: \"{tag}\"")), "{tag}");
        }
    }
}
