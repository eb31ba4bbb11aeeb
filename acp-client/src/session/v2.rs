//! ACP v2 in the session engine (feature `unstable_protocol_v2`): once `initialize` settled on
//! v2, a session is reopened by `session/resume` with `replayFrom: {"type": "start"}`
//! ([`Open::Replay`]: v2 merged load and resume), its replay taken in v2's order — the
//! messages, `replay_complete`, then the live state — shown into an empty thread or folded into
//! the conversation held (only the messages it does not hold are added), and every update
//! folded by the thread's v2 reader ([`Thread::apply_v2_json`](crate::thread::Thread)).
//! Updates before a new session's answer are held as in v1 (same bounds), as sent.

use serde::Deserialize;

use super::{AgentFacts, Held, Open, Phase, Routed, Session, MAX_HELD_BYTES, MAX_HELD_UPDATES};
use crate::thread::{BadUpdate, ReplayView, V2Head};

/// Whether an `initialize` answer (JSON text) settled on v2 (acp-core accepts it only when
/// the client asked for it).
pub(super) fn negotiated(result: &str) -> bool {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Version {
        protocol_version: Option<u64>,
    }
    serde_json::from_str::<Version>(result).is_ok_and(|v| v.protocol_version == Some(2))
}

/// The v1 decision carried to v2: a session reopened by id is resumed with a replay (into an
/// empty thread it is the conversation; into one that holds it, it adds what was said while
/// the face was away), since v2 has no `session/load` and every agent can replay.
pub(super) fn reopen(open: Open) -> Open {
    match open {
        Open::Load { session_id } | Open::Resume { session_id } => Open::Replay { session_id },
        open => open,
    }
}

/// How a session is reopened by id on a v2 connection, as the engine reopens it after a
/// restart: [`reopen`](super::reopen)'s decision carried to v2 ([`Open::Replay`] wherever v1
/// would resume or load; `None` when it would do neither). acp-native's `SupervisedAgent`
/// re-attaches its sessions to a restarted v2 agent with it.
pub fn reopen_v2(facts: &AgentFacts, id: &str, holds_conversation: bool) -> Option<Open> {
    super::open::reopen(facts, id, holds_conversation).map(reopen)
}

/// The update kind that ends a v2 replay.
const REPLAY_COMPLETE: &str = "replay_complete";

impl Session {
    /// [`Session::update`] on a v2 connection.
    pub(super) fn update_v2(&mut self, params: &str) -> Result<Routed, BadUpdate> {
        let head = V2Head::read(params).map_err(|e| BadUpdate(format!("session/update: {e}")))?;
        let kind = head.kind;
        let ours = head.session_id.is_some() && head.session_id == self.session_id;
        match &self.phase {
            Phase::Opening(Open::New) => {
                let Some(sid) = head.session_id else {
                    return Ok(Routed::Ignored);
                };
                if self.held.len() >= MAX_HELD_UPDATES
                    || self.held_bytes + params.len() > MAX_HELD_BYTES
                {
                    self.dropped += 1;
                    return Ok(Routed::Ignored);
                }
                self.held_bytes += params.len();
                self.held.push_back((sid, Held::V2(params.to_string())));
                Ok(Routed::Held)
            }
            Phase::Opening(Open::Replay { .. }) if ours && !self.replay_done => {
                if kind == REPLAY_COMPLETE {
                    self.replay_done = true;
                } else {
                    self.replayed += 1;
                }
                match self.replay_view {
                    ReplayView::Show => Ok(Routed::Shown {
                        applied: self.thread.apply_v2_json(params)?,
                    }),
                    ReplayView::Fold => {
                        self.thread.apply_v2_replayed_json(params)?;
                        Ok(Routed::Folded)
                    }
                }
            }
            Phase::Opening(_) | Phase::Open if ours => Ok(Routed::Shown {
                applied: self.thread.apply_v2_json(params)?,
            }),
            _ => Ok(Routed::Ignored),
        }
    }
}
