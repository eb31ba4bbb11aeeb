//! The `session/update` forms read from the agent: only the fields shown; the rest is skipped
//! unbuilt.
//!
//! Internally tagged enums are not used for what the agent sends: serde buffers such an
//! object whole (junk fields included) before it looks at the tag. The tag is read first (other
//! fields skipped unbuilt), then the variant's own struct.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::model::{Block, Location, PlanEntry, ToolContent, Usage};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Notification<'a> {
    #[serde(default)]
    pub(super) session_id: Option<String>,
    #[serde(borrow)]
    pub(super) update: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UpdateTag {
    pub(super) session_update: String,
}

pub(super) enum Update {
    UserMessageChunk(Box<Chunk>),
    AgentMessageChunk(Box<Chunk>),
    AgentThoughtChunk(Box<Chunk>),
    ToolCall(Box<WireTool>),
    Plan(WirePlan),
    Commands(WireCommands),
    Mode(WireMode),
    Config(WireConfig),
    Info(WireInfo),
    Usage(Usage),
    Unknown(String),
}

#[derive(Deserialize)]
pub(super) struct WirePlan {
    pub(super) entries: Capped<PlanEntry, MAX_ITEMS>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireCommands {
    pub(super) available_commands: Capped<WireCommand, MAX_ITEMS>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireMode {
    pub(super) current_mode_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireConfig {
    pub(super) config_options: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireInfo {
    #[serde(default, deserialize_with = "present")]
    pub(super) title: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub(super) updated_at: Option<Option<String>>,
}

pub(super) fn parse_update(raw: &str) -> Result<Update, serde_json::Error> {
    let tag: UpdateTag = serde_json::from_str(raw)?;
    let mut de = serde_json::Deserializer::from_str(raw);
    let update = super::read::variant(tag.session_update, &mut de)?;
    de.end()?;
    Ok(update)
}

/// `ToolCallContent` as sent: one flat struct (see above), turned into a [`ToolContent`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireToolContent {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) content: Option<Block>,
    #[serde(default)]
    pub(super) path: Option<String>,
    #[serde(default)]
    pub(super) old_text: Option<String>,
    #[serde(default)]
    pub(super) new_text: Option<String>,
    #[serde(default)]
    pub(super) terminal_id: Option<String>,
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
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Chunk {
    pub(super) content: Block,
    #[serde(default)]
    pub(super) message_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireTool {
    pub(super) tool_call_id: String,
    #[serde(default)]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) kind: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) content: Option<Capped<WireToolContent, MAX_TOOL_CONTENT>>,
    #[serde(default)]
    pub(super) locations: Option<Capped<Location, MAX_ITEMS>>,
    #[serde(default)]
    pub(super) raw_input: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) raw_output: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
pub(super) struct WireCommand {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) input: Option<WireInput>,
}

#[derive(Deserialize)]
pub(super) struct WireInput {
    #[serde(default)]
    pub(super) hint: Option<String>,
}

/// Most plan entries, commands, tool content items and locations kept from one update; the
/// rest are counted (`…More` fields), not built.
pub const MAX_ITEMS: usize = 256;
/// Most content items of one tool call kept from one update.
pub const MAX_TOOL_CONTENT: usize = 64;

/// The first `N` items of a JSON array; the others are skipped unbuilt and counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped<T, const N: usize> {
    /// The first `N` items, in order.
    pub items: Vec<T>,
    /// How many items followed them (skipped unbuilt).
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
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

/// One `session/update`'s params, read once: the session it names and the update, parsed
/// (only what a thread keeps), for a face that routes updates by session before folding them
/// ([`super::Thread::apply_read`], [`super::Thread::apply_replayed_read`]).
pub struct ReadUpdate {
    pub(super) session_id: Option<String>,
    pub(super) update: Update,
}

impl std::fmt::Debug for ReadUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadUpdate")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl ReadUpdate {
    /// Reads `params` (JSON text): a text chunk as the SDKs write it matched byte for byte
    /// (`fast.rs`), else in one pass when the update's tag comes first (as agents write it),
    /// else its tag first, then its variant.
    pub fn read(params: &str) -> Result<ReadUpdate, super::BadUpdate> {
        match super::fast::read_plain_text_chunk(params) {
            Some(read) => Ok(read),
            None => Self::read_readers(params),
        }
    }

    /// `read` without the byte-for-byte match.
    pub(super) fn read_readers(params: &str) -> Result<ReadUpdate, super::BadUpdate> {
        if let Some((session_id, update)) = super::read::one_pass(params) {
            return Ok(ReadUpdate { session_id, update });
        }
        let n: Notification<'_> =
            serde_json::from_str(params).map_err(|e| super::BadUpdate(e.to_string()))?;
        let update = parse_update(n.update.get()).map_err(|e| super::BadUpdate(e.to_string()))?;
        Ok(ReadUpdate {
            session_id: n.session_id,
            update,
        })
    }

    /// The `sessionId` it names.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}
