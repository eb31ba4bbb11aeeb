//! The session's state as the thread keeps it, read and set through [`Ui`]: its modes, config
//! options and commands (what `acp chat`'s slash commands show), a saved conversation taken
//! back (`--resume`), the record of the conversation, a `session/load`'s replay folded
//! unshown, and (feature `unstable`) its status and title.

use acp_client::thread::{ReplayView, Thread};
use acp_core::RawValue;
use agent_client_protocol_schema::v1 as s;

#[cfg(feature = "unstable")]
use acp_client::display::escape_line;

use super::Ui;
use crate::cli::records;

impl Ui {
    /// The conversation so far for its record: its title and the thread's saved form.
    pub fn thread_record(&self) -> (String, String) {
        let st = self.lock();
        (records::title_of(&st.thread), st.thread.to_json())
    }

    /// The session's modes and config options as the agent answered them (`session/new`,
    /// `load`, `resume`), into the thread (later updates change them there).
    pub fn session_started(
        &self,
        session_id: &str,
        modes: Option<&s::SessionModeState>,
        config_options: Option<&Vec<s::SessionConfigOption>>,
    ) {
        let list = modes
            .map(|m| {
                m.available_modes
                    .iter()
                    .map(|m| acp_client::thread::Mode {
                        id: m.id.0.to_string(),
                        name: m.name.clone(),
                        description: m.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let current = modes.map(|m| m.current_mode_id.0.to_string());
        let config = config_options
            .and_then(|c| serde_json::value::to_raw_value(c).ok())
            .map(acp_client::thread::RawJson);
        self.lock()
            .thread
            .set_session(session_id, list, current, config);
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

    /// The agent's commands: (name, description, input hint).
    pub fn commands(&self) -> Vec<(String, String, Option<String>)> {
        self.lock()
            .thread
            .commands
            .iter()
            .map(|c| (c.name.clone(), c.description.clone(), c.hint.clone()))
            .collect()
    }

    /// Continues from a saved conversation (`--resume`).
    pub fn set_thread(&self, thread: Thread) {
        self.lock().thread = thread;
    }

    /// How the replay of a `session/load` sent now is taken (acp-client's
    /// `Thread::replay_view`): shown while nothing of the conversation is, else folded unshown.
    pub fn replay_view(&self) -> ReplayView {
        self.lock().thread.replay_view()
    }

    /// Folds one replayed `session/update` without showing it, in either view (a session
    /// reloaded after a crash or a dropped connection: acp-client's
    /// `Thread::apply_replayed_json` keeps the session's state and adds no conversation).
    pub fn fold_replayed(&self, params: Option<&RawValue>) {
        let raw = params.map_or("null", RawValue::get);
        if let Err(e) = self.lock().thread.apply_replayed_json(raw) {
            tracing::debug!("a replayed update not shown: {e}");
        }
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
