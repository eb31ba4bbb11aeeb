//! Files sent with a prompt: `@path` mentions in its text and files named with `/attach FILE`.
//! Which content block each becomes (an embedded `resource`, a `resource_link`, an `image`) or
//! whether it is refused is acp-client's decision (`prompt::attach`, the extension's
//! `attachToPrompt`, tests/client/prompt.json) from the agent's `promptCapabilities`; here the
//! file is found and read.
//!
//! Only files inside the session's directory are attached (symbolic links resolved): a path
//! outside it, a directory, a file that cannot be read or an image over acp-client's limit is an
//! error for the user, and the prompt is not sent (Up recalls it). A text file is read up to
//! [`MAX_EMBED_BYTES`] + 1 bytes; an image is read only when its size is within
//! [`MAX_IMAGE_BYTES`].

use std::io::Read;
use std::path::{Path, PathBuf};

use acp_client::display::escape_line;
use acp_client::prompt::{
    self, Attachment, Decision, PromptCapabilities, MAX_EMBED_BYTES, MAX_IMAGE_BYTES,
};
use agent_client_protocol_schema::v1 as s;
use base64::Engine as _;

/// A file to attach: `named` as the user wrote it, its real path inside the session directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Attached {
    pub(super) named: String,
    pub(super) path: PathBuf,
}

/// The `@path` mentions of a prompt, as written (without the `@`): a word starting with `@`.
/// Punctuation ending a sentence after it is not part of the path.
pub(super) fn mentions(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', ';', ':', '!', '?', ')', '"', '\'']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Nothing is at `named` (relative to `cwd`), nor at it without a sentence's final `.`: the
/// mention is text, not a file (a file that exists but cannot be sent is refused instead).
fn names_nothing(cwd: &Path, named: &str) -> bool {
    let missing = |n: &str| matches!(std::fs::symlink_metadata(cwd.join(n)), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    missing(named) && (!named.ends_with('.') || missing(named.trim_end_matches('.')))
}

/// Finds `named` (relative to `cwd`, or absolute) inside the session directory `cwd`.
pub(super) fn resolve(cwd: &Path, named: &str) -> Result<Attached, String> {
    let shown = escape_line(named);
    let joined = cwd.join(named);
    let path = match std::fs::canonicalize(&joined) {
        Ok(p) => p,
        // `@file.` at the end of a sentence: the file without the dot.
        Err(_) if named.ends_with('.') => {
            return resolve(cwd, named.trim_end_matches('.'))
                .map_err(|_| format!("{shown}: no such file"));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{shown}: no such file"));
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    if !path.starts_with(&root) {
        return Err(format!(
            "{shown} is outside the session directory ({}): only its files are attached",
            escape_line(&root.display().to_string())
        ));
    }
    if path.is_dir() {
        return Err(format!("{shown} is a directory: attach its files"));
    }
    Ok(Attached {
        named: named.to_string(),
        path,
    })
}

/// The media type of an image, from its first bytes (PNG, JPEG, GIF, WebP), or `None`.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A `file://` URI for an absolute path (bytes outside the unreserved set and `/`
/// percent-encoded).
pub(super) fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    // Windows: `C:\a\b` is `file:///C:/a/b` (`\\?\` already removed by the caller's path).
    #[cfg(not(unix))]
    let bytes = {
        let text = path.to_string_lossy().replace('\\', "/");
        if text.starts_with('/') {
            text
        } else {
            format!("/{text}")
        }
        .into_bytes()
    };
    for &b in &bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) || (cfg!(not(unix)) && b == b':') {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The content block for `a` as acp-client decides from the agent's capabilities, and a note
/// for the user when the file goes as a link instead of its text; `Err`: why it is not sent.
pub(super) fn block(
    caps: PromptCapabilities,
    a: &Attached,
) -> Result<(s::ContentBlock, Option<String>), String> {
    let shown = escape_line(&a.named);
    let cannot = |e: std::io::Error| format!("cannot read {shown}: {e}");
    let file = std::fs::File::open(&a.path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let mut head = Vec::new();
    let limit = MAX_EMBED_BYTES.max(16) + 1;
    file.take(limit).read_to_end(&mut head).map_err(cannot)?;
    let attachment = match image_type(&head) {
        Some(mime) => {
            if size > MAX_IMAGE_BYTES {
                return Err(format!(
                    "{shown} not sent: {size} bytes, more than {MAX_IMAGE_BYTES} (5 MiB)"
                ));
            }
            let bytes = std::fs::read(&a.path).map_err(cannot)?;
            Attachment::Image {
                name: a.named.clone(),
                mime_type: mime.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            }
        }
        None => {
            let text = (head.len() as u64 <= MAX_EMBED_BYTES && !head.contains(&0))
                .then(|| String::from_utf8(head).ok())
                .flatten();
            Attachment::File {
                uri: file_uri(&a.path),
                name: a.named.clone(),
                mime_type: None,
                size: Some(size),
                text,
            }
        }
    };
    match prompt::attach(caps, &attachment) {
        Decision::Refuse(why) => Err(escape_line(&why)),
        Decision::Block(b) => {
            let note = (b["type"] == "resource_link").then(|| {
                let why = if !caps.embedded_context {
                    "the agent does not take embedded files"
                } else if size > MAX_EMBED_BYTES {
                    "larger than a prompt embeds (256 KiB)"
                } else {
                    "not text"
                };
                format!("{shown} is sent as a link the agent reads itself ({why})")
            });
            let block = serde_json::from_value(b)
                .map_err(|e| format!("{shown}: not a content block: {e}"))?;
            Ok((block, note))
        }
    }
}

/// Attachments of one prompt kept in the conversation's record at most (the rest are counted).
pub(super) const MAX_RECORDED: usize = 64;

/// How a prompt's files are kept in the conversation's record (the thread's user entry, saved
/// after each turn): each a `resource_link` naming the file (its URI, name and media type),
/// never its content, so the record stays small (a prompt's files can be 5 MiB images; the file
/// itself is where it was); at most [`MAX_RECORDED`], then one text block counting the rest.
pub(super) fn recorded(blocks: &[s::ContentBlock]) -> Vec<acp_client::thread::Block> {
    let mut out: Vec<acp_client::thread::Block> = blocks
        .iter()
        .take(MAX_RECORDED)
        .map(|b| {
            let v = serde_json::to_value(b).unwrap_or_default();
            let field = |v: &serde_json::Value, k: &str| v[k].as_str().map(str::to_string);
            let uri = field(&v, "uri").or_else(|| field(&v["resource"], "uri"));
            let mime_type = field(&v, "mimeType").or_else(|| field(&v["resource"], "mimeType"));
            let name = field(&v, "name")
                .or_else(|| {
                    let uri = uri.as_deref()?;
                    Some(uri.rsplit('/').next().unwrap_or(uri).to_string())
                })
                .unwrap_or_else(|| v["type"].as_str().unwrap_or("file").to_string());
            acp_client::thread::Block {
                kind: "resource_link".into(),
                uri,
                name: Some(name),
                mime_type,
                ..acp_client::thread::Block::default()
            }
        })
        .collect();
    if blocks.len() > MAX_RECORDED {
        out.push(acp_client::thread::Block::text(format!(
            "(+{} more files attached)",
            blocks.len() - MAX_RECORDED
        )));
    }
    out
}

/// The files attached to the prompts of a saved conversation (its record's thread), once each,
/// in order: what the recap of a resumed chat names.
pub(super) fn recorded_names(thread: &acp_client::thread::Thread) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for e in &thread.entries {
        if let acp_client::thread::Entry::User { content, .. } = e {
            for b in content.iter().filter(|b| b.kind == "resource_link") {
                if let Some(n) = &b.name {
                    if !names.contains(n) {
                        names.push(n.clone());
                    }
                }
            }
        }
    }
    names
}

impl super::Chat {
    /// `/attach [FILE]`: FILE is sent with the next prompt (checked now: it must be a readable
    /// file in the session directory); without FILE, what is attached.
    pub(super) fn attach_command(&mut self, arg: &str) {
        if arg.is_empty() {
            if self.attached.is_empty() {
                self.ui
                    .notice("nothing attached (/attach FILE sends FILE with your next prompt)");
            } else {
                let names: Vec<String> = self
                    .attached
                    .iter()
                    .map(|a| escape_line(&a.named))
                    .collect();
                self.ui.notice(&format!(
                    "attached to your next prompt: {}",
                    names.join(", ")
                ));
            }
            return;
        }
        let checked = resolve(&self.session.cwd, arg)
            .and_then(|a| block(self.session.prompt_caps, &a).map(|(_, note)| (a, note)));
        match checked {
            Ok((a, note)) => {
                if let Some(note) = note {
                    self.ui.notice(&note);
                }
                self.ui.notice(&format!(
                    "attached {} (sent with your next prompt)",
                    escape_line(arg)
                ));
                if !self.attached.contains(&a) {
                    self.attached.push(a);
                }
            }
            Err(why) => self.ui.warn(&format!("/attach: {why}; not attached")),
        }
    }

    /// The content blocks of the prompt's files: those named with `/attach`, then its `@path`
    /// mentions. `None`: one of them cannot be sent (the user is told; nothing is sent, the
    /// attached files stay attached).
    pub(super) fn prompt_files(&mut self, text: &str) -> Option<Vec<s::ContentBlock>> {
        let mut files = self.attached.clone();
        let mut failed = false;
        for named in mentions(text) {
            if names_nothing(&self.session.cwd, named) {
                // `@john`, an address, a typo: the words go as they are, and the user sees why.
                self.ui.notice(&format!(
                    "@{} names no file in the session directory: sent as text",
                    escape_line(named)
                ));
                continue;
            }
            match resolve(&self.session.cwd, named) {
                Ok(a) if files.iter().any(|f| f.path == a.path) => {}
                Ok(a) => files.push(a),
                Err(why) => {
                    self.ui.warn(&format!("@{why}"));
                    failed = true;
                }
            }
        }
        let mut blocks = Vec::new();
        for a in &files {
            match block(self.session.prompt_caps, a) {
                Ok((b, note)) => {
                    if let Some(note) = note {
                        self.ui.notice(&note);
                    }
                    blocks.push(b);
                }
                Err(why) => {
                    self.ui.warn(&why);
                    failed = true;
                }
            }
        }
        if failed {
            self.ui.warn(
                "the prompt was not sent (Up recalls it; write a path in the session directory)",
            );
            return None;
        }
        self.attached.clear();
        Some(blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompts_files_are_recorded_as_links_without_content_and_bounded() {
        let link = |i: usize| -> s::ContentBlock {
            serde_json::from_value(serde_json::json!({
                "type": "resource",
                "resource": {"uri": format!("file:///w/f{i}.txt"), "text": "big content"}
            }))
            .unwrap()
        };
        let image: s::ContentBlock = serde_json::from_value(
            serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        )
        .unwrap();
        let r = recorded(&[link(0), image]);
        assert_eq!(r[0].kind, "resource_link");
        assert_eq!(r[0].uri.as_deref(), Some("file:///w/f0.txt"));
        assert_eq!(r[0].name.as_deref(), Some("f0.txt"));
        assert_eq!(r[0].resource, None);
        assert_eq!(
            (r[1].name.as_deref(), r[1].data.as_deref()),
            (Some("image"), None)
        );
        let many: Vec<s::ContentBlock> = (0..MAX_RECORDED + 6).map(link).collect();
        let r = recorded(&many);
        assert_eq!(r.len(), MAX_RECORDED + 1);
        assert_eq!(
            r[MAX_RECORDED].text.as_deref(),
            Some("(+6 more files attached)")
        );
    }

    #[test]
    fn mentions_are_words_starting_with_an_at() {
        assert_eq!(
            mentions("see @src/a.rs, and @b.txt! not a@b.com @"),
            ["src/a.rs", "b.txt"]
        );
    }

    #[test]
    fn files_outside_the_directory_are_refused() {
        let dir = std::env::temp_dir().join(format!("acp-attach-{}", std::process::id()));
        let inside = dir.join("w");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(dir.join("secret"), "s").unwrap();
        std::fs::write(inside.join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), inside.join("link")).unwrap();
        assert!(resolve(&inside, "a.txt").is_ok());
        assert!(resolve(&inside, "a.txt.").is_ok());
        for named in ["../secret", "link"] {
            let e = resolve(&inside, named).unwrap_err();
            assert!(e.contains("is outside the session directory"), "{e}");
        }
        assert_eq!(resolve(&inside, "nope").unwrap_err(), "nope: no such file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn uris_encode_what_is_not_plain() {
        assert_eq!(file_uri(Path::new("/w/a b%.txt")), "file:///w/a%20b%25.txt");
    }

    #[test]
    fn blocks_follow_acp_clients_decision_and_bad_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("acp-attach-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let at = |name: &str| Attached {
            named: name.to_string(),
            path: dir.join(name),
        };
        let all = PromptCapabilities {
            image: true,
            audio: false,
            embedded_context: true,
        };
        let kind = |r: &Result<(s::ContentBlock, Option<String>), String>| match r {
            Ok((b, _)) => serde_json::to_value(b).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string(),
            Err(e) => format!("error: {e}"),
        };
        std::fs::write(dir.join("a.txt"), "text\n").unwrap();
        assert_eq!(kind(&block(all, &at("a.txt"))), "resource");
        // Without embeddedContext: a link, and the user is told why.
        let r = block(PromptCapabilities::default(), &at("a.txt"));
        assert_eq!(kind(&r), "resource_link");
        assert!(r
            .unwrap()
            .1
            .unwrap()
            .contains("does not take embedded files"));
        // Over the embed limit: a link.
        std::fs::write(
            dir.join("big.txt"),
            "x".repeat(MAX_EMBED_BYTES as usize + 1),
        )
        .unwrap();
        let r = block(all, &at("big.txt"));
        assert_eq!(kind(&r), "resource_link");
        assert!(r
            .unwrap()
            .1
            .unwrap()
            .contains("larger than a prompt embeds"));
        // Images: sent when the agent takes them, refused otherwise or over 5 MiB (not read).
        std::fs::write(dir.join("p.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
        assert_eq!(kind(&block(all, &at("p.png"))), "image");
        assert!(kind(&block(PromptCapabilities::default(), &at("p.png")))
            .contains("this agent does not accept images"));
        let huge = std::fs::File::create(dir.join("huge.png")).unwrap();
        use std::io::Write;
        (&huge).write_all(b"\x89PNG\r\n\x1a\n").unwrap();
        huge.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        assert_eq!(
            kind(&block(all, &at("huge.png"))),
            "error: huge.png not sent: 5242881 bytes, more than 5242880 (5 MiB)"
        );
        // Gone since it was attached.
        assert!(kind(&block(all, &at("gone.txt"))).starts_with("error: cannot read gone.txt: "));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
