//! A supervised agent: spawn, initialize with a start-up deadline, watch (process liveness
//! always, an optional responsiveness probe), and on a crash restart with exponential backoff
//! under a crash budget ("N crashes in M minutes, then stop and say why"), re-attaching the
//! sessions it knows with `session/resume` or `session/load` when the agent advertises them and
//! reporting them lost otherwise.
//!
//! Every pending call of a crashed agent fails at once with its exit status and stderr tail
//! (that is [`crate::transport::spawn_agent`]'s close reason); callers then ask
//! [`SupervisedAgent::connection`] for the next one, which waits while a restart is under way.
//! [`SupervisedAgent::prompt`] runs a turn to its end on either protocol version
//! (`turn.rs`): a crash mid-turn ends it with the same report.
//!
//! ACP v2 (draft, feature `unstable_protocol_v2`, with `SupervisorConfig::offer_v2`): every
//! start offers v2 in `initialize` and the agent picks (a v1 agent stays v1 in every respect);
//! on a v2 connection a session is re-attached with `session/resume` replaying from the start
//! (`v2.rs`), and a turn, acknowledged by its `session/prompt` answer, ends with the session's
//! idle `state_update` — or, if the agent's connection ends first, with its close reason.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{CallError, ErrorObject, RawValue, Role};
use agent_client_protocol_schema::v1 as s;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::driver::{DriverConfig, Incoming, RpcError};
use crate::process::{AgentCommand, CrashBudget, RestartDecision, RestartPolicy};
use crate::transport::{spawn_agent, AgentChild};
use crate::ClientSideConnection;

mod turn;
#[cfg(feature = "unstable_protocol_v2")]
pub mod v2;

pub use turn::Turn;
#[cfg(feature = "unstable_protocol_v2")]
use turn::Turns;

/// The optional responsiveness probe: every `interval`, an extension request
/// (`_acp-rs/ping`) must be answered within `timeout`. Any answer counts, an error too (most
/// agents answer "method not found"): only silence means the agent hangs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthProbe {
    /// Time between probes; the first is sent one interval after the agent started.
    pub interval: Duration,
    /// How long a probe waits for an answer; past it the agent is taken for hung, stopped (its
    /// connection closed, then [`AgentChild::shutdown`]) and handled as a crash.
    pub timeout: Duration,
}

/// How to run and watch an agent.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// The agent's program, arguments, environment and directory.
    pub command: AgentCommand,
    /// Must be a client config.
    pub driver: DriverConfig,
    /// Sent on every (re)start.
    pub initialize: s::InitializeRequest,
    /// Spawn + `initialize` must finish within this. Real agents can take a minute. 60 s.
    pub startup_timeout: Duration,
    /// `None`: a crash is final.
    pub restart: Option<RestartPolicy>,
    /// Off by default.
    pub probe: Option<HealthProbe>,
    /// For shutdown and for stopping a hung agent: stdin closed, then SIGTERM, then SIGKILL,
    /// each after this long. 2 s.
    pub shutdown_grace: Duration,
    /// ACP v2 (draft): offer protocol version 2 in every `initialize` (the agent picks; a v1
    /// agent answers 1). The host's service then gets v2's messages from a v2 agent. Off by
    /// default.
    #[cfg(feature = "unstable_protocol_v2")]
    pub offer_v2: bool,
}

impl SupervisorConfig {
    /// Runs `command` and sends it `initialize` on each start; a client [`DriverConfig`], a 60 s
    /// start-up deadline, the default [`RestartPolicy`], no probe, 2 s shutdown grace.
    pub fn new(command: AgentCommand, initialize: s::InitializeRequest) -> Self {
        SupervisorConfig {
            command,
            driver: DriverConfig::new(Role::Client),
            initialize,
            startup_timeout: Duration::from_secs(60),
            restart: Some(RestartPolicy::default()),
            probe: None,
            shutdown_grace: Duration::from_secs(2),
            #[cfg(feature = "unstable_protocol_v2")]
            offer_v2: false,
        }
    }
}

/// What happened to the agent, for logs and UIs.
#[derive(Debug, Clone, PartialEq)]
pub enum SupervisorEvent {
    /// A process is up and initialized. `generation` counts starts from 1.
    Started {
        /// The agent process's id.
        pid: u32,
        /// Which start this is.
        generation: u64,
    },
    /// The agent exited or stopped answering; `report` says how (exit status, stderr tail).
    Crashed {
        /// The start that crashed.
        generation: u64,
        /// How it ended: the exit status and stderr tail, or why the probe stopped it.
        report: String,
    },
    /// A restart will be tried after `after`.
    Restarting {
        /// The backoff before the attempt.
        after: Duration,
        /// Which restart in the crash budget's window this is, from 1 (a failed attempt counts
        /// as a crash too).
        attempt: u32,
    },
    /// A restart attempt failed before the agent was up (spawn or `initialize`).
    RestartFailed {
        /// The attempt's number, as [`SupervisorEvent::Restarting`] gave it.
        attempt: u32,
        /// Why it failed.
        error: String,
    },
    /// A tracked session was re-attached to the new agent.
    SessionReattached {
        /// The session.
        session_id: String,
        /// How: `session/resume` or `session/load`.
        method: &'static str,
    },
    /// A tracked session could not be re-attached (and is no longer tracked).
    SessionLost {
        /// The session.
        session_id: String,
        /// Why: the agent supports neither method, or its error.
        reason: String,
    },
    /// No more restarts: the crash budget is spent, or restarts are off.
    GaveUp {
        /// Why, with the last crash's report.
        reason: String,
    },
    /// `shutdown` finished.
    Stopped,
}

/// Why no connection can be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorError {
    /// The agent failed and will not be restarted (the reason says why, and its last words).
    Failed(String),
    /// [`SupervisedAgent::shutdown`] was called.
    Stopped,
}

impl std::fmt::Display for SupervisorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SupervisorError::Failed(why) => f.write_str(why),
            SupervisorError::Stopped => f.write_str("the agent was shut down"),
        }
    }
}

impl std::error::Error for SupervisorError {}

#[derive(Clone)]
enum State {
    Running(Box<Running>),
    Restarting,
    Failed(String),
    Stopped,
}

#[derive(Clone)]
struct Running {
    connection: ClientSideConnection,
    child: Arc<AgentChild>,
    initialize: s::InitializeResponse,
    /// The `initialize` answer as the agent sent it (a v2 answer's fields too).
    initialize_raw: Box<RawValue>,
    generation: u64,
}

#[derive(Debug, Clone)]
struct TrackedSession {
    id: s::SessionId,
    cwd: PathBuf,
    mcp_servers: Vec<s::McpServer>,
}

/// What the supervisor's handles and its monitor task share.
struct Supervision {
    state: watch::Sender<State>,
    sessions: Mutex<Vec<TrackedSession>>,
    events: broadcast::Sender<SupervisorEvent>,
    stop: CancellationToken,
    /// The v2 turns waited for (`turn.rs`).
    #[cfg(feature = "unstable_protocol_v2")]
    turns: Arc<Turns>,
}

impl Supervision {
    fn forget(&self, id: &s::SessionId) {
        self.sessions
            .lock()
            .expect("not poisoned")
            .retain(|t| &t.id != id);
    }

    fn emit(&self, e: SupervisorEvent) {
        tracing::info!(target: "acp::supervisor", event = ?e);
        let _ = self.events.send(e);
    }
}

/// A running, supervised agent. Cheap to clone.
#[derive(Clone)]
pub struct SupervisedAgent {
    shared: Arc<Supervision>,
}

impl SupervisedAgent {
    /// Spawns and initializes the agent. A first start that fails is an error (nothing to
    /// restart yet); later crashes are handled by the restart policy.
    pub async fn start<S>(config: SupervisorConfig, service: S) -> Result<Self, String>
    where
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        #[cfg(feature = "unstable_protocol_v2")]
        let turns = Arc::new(Turns::default());
        #[cfg(feature = "unstable_protocol_v2")]
        let service = turn::Watched {
            inner: service,
            turns: turns.clone(),
        };
        let running = launch(&config, service.clone(), 1).await?;
        let (events, _) = broadcast::channel(256);
        let shared = Arc::new(Supervision {
            state: watch::channel(State::Running(Box::new(running.clone()))).0,
            sessions: Mutex::new(Vec::new()),
            events,
            stop: CancellationToken::new(),
            #[cfg(feature = "unstable_protocol_v2")]
            turns,
        });
        shared.emit(SupervisorEvent::Started {
            pid: running.child.pid(),
            generation: 1,
        });
        tokio::spawn(monitor(shared.clone(), config, service, running));
        Ok(SupervisedAgent { shared })
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SupervisorEvent> {
        self.shared.events.subscribe()
    }

    /// The current connection; waits while a restart is under way.
    pub async fn connection(&self) -> Result<ClientSideConnection, SupervisorError> {
        let mut rx = self.shared.state.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                State::Running(r) if !r.connection.is_closed() => return Ok(r.connection.clone()),
                State::Failed(why) => return Err(SupervisorError::Failed(why.clone())),
                State::Stopped => return Err(SupervisorError::Stopped),
                _ => {}
            }
            if rx.changed().await.is_err() {
                return Err(SupervisorError::Stopped);
            }
        }
    }

    /// The current agent's `initialize` answer (capabilities, auth methods, info).
    pub fn initialize_response(&self) -> Option<s::InitializeResponse> {
        match &*self.shared.state.borrow() {
            State::Running(r) => Some(r.initialize.clone()),
            _ => None,
        }
    }

    /// The current agent's `initialize` answer as it sent it (a v2 agent's `info` and
    /// `capabilities` included).
    pub fn initialize_answer(&self) -> Option<Box<RawValue>> {
        match &*self.shared.state.borrow() {
            State::Running(r) => Some(r.initialize_raw.clone()),
            _ => None,
        }
    }

    /// The protocol version the current agent's `initialize` settled on: 1, or 2 with the
    /// feature `unstable_protocol_v2` when `SupervisorConfig::offer_v2` was on and the agent
    /// took it. `None` while no agent runs.
    pub fn protocol_version(&self) -> Option<u16> {
        match &*self.shared.state.borrow() {
            State::Running(r) => Some(r.connection.handle().protocol_version()),
            _ => None,
        }
    }

    /// Starts a prompt turn on the current agent (waiting while a restart is under way):
    /// `session/prompt` is sent and its answer awaited. On ACP v1 the answer ends the turn; on
    /// v2 it acknowledges the prompt and [`Turn::ended`] waits for the session's idle
    /// `state_update`. A crash before the answer fails this with [`CallError::Closed`] and the
    /// exit report; a crash after it fails [`Turn::ended`] the same way. One turn per session
    /// at a time (a second prompt in a session whose v2 turn runs is an error).
    pub async fn prompt(&self, request: s::PromptRequest) -> Result<Turn, RpcError> {
        let conn = self
            .connection()
            .await
            .map_err(|e| RpcError::Other(e.to_string()))?;
        let params = crate::driver::to_raw(&request)?;
        let method = acp_core::acp::agent::SESSION_PROMPT;
        #[cfg(feature = "unstable_protocol_v2")]
        if conn.handle().protocol_version() == acp_core::v2::PROTOCOL_VERSION {
            // Watched before it is sent: the turn may end before the answer is read.
            let watch = self
                .shared
                .turns
                .watch(&request.session_id.0, conn.handle())?;
            drop(request);
            let answer = conn.handle().request(method, Some(params), None).await?;
            return Ok(Turn::acknowledged(answer, watch, conn));
        }
        drop(request);
        let answer = conn.handle().request(method, Some(params), None).await?;
        Ok(Turn::answered(answer))
    }

    /// The pid of the current agent process.
    pub fn pid(&self) -> Option<u32> {
        match &*self.shared.state.borrow() {
            State::Running(r) => Some(r.child.pid()),
            _ => None,
        }
    }

    /// How many times an agent was started (1 before any restart); 0 while none is running
    /// (during a restart, after giving up or a shutdown).
    pub fn generation(&self) -> u64 {
        match &*self.shared.state.borrow() {
            State::Running(r) => r.generation,
            _ => 0,
        }
    }

    /// `session/new` on the current agent; the session is re-attached after a restart.
    pub async fn new_session(
        &self,
        request: s::NewSessionRequest,
    ) -> Result<s::NewSessionResponse, RpcError> {
        let conn = self
            .connection()
            .await
            .map_err(|e| RpcError::Other(e.to_string()))?;
        let (cwd, mcp) = (request.cwd.clone(), request.mcp_servers.clone());
        let response = conn.new_session(request).await?;
        self.track_session(response.session_id.clone(), cwd, mcp);
        Ok(response)
    }

    /// Remembers a session (opened some other way) for re-attachment after a restart.
    pub fn track_session(&self, id: s::SessionId, cwd: PathBuf, mcp_servers: Vec<s::McpServer>) {
        let mut sessions = self.shared.sessions.lock().expect("not poisoned");
        sessions.retain(|t| t.id != id);
        sessions.push(TrackedSession {
            id,
            cwd,
            mcp_servers,
        });
    }

    /// Forgets a session (closed, deleted, or lost).
    pub fn forget_session(&self, id: &s::SessionId) {
        self.shared.forget(id);
    }

    /// Stops the agent gracefully (stdin closed, grace, SIGTERM, grace, SIGKILL of its group)
    /// and restarts nothing more. Resolves once it is down.
    pub async fn shutdown(&self) {
        let mut rx = self.shared.state.subscribe();
        self.shared.stop.cancel();
        while !matches!(&*rx.borrow_and_update(), State::Stopped | State::Failed(_)) {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

async fn launch<S>(
    config: &SupervisorConfig,
    service: S,
    generation: u64,
) -> Result<Running, String>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let (connection, child) = spawn_agent(&config.command, service, config.driver.clone())
        .map_err(|e| format!("could not start the agent: {e}"))?;
    let child = Arc::new(child);
    let init = initialize(&connection, config).await;
    match init {
        Ok((initialize, initialize_raw)) => Ok(Running {
            connection,
            child,
            initialize,
            initialize_raw,
            generation,
        }),
        Err(e) => {
            let why = match &e {
                RpcError::Call(CallError::TimedOut { .. }) => format!(
                    "the agent did not answer initialize within {:?}",
                    config.startup_timeout
                ),
                RpcError::Call(CallError::Closed { reason }) => {
                    format!("the agent exited during initialize: {reason}")
                }
                other => format!("initialize failed: {other}"),
            };
            child.shutdown(config.shutdown_grace).await;
            Err(why)
        }
    }
}

/// `initialize` within the start-up deadline: the configured request, offering v2 when asked.
async fn initialize(
    connection: &ClientSideConnection,
    config: &SupervisorConfig,
) -> Result<(s::InitializeResponse, Box<RawValue>), RpcError> {
    let conn = connection.with_timeout(config.startup_timeout);
    #[cfg(feature = "unstable_protocol_v2")]
    if config.offer_v2 {
        let method = acp_core::acp::agent::INITIALIZE;
        let raw = conn
            .handle()
            .request(
                method,
                Some(v2::offer(&config.initialize)?),
                Some(config.startup_timeout),
            )
            .await?;
        return Ok((crate::driver::decode(method, &raw)?, raw));
    }
    conn.initialize_with_raw(config.initialize.clone()).await
}

/// Resolves when the probe finds the agent silent (never, without a probe).
async fn probe_until_silent(
    connection: ClientSideConnection,
    probe: Option<HealthProbe>,
) -> String {
    let Some(probe) = probe else {
        return std::future::pending().await;
    };
    let conn = connection.with_timeout(probe.timeout);
    let mut tick = tokio::time::interval_at(Instant::now() + probe.interval, probe.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match conn.ext_method("acp-rs/ping", serde_json::json!({})).await {
            Err(RpcError::Call(CallError::TimedOut { .. })) => {
                return format!(
                    "the agent did not answer a health probe within {:?}; stopping it",
                    probe.timeout
                )
            }
            // The process ending is reported by the exit watch, with its status.
            Err(RpcError::Call(CallError::Closed { .. })) => {
                return std::future::pending().await;
            }
            // Any answer, an error included, shows the agent is responsive.
            _ => {}
        }
    }
}

async fn monitor<S>(
    shared: Arc<Supervision>,
    config: SupervisorConfig,
    service: S,
    mut running: Running,
) where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    let origin = Instant::now();
    let mut budget = config.restart.clone().map(CrashBudget::new);
    loop {
        let report = tokio::select! {
            _ = shared.stop.cancelled() => {
                running.child.shutdown(config.shutdown_grace).await;
                shared.state.send_replace(State::Stopped);
                shared.emit(SupervisorEvent::Stopped);
                return;
            }
            report = running.child.wait() => report.to_string(),
            why = probe_until_silent(running.connection.clone(), config.probe) => {
                running.connection.close(why.clone());
                let outcome = running.child.shutdown(config.shutdown_grace).await;
                format!("{why} ({})", outcome.report)
            }
        };
        shared.state.send_replace(State::Restarting);
        shared.emit(SupervisorEvent::Crashed {
            generation: running.generation,
            report: report.clone(),
        });
        let Some(budget) = budget.as_mut() else {
            give_up(&shared, format!("{report}\n(restarts are off)"));
            return;
        };
        let next = running.generation + 1;
        loop {
            let (after, attempt) = match budget.record_crash(origin.elapsed()) {
                RestartDecision::GiveUp { reason } => {
                    give_up(&shared, format!("{reason}; last: {report}"));
                    return;
                }
                RestartDecision::Restart { after, attempt } => (after, attempt),
            };
            shared.emit(SupervisorEvent::Restarting { after, attempt });
            tokio::select! {
                _ = shared.stop.cancelled() => {
                    shared.state.send_replace(State::Stopped);
                    shared.emit(SupervisorEvent::Stopped);
                    return;
                }
                _ = tokio::time::sleep(after) => {}
            }
            // `shutdown` is watched while the agent starts (a started one is dropped: its
            // group is killed) and while its sessions are re-attached.
            let launched = tokio::select! {
                _ = shared.stop.cancelled() => None,
                r = launch(&config, service.clone(), next) => Some(r),
            };
            match launched {
                None => {
                    shared.state.send_replace(State::Stopped);
                    shared.emit(SupervisorEvent::Stopped);
                    return;
                }
                Some(Ok(r)) => {
                    running = r;
                    break;
                }
                Some(Err(error)) => shared.emit(SupervisorEvent::RestartFailed { attempt, error }),
            }
        }
        let stopped = tokio::select! {
            _ = shared.stop.cancelled() => true,
            _ = reattach(&shared, &running) => false,
        };
        if stopped {
            running.child.shutdown(config.shutdown_grace).await;
            shared.state.send_replace(State::Stopped);
            shared.emit(SupervisorEvent::Stopped);
            return;
        }
        shared
            .state
            .send_replace(State::Running(Box::new(running.clone())));
        shared.emit(SupervisorEvent::Started {
            pid: running.child.pid(),
            generation: running.generation,
        });
    }
}

fn give_up(shared: &Supervision, reason: String) {
    shared.state.send_replace(State::Failed(reason.clone()));
    shared.emit(SupervisorEvent::GaveUp { reason });
}

/// Re-attaches every tracked session to a fresh agent, as acp-client's
/// [`acp_client::session::reopen`] decides for a host that holds the conversation:
/// `session/resume` when advertised (no replay), else `session/load` (the replay goes to the
/// service as `session/update`s, before the answer), else the session is reported lost. On a
/// v2 connection, as the session engine reopens (`reopen_v2`): `session/resume` replaying from
/// the start (`v2.rs`).
async fn reattach(shared: &Supervision, running: &Running) {
    use acp_client::session::{reopen, AgentFacts, Open};
    let sessions = shared.sessions.lock().expect("not poisoned").clone();
    let facts = AgentFacts::read(running.initialize_raw.get());
    #[cfg(feature = "unstable_protocol_v2")]
    let v2 = running.connection.handle().protocol_version() == acp_core::v2::PROTOCOL_VERSION;
    for t in sessions {
        let open = match &facts {
            #[cfg(feature = "unstable_protocol_v2")]
            Ok(facts) if v2 => acp_client::session::reopen_v2(facts, &t.id.0, true),
            Ok(facts) => reopen(facts, &t.id.0, true),
            Err(_) => None,
        };
        let outcome = match open {
            #[cfg(feature = "unstable_protocol_v2")]
            Some(open @ Open::Replay { .. }) => {
                let params = v2::replay_params(&t.id, &t.cwd, &t.mcp_servers);
                match params {
                    Ok(params) => running
                        .connection
                        .handle()
                        .request(open.method(), Some(params), None)
                        .await
                        .map(|_| open.method()),
                    Err(e) => Err(e),
                }
            }
            Some(Open::Resume { .. }) => {
                let req = s::ResumeSessionRequest::new(t.id.clone(), t.cwd.clone())
                    .mcp_servers(t.mcp_servers.clone());
                running
                    .connection
                    .resume_session(req)
                    .await
                    .map(|_| "session/resume")
            }
            Some(Open::Load { .. }) => {
                let req = s::LoadSessionRequest::new(t.id.clone(), t.cwd.clone())
                    .mcp_servers(t.mcp_servers.clone());
                running
                    .connection
                    .load_session(req)
                    .await
                    .map(|_| "session/load")
            }
            // `reopen` names a v2 replay never (`reopen_v2` does, on a v2 connection).
            #[cfg(not(feature = "unstable_protocol_v2"))]
            Some(Open::New | Open::Replay { .. }) | None => {
                lost(shared, &t);
                continue;
            }
            #[cfg(feature = "unstable_protocol_v2")]
            Some(Open::New) | None => {
                lost(shared, &t);
                continue;
            }
        };
        match outcome {
            Ok(method) => shared.emit(SupervisorEvent::SessionReattached {
                session_id: t.id.to_string(),
                method,
            }),
            Err(e) => {
                shared.emit(SupervisorEvent::SessionLost {
                    session_id: t.id.to_string(),
                    reason: e.to_string(),
                });
                shared.forget(&t.id);
            }
        }
    }
}

/// A session the new agent can neither resume nor load: reported and forgotten.
fn lost(shared: &Supervision, t: &TrackedSession) {
    shared.emit(SupervisorEvent::SessionLost {
        session_id: t.id.to_string(),
        reason: "the agent supports neither session/resume nor session/load".into(),
    });
    shared.forget(&t.id);
}
