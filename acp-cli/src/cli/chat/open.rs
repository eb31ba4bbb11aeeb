//! Opening the session (methods of [`Chat`]), as acp-client's session engine decides it:
//! `initialize`, then the request the engine names (`session/new`, `session/resume`, or
//! `session/load` and its replay), the updates taken meanwhile in wire order and the answer
//! handed to the engine (which says what the user is told: a new session, resumed, replayed,
//! or the conversation lost); a refusal handed to it too (another request, or the end). The
//! auth choice (acp-client's `auth`) when the agent needs one, and `--mode`.

use acp_client::display::escape_line;
use acp_client::session::{AfterFailure, Open};
use acp_core::{CallError, RawValue};
use acp_native::{ClientSideConnection, RpcError};
use agent_client_protocol_schema::v1 as s;
use futures::FutureExt;

use super::calls::is_auth_required;
use super::outcome::Outcome;
use super::requests::Event;
use super::signals::quit;
use super::Chat;
use crate::cli::exit;

impl Chat {
    /// Opens the session: `initialize`, then what the engine decides. `reopening`: the agent
    /// was restarted (or reconnected) and the session is re-established; a remote agent that
    /// cannot continue it ends the chat (a new session over a new connection would look like
    /// the old one).
    pub(super) async fn open_session(&mut self, reopening: bool) -> Result<(), Outcome> {
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
        #[cfg(not(feature = "unstable_protocol_v2"))]
        let (info, raw) = self
            .wait("initialize", conn.initialize_with_raw(init))
            .await?;
        // Offers v2 (the agent picks: a v1 agent answers 1).
        #[cfg(feature = "unstable_protocol_v2")]
        let (info, raw) = {
            let handle = self.link.conn.handle().clone();
            let timeout = Some(self.timeouts.request);
            let call = async move {
                let raw = handle
                    .request(
                        "initialize",
                        Some(acp_native::supervisor::v2::offer(&init)?),
                        timeout,
                    )
                    .await?;
                let info: s::InitializeResponse = acp_native::driver::decode("initialize", &raw)?;
                Ok((info, raw))
            };
            self.wait("initialize", call).await?
        };
        let caps = &info.agent_capabilities.prompt_capabilities;
        self.session.prompt_caps = acp_client::prompt::PromptCapabilities {
            image: caps.image,
            audio: caps.audio,
            embedded_context: caps.embedded_context,
        };
        let mut open = self
            .ui
            .initialized(raw.get())
            .map_err(|e| Outcome::fail(exit::ERROR, e))?;
        // From the answer as sent: the typed form does not keep every method type.
        let methods = acp_client::auth::methods_of(raw.get());
        // A method the user named is used before the session; otherwise one is chosen only
        // when the agent says authentication is required.
        let mut authenticated = false;
        if self.session.auth.is_some() {
            self.authenticate(&conn, &methods).await?;
            authenticated = true;
        }
        loop {
            if reopening && open == Open::New && self.link.remote().is_some() {
                return Err(self.remote_session_lost());
            }
            let params = self.open_params(&open, &info)?;
            let (answer, after) = self.open_call(open.method(), params).await?;
            let error = match answer {
                Ok(result) => {
                    let opened = self.ui.opened(result.get()).map_err(|e| {
                        Outcome::fail(
                            exit::ERROR,
                            format!("the agent's answer to `{}`: {e}", open.method()),
                        )
                    })?;
                    self.session.id = s::SessionId::new(opened.session_id);
                    // An update that came right after the answer: the session's now.
                    if let Some(event) = after {
                        self.inbox.idle_event(event);
                    }
                    break;
                }
                Err(e) => e,
            };
            if let Some(event) = after {
                self.inbox.idle_event(event);
            }
            match error {
                e if is_auth_required(&e) && !authenticated && self.session.auth.is_none() => {
                    self.authenticate(&conn, &methods).await?;
                    authenticated = true;
                }
                e if is_auth_required(&e) => return Err(self.explain(open.method(), e).await),
                RpcError::Call(CallError::Remote(err)) => {
                    match self.ui.open_failed(err.code, &err.message) {
                        AfterFailure::Retry { open: next, .. } => open = next,
                        AfterFailure::Fail { message } => {
                            self.ui.spinner_stop();
                            return Err(Outcome::fail(exit::ERROR, message));
                        }
                    }
                }
                e => return Err(self.explain(open.method(), e).await),
            }
        }
        self.ui.spinner_stop();
        self.apply_mode(&conn).await
    }

    /// The params of the open request: the session's directory and `--mcp-config` servers
    /// (those the agent can use).
    fn open_params(
        &self,
        open: &Open,
        info: &s::InitializeResponse,
    ) -> Result<Box<RawValue>, Outcome> {
        let mcp = self.session.mcp_servers(&self.ui, info)?;
        let cwd = self.session.cwd.clone();
        let raw = match open {
            Open::New => {
                acp_native::driver::to_raw(&s::NewSessionRequest::new(cwd).mcp_servers(mcp))
            }
            Open::Resume { session_id } => acp_native::driver::to_raw(
                &s::ResumeSessionRequest::new(session_id.clone(), cwd).mcp_servers(mcp),
            ),
            Open::Load { session_id } => acp_native::driver::to_raw(
                &s::LoadSessionRequest::new(session_id.clone(), cwd).mcp_servers(mcp),
            ),
            // Named by the engine only on a v2 connection.
            #[cfg(feature = "unstable_protocol_v2")]
            Open::Replay { session_id } => {
                acp_native::supervisor::v2::replay_params(&session_id.clone().into(), &cwd, &mcp)
            }
            #[cfg(not(feature = "unstable_protocol_v2"))]
            Open::Replay { .. } => {
                return Err(Outcome::fail(
                    exit::ERROR,
                    "a v2 replay on a build without ACP v2 (feature unstable_protocol_v2)",
                ))
            }
        };
        raw.map_err(|e| Outcome::fail(exit::ERROR, format!("`{}`: {e}", open.method())))
    }

    /// Sends an open request and awaits its answer, taking the agent's updates meanwhile in
    /// wire order (a `session/load`'s replay, shown or folded; a new session's early updates,
    /// held): while it runs each update waits in its handler until taken (the
    /// [`UpdateGate`](super::requests::UpdateGate)), so an update in hand while the answer is
    /// not in came before it, and one in hand once it is came after it. That one is returned
    /// with the answer, to be taken once the engine has it.
    async fn open_call(
        &mut self,
        method: &'static str,
        params: Box<RawValue>,
    ) -> Result<(Result<Box<RawValue>, RpcError>, Option<Event>), Outcome> {
        let handle = self.link.conn.handle().clone();
        let timeout = Some(self.timeouts.request);
        self.inbox.gate.open();
        let call = handle.request(method, Some(params), timeout);
        tokio::pin!(call);
        let mut after = None;
        let answer = loop {
            tokio::select! {
                biased;
                r = &mut call => break r,
                Some(event) = self.inbox.events.recv() => {
                    // Not taken yet: if the answer is in now, this came after it.
                    if let Some(r) = (&mut call).now_or_never() {
                        after = Some(event);
                        break r;
                    }
                    self.inbox.idle_event(event);
                }
                Some(line) = self.inbox.warnings.recv() => self.inbox.garbage(line),
                sig = self.signals.recv() => {
                    self.inbox.gate.close();
                    return Err(quit(sig));
                }
            }
        };
        self.inbox.gate.close();
        Ok((answer, after))
    }

    /// A remote agent reconnected that cannot continue the session (it can neither resume nor
    /// load it, or no longer has it): the chat ends, saying so.
    fn remote_session_lost(&self) -> Outcome {
        self.ui.spinner_stop();
        Outcome::fail(
            exit::ERROR,
            format!(
                "the connection to {} was lost and session {} cannot be continued: the agent \
                 cannot reopen it (it can neither resume nor load sessions, or no longer has it)",
                self.link.program,
                escape_line(&self.session.id.0)
            ),
        )
    }

    /// Shows the session's mode as the agent opened it (kept in the thread: an agent's mode
    /// decides what it does without asking: with claude-agent-acp's `auto`, `--deny` has
    /// nothing to refuse) and sets `--mode`.
    pub(super) async fn apply_mode(&mut self, conn: &ClientSideConnection) -> Result<(), Outcome> {
        let (current, modes) = self.ui.modes();
        let Some(current) = current else {
            return match &self.session.mode {
                Some(m) => Err(Outcome::fail(
                    exit::ERROR,
                    format!("--mode {}: the agent has no session modes", escape_line(m)),
                )),
                None => Ok(()),
            };
        };
        let ids: Vec<String> = modes.iter().map(|(id, _)| escape_line(id)).collect();
        let shown = escape_line(&current);
        match self.session.mode.clone() {
            Some(wanted) if wanted == current => {}
            Some(wanted) => {
                if !modes.iter().any(|(id, _)| *id == wanted) {
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
                    .notice(&format!("mode: {} (was {shown})", escape_line(&wanted)));
                return Ok(());
            }
            None => {}
        }
        self.ui.notice(&format!(
            "mode: {shown} (the agent's modes: {}; choose one with --mode)",
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
