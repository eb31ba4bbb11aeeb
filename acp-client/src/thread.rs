//! The conversation as every face shows it: `session/update` notifications folded into a
//! thread (messages, thoughts, tool calls with their content, diffs and locations, the plan,
//! modes, config options, commands, usage, title) plus the turn's state, in a versioned,
//! serializable form a face can save and show again.
//!
//! Faces feed it what arrives ([`Thread::apply_json`], [`Thread::begin_turn`],
//! [`Thread::end_turn`], [`Thread::fail_turn`]) and render from it: a streaming renderer
//! reads the [`Applied`] an update returns (what was appended to which entry); a view that
//! redraws pulls coalesced changes with [`Thread::take_delta`] (each changed entry once, however
//! many chunks changed it). `tests/client/thread.json` is the case table.
//!
//! A `session/load`'s replay is shown when the thread holds no conversation yet, and folded
//! without being shown when it does ([`Thread::replay_view`], [`Thread::apply_replayed_json`]):
//! a session reopened after a crash or a dropped connection is not shown twice.
//!
//! Memory: updates are parsed into typed structs holding only what is shown (unknown fields
//! are skipped without being built; tool input and output are kept as JSON text), and the
//! thread keeps at most [`Limits::max_bytes`] of content: past it the oldest entries are
//! dropped (counted in `droppedEntries`), and one entry larger than the limit keeps its end.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Most plan entries, commands, tool content items and locations kept from one update; the
/// rest are counted (`…More` fields), not built.
pub const MAX_ITEMS: usize = 256;
/// Most content items of one tool call kept from one update.
pub const MAX_TOOL_CONTENT: usize = 64;

/// The first `N` items of a JSON array; the others are skipped unbuilt and counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped<T, const N: usize> {
    pub items: Vec<T>,
    pub skipped: u64,
}

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Capped {
            items: Vec::new(),
            skipped: 0,
        }
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, SeqAccess, Visitor};
        struct V<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
            type Value = Capped<T, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Capped::default();
                while out.items.len() < N {
                    match seq.next_element::<T>()? {
                        Some(item) => out.items.push(item),
                        None => return Ok(out),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    out.skipped += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V::<T, N>(std::marker::PhantomData))
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

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

/// A content block (`ContentBlock`): text, image, audio, resource link or embedded resource,
/// with the fields a face shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 data of an image or audio block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
}

/// An embedded resource's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    #[serde(default)]
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block {
            kind: "text".into(),
            text: Some(text.into()),
            ..Block::default()
        }
    }

    fn is_text(&self) -> bool {
        self.kind == "text"
    }

    fn bytes(&self) -> usize {
        let r = self.resource.as_ref().map_or(0, |r| {
            r.text.as_ref().map_or(0, String::len) + r.blob.as_ref().map_or(0, String::len)
        });
        self.text.as_ref().map_or(0, String::len) + self.data.as_ref().map_or(0, String::len) + r
    }
}

/// What a tool call shows besides its title (`ToolCallContent`). Read tag first
/// ([`read_tagged`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Content {
        content: Block,
    },
    #[serde(rename_all = "camelCase")]
    Diff {
        path: String,
        #[serde(default)]
        old_text: Option<String>,
        new_text: String,
    },
    #[serde(rename_all = "camelCase")]
    Terminal {
        terminal_id: String,
    },
    /// A kind this version does not know (shown as its name).
    #[serde(other)]
    Unknown,
}

impl ToolContent {
    fn bytes(&self) -> usize {
        match self {
            ToolContent::Content { content } => content.bytes(),
            ToolContent::Diff {
                old_text, new_text, ..
            } => old_text.as_ref().map_or(0, String::len) + new_text.len(),
            _ => 0,
        }
    }
}

/// A file a tool call touches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// A tool call as it stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    /// `read`, `edit`, `execute`… (`other` when the agent said nothing).
    pub kind: String,
    /// `pending`, `in_progress`, `completed`, `failed`; `cancelled` when the turn ended
    /// before it finished.
    pub status: String,
    #[serde(default)]
    pub content: Vec<ToolContent>,
    /// Content items past [`MAX_TOOL_CONTENT`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub content_more: u64,
    #[serde(default)]
    pub locations: Vec<Location>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<RawJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<RawJson>,
}

/// JSON kept as text, as the agent sent it (compared by text). Read from the wire as raw
/// text; read back from a saved thread through a `Value` (raw text cannot be taken from the
/// buffered form serde uses inside a tagged entry).
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct RawJson(pub Box<RawValue>);

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        serde_json::value::to_raw_value(&v)
            .map(RawJson)
            .map_err(serde::de::Error::custom)
    }
}

impl RawJson {
    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl ToolCall {
    fn bytes(&self) -> usize {
        self.title.len()
            + self.content.iter().map(ToolContent::bytes).sum::<usize>()
            + self.raw_input.as_ref().map_or(0, |r| r.get().len())
            + self.raw_output.as_ref().map_or(0, |r| r.get().len())
    }

    fn finished(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// One entry of the conversation. Read tag first ([`read_tagged`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    #[serde(rename_all = "camelCase")]
    User {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        content: Vec<Block>,
    },
    #[serde(rename_all = "camelCase")]
    Agent {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        content: Vec<Block>,
    },
    #[serde(rename_all = "camelCase")]
    Thought {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        content: Vec<Block>,
    },
    Tool(ToolCall),
    /// Something the face reports in the conversation (a crash, an error, a cancelled turn).
    Notice {
        level: NoticeLevel,
        text: String,
    },
}

/// How a notice is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

impl Entry {
    fn bytes(&self) -> usize {
        match self {
            Entry::User { content, .. }
            | Entry::Agent { content, .. }
            | Entry::Thought { content, .. } => content.iter().map(Block::bytes).sum(),
            Entry::Tool(t) => t.bytes(),
            Entry::Notice { text, .. } => text.len(),
        }
    }
}

/// A plan entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    #[serde(default)]
    pub priority: String,
    #[serde(default)]
    pub status: String,
}

/// A command the agent offers (`/name`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The input hint, when the command takes input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A session mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mode {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Context window use and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub used: u64,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// A cost (`amount` in `currency`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

/// Token usage of one turn, as the agent reported it with its stop reason (feature `unstable`:
/// the draft `PromptResponse.usage`, the schema's `unstable_end_turn_token_usage`).
#[cfg(feature = "unstable")]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_write_tokens: Option<u64>,
}

#[cfg(feature = "unstable")]
impl TurnUsage {
    /// The `usage` of a `session/prompt` result (JSON text): `None` when there is none, or
    /// when it is not an object of token counts (a malformed usage never fails the turn).
    pub fn from_prompt_result(result: &str) -> Option<TurnUsage> {
        #[derive(Deserialize)]
        struct R {
            #[serde(default)]
            usage: Option<serde_json::Value>,
        }
        let v = serde_json::from_str::<R>(result).ok()?.usage?;
        serde_json::from_value(v).ok()
    }
}

/// Where the turn is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Turn {
    #[default]
    Idle,
    Running,
}

/// The conversation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    pub format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    pub entries: Vec<Entry>,
    /// Entries dropped from the front to stay within [`Limits::max_bytes`].
    #[serde(default)]
    pub dropped_entries: u64,
    #[serde(default)]
    pub plan: Vec<PlanEntry>,
    /// Plan entries past [`MAX_ITEMS`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub plan_more: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_mode: Option<String>,
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// The agent's config options (`SessionConfigOption`s), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<RawJson>,
    #[serde(default)]
    pub commands: Vec<Command>,
    /// Commands past [`MAX_ITEMS`], not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub commands_more: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
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
    #[serde(skip)]
    meta_changed: bool,
}

impl PartialEq for Thread {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_string(self).ok() == serde_json::to_string(other).ok()
    }
}

// --- the saved forms of the internally tagged enums, read back ----------------------------

// `Entry` and `ToolContent` are written as serde's internally tagged objects (`{"type": …}`)
// but not read through serde's tagged-enum support: that buffers each object whole into
// serde's `Content` and reads every type nested in it a second time from that buffer, which
// was about a tenth of the client wasm (docs/wasm.md, "Sizes"). As for the wire forms below,
// the tag is read first (other fields skipped unbuilt), then the variant's own struct.

#[derive(Deserialize)]
struct TypeTag {
    #[serde(rename = "type")]
    kind: String,
}

/// Reads one object of an internally tagged enum: its text, its `type`, then `variant(type,
/// text)` (serde_json's error for the variant's struct).
fn read_tagged<'de, D, T>(
    d: D,
    variant: impl FnOnce(&str, &str) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    let raw = Box::<RawValue>::deserialize(d)?;
    let tag: TypeTag = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
    variant(&tag.kind, raw.get()).map_err(D::Error::custom)
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Message {
            #[serde(default)]
            message_id: Option<String>,
            content: Vec<Block>,
        }
        #[derive(Deserialize)]
        struct Notice {
            level: NoticeLevel,
            text: String,
        }
        read_tagged(d, |kind, text| {
            let message = |text| serde_json::from_str::<Message>(text);
            Ok(match kind {
                "user" => message(text).map(|m| Entry::User {
                    message_id: m.message_id,
                    content: m.content,
                })?,
                "agent" => message(text).map(|m| Entry::Agent {
                    message_id: m.message_id,
                    content: m.content,
                })?,
                "thought" => message(text).map(|m| Entry::Thought {
                    message_id: m.message_id,
                    content: m.content,
                })?,
                "tool" => Entry::Tool(serde_json::from_str(text)?),
                "notice" => {
                    let n: Notice = serde_json::from_str(text)?;
                    Entry::Notice {
                        level: n.level,
                        text: n.text,
                    }
                }
                other => {
                    return Err(serde::de::Error::unknown_variant(
                        other,
                        &["user", "agent", "thought", "tool", "notice"],
                    ))
                }
            })
        })
    }
}

impl<'de> Deserialize<'de> for ToolContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Content {
            content: Block,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Diff {
            path: String,
            #[serde(default)]
            old_text: Option<String>,
            new_text: String,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Terminal {
            terminal_id: String,
        }
        read_tagged(d, |kind, text| {
            Ok(match kind {
                "content" => ToolContent::Content {
                    content: serde_json::from_str::<Content>(text)?.content,
                },
                "diff" => {
                    let d: Diff = serde_json::from_str(text)?;
                    ToolContent::Diff {
                        path: d.path,
                        old_text: d.old_text,
                        new_text: d.new_text,
                    }
                }
                "terminal" => ToolContent::Terminal {
                    terminal_id: serde_json::from_str::<Terminal>(text)?.terminal_id,
                },
                // A kind this version does not know.
                _ => ToolContent::Unknown,
            })
        })
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
        entry: u64,
        started: bool,
        block: Box<Block>,
    },
    /// A tool call was added (`started`) or changed.
    Tool {
        entry: u64,
        started: bool,
    },
    Plan,
    Commands,
    Mode,
    ConfigOptions,
    Info,
    Usage,
    /// An update this version does not show (its `sessionUpdate` kind).
    Ignored {
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

/// Changes since the last [`Thread::take_delta`]: each changed entry once, with its number,
/// and the thread's other fields when any of them changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delta<'a> {
    pub entries: Vec<(u64, &'a Entry)>,
    /// Entries before this number are gone (dropped for the memory limit).
    pub first_entry: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta<'a>>,
}

/// The thread without its entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta<'a> {
    pub title: &'a Option<String>,
    pub plan: &'a [PlanEntry],
    pub plan_more: u64,
    pub current_mode: &'a Option<String>,
    pub modes: &'a [Mode],
    pub config_options: &'a Option<RawJson>,
    pub commands: &'a [Command],
    pub commands_more: u64,
    pub usage: &'a Option<Usage>,
    pub turn: Turn,
    pub last_stop: &'a Option<String>,
    #[cfg(feature = "unstable")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_usage: &'a Option<TurnUsage>,
    #[cfg(feature = "unstable")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_status: &'a Option<String>,
}

/// A `session/update` that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadUpdate(pub String);

impl std::fmt::Display for BadUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unreadable session/update: {}", self.0)
    }
}

// --- the wire forms read (only the fields shown; the rest is skipped unbuilt) ---------------

// Internally tagged enums are not used for what the agent sends: serde buffers such an
// object whole (junk fields included) before it looks at the tag. The tag is read first (other
// fields skipped unbuilt), then the variant's own struct.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Notification<'a> {
    #[serde(default)]
    session_id: Option<String>,
    #[serde(borrow)]
    update: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateTag {
    session_update: String,
}

enum Update {
    UserMessageChunk(Chunk),
    AgentMessageChunk(Chunk),
    AgentThoughtChunk(Chunk),
    ToolCall(WireTool),
    Plan(WirePlan),
    Commands(WireCommands),
    Mode(WireMode),
    Config(WireConfig),
    Info(WireInfo),
    Usage(Usage),
    Unknown(String),
}

#[derive(Deserialize)]
struct WirePlan {
    entries: Capped<PlanEntry, MAX_ITEMS>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCommands {
    available_commands: Capped<WireCommand, MAX_ITEMS>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMode {
    current_mode_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireConfig {
    config_options: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireInfo {
    #[serde(default, deserialize_with = "present")]
    title: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    updated_at: Option<Option<String>>,
}

fn parse_update(raw: &str) -> Result<Update, serde_json::Error> {
    use serde_json::from_str as read;
    let tag: UpdateTag = read(raw)?;
    Ok(match tag.session_update.as_str() {
        "user_message_chunk" => Update::UserMessageChunk(read(raw)?),
        "agent_message_chunk" => Update::AgentMessageChunk(read(raw)?),
        "agent_thought_chunk" => Update::AgentThoughtChunk(read(raw)?),
        "tool_call" | "tool_call_update" => Update::ToolCall(read(raw)?),
        "plan" => Update::Plan(read(raw)?),
        "available_commands_update" => Update::Commands(read(raw)?),
        "current_mode_update" => Update::Mode(read(raw)?),
        "config_option_update" => Update::Config(read(raw)?),
        "session_info_update" => Update::Info(read(raw)?),
        "usage_update" => Update::Usage(read(raw)?),
        _ => Update::Unknown(tag.session_update),
    })
}

/// `ToolCallContent` as sent: one flat struct (see above), turned into a [`ToolContent`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireToolContent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    content: Option<Block>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    old_text: Option<String>,
    #[serde(default)]
    new_text: Option<String>,
    #[serde(default)]
    terminal_id: Option<String>,
}

impl From<WireToolContent> for ToolContent {
    fn from(w: WireToolContent) -> ToolContent {
        match (w.kind.as_str(), w.content, w.new_text, w.terminal_id) {
            ("content", Some(content), _, _) => ToolContent::Content { content },
            ("diff", _, Some(new_text), _) => ToolContent::Diff {
                path: w.path.unwrap_or_default(),
                old_text: w.old_text,
                new_text,
            },
            ("terminal", _, _, Some(terminal_id)) => ToolContent::Terminal { terminal_id },
            _ => ToolContent::Unknown,
        }
    }
}

/// `Some(value)` for a field that is present (even `null`), `None` when absent.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    content: Block,
    #[serde(default)]
    message_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTool {
    tool_call_id: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    content: Option<Capped<WireToolContent, MAX_TOOL_CONTENT>>,
    #[serde(default)]
    locations: Option<Capped<Location, MAX_ITEMS>>,
    #[serde(default)]
    raw_input: Option<Box<RawValue>>,
    #[serde(default)]
    raw_output: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct WireCommand {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    input: Option<WireInput>,
}

#[derive(Deserialize)]
struct WireInput {
    #[serde(default)]
    hint: Option<String>,
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
            meta_changed: false,
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
        let n: Notification = serde_json::from_str(params).map_err(|e| BadUpdate(e.to_string()))?;
        let update = parse_update(n.update.get()).map_err(|e| BadUpdate(e.to_string()))?;
        if self.session_id.is_none() {
            self.session_id = n.session_id;
        }
        let applied = self.apply(update);
        self.enforce_limit();
        Ok(applied)
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
        let n: Notification = serde_json::from_str(params).map_err(|e| BadUpdate(e.to_string()))?;
        let update = parse_update(n.update.get()).map_err(|e| BadUpdate(e.to_string()))?;
        let applied = match update {
            Update::UserMessageChunk(_)
            | Update::AgentMessageChunk(_)
            | Update::AgentThoughtChunk(_) => return Ok(None),
            Update::ToolCall(t) => {
                let open = self
                    .tool(&t.tool_call_id)
                    .is_some_and(|(_, call)| !call.finished());
                if !open {
                    return Ok(None);
                }
                self.apply_tool(t)
            }
            other => self.apply(other),
        };
        self.enforce_limit();
        Ok(Some(applied))
    }

    fn apply(&mut self, update: Update) -> Applied {
        match update {
            Update::UserMessageChunk(c) => self.chunk(ChunkKind::User, c),
            Update::AgentMessageChunk(c) => self.chunk(ChunkKind::Agent, c),
            Update::AgentThoughtChunk(c) => self.chunk(ChunkKind::Thought, c),
            Update::ToolCall(t) => self.apply_tool(t),
            Update::Plan(WirePlan { entries }) => {
                self.plan = entries.items;
                self.plan_more = entries.skipped;
                self.meta_changed = true;
                Applied::Plan
            }
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

    fn chunk(&mut self, kind: ChunkKind, c: Chunk) -> Applied {
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
        let shown = Box::new(block.clone());
        self.bytes += block.bytes();
        if let (true, Some(n)) = (continues, last) {
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
            self.changed.insert(n);
            return Applied::Chunk {
                entry: n,
                started: false,
                block: shown,
            };
        }
        self.bytes -= block.bytes();
        let (message_id, content) = (c.message_id, vec![block]);
        let entry = match kind {
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
        };
        let n = self.push(entry);
        Applied::Chunk {
            entry: n,
            started: true,
            block: shown,
        }
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
    /// (feature `unstable`) its token usage, kept as [`Thread::turn_usage`] when present. A
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

    /// Changes since the last call, coalesced; clears them.
    pub fn take_delta(&mut self) -> Delta<'_> {
        let changed = std::mem::take(&mut self.changed);
        let meta = std::mem::take(&mut self.meta_changed);
        let first = self.dropped_entries;
        Delta {
            entries: changed
                .into_iter()
                .filter_map(|n| {
                    let i = usize::try_from(n.checked_sub(first)?).ok()?;
                    self.entries.get(i).map(|e| (n, e))
                })
                .collect(),
            first_entry: first,
            meta: meta.then(|| self.meta()),
        }
    }

    /// Whether [`Thread::take_delta`] has anything.
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty() || self.meta_changed
    }

    /// The thread's fields other than the entries.
    pub fn meta(&self) -> Meta<'_> {
        Meta {
            title: &self.title,
            plan: &self.plan,
            plan_more: self.plan_more,
            current_mode: &self.current_mode,
            modes: &self.modes,
            config_options: &self.config_options,
            commands: &self.commands,
            commands_more: self.commands_more,
            usage: &self.usage,
            turn: self.turn,
            last_stop: &self.last_stop,
            #[cfg(feature = "unstable")]
            turn_usage: &self.turn_usage,
            #[cfg(feature = "unstable")]
            session_status: &self.session_status,
        }
    }

    /// Drops the oldest entries while over the byte limit; a lone entry over it keeps the end
    /// of its text.
    fn enforce_limit(&mut self) {
        let max = self.limits.max_bytes;
        if self.bytes <= max {
            return;
        }
        let mut drop = 0;
        let mut bytes = self.bytes;
        while bytes > max && drop + 1 < self.entries.len() {
            bytes -= self.entries[drop].bytes();
            drop += 1;
        }
        if drop > 0 {
            self.entries.drain(..drop);
            self.dropped_entries += drop as u64;
            let first = self.dropped_entries;
            self.changed.retain(|n| *n >= first);
            self.tools.retain(|_, n| *n >= first);
            self.meta_changed = true;
        }
        if bytes > max {
            if let Some(e) = self.entries.last_mut() {
                trim_front(e, max / 2);
            }
            bytes = self.entries.iter().map(Entry::bytes).sum();
        }
        self.bytes = bytes;
    }
}

#[derive(Clone, Copy)]
enum ChunkKind {
    User,
    Agent,
    Thought,
}

/// Keeps about the last `keep` bytes of an entry's text (at a character boundary).
fn trim_front(e: &mut Entry, keep: usize) {
    fn cut(s: &mut String, keep: usize) {
        if s.len() > keep {
            let mut at = s.len() - keep;
            while !s.is_char_boundary(at) {
                at += 1;
            }
            s.replace_range(..at, "…");
        }
    }
    match e {
        Entry::User { content, .. }
        | Entry::Agent { content, .. }
        | Entry::Thought { content, .. } => {
            let total: usize = content.iter().map(Block::bytes).sum();
            if total > keep {
                // Older blocks go first; the last text keeps its end.
                while content.len() > 1 && content.iter().map(Block::bytes).sum::<usize>() > keep {
                    content.remove(0);
                }
                if let Some(t) = content.last_mut().and_then(|b| b.text.as_mut()) {
                    cut(t, keep);
                }
                if let Some(b) = content.last_mut() {
                    if b.bytes() > keep {
                        b.data = None;
                        b.resource = None;
                    }
                }
            }
        }
        Entry::Tool(t) => {
            t.raw_input = None;
            t.raw_output = None;
            for c in &mut t.content {
                match c {
                    ToolContent::Diff {
                        old_text, new_text, ..
                    } => {
                        if let Some(o) = old_text {
                            cut(o, keep / 2);
                        }
                        cut(new_text, keep / 2);
                    }
                    ToolContent::Content { content } => {
                        if let Some(t) = content.text.as_mut() {
                            cut(t, keep / 2);
                        }
                        content.data = None;
                        content.resource = None;
                    }
                    _ => {}
                }
            }
        }
        Entry::Notice { text, .. } => cut(text, keep),
    }
}

#[cfg(all(test, feature = "unstable"))]
mod unstable_tests {
    use super::*;

    #[test]
    fn turn_usage_status_and_title_are_kept_saved_and_sent_in_deltas() {
        let mut t = Thread::new(Limits::default());
        t.begin_turn(vec![Block::text("hi")]);
        let _ = t.take_delta();
        let stop = t
            .end_turn_json(r#"{"stopReason":"end_turn","usage":{"totalTokens":30,"inputTokens":20,"outputTokens":10,"cachedReadTokens":5}}"#)
            .unwrap();
        assert_eq!(stop, "end_turn");
        let want = TurnUsage {
            total_tokens: 30,
            input_tokens: 20,
            output_tokens: 10,
            cached_read_tokens: Some(5),
            ..TurnUsage::default()
        };
        assert_eq!(t.turn_usage.as_ref(), Some(&want));
        t.set_session_status("open");
        t.set_title("Refactor");
        let delta = serde_json::to_value(t.take_delta()).unwrap();
        assert_eq!(delta["meta"]["turnUsage"]["totalTokens"], 30);
        assert_eq!(delta["meta"]["sessionStatus"], "open");
        assert_eq!(delta["meta"]["title"], "Refactor");
        // Saved and read back.
        let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
        assert_eq!(back.turn_usage, Some(want.clone()));
        assert_eq!(back.session_status.as_deref(), Some("open"));
        // A turn without usage keeps the last one; a malformed one is ignored, not an error.
        t.begin_turn(vec![Block::text("again")]);
        assert_eq!(
            t.end_turn_json(r#"{"stopReason":"cancelled","usage":"lots"}"#)
                .unwrap(),
            "cancelled"
        );
        assert_eq!(t.turn_usage, Some(want));
        assert_eq!(t.last_stop.as_deref(), Some("cancelled"));
    }

    #[test]
    fn a_prompt_result_without_a_stop_reason_changes_nothing() {
        let mut t = Thread::new(Limits::default());
        t.begin_turn(vec![Block::text("hi")]);
        let err = t
            .end_turn_json(r#"{"usage":{"totalTokens":1}}"#)
            .unwrap_err();
        assert!(err.0.contains("stopReason"), "{err}");
        assert_eq!((t.turn, &t.turn_usage), (Turn::Running, &None));
    }

    #[test]
    fn format_1_threads_without_the_new_fields_still_read() {
        let old = r#"{"format":1,"entries":[],"droppedEntries":0,"plan":[],"modes":[],"commands":[],"turn":"idle"}"#;
        let t = Thread::from_json(old, Limits::default()).unwrap();
        assert_eq!((t.turn_usage, t.session_status), (None, None));
        // And what this build saves without them has none of their keys.
        assert!(!Thread::new(Limits::default())
            .to_json()
            .contains("turnUsage"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &str, text: &str) -> String {
        serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": kind,
            "content": {"type": "text", "text": text}}})
        .to_string()
    }

    #[test]
    fn chunks_merge_and_deltas_coalesce() {
        let mut t = Thread::default();
        for w in ["Hel", "lo"] {
            t.apply_json(&chunk("agent_message_chunk", w)).unwrap();
        }
        let d = t.take_delta();
        assert_eq!(d.entries.len(), 1);
        assert_eq!(
            d.entries[0].1,
            &Entry::Agent {
                message_id: None,
                content: vec![Block::text("Hello")]
            }
        );
        assert!(!t.has_changes());
    }

    #[test]
    fn junk_fields_are_skipped_without_being_built() {
        let junk = format!("[{}0]", "0,".repeat(100_000));
        let params = format!(
            r#"{{"sessionId":"s","junk":{junk},"update":{{"sessionUpdate":"agent_message_chunk","junk":{junk},"content":{{"type":"text","text":"x","junk":{junk}}}}}}}"#
        );
        let mut t = Thread::default();
        t.apply_json(&params).unwrap();
        assert!(t.to_json().len() < 300, "{}", t.to_json());
    }

    #[test]
    fn the_byte_limit_drops_the_oldest_entries() {
        let mut t = Thread::new(Limits { max_bytes: 1000 });
        for i in 0..50 {
            t.apply_json(&chunk("user_message_chunk", &"u".repeat(100)))
                .unwrap();
            t.apply_json(&chunk("agent_message_chunk", &format!("{i:0>100}")))
                .unwrap();
        }
        assert!(t.bytes <= 1000, "{}", t.bytes);
        assert_eq!(t.dropped_entries + t.entries.len() as u64, 100);
        assert!(matches!(t.entries.last(), Some(Entry::Agent { .. })));
        // One huge chunk keeps its end.
        t.apply_json(&chunk(
            "agent_message_chunk",
            &format!("{}END", "z".repeat(5000)),
        ))
        .unwrap();
        let Some(Entry::Agent { content, .. }) = t.entries.last() else {
            panic!()
        };
        assert!(content[0].text.as_ref().unwrap().ends_with("END"));
        assert!(t.bytes <= 1000, "{}", t.bytes);
    }

    #[test]
    fn long_arrays_are_kept_up_to_a_cap_and_counted() {
        let entries: Vec<_> = (0..300)
            .map(|i| serde_json::json!({"content": format!("step {i}"), "priority": "low", "status": "pending"}))
            .collect();
        let content: Vec<_> = (0..100)
            .map(|_| serde_json::json!({"type": "content", "content": {"type": "text", "text": "x"}}))
            .collect();
        let mut t = Thread::default();
        t.apply_json(&serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": entries}}).to_string())
            .unwrap();
        t.apply_json(&serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "content": content}}).to_string())
            .unwrap();
        assert_eq!((t.plan.len(), t.plan_more), (MAX_ITEMS, 44));
        let (_, call) = t.tool("t").unwrap();
        assert_eq!(
            (call.content.len(), call.content_more),
            (MAX_TOOL_CONTENT, 36)
        );
    }

    fn update(update: serde_json::Value) -> String {
        serde_json::json!({"sessionId": "s", "update": update}).to_string()
    }

    #[test]
    fn a_replay_is_shown_until_the_thread_holds_a_conversation() {
        let mut t = Thread::default();
        assert_eq!(t.replay_view(), ReplayView::Show);
        // The face's own words are not the conversation.
        t.notice(NoticeLevel::Info, "starting");
        assert_eq!(t.replay_view(), ReplayView::Show);
        t.begin_turn(vec![Block::text("hi")]);
        assert_eq!(t.replay_view(), ReplayView::Fold);
        // Entries dropped for the memory limit were shown too.
        let mut dropped = Thread::new(Limits { max_bytes: 10 });
        dropped
            .apply_json(&chunk("agent_message_chunk", &"x".repeat(20)))
            .unwrap();
        dropped.notice(NoticeLevel::Error, &"y".repeat(20));
        assert_eq!((dropped.dropped_entries, dropped.entries.len()), (1, 1));
        assert_eq!(dropped.replay_view(), ReplayView::Fold);
    }

    #[test]
    fn a_folded_replay_keeps_the_session_state_and_adds_no_conversation() {
        let mut t = Thread::default();
        t.begin_turn(vec![Block::text("first")]);
        t.apply_json(&chunk("agent_message_chunk", "answer"))
            .unwrap();
        t.apply_json(&update(serde_json::json!({"sessionUpdate": "tool_call",
            "toolCallId": "done", "title": "Read", "status": "completed"})))
            .unwrap();
        t.apply_json(&update(serde_json::json!({"sessionUpdate": "tool_call",
            "toolCallId": "open", "title": "Run", "status": "in_progress"})))
            .unwrap();
        t.end_turn("end_turn");
        let before = t.entries.clone();
        let replay = [
            chunk("user_message_chunk", "first"),
            chunk("agent_message_chunk", "answer"),
            chunk("agent_thought_chunk", "hmm"),
            update(
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "done",
                "title": "Read", "status": "pending"}),
            ),
            update(
                serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "open",
                "status": "completed"}),
            ),
            update(
                serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "unknown",
                "title": "Never shown"}),
            ),
            update(serde_json::json!({"sessionUpdate": "plan",
                "entries": [{"content": "step", "priority": "low", "status": "completed"}]})),
            update(
                serde_json::json!({"sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "echo", "description": "echo"}]}),
            ),
            update(
                serde_json::json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
            ),
            update(
                serde_json::json!({"sessionUpdate": "config_option_update", "configOptions": []}),
            ),
            update(serde_json::json!({"sessionUpdate": "usage_update", "used": 5, "size": 10})),
            update(serde_json::json!({"sessionUpdate": "session_info_update", "title": "T"})),
        ];
        let applied: Vec<_> = replay
            .iter()
            .map(|u| t.apply_replayed_json(u).unwrap())
            .collect();
        // No entry added; only the tool call still open here took the agent's state.
        assert_eq!(t.entries.len(), before.len());
        assert_eq!(t.tool("done").unwrap().1.status, "completed");
        assert_eq!(t.tool("open").unwrap().1.status, "completed");
        assert!(t.tool("unknown").is_none());
        assert_eq!(applied[..3], [None, None, None]);
        assert_eq!((applied[3].clone(), applied[5].clone()), (None, None));
        assert!(matches!(
            applied[4],
            Some(Applied::Tool { started: false, .. })
        ));
        assert_eq!(t.plan.len(), 1);
        assert_eq!(t.commands[0].name, "echo");
        assert_eq!(t.current_mode.as_deref(), Some("plan"));
        assert_eq!(t.config_options.as_ref().map(RawJson::get), Some("[]"));
        assert_eq!(t.usage.as_ref().map(|u| (u.used, u.size)), Some((5, 10)));
        assert_eq!(t.title.as_deref(), Some("T"));
        // What cannot be read is said as for any update.
        assert!(t.apply_replayed_json("{}").is_err());
    }

    #[test]
    fn saved_threads_round_trip_and_other_formats_are_refused() {
        let mut t = Thread::default();
        t.begin_turn(vec![Block::text("hi")]);
        t.apply_json(&chunk("agent_message_chunk", "yo")).unwrap();
        t.end_turn("end_turn");
        let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
        assert_eq!(back, t);
        let other = t.to_json().replacen("\"format\":1", "\"format\":2", 1);
        assert!(Thread::from_json(&other, Limits::default())
            .unwrap_err()
            .contains("format 2"));
    }

    /// `Entry` and `ToolContent` are read back tag first (not through serde's tagged enums):
    /// every variant reads back as written, an unknown tool content kind reads as `Unknown`,
    /// and a bad entry fails naming what is wrong.
    #[test]
    fn every_saved_entry_and_tool_content_reads_back() {
        let tool = ToolCall {
            tool_call_id: "t1".into(),
            title: "edit".into(),
            kind: "edit".into(),
            status: "completed".into(),
            content: vec![
                ToolContent::Content {
                    content: Block::text("out"),
                },
                ToolContent::Diff {
                    path: "/a".into(),
                    old_text: None,
                    new_text: "new".into(),
                },
                ToolContent::Diff {
                    path: "/b".into(),
                    old_text: Some("old".into()),
                    new_text: "new".into(),
                },
                ToolContent::Terminal {
                    terminal_id: "term".into(),
                },
                ToolContent::Unknown,
            ],
            content_more: 2,
            locations: vec![Location {
                path: "/a".into(),
                line: Some(3),
            }],
            raw_input: Some(RawJson(
                RawValue::from_string(r#"{"x":[1,2]}"#.into()).unwrap(),
            )),
            raw_output: None,
        };
        let entries = vec![
            Entry::User {
                message_id: Some("m1".into()),
                content: vec![Block::text("hi")],
            },
            Entry::Agent {
                message_id: None,
                content: vec![Block::text("yo")],
            },
            Entry::Thought {
                message_id: None,
                content: vec![],
            },
            Entry::Tool(tool),
            Entry::Notice {
                level: NoticeLevel::Warning,
                text: "careful".into(),
            },
        ];
        for e in &entries {
            let text = serde_json::to_string(e).unwrap();
            assert_eq!(&serde_json::from_str::<Entry>(&text).unwrap(), e, "{text}");
        }
        let t = Thread {
            entries,
            ..Thread::default()
        };
        let back = Thread::from_json(&t.to_json(), Limits::default()).unwrap();
        assert_eq!(back.entries, t.entries);

        let later = r#"{"type":"hologram","content":{"x":1},"path":7}"#;
        assert_eq!(
            serde_json::from_str::<ToolContent>(later).unwrap(),
            ToolContent::Unknown
        );
        let bad = |text: &str| serde_json::from_str::<Entry>(text).unwrap_err().to_string();
        assert!(bad(r#"{"content":[]}"#).contains("missing field `type`"));
        assert!(bad(r#"{"type":"poem","content":[]}"#).contains("unknown variant `poem`"));
        assert!(bad(r#"{"type":"user"}"#).contains("missing field `content`"));
        assert!(bad(r#"{"type":"notice","level":"loud","text":"x"}"#)
            .contains("unknown variant `loud`"));
        assert!(bad(r#"[1]"#).contains("invalid type"));
        let diff = r#"{"type":"tool","toolCallId":"t","title":"","kind":"edit","status":"pending","content":[{"type":"diff","path":"/a"}],"locations":[]}"#;
        assert!(bad(diff).contains("missing field `newText`"));
        let saved = Thread::default().to_json().replacen(
            "\"entries\":[]",
            "\"entries\":[{\"type\":\"user\",\"content\":7}]",
            1,
        );
        let err = Thread::from_json(&saved, Limits::default()).unwrap_err();
        assert!(
            err.starts_with("not a saved thread: invalid type: integer `7`"),
            "{err}"
        );
    }
}
