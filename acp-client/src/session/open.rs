//! Which request opens a session: from what the user asked, what the agent's `initialize`
//! answer says it can do, and whether a conversation is on screen already.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Intent;
use crate::thread::{Mode, RawJson};

/// What `initialize`'s answer says that opening a session depends on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFacts {
    /// The agent in words: its `agentInfo` title (or name) and version, escaped; "the agent"
    /// without one.
    pub name: String,
    /// `agentCapabilities.loadSession`.
    pub load: bool,
    /// `agentCapabilities.sessionCapabilities.resume` is advertised.
    pub resume: bool,
}

impl AgentFacts {
    /// Reads them from `initialize`'s result (JSON text); fields it lacks count as not offered.
    /// (Read through a `serde_json::Value`, which every face links already: derived readers of
    /// these few fields cost the wasm client flavour several KB, docs/wasm.md.)
    pub fn read(result: &str) -> Result<AgentFacts, String> {
        let bad = |why: &str| format!("unreadable initialize answer: {why}");
        let init: Value = serde_json::from_str(result).map_err(|e| bad(&e.to_string()))?;
        if !init.is_object() {
            return Err(bad("not an object"));
        }
        #[cfg(feature = "unstable_protocol_v2")]
        if init.get("protocolVersion").and_then(Value::as_u64) == Some(2) {
            return read_v2(&init);
        }
        let caps = object(&init, "agentCapabilities").map_err(|e| bad(&e))?;
        let load = match caps.and_then(|c| c.get("loadSession")) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("loadSession is not a boolean")),
        };
        let session_caps = match caps {
            Some(c) => object(c, "sessionCapabilities").map_err(|e| bad(&e))?,
            None => None,
        };
        let resume = session_caps
            .and_then(|s| s.get("resume"))
            .is_some_and(|r| !r.is_null());
        Ok(AgentFacts {
            name: agent_name(&init, "agentInfo")?,
            load,
            resume,
        })
    }
}

/// The agent in words from `init[key]` (v1's `agentInfo`, v2's `info`): title or name, and
/// version, escaped; "the agent" without one.
fn agent_name(init: &Value, key: &str) -> Result<String, String> {
    let bad = |why: &str| format!("unreadable initialize answer: {why}");
    let name = match object(init, key).map_err(|e| bad(&e))? {
        Some(info) => {
            let text = |field: &str| match info.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(&format!("{key}.{field} is not a string"))),
            };
            let (name, title, version) = (text("name")?, text("title")?, text("version")?);
            title
                .filter(|t| !t.trim().is_empty())
                .or(name)
                .map(|name| match version {
                    Some(v) if !v.is_empty() => format!("{name} {v}"),
                    _ => name,
                })
        }
        None => None,
    };
    Ok(name
        .map(|n| crate::display::escape_line(&n))
        .unwrap_or_else(|| "the agent".to_string()))
}

/// A v2 agent's facts: its `info`; `session/resume` (with a replay when asked) is part of
/// v2's baseline, so every v2 agent reopens sessions (as `load` and `resume` say for v1).
#[cfg(feature = "unstable_protocol_v2")]
fn read_v2(init: &Value) -> Result<AgentFacts, String> {
    object(init, "capabilities").map_err(|e| format!("unreadable initialize answer: {e}"))?;
    Ok(AgentFacts {
        name: agent_name(init, "info")?,
        load: true,
        resume: true,
    })
}

/// `v[key]` when it is an object; `None` when absent or `null`; another type is an error.
fn object<'a>(v: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(o @ Value::Object(_)) => Ok(Some(o)),
        Some(_) => Err(format!("{key} is not an object")),
    }
}

/// The request that opens the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "send", rename_all = "camelCase")]
pub enum Open {
    /// `session/new`.
    New,
    /// `session/resume` of that id (no replay).
    #[serde(rename_all = "camelCase")]
    Resume {
        /// The session id.
        session_id: String,
    },
    /// `session/load` of that id (the agent replays the conversation before it answers).
    #[serde(rename_all = "camelCase")]
    Load {
        /// The session id.
        session_id: String,
    },
    /// ACP v2 only (feature `unstable_protocol_v2`; never named on a v1 connection):
    /// `session/resume` of that id with `replayFrom: {"type": "start"}`, v2's merged load
    /// (the agent replays the conversation, sends `replay_complete`, then answers).
    #[serde(rename_all = "camelCase")]
    Replay {
        /// The session id.
        session_id: String,
    },
}

impl Open {
    /// The method sent.
    pub fn method(&self) -> &'static str {
        match self {
            Open::New => "session/new",
            Open::Resume { .. } => "session/resume",
            Open::Load { .. } => "session/load",
            Open::Replay { .. } => "session/resume",
        }
    }

    /// The session id it reopens (`None` for a new session).
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Open::New => None,
            Open::Resume { session_id }
            | Open::Load { session_id }
            | Open::Replay { session_id } => Some(session_id),
        }
    }
}

/// How a session is reopened by id (after a restart, or from a saved record): resumed when
/// the agent can and the conversation is held already (by the face, on screen or saved; no
/// replay), loaded when it can (its replay shows the conversation, or is folded into the one
/// held), `None` when it can do neither (the session is lost to the agent). acp-native's
/// `SupervisedAgent` re-attaches its sessions with it.
pub fn reopen(facts: &AgentFacts, id: &str, holds_conversation: bool) -> Option<Open> {
    let session_id = id.to_string();
    if facts.load && !holds_conversation {
        return Some(Open::Load { session_id });
    }
    if facts.resume {
        return Some(Open::Resume { session_id });
    }
    facts.load.then_some(Open::Load { session_id })
}

/// The first open of a session (`holds_conversation`: a saved conversation is on screen).
pub(super) fn first(
    facts: &AgentFacts,
    intent: &Intent,
    holds_conversation: bool,
) -> Result<Open, String> {
    match intent {
        Intent::New => Ok(Open::New),
        Intent::Continue {
            session_id, or_new, ..
        } => match reopen(facts, session_id, holds_conversation) {
            Some(open) => Ok(open),
            None if *or_new => Ok(Open::New),
            None => Err(
                "it can neither resume nor load sessions (no sessionCapabilities.resume, \
                 loadSession false)"
                    .into(),
            ),
        },
        Intent::Load { session_id } if facts.load => Ok(Open::Load {
            session_id: session_id.clone(),
        }),
        Intent::Load { .. } => {
            Err("it cannot load sessions (its `loadSession` capability is false)".into())
        }
    }
}

/// The open after a restart: the session on screen reopened if the agent can, else a new one.
pub(super) fn recover(facts: &AgentFacts, id: &str, holds_conversation: bool) -> Open {
    reopen(facts, id, holds_conversation).unwrap_or(Open::New)
}

/// What the answer to an open request says of the session.
#[derive(Default)]
pub(super) struct Answer {
    pub(super) session_id: Option<String>,
    pub(super) modes: Vec<Mode>,
    pub(super) current_mode: Option<String>,
    pub(super) config_options: Option<RawJson>,
}

impl Answer {
    pub(super) fn read(result: &str) -> Result<Answer, String> {
        let bad = |why: &str| format!("unreadable answer: {why}");
        // Agents answer `null` for an empty result (`session/resume`, `session/load`).
        let r: Value = serde_json::from_str(result).map_err(|e| bad(&e.to_string()))?;
        if r.is_null() {
            return Ok(Answer::default());
        }
        if !r.is_object() {
            return Err(bad("not an object"));
        }
        let session_id = match r.get("sessionId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("sessionId is not a string")),
        };
        let (modes, current_mode) = match object(&r, "modes").map_err(|e| bad(&e))? {
            None => (Vec::new(), None),
            Some(m) => {
                let current = m
                    .get("currentModeId")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("modes.currentModeId is missing"))?;
                let modes: Vec<Mode> = match m.get("availableModes") {
                    None | Some(Value::Null) => Vec::new(),
                    // Read as text: the one reader of modes every face has (the saved form's).
                    Some(list) => serde_json::from_str(&list.to_string())
                        .map_err(|e| bad(&format!("modes.availableModes: {e}")))?,
                };
                (modes, Some(current.to_string()))
            }
        };
        let config_options = match r.get("configOptions") {
            None | Some(Value::Null) => None,
            Some(c) => Some(RawJson(
                serde_json::value::RawValue::from_string(c.to_string())
                    .map_err(|e| bad(&e.to_string()))?,
            )),
        };
        Ok(Answer {
            session_id,
            modes,
            current_mode,
            config_options,
        })
    }
}
