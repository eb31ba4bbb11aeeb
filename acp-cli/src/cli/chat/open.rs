//! Opening the session (methods of [`Chat`]): `initialize` and its answer, then
//! `session/resume`, `session/load` (the agent's replay) or `session/new`, the auth choice
//! (acp-client's `auth`) when the agent needs one, and `--mode`.

use acp_client::display::escape_line;
use acp_client::thread::ReplayView;
use acp_native::ClientSideConnection;
use agent_client_protocol_schema::v1 as s;

use super::calls::is_auth_required;
use super::outcome::Outcome;
use super::Chat;
use crate::cli::exit;

impl Chat {
    pub(super) async fn open_session(
        &mut self,
        cwd: &std::path::Path,
        load: Option<&str>,
    ) -> Result<(), Outcome> {
        self.ui.spinner_start("starting the agent…");
        let conn = self.link.conn.with_timeout(self.timeouts.request);
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
            .unwrap_or_else(|| self.link.program.clone());

        let resume = self.session.resume.clone();
        if let Some(id) = resume.as_deref() {
            if info
                .agent_capabilities
                .session_capabilities
                .resume
                .is_some()
            {
                // No replay: the conversation shown is the one saved here.
                let mcp = self.session.mcp_servers(&self.ui, &info)?;
                let request = s::ResumeSessionRequest::new(id.to_string(), cwd).mcp_servers(mcp);
                let resumed = self
                    .wait("session/resume", conn.resume_session(request))
                    .await?;
                self.session.id = s::SessionId::new(id);
                self.ui.spinner_stop();
                self.record.recap(&self.ui, cwd, id);
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
            let mcp = self.session.mcp_servers(&self.ui, &info)?;
            let request = s::LoadSessionRequest::new(id.to_string(), cwd).mcp_servers(mcp);
            self.inbox.folded = (self.ui.replay_view() == ReplayView::Fold).then_some(0);
            let loaded = self
                .wait_replay("session/load", conn.load_session(request))
                .await;
            let folded = self.inbox.folded.take();
            let loaded = loaded?;
            self.session.id = s::SessionId::new(id);
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
        if self.session.auth.is_some() {
            self.authenticate(&conn, &methods).await?;
        }
        let new =
            s::NewSessionRequest::new(cwd).mcp_servers(self.session.mcp_servers(&self.ui, &info)?);
        let session = match self.wait_raw(conn.new_session(new.clone())).await? {
            Ok(session) => session,
            Err(e) if is_auth_required(&e) && self.session.auth.is_none() => {
                self.authenticate(&conn, &methods).await?;
                self.wait("session/new", conn.new_session(new)).await?
            }
            Err(e) => return Err(self.explain("session/new", e).await),
        };
        self.session.id = session.session_id;
        self.ui.spinner_stop();
        self.ui.session_started(
            &self.session.id.0,
            session.modes.as_ref(),
            session.config_options.as_ref(),
        );
        self.ui.notice(&format!(
            "connected to {name}; session {} in {}",
            self.session.id.0,
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
            return match &self.session.mode {
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
        match self.session.mode.clone() {
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
                    s::SetSessionModeRequest::new(self.session.id.clone(), wanted.clone());
                self.wait(
                    "session/set_mode",
                    conn.with_timeout(self.timeouts.request)
                        .set_session_mode(request),
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

    /// Authenticates with the method the shared policy chooses (acp-client's `auth`): the one
    /// named with `--auth`, an `env_var` method whose variables the agent gets, or an `agent`
    /// method that starts no interactive login; otherwise says what each method needs.
    pub(super) async fn authenticate(
        &mut self,
        conn: &ClientSideConnection,
        methods: &[acp_client::auth::AuthMethod],
    ) -> Result<(), Outcome> {
        use acp_client::auth::AuthChoice;
        let vars = self.session.agent_vars.clone();
        match acp_client::auth::choose(methods, |v| vars.contains(v), self.session.auth.as_deref()) {
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
}

/// Each line of `text` escaped on its own (agent-supplied names inside a message of ours).
fn escape_lines(text: &str) -> String {
    text.lines().map(escape_line).collect::<Vec<_>>().join("\n")
}
