//! This directory's record of the conversation (`cli::records`): saved after each turn, taken
//! back (the session engine's saved conversation) by `--resume`.

use std::path::Path;

use acp_client::session::Intent;

use crate::cli::records;
use crate::cli::render::Ui;

use super::session::Session;

/// What the recap of a resumed conversation says of its record.
pub(super) struct Recap {
    title: String,
    updated_at: u64,
    /// The files attached to its prompts (their names, once each).
    files: Vec<String>,
}

pub(super) struct Record {
    /// The agent as the user named it (for the session record).
    agent_label: String,
    /// Saving the session record failed once (said once).
    warned: bool,
    /// A record of this session was saved (so `--resume` can take it back).
    saved: bool,
}

impl Record {
    pub(super) fn new(agent_label: String) -> Record {
        Record {
            agent_label,
            warned: false,
            saved: false,
        }
    }

    /// What `--resume ID` continues, for acp-client's session engine: the conversation saved
    /// here for that id (its record's thread, which becomes the conversation again), with
    /// the recap to show once the engine took it ([`Record::recap`]); or none: then the engine
    /// refuses the id unless `try_unknown` (`--resume-unknown`). A record that cannot be read
    /// (over the size limit, not a record) is said, and the id tried without it: it was saved
    /// here.
    pub(super) fn resume_intent(
        ui: &Ui,
        cwd: &Path,
        id: &str,
        try_unknown: bool,
    ) -> (Intent, Option<Recap>) {
        let continue_with = |saved, try_unknown| Intent::Continue {
            session_id: id.to_string(),
            saved,
            try_unknown,
            or_new: false,
        };
        match records::find(cwd, id) {
            Ok(Some(record)) => {
                let files = acp_client::thread::Thread::from_json(
                    record.thread.get(),
                    acp_client::thread::Limits::default(),
                )
                .map(|t| super::attach::recorded_names(&t))
                .unwrap_or_default();
                let recap = Recap {
                    title: record.title,
                    updated_at: record.updated_at,
                    files,
                };
                let saved = Some(acp_client::thread::RawJson(record.thread));
                (continue_with(saved, try_unknown), Some(recap))
            }
            Ok(None) => (continue_with(None, try_unknown), None),
            Err(e) => {
                ui.warn(&format!("the saved conversation is not shown: {e}"));
                (continue_with(None, true), None)
            }
        }
    }

    /// The line recalling the conversation taken back by `--resume`.
    pub(super) fn recap(ui: &Ui, recap: &Recap) {
        ui.notice(&format!(
            "{} — {} earlier prompt(s), saved {}",
            acp_client::display::ensure_line(&recap.title),
            ui.prompts(),
            records::when(recap.updated_at)
        ));
        if !recap.files.is_empty() {
            const SHOWN: usize = 10;
            let mut names: Vec<String> = recap
                .files
                .iter()
                .take(SHOWN)
                .map(|n| acp_client::display::escape_line(n))
                .collect();
            if recap.files.len() > SHOWN {
                names.push(format!("(+{})", recap.files.len() - SHOWN));
            }
            ui.notice(&format!("files attached earlier: {}", names.join(", ")));
        }
    }

    /// Saves the conversation as this directory's record of the session (`acp sessions`).
    pub(super) fn save(&mut self, ui: &Ui, session: &Session) {
        if session.id.0.is_empty() {
            return;
        }
        let (title, thread) = ui.thread_record();
        let turns = ui.prompts();
        let saved = records::save(
            &session.cwd,
            &self.agent_label,
            &session.id.0,
            title,
            turns,
            thread,
        );
        self.saved |= saved.is_ok();
        if let Err(e) = saved {
            if !self.warned {
                self.warned = true;
                ui.warn(&format!("cannot save the session record: {e}"));
            }
        }
    }

    /// The command that continues this session, said when the chat ends (once a record of it
    /// was saved): `acp chat --resume ID`, with `--cwd` when it is not the current directory.
    pub(super) fn resume_hint(&self, session: &Session) -> Option<String> {
        if !self.saved {
            return None;
        }
        let here = std::env::current_dir()
            .ok()
            .and_then(|d| crate::os_compat::canonicalize(&d).ok());
        let cwd = if here.as_deref() == Some(session.cwd.as_path()) {
            String::new()
        } else {
            format!("--cwd {} ", shell_word(&session.cwd.to_string_lossy()))
        };
        Some(format!(
            "continue this session with: acp chat {cwd}--resume {} (or acp chat {cwd}-c), with the same agent",
            shell_word(&session.id.0)
        ))
    }
}

/// `word` as a shell reads it: as is when it is plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
