//! The saved model: what a thread holds, in the form it is saved and sent to views.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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
    /// Content items past [`MAX_TOOL_CONTENT`](super::MAX_TOOL_CONTENT), not kept.
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

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}
