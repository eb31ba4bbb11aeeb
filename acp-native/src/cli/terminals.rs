//! `terminal/*` for `acp chat`: commands the agent runs through the client.
//!
//! A deliberately small implementation, private to the CLI: each terminal is a child process
//! (no shell, its own process group, stdin closed) whose stdout and stderr are collected into
//! one buffer bounded by the request's `outputByteLimit` (the oldest bytes go first, at a
//! character boundary). The working directory must lie inside the session's directory.
//! Killing or releasing a terminal kills its whole process group; quitting `acp chat` releases
//! every terminal.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{typed, ErrorCode, ErrorObject};
use acp_native::Router;
use agent_client_protocol_schema::v1 as s;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// Output kept when the agent sets no limit.
const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;

/// The session's terminals. Cheap to clone.
#[derive(Clone)]
pub struct Terminals {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    next: AtomicU64,
    live: Mutex<HashMap<String, Arc<Term>>>,
}

struct Term {
    pid: u32,
    output: Mutex<Output>,
    exit: watch::Receiver<Option<s::TerminalExitStatus>>,
}

struct Output {
    bytes: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > self.limit {
            let mut cut = self.bytes.len() - self.limit;
            // Never start in the middle of a UTF-8 sequence.
            while cut < self.bytes.len() && (self.bytes[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }
}

fn invalid(message: String) -> ErrorObject {
    ErrorObject::new(ErrorCode::InvalidParams, message)
}

impl Terminals {
    /// Terminals whose working directories must be inside `root`.
    pub fn new(root: PathBuf) -> Terminals {
        Terminals {
            inner: Arc::new(Inner {
                root,
                next: AtomicU64::new(1),
                live: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Adds the five `terminal/*` routes to `router`.
    pub fn routes(&self, router: Router) -> Router {
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        router
            .route::<typed::CreateTerminal, _, _>(move |req, _cx| {
                let t = a.clone();
                async move { t.create(req) }
            })
            .route::<typed::TerminalOutput, _, _>(move |req, _cx| {
                let t = b.clone();
                async move { t.output(&req.terminal_id) }
            })
            .route::<typed::WaitForTerminalExit, _, _>(move |req, cx| {
                let t = c.clone();
                async move {
                    let term = t.get(&req.terminal_id)?;
                    let mut exit = term.exit.clone();
                    tokio::select! {
                        r = exit.wait_for(Option::is_some) => match r {
                            Ok(status) => Ok(s::WaitForTerminalExitResponse::new(
                                status.clone().expect("waited for Some"),
                            )),
                            Err(_) => Err(ErrorObject::internal("terminal watcher stopped")),
                        },
                        _ = cx.cancel.cancelled() => Err(ErrorObject::from_code(ErrorCode::RequestCancelled)),
                    }
                }
            })
            .route::<typed::KillTerminal, _, _>(move |req, _cx| {
                let t = d.clone();
                async move {
                    let term = t.get(&req.terminal_id)?;
                    kill_group(&term);
                    Ok(s::KillTerminalResponse::new())
                }
            })
            .route::<typed::ReleaseTerminal, _, _>(move |req, _cx| {
                let t = e.clone();
                async move {
                    let term = t.get(&req.terminal_id)?;
                    kill_group(&term);
                    t.inner.live.lock().unwrap().remove(&*req.terminal_id.0);
                    Ok(s::ReleaseTerminalResponse::new())
                }
            })
    }

    fn get(&self, id: &s::TerminalId) -> Result<Arc<Term>, ErrorObject> {
        self.inner
            .live
            .lock()
            .unwrap()
            .get(&*id.0)
            .cloned()
            .ok_or_else(|| invalid(format!("unknown terminal `{}`", id.0)))
    }

    fn create(
        &self,
        req: s::CreateTerminalRequest,
    ) -> Result<s::CreateTerminalResponse, ErrorObject> {
        let cwd = self.check_cwd(req.cwd.as_deref())?;
        let mut cmd = tokio::process::Command::new(&req.command);
        cmd.args(&req.args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for var in &req.env {
            cmd.env(&var.name, &var.value);
        }
        let mut child = cmd.spawn().map_err(|e| {
            ErrorObject::new(
                ErrorCode::InternalError,
                format!("cannot run `{}`: {e}", req.command),
            )
        })?;
        let pid = child.id().unwrap_or(0);
        let limit = req.output_byte_limit.map_or(DEFAULT_OUTPUT_LIMIT, |l| {
            usize::try_from(l).unwrap_or(usize::MAX)
        });
        let (exit_tx, exit_rx) = watch::channel(None);
        let term = Arc::new(Term {
            pid,
            output: Mutex::new(Output {
                bytes: Vec::new(),
                limit,
                truncated: false,
            }),
            exit: exit_rx,
        });
        // Collect stdout and stderr into the terminal's buffer.
        let mut readers = Vec::new();
        let out: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> =
            child.stdout.take().map(|o| Box::new(o) as _);
        let err: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> =
            child.stderr.take().map(|e| Box::new(e) as _);
        for mut pipe in [out, err].into_iter().flatten() {
            let term = term.clone();
            readers.push(tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = pipe.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    term.output.lock().unwrap().push(&buf[..n]);
                }
            }));
        }
        tokio::spawn(async move {
            let status = child.wait().await;
            // Let the readers reach EOF (bounded: a grandchild may hold the pipes open).
            for r in readers {
                let _ = tokio::time::timeout(Duration::from_millis(500), r).await;
            }
            let status = match status {
                Ok(st) => {
                    use std::os::unix::process::ExitStatusExt;
                    let signal = st.signal().map(|sig| {
                        acp_native::process::signal_name(sig)
                            .map_or_else(|| sig.to_string(), str::to_string)
                    });
                    s::TerminalExitStatus::new()
                        .exit_code(st.code().and_then(|c| u32::try_from(c).ok()))
                        .signal(signal)
                }
                Err(_) => s::TerminalExitStatus::new(),
            };
            let _ = exit_tx.send(Some(status));
        });
        let id = format!("term-{}", self.inner.next.fetch_add(1, Ordering::Relaxed));
        self.inner.live.lock().unwrap().insert(id.clone(), term);
        Ok(s::CreateTerminalResponse::new(id))
    }

    fn output(&self, id: &s::TerminalId) -> Result<s::TerminalOutputResponse, ErrorObject> {
        let term = self.get(id)?;
        let exit = term.exit.borrow().clone();
        let out = term.output.lock().unwrap();
        let text = String::from_utf8_lossy(&out.bytes).into_owned();
        Ok(s::TerminalOutputResponse::new(text, out.truncated).exit_status(exit))
    }

    /// The working directory for a terminal: inside the root (default: the root itself).
    fn check_cwd(&self, cwd: Option<&Path>) -> Result<PathBuf, ErrorObject> {
        let root = std::fs::canonicalize(&self.inner.root)
            .map_err(|e| ErrorObject::internal(format!("session directory: {e}")))?;
        let Some(cwd) = cwd else { return Ok(root) };
        if !cwd.is_absolute() {
            return Err(invalid(format!("cwd must be absolute: {}", cwd.display())));
        }
        let real = std::fs::canonicalize(cwd)
            .map_err(|e| invalid(format!("cwd {}: {e}", cwd.display())))?;
        if !real.starts_with(&root) {
            return Err(invalid(format!(
                "cwd {} is outside the session directory {}",
                cwd.display(),
                root.display()
            )));
        }
        Ok(real)
    }

    /// Kills every terminal still running (when the chat ends).
    pub fn release_all(&self) {
        let live: Vec<Arc<Term>> = self
            .inner
            .live
            .lock()
            .unwrap()
            .drain()
            .map(|(_, t)| t)
            .collect();
        for term in live {
            kill_group(&term);
        }
    }
}

fn kill_group(term: &Term) {
    if term.exit.borrow().is_none() && term.pid > 0 {
        // SAFETY: kill(2) with a negative pid signals the process group we created.
        unsafe {
            libc::kill(-(term.pid as i32), libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_the_newest_bytes_at_a_char_boundary() {
        let mut o = Output {
            bytes: Vec::new(),
            limit: 4,
            truncated: false,
        };
        o.push("ab".as_bytes());
        assert!(!o.truncated);
        o.push("cdé".as_bytes()); // 'é' is two bytes: 6 bytes in all
        assert!(o.truncated);
        assert_eq!(String::from_utf8(o.bytes.clone()).unwrap(), "dé");
    }
}
