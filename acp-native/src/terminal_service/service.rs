//! [`TerminalService`]: the `terminal/*` methods over real processes, and its
//! [`TerminalConfig`].

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
#[cfg(unix)]
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, SessionId, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use tokio::sync::{oneshot, watch};

#[cfg(unix)]
use super::child::{read_output, wait_for_leader};
use super::output::incomplete_utf8_suffix;
use super::{OutputBuffer, TerminalError};
use crate::driver::reserve_answer_bytes;
#[cfg(unix)]
use crate::process::{orphans, prepare_command, SpawnError};
use crate::process::{signal_group, EnvPolicy};

/// What a `terminal/output` answer weighs besides its text (the other fields, the envelope).
const ANSWER_OVERHEAD: usize = 256;
/// Output up to this size is answered where the request is first polled (no task of its own).
const INLINE_OUTPUT_BYTES: usize = 64 << 10;

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
        self.signal_group(crate::process::SIGKILL);
    }

    fn signal_group(&self, signal: i32) {
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
    #[cfg_attr(not(unix), allow(dead_code))]
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
        self.start(req, &args, &env, cwd.as_deref(), limit)
    }

    /// Windows: terminals are not supported there yet (the command's output pipe and its exit
    /// are followed with Unix calls): refused before anything is started.
    #[cfg(not(unix))]
    fn start(
        &self,
        req: CreateTerminalRequest,
        _args: &[OsString],
        _env: &std::collections::BTreeMap<OsString, OsString>,
        _cwd: Option<&std::path::Path>,
        _limit: usize,
    ) -> Result<CreateTerminalResponse, TerminalError> {
        Err(TerminalError::Unsupported {
            command: req.command,
            what: "terminals (terminal/create) are not supported on Windows yet",
        })
    }

    /// Starts the command (its output and exit followed), registered under a new id.
    #[cfg(unix)]
    fn start(
        &self,
        req: CreateTerminalRequest,
        args: &[OsString],
        env: &std::collections::BTreeMap<OsString, OsString>,
        cwd: Option<&std::path::Path>,
        limit: usize,
    ) -> Result<CreateTerminalResponse, TerminalError> {
        let mut inner = self.lock();
        if inner.terminals.len() >= self.config.max_terminals {
            return Err(TerminalError::TooManyTerminals {
                limit: self.config.max_terminals,
            });
        }
        let prepared = prepare_command(
            req.command.as_ref(),
            args,
            env,
            cwd,
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
        // (Registered as ours: never reaped or ended as an orphan.)
        let spawned = orphans::spawn(&mut command, false).map(|(child, _)| child);
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
        t.signal_group(crate::process::SIGTERM);
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
