//! One session's client side ([`acp_client::session::Session`]) for JavaScript (feature
//! `client`): which request opens it, the replay of a `session/load` and its end, updates held
//! until a new session's id is known, the restart after a crash and how the session is
//! re-established, whether the agent remembers the conversation and what the user is told;
//! and the conversation itself (its `Thread`). `tests/client/session.json` is the case table.
//!
//! Mechanical like the rest of the wrapper: every method checks its arguments, calls the
//! matching `Session` method and returns its answer as JSON text (serde's text of acp-client's
//! types). [`AcpConnection::poll_events_for`] is the fast path: `session/update` notifications
//! go from the engine to the session inside wasm, with the params the engine holds.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use acp_client::restart::RestartPolicy;
use acp_client::session::{self, Intent};
use acp_client::thread::{Limits, RawJson, Thread as Model};
use acp_core::Event;
use serde_json::value::RawValue;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::thread::{error, Thread};
use crate::{millis, string_arg, AcpConnection};

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** When and how often the session engine restarts a crashed agent (`SessionOptions.policy`;
 *  all fields required; durations in ms): acp-client's `RestartPolicy`, by default 4 restarts
 *  per 2 minutes, 500 ms doubling up to 30 s. */
export interface RestartPolicy {
  /** Restarts allowed within any window; the crash after that trips the breaker. 0: never. */
  maxRestartsInWindow: number;
  windowMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Growth factor per further crash in the window (below 1 or non-finite acts as 1). */
  multiplier: number;
}

/** What the user asked for (`new Session(intentJson, …)`): a new session; to continue one
 *  saved here (`saved`: its saved conversation, `toJson()`; an id with no saved record is
 *  refused unless `tryUnknown`; `orNew`: go on in a new session when the agent cannot reopen
 *  it); or to load one and show the agent's replay. */
export type SessionIntent =
  | { open: "new" }
  | { open: "continue"; sessionId: string; saved?: SavedThread; tryUnknown?: boolean; orNew?: boolean }
  | { open: "load"; sessionId: string };

/** `new Session`'s options: the conversation's byte limit, the restart policy, and `shown`, a
 *  conversation on screen already that a new session goes on from (its saved form). */
export interface SessionOptions {
  maxBytes?: number;
  policy?: RestartPolicy;
  shown?: SavedThread;
}

/** The request that opens the session (`initialized`, `openFailed`'s retry). */
export type SessionOpen =
  | { send: "new" }
  | { send: "resume"; sessionId: string }
  | { send: "load"; sessionId: string }
  /** ACP v2 only (never on this build, which has no v2): `session/resume` with a replay. */
  | { send: "replay"; sessionId: string };

/** How a `session/update` was taken (`update`). */
export type SessionRouted =
  | { routed: "shown"; applied: ThreadApplied }
  | { routed: "folded" }
  | { routed: "held" }
  | { routed: "ignored" };

/** Whether the conversation the user sees is one the agent remembers. */
export type SessionMemory = "fresh" | "resumed" | "replayed" | "lost";

/** Something the user is told (also added to the conversation as a notice). */
export interface SessionNotice { level: NoticeLevel; text: string }

/** The open request's answer taken (`opened`). */
export interface SessionOpened {
  sessionId: string;
  memory: SessionMemory;
  notices: SessionNotice[];
  /** What the updates held until the session's id was known changed (when there were any). */
  shown?: ThreadApplied[];
}

/** After the open request failed (`openFailed`): send `open` instead, or stop. */
export type SessionAfterFailure =
  | { next: "retry"; open: SessionOpen; notices: SessionNotice[] }
  | { next: "fail"; message: string };

/** After the agent's process or connection ended (`agentEnded`): start it again after
 *  `afterMs` (then `initialized` with its new answer), or not. */
export type SessionAfterEnd =
  | { next: "restart"; afterMs: number; notices: SessionNotice[] }
  | { next: "give_up"; notices: SessionNotice[] };
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

/// One session's client side and its conversation: feed it, in wire order, what the agent
/// answers and sends (`initialized`, `update`, `opened` / `openFailed`, `agentEnded`), send
/// what it names, tell the user what it says (its notices are in the conversation too); its
/// conversation is `thread()`: turns and notices go there, the view draws from its
/// `takeDelta()`.
///
/// The object owns wasm memory: call `free()` when done; any method called afterwards throws.
#[wasm_bindgen]
pub struct Session {
    inner: Rc<RefCell<session::Session>>,
}

const INTENT_SHAPE: &str = "intentJson must be the JSON text of {open: \"new\"}, {open: \"continue\", sessionId, saved?, tryUnknown?, orNew?} or {open: \"load\", sessionId}";
const OPTIONS_SHAPE: &str = "optionsJson must be the JSON text of {maxBytes?: number, policy?: RestartPolicy, shown?: SavedThread}";

/// `SessionIntent`, read through a `serde_json::Value` (derived readers of tagged enums and
/// borrowed raw values cost the client flavour size, docs/wasm.md).
fn intent_arg(text: &str) -> Result<Intent, JsValue> {
    let shape = || type_error(INTENT_SHAPE);
    let v: Value = serde_json::from_str(text).map_err(|_| shape())?;
    let id = || {
        v.get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(shape)
    };
    let flag = |name: &str| match v.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(shape()),
    };
    Ok(match v.get("open").and_then(Value::as_str) {
        Some("new") => Intent::New,
        Some("continue") => Intent::Continue {
            session_id: id()?,
            saved: match v.get("saved") {
                None | Some(Value::Null) => None,
                Some(saved) => Some(RawJson(
                    RawValue::from_string(saved.to_string()).map_err(|_| shape())?,
                )),
            },
            try_unknown: flag("tryUnknown")?,
            or_new: flag("orNew")?,
        },
        Some("load") => Intent::Load { session_id: id()? },
        _ => return Err(shape()),
    })
}

const POLICY_SHAPE: &str = "optionsJson must be the JSON text of SessionOptions, whose policy is {maxRestartsInWindow, windowMs, initialBackoffMs, maxBackoffMs: non-negative integers, multiplier: number}";

/// A `RestartPolicy` (every field required), read by hand: a derived reader costs the client
/// flavour 2 KB.
fn policy_arg(v: &Value) -> Option<RestartPolicy> {
    let ms = |key: &str| v.get(key)?.as_u64().map(Duration::from_millis);
    Some(RestartPolicy {
        max_restarts_in_window: u32::try_from(v.get("maxRestartsInWindow")?.as_u64()?).ok()?,
        window: ms("windowMs")?,
        initial_backoff: ms("initialBackoffMs")?,
        max_backoff: ms("maxBackoffMs")?,
        multiplier: v.get("multiplier")?.as_f64()?,
    })
}

/// `SessionOptions`: the limits, the restart policy and the conversation shown, if any.
fn options_arg(value: &JsValue) -> Result<(Limits, RestartPolicy, Option<String>), JsValue> {
    let shape = || type_error(OPTIONS_SHAPE);
    let text = match value.as_string() {
        Some(t) => t,
        None if value.is_undefined() || value.is_null() => {
            return Ok((Limits::default(), RestartPolicy::default(), None))
        }
        None => return Err(shape()),
    };
    let v: Value = serde_json::from_str(&text).map_err(|_| shape())?;
    let Value::Object(fields) = &v else {
        return Err(shape());
    };
    let mut limits = Limits::default();
    let mut policy = RestartPolicy::default();
    let mut shown = None;
    for (name, value) in fields {
        match (name.as_str(), value) {
            ("maxBytes", Value::Number(n)) => {
                let n = n.as_u64().ok_or_else(shape)?;
                limits.max_bytes = usize::try_from(n).unwrap_or(usize::MAX);
            }
            ("policy", p) => policy = policy_arg(p).ok_or_else(|| type_error(POLICY_SHAPE))?,
            ("shown", s) if !s.is_null() => shown = Some(s.to_string()),
            ("shown", _) => {}
            _ => return Err(shape()),
        }
    }
    Ok((limits, policy, shown))
}

/// A `Session` method's `Err(String)` as a JS `Error` with that message.
fn failed(message: String) -> JsValue {
    error(&message)
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[wasm_bindgen]
impl Session {
    /// A session to open as `intentJson` says (JSON text of `SessionIntent`) in directory `cwd`
    /// (for what the user is told), with `optionsJson` (JSON text of `SessionOptions`, or
    /// none). An intent that cannot be carried out whatever the agent (a session that is not
    /// saved here) throws an `Error` named `SessionRefused` whose message says why; a saved or
    /// shown conversation that cannot be read throws the same.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(js_name = intentJson, unchecked_param_type = "string")] intent_json: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] cwd: JsValue,
        #[wasm_bindgen(js_name = optionsJson, unchecked_optional_param_type = "string")]
        options_json: JsValue,
    ) -> Result<Session, JsValue> {
        let intent = intent_arg(&string_arg(&intent_json, "intentJson")?)?;
        let cwd = string_arg(&cwd, "cwd")?;
        let (limits, policy, shown) = options_arg(&options_json)?;
        let refused = |why: String| {
            let e = js_sys::Error::new(&why);
            e.set_name("SessionRefused");
            JsValue::from(e)
        };
        let mut inner = session::Session::new(intent, &cwd, limits, policy).map_err(refused)?;
        if let Some(shown) = shown {
            *inner.thread_mut() = Model::from_json(&shown, limits)
                .map_err(|e| refused(format!("the conversation shown is unreadable: {e}")))?;
        }
        Ok(Session {
            inner: Rc::new(RefCell::new(inner)),
        })
    }

    /// `initialize` was answered (its result's JSON text): JSON text of the `SessionOpen` to
    /// send. After `agentEnded` said restart, this re-establishes the session. Throws an
    /// `Error` saying why when the intent cannot be carried out with this agent.
    pub fn initialized(
        &mut self,
        #[wasm_bindgen(js_name = resultJson, unchecked_param_type = "string")] result_json: JsValue,
    ) -> Result<String, JsValue> {
        let result = string_arg(&result_json, "resultJson")?;
        self.inner
            .borrow_mut()
            .initialized(&result)
            .map(|open| json(&open))
            .map_err(failed)
    }

    /// A `session/update`'s params (JSON text), in wire order: JSON text of `SessionRouted`.
    /// Unreadable params throw an `Error` ("unreadable session/update: …") and change nothing.
    pub fn update(
        &mut self,
        #[wasm_bindgen(js_name = paramsJson, unchecked_param_type = "string")] params_json: JsValue,
    ) -> Result<String, JsValue> {
        let params = string_arg(&params_json, "paramsJson")?;
        self.inner
            .borrow_mut()
            .update(&params)
            .map(|r| json(&r))
            .map_err(|e| error(&e.to_string()))
    }

    /// The open request was answered (its result's JSON text; `null` for an empty one): JSON
    /// text of `SessionOpened`. For a `session/load` this ends the replay: feed it at its place
    /// in wire order (`AcpConnection.pollEventsFor` stops after each response for that).
    pub fn opened(
        &mut self,
        #[wasm_bindgen(js_name = resultJson, unchecked_param_type = "string")] result_json: JsValue,
    ) -> Result<String, JsValue> {
        let result = string_arg(&result_json, "resultJson")?;
        self.inner
            .borrow_mut()
            .opened(&result)
            .map(|o| json(&o))
            .map_err(failed)
    }

    /// The open request failed with this JSON-RPC error: JSON text of `SessionAfterFailure`.
    #[wasm_bindgen(js_name = openFailed)]
    pub fn open_failed(
        &mut self,
        code: f64,
        #[wasm_bindgen(unchecked_param_type = "string")] message: JsValue,
    ) -> Result<String, JsValue> {
        if !(code.is_finite() && code.fract() == 0.0 && code.abs() < 9.0e15) {
            return Err(type_error("code must be an integer"));
        }
        let message = string_arg(&message, "message")?;
        Ok(json(
            &self.inner.borrow_mut().open_failed(code as i64, &message),
        ))
    }

    /// The agent's process or connection ended at `nowMs` (any fixed origin) because of `why`
    /// (one line: its exit, the connection's close): JSON text of `SessionAfterEnd`.
    #[wasm_bindgen(js_name = agentEnded)]
    pub fn agent_ended(
        &mut self,
        #[wasm_bindgen(js_name = nowMs)] now_ms: f64,
        #[wasm_bindgen(unchecked_param_type = "string")] why: JsValue,
    ) -> Result<String, JsValue> {
        let now = millis(now_ms, "nowMs")?;
        let why = string_arg(&why, "why")?;
        Ok(json(
            &self
                .inner
                .borrow_mut()
                .agent_ended(Duration::from_millis(now), &why),
        ))
    }

    /// ACP v2 (feature `unstable_protocol_v2`, the `client-v2` test build only): the
    /// `session/prompt` answer (its JSON text) of the turn begun on `thread()`: the turn's stop
    /// reason when it is over (v1: always; v2: only if its idle `state_update` came already,
    /// the answer otherwise only acknowledging the prompt), else `undefined`. Throws an `Error`
    /// when a v1 answer is unreadable.
    #[cfg(feature = "unstable_protocol_v2")]
    #[wasm_bindgen(js_name = promptAnswered)]
    pub fn prompt_answered(
        &mut self,
        #[wasm_bindgen(js_name = resultJson, unchecked_param_type = "string")] result_json: JsValue,
    ) -> Result<Option<String>, JsValue> {
        let result = string_arg(&result_json, "resultJson")?;
        self.inner
            .borrow_mut()
            .prompt_answered(&result)
            .map_err(|e| error(&e.to_string()))
    }

    /// ACP v2 (the `client-v2` test build only): the stop reason of the last turn once its idle
    /// `state_update` ended it, `undefined` while it runs.
    #[cfg(feature = "unstable_protocol_v2")]
    #[wasm_bindgen(getter = turnEnded)]
    pub fn turn_ended(&self) -> Option<String> {
        self.inner.borrow().turn_ended()
    }

    /// The session's id, once known (or being reopened).
    #[wasm_bindgen(getter = sessionId)]
    pub fn session_id(&self) -> Option<String> {
        self.inner.borrow().session_id().map(str::to_string)
    }

    /// Whether the session is open (prompts can be sent).
    #[wasm_bindgen(getter = isOpen)]
    pub fn is_open(&self) -> bool {
        self.inner.borrow().is_open()
    }

    /// The title a list of sessions shows (acp-client's `list_title`: the agent's title, else
    /// the first prompt's first line, escaped, at most 80 characters; "(no prompt yet)").
    #[wasm_bindgen(getter)]
    pub fn title(&self) -> String {
        self.inner.borrow().title()
    }

    /// The session's conversation: a `Thread` sharing it (the session folds the agent's
    /// updates into it; turns and notices go to it; draw from its `takeDelta()`). Free it when
    /// done with it; the session keeps the conversation.
    pub fn thread(&self) -> Thread {
        Thread::of(self.inner.clone())
    }
}

#[wasm_bindgen]
impl AcpConnection {
    /// `pollEvents()` for a client whose session is `session`: every `session/update`
    /// notification is handed to `session` inside wasm, with the params the engine holds (no
    /// JSON crosses into JS; draw from `session.takeDelta()`), and the other events come back
    /// as `pollEvents()` gives them. To keep wire order across the open request's answer,
    /// which changes how the updates after it are taken, it stops after the first response
    /// (or failed request): call it again until it returns `[]`. An update the session cannot
    /// read comes back as its "notification" event.
    #[wasm_bindgen(js_name = pollEventsFor, unchecked_return_type = "AcpEvent[]")]
    pub fn poll_events_for(&mut self, session: &mut Session) -> Result<JsValue, JsValue> {
        let mut session = session.inner.borrow_mut();
        // The events JS gets, written as one JSON array (as `pollEvents` does).
        let mut text: Vec<u8> = Vec::new();
        while let Some(event) = self.inner.poll_event() {
            if let Event::Notification {
                method,
                params: Some(params),
            } = &event
            {
                if method == "session/update" && session.fold_update(params.get()).is_ok() {
                    continue;
                }
            }
            text.push(if text.is_empty() { b'[' } else { b',' });
            text.reserve(event.json_len_hint() + 1);
            event.write_json(&mut text);
            if matches!(event, Event::Response { .. }) {
                break;
            }
        }
        if text.is_empty() {
            return Ok(js_sys::Array::new().into());
        }
        text.push(b']');
        // Written from `str`s and raw JSON the engine checked: UTF-8.
        js_sys::JSON::parse(&String::from_utf8_lossy(&text))
    }
}

#[cfg(test)]
mod tests {
    //! The TypeScript above is written by hand: it names every tag serde writes for the
    //! session's types (the matches are exhaustive, so a new variant in acp-client fails to
    //! compile here until it is typed).
    use super::TS_TYPES;
    use acp_client::session::{AfterEnd, AfterFailure, Memory, Open, Routed};
    use acp_client::thread::Applied;
    use std::time::Duration;

    fn tag(v: &impl serde::Serialize, key: &str) -> String {
        let v = serde_json::to_value(v).unwrap();
        match key {
            "" => v.as_str().unwrap().to_string(),
            k => v[k].as_str().unwrap().to_string(),
        }
    }

    fn in_ts(name: &str) {
        assert!(
            TS_TYPES.contains(&format!("\"{name}\"")),
            "{name:?} is missing from the TypeScript types in session_engine.rs"
        );
    }

    #[test]
    fn every_tag_is_typed() {
        let id = || "s".to_string();
        for open in [
            Open::New,
            Open::Resume { session_id: id() },
            Open::Load { session_id: id() },
            Open::Replay { session_id: id() },
        ] {
            match open {
                Open::New | Open::Resume { .. } | Open::Load { .. } | Open::Replay { .. } => {
                    in_ts(&tag(&open, "send"))
                }
            }
        }
        let routed = [
            Routed::Shown {
                applied: Applied::Plan,
            },
            Routed::Folded,
            Routed::Held,
            Routed::Ignored,
        ];
        for r in &routed {
            match r {
                Routed::Shown { .. } | Routed::Folded | Routed::Held | Routed::Ignored => {
                    in_ts(&tag(r, "routed"))
                }
            }
        }
        for m in [
            Memory::Fresh,
            Memory::Resumed,
            Memory::Replayed,
            Memory::Lost,
        ] {
            match m {
                Memory::Fresh | Memory::Resumed | Memory::Replayed | Memory::Lost => {
                    in_ts(&tag(&m, ""))
                }
            }
        }
        let failures = [
            AfterFailure::Retry {
                open: Open::New,
                notices: vec![],
            },
            AfterFailure::Fail {
                message: String::new(),
            },
        ];
        for f in &failures {
            match f {
                AfterFailure::Retry { .. } | AfterFailure::Fail { .. } => in_ts(&tag(f, "next")),
            }
        }
        let ends = [
            AfterEnd::Restart {
                after: Duration::ZERO,
                notices: vec![],
            },
            AfterEnd::GiveUp { notices: vec![] },
        ];
        for e in &ends {
            match e {
                AfterEnd::Restart { .. } | AfterEnd::GiveUp { .. } => in_ts(&tag(e, "next")),
            }
        }
    }
}
