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
//! * [`ExitReport`] is what to show a user when the agent dies ("agent `x` exited with code 3;
//!   last stderr lines: ...").
//! * [`RestartPolicy`] + [`CrashBudget`] are the pure, clock-free restart logic: exponential
//!   backoff and a circuit breaker ("agent crashed 5 times in 2 minutes; not restarting"). Time is
//!   a parameter (`now: Duration` since any fixed origin the caller picks), so it is tested with
//!   virtual time.
//!
//! Unix only (process groups and signals).

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::future::Future;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

/// The `tracing` target agent stderr lines are logged under.
pub const STDERR_TRACING_TARGET: &str = "acp::agent_stderr";

/// Longest stderr line (in bytes) forwarded to `tracing`; the rest of a longer line is dropped and
/// the line is marked as cut. Bounds memory when an agent writes megabytes without a newline.
pub const MAX_STDERR_LINE_BYTES: usize = 16 * 1024;

/// How long [`AgentProcess::wait`] waits, after the child has exited, for the rest of its stderr
/// (the pipe is normally at EOF at once; a grandchild holding it open must not block reports).
const STDERR_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

// ---------------------------------------------------------------------------------------------
// Environment policy
// ---------------------------------------------------------------------------------------------

/// Host variables passed to children by [`EnvPolicy::default`]: what a program needs to find
/// tools, locate its config and print text correctly, and nothing that usually holds a secret.
/// A trailing `*` matches a prefix. The list is the shared client policy's
/// ([`acp_client::env::DEFAULT_ALLOWLIST`]), the same in the VS Code extension.
pub use acp_client::env::DEFAULT_ALLOWLIST as DEFAULT_ENV_ALLOWLIST;

/// Which host environment variables a child inherits, plus explicit variables.
///
/// **Default: allowlist ([`DEFAULT_ENV_ALLOWLIST`]), not inherit-all.** A host such as an editor
/// often carries API keys, cloud credentials and tokens in its environment; an agent (or a
/// command an agent runs in a terminal) should only see them if the user says so. Pass what an
/// agent needs explicitly with [`EnvPolicy::var`] / [`EnvPolicy::allow`], or opt into
/// [`EnvPolicy::inherit_all`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvPolicy {
    inherit: EnvInherit,
    vars: BTreeMap<OsString, OsString>,
}

/// The inheritance part of an [`EnvPolicy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvInherit {
    /// Every host variable.
    All,
    /// No host variable.
    Nothing,
    /// Host variables whose name matches one of these patterns (exact, or prefix with a
    /// trailing `*`).
    Only(Vec<String>),
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy::allowlist(DEFAULT_ENV_ALLOWLIST.iter().copied())
    }
}

impl EnvPolicy {
    /// Inherit the whole host environment (explicit variables still override).
    pub fn inherit_all() -> Self {
        EnvPolicy {
            inherit: EnvInherit::All,
            vars: BTreeMap::new(),
        }
    }

    /// Inherit nothing: the child sees only explicit variables.
    pub fn empty() -> Self {
        EnvPolicy {
            inherit: EnvInherit::Nothing,
            vars: BTreeMap::new(),
        }
    }

    /// Inherit only host variables matching `patterns` (exact name, or prefix with trailing `*`).
    pub fn allowlist<I, S>(patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EnvPolicy {
            inherit: EnvInherit::Only(patterns.into_iter().map(Into::into).collect()),
            vars: BTreeMap::new(),
        }
    }

    /// Also inherit host variables matching `pattern`. Turns [`EnvInherit::Nothing`] into an
    /// allowlist; a no-op under [`EnvInherit::All`].
    pub fn allow(mut self, pattern: impl Into<String>) -> Self {
        match &mut self.inherit {
            EnvInherit::All => {}
            EnvInherit::Nothing => self.inherit = EnvInherit::Only(vec![pattern.into()]),
            EnvInherit::Only(list) => list.push(pattern.into()),
        }
        self
    }

    /// Set `name=value` in the child, overriding any inherited value.
    pub fn var(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Set `name=value` in place (see [`EnvPolicy::var`]).
    pub fn set_var(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        self.vars.insert(name.into(), value.into());
    }

    /// The inheritance rule.
    pub fn inherit(&self) -> &EnvInherit {
        &self.inherit
    }

    /// The explicit variables.
    pub fn vars(&self) -> &BTreeMap<OsString, OsString> {
        &self.vars
    }

    /// The child's complete environment given a host environment. Pure: tests pass a fake host.
    pub fn resolve<I>(&self, host: I) -> BTreeMap<OsString, OsString>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut out = BTreeMap::new();
        for (name, value) in host {
            let keep = match &self.inherit {
                EnvInherit::All => true,
                EnvInherit::Nothing => false,
                EnvInherit::Only(patterns) => {
                    patterns.iter().any(|p| env_pattern_matches(p, &name))
                }
            };
            if keep {
                out.insert(name, value);
            }
        }
        for (name, value) in &self.vars {
            out.insert(name.clone(), value.clone());
        }
        out
    }

    /// The child's complete environment given this process's environment.
    pub fn resolve_from_host(&self) -> BTreeMap<OsString, OsString> {
        self.resolve(std::env::vars_os())
    }
}

fn env_pattern_matches(pattern: &str, name: &OsStr) -> bool {
    let name = name.as_bytes();
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix.as_bytes()),
        None => name == pattern.as_bytes(),
    }
}

// ---------------------------------------------------------------------------------------------
// Executable resolution and spawning
// ---------------------------------------------------------------------------------------------

/// Why a child could not be started. The `Display` names the command and says what to fix.
#[derive(Debug)]
pub enum SpawnError {
    /// A bare command name was not found in any `PATH` directory.
    CommandNotFound {
        /// The command as given.
        command: String,
        /// The `PATH` that was searched (`None`: there was none).
        search_path: Option<OsString>,
    },
    /// The command names a path (or a `PATH` match) that exists but cannot be executed.
    NotExecutable {
        /// The command as given.
        command: String,
        /// The file that was found.
        path: PathBuf,
        /// Why it cannot be run ("is a directory", "has no execute permission", ...).
        reason: String,
    },
    /// The working directory is unusable.
    InvalidCwd {
        /// The directory.
        cwd: PathBuf,
        /// Why.
        reason: String,
    },
    /// The command is empty or contains a NUL byte.
    InvalidCommand {
        /// The command as given.
        command: String,
        /// Why.
        reason: &'static str,
    },
    /// `fork`/`exec` or pipe setup failed.
    Io {
        /// The command as given.
        command: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::CommandNotFound {
                command,
                search_path,
            } => {
                write!(f, "command not found: `{command}`")?;
                match search_path {
                    Some(p) if !p.is_empty() => {
                        write!(f, " (searched PATH={})", p.to_string_lossy())?
                    }
                    _ => write!(f, " (no PATH to search; give an absolute path)")?,
                }
                if command.contains(char::is_whitespace) {
                    write!(
                        f,
                        "; commands run without a shell, pass arguments separately"
                    )?;
                }
                Ok(())
            }
            SpawnError::NotExecutable {
                command,
                path,
                reason,
            } => {
                write!(f, "cannot execute `{command}`: {} {reason}", path.display())
            }
            SpawnError::InvalidCwd { cwd, reason } => {
                write!(f, "invalid working directory {}: {reason}", cwd.display())
            }
            SpawnError::InvalidCommand { command, reason } => {
                write!(f, "invalid command `{command}`: {reason}")
            }
            SpawnError::Io { command, source } => {
                write!(f, "failed to start `{command}`: {source}")
            }
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Finds the executable for `program`, without a shell.
///
/// * A program containing `/` is a path: absolute paths are used as is, relative ones are taken
///   relative to `cwd` (the child's working directory; this process's if `None`).
/// * Otherwise each directory of `search_path` (a `PATH`-style, `:`-separated list) is tried in
///   order. Empty entries (which POSIX reads as "current directory") are skipped on purpose.
///
/// The result must be a regular file (after following symlinks) with an execute bit; otherwise
/// [`SpawnError::NotExecutable`] (for a path) or [`SpawnError::CommandNotFound`] (for a name,
/// when no `PATH` entry qualifies).
pub fn resolve_executable(
    program: &OsStr,
    search_path: Option<&OsStr>,
    cwd: Option<&Path>,
) -> Result<PathBuf, SpawnError> {
    let command = program.to_string_lossy().into_owned();
    if program.is_empty() {
        return Err(SpawnError::InvalidCommand {
            command,
            reason: "empty command",
        });
    }
    if program.as_bytes().contains(&0) {
        return Err(SpawnError::InvalidCommand {
            command,
            reason: "contains a NUL byte",
        });
    }
    if program.as_bytes().contains(&b'/') {
        let path = Path::new(program);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            let base = match cwd {
                Some(c) => c.to_path_buf(),
                None => std::env::current_dir().map_err(|source| SpawnError::Io {
                    command: command.clone(),
                    source,
                })?,
            };
            base.join(path)
        };
        return match check_executable(&full) {
            Ok(()) => Ok(full),
            Err(reason) => Err(SpawnError::NotExecutable {
                command,
                path: full,
                reason,
            }),
        };
    }
    if let Some(search) = search_path {
        for dir in std::env::split_paths(search) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let candidate = dir.join(program);
            if check_executable(&candidate).is_ok() {
                return Ok(candidate);
            }
        }
    }
    Err(SpawnError::CommandNotFound {
        command,
        search_path: search_path.map(OsStr::to_os_string),
    })
}

fn check_executable(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err("does not exist".into()),
        Err(e) => Err(format!("cannot be inspected: {e}")),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(m) if !m.is_file() => Err("is not a regular file".into()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("has no execute permission".into()),
        Ok(_) => Ok(()),
    }
}

/// A fully prepared (not yet spawned) child: resolved executable, exact environment, cwd,
/// own process group, kill-on-drop. Shared by agents and terminals.
pub(crate) struct PreparedCommand {
    pub(crate) command: tokio::process::Command,
    pub(crate) display: String,
}

pub(crate) fn prepare_command(
    program: &OsStr,
    args: &[OsString],
    env: &BTreeMap<OsString, OsString>,
    cwd: Option<&Path>,
    search_path: Option<&OsStr>,
) -> Result<PreparedCommand, SpawnError> {
    if let Some(dir) = cwd {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SpawnError::InvalidCwd {
                    cwd: dir.to_path_buf(),
                    reason: "is not a directory".into(),
                })
            }
            Err(e) => {
                return Err(SpawnError::InvalidCwd {
                    cwd: dir.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        }
    }
    let search = search_path
        .map(OsStr::to_os_string)
        .or_else(|| env.get(OsStr::new("PATH")).cloned());
    let exe = resolve_executable(program, search.as_deref(), cwd)?;
    let mut command = tokio::process::Command::new(&exe);
    command
        .args(args)
        .env_clear()
        .envs(env)
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    // argv[0] is what the user typed, as a shell would do.
    command.arg0(program);
    Ok(PreparedCommand {
        command,
        display: program.to_string_lossy().into_owned(),
    })
}

/// Sends `signal` to the process group `pgid`. `ESRCH` (group already gone) is not an error.
pub(crate) fn signal_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::Error::other("pgid out of range"))?;
    // killpg(0 or 1, ..) would signal our own group / init: never do that.
    if pgid <= 1 {
        return Err(io::Error::other("refusing to signal process group <= 1"));
    }
    // SAFETY: killpg has no memory-safety preconditions.
    let rc = unsafe { libc::killpg(pgid, signal) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// The conventional name of a signal number (`9` -> `"SIGKILL"`), for the signals a user is
/// likely to meet.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Termination, stderr tail, exit report
// ---------------------------------------------------------------------------------------------

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// It called `exit(code)`.
    Exited(i32),
    /// A signal killed it.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// The exit status could not be collected (e.g. someone else reaped the child).
    Unknown,
}

impl Termination {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self, Termination::Exited(0))
    }

    /// The exit code, if it exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            Termination::Exited(c) => Some(*c),
            _ => None,
        }
    }

    /// The killing signal, if a signal killed it.
    pub fn signal(&self) -> Option<i32> {
        match self {
            Termination::Signaled { signal, .. } => Some(*signal),
            _ => None,
        }
    }
}

impl From<std::process::ExitStatus> for Termination {
    fn from(status: std::process::ExitStatus) -> Self {
        if let Some(code) = status.code() {
            Termination::Exited(code)
        } else if let Some(signal) = status.signal() {
            Termination::Signaled {
                signal,
                core_dumped: status.core_dumped(),
            }
        } else {
            Termination::Unknown
        }
    }
}

impl fmt::Display for Termination {
    /// "exited with code 3", "was killed by signal 9 (SIGKILL)", "ended with an unknown status".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Termination::Exited(code) => write!(f, "exited with code {code}"),
            Termination::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "was killed by signal {signal}")?;
                if let Some(name) = signal_name(*signal) {
                    write!(f, " ({name})")?;
                }
                if *core_dumped {
                    write!(f, ", core dumped")?;
                }
                Ok(())
            }
            Termination::Unknown => write!(f, "ended with an unknown status"),
        }
    }
}

/// Bounds on the stderr tail kept for error reports. All bounds hold at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailLimits {
    /// Most recent lines kept.
    pub max_lines: usize,
    /// Most recent bytes kept (sum of line lengths, without newlines).
    pub max_bytes: usize,
    /// A longer line is cut to this many bytes (at a character boundary) before it enters the
    /// tail, so one giant line cannot push out everything else.
    pub max_line_bytes: usize,
}

impl Default for TailLimits {
    /// 40 lines, 8 KiB, 1 KiB per line.
    fn default() -> Self {
        TailLimits {
            max_lines: 40,
            max_bytes: 8 * 1024,
            max_line_bytes: 1024,
        }
    }
}

/// A bounded ring of the most recent stderr lines.
#[derive(Clone, Debug)]
pub struct StderrTail {
    limits: TailLimits,
    lines: VecDeque<String>,
    bytes: usize,
    dropped_lines: u64,
}

impl StderrTail {
    /// An empty tail.
    pub fn new(limits: TailLimits) -> Self {
        StderrTail {
            limits,
            lines: VecDeque::new(),
            bytes: 0,
            dropped_lines: 0,
        }
    }

    /// Appends a line (without its newline), evicting the oldest lines to stay within limits.
    pub fn push(&mut self, line: &str) {
        if self.limits.max_lines == 0 || self.limits.max_bytes == 0 {
            self.dropped_lines += 1;
            return;
        }
        let max_line = self.limits.max_line_bytes.min(self.limits.max_bytes);
        let line = truncate_at_char_boundary(line, max_line);
        self.bytes += line.len();
        self.lines.push_back(line.to_owned());
        while self.lines.len() > self.limits.max_lines || self.bytes > self.limits.max_bytes {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
                self.dropped_lines += 1;
            } else {
                break;
            }
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }

    /// Lines seen but no longer kept.
    pub fn dropped_lines(&self) -> u64 {
        self.dropped_lines
    }

    /// Bytes currently kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
fn truncate_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What to tell a user when an agent ended: who, how, and its last stderr lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitReport {
    /// The command as given (not the resolved path).
    pub program: String,
    /// The child's pid (also its process-group id).
    pub pid: u32,
    /// How it ended.
    pub termination: Termination,
    /// The last stderr lines, oldest first (bounded by [`TailLimits`]).
    pub stderr_tail: Vec<String>,
    /// Whether the end was requested by us ([`AgentProcess::shutdown`]) rather than a crash.
    pub shutdown_requested: bool,
}

impl ExitReport {
    /// A crash from the user's point of view: not requested, and not a clean exit 0.
    pub fn is_crash(&self) -> bool {
        !self.shutdown_requested && !self.termination.success()
    }
}

impl fmt::Display for ExitReport {
    /// `agent `my-agent` exited with code 3; last stderr lines:\n  boom\n  bye`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent `{}` {}", self.program, self.termination)?;
        if self.shutdown_requested {
            write!(f, " after a shutdown request")?;
        }
        if self.stderr_tail.is_empty() {
            write!(f, "; it wrote nothing to stderr")
        } else {
            write!(f, "; last stderr lines:")?;
            for line in &self.stderr_tail {
                write!(f, "\n  {line}")?;
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// AgentCommand / AgentProcess
// ---------------------------------------------------------------------------------------------

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

/// Which step of [`AgentProcess::shutdown`] ended the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownStage {
    /// It had already exited before shutdown began.
    AlreadyExited,
    /// It exited within the grace period after stdin was closed.
    StdinClosed,
    /// It exited within the grace period after `SIGTERM` to its group.
    Terminated,
    /// It needed `SIGKILL`.
    Killed,
}

/// Result of [`AgentProcess::shutdown`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownOutcome {
    /// Which step ended it.
    pub stage: ShutdownStage,
    /// The exit report (with `shutdown_requested` set unless it had already exited).
    pub report: ExitReport,
}

/// A running agent child: its own process group, piped stdin/stdout, stderr drained into
/// `tracing` and a bounded tail.
///
/// Dropping it while the child runs (or while a grandchild still holds its stderr) sends
/// `SIGKILL` to the whole group; tokio reaps the child in the background. Must be created inside
/// a tokio runtime.
#[derive(Debug)]
pub struct AgentProcess {
    program: String,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    exit_rx: watch::Receiver<Option<Termination>>,
    stderr_done_rx: watch::Receiver<bool>,
    tail: Arc<Mutex<StderrTail>>,
    shutdown_requested: bool,
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
        let mut child = command.spawn().map_err(|source| SpawnError::Io {
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
        });
        tracing::debug!(pid, program = %program_name, "spawned agent");
        Ok(AgentProcess {
            program: program_name,
            pid,
            stdin,
            stdout,
            exit_rx,
            stderr_done_rx,
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
    /// reach EOF so the tail holds the final lines).
    pub async fn wait(&self) -> ExitReport {
        let termination = self.exit_status().await;
        let mut done = self.stderr_done_rx.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN_AFTER_EXIT, done.wait_for(|d| *d)).await;
        self.report(termination)
    }

    fn report(&self, termination: Termination) -> ExitReport {
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

    /// Stops the child: close stdin (if still held), wait up to `grace`; `SIGTERM` the group,
    /// wait up to `grace`; `SIGKILL` the group and reap. Whatever step ended the leader, a final
    /// `SIGKILL` goes to the group while anything may be left in it (its stderr pipe is still
    /// open), so no grandchild outlives the agent. Worst case about `2 * grace` plus the kill.
    pub async fn shutdown(&mut self, grace: Duration) -> ShutdownOutcome {
        self.shutdown_staged(grace, grace).await
    }

    /// [`AgentProcess::shutdown`] with separate waits after closing stdin (`stdin_grace`) and
    /// after `SIGTERM` (`term_grace`).
    pub async fn shutdown_staged(
        &mut self,
        stdin_grace: Duration,
        term_grace: Duration,
    ) -> ShutdownOutcome {
        if !self.is_alive() {
            self.kill_stragglers();
            let report = self.wait().await;
            return ShutdownOutcome {
                stage: ShutdownStage::AlreadyExited,
                report,
            };
        }
        self.shutdown_requested = true;
        drop(self.stdin.take());
        let exit = self.exit_status();
        tokio::pin!(exit);
        let stage = if tokio::time::timeout(stdin_grace, &mut exit).await.is_ok() {
            ShutdownStage::StdinClosed
        } else {
            if let Err(e) = signal_group(self.pid, libc::SIGTERM) {
                tracing::warn!(pid = self.pid, "SIGTERM to agent group failed: {e}");
            }
            if tokio::time::timeout(term_grace, &mut exit).await.is_ok() {
                ShutdownStage::Terminated
            } else {
                if let Err(e) = signal_group(self.pid, libc::SIGKILL) {
                    tracing::warn!(pid = self.pid, "SIGKILL to agent group failed: {e}");
                }
                (&mut exit).await;
                ShutdownStage::Killed
            }
        };
        // Grandchildren that stayed behind in the group.
        self.kill_stragglers();
        let report = self.wait().await;
        ShutdownOutcome { stage, report }
    }
}

impl AgentProcess {
    /// After the leader has exited: `SIGKILL` the group if something may still be in it (its
    /// stderr pipe is still open). Once the leader is reaped and the pipe is at EOF, the group
    /// id may be free for reuse, so it is not signalled.
    fn kill_stragglers(&self) {
        if !*self.stderr_done_rx.borrow() {
            let _ = signal_group(self.pid, libc::SIGKILL);
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if self.is_alive() {
            let _ = signal_group(self.pid, libc::SIGKILL);
        } else {
            self.kill_stragglers();
        }
    }
}

async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    pid: u32,
    program: String,
    tail: Arc<Mutex<StderrTail>>,
    done: watch::Sender<bool>,
) {
    let mut splitter = LineSplitter::new(MAX_STDERR_LINE_BYTES);
    let mut buf = vec![0u8; 8192];
    let mut emit = |line: &[u8], cut: usize| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if cut > 0 {
            text.push_str(&format!(" [... {cut} more bytes]"));
        }
        tracing::info!(target: "acp::agent_stderr", pid, program = %program, "{text}");
        tail.lock().unwrap_or_else(|e| e.into_inner()).push(&text);
    };
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => splitter.feed(&buf[..n], &mut emit),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(pid, "reading agent stderr failed: {e}");
                break;
            }
        }
    }
    splitter.finish(&mut emit);
    done.send_replace(true);
}

/// Splits a byte stream into lines, keeping at most `max` bytes of each line (the count of
/// dropped bytes is reported with the line). `\r\n` endings lose their `\r`.
pub(crate) struct LineSplitter {
    max: usize,
    line: Vec<u8>,
    cut: usize,
}

impl LineSplitter {
    pub(crate) fn new(max: usize) -> Self {
        LineSplitter {
            max,
            line: Vec::new(),
            cut: 0,
        }
    }

    pub(crate) fn feed(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(&[u8], usize)) {
        while !bytes.is_empty() {
            let (chunk, newline) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            let room = self.max.saturating_sub(self.line.len());
            let take = room.min(chunk.len());
            self.line.extend_from_slice(&chunk[..take]);
            self.cut += chunk.len() - take;
            if newline {
                if self.line.last() == Some(&b'\r') && self.cut == 0 {
                    self.line.pop();
                }
                emit(&self.line, self.cut);
                self.line.clear();
                self.cut = 0;
                bytes = &bytes[chunk.len() + 1..];
            } else {
                bytes = &[];
            }
        }
    }

    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(&[u8], usize)) {
        if !self.line.is_empty() || self.cut > 0 {
            emit(&self.line, self.cut);
            self.line.clear();
            self.cut = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Restart policy and crash budget (pure, clock-free)
// ---------------------------------------------------------------------------------------------

// Written once in acp-client (the extension uses the same code through acp-wasm).
pub use acp_client::restart::{human_duration, CrashBudget, RestartDecision, RestartPolicy};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_policy_resolution() {
        let host = || {
            vec![
                (OsString::from("PATH"), OsString::from("/bin")),
                (OsString::from("HOME"), OsString::from("/home/u")),
                (OsString::from("LC_ALL"), OsString::from("C")),
                (
                    OsString::from("AWS_SECRET_ACCESS_KEY"),
                    OsString::from("s3cr3t"),
                ),
                (OsString::from("OPENAI_API_KEY"), OsString::from("sk-x")),
            ]
        };
        let d = EnvPolicy::default().resolve(host());
        assert_eq!(
            d.keys().map(|k| k.to_str().unwrap()).collect::<Vec<_>>(),
            ["HOME", "LC_ALL", "PATH"]
        );

        let e = EnvPolicy::empty().var("X", "1").resolve(host());
        assert_eq!(e.len(), 1);
        assert_eq!(e[OsStr::new("X")], "1");

        let a = EnvPolicy::inherit_all().var("PATH", "/opt").resolve(host());
        assert_eq!(a.len(), 5);
        assert_eq!(a[OsStr::new("PATH")], "/opt");

        let l = EnvPolicy::empty().allow("OPENAI_*").resolve(host());
        assert_eq!(l.keys().collect::<Vec<_>>(), [OsStr::new("OPENAI_API_KEY")]);
        // `allow` under inherit-all is a no-op.
        assert_eq!(
            EnvPolicy::inherit_all().allow("X").inherit(),
            &EnvInherit::All
        );
    }

    #[test]
    fn tail_keeps_newest_within_both_bounds() {
        let mut t = StderrTail::new(TailLimits {
            max_lines: 3,
            max_bytes: 10,
            max_line_bytes: 100,
        });
        for l in ["a", "bb", "ccc", "dddd"] {
            t.push(l);
        }
        assert_eq!(t.lines(), ["bb", "ccc", "dddd"]);
        t.push("eeeeeee"); // 9 + 7 bytes > 10: evicts until it fits
        assert_eq!(t.lines(), ["eeeeeee"]);
        assert_eq!(t.bytes(), 7);
        assert_eq!(t.dropped_lines(), 4);
        t.push("ééééééééééé"); // 22 bytes: cut to 10 at a char boundary
        assert_eq!(t.lines(), ["ééééé"]);
    }

    #[test]
    fn line_splitter_bounds_lines_and_handles_splits() {
        let mut out: Vec<(String, usize)> = Vec::new();
        let mut sp = LineSplitter::new(4);
        let mut emit =
            |l: &[u8], cut: usize| out.push((String::from_utf8_lossy(l).into_owned(), cut));
        sp.feed(b"ab", &mut emit);
        sp.feed(b"c\r\nabcdefg", &mut emit);
        sp.feed(b"hij\n\nxy", &mut emit);
        sp.finish(&mut emit);
        assert_eq!(
            out,
            vec![
                ("abc".into(), 0),
                ("abcd".into(), 6),
                ("".into(), 0),
                ("xy".into(), 0)
            ]
        );
    }

    #[test]
    fn termination_display() {
        assert_eq!(Termination::Exited(3).to_string(), "exited with code 3");
        assert_eq!(
            Termination::Signaled {
                signal: libc::SIGKILL,
                core_dumped: false
            }
            .to_string(),
            "was killed by signal 9 (SIGKILL)"
        );
        let r = ExitReport {
            program: "my-agent".into(),
            pid: 42,
            termination: Termination::Exited(3),
            stderr_tail: vec!["boom".into(), "bye".into()],
            shutdown_requested: false,
        };
        assert_eq!(
            r.to_string(),
            "agent `my-agent` exited with code 3; last stderr lines:\n  boom\n  bye"
        );
        assert!(r.is_crash());
    }
}
