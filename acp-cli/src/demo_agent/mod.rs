//! `acp demo-agent`: the built-in agent, speaking ACP on this process's stdin/stdout.
//!
//! It is deterministic (no model, no network) and exists for two reasons: it is the default
//! agent of `acp chat` and of the VS Code extension, so both work out of the box; and it is a
//! small, complete example of an agent written with this crate:
//!
//! * [`run`] builds a [`Router`] of typed handlers (`initialize`, `session/new`,
//!   `session/load`, `session/prompt`, the `session/cancel` notification) and drives it over
//!   stdio with [`AgentSideConnection::connect_with`]. Requests run concurrently, so the reader
//!   keeps reading (and sees `session/cancel`) while a prompt turn is in progress.
//! * [`DemoAgent::prompt`] is one prompt turn. It reports a plan, streams its answer in
//!   several `agent_message_chunk`s, reads the files named in the prompt through
//!   `fs/read_text_file`, runs a command through `terminal/*`, and writes `acp-demo.txt` in the
//!   session's cwd through `fs/write_text_file` after asking `session/request_permission`.
//!   Each client call is made only if the client advertised the capability.
//! * Cancellation: `session/cancel` fires the turn's [`CancellationToken`]; the turn checks it
//!   between steps and while it waits (for a delay, for the user's permission answer) and then
//!   ends with stop reason `cancelled`, as the protocol requires.
//!
//! It advertises images and embedded context in its `promptCapabilities` and names every
//! attachment it gets in its answer (`[resource_link file:///…]`, `[resource file:///… (N
//! characters)]`, `[image image/png, N bytes]`), so a client can see what it sent. Right after
//! `session/new` it sends its slash commands ([`COMMANDS`], an `available_commands_update`):
//! `/echo TEXT` answers TEXT and nothing else, `/help` lists the commands. Its edit of an
//! existing file carries the old text in the diff, so clients show a change, not a new file.
//!
//! Magic words, for trying the client's handling of other stop reasons: a prompt containing
//! `#refuse` ends with `refusal`, one containing `#max-tokens` with `max_tokens`. A command in
//! backticks (`` `echo hi` ``) is what the terminal step runs (split on whitespace, no shell);
//! otherwise it runs `ls`. A prompt containing `#mcp` is answered with the names of the MCP
//! servers the session was given (`session/new`, `load`, `resume`), and nothing else; one
//! containing `#crash` exits mid-answer with code 70 after a line on stderr.
//!
//! Options for clients' tests: `--state-dir DIR` keeps every session on disk ([`store`]), so
//! `session/load`, `session/resume` and `session/list` (advertised then) work across agent
//! restarts; `--require-auth env:NAME` advertises an `env_var` auth method reading `NAME` and
//! answers `session/*` with -32000 (auth required) until `authenticate` is called with it
//! while `NAME` is set in the agent's environment; `--no-resume` advertises `session/load`
//! only (sessions are replayed, never resumed).

mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed;
use acp_core::{ErrorCode, ErrorObject, Role};
use acp_native::driver::{DriverConfig, RpcError};
use acp_native::layers::{CatchPanicLayer, LifecycleLayer};
use acp_native::{AgentSideConnection, RequestContext, Router};
use agent_client_protocol_schema::v1 as s;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;

/// Name of the file the demo agent writes in the session's working directory.
pub const DEMO_FILE: &str = "acp-demo.txt";

/// The slash commands the demo agent offers: (name, description, input hint).
pub const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    (
        "echo",
        "Answer with the given text, and do nothing else",
        Some("text to echo"),
    ),
    (
        "help",
        "List the demo agent's commands and magic words",
        None,
    ),
];

/// Options of `acp demo-agent`.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Pause between streamed steps (tests use it to cancel a turn half-way).
    pub delay: Duration,
    /// Where sessions are kept across restarts (`--state-dir`); in this process only if unset.
    pub state_dir: Option<PathBuf>,
    /// The variable an `env_var` auth method reads (`--require-auth env:NAME`): sessions need
    /// `authenticate` first.
    pub require_auth: Option<String>,
    /// `--no-resume`: sessions are only loaded (no `sessionCapabilities.resume`, even with
    /// `--state-dir`), for clients' tests of the `session/load` path.
    pub no_resume: bool,
}

/// The id of the `env_var` auth method `--require-auth` advertises.
pub const AUTH_METHOD_ID: &str = "demo-env-token";

/// Parses `--require-auth`'s value: `env:NAME`.
pub fn parse_require_auth(v: &str) -> Result<String, String> {
    match v.strip_prefix("env:") {
        Some(name) if acp_client::env::valid_name(name) => Ok(name.to_string()),
        _ => Err(format!(
            "`{v}`: give env:NAME (NAME a variable name, [A-Za-z_][A-Za-z0-9_]*)"
        )),
    }
}

/// Runs the demo agent on stdin/stdout until the client closes the connection.
pub async fn run(options: DemoOptions) -> i32 {
    let agent = Arc::new(DemoAgent {
        store: options.state_dir.clone().map(store::Store::new),
        authenticated: std::sync::atomic::AtomicBool::new(options.require_auth.is_none()),
        options,
        sessions: Mutex::new(HashMap::new()),
        id_prefix: format!("demo-{:08x}", random_u64() as u32),
    });
    let (stdin, stdout) = acp_native::transport::stdio();
    let conn = AgentSideConnection::connect_with(
        stdin,
        stdout,
        DriverConfig::new(Role::Agent),
        // Layers every agent wants: a panicking handler becomes an error response, and
        // nothing but `initialize` is served before `initialize`.
        |_conn| {
            ServiceBuilder::new()
                .layer(CatchPanicLayer)
                .layer(LifecycleLayer::new())
                .service(agent.router())
        },
    );
    let reason = conn.closed().await;
    // The last answers (e.g. to requests read just before stdin ended) go out before we exit.
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.handle().flushed()).await;
    eprintln!("acp demo-agent: connection closed ({reason})");
    0
}

/// What the agent remembers about one session.
struct Session {
    cwd: PathBuf,
    /// Fired by `session/cancel`; replaced at the start of every turn.
    turn: CancellationToken,
    /// Every update sent so far, replayed by `session/load`.
    history: Vec<s::SessionUpdate>,
    /// The first prompt's first line (`session/list`'s title).
    title: Option<String>,
    /// The names of the MCP servers the client gave it (what `#mcp` answers).
    mcp: Vec<String>,
}

impl Session {
    fn new(cwd: PathBuf, mcp: Vec<String>) -> Self {
        Session {
            cwd,
            turn: CancellationToken::new(),
            history: Vec::new(),
            title: None,
            mcp,
        }
    }
}

/// The servers' names, in order (whatever their transport).
fn mcp_names(servers: &[s::McpServer]) -> Vec<String> {
    servers
        .iter()
        .filter_map(|m| {
            let v = serde_json::to_value(m).ok()?;
            v.get("name")?.as_str().map(str::to_string)
        })
        .collect()
}

/// The agent's state, shared by all handlers.
pub struct DemoAgent {
    options: DemoOptions,
    sessions: Mutex<HashMap<String, Session>>,
    /// `demo-<random>`: session ids are unique across processes (clients key saved sessions
    /// by id).
    id_prefix: String,
    /// `--state-dir`: sessions on disk.
    store: Option<store::Store>,
    /// `authenticate` succeeded (always, without `--require-auth`).
    authenticated: std::sync::atomic::AtomicBool,
}

/// A random 64-bit value for ids (the OS's random source; the clock and pid if unreadable).
fn random_u64() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_le_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32)
}

/// How a turn stopped early.
enum Stop {
    /// `session/cancel` arrived (or the user cancelled the permission dialog).
    Cancelled,
    /// A call to the client failed in a way that ends the turn.
    Failed(RpcError),
}

impl From<RpcError> for Stop {
    fn from(e: RpcError) -> Self {
        Stop::Failed(e)
    }
}

impl DemoAgent {
    /// The typed handlers. Each closure clones the `Arc` and calls a method.
    fn router(self: &Arc<Self>) -> Router {
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        let (f, g, h) = (self.clone(), self.clone(), self.clone());
        Router::new()
            .route_raw("initialize", move |p, _cx| {
                let a = a.clone();
                async move { a.initialize_raw(p) }
            })
            .route::<typed::Authenticate, _, _>(move |p, _cx| {
                let f = f.clone();
                async move { f.authenticate(p) }
            })
            .route::<typed::ResumeSession, _, _>(move |p, _cx| {
                let g = g.clone();
                async move { g.resume_session(p) }
            })
            .route::<typed::ListSessions, _, _>(move |p, _cx| {
                let h = h.clone();
                async move { h.list_sessions(p) }
            })
            .route::<typed::NewSession, _, _>(move |p, cx| {
                let b = b.clone();
                async move {
                    let answer = b.new_session(p)?;
                    // The commands go right behind the answer (clients keep updates that
                    // arrive before they have set the session up).
                    let client = cx.client();
                    let id = answer.session_id.clone();
                    tokio::spawn(async move {
                        let _ = client.session_update(commands_update(id)).await;
                    });
                    Ok(answer)
                }
            })
            .route::<typed::LoadSession, _, _>(move |p, cx| {
                let c = c.clone();
                async move { c.load_session(p, cx).await }
            })
            .route::<typed::Prompt, _, _>(move |p, cx| {
                let d = d.clone();
                async move { d.prompt(p, cx).await }
            })
            .notification::<typed::Cancel, _, _>(move |p, _cx| {
                let e = e.clone();
                async move { e.cancel(&p.session_id) }
            })
    }

    fn initialize(&self, p: s::InitializeRequest) -> s::InitializeResponse {
        // Answer with the client's version if we speak it, else ours (the spec's negotiation).
        let version = if p.protocol_version == agent_client_protocol_schema::ProtocolVersion::V1 {
            p.protocol_version
        } else {
            agent_client_protocol_schema::ProtocolVersion::LATEST
        };
        let mut caps = s::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                s::PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true),
            );
        if self.store.is_some() {
            let mut sessions =
                s::SessionCapabilities::new().list(s::SessionListCapabilities::new());
            if !self.options.no_resume {
                sessions = sessions.resume(s::SessionResumeCapabilities::new());
            }
            caps = caps.session_capabilities(sessions);
        }
        s::InitializeResponse::new(version)
            .agent_capabilities(caps)
            .agent_info(
                s::Implementation::new("acp-demo-agent", env!("CARGO_PKG_VERSION"))
                    .title("acp demo agent (offline, deterministic)".to_string()),
            )
    }

    /// `initialize` as JSON: the typed answer plus, with `--require-auth`, an `env_var` auth
    /// method (a method type the typed schema does not have yet).
    fn initialize_raw(
        &self,
        params: Option<Box<serde_json::value::RawValue>>,
    ) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
        let p: s::InitializeRequest = typed::decode_params::<typed::Initialize>(params.as_deref())
            .map_err(ErrorObject::invalid_params)?;
        let mut answer = serde_json::to_value(self.initialize(p)).map_err(ErrorObject::internal)?;
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
    fn authenticate(
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
    fn resume_session(
        &self,
        p: s::ResumeSessionRequest,
    ) -> Result<s::ResumeSessionResponse, ErrorObject> {
        self.check_auth()?;
        check_cwd(&p.cwd)?;
        let key = p.session_id.0.to_string();
        if !self.restore(&key, &p.cwd, mcp_names(&p.mcp_servers)) {
            return Err(ErrorObject::new(
                ErrorCode::ResourceNotFound,
                format!("Resource not found: unknown session {key}"),
            )
            .with_data(serde_json::json!({ "sessionId": key })));
        }
        Ok(s::ResumeSessionResponse::new())
    }

    /// `session/list`: the sessions of the state directory and of this process (for `cwd` when
    /// given), most recent first.
    fn list_sessions(
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

    fn new_session(&self, p: s::NewSessionRequest) -> Result<s::NewSessionResponse, ErrorObject> {
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
    /// loaded again (its history is replayed); an unknown id starts empty.
    async fn load_session(
        &self,
        p: s::LoadSessionRequest,
        cx: RequestContext,
    ) -> Result<s::LoadSessionResponse, ErrorObject> {
        self.check_auth()?;
        check_cwd(&p.cwd)?;
        let key = p.session_id.0.to_string();
        let mcp = mcp_names(&p.mcp_servers);
        let history = {
            if !self.restore(&key, &p.cwd, mcp.clone()) {
                let mut sessions = self.sessions.lock().unwrap();
                sessions.insert(key.clone(), Session::new(p.cwd.clone(), mcp));
            }
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

    fn cancel(&self, session_id: &s::SessionId) {
        if let Some(session) = self.sessions.lock().unwrap().get(&*session_id.0) {
            session.turn.cancel();
        }
    }

    /// One prompt turn.
    async fn prompt(
        &self,
        p: s::PromptRequest,
        cx: RequestContext,
    ) -> Result<s::PromptResponse, ErrorObject> {
        let key = p.session_id.0.to_string();
        let (cwd, cancel) = {
            let mut sessions = self.sessions.lock().unwrap();
            let Some(session) = sessions.get_mut(&key) else {
                // As the official SDK (`RequestError.sessionNotFound`): -32002 with the id.
                return Err(ErrorObject::new(
                    ErrorCode::ResourceNotFound,
                    format!("Resource not found: unknown session {key}"),
                )
                .with_data(serde_json::json!({ "sessionId": key })));
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
            cancel,
        };
        turn.record(s::SessionUpdate::UserMessageChunk(s::ContentChunk::new(
            text.clone().into(),
        )));
        let outcome = turn.run(&text).await;
        self.persist(&key);
        let stop_reason = match outcome {
            Ok(reason) => reason,
            Err(Stop::Cancelled) => s::StopReason::Cancelled,
            // A closed connection or a refused call: nobody is listening for a clean answer
            // any more, or the client broke the turn. Report it as an error.
            Err(Stop::Failed(e)) => return Err(e.to_error_object()),
        };
        Ok(s::PromptResponse::new(stop_reason))
    }
}

/// The state of one prompt turn.
struct Turn<'a> {
    agent: &'a DemoAgent,
    client: AgentSideConnection,
    session_id: s::SessionId,
    cwd: PathBuf,
    cancel: CancellationToken,
}

impl Turn<'_> {
    async fn run(&mut self, text: &str) -> Result<s::StopReason, Stop> {
        if let Some(reply) = command_reply(text) {
            self.chunk(&reply).await?;
            return Ok(s::StopReason::EndTurn);
        }
        let caps = self.client.client_capabilities();
        let files = files_named_in(text, &self.cwd);
        let command = command_in(text);
        if text.contains("#mcp") {
            let names = self
                .agent
                .sessions
                .lock()
                .unwrap()
                .get(&*self.session_id.0)
                .map(|s| s.mcp.clone())
                .unwrap_or_default();
            let answer = if names.is_empty() {
                "MCP servers: none".to_string()
            } else {
                format!("MCP servers: {}", names.join(", "))
            };
            self.chunk(&answer).await?;
            return Ok(s::StopReason::EndTurn);
        }

        // 1. The plan: what this turn will do, updated as steps complete.
        let mut plan = vec![plan_entry("Understand the request", Status::InProgress)];
        if caps.read_text_file && !files.is_empty() {
            plan.push(plan_entry(
                format!("Read {} file(s) named in the prompt", files.len()),
                Status::Pending,
            ));
        }
        if caps.terminal {
            plan.push(plan_entry(
                format!("Run `{}`", command.join(" ")),
                Status::Pending,
            ));
        }
        if caps.write_text_file {
            plan.push(plan_entry(format!("Write {DEMO_FILE}"), Status::Pending));
        }
        self.send_plan(&plan).await?;

        // 2. A thought, then the answer streamed in several chunks.
        self.step().await?;
        self.send(s::SessionUpdate::AgentThoughtChunk(s::ContentChunk::new(
            format!(
                "The user wrote {} characters; no model here, just a demo.",
                text.len()
            )
            .into(),
        )))
        .await?;
        if text.contains("#refuse") {
            self.chunk("I won't do that (you asked me to refuse with #refuse).")
                .await?;
            return Ok(s::StopReason::Refusal);
        }
        for piece in answer_chunks(text) {
            self.step().await?;
            self.chunk(&piece).await?;
        }
        if text.contains("#max-tokens") {
            self.chunk(" …and here I run out of tokens (#max-tokens).")
                .await?;
            return Ok(s::StopReason::MaxTokens);
        }
        if text.contains("#crash") {
            // For clients' crash handling: the answer so far goes out, then a line on stderr
            // and exit code 70, mid-turn.
            let _ =
                tokio::time::timeout(Duration::from_secs(2), self.client.handle().flushed()).await;
            eprintln!("acp demo-agent: crashing mid-answer as asked (#crash)");
            std::process::exit(70);
        }
        plan[0].status = Status::Completed;
        let mut next = 1;

        // 3. Read the files the prompt names, through the client (it may have unsaved edits).
        if caps.read_text_file && !files.is_empty() {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            for path in &files {
                self.step().await?;
                self.read_file(path).await?;
            }
            plan[next].status = Status::Completed;
            next += 1;
        }

        // 4. Run a command in a client terminal.
        if caps.terminal {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            self.step().await?;
            self.run_command(&command).await?;
            plan[next].status = Status::Completed;
            next += 1;
        }

        // 5. Write a file, after asking for permission.
        if caps.write_text_file {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            self.step().await?;
            let written = self.write_file(text).await?;
            plan[next].status = Status::Completed;
            self.send_plan(&plan).await?;
            let end = if written {
                format!("\nI wrote {DEMO_FILE} in {}.", self.cwd.display())
            } else {
                format!("\nOK, I did not write {DEMO_FILE}.")
            };
            self.chunk(&end).await?;
        } else {
            self.send_plan(&plan).await?;
            self.chunk("\n(The client cannot write files, so I wrote nothing.)")
                .await?;
        }
        Ok(s::StopReason::EndTurn)
    }

    /// A pause between steps (the `--delay-ms` option) that ends early, with
    /// [`Stop::Cancelled`], when the turn is cancelled.
    async fn step(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if !self.agent.options.delay.is_zero() {
            tokio::select! {
                _ = self.cancel.cancelled() => return Err(Stop::Cancelled),
                _ = tokio::time::sleep(self.agent.options.delay) => {}
            }
        }
        Ok(())
    }

    /// Keeps an update for `session/load` without sending it.
    fn record(&self, update: s::SessionUpdate) {
        let mut sessions = self.agent.sessions.lock().unwrap();
        if let Some(session) = sessions.get_mut(&*self.session_id.0) {
            session.history.push(update);
        }
    }

    async fn send(&self, update: s::SessionUpdate) -> Result<(), Stop> {
        self.record(update.clone());
        let n = s::SessionNotification::new(self.session_id.clone(), update);
        self.client.session_update(n).await?;
        Ok(())
    }

    async fn chunk(&self, text: &str) -> Result<(), Stop> {
        self.send(s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(
            text.to_string().into(),
        )))
        .await
    }

    async fn send_plan(&self, entries: &[PlanEntry]) -> Result<(), Stop> {
        let entries = entries
            .iter()
            .map(|e| {
                s::PlanEntry::new(
                    e.content.clone(),
                    s::PlanEntryPriority::Medium,
                    e.status.wire(),
                )
            })
            .collect();
        self.send(s::SessionUpdate::Plan(s::Plan::new(entries)))
            .await
    }

    async fn tool_call(&self, call: s::ToolCall) -> Result<(), Stop> {
        self.send(s::SessionUpdate::ToolCall(call)).await
    }

    async fn tool_update(&self, id: &str, fields: s::ToolCallUpdateFields) -> Result<(), Stop> {
        self.send(s::SessionUpdate::ToolCallUpdate(s::ToolCallUpdate::new(
            id.to_string(),
            fields,
        )))
        .await
    }

    fn tool_id(&self, what: &str) -> String {
        let n = self
            .agent
            .sessions
            .lock()
            .unwrap()
            .get(&*self.session_id.0)
            .map_or(0, |s| s.history.len());
        format!("{what}-{n}")
    }

    async fn read_file(&self, path: &Path) -> Result<(), Stop> {
        let id = self.tool_id("read");
        self.tool_call(
            s::ToolCall::new(id.clone(), format!("Read {}", path.display()))
                .kind(s::ToolKind::Read)
                .status(s::ToolCallStatus::InProgress)
                .locations(vec![s::ToolCallLocation::new(path)]),
        )
        .await?;
        let request = s::ReadTextFileRequest::new(self.session_id.clone(), path);
        let fields = match self.client.read_text_file(request).await {
            Ok(r) => {
                let lines = r.content.lines().count();
                let first = r.content.lines().next().unwrap_or("").chars().take(80);
                let summary = format!("{lines} line(s); first line: {}", first.collect::<String>());
                s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Completed)
                    .content(vec![summary.into()])
            }
            Err(e) if e.is_closed() => return Err(e.into()),
            // The client refused (outside its roots, not UTF-8...): report it and go on.
            Err(e) => s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::Failed)
                .content(vec![format!("could not read: {e}").into()]),
        };
        self.tool_update(&id, fields).await
    }

    async fn run_command(&self, command: &[String]) -> Result<(), Stop> {
        let id = self.tool_id("run");
        let title = format!("Run `{}`", command.join(" "));
        self.tool_call(
            s::ToolCall::new(id.clone(), title)
                .kind(s::ToolKind::Execute)
                .status(s::ToolCallStatus::Pending)
                .raw_input(serde_json::json!({ "command": command })),
        )
        .await?;
        let request = s::CreateTerminalRequest::new(self.session_id.clone(), command[0].clone())
            .args(command[1..].to_vec())
            .cwd(self.cwd.clone())
            .output_byte_limit(64 * 1024);
        let terminal = match self.client.create_terminal(request).await {
            Ok(t) => t,
            Err(e) if e.is_closed() => return Err(e.into()),
            Err(e) => {
                let fields = s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Failed)
                    .content(vec![format!("could not start: {e}").into()]);
                return self.tool_update(&id, fields).await;
            }
        };
        // Show the live terminal in the tool call, then wait for it (or for a cancel).
        let embed = s::ToolCallContent::Terminal(s::Terminal::new(terminal.id().clone()));
        self.tool_update(
            &id,
            s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::InProgress)
                .content(vec![embed]),
        )
        .await?;
        let exit = tokio::select! {
            _ = self.cancel.cancelled() => {
                let _ = terminal.kill().await;
                let _ = terminal.release().await;
                return Err(Stop::Cancelled);
            }
            exit = terminal.wait_for_exit() => exit?,
        };
        let output = terminal.current_output().await?;
        let _ = terminal.release().await;
        let ok = exit.exit_status.exit_code == Some(0);
        let status = match (exit.exit_status.exit_code, &exit.exit_status.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by {sig}"),
            (None, None) => "ended".to_string(),
        };
        let mut text = output.output;
        if output.truncated {
            text.insert_str(0, "[output truncated]\n");
        }
        text.push_str(&format!("[{status}]"));
        self.tool_update(
            &id,
            s::ToolCallUpdateFields::new()
                .status(if ok {
                    s::ToolCallStatus::Completed
                } else {
                    s::ToolCallStatus::Failed
                })
                .content(vec![text.into()])
                .raw_output(serde_json::json!({ "exitCode": exit.exit_status.exit_code })),
        )
        .await
    }

    /// Asks permission, then writes [`DEMO_FILE`]. Returns whether it was written.
    async fn write_file(&self, text: &str) -> Result<bool, Stop> {
        let id = self.tool_id("write");
        let path = self.cwd.join(DEMO_FILE);
        let content = format!("The acp demo agent was asked:\n\n{text}\n");
        // The file's text before the edit (through the client: it may have unsaved changes),
        // so the diff shows the change, not a new file. None: the file does not exist yet.
        let old_text = if self.client.client_capabilities().read_text_file {
            let request = s::ReadTextFileRequest::new(self.session_id.clone(), &path);
            match self.client.read_text_file(request).await {
                Ok(r) => Some(r.content),
                Err(e) if e.is_closed() => return Err(e.into()),
                Err(_) => None,
            }
        } else {
            std::fs::read_to_string(&path).ok()
        };
        let call = s::ToolCall::new(id.clone(), format!("Write {DEMO_FILE}"))
            .kind(s::ToolKind::Edit)
            .status(s::ToolCallStatus::Pending)
            .locations(vec![s::ToolCallLocation::new(&path)])
            .content(vec![s::ToolCallContent::Diff(
                s::Diff::new(&path, content.clone()).old_text(old_text),
            )]);
        self.tool_call(call).await?;

        let options = vec![
            s::PermissionOption::new(
                "allow",
                "Allow this write",
                s::PermissionOptionKind::AllowOnce,
            ),
            s::PermissionOption::new(
                "reject",
                "Do not write",
                s::PermissionOptionKind::RejectOnce,
            ),
        ];
        let request = s::RequestPermissionRequest::new(
            self.session_id.clone(),
            s::ToolCallUpdate::new(
                id.clone(),
                s::ToolCallUpdateFields::new()
                    .title(format!("Write {}", path.display()))
                    .kind(s::ToolKind::Edit),
            ),
            options,
        );
        // The client answers `cancelled` itself when it sends `session/cancel`; racing the
        // token as well keeps the turn responsive with clients that are slow to do so.
        let answer = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Stop::Cancelled),
            answer = self.client.request_permission(request) => answer?,
        };
        let allowed = match answer.outcome {
            s::RequestPermissionOutcome::Selected(sel) => &*sel.option_id.0 == "allow",
            // `cancelled`: the turn was cancelled while we waited.
            _ => {
                self.tool_update(
                    &id,
                    s::ToolCallUpdateFields::new().status(s::ToolCallStatus::Failed),
                )
                .await?;
                return Err(Stop::Cancelled);
            }
        };
        if !allowed {
            self.tool_update(
                &id,
                s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Failed)
                    .content(vec!["the user rejected this write".to_string().into()]),
            )
            .await?;
            return Ok(false);
        }
        self.step().await?;
        let request = s::WriteTextFileRequest::new(self.session_id.clone(), &path, content);
        let fields = match self.client.write_text_file(request).await {
            Ok(_) => s::ToolCallUpdateFields::new().status(s::ToolCallStatus::Completed),
            Err(e) if e.is_closed() => return Err(e.into()),
            Err(e) => s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::Failed)
                .content(vec![format!("could not write: {e}").into()]),
        };
        let ok = matches!(fields.status, Some(s::ToolCallStatus::Completed));
        self.tool_update(&id, fields).await?;
        Ok(ok)
    }
}

#[derive(Clone, Copy)]
enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    fn wire(self) -> s::PlanEntryStatus {
        match self {
            Status::Pending => s::PlanEntryStatus::Pending,
            Status::InProgress => s::PlanEntryStatus::InProgress,
            Status::Completed => s::PlanEntryStatus::Completed,
        }
    }
}

struct PlanEntry {
    content: String,
    status: Status,
}

fn plan_entry(content: impl Into<String>, status: Status) -> PlanEntry {
    PlanEntry {
        content: content.into(),
        status,
    }
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

/// The prompt's text blocks, joined; other blocks are named, with what they carry.
fn prompt_text(blocks: &[s::ContentBlock]) -> String {
    let mut out = Vec::new();
    for block in blocks {
        match block {
            s::ContentBlock::Text(t) => out.push(t.text.clone()),
            s::ContentBlock::ResourceLink(l) => out.push(format!("[resource_link {}]", l.uri)),
            s::ContentBlock::Resource(r) => out.push(match &r.resource {
                s::EmbeddedResourceResource::TextResourceContents(t) => {
                    format!(
                        "[resource {} ({} characters)]",
                        t.uri,
                        t.text.chars().count()
                    )
                }
                s::EmbeddedResourceResource::BlobResourceContents(b) => {
                    format!("[resource {} (binary)]", b.uri)
                }
                _ => "[resource]".to_string(),
            }),
            s::ContentBlock::Image(i) => out.push(format!(
                "[image {}, {} bytes]",
                i.mime_type,
                i.data.trim_end_matches('=').len() * 3 / 4
            )),
            _ => out.push("[non-text content]".to_string()),
        }
    }
    out.join("\n")
}

/// The `available_commands_update` for a new session.
fn commands_update(session_id: s::SessionId) -> s::SessionNotification {
    let commands = COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            let c = s::AvailableCommand::new(*name, *description);
            match hint {
                Some(h) => c.input(s::AvailableCommandInput::Unstructured(
                    s::UnstructuredCommandInput::new(*h),
                )),
                None => c,
            }
        })
        .collect();
    s::SessionNotification::new(
        session_id,
        s::SessionUpdate::AvailableCommandsUpdate(s::AvailableCommandsUpdate::new(commands)),
    )
}

/// The answer to a prompt that is one of [`COMMANDS`] (`/echo TEXT`, `/help`), or None.
fn command_reply(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    match name {
        "echo" => Some(arg.trim().to_string()),
        "help" => {
            let mut out = String::from("Commands:\n");
            for (name, description, hint) in COMMANDS {
                let hint = hint.map(|h| format!(" <{h}>")).unwrap_or_default();
                out.push_str(&format!("- /{name}{hint}: {description}\n"));
            }
            out.push_str(
                "Magic words: #refuse, #max-tokens, #mcp; a `command` in backticks is what I run.",
            );
            Some(out)
        }
        _ => None,
    }
}

/// The deterministic answer, cut into chunks of a few words.
fn answer_chunks(text: &str) -> Vec<String> {
    let answer = format!(
        "Hello from the acp demo agent. You said: \"{}\". I am not a model; I show what an \
         ACP agent can do: plans, streamed text, tool calls, permission requests, files and \
         terminals.",
        text.trim()
    );
    let words: Vec<&str> = answer.split(' ').collect();
    words
        .chunks(4)
        .enumerate()
        .map(|(i, w)| {
            let piece = w.join(" ");
            if i == 0 {
                piece
            } else {
                format!(" {piece}")
            }
        })
        .collect()
}

/// Existing regular files the prompt names: words that are absolute paths or paths relative
/// to the session's cwd (quotes and trailing punctuation ignored). At most 5.
fn files_named_in(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(['"', '\'', '`', '(', ')', '<', '>'])
            .trim_end_matches([',', '.', ';', ':', '?', '!']);
        if word.is_empty() {
            continue;
        }
        let path = Path::new(word);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        };
        if full.is_file() && !out.contains(&full) {
            out.push(full);
        }
        if out.len() == 5 {
            break;
        }
    }
    out
}

/// The command to run: the first `backticked` span of the prompt split on whitespace, or `ls`.
fn command_in(text: &str) -> Vec<String> {
    let mut parts = text.split('`');
    if let (Some(_), Some(inner), Some(_)) = (parts.next(), parts.next(), parts.next()) {
        let words: Vec<String> = inner.split_whitespace().map(str::to_string).collect();
        if !words.is_empty() {
            return words;
        }
    }
    vec!["ls".to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_come_from_backticks_or_default_to_ls() {
        assert_eq!(
            command_in("please run `echo hi there`"),
            ["echo", "hi", "there"]
        );
        assert_eq!(command_in("no command"), ["ls"]);
        assert_eq!(command_in("unclosed `echo"), ["ls"]);
        assert_eq!(command_in("empty `` here"), ["ls"]);
    }

    #[test]
    fn slash_commands_answer_alone() {
        assert_eq!(
            command_reply("/echo  hello there ").as_deref(),
            Some("hello there")
        );
        assert_eq!(command_reply("/echo").as_deref(), Some(""));
        let help = command_reply("/help").unwrap();
        assert!(help.contains("- /echo <text to echo>: Answer with the given text"));
        assert!(help.contains("- /help: List"));
        assert_eq!(command_reply("/unknown x"), None);
        assert_eq!(command_reply("not /echo"), None);
        let n = serde_json::to_value(commands_update("s-1".to_string().into())).unwrap();
        assert_eq!(n["update"]["sessionUpdate"], "available_commands_update");
        assert_eq!(n["update"]["availableCommands"][0]["name"], "echo");
        assert_eq!(
            n["update"]["availableCommands"][0]["input"]["hint"],
            "text to echo"
        );
        assert_eq!(n["update"]["availableCommands"][1]["name"], "help");
    }

    #[test]
    fn attachments_are_named_with_what_they_carry() {
        let blocks: Vec<s::ContentBlock> = serde_json::from_value(serde_json::json!([
            { "type": "text", "text": "look at" },
            { "type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs" },
            { "type": "resource", "resource": { "uri": "file:///w/b.rs#L1-2", "text": "fn b() {}" } },
            { "type": "image", "mimeType": "image/png", "data": "aGVsbG8h" },
        ]))
        .unwrap();
        assert_eq!(
            prompt_text(&blocks),
            "look at\n[resource_link file:///w/a.rs]\n[resource file:///w/b.rs#L1-2 (9 characters)]\n[image image/png, 6 bytes]"
        );
    }

    #[test]
    fn answer_is_streamed_in_several_chunks_that_join_back() {
        let chunks = answer_chunks("hi");
        assert!(chunks.len() > 3);
        assert!(chunks.concat().contains("You said: \"hi\""));
    }

    #[test]
    fn files_are_found_relative_to_cwd_and_absolute() {
        let dir = std::env::temp_dir().join(format!("acp-demo-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "x").unwrap();
        let abs = dir.join("a.txt");
        let found = files_named_in(
            &format!("read a.txt, and \"{}\". nope.txt", abs.display()),
            &dir,
        );
        assert_eq!(found, vec![abs]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
