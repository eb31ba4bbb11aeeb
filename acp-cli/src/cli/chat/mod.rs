//! `acp chat`: a conversation with an agent in the terminal.
//!
//! The flow: spawn the agent (the library's `transport::spawn_agent_with`: its own process
//! group, stderr kept as a tail, the connection closed with its exit report) and connect to it
//! as a client ([`ClientSideConnection`]) through the [`Tap`] (for `--log-rpc` and the "not
//! JSON" warning), `initialize` (advertising `fs` read/write and `terminal`, served
//! by [`FsService`] and [`Terminals`] confined to `--cwd`), `session/new`, then prompt turns.
//!
//! Everything the agent asks of the client arrives through the [`Router`] and is forwarded to
//! the single UI loop as an [`Event`]: session updates (rendered by [`Ui`]) and permission
//! requests (answered by the user, or by `--yes` / `--deny`). The UI loop also watches Ctrl-C
//! (first: `session/cancel`; second: quit), the agent's exit, and the timeouts, so a crashed,
//! silent or misbehaving agent always ends in a message and an exit code, never a hang.
//!
//! Here: start-up, the conversation loop, errors and shutdown; `session.rs`: opening the
//! session (`--resume`, `--load`, auth, `--mcp-config`, `--mode`) and its saved record;
//! `commands.rs`: slash commands;
//! `requests.rs`: what the agent asks of us, as events (and the questions acp adds);
//! `turn.rs`: one prompt turn (questions one at a time, held-back output, automatic answers,
//! cancel and timeouts); `signals.rs`: Ctrl-C, SIGHUP, SIGTERM and stdin.

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

use super::args::ChatArgs;
use super::exit;
use super::render::Ui;
use super::rpc_log::{Tap, TapReader, TapWriter, Warning};
use super::terminals::{Gate, Terminals};

mod commands;
mod input;
mod remote;
mod requests;
mod session;
mod signals;
mod turn;

use input::{Ask, Input, Stdin};
use remote::{Peer, Respawn};
use requests::*;
use signals::*;

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

/// Each line of `text` escaped on its own (agent-supplied names inside a message of ours).
fn escape_lines(text: &str) -> String {
    text.lines().map(escape_line).collect::<Vec<_>>().join("\n")
}

/// Runs `acp chat`; returns the exit code.
pub async fn run(mut args: ChatArgs) -> i32 {
    let ui = Ui::new(args.json);
    if let Some(path) = args.prompt_file.take() {
        let text = if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
        } else {
            std::fs::read_to_string(&path)
        };
        match text {
            Ok(text) if !text.trim().is_empty() => args.prompt = Some(text),
            Ok(_) => {
                ui.error(&format!(
                    "--prompt-file {}: the prompt is empty",
                    path.display()
                ));
                return exit::USAGE;
            }
            Err(e) => {
                ui.error(&format!("--prompt-file {}: {e}", path.display()));
                return exit::ERROR;
            }
        }
    }
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
    /// The agent process (its stderr tail, its shutdown), or the remote agent's transport.
    agent: Peer,
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
    /// `session/update`s shown (or folded) so far; compared with [`Tap::updates_received`].
    rendered: u64,
    /// While a `session/load` whose replay is not shown runs: the replayed updates folded
    /// so far (acp-client's `Thread::replay_view`).
    folded: Option<u64>,
    /// The agent's requests being served (a turn is not "silent" while one runs).
    activity: Arc<Activity>,
    /// The authentication method named with `--auth`.
    auth: Option<String>,
    /// The session mode named with `--mode`.
    mode_wanted: Option<String>,
    /// The servers of `--mcp-config`.
    mcp: Vec<acp_client::mcp::McpServer>,
    /// The session to continue with `session/resume`.
    resume: Option<String>,
    /// The session's directory.
    cwd: std::path::PathBuf,
    /// The agent as the user named it (for the session record).
    agent_label: String,
    /// Saving the session record failed once (said once).
    record_warned: bool,
    /// Variables set (non-empty) in the agent's environment, for the auth choice.
    agent_vars: std::collections::HashSet<String>,
    /// Permission requests to answer `cancelled` once `session/cancel` is sent.
    cancelling: Vec<oneshot::Sender<s::RequestPermissionOutcome>>,
    /// Starts the agent again (the same command, handlers and tap) after a crash, or
    /// reconnects to a remote one.
    respawn: Respawn,
    /// The shared restart policy's crash count (acp-client `restart`).
    crashes: acp_client::restart::CrashBudget,
    started: Instant,
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
        let mcp = match &args.mcp_config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Outcome::fail(exit::ERROR, format!("--mcp-config {}: {e}", path.display()))
                })?;
                acp_client::mcp::parse_config(&text).map_err(|e| {
                    Outcome::fail(exit::ERROR, format!("--mcp-config {}: {e}", path.display()))
                })?
            }
            None => Vec::new(),
        };
        // Before the agent starts: a hang-up from now on stops it instead of orphaning it.
        let signals = Signals::new()
            .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot handle signals: {e}")))?;
        let mut registry_env = std::collections::BTreeMap::new();
        let command: Vec<OsString> = if let Some(name) = &args.agent_name {
            let agent =
                super::agents::resolve(name, args.registry.as_deref(), &args.env, |m| ui.warn(m))
                    .await
                    .map_err(|e| Outcome::fail(exit::ERROR, format!("--agent: {e}")))?;
            // Every variable the entry sets is shown; one that changes what runs is refused
            // unless --env sets it.
            for line in agent.env_lines() {
                ui.notice(&format!("acp: {line}"));
            }
            registry_env = agent
                .agent_env()
                .map_err(|e| Outcome::fail(exit::ERROR, format!("--agent: {e}")))?;
            agent.command
        } else if args.agent.is_empty() {
            super::default_agent()
        } else {
            args.agent.clone()
        };
        // A URL as it is shown and saved: without a token or a password in it.
        let program = match &args.connect {
            Some(url) => acp_client::display::redact_url(url),
            None => command[0].to_string_lossy().into_owned(),
        };

        // The agent runs in --cwd, without a shell, with an explicit environment: the
        // allowlist plus what --env passes (its API key...), or everything (--inherit-env).
        // The registry entry's variables, then --env (the user's word last).
        let env = args.env_policy_with(&registry_env);
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
        // exit report once what the agent wrote is read), or a remote agent's connection
        // (--connect), through the --log-rpc tap.
        let respawn: Respawn = match &args.connect {
            Some(url) => remote::remote_respawn(
                url.clone(),
                remote::client_options(args)?,
                router,
                config,
                tap.clone(),
            ),
            None => remote::local_respawn(cmd, router, config, tap.clone()),
        };
        let (conn, agent) = respawn()
            .await
            .map_err(|e| Outcome::fail(exit::ERROR, e.message))?;
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
        let stdin = Stdin::new(ui.clone());
        let mut chat = Chat {
            ui,
            conn,
            agent,
            exited,
            events,
            warnings,
            tap,
            signals,
            stdin,
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
            folded: None,
            activity,
            auth: args.auth.clone(),
            mode_wanted: args.mode.clone(),
            mcp,
            resume: args.resume.clone(),
            cwd: cwd.clone(),
            agent_label: match (&args.agent_name, args.agent.is_empty()) {
                _ if args.connect.is_some() => {
                    acp_client::display::redact_url(args.connect.as_deref().unwrap_or_default())
                }
                (Some(name), _) => name.clone(),
                (None, true) => "acp demo-agent".to_string(),
                (None, false) => command[0].to_string_lossy().into_owned(),
            },
            record_warned: false,
            agent_vars,
            cancelling: Vec::new(),
            respawn,
            crashes: acp_client::restart::CrashBudget::new(Default::default()),
            started: Instant::now(),
        };
        match chat.open_session(&cwd, args.load.as_deref()).await {
            Ok(()) => Ok(chat),
            Err(outcome) => {
                chat.shutdown().await;
                Err(outcome)
            }
        }
    }

    /// Runs the conversation: one `--prompt` turn, or prompts read from stdin.
    async fn converse(&mut self, args: &ChatArgs) -> Outcome {
        if let Some(prompt) = &args.prompt {
            let result = self.turn(prompt.clone()).await;
            self.save_record();
            return match result {
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
                input = self.stdin.next(Ask::Prompt) => match input {
                    Input::Line(line) => Some(line),
                    Input::Eof => None,
                    // Ctrl-C at the prompt: as the signal does.
                    Input::Interrupt => {
                        if interrupted_once {
                            return Outcome::code(exit::INTERRUPTED);
                        }
                        interrupted_once = true;
                        self.ui.notice("(press Ctrl-C again or Ctrl-D to quit)");
                        continue;
                    }
                },
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
                    if let Err(o) = self.recover(format!("the agent stopped: {report}")).await {
                        return o;
                    }
                    continue;
                }
                reason = self.conn.closed(), if self.agent.remote().is_some() => {
                    let why = format!("the connection to {} was lost: {reason}", self.program);
                    if let Err(o) = self.recover(why).await {
                        return o;
                    }
                    continue;
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
            if let Some(rest) = text.strip_prefix('/') {
                let (cmd, arg) = rest
                    .split_once(char::is_whitespace)
                    .map_or((rest, ""), |(c, a)| (c, a.trim()));
                if self.slash(cmd, arg).await {
                    continue;
                }
            }
            let result = self.turn(text.to_string()).await;
            self.save_record();
            match result {
                Ok(reason) => last = Outcome::code(stop_reason_code(reason)),
                // Quitting ends the chat; a failed turn does not; a dead agent is restarted
                // (within the crash budget) and the session continued.
                Err(o) if ends_chat(&o) => return o,
                Err(o) if self.conn.is_closed() => {
                    last = Outcome::code(o.code);
                    let why = o.message.unwrap_or_else(|| "the agent stopped".to_string());
                    if let Err(o) = self.recover(why).await {
                        return o;
                    }
                }
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

    /// After the agent stopped between or during turns: says why, then, within the shared
    /// crash budget (acp-client `restart`: 4 restarts in 2 minutes, backoff from 500 ms),
    /// starts it again and continues the session (`session/resume` or `session/load` when the
    /// agent offers one, else a new session, said plainly). `Err`: the chat ends.
    async fn recover(&mut self, why: String) -> Result<(), Outcome> {
        let mut why = why;
        loop {
            self.ui.spinner_stop();
            self.ui.error(&why);
            let decision = self.crashes.record_crash(self.started.elapsed());
            let (after, attempt) = match decision {
                acp_client::restart::RestartDecision::Restart { after, attempt } => {
                    (after, attempt)
                }
                acp_client::restart::RestartDecision::GiveUp { reason } => {
                    return Err(Outcome::fail(exit::ERROR, reason));
                }
            };
            let what = match self.agent.remote() {
                Some(_) => format!("reconnecting to {}", self.program),
                None => "restarting the agent".to_string(),
            };
            self.ui.notice(&format!(
                "{what} in {} (attempt {attempt}; the conversation continues)…",
                acp_client::restart::human_duration(after)
            ));
            tokio::select! {
                _ = tokio::time::sleep(after) => {}
                sig = self.signals.recv() => return Err(quit(sig)),
            }
            // The old process group is gone or going; its terminals with it.
            self.terminals.release_all();
            self.agent.shutdown(Duration::from_millis(200)).await;
            let (conn, agent) = match (self.respawn)().await {
                Ok(started) => started,
                // The server is not back yet: another attempt, within the budget.
                Err(e) if e.transient => {
                    why = e.message;
                    continue;
                }
                Err(e) => return Err(Outcome::fail(exit::ERROR, e.message)),
            };
            self.exited = agent.exit_watch();
            self.conn = conn;
            self.agent = agent;
            let id = self.session_id.0.to_string();
            self.resume = (!id.is_empty()).then_some(id);
            match self.reopen_session().await {
                Ok(()) => {
                    if self.agent.remote().is_some() {
                        self.ui.notice(&format!(
                            "reconnected to {}; session {} continued",
                            self.program,
                            escape_line(&self.session_id.0)
                        ));
                    }
                    return Ok(());
                }
                // It stopped again while starting: counted as another crash.
                Err(o) if self.exited.borrow().is_some() || self.conn.is_closed() => {
                    why = o.message.unwrap_or_else(|| "the agent stopped".into());
                }
                Err(o) => return Err(o),
            }
        }
    }

    /// The session again on a restarted agent: resumed or loaded when it can, else a new one.
    async fn reopen_session(&mut self) -> Result<(), Outcome> {
        let cwd = self.cwd.clone();
        match self.open_session(&cwd, None).await {
            Ok(()) => Ok(()),
            // A remote agent that can neither resume nor load: the conversation is lost with
            // the connection, said as an error (a new session would look like the old one).
            Err(o) if self.agent.remote().is_some() => Err(Outcome::fail(
                o.code,
                format!(
                    "{}; the connection to {} was lost and the session cannot be continued",
                    o.message
                        .as_deref()
                        .unwrap_or("the session cannot be continued"),
                    self.program
                ),
            )),
            Err(o) if self.resume.is_some() && !self.conn.is_closed() => {
                // It can neither resume nor load: a new session, said plainly.
                self.ui.warn(&format!(
                    "{}; starting a new session (the agent does not remember the conversation above)",
                    o.message.as_deref().unwrap_or("the session cannot be continued")
                ));
                self.resume = None;
                self.open_session(&cwd, None).await
            }
            Err(o) => Err(o),
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

    /// Awaits `session/load`, taking the agent's replay as it comes (the queue of events
    /// is bounded: a long replay not taken would stop the connection before the answer).
    /// Each update is shown, or only folded while [`Chat::folded`] is set; once the answer is
    /// in, every update sent before it is taken (bounded), so what follows is shown and
    /// the answer's mode and config options come after the replayed ones.
    async fn wait_replay<T>(
        &mut self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, RpcError>>,
    ) -> Result<T, Outcome> {
        tokio::pin!(call);
        let result = loop {
            tokio::select! {
                r = &mut call => break r,
                Some(event) = self.events.recv() => self.idle_event(event),
                Some(line) = self.warnings.recv() => self.garbage(line),
                sig = self.signals.recv() => return Err(quit(sig)),
            }
        };
        let value = match result {
            Ok(v) => v,
            Err(e) => return Err(self.explain(what, e).await),
        };
        if let Some((_, Some(to))) = self.tap.load_replay() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.rendered < to {
                match tokio::time::timeout_at(deadline, self.events.recv()).await {
                    Ok(Some(event)) => self.idle_event(event),
                    Ok(None) | Err(_) => break,
                }
            }
        }
        Ok(value)
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
            _ if e.is_closed() && self.agent.remote().is_some() => {
                let reason = self
                    .agent
                    .remote()
                    .and_then(|link| link.failure())
                    .or_else(|| self.conn.handle().close_reason())
                    .unwrap_or_else(|| "the connection closed".into());
                Outcome::fail(
                    exit::ERROR,
                    format!(
                        "the connection to {} failed during `{what}`: {}",
                        self.program,
                        remote::with_hint(&reason)
                    ),
                )
            }
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
        if self.agent.remote().is_some() {
            return out;
        }
        let tail = self.agent.stderr_tail().await;
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

    /// Closes the connection and stops the agent (bounded: grace, SIGTERM, SIGKILL), or ends
    /// the remote connection.
    async fn shutdown(&mut self) {
        self.ui.spinner_stop();
        self.terminals.release_all();
        self.agent.shutdown(SHUTDOWN_GRACE).await;
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
