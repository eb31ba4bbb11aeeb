//! A text chunk as the official SDKs write one, matched byte for byte before any reader runs
//! (`ReadUpdate::read`): most of what an agent streams is this, and matching it costs about
//! half of reading it in one pass (`read.rs`). Anything else, or anything this match does not
//! take exactly as the readers would (an escape it cannot read, a control character, another
//! order or spacing), is left to them, so every path gives the same update or the same error
//! (tested below on every byte of such a line changed or cut).

use super::model::Block;
use super::wire::{Chunk, ReadUpdate, Update};

/// The three chunk tags.
#[derive(Clone, Copy)]
enum Kind {
    User,
    Agent,
    Thought,
}

/// A text chunk as the official SDKs write one (TypeScript's `JSON.stringify` of the SDK's
/// objects and serde both write these keys in this order, without spaces):
/// `{"sessionId":"…","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",
/// "text":"…"}}}` (or a user or thought chunk), matched byte for byte, its two strings read as
/// serde reads them; anything else is `None`.
pub(super) fn read_plain_text_chunk(params: &str) -> Option<ReadUpdate> {
    let rest = params.strip_prefix(r#"{"sessionId":"#)?;
    let (session_id, rest) = json_string(rest)?;
    let rest = rest.strip_prefix(r#","update":{"sessionUpdate":""#)?;
    let (kind, rest) = [
        (r#"agent_message_chunk""#, Kind::Agent),
        (r#"agent_thought_chunk""#, Kind::Thought),
        (r#"user_message_chunk""#, Kind::User),
    ]
    .into_iter()
    .find_map(|(tag, kind)| Some((kind, rest.strip_prefix(tag)?)))?;
    let rest = rest.strip_prefix(r#","content":{"type":"text","text":"#)?;
    let (text, rest) = json_string(rest)?;
    if rest != "}}}" {
        return None;
    }
    let chunk = Box::new(Chunk {
        content: Block::text(text),
        message_id: None,
    });
    Some(ReadUpdate {
        session_id: Some(session_id),
        update: match kind {
            Kind::User => Update::UserMessageChunk(chunk),
            Kind::Agent => Update::AgentMessageChunk(chunk),
            Kind::Thought => Update::AgentThoughtChunk(chunk),
        },
    })
}

/// The JSON string at the start of `text` (from its opening quote) and what follows it; with
/// escapes, read by serde (which refuses what JSON refuses); `None` when it is not a string.
fn json_string(text: &str) -> Option<(String, &str)> {
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut i = 1;
    loop {
        match *bytes.get(i)? {
            b'"' => break,
            b'\\' => {
                escaped = true;
                i += 2;
            }
            // A control character is not JSON: the general path says so.
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
    // `i` is at the closing quote, an ASCII byte: a character boundary.
    let (quoted, rest) = text.split_at(i + 1);
    let value = if escaped {
        serde_json::from_str(quoted).ok()?
    } else {
        quoted[1..i].to_string()
    };
    Some((value, rest))
}

#[cfg(test)]
mod tests {
    use super::super::{Thread, Update};
    use super::*;

    /// What a thread holds after folding `params` read by `read` (or the error's text).
    fn folded(
        params: &str,
        read: impl Fn(&str) -> Result<ReadUpdate, super::super::BadUpdate>,
    ) -> String {
        match read(params) {
            Ok(r) => {
                let mut t = Thread::default();
                t.fold_read(r);
                t.to_json()
            }
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn every_byte_changed_or_cut_reads_as_the_readers_read_it() {
        let line = r#"{"sessionId":"s\u0031","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"b é"}}}"#;
        let mut variants = Vec::new();
        for (at, _) in line.char_indices() {
            variants.push(line[..at].to_string());
            let next = line[at..].chars().next().map_or(0, char::len_utf8);
            for b in ["\"", "\\", "}", "{", ",", " ", "a", "\u{1}", "é"] {
                variants.push(format!("{}{b}{}", &line[..at], &line[at + next..]));
            }
        }
        for params in &variants {
            assert_eq!(
                folded(params, ReadUpdate::read),
                folded(params, ReadUpdate::read_readers),
                "{params}"
            );
        }
    }

    #[test]
    fn what_is_matched_reads_as_the_readers_read_it() {
        let cases = [
            // matched byte for byte
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"plain"}}}"#,
            r#"{"sessionId":"s\"1","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"\\ \u00e9\n\"q\" é"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":""}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#,
            // left to the readers
            r#"{"update":{"content":{"type":"text","text":"before the tag"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"s"}"#,
            r#"{"sessionId":null,"update":{"sessionUpdate":"user_message_chunk","messageId":"m1","x":[1,{"y":2}],"content":{"type":"image","data":"AA==","mimeType":"image/png"}}}"#,
            r#"{"sessionId":"s\u0031","update":{"session\u0055pdate":"agent_message_chunk","content":{"type":"text","text":"\"esc\"\n"},"messageId":null}}"#,
            r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"no session"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"content":{"type":"text","text":"b"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}"#,
            r#"{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"messageId":7}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":"text"}}"#,
            r#"{"sessionId":"s","update":{"content":{"type":1},"sessionUpdate":"agent_message_chunk"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":7,"content":{"type":"text","text":"a"}}}"#,
            r#"{"sessionId":5,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}"#,
            r#"{"sessionId":"s"}"#,
            r#"{"sessionId":"s","update":[]}"#,
            r#"[]"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}} x"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#,
            // not JSON: a control character in a string, a bad escape, a lone surrogate, no end
            "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"a\nb\"}}}",
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\ud800"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"}}}"#,
        ];
        for (i, params) in cases.iter().enumerate() {
            let fast = read_plain_text_chunk(params);
            assert_eq!(
                fast.is_some(),
                i < 4,
                "case {i} matched byte for byte: {params}"
            );
            if let Some(r) = fast {
                assert!(matches!(
                    r.update,
                    Update::UserMessageChunk(_)
                        | Update::AgentMessageChunk(_)
                        | Update::AgentThoughtChunk(_)
                ));
            }
            assert_eq!(
                folded(params, ReadUpdate::read),
                folded(params, ReadUpdate::read_readers),
                "case {i}: {params}"
            );
        }
    }
}
