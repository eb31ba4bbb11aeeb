//! ACP v2 (draft), feature `unstable_protocol_v2`: what the engine knows of the second major
//! protocol version, without the typed schema.
//!
//! A connection speaks v1 until `initialize` settles on v2, which happens only when both sides
//! offer it: the client asks for `protocolVersion: 2` (or more) and the agent answers `2`
//! ([`negotiate`]). A v1 peer keeps the connection on v1 with every v1 rule. Once v2 is
//! negotiated ([`Connection::protocol_version`](crate::Connection::protocol_version)), the
//! connection holds both sides to v2's rules:
//!
//! - the methods v2 removed ([`REMOVED_METHODS`]: `authenticate`, `logout`, `session/load`,
//!   `session/set_mode`, the client's `fs/*` and `terminal/*`) are refused: a local call fails
//!   with [`Error::ProtocolVersionRule`](crate::Error::ProtocolVersionRule), a peer's request
//!   is answered -32601;
//! - every `session/update` is checked by [`check_update`]: the kinds v2 removed
//!   ([`REMOVED_UPDATES`]) are refused, each upsert and chunk must carry its key
//!   ([`update_key`]: `messageId`, `toolCallId`, `terminalId`, `plan.planId`, …), and open
//!   enums (the update kind, `state`, `stopReason`) take unknown values only when they start
//!   with `_` (custom) on the sending side; a receiver accepts the unknown values v2 reserves
//!   for future variants. An agent's bad update fails locally; a bad update received by a
//!   client is reported and dropped;
//! - the turn ends with an idle `state_update`, not with the `session/prompt` response (which
//!   only acknowledges the prompt): a client's [`TurnState`](crate::TurnState) stays
//!   `Prompting` (or `Cancelling`) until that update, and other states (`running`,
//!   `requires_action`, custom ones) make an idle session busy;
//! - replay order: a `session/resume` with `replayFrom` must see the session's
//!   `replay_complete` update before its answer. An agent's answer before it is refused; a
//!   client reports an answer without it (the replay was truncated), and a `replay_complete`
//!   nobody asked for is refused (agent) or reported and dropped (client).
//! - per-item cancellation ([`cancel`]): `tool_call/cancel` and `terminal/cancel` are the
//!   client's requests, only for a tool call or terminal that advertises
//!   `capabilities.cancel` now (a client's other call fails locally, the agent answers
//!   -32602);
//! - capabilities: v2's own rules ([`capabilities`]: method surfaces, prompt content, MCP
//!   transports, elicitation modes, terminal auth, idempotency keys, what is not batched).
//!   v1's capability rules (`acp::capabilities`, and the `unstable` drafts' rules) read v1's
//!   `clientCapabilities`/`agentCapabilities`; on a v2 connection they do not apply.

pub mod cancel;
pub mod capabilities;

use crate::acp::capabilities::{member, path};

/// The protocol version number of ACP v2.
pub const PROTOCOL_VERSION: u16 = 2;

/// Methods v2 added (sent by the client) that the engine names.
pub mod methods {
    /// `auth/login` (v1's `authenticate`). Never batched.
    pub const AUTH_LOGIN: &str = "auth/login";
    /// `auth/logout` (v1's `logout`).
    pub const AUTH_LOGOUT: &str = "auth/logout";
    /// `tool_call/cancel`: cancel one tool call.
    pub const TOOL_CALL_CANCEL: &str = "tool_call/cancel";
    /// `terminal/cancel`: cancel one agent-owned terminal's process.
    pub const TERMINAL_CANCEL: &str = "terminal/cancel";
}

/// v1 methods that do not exist in v2: refused on a v2 connection in both directions.
pub const REMOVED_METHODS: &[&str] = &[
    "authenticate",
    "logout",
    "session/load",
    "session/set_mode",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
];

/// What v2 has instead of a removed method (for the error messages).
fn replacement(method: &str) -> &'static str {
    match method {
        "authenticate" => "use auth/login",
        "logout" => "use auth/logout",
        "session/load" => "use session/resume with replayFrom",
        "session/set_mode" => "modes are config options: use session/set_config_option",
        _ => "v2 has no client file system or terminal methods",
    }
}

/// Why `method` is refused on a v2 connection, if it is one v2 removed.
pub fn removed_method(method: &str) -> Option<String> {
    REMOVED_METHODS.contains(&method).then(|| {
        format!(
            "{method} does not exist in ACP v2 ({})",
            replacement(method)
        )
    })
}

/// v1 `session/update` kinds that do not exist in v2.
pub const REMOVED_UPDATES: &[&str] = &["tool_call", "plan", "current_mode_update"];

/// The `session/update` kind that reports the session's foreground state.
pub const STATE_UPDATE: &str = "state_update";
/// The `session/update` kind that ends a `session/resume` replay.
pub const REPLAY_COMPLETE: &str = "replay_complete";

/// The standard values of `state` in a `state_update`.
pub const STATES: &[&str] = &["running", "idle", "requires_action", "unknown"];
/// The standard stop reasons of an idle `state_update` (`error` carries an optional JSON-RPC
/// `error` object beside it).
pub const STOP_REASONS: &[&str] = &[
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
    "error",
];

/// Every `session/update` kind v2 defines (schema 1.20.0, with its draft kinds), each with the
/// path of the key it is upserted or appended by (`None`: replaced whole, or no state).
const UPDATES: &[(&str, Option<&[&str]>)] = &[
    ("user_message_chunk", Some(&["messageId"])),
    ("user_message", Some(&["messageId"])),
    ("agent_message_chunk", Some(&["messageId"])),
    ("agent_message", Some(&["messageId"])),
    ("agent_thought_chunk", Some(&["messageId"])),
    ("agent_thought", Some(&["messageId"])),
    ("state_update", None),
    ("tool_call_content_chunk", Some(&["toolCallId"])),
    ("tool_call_update", Some(&["toolCallId"])),
    ("terminal_update", Some(&["terminalId"])),
    ("terminal_output_chunk", Some(&["terminalId"])),
    ("plan_update", Some(&["plan", "planId"])),
    ("plan_removed", Some(&["planId"])),
    ("available_commands_update", None),
    ("config_option_update", None),
    ("session_info_update", None),
    ("usage_update", None),
    ("notice", None),
    ("compaction_update", Some(&["compactionId"])),
    ("compaction_summary_chunk", Some(&["compactionId"])),
    ("replay_complete", None),
    ("prompt_suggestions_update", None),
    ("cursor_update", Some(&["cursorId"])),
    ("subagent_update", Some(&["sessionId"])),
    ("session_message", Some(&["messageId"])),
    ("session_message_chunk", Some(&["messageId"])),
];

/// The key a v2 update kind is upserted (or appended) by, as a path in the update object
/// (`["messageId"]`, `["plan", "planId"]`, …); `None` for kinds replaced whole, without state,
/// or unknown.
pub fn update_key(kind: &str) -> Option<&'static [&'static str]> {
    UPDATES
        .iter()
        .find(|(k, _)| *k == kind)
        .and_then(|(_, p)| *p)
}

/// Whether v2 defines this update kind.
pub fn is_known_update(kind: &str) -> bool {
    UPDATES.iter().any(|(k, _)| *k == kind)
}

/// A custom value of an open enum: it starts with `_`. Unknown values without it are
/// reserved for future ACP versions.
pub fn is_custom(value: &str) -> bool {
    value.starts_with('_')
}

/// The version an agent answers `initialize` with: v2 when the client asked for 2 or more
/// and the agent speaks v2, else v1 (v1's rule: the client's version if supported, else the
/// agent's latest).
///
/// ```
/// use acp_core::v2::negotiate;
/// assert_eq!(negotiate(2, true), 2);
/// assert_eq!(negotiate(2, false), 1);
/// assert_eq!(negotiate(1, true), 1);
/// assert_eq!(negotiate(7, true), 2);
/// ```
pub fn negotiate(requested: u16, agent_speaks_v2: bool) -> u16 {
    if agent_speaks_v2 && requested >= PROTOCOL_VERSION {
        PROTOCOL_VERSION
    } else {
        crate::acp::negotiate_protocol_version(requested)
    }
}

/// What the engine reads of one v2 `session/update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The session it belongs to.
    pub session_id: String,
    /// Its `sessionUpdate` kind.
    pub kind: String,
    /// For a `state_update`: its `state`.
    pub state: Option<String>,
}

/// Reads a v2 `session/update`'s params (JSON text) and checks them against v2's rules: a
/// `sessionId` and an `update` object with a string `sessionUpdate`; not a kind v2 removed;
/// the kind's key present as a string ([`update_key`]); a `state_update`'s `state` a string,
/// an idle one's `stopReason` a string when present. `sending` (our own update) also refuses
/// unknown kinds, states and stop reasons that do not start with `_`: those are reserved for
/// future versions, which a receiver accepts.
///
/// # Errors
///
/// Why the update breaks a rule, in words for a log or an error message.
pub fn check_update(params: &str, sending: bool) -> Result<Update, String> {
    let session_id = member(params, "sessionId")
        .and_then(string)
        .ok_or("session/update needs a string sessionId")?;
    let update = member(params, "update")
        .filter(|u| u.get().starts_with('{'))
        .ok_or("session/update needs an update object")?
        .get();
    let kind = member(update, "sessionUpdate")
        .and_then(string)
        .ok_or("session/update needs a string sessionUpdate")?;
    if REMOVED_UPDATES.contains(&kind.as_str()) {
        let instead = match kind.as_str() {
            "tool_call" => "the first tool_call_update creates a tool call",
            "plan" => "plans are plan_update with a planId",
            _ => "modes are config options: config_option_update",
        };
        return Err(format!(
            "session update {kind} does not exist in ACP v2 ({instead})"
        ));
    }
    if !is_known_update(&kind) {
        if sending && !is_custom(&kind) {
            return Err(format!(
                "session update {kind} is reserved for future ACP versions (custom kinds start with `_`)"
            ));
        }
        return Ok(Update {
            session_id,
            kind,
            state: None,
        });
    }
    if let Some(key) = update_key(&kind) {
        if path(update, key).and_then(string).is_none() {
            return Err(format!(
                "session update {kind} needs its key {} (a string)",
                key.join(".")
            ));
        }
    }
    let mut state = None;
    if kind == STATE_UPDATE {
        let s = member(update, "state")
            .and_then(string)
            .ok_or("state_update needs a string state")?;
        if sending && !STATES.contains(&s.as_str()) && !is_custom(&s) {
            return Err(format!(
                "state {s} is reserved for future ACP versions (custom states start with `_`)"
            ));
        }
        if s == "idle" {
            match member(update, "stopReason") {
                None => {}
                Some(v) if v.get() == "null" => {}
                Some(v) => {
                    let reason = string(v).ok_or("an idle state's stopReason must be a string")?;
                    if sending && !STOP_REASONS.contains(&reason.as_str()) && !is_custom(&reason) {
                        return Err(format!(
                            "stop reason {reason} is reserved for future ACP versions (custom stop reasons start with `_`)"
                        ));
                    }
                }
            }
        }
        state = Some(s);
    }
    Ok(Update {
        session_id,
        kind,
        state,
    })
}

/// Whether a `session/resume`'s params (JSON text) ask for a replay: `replayFrom` present and
/// not `null`.
pub fn asks_replay(params: &str) -> bool {
    member(params, "replayFrom").is_some_and(|v| v.get() != "null")
}

/// A string member's value, unescaped.
fn string(v: &serde_json::value::RawValue) -> Option<String> {
    serde_json::from_str(v.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upd(update: &str) -> String {
        format!(r#"{{"sessionId":"s","update":{update}}}"#)
    }

    #[test]
    fn keyed_upserts_need_their_key() {
        for (kind, key) in [
            ("agent_message_chunk", "messageId"),
            ("user_message", "messageId"),
            ("tool_call_update", "toolCallId"),
            ("terminal_output_chunk", "terminalId"),
            ("plan_removed", "planId"),
        ] {
            let ok = upd(&format!(r#"{{"sessionUpdate":"{kind}","{key}":"k"}}"#));
            assert!(check_update(&ok, true).is_ok(), "{kind}");
            let missing = upd(&format!(r#"{{"sessionUpdate":"{kind}"}}"#));
            let err = check_update(&missing, false).unwrap_err();
            assert!(err.contains(key), "{err}");
            let not_string = upd(&format!(r#"{{"sessionUpdate":"{kind}","{key}":7}}"#));
            assert!(check_update(&not_string, false).is_err(), "{kind}");
        }
        let plan = upd(
            r#"{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p","items":[]}}"#,
        );
        assert!(check_update(&plan, true).is_ok());
        let plan = upd(r#"{"sessionUpdate":"plan_update","plan":{"type":"items","items":[]}}"#);
        assert_eq!(
            check_update(&plan, true).unwrap_err(),
            "session update plan_update needs its key plan.planId (a string)"
        );
    }

    #[test]
    fn open_enums_take_custom_values_and_receivers_take_reserved_ones() {
        let custom = upd(r#"{"sessionUpdate":"_mine","x":1}"#);
        assert_eq!(check_update(&custom, true).unwrap().kind, "_mine");
        let future = upd(r#"{"sessionUpdate":"hologram"}"#);
        assert!(check_update(&future, true).is_err());
        assert_eq!(check_update(&future, false).unwrap().kind, "hologram");
        let state = upd(r#"{"sessionUpdate":"state_update","state":"_waiting"}"#);
        assert_eq!(
            check_update(&state, true).unwrap().state.as_deref(),
            Some("_waiting")
        );
        let state = upd(r#"{"sessionUpdate":"state_update","state":"paused"}"#);
        assert!(check_update(&state, true).is_err());
        assert!(check_update(&state, false).is_ok());
        let reason = upd(r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"tired"}"#);
        assert!(check_update(&reason, true).is_err());
        assert!(check_update(&reason, false).is_ok());
        let reason = upd(r#"{"sessionUpdate":"state_update","state":"idle","stopReason":5}"#);
        assert!(check_update(&reason, false).is_err());
        let reason = upd(r#"{"sessionUpdate":"state_update","state":"idle","stopReason":null}"#);
        assert!(check_update(&reason, true).is_ok());
    }

    #[test]
    fn removed_kinds_and_methods_are_named() {
        for kind in REMOVED_UPDATES {
            let u = upd(&format!(r#"{{"sessionUpdate":"{kind}","toolCallId":"t"}}"#));
            let err = check_update(&u, false).unwrap_err();
            assert!(err.contains("does not exist in ACP v2"), "{err}");
        }
        assert_eq!(
            removed_method("session/load").unwrap(),
            "session/load does not exist in ACP v2 (use session/resume with replayFrom)"
        );
        assert!(removed_method("session/prompt").is_none());
    }

    #[test]
    fn malformed_params_are_refused() {
        for bad in [
            "[]",
            r#"{"update":{"sessionUpdate":"notice"}}"#,
            r#"{"sessionId":"s"}"#,
            r#"{"sessionId":"s","update":[]}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":3}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"state_update"}}"#,
        ] {
            assert!(check_update(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn replay_is_asked_by_a_non_null_replay_from() {
        assert!(asks_replay(
            r#"{"sessionId":"s","replayFrom":{"type":"start"}}"#
        ));
        assert!(!asks_replay(r#"{"sessionId":"s","replayFrom":null}"#));
        assert!(!asks_replay(r#"{"sessionId":"s"}"#));
    }
}
