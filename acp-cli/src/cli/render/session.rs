//! The session as `acp chat` shows it: acp-client's session engine
//! ([`acp_client::session::Session`]) carried out through [`Ui`] — its steps (the agent
//! initialized, the session opened, an open refused, the agent ended), the notices it words
//! (shown on stderr, each in its level's style), the held updates it draws once the session is
//! open — and the session's state as the thread keeps it: its modes, config options and
//! commands (what `acp chat`'s slash commands show), the record of the conversation, and
//! (feature `unstable`) its status and title.

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::time::Duration;

use acp_client::restart::RestartPolicy;
use acp_client::session::{AfterEnd, AfterFailure, Intent, Notice, Open, Opened, Session};
use acp_client::thread::{Limits, NoticeLevel, Thread};

#[cfg(feature = "unstable")]
use acp_client::display::escape_line;

use super::{Ui, THREAD_BYTES};

/// The conversation as the renderer holds it: acp-client's session engine, which owns the
/// thread. It reads as that thread (`Deref`), so what draws the conversation takes the thread
/// as before.
pub(super) struct Conversation(pub(super) Session);

impl Conversation {
    /// Before `acp chat` knows what it opens: a new session (replaced by [`Ui::start_session`]).
    pub(super) fn new() -> Conversation {
        Conversation(
            Session::new(Intent::New, "", limits(), RestartPolicy::default())
                .expect("a new session is never refused"),
        )
    }
}

impl Deref for Conversation {
    type Target = Thread;
    fn deref(&self) -> &Thread {
        self.0.thread()
    }
}

impl DerefMut for Conversation {
    fn deref_mut(&mut self) -> &mut Thread {
        self.0.thread_mut()
    }
}

fn limits() -> Limits {
    Limits {
        max_bytes: THREAD_BYTES,
    }
}

impl Ui {
    /// The session to open (`--resume`, `--load`, or a new one) in `cwd`, with acp-client's
    /// restart policy (the shared crash budget). `Err`: refused whatever the agent (an id not
    /// saved for this directory, unless tried anyway).
    pub fn start_session(&self, intent: Intent, cwd: &Path) -> Result<(), String> {
        let cwd = cwd.display().to_string();
        let session = Session::new(intent, &cwd, limits(), RestartPolicy::default())?;
        self.lock().thread = Conversation(session);
        Ok(())
    }

    /// `initialize` was answered (its result's JSON text): which request opens the session
    /// (after a restart: how it is re-established). `Err`: it cannot be opened as asked.
    pub fn initialized(&self, result: &str) -> Result<Open, String> {
        self.lock().thread.0.initialized(result)
    }

    /// The `session/prompt` answer (its JSON text), to the session engine: `Some(stop
    /// reason)` when the turn is over (v1: always; v2: only if its idle `state_update` came
    /// already, the answer otherwise only acknowledging the prompt).
    pub fn prompt_answered(&self, result: &str) -> Result<Option<String>, String> {
        self.lock()
            .thread
            .0
            .prompt_answered(result)
            .map_err(|e| e.to_string())
    }

    /// v2: the stop reason once an idle `state_update` ended the turn (the engine's
    /// `turn_ended`); `None` while it runs.
    pub fn turn_ended(&self) -> Option<String> {
        self.lock().thread.0.turn_ended()
    }

    /// Why the last turn failed, as the thread kept it (its newest error notice, e.g. a v2
    /// agent's `error` stop reason with its message).
    pub fn turn_failure(&self) -> Option<String> {
        let st = self.lock();
        st.thread.entries.iter().rev().find_map(|e| match e {
            acp_client::thread::Entry::Notice {
                level: NoticeLevel::Error,
                text,
            } => Some(text.clone()),
            _ => None,
        })
    }

    /// The conversation's tool calls still running (`pending` or `in_progress`), as
    /// `(id, title)` in order: what `/cancel-tool` offers (the engine decides which of them
    /// may be cancelled).
    pub fn running_tools(&self) -> Vec<(String, String)> {
        let st = self.lock();
        st.thread
            .entries
            .iter()
            .filter_map(|e| match e {
                acp_client::thread::Entry::Tool(t)
                    if t.status == "pending" || t.status == "in_progress" =>
                {
                    Some((t.tool_call_id.clone(), t.title.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether ACP v2 was negotiated (feature `unstable_protocol_v2`).
    #[cfg(feature = "unstable_protocol_v2")]
    pub fn is_v2(&self) -> bool {
        self.lock().thread.0.is_v2()
    }

    /// The open request was answered (its result's JSON text; for `session/load`, every
    /// update before the answer went through [`Ui::session_update`]): the updates held until
    /// now are drawn, and what the engine says of the session is shown.
    pub fn opened(&self, result: &str) -> Result<Opened, String> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let mut opened = st.thread.0.opened(result)?;
        if !st.json {
            for applied in std::mem::take(&mut opened.shown) {
                st.drawn.render(applied, &st.thread, &mut st.screen);
            }
        }
        drop(guard);
        self.tell(&opened.notices);
        Ok(opened)
    }

    /// The open request was refused (JSON-RPC `code`, `message`): another request to send
    /// (the refusal told), or the message the chat ends with.
    pub fn open_failed(&self, code: i64, message: &str) -> AfterFailure {
        let next = self.lock().thread.0.open_failed(code, message);
        if let AfterFailure::Retry { notices, .. } = &next {
            self.tell(notices);
        }
        next
    }

    /// The agent's process or connection ended (`why`, one line) at `now` since the chat
    /// started: restart it after a delay (told), or give up (the notices are the chat's last
    /// words: the caller ends with them).
    pub fn agent_ended(&self, now: Duration, why: &str) -> AfterEnd {
        let next = self.lock().thread.0.agent_ended(now, why);
        if let AfterEnd::Restart { notices, .. } = &next {
            self.tell(notices);
        }
        next
    }

    /// Shows the engine's notices on stderr: information dimmed, warnings and errors as such.
    pub fn tell(&self, notices: &[Notice]) {
        for n in notices {
            match n.level {
                NoticeLevel::Info => self.notice(&n.text),
                NoticeLevel::Warning => self.warn(&n.text),
                NoticeLevel::Error => self.error(&n.text),
            }
        }
    }

    /// The conversation so far for its record: its title (acp-client's
    /// [`list_title`](acp_client::session::list_title), the one rule of every session list)
    /// and the thread's saved form.
    pub fn thread_record(&self) -> (String, String) {
        let st = self.lock();
        (st.thread.0.title(), st.thread.to_json())
    }

    /// The conversation's prompts so far.
    pub fn prompts(&self) -> usize {
        self.lock()
            .thread
            .entries
            .iter()
            .filter(|e| matches!(e, acp_client::thread::Entry::User { .. }))
            .count()
    }

    /// The session's modes: the current one and (id, name) of each.
    pub fn modes(&self) -> (Option<String>, Vec<(String, String)>) {
        let st = self.lock();
        let list = st
            .thread
            .modes
            .iter()
            .map(|m| (m.id.clone(), m.name.clone()))
            .collect();
        (st.thread.current_mode.clone(), list)
    }

    /// The session's config options (the agent's JSON), if it has any.
    pub fn config_options(&self) -> Option<serde_json::Value> {
        let st = self.lock();
        let raw = st.thread.config_options.as_ref()?;
        serde_json::from_str(raw.get()).ok()
    }

    /// Replaces the session's config options with `raw` (a JSON list: the full set a
    /// `session/set_config_option` answer carries; v2, feature `unstable_protocol_v2`).
    #[cfg(feature = "unstable_protocol_v2")]
    pub fn config_options_set(&self, raw: Box<serde_json::value::RawValue>) {
        self.lock().thread.config_options = Some(acp_client::thread::RawJson(raw));
    }

    /// The agent's commands: (name, description, input hint).
    pub fn commands(&self) -> Vec<(String, String, Option<String>)> {
        self.lock()
            .thread
            .commands
            .iter()
            .map(|c| (c.name.clone(), c.description.clone(), c.hint.clone()))
            .collect()
    }

    /// What `session/status` said (feature `unstable`): kept in the thread, shown on stderr.
    #[cfg(feature = "unstable")]
    pub fn session_status(&self, status: &str) {
        let mut guard = self.lock();
        let st = &mut *guard;
        st.thread.set_session_status(status);
        st.screen
            .status_line(&format!("[session status: {}]", escape_line(status)));
    }

    /// A title set with `session/set_title` (feature `unstable`): kept, shown once.
    #[cfg(feature = "unstable")]
    pub fn title_set(&self, title: &str) {
        let mut guard = self.lock();
        let st = &mut *guard;
        st.thread.set_title(title);
        if st.drawn.last_title.as_deref() != Some(title) {
            st.drawn.last_title = Some(title.to_string());
            st.screen
                .status_line(&format!("[title: {}]", escape_line(title)));
        }
    }
}
