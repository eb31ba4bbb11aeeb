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

use acp_client::display::escape_line;
use acp_client::permission::{self, AutoMode, Decision};
use acp_core::{typed, CallError, ErrorCode, ErrorObject, RawValue, Role};
use acp_native::fs_service::{AccessScope, FsConfig, FsError, FsService};
use acp_native::process::{AgentCommand, ExitReport};
use acp_native::transport::{spawn_agent_with, AgentChild};
use acp_native::{ClientSideConnection, DriverConfig, Incoming, Router, RpcError};
use agent_client_protocol_schema::v1 as s;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::exit;
use super::render::Ui;
use super::rpc_log::{Tap, TapReader, TapWriter, Warning};
use super::terminals::{Gate, Terminals};
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
/// The silence limit of a `--prompt` turn when `--timeout` is not given: a run never hangs on
/// an agent that stays silent (an interactive chat has none: Ctrl-C is there).
const DEFAULT_PROMPT_SILENCE: Duration = Duration::from_secs(300);
/// After `session/cancel` (Ctrl-C, a timeout), how long the agent gets to end the turn with
/// stop reason `cancelled` before acp gives up on the turn.
const CANCEL_WAIT: Duration = Duration::from_secs(10);
/// Events between the connection's handlers and the UI loop. When it is full (the UI is
/// blocked writing to a stdout nobody reads, or holds events back while a question is open),
/// the handlers wait, the connection's notification queue fills and it stops reading the
/// agent: memory stays bounded and the agent is slowed down instead.
const EVENT_QUEUE: usize = 64;
/// Bytes of `session/update` params waiting for the UI (queued or held back), in KiB permits:
/// with the counts above, what an unread stdout or an open question can make `acp chat` hold
/// (a larger update waits until it is alone).
const EVENT_BYTES: usize = 64 << 20;

/// An update's share of [`EVENT_BYTES`], given back when the update has been shown.
type UpdateBytes = Option<tokio::sync::OwnedSemaphorePermit>;

/// Most events held back while a question is open (shown in order after the answer); past
/// that the UI stops taking events, with the same effect as a full queue.
const HELD_EVENTS: usize = 256;

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
    /// A `session/update` notification (raw params), holding its bytes of [`EVENT_BYTES`]
    /// until it is shown.
    Update(Option<Box<RawValue>>, UpdateBytes),
    /// A `session/request_permission` waiting for an answer.
    Permission(Box<PermissionAsk>),
}

struct PermissionAsk {
    request: s::RequestPermissionRequest,
    /// Our own questions (a command, a sensitive write): the title and detail lines to show,
    /// already escaped. `None`: the agent's request, titled from its tool call.
    shown: Option<(String, Vec<String>)>,
    /// Only the user may approve it: `--yes` does not answer it (writes that change what
    /// runs); with no one to answer, it is refused.
    user_only: bool,
    reply: oneshot::Sender<s::RequestPermissionOutcome>,
    /// Fires when the engine answered it already (we sent `session/cancel`, or it closed).
    withdrawn: CancellationToken,
}

/// A turn's questions: the one on screen, and what arrived after it.
#[derive(Default)]
struct TurnState {
    open: Option<PermissionAsk>,
    held: VecDeque<Event>,
    /// Ctrl-C sent `session/cancel`.
    cancel_sent: bool,
    /// `session/cancel` sent for a question answered `cancelled`.
    session_cancelled: bool,
    /// The prompt was answered: questions still arriving are answered `cancelled`.
    over: bool,
    /// `session/cancel` was sent (Ctrl-C, the silence limit): the turn's answer is awaited
    /// until then.
    cancel_deadline: Option<Instant>,
    /// The silence limit cancelled the turn: how the turn ends, whatever the agent answers.
    timed_out: Option<Outcome>,
}

/// The signals that interrupt or end `acp chat`.
struct Signals {
    int: Signal,
    hup: Signal,
    term: Signal,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    /// Ctrl-C: cancel the turn (a second one quits).
    Int,
    /// The terminal went away (SIGHUP) or we were told to stop (SIGTERM): quit at once,
    /// stopping the agent's and the terminals' process groups.
    Hangup,
    Term,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.int.recv() => Interrupt::Int,
            _ = self.hup.recv() => Interrupt::Hangup,
            _ = self.term.recv() => Interrupt::Term,
        }
    }
}

/// Each line of `text` escaped on its own (agent-supplied names inside a message of ours).
fn escape_lines(text: &str) -> String {
    text.lines().map(escape_line).collect::<Vec<_>>().join("\n")
}

/// How a SIGHUP / SIGTERM ends the chat.
fn quit(sig: Interrupt) -> Outcome {
    match sig {
        Interrupt::Hangup => Outcome::fail(exit::HANGUP, "hung up (SIGHUP): stopped the agent"),
        Interrupt::Term => {
            Outcome::fail(exit::TERMINATED, "terminated (SIGTERM): stopped the agent")
        }
        Interrupt::Int => Outcome::fail(exit::INTERRUPTED, "interrupted"),
    }
}

/// Whether an outcome ends the whole chat (not just a turn).
fn ends_chat(outcome: &Outcome) -> bool {
    matches!(
        outcome.code,
        exit::INTERRUPTED | exit::HANGUP | exit::TERMINATED
    )
}

/// The agent's options as the shared policy reads them.
fn policy_options(options: &[s::PermissionOption]) -> Vec<permission::PermissionOption> {
    options
        .iter()
        .map(|o| permission::PermissionOption {
            option_id: o.option_id.0.to_string(),
            name: o.name.clone(),
            kind: serde_json::to_value(o.kind)
                .and_then(serde_json::from_value)
                .unwrap_or_else(|_| permission::OptionKind::Other(enum_name(&o.kind))),
        })
        .collect()
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
    /// The agent process (its stderr tail, its shutdown).
    agent: AgentChild,
    /// The agent's exit report, once it exited.
    exited: watch::Receiver<Option<ExitReport>>,
    events: mpsc::Receiver<Event>,
    warnings: mpsc::UnboundedReceiver<Warning>,
    tap: Arc<Tap>,
    signals: Signals,
    stdin: Stdin,
    mode: AutoMode,
    timeout: Duration,
    idle_limit: Option<Duration>,
    /// `idle_limit` is [`DEFAULT_PROMPT_SILENCE`], not the user's `--timeout`.
    idle_limit_is_default: bool,
    session_id: s::SessionId,
    program: String,
    terminals: Terminals,
    /// The last non-JSON line the agent printed (for error messages).
    last_garbage: Option<String>,
    /// `session/update`s shown so far; compared with [`Tap::updates_received`].
    rendered: u64,
    /// The agent's requests being served (a turn is not "silent" while one runs).
    activity: Arc<Activity>,
    /// The authentication method named with `--auth`.
    auth: Option<String>,
    /// The session mode named with `--mode`.
    mode_wanted: Option<String>,
    /// Variables set (non-empty) in the agent's environment, for the auth choice.
    agent_vars: std::collections::HashSet<String>,
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
        // Before the agent starts: a hang-up from now on stops it instead of orphaning it.
        let signals = Signals::new()
            .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot handle signals: {e}")))?;
        let command: Vec<OsString> = if args.agent.is_empty() {
            super::default_agent()
        } else {
            args.agent.clone()
        };
        let program = command[0].to_string_lossy().into_owned();

        // The agent runs in --cwd, without a shell, with an explicit environment: the
        // allowlist plus what --env passes (its API key...), or everything (--inherit-env).
        let env = args.env_policy();
        let agent_vars = env
            .resolve_from_host()
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        let cmd = AgentCommand::new(command[0].clone())
            .args(command[1..].iter().cloned())
            .cwd(&cwd)
            .env(env.clone());
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

        let (event_tx, events) = mpsc::channel(EVENT_QUEUE);
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
        // The library's agent spawn (its own process group, the connection closed with the
        // exit report once what the agent wrote is read), through the --log-rpc tap.
        let tap_io = tap.clone();
        let (conn, agent) = spawn_agent_with(&cmd, router, config, move |stdout, stdin| {
            (
                TapReader::new(stdout, tap_io.clone()),
                TapWriter::new(stdin, tap_io),
            )
        })
        .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot start the agent: {e}")))?;
        let exited = agent.exit_watch();

        let mode = if args.yes_always {
            AutoMode::AllowAlways
        } else if args.yes {
            AutoMode::AllowOnce
        } else if args.deny {
            AutoMode::Deny
        } else {
            AutoMode::Ask
        };
        let mut chat = Chat {
            ui,
            conn,
            agent,
            exited,
            events,
            warnings,
            tap,
            signals,
            stdin: Stdin::new(),
            mode,
            timeout: args.timeout.unwrap_or(DEFAULT_TIMEOUT),
            idle_limit: args
                .timeout
                .or(args.prompt.as_ref().map(|_| DEFAULT_PROMPT_SILENCE)),
            idle_limit_is_default: args.timeout.is_none(),
            session_id: s::SessionId::new(""),
            program,
            terminals,
            last_garbage: None,
            rendered: 0,
            activity,
            auth: args.auth.clone(),
            mode_wanted: args.mode.clone(),
            agent_vars,
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
            let loaded = self
                .wait("session/load", conn.load_session(request))
                .await?;
            self.session_id = s::SessionId::new(id);
            self.ui.spinner_stop();
            self.ui.notice(&format!(
                "connected to {name}; loaded session {id} in {}",
                cwd.display()
            ));
            return self.apply_mode(&conn, loaded.modes).await;
        }
        let methods: Vec<acp_client::auth::AuthMethod> = info
            .auth_methods
            .iter()
            .filter_map(|m| {
                serde_json::to_value(m)
                    .and_then(serde_json::from_value)
                    .ok()
            })
            .collect();
        // A method the user named is used before the session; otherwise one is chosen only
        // when the agent says authentication is required.
        if self.auth.is_some() {
            self.authenticate(&conn, &methods).await?;
        }
        let new = s::NewSessionRequest::new(cwd);
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
        self.ui.notice(&format!(
            "connected to {name}; session {} in {}",
            self.session_id.0,
            cwd.display()
        ));
        self.apply_mode(&conn, session.modes).await
    }

    /// Shows the session's mode (an agent's mode decides what it does without asking: with
    /// claude-agent-acp's `auto`, `--deny` has nothing to refuse) and sets `--mode`.
    async fn apply_mode(
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
                sig = self.signals.recv() => {
                    if sig != Interrupt::Int {
                        return quit(sig);
                    }
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
                Err(o) if ends_chat(&o) || self.conn.is_closed() => return o,
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
    ///
    /// One question is on screen at a time. While it is open, nothing else from the agent is
    /// shown (it could push the question off screen or print a fake one): updates and further
    /// questions are held back, in order, and shown after the answer. At most
    /// [`HELD_EVENTS`] are held; then the loop stops taking events and the agent is no longer
    /// read until the user answers.
    async fn turn(&mut self, text: String) -> Result<s::StopReason, Outcome> {
        self.ui.begin_turn(&text);
        self.ui.spinner_start("thinking…");
        let request = s::PromptRequest::new(self.session_id.clone(), vec![text.into()]);
        let conn = self.conn.without_timeout();
        let prompt = conn.prompt(request);
        tokio::pin!(prompt);
        let mut turn = TurnState::default();
        let mut last_activity = Instant::now();
        let result = loop {
            let idle_deadline = self.idle_limit.map(|d| last_activity + d);
            let withdrawn = turn.open.as_ref().map(|a| a.withdrawn.clone());
            tokio::select! {
                result = &mut prompt => break result,
                Some(event) = self.events.recv(), if turn.held.len() < HELD_EVENTS => {
                    last_activity = Instant::now();
                    turn.held.push_back(event);
                    self.show_held(&conn, &mut turn).await;
                }
                Some(line) = self.warnings.recv(), if turn.open.is_none() => self.garbage(line),
                line = self.stdin.next_line(), if turn.open.is_some() => {
                    last_activity = Instant::now();
                    let ask = turn.open.as_ref().expect("guarded");
                    let options = policy_options(&ask.request.options);
                    let decision = match &line {
                        None => {
                            self.ui.end_input_line();
                            permission::unanswerable()
                        }
                        Some(l) => match permission::chosen(&options, l) {
                            Some(d) => d,
                            None => {
                                self.ui.permission_reask(options.len(), &escape_line(l));
                                continue;
                            }
                        },
                    };
                    let ask = turn.open.take().expect("guarded");
                    let how = match &line {
                        None => "end of input".to_string(),
                        Some(l) => format!("option {}", l.trim()),
                    };
                    self.answer(ask, decision, &how);
                    self.show_held(&conn, &mut turn).await;
                }
                _ = async { withdrawn.expect("guarded").cancelled().await }, if withdrawn.is_some() => {
                    let ask = turn.open.take().expect("guarded");
                    let title = self.ask_title(&ask);
                    self.ui.permission_outcome(&title, "withdrawn (the turn was cancelled)");
                    self.show_held(&conn, &mut turn).await;
                }
                sig = self.signals.recv() => {
                    if sig != Interrupt::Int {
                        return Err(quit(sig));
                    }
                    if turn.cancel_sent {
                        return Err(Outcome::fail(exit::INTERRUPTED, "interrupted"));
                    }
                    turn.cancel_sent = true;
                    turn.cancel_deadline.get_or_insert(Instant::now() + CANCEL_WAIT);
                    self.ui.notice("cancelling the turn… (press Ctrl-C again to quit)");
                    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, conn.cancel(s::CancelNotification::new(self.session_id.clone()))).await;
                    // The schema: after `session/cancel`, every pending permission request is
                    // answered `cancelled` (our own questions too: nothing waits on the agent
                    // withdrawing them); held ones are answered as they are reached.
                    if let Some(ask) = turn.open.take() {
                        let title = self.ask_title(&ask);
                        self.ui.permission_outcome(&title, "withdrawn (the turn was cancelled)");
                        let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                    }
                    self.show_held(&conn, &mut turn).await;
                }
                _ = tokio::time::sleep_until(turn.cancel_deadline.unwrap_or_else(Instant::now)),
                    if turn.cancel_deadline.is_some() => {
                    let waited = CANCEL_WAIT.as_secs();
                    return Err(match turn.timed_out.take() {
                        Some(mut o) => {
                            o.message = o.message.map(|m| format!("{m}; it did not end the turn within {waited} s"));
                            o
                        }
                        None => Outcome::fail(
                            exit::CANCELLED,
                            format!("the agent did not end the cancelled turn within {waited} s"),
                        ),
                    });
                }
                _ = tokio::time::sleep_until(idle_deadline.unwrap_or_else(Instant::now)),
                    if idle_deadline.is_some() && turn.open.is_none() && turn.cancel_deadline.is_none() => {
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
                    let flag = if self.idle_limit_is_default { "the default for --prompt; set it with --timeout" } else { "--timeout" };
                    turn.timed_out = Some(Outcome::fail(
                        exit::TIMEOUT,
                        format!("the agent sent nothing for {secs} s during the turn ({flag}); cancelled it{}",
                            self.stderr_hint().await),
                    ));
                    // The turn's `cancelled` answer is awaited (bounded), with what comes before it.
                    turn.cancel_sent = true;
                    turn.cancel_deadline = Some(Instant::now() + CANCEL_WAIT);
                }
            }
        };
        // The turn is over: a question still open belongs to it (answered `cancelled`, which
        // the engine already did if the agent ended the turn); what was held is shown now.
        turn.over = true;
        if let Some(ask) = turn.open.take() {
            let title = self.ask_title(&ask);
            self.ui
                .permission_outcome(&title, "cancelled (the turn ended)");
            let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
        }
        self.show_held(&conn, &mut turn).await;
        // Updates sent before the response may still be on their way to us: the tap has
        // counted them all, so render until that many have been shown.
        let expected = self.tap.updates_received();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.rendered < expected {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(Event::Update(params, _bytes))) => self.render_update(params),
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
        if let Some(o) = turn.timed_out.take() {
            // Timed out, and the agent answered the cancelled turn: the run still says why.
            if let Ok(r) = &result {
                self.ui
                    .turn_end(&self.session_id.0, &enum_name(&r.stop_reason));
            }
            return Err(o);
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

    /// Shows held events in order until one of them opens a question (or none is left), then
    /// sends `session/cancel` if an answer needs it.
    async fn show_held(&mut self, conn: &ClientSideConnection, turn: &mut TurnState) {
        loop {
            if !self.cancelling.is_empty() {
                self.send_cancelled(conn, &mut turn.session_cancelled).await;
            }
            if turn.open.is_some() {
                break;
            }
            let Some(event) = turn.held.pop_front() else {
                break;
            };
            match event {
                Event::Update(params, _bytes) => self.render_update(params),
                Event::Permission(ask) => {
                    let title = self.ask_title(&ask);
                    if ask.withdrawn.is_cancelled() {
                        self.ui
                            .permission_outcome(&title, "withdrawn (the turn was cancelled)");
                    } else if turn.over || turn.cancel_sent || turn.session_cancelled {
                        self.ui
                            .permission_outcome(&title, "cancelled (the turn was cancelled)");
                        let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                    } else if let Some(ask) = self.auto_answer(*ask) {
                        let (title, detail) = match &ask.shown {
                            Some((t, d)) => (t.clone(), d.clone()),
                            None => (title, Vec::new()),
                        };
                        self.ui
                            .permission_dialog(&title, &detail, &ask.request.options);
                        turn.open = Some(ask);
                    }
                }
            }
        }
        if turn.open.is_none() && !turn.over {
            self.ui.spinner_start("thinking…");
        }
    }

    /// The one-line title of a question.
    fn ask_title(&self, ask: &PermissionAsk) -> String {
        match &ask.shown {
            Some((title, _)) => title.clone(),
            None => self.ui.question_title(&ask.request.tool_call),
        }
    }

    /// Carries out a decision of the shared policy for `ask` (`how`: what decided it).
    fn answer(&mut self, ask: PermissionAsk, decision: Decision, how: &str) {
        let title = self.ask_title(&ask);
        match decision {
            Decision::Select { option_id, .. } => {
                let name = ask
                    .request
                    .options
                    .iter()
                    .find(|o| *o.option_id.0 == *option_id)
                    .map(|o| escape_line(&o.name))
                    .unwrap_or_default();
                self.ui
                    .permission_outcome(&title, &format!("{name} ({how})"));
                let _ = ask.reply.send(s::RequestPermissionOutcome::Selected(
                    s::SelectedPermissionOutcome::new(option_id),
                ));
            }
            Decision::Cancel { reason } => {
                let why = match reason {
                    permission::CancelReason::Unanswerable => format!("cancelled ({how})"),
                    _ => format!("cancelled ({how}: {})", reason.describe()),
                };
                self.ui.permission_outcome(&title, &why);
                self.cancelling.push(ask.reply);
            }
            Decision::Ask => unreachable!("answer() is given decisions"),
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
            Event::Update(params, _bytes) => self.render_update(params),
            Event::Permission(ask) => {
                let title = self.ask_title(&ask);
                self.ui
                    .permission_outcome(&title, "cancelled (no turn is running)");
                let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
            }
        }
    }

    /// Answers a question at once when the shared policy decides it (`--yes`, `--deny`, no
    /// options); returns it when the user must be asked. A `cancelled` answer is only queued
    /// in `self.cancelling`: the turn sends `session/cancel` before it (the schema's order).
    fn auto_answer(&mut self, ask: PermissionAsk) -> Option<PermissionAsk> {
        let flag = match self.mode {
            AutoMode::Ask => "",
            AutoMode::AllowOnce => "--yes",
            AutoMode::AllowAlways => "--yes-always",
            AutoMode::Deny => "--deny",
        };
        // Our own questions about writes that change what runs are never answered by --yes:
        // the user sees them (they are refused when no one can answer).
        let mode = if ask.user_only && self.mode != AutoMode::Deny {
            AutoMode::Ask
        } else {
            self.mode
        };
        match permission::decide(&policy_options(&ask.request.options), mode) {
            Decision::Ask => {
                if mode != self.mode {
                    self.ui.notice(&format!(
                        "{flag} does not answer this question: it changes what runs"
                    ));
                } else if self.mode != AutoMode::Ask {
                    self.ui.notice(&format!(
                        "{flag}: the agent offers no option {flag} may choose; asking"
                    ));
                }
                Some(ask)
            }
            decision => {
                let how = if flag.is_empty() { "automatic" } else { flag };
                self.answer(ask, decision, how);
                None
            }
        }
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

    /// Authenticates with the method the shared policy chooses (acp-client's `auth`): the one
    /// named with `--auth`, an `env_var` method whose variables the agent gets, or an `agent`
    /// method that starts no interactive login; otherwise says what each method needs.
    async fn authenticate(
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
                    "`{}` is a login the agent runs in a terminal: run the agent's own login command \
                     there, then start acp chat again",
                    escape_line(&method_id)
                ),
            )),
            AuthChoice::NeedsUser { message } => {
                self.ui.spinner_stop();
                Err(Outcome::fail(exit::ERROR, escape_lines(&message)))
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
                sig = self.signals.recv() => return Err(quit(sig)),
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
            // Agents that offer no method (or that check only when prompted) say so here.
            RpcError::Call(CallError::Remote(err)) if is_auth_required(&e) => Outcome::fail(
                exit::ERROR,
                format!(
                    "the agent needs authentication (it answered `{what}` with: {err}); pass its \
                     API key with --env NAME (e.g. --env ANTHROPIC_API_KEY, --env OPENAI_API_KEY, \
                     --env GEMINI_API_KEY), choose one of its methods with --auth, or log in with \
                     the agent's own command first"
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
        let tail =
            match tokio::time::timeout(Duration::from_secs(1), self.agent.process().lock()).await {
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
        let outcome = self.agent.shutdown(SHUTDOWN_GRACE).await;
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
    events: mpsc::Sender<Event>,
    cwd: &std::path::Path,
    terminals: Terminals,
) -> Router {
    // Reads and writes are confined to the session's directory; writes that change what runs
    // are the user's question.
    let fs = Arc::new(FsService::new(
        FsConfig::new([cwd.to_path_buf()])
            .reads(AccessScope::WithinRoots)
            .writes(AccessScope::WithinRoots)
            .sensitive_writes(write_gate(events.clone())),
    ));
    let (fs_read, fs_write) = (fs.clone(), fs);
    let updates = events.clone();
    let update_bytes = Arc::new(tokio::sync::Semaphore::new(EVENT_BYTES >> 10));
    let gate = terminal_gate(events.clone());
    let router = Router::new()
        .notification_raw(acp_core::acp::client::SESSION_UPDATE, move |params, _cx| {
            // Waits while the UI is behind: the connection then stops reading the agent.
            let updates = updates.clone();
            let budget = update_bytes.clone();
            async move {
                let kib = params.as_ref().map_or(0, |p| p.get().len()) / 1024 + 1;
                let kib = u32::try_from(kib.min(EVENT_BYTES >> 10)).unwrap_or(u32::MAX);
                let bytes = budget.acquire_many_owned(kib).await.ok();
                let _ = updates.send(Event::Update(params, bytes)).await;
            }
        })
        .route::<typed::RequestPermission, _, _>(move |request, cx| {
            let events = events.clone();
            async move {
                let (reply, answer) = oneshot::channel();
                let ask = PermissionAsk {
                    request,
                    shown: None,
                    user_only: false,
                    reply,
                    withdrawn: cx.cancel.clone(),
                };
                let outcome = if events.send(Event::Permission(Box::new(ask))).await.is_ok() {
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

/// Every `terminal/create` is a permission question (the exact command line, directory and
/// environment changes, on one line, from acp-client's question), answered like the agent's
/// own: by the user, `--yes` (runs it) or `--deny` (refuses it); end of input refuses it and
/// cancels the turn.
fn terminal_gate(events: mpsc::Sender<Event>) -> Gate {
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(
        move |req: &s::CreateTerminalRequest,
              question: acp_client::terminal::CommandQuestion,
              cancel: CancellationToken| {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let request = s::RequestPermissionRequest::new(
                req.session_id.clone(),
                s::ToolCallUpdate::new(
                    format!("acp-terminal-{n}"),
                    s::ToolCallUpdateFields::new()
                        .title(question.title.clone())
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
            let detail = question.warnings.iter().map(|w| format!("⚠ {w}")).collect();
            let events = events.clone();
            Box::pin(async move {
                let (reply, answer) = oneshot::channel();
                let ask = PermissionAsk {
                    request,
                    shown: Some((question.title, detail)),
                    user_only: false,
                    reply,
                    withdrawn: cancel.clone(),
                };
                if events.send(Event::Permission(Box::new(ask))).await.is_err() {
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

/// Most diff lines a write question shows.
const WRITE_DIFF_LINES: usize = 40;

/// A write that changes what runs (acp-client's `writes` rule: `.git/`, `.vscode/`, shell rc
/// files, executables…) is a question showing the real path, why and the change. Only the
/// user answers it (`--yes` does not); `--deny` and end of input refuse it.
fn write_gate(events: mpsc::Sender<Event>) -> acp_native::fs_service::WriteApprover {
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(move |w: acp_native::fs_service::SensitiveWrite| {
        let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let path = w.path.display().to_string();
        let title = format!("write {} ({})", escape_line(&path), w.reason.describe());
        let mut detail = Vec::new();
        if w.executable {
            detail.push("⚠ the file is executable and stays executable".to_string());
        }
        detail.extend(acp_client::display::line_diff(
            w.old_text.as_deref(),
            &w.new_text,
            2,
            WRITE_DIFF_LINES,
        ));
        let request = s::RequestPermissionRequest::new(
            // Not the agent's session id: the question is ours, about its request.
            "acp",
            s::ToolCallUpdate::new(
                format!("acp-write-{n}"),
                s::ToolCallUpdateFields::new()
                    .title(title.clone())
                    .kind(s::ToolKind::Edit)
                    .locations(vec![s::ToolCallLocation::new(w.path.clone())]),
            ),
            vec![
                s::PermissionOption::new("write", "Write it", s::PermissionOptionKind::AllowOnce),
                s::PermissionOption::new(
                    "refuse",
                    "Do not write it",
                    s::PermissionOptionKind::RejectOnce,
                ),
            ],
        );
        let events = events.clone();
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let ask = PermissionAsk {
                request,
                shown: Some((title, detail)),
                user_only: true,
                reply,
                withdrawn: CancellationToken::new(),
            };
            if events.send(Event::Permission(Box::new(ask))).await.is_err() {
                return false;
            }
            matches!(
                answer.await,
                Ok(s::RequestPermissionOutcome::Selected(o)) if &*o.option_id.0 == "write"
            )
        })
    })
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
