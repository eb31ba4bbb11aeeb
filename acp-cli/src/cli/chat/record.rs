//! This directory's record of the conversation (`cli::sessions`): saved after each turn, shown
//! again and taken back into the thread by `--resume`.

use std::path::Path;

use crate::cli::records;
use crate::cli::render::Ui;

use super::session::Session;

pub(super) struct Record {
    /// The agent as the user named it (for the session record).
    agent_label: String,
    /// Saving the session record failed once (said once).
    warned: bool,
}

impl Record {
    pub(super) fn new(agent_label: String) -> Record {
        Record {
            agent_label,
            warned: false,
        }
    }

    /// After `session/resume`: the conversation saved here becomes the thread again, and its
    /// last exchange is shown.
    pub(super) fn recap(&self, ui: &Ui, cwd: &Path, id: &str) {
        let record = match records::find(cwd, id) {
            Ok(Some(record)) => record,
            Ok(None) => {
                ui.notice("(no saved conversation for this session in this directory)");
                return;
            }
            Err(e) => {
                ui.warn(&format!("the saved conversation is not shown: {e}"));
                return;
            }
        };
        let thread = acp_client::thread::Thread::from_json(
            record.thread.get(),
            acp_client::thread::Limits::default(),
        );
        match thread {
            Ok(thread) => {
                let turns = thread
                    .entries
                    .iter()
                    .filter(|e| matches!(e, acp_client::thread::Entry::User { .. }))
                    .count();
                ui.notice(&format!(
                    "{} — {turns} earlier prompt(s), saved {}",
                    acp_client::display::ensure_line(&record.title),
                    records::when(record.updated_at)
                ));
                ui.set_thread(thread);
            }
            Err(e) => ui.warn(&format!("the saved conversation is unreadable: {e}")),
        }
    }

    /// Saves the conversation as this directory's record of the session (`acp sessions`).
    pub(super) fn save(&mut self, ui: &Ui, session: &Session) {
        if session.id.0.is_empty() {
            return;
        }
        let (title, thread) = ui.thread_record();
        if let Err(e) = records::save(
            &session.cwd,
            &self.agent_label,
            &session.id.0,
            title,
            thread,
        ) {
            if !self.warned {
                self.warned = true;
                ui.warn(&format!("cannot save the session record: {e}"));
            }
        }
    }
}
