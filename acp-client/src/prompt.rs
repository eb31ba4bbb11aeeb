//! What a prompt carries besides the user's text: each attachment (a file or symbol mentioned
//! with `@`, the editor's selection, a pasted image) becomes one content block, chosen by the
//! agent's `promptCapabilities`, or is refused with a message for the user.
//!
//! The rules (`tests/client/prompt.json` is the case table):
//! 1. A file is sent as an embedded `resource` (its text) when the agent advertises
//!    `embeddedContext`, the face could read it as text and it is at most [`MAX_EMBED_BYTES`];
//!    otherwise as a `resource_link` (every agent must accept those), with its size when known.
//! 2. A symbol is a `resource_link` to its file, the line in the URI's fragment (`#L12`) and the
//!    symbol's name as the title: its text is the agent's to read.
//! 3. A selection is an embedded `resource` (its URI with the lines in the fragment) when the
//!    agent advertises `embeddedContext`; otherwise a `text` block naming the file and lines
//!    with the selected text fenced (text is the baseline every agent reads). A selection over
//!    [`MAX_EMBED_BYTES`] is refused (select less, or mention the file).
//! 4. An image is an `image` block only when the agent advertises `image`, its type is one the
//!    protocol's agents read (PNG, JPEG, GIF, WebP) and it is at most [`MAX_IMAGE_BYTES`];
//!    otherwise it is refused, saying which of these failed. Never silently dropped.
//!
//! Refusals are messages for the user: the face keeps the prompt and shows why.

use serde::{Deserialize, Serialize};

/// Text embedded in a prompt at most (bytes of UTF-8): a bigger file goes as a link.
pub const MAX_EMBED_BYTES: u64 = 256 * 1024;
/// An image's bytes at most (decoded).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Image types sent as `image` blocks.
pub const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The agent's `promptCapabilities` (absent fields: false, as the spec says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// `image` content blocks are accepted.
    #[serde(default)]
    pub image: bool,
    /// `audio` content blocks are accepted (no attachment is sent as audio yet).
    #[serde(default)]
    pub audio: bool,
    /// Embedded `resource` blocks are accepted (a file's or selection's text in the prompt).
    #[serde(default)]
    pub embedded_context: bool,
}

/// Lines of a file, 1-based and inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lines {
    /// The first line.
    pub start: u32,
    /// The last line (equal to `start` for one line).
    pub end: u32,
}

/// What the user attached, as the face found it (read from JSON by [`Attachment::from_json`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attachment {
    /// A workspace file. `text`: its content when the face read it as UTF-8 text (it need not
    /// read more than [`MAX_EMBED_BYTES`] + 1 bytes), `null` otherwise; `size`: its bytes.
    File {
        /// The file's URI (`file:///…`).
        uri: String,
        /// Its name for the user and the link (usually the file name).
        name: String,
        /// Its media type, when the face knows it.
        mime_type: Option<String>,
        /// Its size in bytes, when known.
        size: Option<u64>,
        /// Its content, when read as UTF-8 text; `None` when it is not text or was not read.
        text: Option<String>,
    },
    /// A symbol from the workspace symbol search: its file and line.
    Symbol {
        /// The URI of the symbol's file.
        uri: String,
        /// The symbol's name (the link's title says it with the line).
        name: String,
        /// The line the symbol is on, 1-based.
        line: u32,
    },
    /// The editor's selection.
    Selection {
        /// The URI of the selection's file.
        uri: String,
        /// The file's name for the user.
        name: String,
        /// The selected lines.
        lines: Lines,
        /// The selected text.
        text: String,
        /// The editor's language id (`rust`, `python`…), used for the fence of a text block.
        language: Option<String>,
    },
    /// A pasted or picked image: base64 data.
    Image {
        /// A name for the user's messages (the file name, or what the face calls a pasted image).
        name: String,
        /// Its media type (`image/png`…).
        mime_type: String,
        /// The image's bytes, base64-encoded.
        data: String,
    },
}

impl Attachment {
    /// Reads `{"kind": "file" | "symbol" | "selection" | "image", …}` (the JSON the case table
    /// and the faces use; camelCase fields, optional ones absent or null). Hand-written rather
    /// than derived: the wasm build stays smaller.
    pub fn from_json(v: &serde_json::Value) -> Result<Attachment, String> {
        let s = |k: &str| -> Result<String, String> {
            v.get(k)
                .and_then(|x| x.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("attachment: \"{k}\" must be a string"))
        };
        let opt_s = |k: &str| -> Result<Option<String>, String> {
            match v.get(k) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(x)) => Ok(Some(x.clone())),
                Some(_) => Err(format!("attachment: \"{k}\" must be a string or null")),
            }
        };
        let num = |x: Option<&serde_json::Value>, k: &str| -> Result<u64, String> {
            x.and_then(|n| n.as_u64())
                .ok_or_else(|| format!("attachment: \"{k}\" must be a non-negative integer"))
        };
        let line = |x: Option<&serde_json::Value>, k: &str| -> Result<u32, String> {
            u32::try_from(num(x, k)?).map_err(|_| format!("attachment: \"{k}\" is too large"))
        };
        match v.get("kind").and_then(|k| k.as_str()) {
            Some("file") => Ok(Attachment::File {
                uri: s("uri")?,
                name: s("name")?,
                mime_type: opt_s("mimeType")?,
                size: match v.get("size") {
                    None | Some(serde_json::Value::Null) => None,
                    x => Some(num(x, "size")?),
                },
                text: opt_s("text")?,
            }),
            Some("symbol") => Ok(Attachment::Symbol {
                uri: s("uri")?,
                name: s("name")?,
                line: line(v.get("line"), "line")?,
            }),
            Some("selection") => {
                let lines = v.get("lines");
                Ok(Attachment::Selection {
                    uri: s("uri")?,
                    name: s("name")?,
                    lines: Lines {
                        start: line(lines.and_then(|l| l.get("start")), "lines.start")?,
                        end: line(lines.and_then(|l| l.get("end")), "lines.end")?,
                    },
                    text: s("text")?,
                    language: opt_s("language")?,
                })
            }
            Some("image") => Ok(Attachment::Image {
                name: s("name")?,
                mime_type: s("mimeType")?,
                data: s("data")?,
            }),
            _ => Err(
                "attachment: \"kind\" must be \"file\", \"symbol\", \"selection\" or \"image\""
                    .to_string(),
            ),
        }
    }
}

/// The block to send (the wire `ContentBlock`), or why the attachment cannot be sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Send this content block (a JSON object: `text`, `resource`, `resource_link` or `image`).
    Block(serde_json::Value),
    /// Do not send the attachment: this message, for the user, says why.
    Refuse(String),
}

/// The content block for `attachment` given the agent's capabilities.
pub fn attach(caps: PromptCapabilities, attachment: &Attachment) -> Decision {
    use serde_json::json;
    match attachment {
        Attachment::File {
            uri,
            name,
            mime_type,
            size,
            text,
        } => {
            let embeddable = text.as_ref().filter(|t| {
                t.len() as u64 <= MAX_EMBED_BYTES && size.is_none_or(|s| s <= MAX_EMBED_BYTES)
            });
            match embeddable {
                Some(text) if caps.embedded_context => {
                    let mut resource = json!({ "uri": uri, "text": text });
                    if let Some(m) = mime_type {
                        resource["mimeType"] = json!(m);
                    }
                    Decision::Block(json!({ "type": "resource", "resource": resource }))
                }
                _ => {
                    let mut link = json!({ "type": "resource_link", "uri": uri, "name": name });
                    if let Some(m) = mime_type {
                        link["mimeType"] = json!(m);
                    }
                    if let Some(s) = size {
                        link["size"] = json!(s);
                    }
                    Decision::Block(link)
                }
            }
        }
        Attachment::Symbol { uri, name, line } => Decision::Block(json!({
            "type": "resource_link",
            "uri": format!("{}#L{line}", without_fragment(uri)),
            "name": name,
            "title": format!("{name} (line {line})"),
        })),
        Attachment::Selection {
            uri,
            name,
            lines,
            text,
            language,
        } => {
            if text.len() as u64 > MAX_EMBED_BYTES {
                return Decision::Refuse(format!(
                    "the selection in {name} is {} bytes, more than a prompt embeds ({MAX_EMBED_BYTES}): select less, or mention the file with @",
                    text.len()
                ));
            }
            let range = if lines.start == lines.end {
                format!("L{}", lines.start)
            } else {
                format!("L{}-{}", lines.start, lines.end)
            };
            if caps.embedded_context {
                Decision::Block(json!({
                    "type": "resource",
                    "resource": { "uri": format!("{}#{range}", without_fragment(uri)), "text": text },
                }))
            } else {
                let fence = fence_for(text);
                let lang = language.as_deref().unwrap_or("");
                let where_ = if lines.start == lines.end {
                    format!("line {}", lines.start)
                } else {
                    format!("lines {}-{}", lines.start, lines.end)
                };
                Decision::Block(json!({
                    "type": "text",
                    "text": format!("{name} ({where_}):\n{fence}{lang}\n{text}\n{fence}"),
                }))
            }
        }
        Attachment::Image {
            name,
            mime_type,
            data,
        } => {
            if !caps.image {
                return Decision::Refuse(format!(
                    "{name} not sent: this agent does not accept images (it does not advertise promptCapabilities.image)"
                ));
            }
            if !IMAGE_TYPES.contains(&mime_type.as_str()) {
                return Decision::Refuse(format!(
                    "{name} not sent: {mime_type} is not an image type agents read (PNG, JPEG, GIF or WebP)"
                ));
            }
            let bytes = base64_len(data);
            if bytes > MAX_IMAGE_BYTES {
                return Decision::Refuse(format!(
                    "{name} not sent: {bytes} bytes, more than {MAX_IMAGE_BYTES} (5 MiB)"
                ));
            }
            Decision::Block(json!({ "type": "image", "mimeType": mime_type, "data": data }))
        }
    }
}

fn without_fragment(uri: &str) -> &str {
    uri.split('#').next().unwrap_or(uri)
}

/// A backtick fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The decoded length of base64 `data` (padding and whitespace ignored).
fn base64_len(data: &str) -> u64 {
    let n = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count() as u64;
    n * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_attachments_are_named() {
        let e = |v: serde_json::Value| Attachment::from_json(&v).unwrap_err();
        assert_eq!(
            e(serde_json::json!({"kind": "video"})),
            "attachment: \"kind\" must be \"file\", \"symbol\", \"selection\" or \"image\""
        );
        assert_eq!(
            e(serde_json::json!({"kind": "file", "uri": "u"})),
            "attachment: \"name\" must be a string"
        );
        assert_eq!(
            e(serde_json::json!({"kind": "symbol", "uri": "u", "name": "n", "line": -1})),
            "attachment: \"line\" must be a non-negative integer"
        );
        assert_eq!(
            e(serde_json::json!({"kind": "file", "uri": "u", "name": "n", "size": "big"})),
            "attachment: \"size\" must be a non-negative integer"
        );
    }

    #[test]
    fn fences_outgrow_the_text() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len("aGk="), 2);
        assert_eq!(base64_len("aGVsbG8h"), 6);
        assert_eq!(base64_len(""), 0);
    }

    // The limits' edges (kept out of tests/client/prompt.json: a 256 KiB row).
    #[test]
    fn text_over_the_embed_limit() {
        let caps = PromptCapabilities {
            embedded_context: true,
            ..Default::default()
        };
        let at = "x".repeat(MAX_EMBED_BYTES as usize);
        let over = "x".repeat(MAX_EMBED_BYTES as usize + 1);
        let file = |text: &str| Attachment::File {
            uri: "file:///w/a".into(),
            name: "a".into(),
            mime_type: None,
            size: None,
            text: Some(text.into()),
        };
        let kind = |d: Decision| match d {
            Decision::Block(b) => b["type"].as_str().unwrap().to_string(),
            Decision::Refuse(r) => format!("refuse: {r}"),
        };
        assert_eq!(kind(attach(caps, &file(&at))), "resource");
        assert_eq!(kind(attach(caps, &file(&over))), "resource_link");
        let selection = |text: &str| Attachment::Selection {
            uri: "file:///w/a".into(),
            name: "a".into(),
            lines: Lines { start: 1, end: 2 },
            text: text.into(),
            language: None,
        };
        assert_eq!(kind(attach(caps, &selection(&at))), "resource");
        assert!(kind(attach(caps, &selection(&over)))
            .starts_with("refuse: the selection in a is 262145 bytes"));
        let image = |data: String| Attachment::Image {
            name: "i.png".into(),
            mime_type: "image/png".into(),
            data,
        };
        let img = PromptCapabilities {
            image: true,
            ..Default::default()
        };
        let max = "A".repeat((MAX_IMAGE_BYTES / 3 * 4) as usize);
        assert_eq!(kind(attach(img, &image(max.clone()))), "image");
        assert!(kind(attach(img, &image(max + "AAAA"))).contains("more than 5242880"));
    }
}
