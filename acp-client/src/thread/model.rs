//! The saved model: what a thread holds, in the form it is saved and sent to views.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A content block (`ContentBlock`): text, image, audio, resource link or embedded resource,
/// with the fields a face shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// The block's `type`: `text`, `image`, `audio`, `resource_link` or `resource` (another is kept
    /// as sent).
    #[serde(rename = "type")]
    pub kind: String,
    /// The text of a `text` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 data of an image or audio block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The media type of an image, audio or resource link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The URI of a resource link (or of an image, when the agent gives one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The name of a resource link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The title of a resource link, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The contents of an embedded `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<Resource>,
}

/// An embedded resource's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    #[serde(default)]
    pub uri: String,
    /// Its media type, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text (a text resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64-encoded (a binary resource).
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

    pub(super) fn is_text(&self) -> bool {
        self.kind == "text"
    }

    pub(super) fn bytes(&self) -> usize {
        let r = self.resource.as_ref().map_or(0, |r| {
            r.text.as_ref().map_or(0, String::len) + r.blob.as_ref().map_or(0, String::len)
        });
        self.text.as_ref().map_or(0, String::len) + self.data.as_ref().map_or(0, String::len) + r
    }
}

/// What a tool call shows besides its title (`ToolCallContent`). Read tag first
/// (`saved.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    /// A content block the tool produced.
    Content {
        /// The block.
        content: Block,
    },
    /// A change to a file.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// The file's path, as the agent gave it (absolute per the protocol).
        path: String,
        /// The text before the change; `None` for a new file.
        #[serde(default)]
        old_text: Option<String>,
        /// The text after it.
        new_text: String,
    },
    /// The output of a terminal the agent created (`terminal/create`), shown from the client's
    /// terminal by its id.
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// The id the client gave the terminal.
        terminal_id: String,
    },
    /// A kind this version does not know (shown as its name).
    #[serde(other)]
    Unknown,
}

impl ToolContent {
    pub(super) fn bytes(&self) -> usize {
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
    /// The file's path, as the agent gave it (absolute per the protocol).
    pub path: String,
    /// A line in it (1-based), when the agent names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// A tool call as it stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The agent's id of the call, unique in the session: later updates name it.
    pub tool_call_id: String,
    /// What the call does, for the user (`tool call ID` until the agent gives a title).
    pub title: String,
    /// `read`, `edit`, `execute`… (`other` when the agent said nothing).
    pub kind: String,
    /// `pending`, `in_progress`, `completed`, `failed`; `cancelled` when the turn ended
    /// before it finished.
    pub status: String,
    /// What the call shows (output, diffs, terminals); an update that carries `content` replaces it
    /// whole. At most [`MAX_TOOL_CONTENT`](super::MAX_TOOL_CONTENT) items.
    #[serde(default)]
    pub content: Vec<ToolContent>,
    /// Content items past [`MAX_TOOL_CONTENT`](super::MAX_TOOL_CONTENT), not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub content_more: u64,
    /// The files it touches; an update that carries `locations` replaces them.
    #[serde(default)]
    pub locations: Vec<Location>,
    /// The call's input as the agent sent it (JSON text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<RawJson>,
    /// The call's output as the agent sent it (JSON text).
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
    pub(super) fn bytes(&self) -> usize {
        self.title.len()
            + self.content.iter().map(ToolContent::bytes).sum::<usize>()
            + self.raw_input.as_ref().map_or(0, |r| r.get().len())
            + self.raw_output.as_ref().map_or(0, |r| r.get().len())
    }

    pub(super) fn finished(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// One entry of the conversation. Read tag first (`saved.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The user's message: a prompt ([`Thread::begin_turn`](super::Thread::begin_turn)) or, in a
    /// replay, `user_message_chunk`s.
    #[serde(rename_all = "camelCase")]
    User {
        /// The agent's id of the message, when it numbers messages (a chunk with another id starts
        /// a new entry).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Its blocks; consecutive text chunks are joined into one text block.
        content: Vec<Block>,
    },
    /// The agent's message (`agent_message_chunk`s).
    #[serde(rename_all = "camelCase")]
    Agent {
        /// The agent's id of the message, when it numbers messages (a chunk with another id starts
        /// a new entry).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Its blocks; consecutive text chunks are joined into one text block.
        content: Vec<Block>,
    },
    /// The agent's thoughts (`agent_thought_chunk`s).
    #[serde(rename_all = "camelCase")]
    Thought {
        /// The agent's id of the message, when it numbers messages (a chunk with another id starts
        /// a new entry).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Its blocks; consecutive text chunks are joined into one text block.
        content: Vec<Block>,
    },
    /// A tool call, updated in place by later `tool_call` / `tool_call_update`s naming its id.
    Tool(ToolCall),
    /// Something the face reports in the conversation (a crash, an error, a cancelled turn).
    Notice {
        /// How it is shown.
        level: NoticeLevel,
        /// What it says, as the face wrote it.
        text: String,
    },
}

/// How a notice is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    /// For information (a reloaded session, a restart).
    Info,
    /// Something went wrong but the conversation goes on.
    Warning,
    /// A failure: a turn that failed, an agent that crashed.
    Error,
}

impl Entry {
    /// The blocks of a message or thought (`None` for the other entries).
    pub fn blocks(&self) -> Option<&[Block]> {
        match self {
            Entry::User { content, .. }
            | Entry::Agent { content, .. }
            | Entry::Thought { content, .. } => Some(content),
            _ => None,
        }
    }

    pub(super) fn bytes(&self) -> usize {
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
    /// What the step is, as the agent wrote it.
    pub content: String,
    /// `high`, `medium` or `low` (empty when absent).
    #[serde(default)]
    pub priority: String,
    /// `pending`, `in_progress` or `completed`; `cancelled` or `failed` when a turn ended
    /// otherwise than `end_turn` before it did ([`Thread::end_turn`](super::Thread::end_turn),
    /// [`Thread::fail_turn`](super::Thread::fail_turn)).
    #[serde(default)]
    pub status: String,
}

/// A command the agent offers (`/name`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// The command's name, without the `/`.
    pub name: String,
    /// What it does (empty when absent).
    #[serde(default)]
    pub description: String,
    /// The input hint, when the command takes input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A session mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mode {
    /// The mode's id: what `session/set_mode` takes.
    pub id: String,
    /// Its name for the user.
    pub name: String,
    /// What it does, when the agent says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Context window use and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the context window now.
    pub used: u64,
    /// The context window's size, in tokens.
    pub size: u64,
    /// What the session has cost so far, when the agent says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// A cost (`amount` in `currency`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The total so far, in `currency`.
    pub amount: f64,
    /// The unit: an ISO 4217 code (`USD`, `EUR`…) or another unit such as `credits`.
    pub currency: String,
}

/// Token usage of one turn, as the agent reported it with its stop reason (feature `unstable`:
/// the draft `PromptResponse.usage`, the schema's `unstable_end_turn_token_usage`).
#[cfg(feature = "unstable")]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    /// All tokens reported, every kind summed.
    #[serde(default)]
    pub total_tokens: u64,
    /// Input tokens reported.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens reported.
    #[serde(default)]
    pub output_tokens: u64,
    /// Thought (reasoning) tokens, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_tokens: Option<u64>,
    /// Tokens read from the cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
    /// Tokens written to the cache, when reported.
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

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}
