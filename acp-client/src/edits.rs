//! The record of a turn's edits, for review and undo: every file the agent wrote through
//! `fs/write_text_file` during a turn, with its text before the agent's first write of the turn
//! and after its last. Faces show it (`acp chat`'s `/diff`, the extension's list of edits) and
//! undo from it (`/undo`, the extension's Undo): [`EditRecord::undo`] decides, the face carries
//! it out and then calls [`EditRecord::undone`].
//!
//! The rules (`tests/client/edits.json` is the case table):
//! 1. Undo puts back the text from before the agent's first write of the turn; a file the agent
//!    created is removed.
//! 2. Undo refuses when the file changed since the agent's last write (its text now is not the
//!    text the agent left, or it is gone): the user's edits are never thrown away silently.
//!    `force` (the user confirmed) undoes anyway (a file deleted since is written back with its
//!    earlier text); a created file already gone needs nothing.
//! 3. A file whose earlier text was not readable as text (binary, too large to read) cannot be
//!    undone; neither can a file whose texts did not fit the record's budget.
//!
//! Memory: the texts kept are at most [`MAX_RECORD_BYTES`] in all; a write past that budget
//! keeps the file listed (with its path and number of writes) but drops its texts, and undo of
//! it is refused as [`Refusal::NotKept`].

use serde::{Deserialize, Serialize};

/// The texts a record keeps at most (bytes, before and after texts of every file together).
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// The file before the agent's first write of the turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "text")]
pub enum Prior {
    /// It did not exist: the agent created it.
    Missing,
    /// This text.
    Text(String),
    /// It existed, but its content was not read as text (binary, too large).
    Unreadable,
}

/// One file the agent wrote during the turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditedFile {
    /// The path the write reached.
    pub path: String,
    /// Before the agent's first write; `None` when the record's budget did not keep it.
    pub before: Option<Prior>,
    /// The text the agent's last write left; `None` when the budget did not keep it.
    pub after: Option<String>,
    /// Writes to this file this turn.
    pub writes: u32,
}

impl EditedFile {
    /// The agent created the file this turn.
    pub fn created(&self) -> bool {
        self.before == Some(Prior::Missing)
    }

    fn bytes(&self) -> usize {
        let before = match &self.before {
            Some(Prior::Text(t)) => t.len(),
            _ => 0,
        };
        before + self.after.as_ref().map_or(0, String::len)
    }
}

/// Why an undo is not done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The agent did not write this file this turn.
    Unknown,
    /// The file changed since the agent's last write (or it is gone).
    ChangedSince,
    /// Its earlier text was not read as text: there is nothing to put back.
    Unreadable,
    /// Its texts did not fit the record's budget ([`MAX_RECORD_BYTES`]).
    NotKept,
}

impl Refusal {
    /// The reason in words, for `path`.
    pub fn describe(self, path: &str) -> String {
        let path = crate::display::escape_line(path);
        match self {
            Refusal::Unknown => format!("{path}: the agent did not write it in the last turn"),
            Refusal::ChangedSince => format!(
                "{path} changed since the agent wrote it: not undone (your changes are kept)"
            ),
            Refusal::Unreadable => format!(
                "{path}: its text before the agent's write was not readable as text; nothing to put back"
            ),
            Refusal::NotKept => format!(
                "{path}: the turn's edits were too large to keep ({} MiB at most); not undone",
                MAX_RECORD_BYTES >> 20
            ),
        }
    }
}

/// What undoing one file takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "undo")]
pub enum UndoStep {
    /// Write this text back.
    Restore {
        /// The text before the agent's first write of the turn.
        text: String,
    },
    /// Remove the file (the agent created it).
    Remove,
    /// Nothing to do (a created file that is gone already).
    Nothing,
    /// Not undone.
    Refuse {
        /// Why.
        reason: Refusal,
    },
}

/// What undoing one file takes, by the module's rules, from what is known of it: its text
/// before the agent's first write (`None`: not kept), what the agent's last write left (`None`:
/// not kept) and its text `now` (`None`: it does not exist, or is not text). `force`: the user
/// confirmed undoing even though it changed since. [`EditRecord::undo`] decides with it; a face
/// that keeps its own per-file state (the extension's review, where accepted changes move into
/// the "before" text, and its checkpoints) calls it directly, so one rule decides for both.
pub fn undo_step(
    before: Option<&Prior>,
    after: Option<&str>,
    now: Option<&str>,
    force: bool,
) -> UndoStep {
    let (Some(before), Some(after)) = (before, after) else {
        return UndoStep::Refuse {
            reason: Refusal::NotKept,
        };
    };
    if *before == Prior::Unreadable {
        return UndoStep::Refuse {
            reason: Refusal::Unreadable,
        };
    }
    if !force && now != Some(after) {
        // A created file removed since: nothing left to undo.
        if now.is_none() && *before == Prior::Missing {
            return UndoStep::Nothing;
        }
        // Anything else, a file deleted since included: the user's change is not undone
        // silently (a forced undo writes the earlier text back).
        return UndoStep::Refuse {
            reason: Refusal::ChangedSince,
        };
    }
    match before {
        Prior::Text(t) => UndoStep::Restore { text: t.clone() },
        Prior::Missing if now.is_none() => UndoStep::Nothing,
        _ => UndoStep::Remove,
    }
}

/// The edits of one turn (see the module's rules). Bounded by [`MAX_RECORD_BYTES`].
#[derive(Clone, Debug, Default)]
pub struct EditRecord {
    files: Vec<EditedFile>,
    bytes: usize,
}

impl EditRecord {
    /// An empty record.
    pub fn new() -> EditRecord {
        EditRecord::default()
    }

    /// A write is applied to `path`: `before` is what the file held just before it, `after` the
    /// text written. The first write of a turn keeps `before`; every write keeps `after`.
    pub fn record(&mut self, path: &str, before: Prior, after: &str) {
        if let Some(i) = self.files.iter().position(|f| f.path == path) {
            let f = &mut self.files[i];
            f.writes = f.writes.saturating_add(1);
            let old = f.after.as_ref().map_or(0, String::len);
            if f.after.is_some() && self.bytes - old + after.len() <= MAX_RECORD_BYTES {
                self.bytes = self.bytes - old + after.len();
                f.after = Some(after.to_string());
            } else {
                self.bytes -= f.bytes();
                f.before = None;
                f.after = None;
            }
            return;
        }
        let mut f = EditedFile {
            path: path.to_string(),
            before: Some(before),
            after: Some(after.to_string()),
            writes: 1,
        };
        if self.bytes + f.bytes() > MAX_RECORD_BYTES {
            f.before = None;
            f.after = None;
        }
        self.bytes += f.bytes();
        self.files.push(f);
    }

    /// The files written, in the order first written.
    pub fn files(&self) -> &[EditedFile] {
        &self.files
    }

    /// No file was written.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The bytes of text kept (at most [`MAX_RECORD_BYTES`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keeps the agent's text of `path`: the file leaves the record. `false`: it was not in it.
    pub fn keep(&mut self, path: &str) -> bool {
        match self.files.iter().position(|f| f.path == path) {
            Some(i) => {
                self.bytes -= self.files[i].bytes();
                self.files.remove(i);
                true
            }
            None => false,
        }
    }

    /// Keeps everything (a new turn starts: the last turn's edits are accepted).
    pub fn keep_all(&mut self) {
        self.files.clear();
        self.bytes = 0;
    }

    /// What undoing `path` takes, given its text `now` (`None`: it does not exist, or is not
    /// text). `force`: the user confirmed undoing even though it changed since.
    pub fn undo(&self, path: &str, now: Option<&str>, force: bool) -> UndoStep {
        let Some(f) = self.files.iter().find(|f| f.path == path) else {
            return UndoStep::Refuse {
                reason: Refusal::Unknown,
            };
        };
        undo_step(f.before.as_ref(), f.after.as_deref(), now, force)
    }

    /// The face carried out `path`'s undo: it leaves the record.
    pub fn undone(&mut self, path: &str) {
        self.keep(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bounds_the_texts_kept() {
        let mut r = EditRecord::new();
        let big = "x".repeat(MAX_RECORD_BYTES / 2);
        r.record("/w/a", Prior::Missing, &big);
        assert_eq!(r.bytes(), big.len());
        // Before and after of b together pass the budget: b is listed, its texts dropped.
        r.record("/w/b", Prior::Text(big.clone()), &big);
        assert_eq!(r.bytes(), big.len());
        assert_eq!(r.files()[1].after, None);
        assert_eq!(
            r.undo("/w/b", Some(&big), false),
            UndoStep::Refuse {
                reason: Refusal::NotKept
            }
        );
        // A later write to a past the budget drops a's texts too.
        r.record(
            "/w/a",
            Prior::Text(big.clone()),
            &(big.clone() + &big + "y"),
        );
        assert_eq!(r.bytes(), 0);
        assert_eq!(r.files()[0].writes, 2);
        assert_eq!(
            r.undo("/w/a", None, true),
            UndoStep::Refuse {
                reason: Refusal::NotKept
            }
        );
        // Kept files free their bytes.
        r.keep_all();
        r.record("/w/c", Prior::Missing, "c");
        assert_eq!(r.bytes(), 1);
        assert!(r.keep("/w/c"));
        assert_eq!(r.bytes(), 0);
        assert!(!r.keep("/w/c"));
    }

    #[test]
    fn refusals_name_the_file() {
        assert_eq!(
            Refusal::ChangedSince.describe("/w/a\nb"),
            "/w/a\\nb changed since the agent wrote it: not undone (your changes are kept)"
        );
    }
}
