//! The tap's table of requests awaiting a response (for `elapsedMs` and the response's
//! `method`), bounded however the peer behaves.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// Requests awaiting a response kept per direction (for `elapsedMs`); the oldest are
/// forgotten beyond (their response is then logged without `method` and `elapsedMs`).
pub(super) const MAX_PENDING: usize = 1024;
/// Longest id or method name kept in the table of pending requests.
pub(super) const MAX_KEPT_TEXT: usize = 256;

/// Requests awaiting a response in one direction: raw id -> (when, method), at most
/// [`MAX_PENDING`] (oldest forgotten first), so that requests never answered, or answered with
/// `id: null`, cannot make it grow without bound.
#[derive(Default)]
pub(super) struct Pending {
    entries: HashMap<String, (Instant, String, u64)>,
    /// Insertion order (sequence number, id); may hold ids since answered or replaced.
    order: VecDeque<(u64, String)>,
    next: u64,
}

impl Pending {
    pub(super) fn insert(&mut self, id: &str, at: Instant, method: &str) {
        if id.len() > MAX_KEPT_TEXT {
            return; // not worth keeping: its response is logged without `elapsedMs`
        }
        let seq = self.next;
        self.next += 1;
        let method = truncate(method, MAX_KEPT_TEXT).to_owned();
        self.entries.insert(id.to_owned(), (at, method, seq));
        self.order.push_back((seq, id.to_owned()));
        while self.entries.len() > MAX_PENDING {
            let Some((seq, id)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&id).is_some_and(|e| e.2 == seq) {
                self.entries.remove(&id);
            }
        }
        if self.order.len() > 4 * MAX_PENDING {
            // Mostly answered ids: keep the order of the live ones only.
            let entries = &self.entries;
            self.order
                .retain(|(seq, id)| entries.get(id).is_some_and(|e| e.2 == *seq));
        }
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<(Instant, String)> {
        self.entries.remove(id).map(|(at, m, _)| (at, m))
    }

    /// Entries and order records held (for tests).
    #[cfg(test)]
    pub(super) fn held(&self) -> (usize, usize) {
        (self.entries.len(), self.order.len())
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(super) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
