//! The demo agent's protocol handlers: `initialize` (and its raw form with `--require-auth`),
//! `authenticate`, `session/new`, `session/load` (the replay), `session/resume`,
//! `session/list`, `session/close`, `session/delete`, `session/prompt` (one [`Turn`]) and
//! `session/cancel`; sessions kept in
//! memory and, with `--state-dir`, in the [`store`].

use std::path::Path;

use acp_core::typed;
use acp_core::{ErrorCode, ErrorObject};
use acp_native::RequestContext;
use agent_client_protocol_schema::v1 as s;

use super::script::prompt_text;
use super::session::{mcp_names, Session};
use super::store;
use super::turn::{Stop, Turn};
use super::{DemoAgent, AUTH_METHOD_ID};

impl DemoAgent {
    fn initialize(&self) -> s::InitializeResponse {
        // Any version the client asks for is answered with ours, v1 (the spec's negotiation:
        // the client's if we speak it, else our latest). `V1` by name: the schema crate drops
        // `LATEST` when its v2 preview is on (feature `unstable_protocol_v2` anywhere in the
        // build), and this agent speaks v1.
        let version = agent_client_protocol_schema::ProtocolVersion::V1;
        // `session/close` always; with `--state-dir`, `session/list`, `session/delete` and
        // (unless `--no-resume`) `session/resume`.
        let mut sessions = s::SessionCapabilities::new().close(s::SessionCloseCapabilities::new());
        if self.store.is_some() {
            sessions = sessions
                .list(s::SessionListCapabilities::new())
                .delete(s::SessionDeleteCapabilities::new());
            if !self.options.no_resume {
                sessions = sessions.resume(s::SessionResumeCapabilities::new());
            }
        }
        let caps = s::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                s::PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true),
            )
            .session_capabilities(sessions);
        s::InitializeResponse::new(version)
            .agent_capabilities(caps)
            .agent_info(
                s::Implementation::new("acp-demo-agent", env!("CARGO_PKG_VERSION"))
                    .title("acp demo agent (offline, deterministic)".to_string()),
            )
    }

    /// `initialize` as JSON: the typed answer plus, with `--require-auth`, an `env_var` auth
    /// method (a method type the typed schema does not have yet).
    pub(super) fn initialize_raw(
        &self,
        params: Option<Box<serde_json::value::RawValue>>,
    ) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
        // Decoded to refuse malformed params (-32602, a version that is no u16 included).
        let request: s::InitializeRequest =
            typed::decode_params::<typed::Initialize>(params.as_deref())
                .map_err(ErrorObject::invalid_params)?;
        #[cfg(feature = "unstable_protocol_v2")]
        if request.protocol_version.as_u16() >= 2 {
            return self.initialize_v2();
        }
        let _ = request;
        let mut answer = serde_json::to_value(self.initialize()).map_err(ErrorObject::internal)?;
        if let Some(var) = &self.options.require_auth {
            answer["authMethods"] = serde_json::json!([{
                "id": AUTH_METHOD_ID,
                "name": "Demo token",
                "description": format!("reads the token from {var}"),
                "type": "env_var",
                "varName": var,
            }]);
        }
        serde_json::value::to_raw_value(&answer).map_err(ErrorObject::internal)
    }

    /// `authenticate`: the `env_var` method succeeds when its variable is set (non-empty).
    pub(super) fn authenticate(
        &self,
        p: s::AuthenticateRequest,
    ) -> Result<s::AuthenticateResponse, ErrorObject> {
        let Some(var) = &self.options.require_auth else {
            return Ok(s::AuthenticateResponse::new());
        };
        if &*p.method_id.0 != AUTH_METHOD_ID {
            return Err(ErrorObject::new(
                ErrorCode::InvalidParams,
                format!(
                    "unknown authentication method `{}` (this agent offers `{AUTH_METHOD_ID}`)",
                    p.method_id.0
                ),
            ));
        }
        if std::env::var_os(var).is_none_or(|v| v.is_empty()) {
            return Err(ErrorObject::new(
                ErrorCode::AuthRequired,
                format!("{var} is not set in the agent's environment"),
            ));
        }
        self.authenticated
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(s::AuthenticateResponse::new())
    }

    /// -32000 until `authenticate` succeeded (with `--require-auth`).
    fn check_auth(&self) -> Result<(), ErrorObject> {
        if self.authenticated.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        Err(ErrorObject::new(
            ErrorCode::AuthRequired,
            "Authentication required: call authenticate with the `demo-env-token` method"
                .to_string(),
        ))
    }

    /// Writes session `key` to the state directory (with `--state-dir`; best effort).
    fn persist(&self, key: &str) {
        let Some(store) = &self.store else { return };
        let mut saved = {
            let sessions = self.sessions.lock().unwrap();
            let Some(session) = sessions.get(key) else {
                return;
            };
            let mut saved = store::Saved::new(key, &session.cwd);
            saved.title = session.title.clone();
            saved.updates = session.history.clone();
            saved
        };
        if let Err(e) = store.save(&mut saved) {
            eprintln!("acp demo-agent: cannot save session {key}: {e}");
        }
    }

    /// Session `key` in memory, from the state directory if it is only there.
    fn restore(&self, key: &str, cwd: &Path, mcp: Vec<String>) -> bool {
        let mut sessions = self.sessions.lock().unwrap();
        if let Some(session) = sessions.get_mut(key) {
            session.cwd = cwd.to_path_buf();
            session.mcp = mcp;
            return true;
        }
        let Some(saved) = self.store.as_ref().and_then(|st| st.load(key)) else {
            return false;
        };
        let mut session = Session::new(cwd.to_path_buf(), mcp);
        session.history = saved.updates;
        session.title = saved.title;
        sessions.insert(key.to_string(), session);
        true
    }

    /// `session/resume`: the session continues without a replay (from memory or the state
    /// directory); an unknown id is -32002.
    pub(super) fn resume_session(
        &self,
        p: s::ResumeSessionRequest,
    ) -> Result<s::ResumeSessionResponse, ErrorObject> {
        self.check_auth()?;
        check_cwd(&p.cwd)?;
        let key = p.session_id.0.to_string();
        if !self.restore(&key, &p.cwd, mcp_names(&p.mcp_servers)) {
            return Err(unknown_session(&key));
        }
        Ok(s::ResumeSessionResponse::new())
    }

    /// `session/list`: the sessions of the state directory and of this process (for `cwd` when
    /// given), most recent first.
    pub(super) fn list_sessions(
        &self,
        p: s::ListSessionsRequest,
    ) -> Result<s::ListSessionsResponse, ErrorObject> {
        self.check_auth()?;
        let mut infos: Vec<s::SessionInfo> = self
            .store
            .as_ref()
            .map(|st| st.list().iter().map(store::Saved::info).collect())
            .unwrap_or_default();
        {
            let sessions = self.sessions.lock().unwrap();
            let mut live: Vec<_> = sessions
                .iter()
                .filter(|(id, _)| !infos.iter().any(|i| &*i.session_id.0 == id.as_str()))
                .map(|(id, sn)| {
                    s::SessionInfo::new(id.clone(), sn.cwd.clone())
                        .title(sn.title.clone())
                        .updated_at(store::iso8601(store::now()))
                })
                .collect();
            live.sort_by(|a, b| b.session_id.0.cmp(&a.session_id.0));
            live.append(&mut infos);
            infos = live;
        }
        infos.retain(|i| p.cwd.as_ref().is_none_or(|c| *c == i.cwd));
        infos.truncate(store::MAX_SESSIONS);
        Ok(s::ListSessionsResponse::new(infos))
    }

    pub(super) fn new_session(
        &self,
        p: s::NewSessionRequest,
    ) -> Result<s::NewSessionResponse, ErrorObject> {
        self.check_auth()?;
        check_cwd(&p.cwd)?;
        let mut sessions = self.sessions.lock().unwrap();
        // The first free `demo-<random>-N` (a `session/load` may have taken any id).
        let id = (1..)
            .map(|n| format!("{}-{n}", self.id_prefix))
            .find(|id| !sessions.contains_key(id))
            .expect("some id is free");
        sessions.insert(id.clone(), Session::new(p.cwd, mcp_names(&p.mcp_servers)));
        drop(sessions);
        self.persist(&id);
        Ok(s::NewSessionResponse::new(id))
    }

    /// `session/load`: a session of this process or (with `--state-dir`) of an earlier one is
    /// loaded again (its history is replayed); an unknown id is -32002, as the spec's
    /// reference agents answer it (it was started empty before, and clients said "loaded").
    pub(super) async fn load_session(
        &self,
        p: s::LoadSessionRequest,
        cx: RequestContext,
    ) -> Result<s::LoadSessionResponse, ErrorObject> {
        self.check_auth()?;
        check_cwd(&p.cwd)?;
        let key = p.session_id.0.to_string();
        if !self.restore(&key, &p.cwd, mcp_names(&p.mcp_servers)) {
            return Err(unknown_session(&key));
        }
        let history = {
            let sessions = self.sessions.lock().unwrap();
            sessions
                .get(&key)
                .map(|s| s.history.clone())
                .unwrap_or_default()
        };
        // The spec: replay the conversation as `session/update`s, then answer.
        let client = cx.client();
        for update in history {
            let n = s::SessionNotification::new(p.session_id.clone(), update);
            client
                .session_update(n)
                .await
                .map_err(|e| e.to_error_object())?;
        }
        Ok(s::LoadSessionResponse::new())
    }

    /// `session/close`: the session's turn is cancelled (it ends `cancelled`) and the session
    /// leaves this process's memory (with `--state-dir` it stays on disk, to load or resume
    /// later); an unknown id is -32002.
    pub(super) fn close_session(
        &self,
        p: s::CloseSessionRequest,
    ) -> Result<s::CloseSessionResponse, ErrorObject> {
        self.check_auth()?;
        let key = p.session_id.0.to_string();
        match self.sessions.lock().unwrap().remove(&key) {
            Some(session) => {
                session.turn.cancel();
                Ok(s::CloseSessionResponse::new())
            }
            None => Err(unknown_session(&key)),
        }
    }

    /// `session/delete` (with `--state-dir`): the session is closed as by `session/close` and
    /// removed from the state directory, so `session/list`, `load` and `resume` no longer
    /// know it; an id known neither in memory nor on disk is -32002.
    pub(super) fn delete_session(
        &self,
        p: s::DeleteSessionRequest,
    ) -> Result<s::DeleteSessionResponse, ErrorObject> {
        self.check_auth()?;
        let key = p.session_id.0.to_string();
        let live = self.sessions.lock().unwrap().remove(&key);
        if let Some(session) = &live {
            session.turn.cancel();
        }
        let on_disk = self.store.as_ref().is_some_and(|st| st.delete(&key));
        if live.is_none() && !on_disk {
            return Err(unknown_session(&key));
        }
        Ok(s::DeleteSessionResponse::new())
    }

    pub(super) fn cancel(&self, session_id: &s::SessionId) {
        if let Some(session) = self.sessions.lock().unwrap().get(&*session_id.0) {
            session.turn.cancel();
        }
    }

    /// One prompt turn.
    pub(super) async fn prompt(
        &self,
        p: s::PromptRequest,
        cx: RequestContext,
    ) -> Result<s::PromptResponse, ErrorObject> {
        let key = p.session_id.0.to_string();
        let (cwd, cancel) = {
            let mut sessions = self.sessions.lock().unwrap();
            let Some(session) = sessions.get_mut(&key) else {
                return Err(unknown_session(&key));
            };
            // A fresh token per turn; it also fires if the connection closes.
            session.turn = cx.cancel.child_token();
            (session.cwd.clone(), session.turn.clone())
        };
        let text = prompt_text(&p.prompt);
        if let Some(session) = self.sessions.lock().unwrap().get_mut(&key) {
            if session.title.is_none() {
                session.title = store::title_from(&text);
            }
        }
        let mut turn = Turn {
            agent: self,
            client: cx.client(),
            session_id: p.session_id.clone(),
            cwd,
            cancel: cancel.clone(),
        };
        turn.record(s::SessionUpdate::UserMessageChunk(s::ContentChunk::new(
            text.clone().into(),
        )));
        let outcome = turn.run(&text).await;
        self.persist(&key);
        let stop_reason = match outcome {
            // A `session/cancel` read at any point before this answer wins over how the turn
            // ended: the spec asks for `cancelled` (not `end_turn`, nor the error of a client
            // call that the client failed because it cancelled).
            _ if cancel.is_cancelled() && !cx.cancel.is_cancelled() => s::StopReason::Cancelled,
            Ok(reason) => reason,
            Err(Stop::Cancelled) => s::StopReason::Cancelled,
            // A closed connection or a refused call: nobody is listening for a clean answer
            // any more, or the client broke the turn. Report it as an error.
            Err(Stop::Failed(e)) => return Err(e.to_error_object()),
        };
        if text.contains("#later") {
            // For clients' tests of what arrives between turns: a new title, a second after
            // the turn ended.
            let client = cx.client();
            let id = p.session_id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let update = s::SessionUpdate::SessionInfoUpdate(
                    s::SessionInfoUpdate::new().title("renamed later (#later)"),
                );
                let _ = client
                    .session_update(s::SessionNotification::new(id, update))
                    .await;
            });
        }
        Ok(s::PromptResponse::new(stop_reason))
    }
}

/// A session this agent does not have (not in memory, not in `--state-dir`): -32002 with the
/// id, as the official SDK's `RequestError.sessionNotFound`.
pub(super) fn unknown_session(key: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::ResourceNotFound,
        format!("Resource not found: unknown session {key}"),
    )
    .with_data(serde_json::json!({ "sessionId": key }))
}

fn check_cwd(cwd: &Path) -> Result<(), ErrorObject> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(ErrorObject::new(
            ErrorCode::InvalidParams,
            format!("cwd must be an absolute path, got {}", cwd.display()),
        ))
    }
}
