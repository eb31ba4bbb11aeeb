//! Opening the session: `initialize`'s answer, `--resume` / `--load` / `session/new`, the
//! auth choice, `--mcp-config`, `--mode`, and the per-directory record of the conversation.

use super::*;
use acp_client::thread::ReplayView;

impl Chat {
    pub(super) async fn open_session(
        &mut self,
        cwd: &std::path::Path,
        load: Option<&str>,
    ) -> Result<(), Outcome> {
        self.ui.spinner_start("starting the agent…");
        let conn = self.conn.with_timeout(self.timeout);
        let init = s::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_capabilities(
                s::ClientCapabilities::new()
                    .fs(s::FileSystemCapabilities::new()
                        .read_text_file(true)
                        .write_text_file(true))
                    .terminal(true),
            )
            .client_info(s::Implementation::new("acp", env!("CARGO_PKG_VERSION")));
        let (info, raw) = self
            .wait("initialize", conn.initialize_with_raw(init))
            .await?;
        let name = info
            .agent_info
            .as_ref()
            .map(|i| {
                let title = i.title.clone().unwrap_or_else(|| i.name.clone());
                format!("{title} {}", i.version)
            })
            .unwrap_or_else(|| self.program.clone());

        let resume = self.resume.clone();
        if let Some(id) = resume.as_deref() {
            if info
                .agent_capabilities
                .session_capabilities
                .resume
                .is_some()
            {
                // No replay: the conversation shown is the one saved here.
                let mcp = self.mcp_servers(&info)?;
                let request = s::ResumeSessionRequest::new(id.to_string(), cwd).mcp_servers(mcp);
                let resumed = self
                    .wait("session/resume", conn.resume_session(request))
                    .await?;
                self.session_id = s::SessionId::new(id);
                self.ui.spinner_stop();
                self.recap(cwd, id);
                self.ui.session_started(
                    id,
                    resumed.modes.as_ref(),
                    resumed.config_options.as_ref(),
                );
                self.ui.notice(&format!(
                    "connected to {name}; resumed session {} in {}",
                    escape_line(id),
                    cwd.display()
                ));
                return self.apply_mode(&conn, resumed.modes).await;
            }
            if !info.agent_capabilities.load_session {
                return Err(Outcome::fail(
                    exit::ERROR,
                    format!("{name} can neither resume nor load sessions (no sessionCapabilities.resume, loadSession false)"),
                ));
            }
            if self.ui.replay_view() == ReplayView::Show {
                self.ui.notice(&format!(
                    "{name} cannot resume sessions; loading it (the agent replays it)"
                ));
            }
        }
        if let Some(id) = load.or(resume.as_deref()) {
            if !info.agent_capabilities.load_session {
                return Err(Outcome::fail(
                    exit::ERROR,
                    format!("{name} cannot load sessions (its `loadSession` capability is false)"),
                ));
            }
            // The agent replays the conversation as `session/update`s before it answers. With
            // nothing of it on screen (`--load`, `--resume` at start) they are shown as they
            // come; after a crash or a dropped connection the conversation is shown already:
            // the replay is only folded (acp-client's `Thread::replay_view`), said in one line.
            let mcp = self.mcp_servers(&info)?;
            let request = s::LoadSessionRequest::new(id.to_string(), cwd).mcp_servers(mcp);
            self.folded = (self.ui.replay_view() == ReplayView::Fold).then_some(0);
            let loaded = self
                .wait_replay("session/load", conn.load_session(request))
                .await;
            let folded = self.folded.take();
            let loaded = loaded?;
            self.session_id = s::SessionId::new(id);
            self.ui.spinner_stop();
            self.ui
                .session_started(id, loaded.modes.as_ref(), loaded.config_options.as_ref());
            let id = escape_line(id);
            self.ui.notice(&match folded {
                Some(n) => format!(
                    "connected to {name}; session {id} reloaded ({n} replayed update(s) not \
                     shown again: the conversation is above)"
                ),
                None => format!(
                    "connected to {name}; loaded session {id} in {}",
                    cwd.display()
                ),
            });
            return self.apply_mode(&conn, loaded.modes).await;
        }
        // From the answer as sent: the typed form does not keep every method type.
        let methods = acp_client::auth::methods_of(raw.get());
        // A method the user named is used before the session; otherwise one is chosen only
        // when the agent says authentication is required.
        if self.auth.is_some() {
            self.authenticate(&conn, &methods).await?;
        }
        let new = s::NewSessionRequest::new(cwd).mcp_servers(self.mcp_servers(&info)?);
        let session = match self.wait_raw(conn.new_session(new.clone())).await? {
            Ok(session) => session,
            Err(e) if is_auth_required(&e) && self.auth.is_none() => {
                self.authenticate(&conn, &methods).await?;
                self.wait("session/new", conn.new_session(new)).await?
            }
            Err(e) => return Err(self.explain("session/new", e).await),
        };
        self.session_id = session.session_id;
        self.ui.spinner_stop();
        self.ui.session_started(
            &self.session_id.0,
            session.modes.as_ref(),
            session.config_options.as_ref(),
        );
        self.ui.notice(&format!(
            "connected to {name}; session {} in {}",
            self.session_id.0,
            cwd.display()
        ));
        self.apply_mode(&conn, session.modes).await
    }

    /// Shows the session's mode (an agent's mode decides what it does without asking: with
    /// claude-agent-acp's `auto`, `--deny` has nothing to refuse) and sets `--mode`.
    pub(super) async fn apply_mode(
        &mut self,
        conn: &ClientSideConnection,
        modes: Option<s::SessionModeState>,
    ) -> Result<(), Outcome> {
        let Some(modes) = modes else {
            return match &self.mode_wanted {
                Some(m) => Err(Outcome::fail(
                    exit::ERROR,
                    format!("--mode {}: the agent has no session modes", escape_line(m)),
                )),
                None => Ok(()),
            };
        };
        let ids: Vec<String> = modes
            .available_modes
            .iter()
            .map(|m| escape_line(&m.id.0))
            .collect();
        let current = escape_line(&modes.current_mode_id.0);
        match self.mode_wanted.clone() {
            Some(wanted) if *wanted == *modes.current_mode_id.0 => {}
            Some(wanted) => {
                if !modes.available_modes.iter().any(|m| *m.id.0 == *wanted) {
                    return Err(Outcome::fail(
                        exit::ERROR,
                        format!(
                            "--mode {}: the agent's modes are {}",
                            escape_line(&wanted),
                            ids.join(", ")
                        ),
                    ));
                }
                let request =
                    s::SetSessionModeRequest::new(self.session_id.clone(), wanted.clone());
                self.wait(
                    "session/set_mode",
                    conn.with_timeout(self.timeout).set_session_mode(request),
                )
                .await?;
                self.ui
                    .notice(&format!("mode: {} (was {current})", escape_line(&wanted)));
                return Ok(());
            }
            None => {}
        }
        self.ui.notice(&format!(
            "mode: {current} (the agent's modes: {}; choose one with --mode)",
            ids.join(", ")
        ));
        Ok(())
    }

    /// The `--mcp-config` servers the agent can use (acp-client's `mcp`: stdio always, http
    /// and sse when its `mcpCapabilities` say so); the others are named on stderr.
    pub(super) fn mcp_servers(
        &self,
        info: &s::InitializeResponse,
    ) -> Result<Vec<s::McpServer>, Outcome> {
        let caps = acp_client::mcp::McpCapabilities {
            http: info.agent_capabilities.mcp_capabilities.http,
            sse: info.agent_capabilities.mcp_capabilities.sse,
        };
        let selection = acp_client::mcp::select(&self.mcp, caps);
        for left in &selection.left_out {
            self.ui
                .warn(&format!("--mcp-config: left out {}", escape_line(left)));
        }
        selection
            .servers
            .iter()
            .map(|m| serde_json::to_value(m).and_then(serde_json::from_value))
            .collect::<Result<_, _>>()
            .map_err(|e| Outcome::fail(exit::ERROR, format!("--mcp-config: {e}")))
    }

    /// Authenticates with the method the shared policy chooses (acp-client's `auth`): the one
    /// named with `--auth`, an `env_var` method whose variables the agent gets, or an `agent`
    /// method that starts no interactive login; otherwise says what each method needs.
    pub(super) async fn authenticate(
        &mut self,
        conn: &ClientSideConnection,
        methods: &[acp_client::auth::AuthMethod],
    ) -> Result<(), Outcome> {
        use acp_client::auth::AuthChoice;
        let vars = self.agent_vars.clone();
        match acp_client::auth::choose(methods, |v| vars.contains(v), self.auth.as_deref()) {
            AuthChoice::Authenticate { method_id, why } => {
                self.ui.notice(&format!(
                    "authenticating with the agent's `{}` method ({why})…",
                    escape_line(&method_id)
                ));
                self.wait(
                    "authenticate",
                    conn.authenticate(s::AuthenticateRequest::new(method_id)),
                )
                .await?;
                Ok(())
            }
            AuthChoice::Terminal { method_id } => Err(Outcome::fail(
                exit::ERROR,
                format!(
                    "`{}` is a login the agent runs in a terminal: run `acp login --method {}` with \
                     the same agent, then start acp chat again",
                    escape_line(&method_id),
                    escape_line(&method_id)
                ),
            )),
            AuthChoice::NeedsUser { message } => {
                self.ui.spinner_stop();
                Err(Outcome::fail(exit::ERROR, escape_lines(&message)))
            }
        }
    }

    /// After `session/resume`: the conversation saved here becomes the thread again, and its
    /// last exchange is shown.
    pub(super) fn recap(&mut self, cwd: &std::path::Path, id: &str) {
        let record = match crate::cli::sessions::find(cwd, id) {
            Ok(Some(record)) => record,
            Ok(None) => {
                self.ui
                    .notice("(no saved conversation for this session in this directory)");
                return;
            }
            Err(e) => {
                self.ui
                    .warn(&format!("the saved conversation is not shown: {e}"));
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
                self.ui.notice(&format!(
                    "{} — {turns} earlier prompt(s), saved {}",
                    acp_client::display::ensure_line(&record.title),
                    crate::cli::sessions::when(record.updated_at)
                ));
                self.ui.set_thread(thread);
            }
            Err(e) => self
                .ui
                .warn(&format!("the saved conversation is unreadable: {e}")),
        }
    }

    /// Saves the conversation as this directory's record of the session (`acp sessions`).
    pub(super) fn save_record(&mut self) {
        if self.session_id.0.is_empty() {
            return;
        }
        let (title, thread) = self.ui.thread_record();
        if let Err(e) = crate::cli::sessions::save(
            &self.cwd,
            &self.agent_label,
            &self.session_id.0,
            title,
            thread,
        ) {
            if !self.record_warned {
                self.record_warned = true;
                self.ui
                    .warn(&format!("cannot save the session record: {e}"));
            }
        }
    }
}
