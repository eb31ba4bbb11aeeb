//! The conversation thread ([`acp_client::thread::Thread`]) for JavaScript (feature `client`):
//! `session/update`s folded into a versioned, saveable thread, with coalesced per-entry deltas
//! for views. The same model `acp chat` renders from; `tests/client/thread.json` is its case
//! table, replayed through this class by `tests/node/client.test.mjs`.
//!
//! Mechanical: every method checks its arguments (a `TypeError` naming the argument), calls
//! the matching `Thread` method and returns what it returns; structured values cross as JSON
//! text both ways (serde's text of acp-client's types, for the caller's one `JSON.parse`).

use std::cell::RefCell;
use std::rc::Rc;

use acp_client::session;
use acp_client::thread::{self as model, Block, Limits, Mode, NoticeLevel, RawJson};
use serde_json::value::RawValue;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::policy::by_name;
use crate::{integer, string_arg};

#[allow(dead_code)] // read through the custom section
pub(crate) const TS_TYPES: &str = r#"
/** A content block as the thread keeps it (`ContentBlock`, the fields a face shows). */
export interface ThreadBlock {
  type: string;
  text?: string;
  /** Base64 data of an image or audio block. */
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  title?: string;
  resource?: { uri: string; mimeType?: string; text?: string; blob?: string };
}

/** What a tool call shows besides its title. */
export type ThreadToolContent =
  | { type: "content"; content: ThreadBlock }
  | { type: "diff"; path: string; oldText: string | null; newText: string }
  | { type: "terminal"; terminalId: string }
  | { type: "unknown" };

/** A tool call as it stands (`status`: "pending", "in_progress", "completed", "failed", or
 *  "cancelled" when its turn ended before it finished). */
export interface ThreadToolCall {
  toolCallId: string;
  title: string;
  kind: string;
  status: string;
  content: ThreadToolContent[];
  /** Content items past the cap (64 per update), not kept. */
  contentMore?: number;
  locations: Array<{ path: string; line?: number }>;
  rawInput?: unknown;
  rawOutput?: unknown;
}

/** How a notice is shown. */
export type NoticeLevel = "info" | "warning" | "error";

/** One entry of the conversation. */
export type ThreadEntry =
  | { type: "user"; messageId?: string; content: ThreadBlock[] }
  | { type: "agent"; messageId?: string; content: ThreadBlock[] }
  | { type: "thought"; messageId?: string; content: ThreadBlock[] }
  | ({ type: "tool" } & ThreadToolCall)
  | { type: "notice"; level: NoticeLevel; text: string };

export interface ThreadPlanEntry { content: string; priority: string; status: string }
export interface ThreadCommand { name: string; description: string; hint?: string }
export interface ThreadMode { id: string; name: string; description?: string }
export interface ThreadUsage { used: number; size: number; cost?: { amount: number; currency: string } }

/** What one `applyUpdate` did (JSON text), for a streaming renderer. Entry numbers count from
 *  the start of the conversation, dropped entries included. */
export type ThreadApplied =
  | { applied: "chunk"; entry: number; started: boolean; block: ThreadBlock }
  | { applied: "tool"; entry: number; started: boolean }
  | { applied: "plan" | "commands" | "mode" | "config_options" | "info" | "usage" }
  | { applied: "ignored"; kind: string };

/** The thread without its entries. */
export interface ThreadMeta {
  title: string | null;
  plan: ThreadPlanEntry[];
  planMore: number;
  currentMode: string | null;
  modes: ThreadMode[];
  configOptions: unknown | null;
  commands: ThreadCommand[];
  commandsMore: number;
  usage: ThreadUsage | null;
  turn: "idle" | "running";
  lastStop: string | null;
  /** Builds with the feature `unstable` only: the last turn's token usage. */
  turnUsage?: ThreadTurnUsage;
  /** Builds with the feature `unstable` only: what `session/status` said (`open`, `saved`…). */
  sessionStatus?: string;
}

/** Token usage of one turn (draft ACP: `PromptResponse.usage`). */
export interface ThreadTurnUsage {
  totalTokens: number;
  inputTokens: number;
  outputTokens: number;
  thoughtTokens?: number;
  cachedReadTokens?: number;
  cachedWriteTokens?: number;
}

/** Changes since the last `takeDelta()` (JSON text): each changed entry once, as
 *  `[number, entry]`; `appended`, text added to the end of block `block` (the last, a text
 *  block) of an entry the view has and that did not change otherwise, as `[number, block,
 *  text]` (a streamed message comes this way: its new text only); entries before
 *  `firstEntry` are gone (dropped for the byte limit); `meta` when any of the thread's other
 *  fields changed. */
export interface ThreadDelta {
  entries: Array<[number, ThreadEntry]>;
  appended?: Array<[number, number, string]>;
  firstEntry: number;
  meta?: ThreadMeta;
}

/** The saved form (`toJson()`, read back by `Thread.fromJson`). */
export interface SavedThread {
  format: 1;
  sessionId?: string;
  title?: string;
  updatedAt?: string;
  entries: ThreadEntry[];
  droppedEntries: number;
  plan: ThreadPlanEntry[];
  planMore?: number;
  currentMode?: string;
  modes: ThreadMode[];
  configOptions?: unknown;
  commands: ThreadCommand[];
  commandsMore?: number;
  usage?: ThreadUsage;
  turn: "idle" | "running";
  lastStop?: string;
  turnUsage?: ThreadTurnUsage;
  sessionStatus?: string;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

const LEVELS: [NoticeLevel; 3] = [NoticeLevel::Info, NoticeLevel::Warning, NoticeLevel::Error];

/// The conversation of one session: feed it what arrives (`applyUpdate`, `beginTurn`,
/// `endTurn`, `failTurn`, `notice`, `setSession`), render from `takeDelta()` (each changed
/// entry once) or from what `applyUpdate` returns, save it with `toJson()`. A thread of its own
/// (`new Thread()`, `Thread.fromJson`), or the conversation of a session engine
/// (`Session.thread()`, which shares it: the session folds the agent's updates into it).
///
/// The object owns wasm memory: call `free()` when done; any method called afterwards throws.
#[wasm_bindgen]
pub struct Thread {
    inner: Inner,
}

enum Inner {
    Own(Box<model::Thread>),
    /// A session engine's conversation (shared with its `Session`).
    Of(Rc<RefCell<session::Session>>),
}

impl Thread {
    /// The conversation of `session`.
    pub(crate) fn of(session: Rc<RefCell<session::Session>>) -> Thread {
        Thread {
            inner: Inner::Of(session),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&model::Thread) -> R) -> R {
        match &self.inner {
            Inner::Own(t) => f(t),
            Inner::Of(s) => f(s.borrow().thread()),
        }
    }

    fn with_mut<R>(&mut self, f: impl FnOnce(&mut model::Thread) -> R) -> R {
        match &mut self.inner {
            Inner::Own(t) => f(t),
            Inner::Of(s) => f(s.borrow_mut().thread_mut()),
        }
    }
}

/// `maxBytes`: `undefined`/`null` for acp-client's default (32 MiB), else a non-negative
/// integer.
fn limits(max_bytes: &JsValue) -> Result<Limits, JsValue> {
    if max_bytes.is_undefined() || max_bytes.is_null() {
        return Ok(Limits::default());
    }
    let n = max_bytes
        .as_f64()
        .ok_or_else(|| type_error("maxBytes must be a non-negative integer"))
        .and_then(|n| integer(n, "maxBytes"))?;
    Ok(Limits {
        max_bytes: usize::try_from(n).unwrap_or(usize::MAX),
    })
}

/// A JSON text argument that may be `null`/`undefined` (none).
fn optional_string(value: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
    match value.as_string() {
        Some(s) => Ok(Some(s)),
        None if value.is_null() || value.is_undefined() => Ok(None),
        None => Err(type_error(&format!("{what} must be a string or null"))),
    }
}

pub(crate) fn error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

#[wasm_bindgen]
impl Thread {
    /// An empty thread keeping at most `maxBytes` of entry content (default: acp-client's
    /// `Limits::default()`, 32 MiB); past it the oldest entries are dropped.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(js_name = maxBytes, unchecked_optional_param_type = "number")]
        max_bytes: JsValue,
    ) -> Result<Thread, JsValue> {
        Ok(Thread {
            inner: Inner::Own(Box::new(model::Thread::new(limits(&max_bytes)?))),
        })
    }

    /// A saved thread (`toJson()`) read back. Another format, or text that is not a saved
    /// thread, throws an `Error` with acp-client's message ("the thread was saved in format 2
    /// and this version reads format 1").
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(js_name = maxBytes, unchecked_optional_param_type = "number")]
        max_bytes: JsValue,
    ) -> Result<Thread, JsValue> {
        let text = string_arg(&text, "text")?;
        let limits = limits(&max_bytes)?;
        model::Thread::from_json(&text, limits)
            .map(|t| Thread {
                inner: Inner::Own(Box::new(t)),
            })
            .map_err(|e| error(&e))
    }

    /// Folds one `session/update`'s params (JSON text); returns the JSON text of what it did
    /// (`ThreadApplied`). An update that cannot be read throws an `Error` whose message starts
    /// "unreadable session/update" and changes nothing.
    #[wasm_bindgen(js_name = applyUpdate)]
    pub fn apply_update(
        &mut self,
        #[wasm_bindgen(js_name = paramsJson, unchecked_param_type = "string")] params_json: JsValue,
    ) -> Result<String, JsValue> {
        let params = string_arg(&params_json, "paramsJson")?;
        let applied = self
            .with_mut(|t| t.apply_json(&params))
            .map_err(|e| error(&e.to_string()))?;
        Ok(serde_json::to_string(&applied).unwrap_or_default())
    }

    /// The user's prompt (JSON text of its content blocks) starts a turn; returns the number
    /// of its entry.
    #[wasm_bindgen(js_name = beginTurn)]
    pub fn begin_turn(
        &mut self,
        #[wasm_bindgen(js_name = promptBlocksJson, unchecked_param_type = "string")]
        prompt_blocks_json: JsValue,
    ) -> Result<f64, JsValue> {
        let blocks: Vec<Block> = prompt_blocks_json
            .as_string()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| {
                type_error("promptBlocksJson must be the JSON text of an array of content blocks ({type: string, text?: string, …})")
            })?;
        Ok(self.with_mut(|t| t.begin_turn(blocks)) as f64)
    }

    /// The turn ended with `stopReason` (`end_turn`, `cancelled`…); any other reason than
    /// `end_turn` marks unfinished tool calls and plan entries `cancelled`.
    #[wasm_bindgen(js_name = endTurn)]
    pub fn end_turn(
        &mut self,
        #[wasm_bindgen(js_name = stopReason, unchecked_param_type = "string")] stop_reason: JsValue,
    ) -> Result<(), JsValue> {
        let reason = string_arg(&stop_reason, "stopReason")?;
        self.with_mut(|t| t.end_turn(&reason));
        Ok(())
    }

    /// The turn failed: `message` becomes an error notice, unfinished tool calls and plan
    /// entries are marked `failed`.
    #[wasm_bindgen(js_name = failTurn)]
    pub fn fail_turn(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] message: JsValue,
    ) -> Result<(), JsValue> {
        let message = string_arg(&message, "message")?;
        self.with_mut(|t| t.fail_turn(&message));
        Ok(())
    }

    /// Adds a notice to the conversation; returns the number of its entry.
    pub fn notice(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "NoticeLevel")] level: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    ) -> Result<f64, JsValue> {
        let level = level
            .as_string()
            .and_then(|l| by_name(LEVELS, &l))
            .ok_or_else(|| type_error("level must be one of \"info\", \"warning\", \"error\""))?;
        let text = string_arg(&text, "text")?;
        Ok(self.with_mut(|t| t.notice(level, &text)) as f64)
    }

    /// What `session/new` / `session/load` answered: the session id, its modes (JSON text of
    /// `availableModes`, or `null`), the current mode id and the config options (JSON text as
    /// sent, or `null`).
    #[wasm_bindgen(js_name = setSession)]
    pub fn set_session(
        &mut self,
        #[wasm_bindgen(js_name = sessionId, unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(js_name = modesJson, unchecked_param_type = "string | null")]
        modes_json: JsValue,
        #[wasm_bindgen(js_name = currentMode, unchecked_param_type = "string | null")]
        current_mode: JsValue,
        #[wasm_bindgen(js_name = configOptionsJson, unchecked_param_type = "string | null")]
        config_options_json: JsValue,
    ) -> Result<(), JsValue> {
        let session_id = string_arg(&session_id, "sessionId")?;
        let modes_error = || {
            type_error("modesJson must be the JSON text of an array of modes ({id: string, name: string, description?: string}) or null")
        };
        let modes: Vec<Mode> = match optional_string(&modes_json, "modesJson")? {
            None => Vec::new(),
            Some(t) => serde_json::from_str(&t).map_err(|_| modes_error())?,
        };
        let current_mode = optional_string(&current_mode, "currentMode")?;
        let config_options = match optional_string(&config_options_json, "configOptionsJson")? {
            None => None,
            Some(t) => Some(RawJson(RawValue::from_string(t).map_err(|_| {
                type_error(
                    "configOptionsJson must be JSON text (the config options as sent) or null",
                )
            })?)),
        };
        self.with_mut(|t| t.set_session(&session_id, modes, current_mode, config_options));
        Ok(())
    }

    /// Changes since the last call (JSON text of `ThreadDelta`: each changed entry once,
    /// however many chunks changed it), and clears them.
    #[wasm_bindgen(js_name = takeDelta)]
    pub fn take_delta(&mut self) -> String {
        self.with_mut(|t| serde_json::to_string(&t.take_delta()).unwrap_or_default())
    }

    /// Whether `takeDelta()` has anything.
    #[wasm_bindgen(js_name = hasChanges)]
    pub fn has_changes(&self) -> bool {
        self.with(model::Thread::has_changes)
    }

    /// The saved form (JSON text of `SavedThread`).
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.with(model::Thread::to_json)
    }

    /// The number the next entry will get (entries so far, dropped ones included).
    #[wasm_bindgen(js_name = entryCount)]
    pub fn entry_count(&self) -> f64 {
        self.with(model::Thread::entry_count) as f64
    }

    /// Entry `n` (JSON text of `ThreadEntry`), or `undefined` when there is none or it was
    /// dropped.
    #[wasm_bindgen(js_name = entryJson)]
    pub fn entry_json(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] n: JsValue,
    ) -> Result<Option<String>, JsValue> {
        let n = n
            .as_f64()
            .ok_or_else(|| type_error("n must be a non-negative integer"))
            .and_then(|n| integer(n, "n"))?;
        Ok(self.with(|t| {
            t.entry(n)
                .map(|e| serde_json::to_string(e).unwrap_or_default())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{by_name, LEVELS, TS_TYPES};
    use acp_client::thread::{Applied, Block, Entry, NoticeLevel, ToolCall, ToolContent};

    fn in_ts(name: &str) {
        assert!(
            TS_TYPES.contains(&format!("\"{name}\"")),
            "{name:?} is missing from the TypeScript types in thread.rs"
        );
    }

    fn tag(v: &impl serde::Serialize, key: &str) -> String {
        serde_json::to_value(v).unwrap()[key]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The TypeScript is written by hand: it names every tag serde writes (the matches are
    /// exhaustive, so a new variant in acp-client fails to compile here until it is typed).
    #[test]
    fn every_tag_is_typed() {
        let level = |l: &NoticeLevel| match l {
            NoticeLevel::Info | NoticeLevel::Warning | NoticeLevel::Error => 3,
        };
        assert_eq!(LEVELS.len(), level(&LEVELS[0]));
        for l in &LEVELS {
            let name = serde_json::to_value(l)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string();
            in_ts(&name);
            assert_eq!(by_name(LEVELS, &name).as_ref(), Some(l));
        }
        let entries = [
            Entry::User {
                message_id: None,
                content: vec![],
            },
            Entry::Agent {
                message_id: None,
                content: vec![],
            },
            Entry::Thought {
                message_id: None,
                content: vec![],
            },
            Entry::Tool(ToolCall::default()),
            Entry::Notice {
                level: NoticeLevel::Info,
                text: String::new(),
            },
        ];
        let entry = |e: &Entry| match e {
            Entry::User { .. }
            | Entry::Agent { .. }
            | Entry::Thought { .. }
            | Entry::Tool(_)
            | Entry::Notice { .. } => 5,
        };
        assert_eq!(entries.len(), entry(&entries[0]));
        for e in &entries {
            in_ts(&tag(e, "type"));
        }
        let contents = [
            ToolContent::Content {
                content: Block::text(""),
            },
            ToolContent::Diff {
                path: String::new(),
                old_text: None,
                new_text: String::new(),
            },
            ToolContent::Terminal {
                terminal_id: String::new(),
            },
            ToolContent::Unknown,
        ];
        let content = |c: &ToolContent| match c {
            ToolContent::Content { .. }
            | ToolContent::Diff { .. }
            | ToolContent::Terminal { .. }
            | ToolContent::Unknown => 4,
        };
        assert_eq!(contents.len(), content(&contents[0]));
        for c in &contents {
            in_ts(&tag(c, "type"));
        }
        let applied = [
            Applied::Chunk {
                entry: 0,
                started: true,
                block: Box::new(Block::text("")),
            },
            Applied::Tool {
                entry: 0,
                started: true,
            },
            Applied::Plan,
            Applied::Commands,
            Applied::Mode,
            Applied::ConfigOptions,
            Applied::Info,
            Applied::Usage,
            Applied::Ignored {
                kind: String::new(),
            },
        ];
        let count = |a: &Applied| match a {
            Applied::Chunk { .. }
            | Applied::Tool { .. }
            | Applied::Plan
            | Applied::Commands
            | Applied::Mode
            | Applied::ConfigOptions
            | Applied::Info
            | Applied::Usage
            | Applied::Ignored { .. } => 9,
        };
        assert_eq!(applied.len(), count(&applied[0]));
        for a in &applied {
            in_ts(&tag(a, "applied"));
        }
    }
}
