//! Which request opens a session: from what the user asked, what the agent's `initialize`
//! answer says it can do, and whether a conversation is on screen already.

use serde::{Deserialize, Serialize};

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
    pub fn read(result: &str) -> Result<AgentFacts, String> {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Init {
            #[serde(default)]
            agent_capabilities: Option<Caps>,
            #[serde(default)]
            agent_info: Option<Info>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Caps {
            #[serde(default)]
            load_session: Option<bool>,
            #[serde(default)]
            session_capabilities: Option<SessionCaps>,
        }
        #[derive(Deserialize, Default)]
        struct SessionCaps {
            #[serde(default)]
            resume: Option<serde::de::IgnoredAny>,
        }
        #[derive(Deserialize)]
        struct Info {
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            title: Option<String>,
            #[serde(default)]
            version: Option<String>,
        }
        let init: Init = serde_json::from_str(result)
            .map_err(|e| format!("unreadable initialize answer: {e}"))?;
        let caps = init.agent_capabilities.unwrap_or_default();
        let name = init
            .agent_info
            .and_then(|i| {
                let name = i.title.filter(|t| !t.trim().is_empty()).or(i.name)?;
                Some(match i.version {
                    Some(v) if !v.is_empty() => format!("{name} {v}"),
                    _ => name,
                })
            })
            .map(|n| crate::display::escape_line(&n))
            .unwrap_or_else(|| "the agent".to_string());
        Ok(AgentFacts {
            name,
            load: caps.load_session == Some(true),
            resume: caps
                .session_capabilities
                .is_some_and(|s| s.resume.is_some()),
        })
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
}

impl Open {
    /// The method sent.
    pub fn method(&self) -> &'static str {
        match self {
            Open::New => "session/new",
            Open::Resume { .. } => "session/resume",
            Open::Load { .. } => "session/load",
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
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Result {
            #[serde(default)]
            session_id: Option<String>,
            #[serde(default)]
            modes: Option<Modes>,
            #[serde(default)]
            config_options: Option<RawJson>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Modes {
            current_mode_id: String,
            #[serde(default)]
            available_modes: Vec<Mode>,
        }
        // Agents answer `null` for an empty result (`session/resume`, `session/load`).
        let r: Option<Result> =
            serde_json::from_str(result).map_err(|e| format!("unreadable answer: {e}"))?;
        let Some(r) = r else {
            return Ok(Answer::default());
        };
        let (modes, current_mode) = match r.modes {
            Some(m) => (m.available_modes, Some(m.current_mode_id)),
            None => (Vec::new(), None),
        };
        Ok(Answer {
            session_id: r.session_id,
            modes,
            current_mode,
            config_options: r.config_options,
        })
    }
}
