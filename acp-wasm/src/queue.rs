//! The prompt queue ([`acp_client::queue::PromptQueue`]) for JavaScript (feature `client`):
//! what to do with a prompt the user sends while a turn runs, and what is sent when the turn
//! ends. Mechanical: each method checks its arguments, calls the queue and returns its answer
//! as JSON text (serde's text of acp-client's types); a refusal throws an `Error` named
//! `QueueRefused` whose message is acp-client's words for the user.

use acp_client::queue::{self, TurnEnd};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::{integer, string_arg};

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** A prompt waiting for the turn to end (`data`: the face's own, opaque to the queue). */
export interface QueuedPrompt { id: number; text: string; data: string }

/** What to do with a prompt the user sent (`PromptQueue.submit`). */
export type QueueSubmitted = { do: "send"; prompt: QueuedPrompt } | { do: "queued"; id: number };

/** What follows a turn's end (`PromptQueue.turnEnded`). */
export type QueueAfterTurn =
  | { next: "send"; prompt: QueuedPrompt }
  | { next: "held"; waiting: number; text: string }
  | { next: "idle" };

/** How a turn ended: "done" (any stop reason but cancelled), "cancelled", "failed". */
export type QueueTurnEnd = "done" | "cancelled" | "failed";

/** The queue as the view shows it (`PromptQueue.state`). */
export interface QueueState { items: QueuedPrompt[]; held: boolean }
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

/// Prompts waiting for the running turn to end: sent one by one in order when it ends; held
/// after a cancelled or failed turn (acp-client's rules, `queue.rs`).
#[wasm_bindgen]
pub struct PromptQueue {
    inner: queue::PromptQueue,
}

fn refused(e: queue::Refused) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name("QueueRefused");
    err.into()
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("queue answers serialize")
}

fn id_arg(id: f64) -> Result<u64, JsValue> {
    integer(id, "id")
}

#[wasm_bindgen]
impl PromptQueue {
    /// An empty queue.
    #[wasm_bindgen(constructor)]
    pub fn new() -> PromptQueue {
        PromptQueue {
            inner: queue::PromptQueue::new(),
        }
    }

    /// The user sent `text` (with the face's `data`) while a turn runs (`running`) or not:
    /// `QueueSubmitted` as JSON text (send a prompt now, or it waits). Throws `QueueRefused`
    /// (empty, full, over the byte budget).
    pub fn submit(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] data: JsValue,
        running: bool,
    ) -> Result<String, JsValue> {
        let text = string_arg(&text, "text")?;
        let data = string_arg(&data, "data")?;
        self.inner
            .submit(&text, &data, running)
            .map(|s| json(&s))
            .map_err(refused)
    }

    /// The running turn ended (`end`: `QueueTurnEnd`): `QueueAfterTurn` as JSON text.
    #[wasm_bindgen(js_name = turnEnded)]
    pub fn turn_ended(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "QueueTurnEnd")] end: JsValue,
    ) -> Result<String, JsValue> {
        let end = match string_arg(&end, "end")?.as_str() {
            "done" => TurnEnd::Done,
            "cancelled" => TurnEnd::Cancelled,
            "failed" => TurnEnd::Failed,
            other => {
                return Err(type_error(&format!(
                    "end must be \"done\", \"cancelled\" or \"failed\", not {other:?}"
                )))
            }
        };
        let after = self.inner.turn_ended(end);
        Ok(json(&after))
    }

    /// The user resumes a held queue while nothing runs: the first waiting prompt
    /// (`QueuedPrompt` as JSON text) to send now, or `undefined`.
    #[wasm_bindgen(js_name = sendHeld)]
    pub fn send_held(&mut self) -> Option<String> {
        self.inner.send_held().map(|q| json(&q))
    }

    /// The queued prompt `id` now says `text`. Throws `QueueRefused` (gone, empty, too large).
    pub fn edit(
        &mut self,
        id: f64,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    ) -> Result<(), JsValue> {
        let text = string_arg(&text, "text")?;
        self.inner.edit(id_arg(id)?, &text).map_err(refused)
    }

    /// The queued prompt `id` is not sent (`QueuedPrompt` as JSON text). Throws
    /// `QueueRefused` when it was sent or removed meanwhile.
    pub fn remove(&mut self, id: f64) -> Result<String, JsValue> {
        self.inner
            .remove(id_arg(id)?)
            .map(|q| json(&q))
            .map_err(refused)
    }

    /// Nothing waits any more; how many prompts were dropped.
    pub fn clear(&mut self) -> usize {
        self.inner.clear()
    }

    /// How many prompts wait.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.inner.len()
    }

    /// The queue as the view shows it: `QueueState` as JSON text.
    pub fn state(&self) -> String {
        #[derive(Serialize)]
        struct State<'a> {
            items: Vec<&'a queue::Queued>,
            held: bool,
        }
        json(&State {
            items: self.inner.items().collect(),
            held: self.inner.is_held(),
        })
    }
}

impl Default for PromptQueue {
    fn default() -> Self {
        PromptQueue::new()
    }
}
