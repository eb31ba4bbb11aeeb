//! The thread's byte limit ([`Limits::max_bytes`]): the oldest entries go first, and a lone
//! entry over the limit keeps the end of its text.

use super::*;

impl Thread {
    /// Drops the oldest entries while over the byte limit; a lone entry over it keeps the end
    /// of its text.
    pub(super) fn enforce_limit(&mut self) {
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
                // Its start is gone: the view gets it whole.
                let last = self.next_number() - 1;
                self.changed.insert(last);
            }
            bytes = self.entries.iter().map(Entry::bytes).sum();
        }
        self.bytes = bytes;
    }
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
