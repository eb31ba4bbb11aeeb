//! The agent's writes of the last turn (acp-client's [`EditRecord`], the record the
//! extension's Keep/Undo decides from too), `/diff` showing them and `/undo` reverting them.
//!
//! The record is filled by the `fs/write_text_file` handler as each write is made (the text it
//! replaced, read just before, and the text written) and emptied when a turn starts: `/undo`
//! is always about the last turn. `/undo` first asks acp-client what each file takes; if any
//! file is refused (it changed since the agent wrote it, or its earlier text is unknown),
//! nothing is changed and the user is told why, file by file.

use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_client::display::escape_line;
use acp_client::edits::{EditRecord, Prior, Refusal, UndoStep};
use acp_client::question::{self, Before};
use acp_native::fs_service::Written;

use super::Chat;

/// The record shared by the write handler and the UI loop.
pub(super) type Edits = Arc<Mutex<EditRecord>>;

/// Records a write the agent made.
pub(super) fn record(edits: &Edits, w: &Written) {
    let before = match (&w.old_text, w.existed) {
        (Some(t), _) => Prior::Text(t.clone()),
        (None, true) => Prior::Unreadable,
        (None, false) => Prior::Missing,
    };
    let path = w.path.display().to_string();
    lock(edits).record(&path, before, &w.new_text);
}

fn lock(edits: &Edits) -> std::sync::MutexGuard<'_, EditRecord> {
    edits.lock().unwrap_or_else(|e| e.into_inner())
}

/// A file's text now: `Ok(None)` when it does not exist; `Err` with words for the user when
/// it cannot be read or is not text.
fn text_now(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| "it is no longer text".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read it: {e}")),
    }
}

impl Chat {
    /// `/diff [PATH]`: the changes the agent's writes of the last turn made, as unified diffs.
    pub(super) fn show_edits(&self, arg: &str) {
        let record = lock(&self.edits).clone();
        if record.is_empty() {
            self.ui.notice("the agent wrote no file in the last turn");
            return;
        }
        let mut diffs = Vec::new();
        for f in record.files() {
            if !arg.is_empty() && !self.same_file(&f.path, arg) {
                continue;
            }
            let (Some(before), Some(after)) = (&f.before, &f.after) else {
                self.ui.warn(&Refusal::NotKept.describe(&f.path));
                continue;
            };
            let before = match before {
                Prior::Missing => Before::Missing,
                Prior::Text(t) => Before::Text(t),
                Prior::Unreadable => Before::Unreadable,
            };
            diffs.push(question::diff(&f.path, before, after));
        }
        if diffs.is_empty() && !arg.is_empty() {
            self.ui.warn(&escape_line(&format!(
                "the agent did not write {arg} in the last turn"
            )));
            return;
        }
        self.ui.show_diffs(&diffs);
    }

    /// `/undo [PATH]`: puts back the files the agent wrote in the last turn (or only `PATH`),
    /// removing those it created; refused as a whole when one of them changed since.
    pub(super) fn undo_edits(&mut self, arg: &str) {
        let record = lock(&self.edits).clone();
        if record.is_empty() {
            self.ui
                .notice("nothing to undo: the agent wrote no file in the last turn");
            return;
        }
        let files: Vec<&str> = record
            .files()
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| arg.is_empty() || self.same_file(p, arg))
            .collect();
        if files.is_empty() {
            self.ui.warn(&escape_line(&format!(
                "nothing to undo: the agent did not write {arg} in the last turn"
            )));
            return;
        }
        // Every file's step first: nothing is changed unless all can be undone.
        let mut steps = Vec::new();
        let mut refused = Vec::new();
        for path in files {
            match text_now(Path::new(path)) {
                Ok(now) => match record.undo(path, now.as_deref(), false) {
                    UndoStep::Refuse { reason } => refused.push(reason.describe(path)),
                    step => steps.push((path, step)),
                },
                Err(why) => refused.push(format!("{}: {why}; not undone", escape_line(path))),
            }
        }
        if !refused.is_empty() {
            self.ui.warn("/undo refused; no file was changed:");
            for r in refused {
                self.ui.warn(&format!("  {r}"));
            }
            return;
        }
        for (path, step) in steps {
            let shown = escape_line(path);
            let done = match &step {
                UndoStep::Restore { text } => std::fs::write(path, text).map(|()| "restored"),
                UndoStep::Remove => {
                    std::fs::remove_file(path).map(|()| "removed (the agent created it)")
                }
                UndoStep::Nothing => Ok("already gone"),
                UndoStep::Refuse { .. } => unreachable!("refusals were taken out above"),
            };
            match done {
                Ok(what) => {
                    lock(&self.edits).undone(path);
                    self.ui.notice(&format!("undo: {shown} {what}"));
                }
                Err(e) => self.ui.warn(&format!("undo: {shown}: {e}")),
            }
        }
    }

    /// Whether the recorded `path` is the file the user named (relative to the session's
    /// directory, or absolute).
    fn same_file(&self, path: &str, named: &str) -> bool {
        let named = self.session.cwd.join(named);
        let named = std::fs::canonicalize(&named).unwrap_or(named);
        Path::new(path) == named
    }
}
