//! Supervised agent processes.
//!
//! An ACP agent is a child process that speaks NDJSON JSON-RPC on its stdin/stdout. This module
//! spawns it (never through a shell), keeps an eye on it and stops it:
//!
//! * [`AgentCommand`] describes what to run: program, args, environment ([`EnvPolicy`]), cwd,
//!   the `PATH` used to find the program, and how much stderr to keep ([`TailLimits`]).
//! * [`AgentProcess::spawn`] resolves the executable explicitly ([`resolve_executable`]), starts
//!   the child **in its own process group**, pipes stdin/stdout for the protocol, and forwards
//!   stderr line by line to `tracing` (target `acp::agent_stderr`) while keeping a bounded tail
//!   for error reports.
//! * [`AgentProcess::shutdown`] stops it: close stdin, wait up to `grace`, `SIGTERM` the group,
//!   wait up to `grace`, `SIGKILL` the whole group, reap. Dropping an [`AgentProcess`] whose child
//!   is still running (or whose grandchildren still hold its stderr) `SIGKILL`s the group.
//! * [`adopt_orphans`] (Linux, opt-in, process-wide) makes this process a child subreaper:
//!   descendants that left the agent's group or session come back to it when their parent
//!   dies, are reaped, and are ended once the agent has ended (see [`orphans`]).
//! * [`ExitReport`] is what to show a user when the agent dies ("agent `x` exited with code 3;
//!   last stderr lines: ...").
//! * [`RestartPolicy`] + [`CrashBudget`] are the pure, clock-free restart logic: exponential
//!   backoff and a circuit breaker ("agent crashed 5 times in 2 minutes; not restarting"). Time is
//!   a parameter (`now: Duration` since any fixed origin the caller picks), so it is tested with
//!   virtual time.
//!
//! On Windows a child's "process group" is a job object of its own (`job`): any signal ends
//! the whole job (there is no graceful stop); programs are found and started with
//! `acp_client::windows`'s rules.

mod agent_process; // `AgentCommand`, `AgentProcess`: spawning an agent and watching it
mod env; // `EnvPolicy`: the environment a child gets
mod exit; // `Termination`, `ExitReport`
#[cfg(windows)]
mod job; // Windows: each child in a job object, so ending it ends its whole tree
pub mod orphans; // the subreaper: descendants that left the agent's group, reaped and ended
mod shutdown; // `AgentProcess::shutdown`: stdin closed, SIGTERM, SIGKILL of the group
mod signal; // signalling a process group (a job object on Windows), signal names
mod spawn; // executable resolution and the prepared command (no shell), `SpawnError`
#[cfg(windows)]
mod spawn_windows; // Windows: PATHEXT lookup, npm shims and batch files (acp_client::windows)
mod stderr; // stderr to `tracing` line by line, and the bounded tail

pub use agent_process::{AgentCommand, AgentProcess};
pub use env::{EnvInherit, EnvPolicy, DEFAULT_ENV_ALLOWLIST};
pub use exit::{ExitReport, Termination};
pub use orphans::{adopt_orphans, end_orphans, orphans_adopted};
pub use shutdown::{ShutdownOutcome, ShutdownStage};
pub(crate) use signal::signal_group;
pub use signal::signal_name;
pub use signal::{SIGKILL, SIGTERM};
#[cfg(unix)]
pub(crate) use spawn::prepare_command;
#[cfg(unix)]
pub use spawn::resolve_executable;
pub(crate) use spawn::PreparedCommand;
pub use spawn::SpawnError;
#[cfg(windows)]
pub(crate) use spawn_windows::prepare_command;
#[cfg(windows)]
pub use spawn_windows::resolve_executable;
pub use stderr::{StderrTail, TailLimits, MAX_STDERR_LINE_BYTES, STDERR_TRACING_TARGET};

// ---------------------------------------------------------------------------------------------
// Restart policy and crash budget (pure, clock-free)
// ---------------------------------------------------------------------------------------------

// Written once in acp-client (the extension uses the same code through acp-wasm).
pub use acp_client::restart::{human_duration, CrashBudget, RestartDecision, RestartPolicy};
