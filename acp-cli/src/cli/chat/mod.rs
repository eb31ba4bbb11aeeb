//! `acp chat`: a conversation with an agent in the terminal.
//!
//! The flow: spawn the agent (the library's `transport::spawn_agent_with`: its own process
//! group, stderr kept as a tail, the connection closed with its exit report) and connect to it
//! as a client ([`ClientSideConnection`](acp_native::ClientSideConnection)) through the
//! [`Watch`] (the "not JSON" warning, when the agent last wrote) and, with `--log-rpc`, the
//! [`Tap`], `initialize` (advertising `fs` read/write and `terminal`, served by acp-native's
//! `FsService` and [`Terminals`] confined to `--cwd`), the session opened as acp-client's
//! session engine decides (`session/new`, `resume` or `load`), then prompt turns.
//!
//! The session's lifecycle is acp-client's [`Session`](acp_client::session::Session) (held by
//! the [`Ui`], which owns the conversation): which request opens it, how a `session/load`'s
//! replay is taken, whether a crashed agent is restarted and how the session is
//! re-established, and what the user is told (in its words). `acp chat` gathers the facts —
//! the agent's answers, its updates in wire order, its end — and carries the decisions out.
//!
//! Everything the agent asks of the client arrives through the connection's router and is
//! forwarded to the single UI loop as an event: session updates (rendered by [`Ui`]) and
//! permission requests (answered by the user, or by `--yes` / `--deny`). The UI loop also
//! watches Ctrl-C (first: `session/cancel`; second: quit), the agent's exit, and the timeouts,
//! so a crashed, silent or misbehaving agent always ends in a message and an exit code, never a
//! hang.
//!
//! [`Chat`] is made of owned parts, each a type of its own with its methods:
//! * `link.rs` ([`AgentLink`]): the connection, the agent process or remote link, its exit,
//!   and starting it again within the crash budget (`remote.rs`: [`Peer`](remote::Peer) and
//!   [`Respawn`], a process or a `--connect` URL);
//! * `inbox.rs` ([`Inbox`]): the agent's requests and updates as events (`requests.rs`: the
//!   router that makes them, and the questions acp adds), its garbage (`cli/watch.rs`: the
//!   [`Watch`] on its stream);
//! * `session.rs` ([`Session`]): the session's id, directory and what it is opened with;
//!   `record.rs` ([`Record`]): this directory's record of the conversation;
//! * `answers.rs` ([`Answers`]): how questions are answered (acp-client's permission policy);
//! * `timeouts.rs` ([`Timeouts`]), `signals.rs` ([`Signals`]), `input.rs` ([`Stdin`]: what
//!   the user types; `queue.rs`: prompts typed during a turn, acp-client's prompt queue, and
//!   `/queue`), `outcome.rs` ([`Outcome`]: how it ends), and the shared [`Ui`];
//! * `v2.rs` (feature `unstable_protocol_v2`): ACP v2 on the wire (the offer in `initialize`,
//!   the replay's params, a v2 permission question read as v1's); the session engine does the
//!   rest (a turn ends on its idle `state_update`: `turn.rs`).
//!
//! What uses several parts is a method of [`Chat`]: here start-up, the conversation loop,
//! recovery after a crash or a dropped connection, and shutdown; `open.rs` opening the session
//! (the engine's request, its updates in wire order, auth, `--mode`); `calls.rs` awaiting a call and explaining its
//! failure; `turn.rs` one prompt turn (questions one at a time, held-back output, automatic
//! answers, cancel and timeouts); `commands.rs` slash commands; `cancel_tool.rs` `/cancel-tool`
//! (v2's `tool_call/cancel` for one tool call, done at once during a turn). The parts do not depend on
//! [`Chat`] (nor on each other in circles).

mod answers;
mod attach;
mod calls;
mod cancel_tool;
mod commands;
mod edits;
mod inbox;
mod input;
mod link;
mod open;
mod outcome;
mod queue;
mod record;
mod remote;
mod requests;
mod session;
mod signals;
mod timeouts;
mod turn;
mod typeahead;
#[cfg(feature = "unstable_protocol_v2")]
mod v2;

use std::ffi::OsString;
use std::sync::Arc;

use acp_client::display::escape_line;
use acp_client::permission::AutoMode;
use acp_client::queue::TurnEnd;
use acp_client::session::{AfterEnd, Intent};
use acp_core::Role;
use acp_native::process::AgentCommand;
use acp_native::DriverConfig;
use tokio::sync::mpsc;

use crate::cli::agents;
use crate::cli::args::ChatArgs;
use crate::cli::exit;
use crate::cli::render::Ui;
use crate::cli::rpc_log::Tap;
use crate::cli::terminals::Terminals;

use crate::cli::watch::Watch;
use answers::Answers;
use inbox::Inbox;
use input::{Ask, Input, Stdin};
use link::AgentLink;
use outcome::{stop_reason_code, Outcome};
use record::Record;
use remote::Respawn;
use requests::{client_router, Activity, CountInFlight, QuickUpdates, UpdateGate, EVENT_QUEUE};
use session::Session;
use signals::{ends_chat, quit, Interrupt, Signals};
use timeouts::{Timeouts, EXIT_REPORT_WAIT, SHUTDOWN_GRACE};

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
            chat.stdin.queue.report_unsent();
            chat.shutdown().await;
            outcome
        }
        Err(outcome) => outcome,
    };
    ui.spinner_stop();
    ui.flush();
    if let Some(message) = &outcome.message {
        ui.error(message);
    }
    outcome.code
}

/// `acp chat`: its parts, owned.
struct Chat {
    ui: Ui,
    /// The agent: its connection, process or remote link, and how it is started again.
    link: AgentLink,
    /// What arrives from the agent outside our calls, and how far it is shown.
    inbox: Inbox,
    /// The session: its id, directory and what it is opened with.
    session: Session,
    /// This directory's record of the conversation.
    record: Record,
    /// How the agent's questions are answered.
    answers: Answers,
    timeouts: Timeouts,
    /// When the chat started (the engine's clock for the crash budget).
    started: tokio::time::Instant,
    /// The agent's requests being served (a turn is not "silent" while one runs).
    activity: Arc<Activity>,
    terminals: Terminals,
    signals: Signals,
    stdin: Stdin,
    /// The agent's writes of the last turn (`/diff`, `/undo`).
    edits: edits::Edits,
    /// Files named with `/attach`, sent with the next prompt.
    attached: Vec<attach::Attached>,
}

impl Chat {
    /// Spawns the agent, initializes it and opens a session.
    async fn start(args: &ChatArgs, ui: Ui) -> Result<Chat, Outcome> {
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| Outcome::fail(exit::ERROR, format!("no current directory: {e}")))?,
        };
        let cwd = crate::os_compat::canonicalize(&cwd)
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
        // What the user asked for, as acp-client's session engine takes it: refused before any
        // agent starts when it cannot be carried out (an id not saved for this directory).
        // `--continue`: the newest record of this directory, resumed as `--resume` does.
        let mut resume = args.resume.clone();
        if args.continue_last {
            let newest = crate::cli::records::list(&cwd, |m| ui.warn(m))
                .into_iter()
                .next();
            match newest {
                Some(r) => resume = Some(r.session_id),
                None => {
                    return Err(Outcome::fail(
                        exit::USAGE,
                        format!(
                            "--continue: no session is saved for {} (`acp chat` saves one after \
                             its first turn; `acp sessions` lists them)",
                            cwd.display()
                        ),
                    ))
                }
            }
        }
        let (intent, recap) = match (&resume, &args.load) {
            (Some(id), _) => Record::resume_intent(&ui, &cwd, id, args.resume_unknown),
            (None, Some(id)) => (
                Intent::Load {
                    session_id: id.clone(),
                },
                None,
            ),
            (None, None) => (Intent::New, None),
        };
        ui.start_session(intent, &cwd).map_err(|e| {
            let hint = if resume.is_some() {
                " (`acp sessions` lists them; --resume-unknown tries it with the agent anyway)"
            } else {
                ""
            };
            Outcome::fail(exit::USAGE, format!("--resume: {e}{hint}"))
        })?;
        if let Some(recap) = &recap {
            Record::recap(&ui, recap);
        }
        // Before the agent starts: a hang-up from now on stops it instead of orphaning it.
        let signals = Signals::new()
            .map_err(|e| Outcome::fail(exit::ERROR, format!("cannot handle signals: {e}")))?;
        let mut registry_env = std::collections::BTreeMap::new();
        let command: Vec<OsString> = if let Some(name) = &args.agent_name {
            let agent = agents::resolve(name, args.registry.as_deref(), &args.env, |m| ui.warn(m))
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
            crate::cli::default_agent()
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
        let watch = Watch::new(args.max_message_bytes, warn_tx);
        let tap = log_tap(args)?;

        let (event_tx, events) = mpsc::channel(EVENT_QUEUE);
        let terminals = Terminals::new(cwd.clone(), env, args.max_terminals);
        ui.set_terminal_output(terminals.output_lookup());
        let activity = Arc::new(Activity::default());
        let gate = Arc::new(UpdateGate::default());
        let edits = edits::Edits::default();
        let router = CountInFlight {
            inner: QuickUpdates {
                inner: client_router(
                    event_tx.clone(),
                    gate.clone(),
                    &cwd,
                    terminals.clone(),
                    edits.clone(),
                ),
                events: event_tx,
                gate: gate.clone(),
            },
            activity: activity.clone(),
        };
        let mut config = DriverConfig::new(Role::Client).eof_grace(EXIT_REPORT_WAIT);
        config.core.max_message_bytes = args.max_message_bytes;
        config.core.max_incoming_in_flight = args.max_concurrent_requests;
        // The library's agent spawn (its own process group, the connection closed with the
        // exit report once what the agent wrote is read), or a remote agent's connection
        // (--connect), through the watch (and the --log-rpc tap).
        let respawn: Respawn = match &args.connect {
            Some(url) => remote::remote_respawn(
                url.clone(),
                remote::client_options(args)?,
                router,
                config,
                watch.clone(),
                tap,
            ),
            None => remote::local_respawn(cmd, router, config, watch.clone(), tap),
        };
        let link = AgentLink::start(respawn, program)
            .await
            .map_err(|e| Outcome::fail(exit::ERROR, e.message))?;

        let mode = if args.yes_always {
            AutoMode::AllowAlways
        } else if args.yes {
            AutoMode::AllowOnce
        } else if args.deny {
            AutoMode::Deny
        } else {
            AutoMode::Ask
        };
        let stdin = Stdin::new(ui.clone(), cwd.clone());
        let agent_label = match (&args.agent_name, args.agent.is_empty()) {
            _ if args.connect.is_some() => {
                acp_client::display::redact_url(args.connect.as_deref().unwrap_or_default())
            }
            (Some(name), _) => name.clone(),
            (None, true) => "acp demo-agent".to_string(),
            (None, false) => command[0].to_string_lossy().into_owned(),
        };
        let mut chat = Chat {
            link,
            inbox: Inbox::new(ui.clone(), events, warnings, watch, gate),
            session: Session::new(cwd.clone(), args, mcp, agent_vars),
            record: Record::new(agent_label),
            answers: Answers::new(ui.clone(), mode),
            timeouts: Timeouts::new(args),
            started: tokio::time::Instant::now(),
            activity,
            terminals,
            signals,
            stdin,
            edits,
            attached: Vec::new(),
            ui,
        };
        match chat.open_session(false).await {
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
            let Some(files) = self.prompt_files(prompt) else {
                return Outcome::code(exit::USAGE);
            };
            let result = self.turn(prompt.clone(), files).await;
            self.record.save(&self.ui, &self.session);
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
        // What the prompt queue says to send now (a prompt typed during the last turn).
        let mut next: Option<acp_client::queue::Queued> = None;
        loop {
            let queued = next.take();
            if let Some(q) = &queued {
                self.ui.notice(&format!(
                    "sending the queued prompt: {}",
                    escape_line(q.text.trim())
                ));
                self.carry_files(q);
            } else if interactive {
                self.ui.input_prompt();
            }
            let from_queue = queued.is_some();
            let line = if let Some(q) = queued {
                Some(q.text)
            } else {
                tokio::select! {
                    input = self.stdin.next(Ask::Prompt) => match input {
                        Input::Line(line) => Some(line),
                        Input::Eof | Input::Dismiss => None,
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
                    report = self.link.wait_exit() => {
                        if let Err(o) = self.recover(format!("the agent stopped: {report}")).await {
                            return o;
                        }
                        continue;
                    }
                    reason = self.link.conn.closed(), if self.link.remote().is_some() => {
                        let why = format!("the connection to {} was lost: {reason}", self.link.program);
                        if let Err(o) = self.recover(why).await {
                            return o;
                        }
                        continue;
                    }
                    Some(event) = self.inbox.events.recv() => {
                        self.inbox.idle_event(event);
                        continue;
                    }
                    Some(line) = self.inbox.warnings.recv() => {
                        self.inbox.garbage(line);
                        continue;
                    }
                }
            };
            interrupted_once = false;
            let Some(line) = line else { break };
            let text = line.trim();
            // Enter on an empty line (or `/queue send`): a held queue goes on.
            if !from_queue && (text.is_empty() || queue::is_send(text)) {
                next = self.stdin.queue.send_held(!text.is_empty());
                continue;
            }
            if text == "/quit" || text == "/exit" {
                break;
            }
            let mut text = text.to_string();
            if let Some(rest) = text.strip_prefix('/') {
                let (cmd, arg) = rest
                    .split_once(char::is_whitespace)
                    .map_or((rest, ""), |(c, a)| (c, a.trim()));
                // `/agent-NAME`: the agent's own `/NAME` when acp has a command of that name.
                if let Some(own) = commands::agent_alias(cmd, &self.ui.commands()) {
                    text = format!("/{own}{}", rest[cmd.len()..].trim_end());
                } else if self.slash(cmd, arg).await {
                    // A queued command ran instead of a turn: the queue goes on.
                    if from_queue {
                        next = self.stdin.queue.after_command();
                    }
                    continue;
                }
            }
            // A prompt typed now: sent, or behind held ones (acp-client's queue decides).
            if !from_queue {
                match self.submit_typed(&text) {
                    Some(t) => text = t,
                    None => continue,
                }
            }
            let Some(files) = self.prompt_files(&text) else {
                // Not sent (a file it names cannot be): the rest of the queue waits.
                next = self.stdin.queue.after_turn(TurnEnd::Failed);
                continue;
            };
            let result = self.turn(text, files).await;
            self.record.save(&self.ui, &self.session);
            let end = match &result {
                Ok(reason)
                    if *reason == agent_client_protocol_schema::v1::StopReason::Cancelled =>
                {
                    TurnEnd::Cancelled
                }
                Ok(_) => TurnEnd::Done,
                Err(_) => TurnEnd::Failed,
            };
            match result {
                Ok(reason) => last = Outcome::code(stop_reason_code(reason)),
                // Quitting ends the chat; a failed turn does not; a dead agent is restarted
                // (within the crash budget) and the session continued.
                Err(o) if ends_chat(&o) => return o,
                Err(o) if self.link.conn.is_closed() => {
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
            next = self.stdin.queue.after_turn(end);
        }
        if let Some(how) = self.record.resume_hint(&self.session) {
            self.ui.notice(&how);
        }
        if interactive {
            Outcome::code(exit::OK)
        } else {
            last
        }
    }

    /// After the agent stopped between or during turns (`why`: what happened, with the exit
    /// report and stderr tail): says why, then does what acp-client's session engine decides
    /// (the shared crash budget: 4 restarts in 2 minutes, backoff from 500 ms): starts it
    /// again (or reconnects) and re-establishes the session (`session/resume` or
    /// `session/load` when the agent can, else a new session, the user told the agent does
    /// not remember the conversation), or gives up. `Err`: the chat ends.
    async fn recover(&mut self, why: String) -> Result<(), Outcome> {
        let mut why = why;
        loop {
            self.ui.spinner_stop();
            self.ui.error(&why);
            let ended = self.link.end_reason();
            let after = match self.ui.agent_ended(self.started.elapsed(), &ended) {
                AfterEnd::Restart { after, .. } => after,
                AfterEnd::GiveUp { notices } => {
                    let words: Vec<String> = notices.into_iter().map(|n| n.text).collect();
                    return Err(Outcome::fail(exit::ERROR, words.join("; ")));
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(after) => {}
                sig = self.signals.recv() => return Err(quit(sig)),
            }
            // The old process group is gone or going; its terminals with it.
            self.terminals.release_all();
            match self.link.restart().await {
                Ok(()) => {}
                // The server is not back yet: another attempt, within the budget.
                Err(e) if e.transient => {
                    why = e.message;
                    continue;
                }
                Err(e) => return Err(Outcome::fail(exit::ERROR, e.message)),
            }
            match self.open_session(true).await {
                Ok(()) => {
                    if self.link.remote().is_some() {
                        self.ui.notice(&format!(
                            "reconnected to {}; session {} continued",
                            self.link.program,
                            escape_line(&self.session.id.0)
                        ));
                    }
                    return Ok(());
                }
                // It stopped again while starting: counted as another crash.
                Err(o) if self.link.has_stopped() => {
                    why = o.message.unwrap_or_else(|| "the agent stopped".into());
                }
                Err(o) => return Err(o),
            }
        }
    }

    /// Closes the connection and stops the agent (bounded: grace, SIGTERM, SIGKILL), or ends
    /// the remote connection.
    async fn shutdown(&mut self) {
        self.ui.spinner_stop();
        self.terminals.release_all();
        self.link.shutdown(SHUTDOWN_GRACE).await;
    }
}

/// The `--log-rpc` tap, only when it is asked for: otherwise nothing but the engine reads the
/// agent's messages (the [`Watch`] looks at line ends only), so each byte is parsed once.
fn log_tap(args: &ChatArgs) -> Result<Option<Arc<Tap>>, Outcome> {
    let Some(path) = &args.log_rpc else {
        return Ok(None);
    };
    Tap::new(path, args.max_message_bytes)
        .map(Some)
        .map_err(|e| {
            Outcome::fail(
                exit::ERROR,
                format!("cannot create the --log-rpc file: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn chat_args(extra: &[&str]) -> crate::cli::args::ChatArgs {
        let cli = Cli::try_parse_from(["acp", "chat"].iter().chain(extra)).unwrap();
        let Command::Chat(args) = cli.command else {
            panic!("not chat")
        };
        args
    }

    /// Without `--log-rpc` there is no tap on the agent's stream (its messages are parsed
    /// once, by the engine); with it, the tap logs to the file.
    #[test]
    fn the_rpc_log_tap_exists_only_with_log_rpc() {
        assert!(super::log_tap(&chat_args(&[])).unwrap().is_none());
        assert!(super::log_tap(&chat_args(&["--json", "--yes"]))
            .unwrap()
            .is_none());
        let dir = std::env::temp_dir().join(format!("acp-log-tap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rpc.jsonl");
        let args = chat_args(&["--log-rpc", path.to_str().unwrap()]);
        assert!(super::log_tap(&args).unwrap().is_some());
        assert!(path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
