//! ACP v2's per-tool-call and per-terminal cancellation (feature `unstable_protocol_v2`):
//! `tool_call/cancel` and `terminal/cancel`.
//!
//! What the draft (schema 1.20.0, `CancelToolCallRequest`, `CancelTerminalRequest`) says, and
//! what the engine holds both sides to:
//!
//! - both are **requests from the client to the agent** (the agent answers once it accepted the
//!   cancellation; the work's end comes later as a `tool_call_update` to a final status or a
//!   `terminal_update` with `exitStatus`). An agent does not send them; a notification of
//!   them is not a cancellation ([`misuse`]);
//! - they belong to the `session` surface (the agent capability `session`,
//!   [`super::capabilities::required_agent_capability`]);
//! - a client MUST NOT send one unless the tool call (terminal) **currently advertises
//!   `capabilities.cancel`**, and the agent answers -32602 when the id is unknown, already
//!   final, or not cancellable. Both sides see every `session/update` of the connection, so
//!   both keep the same table of what is cancellable now ([`Cancellable`]): a
//!   `tool_call_update`/`terminal_update` whose `capabilities` is an object with a `cancel`
//!   object makes its id cancellable, `capabilities` `null` or without `cancel` makes it not
//!   (omitted: unchanged, as the patch rules say), and a final status (`completed`, `failed`,
//!   `cancelled`) or an `exitStatus` object ends it (the draft asks agents to stop advertising
//!   then; the engine does not wait for that).
//!
//! Memory: the table holds at most [`MAX_CANCELLABLE`] ids and [`MAX_CANCELLABLE_BYTES`] of
//! ids and session ids. Past either, the oldest entries are forgotten and the table stops
//! refusing ids it does not hold (it can no longer tell an id it forgot from one never
//! advertised), so a peer that advertises too much costs a bounded table and no false
//! refusals.

use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::methods::{TERMINAL_CANCEL, TOOL_CALL_CANCEL};

/// Most ids the table keeps.
pub const MAX_CANCELLABLE: usize = 1024;
/// Most bytes of ids and session ids the table keeps.
pub const MAX_CANCELLABLE_BYTES: usize = 256 * 1024;

/// Tool call statuses after which a tool call is no longer cancellable.
const FINAL_STATUSES: &[&str] = &["completed", "failed", "cancelled"];

/// Whether `method` is one of v2's per-item cancellations.
pub fn is_cancel_method(method: &str) -> bool {
    method == TOOL_CALL_CANCEL || method == TERMINAL_CANCEL
}

/// Why sending `method` this way breaks v2's rules: an agent sending a cancellation (it is
/// the client's), or a cancellation sent as a notification (it is a request). `None` for
/// other methods and for a client's request.
pub fn misuse(method: &str, from_agent: bool, is_request: bool) -> Option<String> {
    if !is_cancel_method(method) {
        return None;
    }
    if from_agent {
        return Some(format!(
            "{method} is sent by the client to the agent, never by the agent"
        ));
    }
    (!is_request)
        .then(|| format!("{method} is a request (the agent answers it), not a notification"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    ToolCall,
    Terminal,
}

impl Item {
    fn of_method(method: &str) -> Option<Item> {
        match method {
            TOOL_CALL_CANCEL => Some(Item::ToolCall),
            TERMINAL_CANCEL => Some(Item::Terminal),
            _ => None,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Item::ToolCall => "tool call",
            Item::Terminal => "terminal",
        }
    }
}

#[derive(Debug)]
struct Entry {
    item: Item,
    session: String,
    id: String,
}

/// Why a cancellation is refused ([`Cancellable::check`]), in words for a log or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its params lack a string `sessionId` or the item's id.
    Malformed(String),
    /// The item is unknown, final or does not advertise `capabilities.cancel`.
    NotCancellable(String),
}

impl Refusal {
    /// The words.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Malformed(m) | Refusal::NotCancellable(m) => m,
        }
    }
}

/// What is cancellable now on one connection: see the module docs.
#[derive(Debug, Default)]
pub struct Cancellable {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// Entries were forgotten for room: unknown ids are no longer refused.
    overflowed: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    session_id: String,
    #[serde(borrow)]
    update: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemUpdate<'a> {
    session_update: &'a str,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    terminal_id: Option<String>,
    /// Present (`null` included) or absent.
    #[serde(default, borrow, deserialize_with = "present")]
    capabilities: Option<&'a RawValue>,
    #[serde(default, borrow)]
    status: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    exit_status: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelParams {
    session_id: String,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    terminal_id: Option<String>,
}

/// `capabilities` (present) advertises cancellation: an object whose `cancel` is an object.
fn advertises_cancel(capabilities: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Caps<'a> {
        #[serde(default, borrow)]
        cancel: Option<&'a RawValue>,
    }
    serde_json::from_str::<Caps<'_>>(capabilities.get())
        .ok()
        .and_then(|c| c.cancel)
        .is_some_and(|c| c.get().starts_with('{'))
}

impl Cancellable {
    /// How many ids the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table holds no id.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes in one v2 `session/update`'s params (JSON text, already checked): a
    /// `tool_call_update` or `terminal_update` may make its id cancellable or end that.
    pub fn observe(&mut self, params: &str) {
        let Ok(p) = serde_json::from_str::<UpdateParams<'_>>(params) else {
            return;
        };
        let Ok(u) = serde_json::from_str::<ItemUpdate<'_>>(p.update.get()) else {
            return;
        };
        let (item, id, ended) = match u.session_update {
            "tool_call_update" => {
                let ended = u
                    .status
                    .and_then(|s| serde_json::from_str::<&str>(s.get()).ok())
                    .is_some_and(|s| FINAL_STATUSES.contains(&s));
                (Item::ToolCall, u.tool_call_id, ended)
            }
            "terminal_update" => {
                let ended = u.exit_status.is_some_and(|e| e.get().starts_with('{'));
                (Item::Terminal, u.terminal_id, ended)
            }
            _ => return,
        };
        let Some(id) = id else { return };
        let held = self.position(item, &p.session_id, &id);
        let advertised = match u.capabilities {
            None => held.is_some(),
            Some(c) => advertises_cancel(c),
        };
        match (held, advertised && !ended) {
            (Some(i), false) => {
                let e = self.entries.remove(i).expect("held");
                self.bytes -= e.session.len() + e.id.len();
            }
            (None, true) => self.insert(Entry {
                item,
                session: p.session_id,
                id,
            }),
            _ => {}
        }
    }

    /// Whether a cancellation request (`method`, its params as JSON text) names an item that
    /// advertises `capabilities.cancel` now.
    ///
    /// # Errors
    ///
    /// Why it may not be sent (or is answered -32602): params without a string `sessionId`
    /// and the item's id ([`Refusal::Malformed`]), or an item that is unknown, final or not
    /// cancellable ([`Refusal::NotCancellable`]).
    pub fn check(&self, method: &str, params: &str) -> Result<(), Refusal> {
        let Some(item) = Item::of_method(method) else {
            return Ok(());
        };
        let key = match item {
            Item::ToolCall => "toolCallId",
            Item::Terminal => "terminalId",
        };
        let malformed =
            || Refusal::Malformed(format!("{method} needs a string sessionId and {key}"));
        let p: CancelParams = serde_json::from_str(params).map_err(|_| malformed())?;
        let id = match item {
            Item::ToolCall => p.tool_call_id,
            Item::Terminal => p.terminal_id,
        }
        .ok_or_else(malformed)?;
        if self.overflowed || self.position(item, &p.session_id, &id).is_some() {
            return Ok(());
        }
        Err(Refusal::NotCancellable(format!(
            "{} {id} of session {} does not advertise capabilities.cancel (unknown, final or not cancellable)",
            item.words(),
            p.session_id
        )))
    }

    /// Forgets the items of a session that was closed or deleted.
    pub fn forget_session(&mut self, session: &str) {
        let mut bytes = self.bytes;
        self.entries.retain(|e| {
            let keep = e.session != session;
            if !keep {
                bytes -= e.session.len() + e.id.len();
            }
            keep
        });
        self.bytes = bytes;
    }

    fn position(&self, item: Item, session: &str, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.item == item && e.id == id && e.session == session)
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry.session.len() + entry.id.len();
        while !self.entries.is_empty()
            && (self.entries.len() >= MAX_CANCELLABLE || self.bytes + size > MAX_CANCELLABLE_BYTES)
        {
            let old = self.entries.pop_front().expect("not empty");
            self.bytes -= old.session.len() + old.id.len();
            self.overflowed = true;
        }
        if size > MAX_CANCELLABLE_BYTES {
            self.overflowed = true;
            return;
        }
        self.bytes += size;
        self.entries.push_back(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upd(update: &str) -> String {
        format!(r#"{{"sessionId":"s","update":{update}}}"#)
    }

    const CANCEL_T: &str = r#"{"sessionId":"s","toolCallId":"t"}"#;

    #[test]
    fn a_tool_call_is_cancellable_while_it_advertises_cancel_and_is_not_final() {
        let mut c = Cancellable::default();
        assert!(c.check(TOOL_CALL_CANCEL, CANCEL_T).is_err(), "unknown");
        c.observe(&upd(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"pending"}"#,
        ));
        assert!(
            c.check(TOOL_CALL_CANCEL, CANCEL_T).is_err(),
            "not advertised"
        );
        c.observe(&upd(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","capabilities":{"cancel":{}}}"#,
        ));
        assert_eq!(c.check(TOOL_CALL_CANCEL, CANCEL_T), Ok(()));
        // Another session's, or a terminal, of the same id: not this one.
        assert!(c
            .check(TOOL_CALL_CANCEL, r#"{"sessionId":"o","toolCallId":"t"}"#)
            .is_err());
        assert!(c
            .check(TERMINAL_CANCEL, r#"{"sessionId":"s","terminalId":"t"}"#)
            .is_err());
        // Omitted capabilities leave it; a running status keeps it.
        c.observe(&upd(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress"}"#,
        ));
        assert_eq!(c.check(TOOL_CALL_CANCEL, CANCEL_T), Ok(()));
        c.observe(&upd(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}"#,
        ));
        assert_eq!(
            c.check(TOOL_CALL_CANCEL, CANCEL_T).unwrap_err().message(),
            "tool call t of session s does not advertise capabilities.cancel (unknown, final or not cancellable)"
        );
        assert!(c.is_empty());
        // null, {} and a malformed cancel clear it.
        for caps in ["null", "{}", r#"{"cancel":null}"#, r#"{"cancel":true}"#] {
            c.observe(&upd(
                r#"{"sessionUpdate":"tool_call_update","toolCallId":"u","capabilities":{"cancel":{}}}"#,
            ));
            assert_eq!(c.len(), 1);
            c.observe(&upd(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"u","capabilities":{caps}}}"#
            )));
            assert!(c.is_empty(), "{caps}");
        }
    }

    #[test]
    fn a_terminal_is_cancellable_until_it_exits() {
        let mut c = Cancellable::default();
        let cancel = r#"{"sessionId":"s","terminalId":"x"}"#;
        c.observe(&upd(
            r#"{"sessionUpdate":"terminal_update","terminalId":"x","command":"make","capabilities":{"cancel":{}}}"#,
        ));
        assert_eq!(c.check(TERMINAL_CANCEL, cancel), Ok(()));
        c.observe(&upd(
            r#"{"sessionUpdate":"terminal_update","terminalId":"x","exitStatus":null}"#,
        ));
        assert_eq!(c.check(TERMINAL_CANCEL, cancel), Ok(()), "null: not exited");
        c.observe(&upd(
            r#"{"sessionUpdate":"terminal_update","terminalId":"x","exitStatus":{"exitCode":0}}"#,
        ));
        assert!(c.check(TERMINAL_CANCEL, cancel).is_err());
        c.observe(&upd(
            r#"{"sessionUpdate":"terminal_update","terminalId":"y","capabilities":{"cancel":{}}}"#,
        ));
        c.forget_session("s");
        assert!(c.is_empty());
    }

    #[test]
    fn malformed_cancellations_are_named() {
        let c = Cancellable::default();
        for params in [
            "[]",
            r#"{"sessionId":"s"}"#,
            r#"{"toolCallId":"t"}"#,
            r#"{"sessionId":"s","toolCallId":7}"#,
        ] {
            assert_eq!(
                c.check(TOOL_CALL_CANCEL, params).unwrap_err(),
                Refusal::Malformed(
                    "tool_call/cancel needs a string sessionId and toolCallId".into()
                ),
                "{params}"
            );
        }
        assert_eq!(c.check("session/cancel", "[]"), Ok(()));
    }

    #[test]
    fn only_a_client_sends_them_and_only_as_requests() {
        assert_eq!(misuse(TOOL_CALL_CANCEL, false, true), None);
        assert_eq!(
            misuse(TERMINAL_CANCEL, true, true).unwrap(),
            "terminal/cancel is sent by the client to the agent, never by the agent"
        );
        assert_eq!(
            misuse(TOOL_CALL_CANCEL, false, false).unwrap(),
            "tool_call/cancel is a request (the agent answers it), not a notification"
        );
        assert_eq!(misuse("session/cancel", true, false), None);
    }

    #[test]
    fn the_table_is_bounded_and_stops_refusing_once_it_forgot() {
        let mut c = Cancellable::default();
        for i in 0..=MAX_CANCELLABLE {
            c.observe(&upd(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{i}","capabilities":{{"cancel":{{}}}}}}"#
            )));
        }
        assert_eq!(c.len(), MAX_CANCELLABLE);
        // t0 was forgotten: it, and ids never seen, are no longer refused.
        assert_eq!(
            c.check(TOOL_CALL_CANCEL, r#"{"sessionId":"s","toolCallId":"t0"}"#),
            Ok(())
        );
        let mut c = Cancellable::default();
        let long = "k".repeat(MAX_CANCELLABLE_BYTES / 4);
        for i in 0..8 {
            c.observe(&upd(&format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{long}{i}","capabilities":{{"cancel":{{}}}}}}"#
            )));
            assert!(c.bytes <= MAX_CANCELLABLE_BYTES);
        }
        assert!(c.len() < 4 && c.overflowed);
    }
}
