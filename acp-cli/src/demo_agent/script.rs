//! The demo agent's words: its slash commands, the canned answer, and what it reads in a
//! prompt (the text and the attachments it names, the files it mentions, the command in
//! backticks). Pure functions, no IO but looking whether a named file exists.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as s;

/// The slash commands the demo agent offers: (name, description, input hint).
pub const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    (
        "echo",
        "Answer with the given text, and do nothing else",
        Some("text to echo"),
    ),
    (
        "help",
        "List the demo agent's commands and magic words",
        None,
    ),
];

/// The prompt's text blocks, joined; other blocks are named, with what they carry.
pub(super) fn prompt_text(blocks: &[s::ContentBlock]) -> String {
    let mut out = Vec::new();
    for block in blocks {
        match block {
            s::ContentBlock::Text(t) => out.push(t.text.clone()),
            s::ContentBlock::ResourceLink(l) => out.push(format!("[resource_link {}]", l.uri)),
            s::ContentBlock::Resource(r) => out.push(match &r.resource {
                s::EmbeddedResourceResource::TextResourceContents(t) => {
                    format!(
                        "[resource {} ({} characters)]",
                        t.uri,
                        t.text.chars().count()
                    )
                }
                s::EmbeddedResourceResource::BlobResourceContents(b) => {
                    format!("[resource {} (binary)]", b.uri)
                }
                _ => "[resource]".to_string(),
            }),
            s::ContentBlock::Image(i) => out.push(format!(
                "[image {}, {} bytes]",
                i.mime_type,
                i.data.trim_end_matches('=').len() * 3 / 4
            )),
            _ => out.push("[non-text content]".to_string()),
        }
    }
    out.join("\n")
}

/// The `available_commands_update` for a new session.
pub(super) fn commands_update(session_id: s::SessionId) -> s::SessionNotification {
    let commands = COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            let c = s::AvailableCommand::new(*name, *description);
            match hint {
                Some(h) => c.input(s::AvailableCommandInput::Unstructured(
                    s::UnstructuredCommandInput::new(*h),
                )),
                None => c,
            }
        })
        .collect();
    s::SessionNotification::new(
        session_id,
        s::SessionUpdate::AvailableCommandsUpdate(s::AvailableCommandsUpdate::new(commands)),
    )
}

/// The answer to a prompt that is one of [`COMMANDS`] (`/echo TEXT`, `/help`), or None.
pub(super) fn command_reply(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    match name {
        "echo" => Some(arg.trim().to_string()),
        "help" => {
            let mut out = String::from("Commands:\n");
            for (name, description, hint) in COMMANDS {
                let hint = hint.map(|h| format!(" <{h}>")).unwrap_or_default();
                out.push_str(&format!("- /{name}{hint}: {description}\n"));
            }
            out.push_str(
                "Magic words: #refuse, #max-tokens, #mcp, #markdown (a markdown sample), #usage (a \
                 usage_update); a `command` in backticks is what I run.",
            );
            Some(out)
        }
        _ => None,
    }
}

/// The deterministic answer, cut into chunks of a few words.
pub(super) fn answer_chunks(text: &str) -> Vec<String> {
    let answer = format!(
        "Hello from the acp demo agent. You said: \"{}\". I am not a model; I show what an \
         ACP agent can do: plans, streamed text, tool calls, permission requests, files and \
         terminals.",
        text.trim()
    );
    let words: Vec<&str> = answer.split(' ').collect();
    words
        .chunks(4)
        .enumerate()
        .map(|(i, w)| {
            let piece = w.join(" ");
            if i == 0 {
                piece
            } else {
                format!(" {piece}")
            }
        })
        .collect()
}

/// The markdown sample answered to `#markdown` (every construct a client renders).
pub(super) const MARKDOWN_SAMPLE: &str = "\n\n## Markdown sample\n\n\
Some **bold**, *italic* and `inline code`, a [link](https://example.com/acp) and enough \
words in one paragraph that a narrow terminal has to wrap them at word boundaries.\n\n\
- first item\n- second item with `code`\n  - a nested item\n\n\
1. one\n2. two\n\n\
> a quoted line\n\n\
```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\n\
| name | value |\n|------|------:|\n| alpha | 1 |\n| beta | 22 |\n\n\
---\n\nThe end.";

/// [`MARKDOWN_SAMPLE`] cut every 5 characters.
pub(super) fn markdown_chunks() -> Vec<String> {
    let chars: Vec<char> = MARKDOWN_SAMPLE.chars().collect();
    chars.chunks(5).map(|c| c.iter().collect()).collect()
}

/// Existing regular files the prompt names: words that are absolute paths or paths relative
/// to the session's cwd (quotes and trailing punctuation ignored). At most 5.
pub(super) fn files_named_in(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(['"', '\'', '`', '(', ')', '<', '>'])
            .trim_end_matches([',', '.', ';', ':', '?', '!']);
        if word.is_empty() {
            continue;
        }
        let path = Path::new(word);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        if full.is_file() && !out.contains(&full) {
            out.push(full);
        }
        if out.len() == 5 {
            break;
        }
    }
    out
}

/// The command to run: the first `backticked` span of the prompt split on whitespace, or `ls`.
pub(super) fn command_in(text: &str) -> Vec<String> {
    let mut parts = text.split('`');
    if let (Some(_), Some(inner), Some(_)) = (parts.next(), parts.next(), parts.next()) {
        let words: Vec<String> = inner.split_whitespace().map(str::to_string).collect();
        if !words.is_empty() {
            return words;
        }
    }
    vec!["ls".to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_come_from_backticks_or_default_to_ls() {
        assert_eq!(
            command_in("please run `echo hi there`"),
            ["echo", "hi", "there"]
        );
        assert_eq!(command_in("no command"), ["ls"]);
        assert_eq!(command_in("unclosed `echo"), ["ls"]);
        assert_eq!(command_in("empty `` here"), ["ls"]);
    }

    #[test]
    fn slash_commands_answer_alone() {
        assert_eq!(
            command_reply("/echo  hello there ").as_deref(),
            Some("hello there")
        );
        assert_eq!(command_reply("/echo").as_deref(), Some(""));
        let help = command_reply("/help").unwrap();
        assert!(help.contains("- /echo <text to echo>: Answer with the given text"));
        assert!(help.contains("- /help: List"));
        assert_eq!(command_reply("/unknown x"), None);
        assert_eq!(command_reply("not /echo"), None);
        let n = serde_json::to_value(commands_update("s-1".to_string().into())).unwrap();
        assert_eq!(n["update"]["sessionUpdate"], "available_commands_update");
        assert_eq!(n["update"]["availableCommands"][0]["name"], "echo");
        assert_eq!(
            n["update"]["availableCommands"][0]["input"]["hint"],
            "text to echo"
        );
        assert_eq!(n["update"]["availableCommands"][1]["name"], "help");
    }

    #[test]
    fn attachments_are_named_with_what_they_carry() {
        let blocks: Vec<s::ContentBlock> = serde_json::from_value(serde_json::json!([
            { "type": "text", "text": "look at" },
            { "type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs" },
            { "type": "resource", "resource": { "uri": "file:///w/b.rs#L1-2", "text": "fn b() {}" } },
            { "type": "image", "mimeType": "image/png", "data": "aGVsbG8h" },
        ]))
        .unwrap();
        assert_eq!(
            prompt_text(&blocks),
            "look at\n[resource_link file:///w/a.rs]\n[resource file:///w/b.rs#L1-2 (9 characters)]\n[image image/png, 6 bytes]"
        );
    }

    #[test]
    fn answer_is_streamed_in_several_chunks_that_join_back() {
        let chunks = answer_chunks("hi");
        assert!(chunks.len() > 3);
        assert!(chunks.concat().contains("You said: \"hi\""));
    }

    #[test]
    fn files_are_found_relative_to_cwd_and_absolute() {
        let dir = std::env::temp_dir().join(format!("acp-demo-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "x").unwrap();
        let abs = dir.join("a.txt");
        let found = files_named_in(
            &format!("read a.txt, and \"{}\". nope.txt", abs.display()),
            &dir,
        );
        assert_eq!(found, vec![abs]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
