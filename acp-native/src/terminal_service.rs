//! Client-side terminal service: `terminal/create`, `terminal/output`,
//! `terminal/wait_for_exit`, `terminal/kill`, `terminal/release`.
//!
//! [`TerminalService`] runs real processes for an agent, with the official schema types:
//!
//! * **No shell.** `command` is resolved like an agent's program
//!   ([`crate::process::resolve_executable`]): a path, or a name searched in `PATH`; `args` are
//!   passed verbatim. An agent that wants a shell asks for `sh` with `-c`.
//! * **Explicit environment.** The child gets [`TerminalConfig::env`] (an [`EnvPolicy`];
//!   default: allowlist, no host secrets) plus the request's `env` variables.
//! * **Own process group.** Kill and release signal the whole group, so `sh -c 'a & b'` leaves
//!   nothing behind, even once the shell (the group's leader) has exited: the leader is not
//!   reaped until the terminal is released, so its exited process keeps the group's id
//!   reserved (no other process or group can get it) and the group can always be signalled.
//!   Its exit is observed without reaping it (`waitid` with `WNOWAIT`).
//! * **One output buffer.** stdout and stderr are the *same* pipe (as in a terminal), so their
//!   interleaving is the order the process wrote in. `outputByteLimit` keeps the newest bytes: the
//!   front is dropped and the start moved forward to a UTF-8 character boundary
//!   (`truncated: true`). [`TerminalConfig::max_output_bytes`] caps every buffer (including
//!   requests without a limit) so a runaway command cannot exhaust memory.
//! * **Exit status** is an exit code or a signal name (`"SIGKILL"`). `wait_for_exit` returns
//!   once the process has exited *and* its output pipe is drained (bounded by a short grace
//!   when a background grandchild keeps the pipe open), so an `output` call after it sees
//!   everything.
//! * **Lifecycle.** `kill` stops the process group but keeps the terminal (output and exit
//!   status stay readable); `release` kills if needed and forgets the terminal: later calls with
//!   its id fail with `-32002`. Terminals belong to the session that created them; another
//!   session's id is "not found" too. At most [`TerminalConfig::max_terminals`] unreleased
//!   terminals exist at once (exited but unreleased ones count: they still hold output).
//! * Dropping the last clone of the service kills every terminal's process group.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::ErrorObject;
use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use serde_json::json;
use tokio::sync::{oneshot, watch};

use crate::driver::{json_escaped_len, reserve_answer_bytes, AnswerBudgetError};
use crate::process::{
    prepare_command, signal_group, signal_name, EnvPolicy, SpawnError, Termination,
};

use acp_client::errors::Failure;

/// After the process exits, how long to wait for its output pipe to reach EOF before reporting
/// the exit anyway (a background grandchild may hold the pipe open indefinitely).
const OUTPUT_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// What a `terminal/output` answer weighs besides its text (the other fields, the envelope).
const ANSWER_OVERHEAD: usize = 256;
/// Output up to this size is answered where the request is first polled (no task of its own).
const INLINE_OUTPUT_BYTES: usize = 64 << 10;
/// How often a running command is checked for exit besides on `SIGCHLD` (a backstop).
const EXIT_POLL_BACKSTOP: Duration = Duration::from_secs(2);

/// Configuration of a [`TerminalService`].
#[derive(Clone, Debug)]
pub struct TerminalConfig {
    /// Most unreleased terminals at once. Default 16.
    pub max_terminals: usize,
    /// Base environment of every command; the request's `env` is added on top.
    /// Default [`EnvPolicy::default`] (allowlist).
    pub env: EnvPolicy,
    /// Working directory when the request has none (`None`: this process's).
    pub default_cwd: Option<PathBuf>,
    /// `PATH` used to find a bare command name (`None`: the child's own `PATH`).
    pub search_path: Option<OsString>,
    /// Cap on every output buffer, whatever the request asks. Default 16 MiB.
    pub max_output_bytes: u64,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        TerminalConfig {
            max_terminals: acp_client::terminal::MAX_TERMINALS,
            env: EnvPolicy::default(),
            default_cwd: None,
            search_path: None,
            max_output_bytes: acp_client::terminal::MAX_OUTPUT_BYTES as u64,
        }
    }
}

/// Why a terminal request failed. Maps to a JSON-RPC error with [`TerminalError::code`],
/// [`TerminalError::message`] and [`TerminalError::data`].
///
/// | variant | code |
/// |---|---|
/// | `NotFound` (unknown, released, or another session's id) | `-32002` Resource not found |
/// | `InvalidParams`; `Spawn` except `SpawnError::Io` | `-32602` Invalid params |
/// | `TooManyTerminals`, `Spawn(SpawnError::Io)`, `Io`, `AnswerBudget` | `-32603` Internal error |
#[derive(Debug)]
pub enum TerminalError {
    /// No such terminal for this session (never created, already released, or another
    /// session's).
    NotFound {
        /// The id as requested.
        terminal_id: String,
    },
    /// [`TerminalConfig::max_terminals`] unreleased terminals already exist.
    TooManyTerminals {
        /// The limit.
        limit: usize,
    },
    /// The request itself is unusable (relative `cwd`, malformed env variable, NUL in args).
    InvalidParams {
        /// What is wrong.
        reason: String,
    },
    /// The command could not be started.
    Spawn(SpawnError),
    /// Setting up the output pipe failed.
    Io {
        /// What was being done.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The output could not be reserved in the connection's answer budget: earlier answers
    /// still hold it, unread by the agent (see [`crate::driver::reserve_answer_bytes`]).
    AnswerBudget(AnswerBudgetError),
}

impl TerminalError {
    /// Which failure it is, in the shared table (acp-client's `errors`: one code and
    /// `data.reason` per failure, the same in the extension).
    pub fn failure(&self) -> Failure {
        match self {
            TerminalError::NotFound { .. } => Failure::UnknownTerminal,
            TerminalError::InvalidParams { .. } => Failure::InvalidCommand,
            TerminalError::Spawn(SpawnError::Io { .. }) => Failure::SpawnFailed,
            TerminalError::Spawn(
                SpawnError::CommandNotFound { .. } | SpawnError::NotExecutable { .. },
            ) => Failure::CommandNotFound,
            TerminalError::Spawn(_) => Failure::InvalidCommand,
            TerminalError::TooManyTerminals { .. } => Failure::TooManyTerminals,
            TerminalError::Io { .. } => Failure::Io,
            TerminalError::AnswerBudget(_) => Failure::AnswerBudget,
        }
    }

    /// The JSON-RPC error code ([`TerminalError::failure`]'s).
    pub fn code(&self) -> i32 {
        self.failure().code() as i32
    }

    /// A one-sentence message for the JSON-RPC error (same as `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Structured details for the JSON-RPC error's `data`, with `reason` (the failure's
    /// name) always set.
    pub fn data(&self) -> Option<serde_json::Value> {
        let mut data = self.details().unwrap_or_else(|| json!({}));
        if let Some(map) = data.as_object_mut() {
            map.entry("reason")
                .or_insert_with(|| json!(self.failure().reason()));
        }
        Some(data)
    }

    fn details(&self) -> Option<serde_json::Value> {
        match self {
            TerminalError::NotFound { terminal_id } => Some(json!({ "terminalId": terminal_id })),
            TerminalError::TooManyTerminals { limit } => Some(json!({ "limit": limit })),
            TerminalError::InvalidParams { .. } => None,
            TerminalError::Spawn(e) => match e {
                SpawnError::CommandNotFound { command, .. }
                | SpawnError::InvalidCommand { command, .. }
                | SpawnError::NotExecutable { command, .. }
                | SpawnError::Io { command, .. } => Some(json!({ "command": command })),
                SpawnError::InvalidCwd { cwd, .. } => Some(json!({ "cwd": cwd.to_string_lossy() })),
            },
            TerminalError::Io { .. } => None,
            TerminalError::AnswerBudget(e) => ErrorObject::from(e.clone()).data,
        }
    }

    /// The error as the schema crate's JSON-RPC error object.
    pub fn to_acp_error(&self) -> agent_client_protocol_schema::v1::Error {
        agent_client_protocol_schema::v1::Error::new(self.code(), self.message()).data(self.data())
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TerminalError::NotFound { terminal_id } => {
                write!(f, "terminal not found: {terminal_id}")
            }
            TerminalError::TooManyTerminals { limit } => write!(
                f,
                "too many terminals (limit {limit}); release terminals that are no longer needed"
            ),
            TerminalError::InvalidParams { reason } => {
                write!(f, "invalid terminal request: {reason}")
            }
            TerminalError::Spawn(e) => e.fmt(f),
            TerminalError::Io { op, source } => write!(f, "cannot {op}: {source}"),
            TerminalError::AnswerBudget(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TerminalError::Spawn(e) => Some(e),
            TerminalError::Io { source, .. } => Some(source),
            TerminalError::AnswerBudget(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SpawnError> for TerminalError {
    fn from(e: SpawnError) -> Self {
        TerminalError::Spawn(e)
    }
}

// ---------------------------------------------------------------------------------------------
// Output buffer
// ---------------------------------------------------------------------------------------------

/// Retained terminal output: the newest bytes up to a limit, starting at a UTF-8 character
/// boundary. Pure (no I/O): fed arbitrary chunks, it keeps the same bytes as if fed at once.
#[derive(Clone, Debug)]
pub struct OutputBuffer {
    data: VecDeque<u8>,
    limit: usize,
    truncated: bool,
    /// Bumped by every push (what `json_len` was last computed for).
    version: u64,
    /// The last `json_len`: (version, complete, length).
    json_len: Option<(u64, bool, usize)>,
}

impl OutputBuffer {
    /// An empty buffer keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        OutputBuffer {
            data: VecDeque::new(),
            limit,
            truncated: false,
            version: 0,
            json_len: None,
        }
    }

    /// Appends bytes, dropping the oldest ones beyond the limit and then any UTF-8 continuation
    /// bytes at the new front (so the retained text starts on a character boundary).
    pub fn push(&mut self, bytes: &[u8]) {
        self.version += 1;
        let cut = if bytes.len() >= self.limit {
            // Only the tail of this chunk can survive.
            let cut = !self.data.is_empty() || bytes.len() > self.limit;
            self.data.clear();
            self.data.extend(&bytes[bytes.len() - self.limit..]);
            cut
        } else {
            self.data.extend(bytes);
            let excess = self.data.len().saturating_sub(self.limit);
            self.data.drain(..excess);
            excess > 0
        };
        if cut {
            self.truncated = true;
            // A UTF-8 sequence has at most 3 continuation bytes.
            for _ in 0..3 {
                match self.data.front() {
                    Some(&b) if b & 0xC0 == 0x80 => {
                        self.data.pop_front();
                    }
                    _ => break,
                }
            }
        }
    }

    /// Whether any output was dropped.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes retained.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Nothing retained.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The length of [`OutputBuffer::text`] serialized as a JSON string, quotes included (at
    /// most: less when the text is cut again because invalid bytes became U+FFFD). Counted on
    /// the bytes, without building the text, so that an answer can be reserved before it is
    /// built (a control character takes 6 bytes: `\u0001`). Makes the buffer contiguous;
    /// counted once per content (many requests for the same output scan it once).
    pub fn json_len(&mut self, complete: bool) -> usize {
        if let Some((version, c, n)) = self.json_len {
            if version == self.version && c == complete {
                return n;
            }
        }
        let n = self.count_json_len(complete);
        self.json_len = Some((self.version, complete, n));
        n
    }

    fn count_json_len(&mut self, complete: bool) -> usize {
        let bytes = &*self.data.make_contiguous();
        let end = if complete {
            bytes.len()
        } else {
            bytes.len() - incomplete_utf8_suffix(bytes)
        };
        let mut n = 2;
        for chunk in bytes[..end].utf8_chunks() {
            n += chunk.valid().bytes().map(json_escaped_len).sum::<usize>();
            if !chunk.invalid().is_empty() {
                n += '\u{FFFD}'.len_utf8();
            }
        }
        n
    }

    /// The retained output as text. While the process runs (`complete == false`) an incomplete
    /// UTF-8 sequence at the very end is held back (it may be completed by the next write);
    /// other invalid bytes become U+FFFD. The result never exceeds the limit: if replacement
    /// characters make it longer, its front is cut again at a character boundary (and the
    /// second value, "truncated", is `true`).
    pub fn text(&self, complete: bool) -> (String, bool) {
        let (a, b) = self.data.as_slices();
        let joined;
        let bytes: &[u8] = if b.is_empty() {
            a
        } else {
            joined = [a, b].concat();
            &joined
        };
        let end = if complete {
            bytes.len()
        } else {
            bytes.len() - incomplete_utf8_suffix(bytes)
        };
        let text = String::from_utf8_lossy(&bytes[..end]);
        if text.len() <= self.limit {
            return (text.into_owned(), self.truncated);
        }
        let mut start = text.len() - self.limit;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        (text[start..].to_owned(), true)
    }
}

/// Length of an incomplete (but so far valid) UTF-8 sequence at the end of `bytes`.
fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=3.min(n) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte: keep looking for the lead byte
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0, // ASCII or invalid lead: nothing to hold back
        };
        return if back < needed { back } else { 0 };
    }
    0
}

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

struct Terminal {
    session_id: SessionId,
    /// The process group (the leader's pid). Reserved until the leader is reaped, which the
    /// waiter task does only once this terminal is gone (`_release` dropped).
    pgid: u32,
    output: Arc<Mutex<OutputBuffer>>,
    output_rx: watch::Receiver<u64>,
    exit_rx: watch::Receiver<Option<TerminalExitStatus>>,
    /// Dropped with the terminal: tells the waiter task that the group was killed and the
    /// leader may now be reaped.
    _release: oneshot::Sender<()>,
}

impl Terminal {
    fn output(&self) -> std::sync::MutexGuard<'_, OutputBuffer> {
        self.output.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn snapshot(&self) -> TerminalOutputResponse {
        // Read the exit status first: once it is set the output is final.
        let exit = self.exit_rx.borrow().clone();
        let (text, truncated) = {
            let mut output = self.output();
            // (Contiguous: the text is then copied once, not joined first.)
            output.data.make_contiguous();
            output.text(exit.is_some())
        };
        TerminalOutputResponse::new(text, truncated).exit_status(exit)
    }

    /// What answering `terminal/output` now weighs: the text (built first) and its JSON.
    fn answer_bytes(&self) -> usize {
        let complete = self.exit_rx.borrow().is_some();
        let mut output = self.output();
        output.len() + output.json_len(complete) + ANSWER_OVERHEAD
    }

    /// The last `max_bytes` (or a little less: a character boundary) of the output, and
    /// whether anything before them is missing.
    fn tail(&self, max_bytes: usize) -> (String, bool) {
        let complete = self.exit_rx.borrow().is_some();
        let mut output = self.output();
        let truncated = output.truncated;
        let bytes = &*output.data.make_contiguous();
        let end = if complete {
            bytes.len()
        } else {
            bytes.len() - incomplete_utf8_suffix(bytes)
        };
        let mut start = end.saturating_sub(max_bytes);
        while start < end && bytes[start] & 0xC0 == 0x80 {
            start += 1;
        }
        let text = String::from_utf8_lossy(&bytes[start..end]).into_owned();
        (text, truncated || start > 0)
    }
}

impl Terminal {
    /// `SIGKILL` to the whole process group: the command and everything it started that
    /// stayed in its group (background jobs), even after the command itself exited. Safe
    /// because the leader is not reaped while the terminal exists: its pid, which is the
    /// group's id, cannot have been reused.
    fn kill_group(&self) {
        self.signal_group(libc::SIGKILL);
    }

    fn signal_group(&self, signal: libc::c_int) {
        if let Err(e) = signal_group(self.pgid, signal) {
            tracing::warn!(
                pgid = self.pgid,
                "killing terminal process group failed: {e}"
            );
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // Released, or the service is gone: nothing of this terminal may keep running. (The
        // group is killed before `_release` is dropped, so before the leader can be reaped.)
        self.kill_group();
    }
}

#[derive(Default)]
struct Inner {
    terminals: HashMap<Arc<str>, Arc<Terminal>>,
    next_id: u64,
}

/// The `terminal/*` service. Clones share the same terminals; every method takes `&self`.
/// Must be used inside a tokio runtime.
#[derive(Clone)]
pub struct TerminalService {
    config: Arc<TerminalConfig>,
    inner: Arc<Mutex<Inner>>,
}

impl fmt::Debug for TerminalService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalService")
            .field("config", &self.config)
            .field("active", &self.active_terminals())
            .finish()
    }
}

impl TerminalService {
    /// A service with this configuration.
    pub fn new(config: TerminalConfig) -> Self {
        TerminalService {
            config: Arc::new(config),
            inner: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TerminalConfig {
        &self.config
    }

    /// Unreleased terminals.
    pub fn active_terminals(&self) -> usize {
        self.lock().terminals.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(
        &self,
        session_id: &SessionId,
        terminal_id: &TerminalId,
    ) -> Result<Arc<Terminal>, TerminalError> {
        match self.lock().terminals.get(&terminal_id.0) {
            Some(t) if t.session_id == *session_id => Ok(Arc::clone(t)),
            _ => Err(TerminalError::NotFound {
                terminal_id: terminal_id.0.to_string(),
            }),
        }
    }

    /// `terminal/create`: starts the command and returns its terminal id.
    pub async fn create(
        &self,
        req: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, TerminalError> {
        let cwd = match &req.cwd {
            Some(c) if !c.is_absolute() => {
                return Err(TerminalError::InvalidParams {
                    reason: format!("cwd must be an absolute path: {}", c.display()),
                })
            }
            Some(c) => Some(c.clone()),
            None => self.config.default_cwd.clone(),
        };
        let mut env_policy = self.config.env.clone();
        for var in &req.env {
            if var.name.is_empty() || var.name.contains('=') || var.name.contains('\0') {
                return Err(TerminalError::InvalidParams {
                    reason: format!("invalid environment variable name {:?}", var.name),
                });
            }
            if var.value.contains('\0') {
                return Err(TerminalError::InvalidParams {
                    reason: format!("environment variable {} contains a NUL byte", var.name),
                });
            }
            env_policy.set_var(&var.name, &var.value);
        }
        if req.args.iter().any(|a| a.contains('\0')) {
            return Err(TerminalError::InvalidParams {
                reason: "an argument contains a NUL byte".into(),
            });
        }
        let args: Vec<OsString> = req.args.iter().map(OsString::from).collect();
        let env = env_policy.resolve_from_host();
        let limit = req
            .output_byte_limit
            .unwrap_or(u64::MAX)
            .min(self.config.max_output_bytes);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);

        let mut inner = self.lock();
        if inner.terminals.len() >= self.config.max_terminals {
            return Err(TerminalError::TooManyTerminals {
                limit: self.config.max_terminals,
            });
        }
        let prepared = prepare_command(
            req.command.as_ref(),
            &args,
            &env,
            cwd.as_deref(),
            self.config.search_path.as_deref(),
        )?;
        let mut command = prepared.command;
        let (tx, rx) = tokio::net::unix::pipe::pipe().map_err(|source| TerminalError::Io {
            op: "create the output pipe",
            source,
        })?;
        let write_end = tx.into_blocking_fd().map_err(|source| TerminalError::Io {
            op: "create the output pipe",
            source,
        })?;
        let write_end2 = write_end.try_clone().map_err(|source| TerminalError::Io {
            op: "create the output pipe",
            source,
        })?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(write_end))
            .stderr(Stdio::from(write_end2));
        let spawned = command.spawn();
        // The command holds our copies of the pipe's write end: drop them now, or the reader
        // never sees EOF.
        drop(command);
        let child = spawned.map_err(|source| SpawnError::Io {
            command: prepared.display.clone(),
            source,
        })?;
        let pgid = child.id().expect("a just-spawned child has a pid");

        inner.next_id += 1;
        let id: Arc<str> = format!("term_{}", inner.next_id).into();

        let output = Arc::new(Mutex::new(OutputBuffer::new(limit)));
        let (output_tx, output_rx) = watch::channel(0u64);
        let (eof_tx, eof_rx) = watch::channel(false);
        tokio::spawn(read_output(rx, Arc::clone(&output), output_tx, eof_tx));

        let (exit_tx, exit_rx) = watch::channel(None);
        let (release_tx, release_rx) = oneshot::channel();
        tokio::spawn(wait_for_leader(
            child,
            Arc::clone(&id),
            eof_rx,
            exit_tx,
            release_rx,
        ));

        inner.terminals.insert(
            Arc::clone(&id),
            Arc::new(Terminal {
                session_id: req.session_id.clone(),
                pgid,
                output,
                output_rx,
                exit_rx,
                _release: release_tx,
            }),
        );
        tracing::debug!(terminal = %id, command = %prepared.display, pid = pgid, "terminal created");
        Ok(CreateTerminalResponse::new(TerminalId::new(id)))
    }

    /// `terminal/output`: output so far, whether it was truncated, and the exit status if the
    /// command has exited.
    ///
    /// Inside a request handler of a driven connection the answer's size (its JSON-escaped
    /// text: 16 MiB of control characters are 96 MiB of JSON) is first reserved in the
    /// connection's answer budget ([`crate::driver::reserve_answer_bytes`]): concurrent
    /// requests for large output wait for earlier answers to be written instead of all being
    /// built at once; [`TerminalError::AnswerBudget`] if the agent stopped reading them.
    pub async fn output(
        &self,
        req: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, TerminalError> {
        let terminal = self.get(&req.session_id, &req.terminal_id)?;
        if terminal.output().len() > INLINE_OUTPUT_BYTES {
            // Measuring, copying and serializing megabytes is work for a task of its own: a
            // driver polls a handler once inline, and must not compute for long there.
            tokio::task::yield_now().await;
        }
        reserve_answer_bytes(terminal.answer_bytes())
            .await
            .map_err(TerminalError::AnswerBudget)?;
        Ok(terminal.snapshot())
    }

    /// The last `max_bytes` of a terminal's output (for a UI that shows its end; nothing is
    /// reserved) and whether anything before them is missing.
    pub fn output_tail(
        &self,
        session_id: &SessionId,
        terminal_id: &TerminalId,
        max_bytes: usize,
    ) -> Result<(String, bool), TerminalError> {
        Ok(self.get(session_id, terminal_id)?.tail(max_bytes))
    }

    /// `terminal/wait_for_exit`: resolves when the command has exited (and its output is
    /// drained).
    pub async fn wait_for_exit(
        &self,
        req: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, TerminalError> {
        let mut rx = self.get(&req.session_id, &req.terminal_id)?.exit_rx.clone();
        let status = rx
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|s| s.clone());
        // The waiter task always reports before finishing; `None` only if the runtime is
        // shutting down under us.
        let status = status.unwrap_or_default();
        Ok(WaitForTerminalExitResponse::new(status))
    }

    /// `terminal/kill`: `SIGTERM` to the command's process group, then `SIGKILL` to the group
    /// after [`acp_client::terminal::KILL_GRACE_MS`] unless the terminal was released first
    /// (the shared rule: the extension does the same). The terminal stays valid.
    pub async fn kill(
        &self,
        req: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, TerminalError> {
        let t = self.get(&req.session_id, &req.terminal_id)?;
        t.signal_group(libc::SIGTERM);
        let weak = Arc::downgrade(&t);
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(
                acp_client::terminal::KILL_GRACE_MS,
            ))
            .await;
            // Released meanwhile: dropping it killed the group already.
            if let Some(t) = weak.upgrade() {
                t.kill_group();
            }
        });
        Ok(KillTerminalResponse::new())
    }

    /// `terminal/release`: kills the command if it still runs and forgets the terminal; its id
    /// is "not found" from now on.
    pub async fn release(
        &self,
        req: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, TerminalError> {
        let t = {
            let mut inner = self.lock();
            match inner.terminals.get(&req.terminal_id.0) {
                Some(t) if t.session_id == req.session_id => {}
                _ => {
                    return Err(TerminalError::NotFound {
                        terminal_id: req.terminal_id.0.to_string(),
                    })
                }
            }
            inner
                .terminals
                .remove(&req.terminal_id.0)
                .expect("checked above")
        };
        // Kill now, even if a concurrent `wait_for_exit` still holds the terminal.
        t.kill_group();
        Ok(ReleaseTerminalResponse::new())
    }

    /// Releases every terminal of `session_id` (e.g. when the session ends). Returns how many.
    pub fn release_session(&self, session_id: &SessionId) -> usize {
        let released: Vec<Arc<Terminal>> = {
            let mut inner = self.lock();
            let ids: Vec<Arc<str>> = inner
                .terminals
                .iter()
                .filter(|(_, t)| t.session_id == *session_id)
                .map(|(id, _)| Arc::clone(id))
                .collect();
            ids.iter()
                .filter_map(|id| inner.terminals.remove(id))
                .collect()
        };
        for t in &released {
            t.kill_group();
        }
        released.len()
    }

    /// Releases every terminal (host shutdown). Returns how many.
    pub fn release_all(&self) -> usize {
        let released: Vec<Arc<Terminal>> = self.lock().terminals.drain().map(|(_, t)| t).collect();
        for t in &released {
            t.kill_group();
        }
        released.len()
    }

    /// A watch of the total number of output bytes the command has produced so far (before
    /// truncation). For UIs that stream a terminal, and for tests that wait for output without
    /// polling.
    pub fn output_watch(
        &self,
        session_id: &SessionId,
        terminal_id: &TerminalId,
    ) -> Result<watch::Receiver<u64>, TerminalError> {
        Ok(self.get(session_id, terminal_id)?.output_rx.clone())
    }
}

fn exit_status_of(t: Termination) -> TerminalExitStatus {
    match t {
        Termination::Exited(code) => TerminalExitStatus::new().exit_code(code as u32),
        Termination::Signaled { signal, .. } => TerminalExitStatus::new()
            .signal(signal_name(signal).map_or_else(|| format!("SIG{signal}"), str::to_owned)),
        Termination::Unknown => TerminalExitStatus::new(),
    }
}

/// Follows a terminal's command (the group leader): reports its exit status once it exited
/// and its output is drained (bounded), **without reaping it**, then reaps it only when the
/// terminal is gone (`release` fires, after the group was killed). Until then the exited
/// leader keeps its pid, the group's id, from being reused, so killing the group can never hit
/// another one.
async fn wait_for_leader(
    mut child: tokio::process::Child,
    id: Arc<str>,
    mut drained: watch::Receiver<bool>,
    exit_tx: watch::Sender<Option<TerminalExitStatus>>,
    mut release: oneshot::Receiver<()>,
) {
    let pid = child.id().expect("not reaped yet");
    // Registered before the first look, so an exit after it is not missed.
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let mut released = false;
    let exited = loop {
        match peek_exit(pid) {
            Ok(Some(t)) => break Some(t),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(terminal = %id, "watching the terminal command failed: {e}");
                break None;
            }
        }
        tokio::select! {
            _ = async {
                match sigchld.as_mut() {
                    Some(s) => { s.recv().await; }
                    None => std::future::pending().await,
                }
            } => {}
            // A backstop only (a SIGCHLD after the registration above is never missed).
            _ = tokio::time::sleep(EXIT_POLL_BACKSTOP) => {}
            // Released (and the group killed) while it runs.
            _ = &mut release => {
                released = true;
                break None;
            }
        }
    };
    let termination = match exited {
        Some(t) => t,
        // Reap it now (it was killed, or watching failed).
        None => match child.wait().await {
            Ok(status) => Termination::from(status),
            Err(e) => {
                tracing::warn!(terminal = %id, "waiting for terminal command failed: {e}");
                Termination::Unknown
            }
        },
    };
    let _ = tokio::time::timeout(OUTPUT_DRAIN_AFTER_EXIT, drained.wait_for(|eof| *eof)).await;
    tracing::debug!(terminal = %id, "terminal command {termination}");
    exit_tx.send_replace(Some(exit_status_of(termination)));
    // Keep the exited leader unreaped until the terminal is gone; dropping the child then
    // reaps it.
    if !released {
        let _ = release.await;
    }
    drop(child);
}

/// The exit of child `pid`, if it has exited, **without reaping it** (`waitid` with `WNOWAIT`).
fn peek_exit(pid: u32) -> io::Result<Option<Termination>> {
    loop {
        // SAFETY: an all-zero siginfo_t is valid (plain data); waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with a valid pointer to a siginfo_t; WNOWAIT leaves the child as is.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let (si_pid, status) = siginfo_pid_status(&info);
        if si_pid == 0 {
            return Ok(None); // WNOHANG: still running
        }
        return Ok(Some(match info.si_code {
            libc::CLD_EXITED => Termination::Exited(status),
            libc::CLD_KILLED => Termination::Signaled {
                signal: status,
                core_dumped: false,
            },
            libc::CLD_DUMPED => Termination::Signaled {
                signal: status,
                core_dumped: true,
            },
            _ => Termination::Unknown,
        }));
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn siginfo_pid_status(info: &libc::siginfo_t) -> (libc::pid_t, i32) {
    // SAFETY: filled by waitid for a child event (the SIGCHLD layout).
    unsafe { (info.si_pid(), info.si_status()) }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn siginfo_pid_status(info: &libc::siginfo_t) -> (libc::pid_t, i32) {
    (info.si_pid, info.si_status)
}

async fn read_output(
    rx: tokio::net::unix::pipe::Receiver,
    output: Arc<Mutex<OutputBuffer>>,
    total: watch::Sender<u64>,
    eof: watch::Sender<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if rx.readable().await.is_err() {
            break;
        }
        match rx.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                output
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&buf[..n]);
                total.send_modify(|t| *t += n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("reading terminal output failed: {e}");
                break;
            }
        }
    }
    eof.send_replace(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newest `limit` bytes of `s`, moved forward to a char boundary.
    fn expected(s: &str, limit: usize) -> (&str, bool) {
        if s.len() <= limit {
            return (s, false);
        }
        let mut start = s.len() - limit;
        while !s.is_char_boundary(start) {
            start += 1;
        }
        (&s[start..], true)
    }

    #[test]
    fn truncation_keeps_newest_bytes_at_a_char_boundary_for_every_split() {
        let text = "aé€😀b€éé😀x\n";
        for limit in 0..=text.len() + 1 {
            for split in 0..=text.len() {
                for second_split in split..=text.len() {
                    let bytes = text.as_bytes();
                    let mut buf = OutputBuffer::new(limit);
                    buf.push(&bytes[..split]);
                    buf.push(&bytes[split..second_split]);
                    buf.push(&bytes[second_split..]);
                    let (want, want_trunc) = expected(text, limit);
                    let (got, got_trunc) = buf.text(true);
                    assert_eq!(
                        (got.as_str(), got_trunc),
                        (want, want_trunc),
                        "limit {limit} split {split}/{second_split}"
                    );
                    assert!(got.len() <= limit);
                }
            }
        }
    }

    #[test]
    fn json_len_is_the_length_of_the_text_as_json() {
        let inputs: [&[u8]; 6] = [
            b"",
            b"plain",
            b"\x01\x02\x1b[31m\"q\"\\\t\r\n\x7f",
            "é€😀".as_bytes(),
            b"a\xffb\xe2\x82",
            b"\xc3",
        ];
        for input in inputs {
            for complete in [false, true] {
                // Full, so that the front is cut.
                let mut buf = OutputBuffer::new(64);
                buf.push(&[b'.'; 60]);
                buf.push(input);
                let bytes: Vec<u8> = buf.data.iter().copied().collect();
                let end = if complete {
                    bytes.len()
                } else {
                    bytes.len() - incomplete_utf8_suffix(&bytes)
                };
                let lossy = String::from_utf8_lossy(&bytes[..end]);
                let exact = serde_json::to_string(&lossy).unwrap().len();
                assert_eq!(buf.json_len(complete), exact, "{input:?} {complete}");
                // The text itself may be cut again (U+FFFD is longer than a byte): never more.
                let (text, _) = buf.text(complete);
                assert!(serde_json::to_string(&text).unwrap().len() <= exact);
            }
        }
    }

    #[test]
    fn incomplete_tail_is_held_back_while_running() {
        let mut buf = OutputBuffer::new(100);
        buf.push("ab€".as_bytes());
        buf.push(&"€".as_bytes()[..2]);
        assert_eq!(buf.text(false), ("ab€".to_owned(), false));
        assert_eq!(buf.text(true), ("ab€\u{FFFD}".to_owned(), false));
        buf.push(&"€".as_bytes()[2..]);
        assert_eq!(buf.text(false), ("ab€€".to_owned(), false));
    }

    #[test]
    fn invalid_bytes_never_exceed_the_limit() {
        let mut buf = OutputBuffer::new(4);
        buf.push(b"\xff\xff\xff\xff");
        let (text, truncated) = buf.text(true);
        assert!(text.len() <= 4, "{text:?}");
        assert_eq!(text, "\u{FFFD}");
        assert!(truncated);
    }

    #[test]
    fn incomplete_suffix_detection() {
        assert_eq!(incomplete_utf8_suffix(b"abc"), 0);
        assert_eq!(incomplete_utf8_suffix(&"€".as_bytes()[..1]), 1);
        assert_eq!(incomplete_utf8_suffix(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_utf8_suffix("€".as_bytes()), 0);
        assert_eq!(incomplete_utf8_suffix(&"😀".as_bytes()[..3]), 3);
        assert_eq!(incomplete_utf8_suffix(b"\xff"), 0);
    }

    #[test]
    fn exit_status_mapping() {
        assert_eq!(exit_status_of(Termination::Exited(3)).exit_code, Some(3));
        let s = exit_status_of(Termination::Signaled {
            signal: libc::SIGKILL,
            core_dumped: false,
        });
        assert_eq!((s.exit_code, s.signal.as_deref()), (None, Some("SIGKILL")));
        assert_eq!(
            exit_status_of(Termination::Signaled {
                signal: 64,
                core_dumped: false
            })
            .signal
            .as_deref(),
            Some("SIG64")
        );
    }
}
