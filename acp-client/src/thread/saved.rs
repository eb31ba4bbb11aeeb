//! The saved forms of the internally tagged enums, read back.
//!
//! `Entry` and `ToolContent` are written as serde's internally tagged objects (`{"type": …}`)
//! but not read through serde's tagged-enum support: that buffers each object whole into
//! serde's `Content` and reads every type nested in it a second time from that buffer, which
//! was about a tenth of the client wasm (docs/wasm.md, "Sizes"). As for the wire forms
//! (`wire.rs`), the tag is read first (other fields skipped unbuilt), then the variant's own
//! struct.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::model::{Block, Entry, NoticeLevel, ToolContent};

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
