//! The title a list of sessions shows (`acp sessions`, the extension's history).

use crate::display::escape_line;
use crate::thread::{Entry, Thread};

/// Most characters of a title.
pub const MAX_TITLE_CHARS: usize = 80;

/// The session's title: the agent's (`session_info_update`), else the first prompt's text;
/// its first line that is not blank, trimmed, cut to [`MAX_TITLE_CHARS`] (the last one `…`),
/// hidden characters escaped ([`escape_line`]); `(no prompt yet)` when there is neither.
pub fn list_title(thread: &Thread) -> String {
    let first_line = |text: &str| -> Option<String> {
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        let cut = if line.chars().count() > MAX_TITLE_CHARS {
            let mut s: String = line.chars().take(MAX_TITLE_CHARS - 1).collect();
            s.push('…');
            s
        } else {
            line.to_string()
        };
        Some(escape_line(&cut))
    };
    if let Some(t) = thread.title.as_deref().and_then(first_line) {
        return t;
    }
    thread
        .entries
        .iter()
        .find_map(|e| match e {
            Entry::User { content, .. } => content
                .iter()
                .find_map(|b| b.text.as_deref().and_then(first_line)),
            _ => None,
        })
        .unwrap_or_else(|| "(no prompt yet)".to_string())
}
