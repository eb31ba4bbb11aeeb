//! ACP v2 (draft, feature `unstable_protocol_v2`) folded into the same [`Thread`], so a face
//! shows a v2 agent as it shows a v1 one.
//!
//! v2's updates are upserts keyed by id: a message chunk appends to the message with its
//! `messageId` wherever it is (another entry in between does not split it), a
//! `user_message`/`agent_message`/`agent_thought` replaces its message's content (created when
//! new), a `tool_call_update` creates or patches the tool call with its `toolCallId`, a
//! `tool_call_content_chunk` appends one content item, a `plan_update` replaces the plan with
//! its `planId` and `plan_removed` clears it. The turn follows `state_update`: `running`,
//! `requires_action` and states this version does not know make it [`Turn::Running`] (never
//! idle, as v2 asks), `idle` ends it with its stop reason: `error` fails it (the agent's
//! `error.message` kept as the turn's error notice), and an idle without a stop reason ends it
//! with none (the draft makes the reason a SHOULD: [`Thread::last_stop`] is then `None`, not
//! the previous turn's). The user's prompt
//! ([`Thread::begin_turn`]) takes the id the agent gives it ([`Thread::v2_prompt_accepted`] or
//! the echoed user message, whichever comes first), so the echo does not show it twice.
//!
//! A replay (`session/resume` with `replayFrom`) into a thread that holds the conversation
//! ([`Thread::apply_v2_replayed_json`]): messages whose id the thread holds are not added again
//! (their upserts replace them in place, their chunks are skipped); messages it does not hold
//! (sent while the face was away) are added; tool calls as in a v1 replay.
//!
//! Not shown yet: agent-owned terminals (`terminal_update`, `terminal_output_chunk`), notices,
//! compaction and the other kinds are [`Applied::Ignored`], as unknown kinds are.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::wire::{Capped, WirePlan, WireToolContent, MAX_ITEMS};
use super::{Applied, BadUpdate, Block, ChunkKind, Entry, PlanEntry, ReadUpdate, ToolContent};
use super::{Thread, ToolCall, Turn};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Params<'a> {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(borrow)]
    update: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kind {
    session_update: String,
}

/// What every reader of a v2 `session/update` reads first: its session, its update (unread)
/// and the update's kind. The thread's fold and the session engine's routing both start here.
pub(crate) struct V2Head<'a> {
    pub session_id: Option<String>,
    pub update: &'a RawValue,
    pub kind: String,
}

impl<'a> V2Head<'a> {
    /// Reads `params` (JSON text) that far; serde's error when it is not that shape.
    pub(crate) fn read(params: &'a str) -> Result<V2Head<'a>, serde_json::Error> {
        let p: Params<'a> = serde_json::from_str(params)?;
        let kind = serde_json::from_str::<Kind>(p.update.get())?.session_update;
        Ok(V2Head {
            session_id: p.session_id,
            update: p.update,
            kind,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2Chunk {
    message_id: String,
    content: Block,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2Message<'a> {
    message_id: String,
    /// Omitted: unchanged; `null`: cleared; a list: replaces.
    #[serde(default, borrow, deserialize_with = "present")]
    content: Option<&'a RawValue>,
}

/// A member that is present, `null` included (serde's `Option` reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2ToolChunk {
    tool_call_id: String,
    content: WireToolContent,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2PlanUpdate {
    plan: V2Plan,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2Plan {
    #[serde(rename = "type")]
    kind: String,
    plan_id: String,
    #[serde(default)]
    entries: Option<Capped<PlanEntry, MAX_ITEMS>>,
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2PlanRemoved {
    plan_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct V2State {
    state: String,
    #[serde(default)]
    stop_reason: Option<serde_json::Value>,
    /// With the `error` stop reason: the failure, a JSON-RPC error object (optional).
    #[serde(default)]
    error: Option<serde_json::Value>,
}

fn bad(kind: &str, e: serde_json::Error) -> BadUpdate {
    BadUpdate(format!("{kind}: {e}"))
}

fn chunk_kind(kind: &str) -> Option<ChunkKind> {
    match kind {
        "user_message_chunk" | "user_message" => Some(ChunkKind::User),
        "agent_message_chunk" | "agent_message" => Some(ChunkKind::Agent),
        "agent_thought_chunk" | "agent_thought" => Some(ChunkKind::Thought),
        _ => None,
    }
}

impl Thread {
    /// Folds one ACP v2 `session/update`'s params (JSON text): see the module docs.
    pub fn apply_v2_json(&mut self, params: &str) -> Result<Applied, BadUpdate> {
        let applied = self.apply_v2(params, false)?;
        Ok(applied.unwrap_or(Applied::Ignored {
            kind: String::new(),
        }))
    }

    /// Folds one update of a v2 replay into a thread that holds the conversation
    /// ([`ReplayView::Fold`](super::ReplayView::Fold)): a chunk of a message the thread
    /// holds is skipped (`Ok(None)`), a tool call it does not hold or holds finished is not
    /// touched, everything else is folded as [`Thread::apply_v2_json`] does.
    pub fn apply_v2_replayed_json(&mut self, params: &str) -> Result<Option<Applied>, BadUpdate> {
        self.apply_v2(params, true)
    }

    /// The `session/prompt` answer of a v2 agent (JSON text): the prompt's entry takes the
    /// `messageId` it acknowledges (unless the echoed user message already gave it one). The
    /// turn goes on until an idle `state_update`. An answer without a string `messageId`
    /// changes nothing.
    pub fn v2_prompt_accepted(&mut self, prompt_result: &str) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct R {
            message_id: String,
        }
        if let Ok(r) = serde_json::from_str::<R>(prompt_result) {
            self.adopt_prompt(&r.message_id);
        }
    }

    /// Gives the prompt's entry (from [`Thread::begin_turn`]) the agent's id for it. Returns
    /// its number when it took it.
    fn adopt_prompt(&mut self, message_id: &str) -> Option<u64> {
        let n = self.v2_prompt.take()?;
        match self.entry_mut(n) {
            Some(Entry::User { message_id: id, .. }) if id.is_none() => {
                *id = Some(message_id.to_string());
                self.changed.insert(n);
                Some(n)
            }
            _ => None,
        }
    }

    /// The entry holding message `id` of this kind, newest first.
    fn message(&self, kind: ChunkKind, id: &str) -> Option<u64> {
        let i = self.entries.iter().rposition(|e| match (kind, e) {
            (ChunkKind::User, Entry::User { message_id, .. })
            | (ChunkKind::Agent, Entry::Agent { message_id, .. })
            | (ChunkKind::Thought, Entry::Thought { message_id, .. }) => {
                message_id.as_deref() == Some(id)
            }
            _ => false,
        })?;
        Some(self.dropped_entries + i as u64)
    }

    fn apply_v2(&mut self, params: &str, replayed: bool) -> Result<Option<Applied>, BadUpdate> {
        let p = V2Head::read(params).map_err(|e| BadUpdate(e.to_string()))?;
        let (update, kind) = (p.update.get(), p.kind);
        if self.session_id.is_none() {
            self.session_id = p.session_id;
        }
        let applied = match kind.as_str() {
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
                let c: V2Chunk = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                let ck = chunk_kind(&kind).expect("a chunk kind");
                if replayed && self.message(ck, &c.message_id).is_some() {
                    return Ok(None);
                }
                Some(self.v2_chunk(ck, c))
            }
            "user_message" | "agent_message" | "agent_thought" => {
                let m: V2Message<'_> = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                let content = match m.content {
                    None => None,
                    Some(raw) if raw.get() == "null" => Some(Vec::new()),
                    Some(raw) => Some(
                        serde_json::from_str::<Vec<Block>>(raw.get()).map_err(|e| bad(&kind, e))?,
                    ),
                };
                Some(self.v2_message(
                    chunk_kind(&kind).expect("a message kind"),
                    m.message_id,
                    content,
                ))
            }
            "tool_call_update" => {
                let read = ReadUpdate::read(params)?;
                if replayed {
                    self.apply_replayed_read(read)
                } else {
                    Some(self.apply_read(read))
                }
            }
            "tool_call_content_chunk" => {
                let c: V2ToolChunk = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                Some(self.v2_tool_content(c))
            }
            "plan_update" => {
                let u: V2PlanUpdate = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                Some(self.v2_plan(u.plan))
            }
            "plan_removed" => {
                let r: V2PlanRemoved = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                if self.v2_plan_id.as_deref() == Some(r.plan_id.as_str()) {
                    self.v2_plan_id = None;
                    self.plan.clear();
                    self.plan_more = 0;
                    self.meta_changed = true;
                }
                Some(Applied::Plan)
            }
            "state_update" => {
                let s: V2State = serde_json::from_str(update).map_err(|e| bad(&kind, e))?;
                self.v2_state(&s);
                Some(Applied::Ignored { kind })
            }
            // The same shapes as v1's.
            "available_commands_update"
            | "config_option_update"
            | "session_info_update"
            | "usage_update" => Some(self.apply_read(ReadUpdate::read(params)?)),
            _ => Some(Applied::Ignored { kind }),
        };
        self.enforce_limit();
        Ok(applied)
    }

    fn v2_state(&mut self, s: &V2State) {
        if s.state != "idle" {
            // running, requires_action, and any state this version does not know: busy.
            if self.turn != Turn::Running {
                self.turn = Turn::Running;
                self.meta_changed = true;
            }
            return;
        }
        if self.turn != Turn::Running {
            // An idle snapshot (a resume's, or a repeat, even with the last stop reason) is
            // not a new completion.
            self.v2_prompt = None;
            return;
        }
        match s.stop_reason.as_ref().and_then(|r| r.as_str()) {
            // v2's `error` stop reason, with the failure beside it when the agent gives it.
            Some("error") => {
                let message = s
                    .error
                    .as_ref()
                    .and_then(|e| e.get("message"))
                    .and_then(|m| m.as_str());
                self.fail_turn(&match message {
                    Some(m) => format!("the turn failed: {m}"),
                    None => "the turn failed (the agent gave no details)".to_string(),
                });
            }
            Some(reason) => self.end_turn(reason),
            // Idle means no foreground work remains: the turn is over, and the agent did not
            // say why (v2: a stop reason is a SHOULD; omitted or `null` is "not reported").
            // Nothing is claimed for it: no stop reason kept, unfinished work left as sent.
            None => {
                self.turn = Turn::Idle;
                self.last_stop = None;
                self.meta_changed = true;
            }
        }
        self.v2_prompt = None;
    }

    fn v2_chunk(&mut self, kind: ChunkKind, c: V2Chunk) -> Applied {
        let shown = Box::new(c.content.clone());
        let found = self.message(kind, &c.message_id).or_else(|| {
            if kind != ChunkKind::User {
                return None;
            }
            // The echo of the prompt: it replaces what the face put there.
            let n = self.adopt_prompt(&c.message_id)?;
            if let Some(Entry::User { content, .. }) = self.entry_mut(n) {
                content.clear();
            }
            Some(n)
        });
        let Some(n) = found else {
            let n = self.push(kind.entry(Some(c.message_id), vec![c.content]));
            return Applied::Chunk {
                entry: n,
                started: true,
                block: shown,
            };
        };
        let block = c.content;
        let before = self.entry(n).map_or(0, Entry::bytes);
        if let Some(
            Entry::User { content, .. }
            | Entry::Agent { content, .. }
            | Entry::Thought { content, .. },
        ) = self.entry_mut(n)
        {
            match (content.last_mut(), block.is_text()) {
                (Some(prev), true) if prev.is_text() => {
                    let text = prev.text.get_or_insert_with(String::new);
                    text.push_str(block.text.as_deref().unwrap_or(""));
                }
                _ => content.push(block),
            }
        }
        self.rebytes(n, before);
        Applied::Chunk {
            entry: n,
            started: false,
            block: shown,
        }
    }

    fn v2_message(&mut self, kind: ChunkKind, id: String, content: Option<Vec<Block>>) -> Applied {
        let found = self.message(kind, &id).or_else(|| {
            (kind == ChunkKind::User)
                .then(|| self.adopt_prompt(&id))
                .flatten()
        });
        let Some(n) = found else {
            let n = self.push(kind.entry(Some(id), content.unwrap_or_default()));
            return Applied::Chunk {
                entry: n,
                started: true,
                block: Box::new(Block::text("")),
            };
        };
        if let Some(new) = content {
            let before = self.entry(n).map_or(0, Entry::bytes);
            if let Some(
                Entry::User { content, .. }
                | Entry::Agent { content, .. }
                | Entry::Thought { content, .. },
            ) = self.entry_mut(n)
            {
                *content = new;
            }
            self.rebytes(n, before);
        }
        self.changed.insert(n);
        Applied::Chunk {
            entry: n,
            started: false,
            block: Box::new(Block::text("")),
        }
    }

    fn v2_tool_content(&mut self, c: V2ToolChunk) -> Applied {
        let (n, started) = match self.tool(&c.tool_call_id).map(|(n, _)| n) {
            Some(n) => (n, false),
            None => {
                let call = ToolCall {
                    title: format!("tool call {}", c.tool_call_id),
                    tool_call_id: c.tool_call_id.clone(),
                    kind: "other".into(),
                    status: "pending".into(),
                    ..ToolCall::default()
                };
                let n = self.push(Entry::Tool(call));
                self.tools.insert(c.tool_call_id, n);
                (n, true)
            }
        };
        let before = self.entry(n).map_or(0, Entry::bytes);
        if let Some(Entry::Tool(call)) = self.entry_mut(n) {
            if call.content.len() < super::MAX_TOOL_CONTENT {
                call.content.push(ToolContent::from(c.content));
            } else {
                call.content_more += 1;
            }
        }
        self.rebytes(n, before);
        Applied::Tool { entry: n, started }
    }

    fn v2_plan(&mut self, plan: V2Plan) -> Applied {
        let entries = match plan.kind.as_str() {
            "items" => plan.entries.unwrap_or_default(),
            "markdown" => Capped {
                items: vec![PlanEntry {
                    content: plan.content.unwrap_or_default(),
                    priority: String::new(),
                    status: String::new(),
                }],
                skipped: 0,
            },
            _ => {
                return Applied::Ignored {
                    kind: "plan_update".into(),
                }
            }
        };
        self.v2_plan_id = Some(plan.plan_id);
        self.apply_plan(WirePlan { entries })
    }

    /// Entry `n` changed from `before` bytes: the byte count follows, the entry is marked
    /// changed.
    fn rebytes(&mut self, n: u64, before: usize) {
        let after = self.entry(n).map_or(0, Entry::bytes);
        self.bytes = self.bytes.saturating_sub(before).saturating_add(after);
        self.changed.insert(n);
    }
}
