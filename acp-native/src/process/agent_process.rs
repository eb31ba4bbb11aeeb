//! [`AgentCommand`] (what to run) and [`AgentProcess`] (a running agent child: its own process
//! group, piped stdin/stdout, stderr drained, exit watched).

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

#[cfg(doc)] // (for links in the docs)
use super::resolve_executable;
use super::stderr::drain_stderr;
use super::{
    orphans, prepare_command, signal_group, EnvPolicy, ExitReport, PreparedCommand, SpawnError,
    StderrTail, TailLimits, Termination,
};

/// How long [`AgentProcess::wait`] waits, after the child has exited, for the rest of its stderr
/// (the pipe is normally at EOF at once; a grandchild holding it open must not block reports).
const STDERR_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// What to run as an agent. Build with [`AgentCommand::new`] and the chained setters.
#[derive(Clone, Debug)]
pub struct AgentCommand {
    /// Program: a bare name (searched in `PATH`) or a path (see [`resolve_executable`]).
    pub program: OsString,
    /// Arguments (no shell: passed verbatim).
    pub args: Vec<OsString>,
    /// Environment. Default: [`EnvPolicy::default`] (allowlist, no secrets).
    pub env: EnvPolicy,
    /// Working directory (default: this process's).
    pub cwd: Option<PathBuf>,
    /// `PATH` used to find a bare program name. `None`: the child's own `PATH` (after
    /// [`EnvPolicy`] resolution).
    pub search_path: Option<OsString>,
    /// How much stderr to keep for reports.
    pub stderr_tail: TailLimits,
}

impl AgentCommand {
    /// A command with no args, the default env policy, inherited cwd and default tail limits.
    pub fn new(program: impl Into<OsString>) -> Self {
        AgentCommand {
            program: program.into(),
            args: Vec::new(),
            env: EnvPolicy::default(),
            cwd: None,
            search_path: None,
            stderr_tail: TailLimits::default(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the environment policy.
    pub fn env(mut self, env: EnvPolicy) -> Self {
        self.env = env;
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the `PATH` used to find the program.
    pub fn search_path(mut self, path: impl Into<OsString>) -> Self {
        self.search_path = Some(path.into());
        self
    }

    /// Sets the stderr tail bounds.
    pub fn stderr_tail(mut self, limits: TailLimits) -> Self {
        self.stderr_tail = limits;
        self
    }
}

/// A running agent child: its own process group, piped stdin/stdout, stderr drained into
/// `tracing` and a bounded tail.
///
/// Dropping it while the child runs (or while a grandchild still holds its stderr) sends
/// `SIGKILL` to the whole group; tokio reaps the child in the background. Must be created inside
/// a tokio runtime.
///
/// When the process called [`adopt_orphans`](super::adopt_orphans) (Linux), the descendants
/// that left the group (their own session or group, a double fork) are ended too once the agent
/// has exited, whether it crashed, was shut down or its handle dropped; [`AgentProcess::wait`]
/// returns after that.
#[derive(Debug)]
pub struct AgentProcess {
    pub(super) program: String,
    pub(super) pid: u32,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) exit_rx: watch::Receiver<Option<Termination>>,
    pub(super) stderr_done_rx: watch::Receiver<bool>,
    /// `true` once the descendants that left its group have been ended (see [`orphans`]).
    pub(super) orphans_done_rx: watch::Receiver<bool>,
    pub(super) tail: Arc<Mutex<StderrTail>>,
    pub(super) shutdown_requested: bool,
}

impl AgentProcess {
    /// Spawns `cmd` (no shell), in its own process group.
    pub fn spawn(cmd: &AgentCommand) -> Result<AgentProcess, SpawnError> {
        let env = cmd.env.resolve_from_host();
        let PreparedCommand {
            mut command,
            display: program_name,
        } = prepare_command(
            &cmd.program,
            &cmd.args,
            &env,
            cmd.cwd.as_deref(),
            cmd.search_path.as_deref(),
        )?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (mut child, owner) =
            orphans::spawn(&mut command, true).map_err(|source| SpawnError::Io {
                command: program_name.clone(),
                source,
            })?;
        drop(command);
        let pid = child.id().expect("a just-spawned child has a pid");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take().expect("stderr is piped");

        let tail = Arc::new(Mutex::new(StderrTail::new(cmd.stderr_tail)));
        let (stderr_done_tx, stderr_done_rx) = watch::channel(false);
        tokio::spawn(drain_stderr(
            stderr,
            pid,
            program_name.clone(),
            Arc::clone(&tail),
            stderr_done_tx,
        ));

        let (exit_tx, exit_rx) = watch::channel(None);
        let (orphans_done_tx, orphans_done_rx) = watch::channel(false);
        let program = program_name.clone();
        tokio::spawn(async move {
            let termination = match child.wait().await {
                Ok(status) => Termination::from(status),
                Err(e) => {
                    tracing::error!(pid, program = %program, "waiting for agent failed: {e}");
                    Termination::Unknown
                }
            };
            tracing::debug!(pid, program = %program, "agent {termination}");
            exit_tx.send_replace(Some(termination));
            // What it started outside its group came back to us when it died (a subreaper):
            // ended now, before `wait` reports the exit.
            orphans::agent_ended(pid, owner).await;
            orphans_done_tx.send_replace(true);
        });
        tracing::debug!(pid, program = %program_name, "spawned agent");
        Ok(AgentProcess {
            program: program_name,
            pid,
            stdin,
            stdout,
            exit_rx,
            stderr_done_rx,
            orphans_done_rx,
            tail,
            shutdown_requested: false,
        })
    }

    /// The child's pid, which is also its process-group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The program as given.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// Takes the child's stdin (write NDJSON here). `None` if already taken.
    ///
    /// [`AgentProcess::shutdown`] can only close stdin it still holds: drop the taken handle
    /// before calling it if the agent should see EOF first.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Takes the child's stdout (read NDJSON here). `None` if already taken.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Liveness: `true` until the child's exit has been observed.
    pub fn is_alive(&self) -> bool {
        self.exit_rx.borrow().is_none()
    }

    /// The termination, if the child has exited.
    pub fn try_termination(&self) -> Option<Termination> {
        *self.exit_rx.borrow()
    }

    /// A watch that turns `Some` when the child exits (for `select!`-style supervision).
    pub fn exit_watch(&self) -> watch::Receiver<Option<Termination>> {
        self.exit_rx.clone()
    }

    /// A `'static` future resolving to the child's termination (does not borrow `self`).
    pub fn exit_status(&self) -> impl Future<Output = Termination> + Send + 'static {
        let mut rx = self.exit_rx.clone();
        async move {
            let seen = rx.wait_for(Option::is_some).await.ok().and_then(|t| *t);
            // `None`: the waiter task is gone without reporting (runtime shutting down).
            seen.or_else(|| *rx.borrow())
                .unwrap_or(Termination::Unknown)
        }
    }

    /// The current stderr tail, oldest line first.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.lock().unwrap_or_else(|e| e.into_inner()).lines()
    }

    /// Waits for the child to exit and returns the report (after giving stderr a moment to
    /// reach EOF so the tail holds the final lines, and, under
    /// [`adopt_orphans`](super::adopt_orphans), once the descendants that left its group are
    /// ended: bounded by [`orphans::END_LIMIT`]).
    pub async fn wait(&self) -> ExitReport {
        let termination = self.exit_status().await;
        let mut done = self.stderr_done_rx.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN_AFTER_EXIT, done.wait_for(|d| *d)).await;
        // (`Err`: the waiter task is gone, the runtime shutting down.)
        let _ = self.orphans_done_rx.clone().wait_for(|d| *d).await;
        self.report(termination)
    }

    pub(super) fn report(&self, termination: Termination) -> ExitReport {
        ExitReport {
            program: self.program.clone(),
            pid: self.pid,
            termination,
            stderr_tail: self.stderr_tail(),
            shutdown_requested: self.shutdown_requested,
        }
    }

    /// Sends `signal` to the child's whole process group, if the child has not been seen to
    /// exit. Returns whether a signal was sent.
    pub fn signal(&self, signal: i32) -> io::Result<bool> {
        if !self.is_alive() {
            return Ok(false);
        }
        signal_group(self.pid, signal)?;
        Ok(true)
    }
}
