//! `acp chat`: a conversation with an agent in the terminal.
//!
//! The flow: spawn the agent ([`AgentProcess`], its own process group, stderr kept as a tail),
//! connect to it as a client ([`ClientSideConnection`]) through the [`Tap`] (for `--log-rpc`
//! and the "not JSON" warning), `initialize` (advertising `fs` read/write and `terminal`, served
//! by [`FsService`] and [`Terminals`] confined to `--cwd`), `session/new`, then prompt turns.
//!
//! Everything the agent asks of the client arrives through the [`Router`] and is forwarded to
//! the single UI loop as an [`Event`]: session updates (rendered by [`Ui`]) and permission
//! requests (answered by the user, or by `--yes` / `--deny`). The UI loop also watches Ctrl-C
//! (first: `session/cancel`; second: quit), the agent's exit, and the timeouts, so a crashed,
//! silent or misbehaving agent always ends in a message and an exit code, never a hang.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{typed, CallError, ErrorCode, ErrorObject, RawValue, Role};
use acp_native::fs_service::{AccessScope, FsConfig, FsError, FsService};
use acp_native::process::{AgentCommand, AgentProcess, ExitReport};
use acp_native::{ClientSideConnection, DriverConfig, Incoming, Router, RpcError};
use agent_client_protocol_schema::v1 as s;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, oneshot, watch, Mutex};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::exit;
use super::render::Ui;
use super::rpc_log::{Tap, TapReader, TapWriter, Warning};
use super::terminals::{command_line, Gate, Terminals};
use super::ChatArgs;

/// Start-up and per-request limit when `--timeout` is not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the agent gets to exit after its stdin closes (then SIGTERM, then SIGKILL).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// Longest wait to hand `session/cancel` to a connection whose peer stopped reading (its
/// write buffer is full): the turn ends anyway.
const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(2);
/// After the connection drops, how long to wait for the agent's exit status.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(3);

/// How the command ends: an exit code and, for failures, what to tell the user.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub message: Option<String>,
}

impl Outcome {
    fn code(code: i32) -> Outcome {
        Outcome {
            code,
            message: None,
        }
    }

    fn fail(code: i32, message: impl Into<String>) -> Outcome {
        Outcome {
            code,
            message: Some(message.into()),
        }
    }
}

/// What the connection's handlers hand to the UI loop.
enum Event {
    /// A `session/update` notification (raw params).
    Update(Option<Box<RawValue>>),
    /// A `session/request_permission` waiting for an answer.
    Permission(Box<PermissionAsk>),
}

struct PermissionAsk {
    request: s::RequestPermissionRequest,
    reply: oneshot::Sender<s::RequestPermissionOutcome>,
    /// Fires when the engine answered it already (we sent `session/cancel`, or it closed).
    withdrawn: CancellationToken,
}

/// How permission requests are answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PermissionMode {
    Ask,
    Allow,
    Deny,
}

/// Runs `acp chat`; returns the exit code.
pub async fn run(args: ChatArgs) -> i32 {
    let ui = Ui::new(args.json);
    let outcome = match Chat::start(&args, ui.clone()).await {
        Ok(mut chat) => {
            let outcome = chat.converse(&args).await;
            chat.shutdown().await;
            outcome
        }
        Err(outcome) => outcome,
    };
    ui.spinner_stop();
    if let Some(message) = &outcome.message {
        ui.error(message);
    }
    outcome.code
}

struct Chat {
    ui: Ui,
    conn: ClientSideConnection,
    process: Arc<Mutex<AgentProcess>>,
    /// The agent's exit report, once it exited.
    exited: watch::Receiver<Option<ExitReport>>,
    events: mpsc::UnboundedReceiver<Event>,
    warnings: mpsc::UnboundedReceiver<Warning>,
    tap: Arc<Tap>,
    sigint: Signal,
    stdin: Stdin,
    mode: PermissionMode,
    timeout: Duration,
    idle_limit: Option<Duration>,
    session_id: s::SessionId,
    program: String,
    terminals: Terminals,
    /// The last non-JSON line the agent printed (for error messages).
    last_garbage: Option<String>,
    /// `session/update`s shown so far; compared with [`Tap::updates_received`].
    rendered: u64,
    /// The agent's requests being served (a turn is not "silent" while one runs).
    activity: Arc<Activity>,
    /// Permission requests to answer `cancelled` once `session/cancel` is sent.
    cancelling: Vec<oneshot::Sender<s::RequestPermissionOutcome>>,
}

impl Chat {
    /// Spawns the agent, initializes it and opens a session.
    async fn start(args: &ChatArgs, ui: Ui) -> Result<Chat, Outcome> {
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| Outcome::fail(exit::ERROR, format!("no current directory: {e}")))?,
        };
        let cwd = std::fs::canonicalize(&cwd)
            .map_err(|e| Outcome::fail(exit::ERROR, format!("--cwd {}: {e}", cwd.display())))?;
        if !cwd.is_dir() {
            return Err(Outcome::fail(
                exit::ERROR,
                format!("--cwd {} is not a directory", cwd.display()),
            ));
        }
        let sigint = signal(SignalKind::interrupt())
            .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot handle Ctrl-C: {e}")))?;
        let command: Vec<OsString> = if args.agent.is_empty() {
            super::default_agent()
        } else {
            args.agent.clone()
        };
        let program = command[0].to_string_lossy().into_owned();

        // The agent runs in --cwd, without a shell, with an explicit environment: the
        // allowlist plus what --env passes (its API key...), or everything (--inherit-env).
        let env = args.env_policy();
        let cmd = AgentCommand::new(command[0].clone())
            .args(command[1..].iter().cloned())
            .cwd(&cwd)
            .env(env.clone());
        let mut process = AgentProcess::spawn(&cmd)
            .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot start the agent: {e}")))?;
        let stdin = process.take_stdin().expect("a new process has stdin");
        let stdout = process.take_stdout().expect("a new process has stdout");

        let (warn_tx, warnings) = mpsc::unbounded_channel();
        let tap = Tap::new(
            args.log_rpc.as_deref(),
            Some(warn_tx),
            args.max_message_bytes,
        )
        .map_err(|e| {
            Outcome::fail(
                exit::ERROR,
                format!("cannot create the --log-rpc file: {e}"),
            )
        })?;

        let (event_tx, events) = mpsc::unbounded_channel();
        let terminals = Terminals::new(cwd.clone(), env, args.max_terminals);
        ui.set_terminal_output(terminals.output_lookup());
        let activity = Arc::new(Activity::default());
        let router = CountInFlight {
            inner: client_router(event_tx, &cwd, terminals.clone()),
            activity: activity.clone(),
        };
        let mut config = DriverConfig::new(Role::Client).eof_grace(EXIT_REPORT_WAIT);
        config.core.max_message_bytes = args.max_message_bytes;
        config.core.max_incoming_in_flight = args.max_concurrent_requests;
        let conn = ClientSideConnection::connect(
            TapReader::new(stdout, tap.clone()),
            TapWriter::new(stdin, tap.clone()),
            router,
            config,
        );

        // When the agent exits, the connection closes with its exit report as the reason.
        let exit_status = process.exit_status();
        let process = Arc::new(Mutex::new(process));
        let (exit_tx, exited) = watch::channel(None);
        {
            let process = process.clone();
            let handle = conn.handle().clone();
            tokio::spawn(async move {
                exit_status.await;
                let report = process.lock().await.wait().await;
                // Its last messages (still in the pipe) are read first (bounded: a grandchild
                // may hold the pipe open).
                handle.close_at_eof_with_reason(report.to_string());
                let _ = exit_tx.send(Some(report.clone()));
                tokio::time::sleep(EXIT_REPORT_WAIT).await;
                handle.close_with_reason(report.to_string());
            });
        }

        let mode = if args.yes {
            PermissionMode::Allow
        } else if args.deny {
            PermissionMode::Deny
        } else {
            PermissionMode::Ask
        };
        let mut chat = Chat {
            ui,
            conn,
            process,
            exited,
            events,
            warnings,
            tap,
            sigint,
            stdin: Stdin::new(),
            mode,
            timeout: args.timeout.unwrap_or(DEFAULT_TIMEOUT),
            idle_limit: args.timeout,
            session_id: s::SessionId::new(""),
            program,
            terminals,
            last_garbage: None,
            rendered: 0,
            activity,
            cancelling: Vec::new(),
        };
        match chat.open_session(&cwd, args.load.as_deref()).await {
            Ok(()) => Ok(chat),
            Err(outcome) => {
                chat.shutdown().await;
                Err(outcome)
            }
        }
    }

    async fn open_session(
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
        let info = self.wait("initialize", conn.initialize(init)).await?;
        let name = info
            .agent_info
            .as_ref()
            .map(|i| {
                let title = i.title.clone().unwrap_or_else(|| i.name.clone());
                format!("{title} {}", i.version)
            })
            .unwrap_or_else(|| self.program.clone());

        if let Some(id) = load {
            if !info.agent_capabilities.load_session {
                return Err(Outcome::fail(
                    exit::ERROR,
                    format!("{name} cannot load sessions (its `loadSession` capability is false)"),
                ));
            }
            // The agent replays the conversation as `session/update`s before it answers; they
            // are shown in order before the first prompt.
            let request = s::LoadSessionRequest::new(id.to_string(), cwd);
            self.wait("session/load", conn.load_session(request))
                .await?;
            self.session_id = s::SessionId::new(id);
            self.ui.spinner_stop();
            self.ui.notice(&format!(
                "connected to {name}; loaded session {id} in {}",
                cwd.display()
            ));
            return Ok(());
        }
        let new = s::NewSessionRequest::new(cwd);
        let session = match self.wait_raw(conn.new_session(new.clone())).await? {
            Ok(session) => session,
            // The agent wants `authenticate` first: try the first method it offers.
            Err(e) if is_auth_required(&e) && !info.auth_methods.is_empty() => {
                let method = info.auth_methods[0].clone();
                let id = method.id().clone();
                self.ui.notice(&format!(
                    "authenticating with the agent's `{}` method…",
                    id.0
                ));
                self.wait(
                    "authenticate",
                    conn.authenticate(s::AuthenticateRequest::new(id)),
                )
                .await?;
                self.wait("session/new", conn.new_session(new)).await?
            }
            Err(e) => return Err(self.explain("session/new", e).await),
        };
        self.session_id = session.session_id;
        self.ui.spinner_stop();
        self.ui.notice(&format!(
            "connected to {name}; session {} in {}",
            self.session_id.0,
            cwd.display()
        ));
        Ok(())
    }

    /// Runs the conversation: one `--prompt` turn, or prompts read from stdin.
    async fn converse(&mut self, args: &ChatArgs) -> Outcome {
        if let Some(prompt) = &args.prompt {
            return match self.turn(prompt.clone()).await {
                Ok(reason) => Outcome::code(stop_reason_code(reason)),
                Err(outcome) => outcome,
            };
        }
        let interactive = self.stdin.is_terminal;
        if interactive {
            self.ui.notice(
                "type a prompt and press Enter; Ctrl-C cancels a turn, Ctrl-D (or /quit) quits",
            );
        }
        let mut last = Outcome::code(exit::OK);
        let mut interrupted_once = false;
        loop {
            if interactive {
                self.ui.input_prompt();
            }
            let line = tokio::select! {
                line = self.stdin.next_line() => line,
                _ = self.sigint.recv() => {
                    if interrupted_once {
                        return Outcome::code(exit::INTERRUPTED);
                    }
                    interrupted_once = true;
                    self.ui.notice("(press Ctrl-C again or Ctrl-D to quit)");
                    continue;
                }
                report = wait_exit(&mut self.exited) => {
                    return Outcome::fail(exit::ERROR, format!("the agent stopped: {report}"));
                }
                Some(event) = self.events.recv() => {
                    self.idle_event(event);
                    continue;
                }
                Some(line) = self.warnings.recv() => {
                    self.garbage(line);
                    continue;
                }
            };
            interrupted_once = false;
            let Some(line) = line else { break };
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            if text == "/quit" || text == "/exit" {
                break;
            }
            match self.turn(text.to_string()).await {
                Ok(reason) => last = Outcome::code(stop_reason_code(reason)),
                // Quitting or a dead agent ends the chat; a failed turn does not.
                Err(o) if o.code == exit::INTERRUPTED || self.conn.is_closed() => return o,
                Err(o) => {
                    if let Some(m) = &o.message {
                        self.ui.error(m);
                    }
                    last = Outcome::code(o.code);
                }
            }
        }
        if interactive {
            Outcome::code(exit::OK)
        } else {
            last
        }
    }

    /// One prompt turn: sends `session/prompt`, renders what comes until its response.
    async fn turn(&mut self, text: String) -> Result<s::StopReason, Outcome> {
        self.ui.spinner_start("thinking…");
        let request = s::PromptRequest::new(self.session_id.clone(), vec![text.into()]);
        let conn = self.conn.without_timeout();
        let prompt = conn.prompt(request);
        tokio::pin!(prompt);
        let mut cancel_sent = false;
        // `session/cancel` sent for a permission request answered `cancelled`.
        let mut session_cancelled = false;
        let mut last_activity = Instant::now();
        let mut asks: VecDeque<PermissionAsk> = VecDeque::new();
        let result = loop {
            let idle_deadline = self.idle_limit.map(|d| last_activity + d);
            let withdrawn = asks.front().map(|a| a.withdrawn.clone());
            tokio::select! {
                result = &mut prompt => break result,
                Some(event) = self.events.recv() => {
                    last_activity = Instant::now();
                    match event {
                        Event::Update(params) => self.render_update(params),
                        Event::Permission(ask) if cancel_sent || session_cancelled => {
                            self.ui.permission_outcome(&ask.request, "cancelled (the turn was cancelled)");
                            let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                        }
                        Event::Permission(ask) => {
                            if let Some(ask) = self.auto_answer(*ask) {
                                asks.push_back(ask);
                                if asks.len() == 1 {
                                    self.ui.permission_dialog(&asks[0].request);
                                }
                            }
                            self.send_cancelled(&conn, &mut session_cancelled).await;
                        }
                    }
                }
                Some(line) = self.warnings.recv() => self.garbage(line),
                line = self.stdin.next_line(), if !asks.is_empty() => {
                    last_activity = Instant::now();
                    let ask = &asks[0];
                    let count = ask.request.options.len();
                    let choice = match &line {
                        None => None,
                        Some(l) => match l.trim().parse::<usize>() {
                            Ok(n) if (1..=count).contains(&n) => Some(n - 1),
                            _ => {
                                self.ui.permission_reask(count, l);
                                continue;
                            }
                        },
                    };
                    let ask = asks.pop_front().expect("checked non-empty");
                    match choice {
                        Some(i) => {
                            let opt = &ask.request.options[i];
                            self.ui.permission_outcome(&ask.request, &format!("{} (option {})", opt.name, i + 1));
                            let _ = ask.reply.send(s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(opt.option_id.clone())));
                        }
                        None => {
                            self.ui.end_input_line();
                            self.ui.permission_outcome(&ask.request, "cancelled (end of input)");
                            self.cancelling.push(ask.reply);
                            self.send_cancelled(&conn, &mut session_cancelled).await;
                        }
                    }
                    match asks.front() {
                        Some(next) => self.ui.permission_dialog(&next.request),
                        None => self.ui.spinner_start("thinking…"),
                    }
                }
                _ = async { withdrawn.expect("guarded").cancelled().await }, if withdrawn.is_some() => {
                    let ask = asks.pop_front().expect("checked non-empty");
                    self.ui.permission_outcome(&ask.request, "withdrawn (the turn was cancelled)");
                    match asks.front() {
                        Some(next) => self.ui.permission_dialog(&next.request),
                        None => self.ui.spinner_start("thinking…"),
                    }
                }
                _ = self.sigint.recv() => {
                    if cancel_sent {
                        return Err(Outcome::fail(exit::INTERRUPTED, "interrupted"));
                    }
                    cancel_sent = true;
                    self.ui.notice("cancelling the turn… (press Ctrl-C again to quit)");
                    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, conn.cancel(s::CancelNotification::new(self.session_id.clone()))).await;
                    // The schema: after `session/cancel`, every pending permission request is
                    // answered `cancelled` (our own terminal questions too: nothing waits on
                    // the agent withdrawing them).
                    for ask in asks.drain(..) {
                        self.ui.permission_outcome(&ask.request, "withdrawn (the turn was cancelled)");
                        let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                    }
                }
                _ = tokio::time::sleep_until(idle_deadline.unwrap_or_else(Instant::now)),
                    if idle_deadline.is_some() && asks.is_empty() => {
                    // Not silent if the agent wrote anything since, or waits on a request of
                    // its own that we are still serving (a long command in a terminal...).
                    let heard = self.tap.last_received().map(Instant::from_std);
                    if self.activity.in_flight() > 0 {
                        last_activity = Instant::now();
                        continue;
                    }
                    if let Some(t) = heard.into_iter().chain(self.activity.last_done()).max() {
                        if t > last_activity {
                            last_activity = t;
                            continue;
                        }
                    }
                    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, conn.cancel(s::CancelNotification::new(self.session_id.clone()))).await;
                    let secs = self.idle_limit.unwrap_or_default().as_secs_f64();
                    return Err(Outcome::fail(
                        exit::TIMEOUT,
                        format!("the agent sent nothing for {secs} s during the turn (--timeout); cancelled it{}",
                            self.stderr_hint().await),
                    ));
                }
            }
        };
        // Updates sent before the response may still be on their way to us: the tap has
        // counted them all, so render until that many have been shown.
        let expected = self.tap.updates_received();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.rendered < expected {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(Event::Update(params))) => self.render_update(params),
                Ok(Some(Event::Permission(ask))) => {
                    let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Warnings about what came with the turn (an oversize line...) are shown before its end.
        while let Ok(w) = self.warnings.try_recv() {
            self.garbage(w);
        }
        // Permission requests still open belong to a finished turn.
        for ask in asks {
            let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
        }
        match result {
            Ok(response) => {
                let reason = response.stop_reason;
                self.ui.turn_end(&self.session_id.0, &enum_name(&reason));
                Ok(reason)
            }
            Err(e) => {
                self.ui.spinner_stop();
                Err(self.explain("session/prompt", e).await)
            }
        }
    }

    fn render_update(&mut self, params: Option<Box<RawValue>>) {
        self.rendered += 1;
        self.ui.session_update(params.as_deref());
    }

    /// Between turns: shows updates at once (agents announce commands, modes...); refuses
    /// permission requests, which belong to turns.
    fn idle_event(&mut self, event: Event) {
        match event {
            Event::Update(params) => self.render_update(params),
            Event::Permission(ask) => {
                self.ui
                    .permission_outcome(&ask.request, "cancelled (no turn is running)");
                let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
            }
        }
    }

    /// Answers a permission request at once under `--yes` / `--deny`; returns it otherwise.
    /// A `cancelled` answer is only queued in `self.cancelling`: the turn sends
    /// `session/cancel` before it (the schema's order).
    fn auto_answer(&mut self, ask: PermissionAsk) -> Option<PermissionAsk> {
        if ask.request.options.is_empty() {
            self.ui
                .permission_outcome(&ask.request, "cancelled (the agent offered no options)");
            self.cancelling.push(ask.reply);
            return None;
        }
        let wanted: &[s::PermissionOptionKind] = match self.mode {
            PermissionMode::Ask => return Some(ask),
            PermissionMode::Allow => &[
                s::PermissionOptionKind::AllowOnce,
                s::PermissionOptionKind::AllowAlways,
            ],
            PermissionMode::Deny => &[
                s::PermissionOptionKind::RejectOnce,
                s::PermissionOptionKind::RejectAlways,
            ],
        };
        let flag = if self.mode == PermissionMode::Allow {
            "--yes"
        } else {
            "--deny"
        };
        let chosen = ask
            .request
            .options
            .iter()
            .find(|o| wanted.contains(&o.kind));
        match chosen {
            Some(opt) => {
                self.ui
                    .permission_outcome(&ask.request, &format!("{} ({flag})", opt.name));
                let _ = ask.reply.send(s::RequestPermissionOutcome::Selected(
                    s::SelectedPermissionOutcome::new(opt.option_id.clone()),
                ));
            }
            None => {
                self.ui.permission_outcome(
                    &ask.request,
                    &format!("cancelled ({flag}: the agent offered no such option)"),
                );
                self.cancelling.push(ask.reply);
            }
        }
        None
    }

    /// Answers the queued `cancelled` outcomes, after sending `session/cancel` for the turn
    /// (once): per the schema, `cancelled` is the answer of a client that cancelled the turn.
    async fn send_cancelled(&mut self, conn: &ClientSideConnection, session_cancelled: &mut bool) {
        if self.cancelling.is_empty() {
            return;
        }
        if !*session_cancelled {
            *session_cancelled = true;
            let _ = tokio::time::timeout(
                CANCEL_SEND_LIMIT,
                conn.cancel(s::CancelNotification::new(self.session_id.clone())),
            )
            .await;
        }
        for reply in self.cancelling.drain(..) {
            let _ = reply.send(s::RequestPermissionOutcome::Cancelled);
        }
    }

    fn garbage(&mut self, warning: Warning) {
        match warning {
            Warning::NotJson(line) => {
                self.ui.warn(&format!(
                    "the agent wrote a line that is not JSON to stdout (ignored): {line}"
                ));
                self.last_garbage = Some(line);
            }
            Warning::Oversize { limit, start } => {
                self.ui.warn(&format!(
                    "the agent wrote a message over the {limit}-byte limit (skipped): {start}…"
                ));
                self.last_garbage = Some(format!("(a message over {limit} bytes) {start}…"));
            }
        }
    }

    /// Awaits a start-up call, failing on its error, the agent's exit or Ctrl-C.
    async fn wait<T>(
        &mut self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, RpcError>>,
    ) -> Result<T, Outcome> {
        match self.wait_raw(call).await? {
            Ok(v) => Ok(v),
            Err(e) => Err(self.explain(what, e).await),
        }
    }

    async fn wait_raw<T>(
        &mut self,
        call: impl std::future::Future<Output = Result<T, RpcError>>,
    ) -> Result<Result<T, RpcError>, Outcome> {
        tokio::pin!(call);
        loop {
            tokio::select! {
                r = &mut call => return Ok(r),
                Some(line) = self.warnings.recv() => self.garbage(line),
                _ = self.sigint.recv() => return Err(Outcome::fail(exit::INTERRUPTED, "interrupted")),
            }
        }
    }

    /// Turns a failed call into a message for the user.
    async fn explain(&mut self, what: &str, e: RpcError) -> Outcome {
        // Keep warnings about garbage in order before the error.
        while let Ok(line) = self.warnings.try_recv() {
            self.garbage(line);
        }
        match &e {
            RpcError::Call(CallError::TimedOut { after_ms }) => Outcome::fail(
                exit::TIMEOUT,
                format!(
                    "the agent did not answer `{what}` within {} s (--timeout){}",
                    *after_ms as f64 / 1000.0,
                    self.stderr_hint().await
                ),
            ),
            RpcError::Call(CallError::Remote(err)) => Outcome::fail(
                exit::ERROR,
                format!("the agent answered `{what}` with an error: {err}"),
            ),
            _ if e.is_closed() => {
                let report = tokio::time::timeout(EXIT_REPORT_WAIT, wait_exit(&mut self.exited))
                    .await
                    .ok();
                match report {
                    Some(report) => Outcome::fail(
                        exit::ERROR,
                        format!("the agent stopped during `{what}`: {report}"),
                    ),
                    None => Outcome::fail(
                        exit::ERROR,
                        format!(
                            "the agent closed the connection during `{what}` ({}){}",
                            self.conn.handle().close_reason().unwrap_or_default(),
                            self.stderr_hint().await
                        ),
                    ),
                }
            }
            _ => Outcome::fail(exit::ERROR, format!("`{what}` failed: {e}")),
        }
    }

    /// "; it printed this non-JSON line...; last stderr lines: ..." for error messages.
    async fn stderr_hint(&self) -> String {
        let mut out = String::new();
        if let Some(g) = &self.last_garbage {
            out.push_str(&format!("; it wrote non-JSON to stdout: {g}"));
        }
        let tail = match tokio::time::timeout(Duration::from_secs(1), self.process.lock()).await {
            Ok(p) => p.stderr_tail(),
            Err(_) => Vec::new(),
        };
        if tail.is_empty() {
            out.push_str("; it wrote nothing to stderr");
        } else {
            out.push_str("; last stderr lines:");
            for line in tail.iter().rev().take(10).rev() {
                out.push_str("\n  ");
                out.push_str(line);
            }
        }
        out
    }

    /// Closes the connection and stops the agent (bounded: grace, SIGTERM, SIGKILL).
    async fn shutdown(&mut self) {
        self.ui.spinner_stop();
        self.terminals.release_all();
        self.conn.close("acp chat is done");
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.conn.closed()).await;
        let mut process = self.process.lock().await;
        let outcome = process.shutdown(SHUTDOWN_GRACE).await;
        tracing::debug!("agent stopped ({:?}): {}", outcome.stage, outcome.report);
    }
}

/// Waits until the agent's exit report is known.
async fn wait_exit(exited: &mut watch::Receiver<Option<ExitReport>>) -> ExitReport {
    match exited.wait_for(Option::is_some).await {
        Ok(r) => r.clone().expect("waited for Some"),
        // The watcher task is gone: never resolve (the caller has other branches).
        Err(_) => std::future::pending().await,
    }
}

fn is_auth_required(e: &RpcError) -> bool {
    e.remote()
        .is_some_and(|o| o.code == ErrorCode::AuthRequired.code())
}

/// The exit code for a stop reason.
fn stop_reason_code(reason: s::StopReason) -> i32 {
    match reason {
        s::StopReason::EndTurn => exit::OK,
        s::StopReason::Cancelled => exit::CANCELLED,
        s::StopReason::MaxTokens => exit::MAX_TOKENS,
        s::StopReason::MaxTurnRequests => exit::MAX_TURN_REQUESTS,
        s::StopReason::Refusal => exit::REFUSAL,
        _ => exit::ERROR,
    }
}

fn enum_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

fn fs_error(e: FsError) -> ErrorObject {
    let mut o = ErrorObject::new(ErrorCode::from_code(i64::from(e.code())), e.message());
    o.data = e.data();
    o
}

/// The agent's requests in flight on our side, and when the last one finished.
#[derive(Default)]
struct Activity {
    in_flight: std::sync::atomic::AtomicUsize,
    last_done: std::sync::Mutex<Option<Instant>>,
}

impl Activity {
    fn in_flight(&self) -> usize {
        self.in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn last_done(&self) -> Option<Instant> {
        *self.last_done.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts the agent's requests while our handlers serve them (a `tower::Service` wrapper).
#[derive(Clone)]
struct CountInFlight<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> tower::Service<Incoming> for CountInFlight<S>
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = futures::future::BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        let counted = !req.is_notification();
        let activity = self.activity.clone();
        if counted {
            activity
                .in_flight
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            if counted {
                *activity.last_done.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(Instant::now());
                activity
                    .in_flight
                    .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
            result
        })
    }
}

/// The client side's handlers: everything the agent may ask of us.
fn client_router(
    events: mpsc::UnboundedSender<Event>,
    cwd: &std::path::Path,
    terminals: Terminals,
) -> Router {
    // Reads and writes are confined to the session's directory.
    let fs = Arc::new(FsService::new(
        FsConfig::new([cwd.to_path_buf()])
            .reads(AccessScope::WithinRoots)
            .writes(AccessScope::WithinRoots),
    ));
    let (fs_read, fs_write) = (fs.clone(), fs);
    let updates = events.clone();
    let gate = terminal_gate(events.clone());
    let router = Router::new()
        .notification_raw(acp_core::acp::client::SESSION_UPDATE, move |params, _cx| {
            let _ = updates.send(Event::Update(params));
            std::future::ready(())
        })
        .route::<typed::RequestPermission, _, _>(move |request, cx| {
            let events = events.clone();
            async move {
                let (reply, answer) = oneshot::channel();
                let ask = PermissionAsk {
                    request,
                    reply,
                    withdrawn: cx.cancel.clone(),
                };
                let outcome = if events.send(Event::Permission(Box::new(ask))).is_ok() {
                    tokio::select! {
                        a = answer => a.unwrap_or(s::RequestPermissionOutcome::Cancelled),
                        // Answered by the engine already; this answer is dropped.
                        _ = cx.cancel.cancelled() => s::RequestPermissionOutcome::Cancelled,
                    }
                } else {
                    s::RequestPermissionOutcome::Cancelled
                };
                Ok(s::RequestPermissionResponse::new(outcome))
            }
        })
        .route::<typed::ReadTextFile, _, _>(move |req, _cx| {
            let fs = fs_read.clone();
            async move { fs.read_text_file(req).await.map_err(fs_error) }
        })
        .route::<typed::WriteTextFile, _, _>(move |req, _cx| {
            let fs = fs_write.clone();
            async move { fs.write_text_file(req).await.map_err(fs_error) }
        });
    terminals.routes(router, gate)
}

/// Every `terminal/create` is a permission question (the exact command line and directory),
/// answered like the agent's own: by the user, `--yes` (runs it) or `--deny` (refuses it);
/// end of input refuses it and cancels the turn.
fn terminal_gate(events: mpsc::UnboundedSender<Event>) -> Gate {
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(
        move |req: &s::CreateTerminalRequest, cancel: CancellationToken| {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let dir = req
                .cwd
                .as_ref()
                .map(|d| format!(" in {}", d.display()))
                .unwrap_or_default();
            let env: Vec<&str> = req.env.iter().map(|v| v.name.as_str()).collect();
            let env = if env.is_empty() {
                String::new()
            } else {
                format!(" with {}", env.join(", "))
            };
            let title = format!("run `{}`{dir}{env}", command_line(req));
            let request = s::RequestPermissionRequest::new(
                req.session_id.clone(),
                s::ToolCallUpdate::new(
                    format!("acp-terminal-{n}"),
                    s::ToolCallUpdateFields::new()
                        .title(title)
                        .kind(s::ToolKind::Execute)
                        .raw_input(serde_json::json!({
                            "command": req.command, "args": req.args, "cwd": req.cwd,
                        })),
                ),
                vec![
                    s::PermissionOption::new("run", "Run it", s::PermissionOptionKind::AllowOnce),
                    s::PermissionOption::new(
                        "refuse",
                        "Do not run it",
                        s::PermissionOptionKind::RejectOnce,
                    ),
                ],
            );
            let events = events.clone();
            Box::pin(async move {
                let (reply, answer) = oneshot::channel();
                let ask = PermissionAsk {
                    request,
                    reply,
                    withdrawn: cancel.clone(),
                };
                if events.send(Event::Permission(Box::new(ask))).is_err() {
                    return false;
                }
                tokio::select! {
                    a = answer => matches!(
                        a,
                        Ok(s::RequestPermissionOutcome::Selected(o)) if &*o.option_id.0 == "run"
                    ),
                    _ = cancel.cancelled() => false,
                }
            })
        },
    )
}

/// Lines of this process's stdin, read on a thread (stdin cannot be read asynchronously in
/// a portable way), started on first use. `None` once at end of input.
struct Stdin {
    rx: Option<mpsc::UnboundedReceiver<String>>,
    is_terminal: bool,
}

impl Stdin {
    fn new() -> Stdin {
        use std::io::IsTerminal;
        Stdin {
            rx: None,
            is_terminal: std::io::stdin().is_terminal(),
        }
    }

    async fn next_line(&mut self) -> Option<String> {
        let rx = self.rx.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                let stdin = std::io::stdin();
                for line in stdin.lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        });
        rx.recv().await
    }
}
