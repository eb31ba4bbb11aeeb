//! The conversation as every face shows it: `session/update` notifications folded into a
//! thread (messages, thoughts, tool calls with their content, diffs and locations, the plan,
//! modes, config options, commands, usage, title) plus the turn's state, in a versioned,
//! serializable form a face can save and show again.
//!
//! Faces feed it what arrives ([`Thread::apply_json`], [`Thread::begin_turn`],
//! [`Thread::end_turn`], [`Thread::fail_turn`]) and render from it: a streaming renderer
//! reads the [`Applied`] an update returns (what was appended to which entry); a view that
//! redraws pulls coalesced changes with [`Thread::take_delta`] (each changed entry once, however
//! many chunks changed it; a message that only grew, as its new text). `tests/client/thread.json`
//! is the case table.
//!
//! A `session/load`'s replay is shown when the thread holds no conversation yet, and folded
//! without being shown when it does ([`Thread::replay_view`], [`Thread::apply_replayed_json`]):
//! a session reopened after a crash or a dropped connection is not shown twice.
//!
//! Memory: updates are parsed into typed structs holding only what is shown (unknown fields
//! are skipped without being built; tool input and output are kept as JSON text), and the
//! thread keeps at most [`Limits::max_bytes`] of content: past it the oldest entries are
//! dropped (counted in `droppedEntries`), and one entry larger than the limit keeps its end.

mod delta; // what changed since the last delta, for views that redraw
mod fast; // a text chunk as the SDKs write it, matched byte for byte
mod limit; // the byte limit: dropping and trimming old entries
mod model; // the saved model: entries, blocks, tool calls, plan, commands, usage
mod read; // one update read in one pass when its tag comes first
mod saved; // reading the saved tagged entries back, tag first
#[cfg(test)]
mod tests;
#[cfg(feature = "unstable_protocol_v2")]
mod v2; // ACP v2's keyed upserts, turn and replay folded into the same thread
#[cfg(all(test, feature = "unstable_protocol_v2"))]
mod v2_tests;
mod wire; // the `session/update` forms read from the agent

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

pub use delta::{Delta, Meta};
use model::is_zero;
pub use model::*;
#[cfg(feature = "unstable_protocol_v2")]
pub(crate) use v2::V2Head;
pub use wire::ReadUpdate;
pub use wire::{Capped, MAX_ITEMS, MAX_TOOL_CONTENT};
use wire::{Chunk, Update, WireCommands, WireConfig, WireInfo, WireMode, WirePlan, WireTool};

/// The saved form's version. A thread saved with another version is refused by
/// [`Thread::from_json`] with a message saying so. Fields added later are optional (absent
/// when unset) and readers skip fields they do not know, so a new field keeps the version;
/// it changes when a field changes meaning. Format 1 gained `turnUsage` and `sessionStatus`
/// (feature `unstable`) that way.
pub const FORMAT: u32 = 1;

/// How much a thread keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of entry content (text, tool input/output, diffs) kept; older entries go first.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 32 << 20,
        }
    }
}

/// Where the turn is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Turn {
    /// No turn is running: the last one ended (or none began).
    #[default]
    Idle,
    /// A prompt was sent ([`Thread::begin_turn`]) and its turn has not ended.
    Running,
}

/// The conversation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The saved form's version: [`FORMAT`] (another is refused by [`Thread::from_json`]).
    pub format: u32,
    /// The session this conversation belongs to: set by [`Thread::set_session`], else taken from
    /// the first update folded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session's title (`session_info_update`; `null` there clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When the agent says the session last changed (`session_info_update`'s `updatedAt`, as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The kept entries, oldest first; `entries[i]` is entry number `dropped_entries + i`.
    pub entries: Vec<Entry>,
    /// Entries dropped from the front to stay within [`Limits::max_bytes`].
    #[serde(default)]
    pub dropped_entries: u64,
    /// The agent's current plan: each `plan` update replaces it whole.
    #[serde(default)]
    pub plan: Vec<PlanEntry>,
    /// Plan entries past [`MAX_ITEMS`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plan_more: u64,
    /// The session's current mode id (from [`Thread::set_session`], then `current_mode_update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mode: Option<String>,
    /// The modes the session offers (from [`Thread::set_session`]).
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// The agent's config options (`SessionConfigOption`s), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<RawJson>,
    /// The commands the agent offers: each `available_commands_update` replaces them whole.
    #[serde(default)]
    pub commands: Vec<Command>,
    /// Commands past [`MAX_ITEMS`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub commands_more: u64,
    /// The context window's use as last reported (`usage_update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Whether a turn is running. A thread read back from its saved form is always idle.
    #[serde(default)]
    pub turn: Turn,
    /// How the last turn ended (`end_turn`, `cancelled`… or `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stop: Option<String>,
    /// Token usage of the last turn that reported one (feature `unstable`).
    #[cfg(feature = "unstable")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_usage: Option<TurnUsage>,
    /// What `session/status` last said of the session (`open`, `saved`, or a value this
    /// version does not know, kept as sent; feature `unstable`).
    #[cfg(feature = "unstable")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_status: Option<String>,
    #[serde(skip)]
    limits: Limits,
    /// Bytes of the kept entries' content ([`Entry::bytes`]).
    #[serde(skip)]
    bytes: usize,
    #[serde(skip)]
    tools: HashMap<String, u64>,
    #[serde(skip)]
    changed: BTreeSet<u64>,
    /// Text appended to one entry the view has, since the last delta (`delta.rs`).
    #[serde(skip)]
    grown: Option<delta::Grown>,
    #[serde(skip)]
    meta_changed: bool,
    /// ACP v2: the prompt's entry until the agent gives it an id.
    #[cfg(feature = "unstable_protocol_v2")]
    #[serde(skip)]
    v2_prompt: Option<u64>,
    /// ACP v2: the id of the plan shown.
    #[cfg(feature = "unstable_protocol_v2")]
    #[serde(skip)]
    v2_plan_id: Option<String>,
}

impl PartialEq for Thread {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_string(self).ok() == serde_json::to_string(other).ok()
    }
}

/// What one update did, for a streaming renderer. Entry numbers count from the start of the
/// conversation (dropped entries included), so they stay valid as old entries are dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "applied", rename_all = "snake_case")]
pub enum Applied {
    /// A message or thought chunk: `block` was appended to entry `entry` (a new entry when
    /// `started`); text chunks come as text blocks holding just the new text.
    Chunk {
        /// The entry's number.
        entry: u64,
        /// The chunk started a new entry (else it was appended to entry `entry`).
        started: bool,
        /// The block appended; for a text chunk, a text block holding only the new text.
        block: Box<Block>,
    },
    /// A tool call was added (`started`) or changed.
    Tool {
        /// The entry's number.
        entry: u64,
        /// The update named a tool call the thread did not hold: a new entry.
        started: bool,
    },
    /// The plan was replaced ([`Thread::plan`]).
    Plan,
    /// The commands were replaced ([`Thread::commands`]).
    Commands,
    /// The current mode changed ([`Thread::current_mode`]).
    Mode,
    /// The config options were replaced ([`Thread::config_options`]).
    ConfigOptions,
    /// The title or `updatedAt` changed (`session_info_update`).
    Info,
    /// The context window's use changed ([`Thread::usage`]).
    Usage,
    /// An update this version does not show (its `sessionUpdate` kind). With ACP v2 also a
    /// `state_update`, whose effect is on [`Thread::turn`] and [`Thread::last_stop`].
    Ignored {
        /// The update's `sessionUpdate` value, as sent.
        kind: String,
    },
}

/// How a face takes the `session/update`s an agent replays before it answers `session/load`
/// ([`Thread::replay_view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayView {
    /// Shown and folded as they come ([`Thread::apply_json`]): the replay is the conversation.
    Show,
    /// Folded without being shown ([`Thread::apply_replayed_json`]): the conversation is shown
    /// already; the face says in one line that the session was reloaded.
    Fold,
}

/// A `session/update` that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadUpdate(pub String);

impl std::fmt::Display for BadUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unreadable session/update: {}", self.0)
    }
}

impl Default for Thread {
    fn default() -> Self {
        Thread::new(Limits::default())
    }
}

impl Thread {
    /// An empty thread.
    pub fn new(limits: Limits) -> Thread {
        Thread {
            format: FORMAT,
            session_id: None,
            title: None,
            updated_at: None,
            entries: Vec::new(),
            dropped_entries: 0,
            plan: Vec::new(),
            plan_more: 0,
            current_mode: None,
            modes: Vec::new(),
            config_options: None,
            commands: Vec::new(),
            commands_more: 0,
            usage: None,
            turn: Turn::Idle,
            last_stop: None,
            #[cfg(feature = "unstable")]
            turn_usage: None,
            #[cfg(feature = "unstable")]
            session_status: None,
            limits,
            bytes: 0,
            tools: HashMap::new(),
            changed: BTreeSet::new(),
            grown: None,
            meta_changed: false,
            #[cfg(feature = "unstable_protocol_v2")]
            v2_prompt: None,
            #[cfg(feature = "unstable_protocol_v2")]
            v2_plan_id: None,
        }
    }

    /// A saved thread ([`Thread::to_json`]) read back.
    pub fn from_json(text: &str, limits: Limits) -> Result<Thread, String> {
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        let v: Version =
            serde_json::from_str(text).map_err(|e| format!("not a saved thread: {e}"))?;
        if v.format != FORMAT {
            return Err(format!(
                "the thread was saved in format {} and this version reads format {FORMAT}",
                v.format
            ));
        }
        let mut t: Thread =
            serde_json::from_str(text).map_err(|e| format!("not a saved thread: {e}"))?;
        t.limits = limits;
        // A saved thread is at rest: a turn that was running when it was saved is over.
        t.turn = Turn::Idle;
        t.reindex();
        Ok(t)
    }

    /// The saved form (JSON text).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a thread always serializes")
    }

    fn reindex(&mut self) {
        self.bytes = self.entries.iter().map(Entry::bytes).sum();
        self.tools.clear();
        for (i, e) in self.entries.iter().enumerate() {
            if let Entry::Tool(t) = e {
                self.tools
                    .insert(t.tool_call_id.clone(), self.dropped_entries + i as u64);
            }
        }
    }

    /// The number of the next entry.
    fn next_number(&self) -> u64 {
        self.dropped_entries + self.entries.len() as u64
    }

    fn entry_mut(&mut self, number: u64) -> Option<&mut Entry> {
        let i = number.checked_sub(self.dropped_entries)?;
        self.entries.get_mut(usize::try_from(i).ok()?)
    }

    /// The tool call with this id, with its entry number, if still kept.
    pub fn tool(&self, tool_call_id: &str) -> Option<(u64, &ToolCall)> {
        let n = *self.tools.get(tool_call_id)?;
        match self.entry(n)? {
            Entry::Tool(t) => Some((n, t)),
            _ => None,
        }
    }

    /// The number the next entry will get (entries so far, dropped ones included).
    pub fn entry_count(&self) -> u64 {
        self.next_number()
    }

    /// Entry `number` (counted from the start of the conversation), if still kept.
    pub fn entry(&self, number: u64) -> Option<&Entry> {
        let i = number.checked_sub(self.dropped_entries)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    fn push(&mut self, entry: Entry) -> u64 {
        let n = self.next_number();
        self.bytes += entry.bytes();
        self.entries.push(entry);
        self.changed.insert(n);
        n
    }

    /// Folds one `session/update`'s params (JSON text).
    pub fn apply_json(&mut self, params: &str) -> Result<Applied, BadUpdate> {
        Ok(self.apply_read(ReadUpdate::read(params)?))
    }

    /// Folds an update read with [`ReadUpdate::read`].
    pub fn apply_read(&mut self, read: ReadUpdate) -> Applied {
        if self.session_id.is_none() {
            self.session_id = read.session_id;
        }
        let applied = self.apply(read.update);
        self.enforce_limit();
        applied
    }

    /// Folds an update read with [`ReadUpdate::read`] as [`Thread::apply_read`] does, for a
    /// view that draws from [`Thread::take_delta`]: no [`Applied`] is built (a chunk's block
    /// is moved into its entry, not copied for the caller).
    pub fn fold_read(&mut self, read: ReadUpdate) {
        if self.session_id.is_none() {
            self.session_id = read.session_id;
        }
        let (kind, c) = match read.update {
            Update::UserMessageChunk(c) => (ChunkKind::User, c),
            Update::AgentMessageChunk(c) => (ChunkKind::Agent, c),
            Update::AgentThoughtChunk(c) => (ChunkKind::Thought, c),
            other => {
                self.apply_other(other);
                self.enforce_limit();
                return;
            }
        };
        self.chunk(kind, *c);
        self.enforce_limit();
    }

    /// How the replay of a `session/load` sent now is taken, decided once, when it is sent:
    /// shown ([`ReplayView::Show`]) while the thread holds no conversation (a session opened
    /// from the history, `acp chat --load`: the replay is the conversation); folded without
    /// being shown ([`ReplayView::Fold`]) when it does (the same session reopened after the
    /// agent crashed or the connection dropped, or a saved conversation on screen: the agent's
    /// copy of it would show it twice). A face's own notices are not the conversation.
    pub fn replay_view(&self) -> ReplayView {
        let holds = self.dropped_entries > 0
            || self
                .entries
                .iter()
                .any(|e| !matches!(e, Entry::Notice { .. }));
        if holds {
            ReplayView::Fold
        } else {
            ReplayView::Show
        }
    }

    /// Folds one update of a replay not shown ([`ReplayView::Fold`]): what the session is
    /// (mode, config options, commands, plan, usage, title) is taken as from any update; the
    /// conversation is not added again (the thread has it): message, thought and prompt chunks
    /// are skipped, a tool call the thread has takes the replayed state only while it is
    /// unfinished here, and one it does not have (dropped for the memory limit, never shown)
    /// is not added. `Ok(None)`: skipped, nothing changed.
    pub fn apply_replayed_json(&mut self, params: &str) -> Result<Option<Applied>, BadUpdate> {
        Ok(self.apply_replayed_read(ReadUpdate::read(params)?))
    }

    /// [`Thread::apply_replayed_json`] for an update read with [`ReadUpdate::read`].
    pub fn apply_replayed_read(&mut self, read: ReadUpdate) -> Option<Applied> {
        let applied = match read.update {
            Update::UserMessageChunk(_)
            | Update::AgentMessageChunk(_)
            | Update::AgentThoughtChunk(_) => return None,
            Update::ToolCall(t) => {
                let open = self
                    .tool(&t.tool_call_id)
                    .is_some_and(|(_, call)| !call.finished());
                if !open {
                    return None;
                }
                self.apply_tool(*t)
            }
            other => self.apply(other),
        };
        self.enforce_limit();
        Some(applied)
    }

    fn apply(&mut self, update: Update) -> Applied {
        let (kind, c) = match update {
            Update::UserMessageChunk(c) => (ChunkKind::User, c),
            Update::AgentMessageChunk(c) => (ChunkKind::Agent, c),
            Update::AgentThoughtChunk(c) => (ChunkKind::Thought, c),
            other => return self.apply_other(other),
        };
        // The block as received, for the caller (the entry takes the original).
        let block = Box::new(c.content.clone());
        let (entry, started) = self.chunk(kind, *c);
        Applied::Chunk {
            entry,
            started,
            block,
        }
    }

    /// An update that is not a message, thought or prompt chunk.
    fn apply_other(&mut self, update: Update) -> Applied {
        match update {
            chunk @ (Update::UserMessageChunk(_)
            | Update::AgentMessageChunk(_)
            | Update::AgentThoughtChunk(_)) => self.apply(chunk),
            Update::ToolCall(t) => self.apply_tool(*t),
            Update::Plan(plan) => self.apply_plan(plan),
            Update::Commands(WireCommands { available_commands }) => {
                self.commands_more = available_commands.skipped;
                self.commands = available_commands
                    .items
                    .into_iter()
                    .map(|c| Command {
                        name: c.name,
                        description: c.description,
                        hint: c.input.and_then(|i| i.hint),
                    })
                    .collect();
                self.meta_changed = true;
                Applied::Commands
            }
            Update::Mode(WireMode { current_mode_id }) => {
                self.current_mode = Some(current_mode_id);
                self.meta_changed = true;
                Applied::Mode
            }
            Update::Config(WireConfig { config_options }) => {
                self.config_options = Some(RawJson(config_options));
                self.meta_changed = true;
                Applied::ConfigOptions
            }
            Update::Info(WireInfo { title, updated_at }) => {
                if let Some(t) = title {
                    self.title = t;
                }
                if let Some(u) = updated_at {
                    self.updated_at = u;
                }
                self.meta_changed = true;
                Applied::Info
            }
            Update::Usage(u) => {
                self.usage = Some(u);
                self.meta_changed = true;
                Applied::Usage
            }
            Update::Unknown(kind) => Applied::Ignored { kind },
        }
    }

    fn apply_plan(&mut self, WirePlan { entries }: WirePlan) -> Applied {
        self.plan = entries.items;
        self.plan_more = entries.skipped;
        self.meta_changed = true;
        Applied::Plan
    }

    /// Folds a chunk: appended to the last entry or a new one; its number, and whether it is new.
    fn chunk(&mut self, kind: ChunkKind, c: Chunk) -> (u64, bool) {
        let block = c.content;
        // Appended to the last entry when it is the same kind of message (and the same
        // message, when the agent numbers them); anything in between starts a new one.
        let last = self.next_number().checked_sub(1);
        let continues = last
            .and_then(|n| self.entry(n))
            .is_some_and(|e| match (kind, e) {
                (ChunkKind::User, Entry::User { message_id, .. })
                | (ChunkKind::Agent, Entry::Agent { message_id, .. })
                | (ChunkKind::Thought, Entry::Thought { message_id, .. }) => {
                    c.message_id.is_none() || *message_id == c.message_id
                }
                _ => false,
            });
        self.bytes += block.bytes();
        if let (true, Some(n)) = (continues, last) {
            if let Some(
                Entry::User { content, .. }
                | Entry::Agent { content, .. }
                | Entry::Thought { content, .. },
            ) = self.entry_mut(n)
            {
                let grew = match (content.last_mut(), block.is_text()) {
                    (Some(prev), true) if prev.is_text() => {
                        let text = prev.text.get_or_insert_with(String::new);
                        let from = text.len();
                        text.push_str(block.text.as_deref().unwrap_or(""));
                        Some((content.len() - 1, from))
                    }
                    _ => {
                        content.push(block);
                        None
                    }
                };
                match grew {
                    Some((b, from)) => self.grew(n, b, from),
                    None => {
                        self.changed.insert(n);
                    }
                }
            }
            return (n, false);
        }
        self.bytes -= block.bytes();
        (self.push(kind.entry(c.message_id, vec![block])), true)
    }

    fn apply_tool(&mut self, t: WireTool) -> Applied {
        let existing = self
            .tools
            .get(&t.tool_call_id)
            .copied()
            .filter(|n| self.entry(*n).is_some());
        let (n, started) = match existing {
            Some(n) => (n, false),
            None => {
                let call = ToolCall {
                    title: format!("tool call {}", t.tool_call_id),
                    tool_call_id: t.tool_call_id.clone(),
                    kind: "other".into(),
                    status: "pending".into(),
                    ..ToolCall::default()
                };
                let n = self.push(Entry::Tool(call));
                self.tools.insert(t.tool_call_id.clone(), n);
                (n, true)
            }
        };
        let mut delta: isize = 0;
        if let Some(Entry::Tool(call)) = self.entry_mut(n) {
            let before = call.bytes();
            if let Some(v) = t.title {
                call.title = v;
            }
            if let Some(v) = t.kind {
                call.kind = v;
            }
            if let Some(v) = t.status {
                call.status = v;
            }
            // The schema: content and locations, when present, replace the old ones.
            if let Some(v) = t.content {
                call.content = v.items.into_iter().map(ToolContent::from).collect();
                call.content_more = v.skipped;
            }
            if let Some(v) = t.locations {
                call.locations = v.items;
            }
            if let Some(v) = t.raw_input {
                call.raw_input = Some(RawJson(v));
            }
            if let Some(v) = t.raw_output {
                call.raw_output = Some(RawJson(v));
            }
            delta = call.bytes() as isize - before as isize;
        }
        self.bytes = self.bytes.saturating_add_signed(delta);
        self.changed.insert(n);
        Applied::Tool { entry: n, started }
    }

    /// The user's prompt starts a turn.
    pub fn begin_turn(&mut self, prompt: Vec<Block>) -> u64 {
        self.turn = Turn::Running;
        self.meta_changed = true;
        let n = self.push(Entry::User {
            message_id: None,
            content: prompt,
        });
        #[cfg(feature = "unstable_protocol_v2")]
        {
            self.v2_prompt = Some(n);
        }
        self.enforce_limit();
        n
    }

    /// The turn ended with `stop_reason`. Tool calls and plan entries left unfinished by a
    /// turn that did not end normally are marked `cancelled`, so nothing shows as still
    /// running.
    pub fn end_turn(&mut self, stop_reason: &str) {
        self.turn = Turn::Idle;
        self.last_stop = Some(stop_reason.to_string());
        self.meta_changed = true;
        if stop_reason != "end_turn" {
            self.close_unfinished("cancelled");
        }
    }

    /// The turn ended as the `session/prompt` result (JSON text) says: its stop reason and
    /// (feature `unstable`) its token usage, kept as `Thread::turn_usage` when present. A
    /// result without a stop reason is refused and changes nothing. Returns the stop reason.
    pub fn end_turn_json(&mut self, prompt_result: &str) -> Result<String, BadUpdate> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct R {
            stop_reason: String,
        }
        let r: R = serde_json::from_str(prompt_result)
            .map_err(|e| BadUpdate(format!("session/prompt result: {e}")))?;
        #[cfg(feature = "unstable")]
        if let Some(u) = TurnUsage::from_prompt_result(prompt_result) {
            self.turn_usage = Some(u);
        }
        self.end_turn(&r.stop_reason);
        Ok(r.stop_reason)
    }

    /// Keeps what `session/status` answered (feature `unstable`).
    #[cfg(feature = "unstable")]
    pub fn set_session_status(&mut self, status: &str) {
        self.session_status = Some(status.to_string());
        self.meta_changed = true;
    }

    /// Sets the title (what `session/set_title` answered; feature `unstable`). Agents change
    /// it with `session_info_update`.
    #[cfg(feature = "unstable")]
    pub fn set_title(&mut self, title: &str) {
        self.title = Some(title.to_string());
        self.meta_changed = true;
    }

    /// The turn failed (an error, the agent crashed): `message` is kept in the conversation
    /// as an error notice, and unfinished tool calls and plan entries are marked `failed`.
    pub fn fail_turn(&mut self, message: &str) {
        self.turn = Turn::Idle;
        self.last_stop = Some("error".into());
        self.meta_changed = true;
        self.close_unfinished("failed");
        self.notice(NoticeLevel::Error, message);
    }

    /// Adds a notice to the conversation.
    pub fn notice(&mut self, level: NoticeLevel, text: &str) -> u64 {
        let n = self.push(Entry::Notice {
            level,
            text: text.to_string(),
        });
        self.enforce_limit();
        n
    }

    fn close_unfinished(&mut self, status: &str) {
        let first = self.dropped_entries;
        for (i, e) in self.entries.iter_mut().enumerate() {
            if let Entry::Tool(t) = e {
                if !t.finished() {
                    t.status = status.to_string();
                    self.changed.insert(first + i as u64);
                }
            }
        }
        for p in &mut self.plan {
            if p.status != "completed" {
                p.status = status.to_string();
            }
        }
    }

    /// Sets what `session/new` / `session/load` answered (modes and config options).
    pub fn set_session(
        &mut self,
        session_id: &str,
        modes: Vec<Mode>,
        current_mode: Option<String>,
        config_options: Option<RawJson>,
    ) {
        self.session_id = Some(session_id.to_string());
        self.modes = modes;
        self.current_mode = current_mode;
        self.config_options = config_options;
        self.meta_changed = true;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ChunkKind {
    User,
    Agent,
    Thought,
}

impl ChunkKind {
    /// A new message entry of this kind.
    fn entry(self, message_id: Option<String>, content: Vec<Block>) -> Entry {
        match self {
            ChunkKind::User => Entry::User {
                message_id,
                content,
            },
            ChunkKind::Agent => Entry::Agent {
                message_id,
                content,
            },
            ChunkKind::Thought => Entry::Thought {
                message_id,
                content,
            },
        }
    }
}
