//! `terminal/*` for `acp chat`: the crate's [`TerminalService`] behind the five routes, with
//! two rules added: a terminal's working directory must lie inside the session's directory
//! (`--cwd`), like file writes; and every `terminal/create` goes through a [`Gate`] (the user's
//! permission decision) before anything runs; a refusal is a JSON-RPC error saying so.
//!
//! Commands run without a shell (the agent's `command` and `args` as given; a shell only if the
//! agent names one, which the user sees), in their own process group, with the same explicit
//! environment as the agent (`--env`, `--inherit-env`) plus the request's `env`. At most
//! `--max-terminals` at once. Quitting `acp chat` releases, and so kills, every terminal.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use acp_client::terminal::{CommandQuestion, CommandRequest, EnvVariable, Invalid};
use acp_core::{typed, ErrorCode, ErrorObject};
use acp_native::process::EnvPolicy;
use acp_native::terminal_service::{TerminalConfig, TerminalError, TerminalService};
use acp_native::Router;
use agent_client_protocol_schema::v1 as s;

use super::render::TerminalOutput;

/// The newest released terminals whose output is kept for the UI.
const KEPT_TERMINALS: usize = 16;
/// The end of each terminal's output that is kept (the UI shows its last lines).
const KEPT_BYTES_PER_TERMINAL: usize = 64 << 10;
/// All output kept for the UI, at most.
const KEPT_BYTES: usize = KEPT_TERMINALS * KEPT_BYTES_PER_TERMINAL;

/// Decides whether a `terminal/create` may run: true to run it. It gets the question to show
/// (built by [`acp_client::terminal::question`]: every field on one line, escaped). The token
/// fires when the request is withdrawn (the turn was cancelled, the connection closed).
pub type Gate = Arc<
    dyn Fn(
            &s::CreateTerminalRequest,
            CommandQuestion,
            CancellationToken,
        ) -> BoxFuture<'static, bool>
        + Send
        + Sync,
>;

/// The parts of a request the shared policy looks at.
pub fn command_request(req: &s::CreateTerminalRequest) -> CommandRequest {
    CommandRequest {
        command: req.command.clone(),
        args: req.args.clone(),
        cwd: req.cwd.as_ref().map(|d| d.to_string_lossy().into_owned()),
        env: req
            .env
            .iter()
            .map(|v| EnvVariable {
                name: v.name.clone(),
                value: v.value.clone(),
            })
            .collect(),
    }
}

/// The error answered when the user refuses a command.
pub fn refused(req: &s::CreateTerminalRequest) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::InternalError,
        format!(
            "permission denied: the user did not allow running {}",
            command_line(req)
        ),
    )
    .with_data(serde_json::json!({
        "reason": "permission_denied",
        "command": req.command,
        "args": req.args,
        "cwd": req.cwd,
    }))
}

/// The error answered, before anyone is asked, for a request that cannot be shown or run
/// faithfully (an invalid env name, a NUL byte, an empty command).
pub fn invalid(e: &Invalid) -> ErrorObject {
    ErrorObject::new(ErrorCode::InvalidParams, e.message())
        .with_data(serde_json::to_value(e).unwrap_or_default())
}

/// `command arg...` on one line, quoted as a POSIX shell would need (so what is shown is
/// exactly what runs: no shell is involved), control characters escaped
/// ([`acp_client::display::command_line`]).
pub fn command_line(req: &s::CreateTerminalRequest) -> String {
    acp_client::display::command_line(&req.command, &req.args)
}

/// The session's terminals. Cheap to clone.
#[derive(Clone)]
pub struct Terminals {
    service: TerminalService,
    root: PathBuf,
    /// What a command gets without the request's `env` (to show what the request changes).
    base_env: Arc<HashMap<String, String>>,
    /// The end of the output of terminals that finished or were released, for the UI.
    finished: Arc<Mutex<Kept>>,
}

/// The output kept for the UI: the end of each terminal's output (at most
/// [`KEPT_BYTES_PER_TERMINAL`]), for the newest [`KEPT_TERMINALS`] terminals (at most
/// [`KEPT_BYTES`] in all), oldest evicted first. A chat that runs terminal after terminal does
/// not keep every output it ever saw.
#[derive(Default)]
struct Kept {
    /// Oldest first: (terminal id, output).
    entries: std::collections::VecDeque<(String, String)>,
    bytes: usize,
}

impl Kept {
    fn insert(&mut self, id: String, text: String) {
        if let Some(i) = self.entries.iter().position(|(k, _)| *k == id) {
            if let Some((_, old)) = self.entries.remove(i) {
                self.bytes -= old.len();
            }
        }
        self.bytes += text.len();
        self.entries.push_back((id, text));
        while self.entries.len() > KEPT_TERMINALS || self.bytes > KEPT_BYTES {
            match self.entries.pop_front() {
                Some((_, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    fn get(&self, id: &str) -> Option<String> {
        self.entries
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, text)| text.clone())
    }
}

fn error(e: TerminalError) -> ErrorObject {
    let mut o = ErrorObject::new(ErrorCode::from_code(i64::from(e.code())), e.message());
    o.data = e.data();
    o
}

impl Terminals {
    /// Terminals whose working directories must be inside `root` (the default one), with
    /// environment `env`, at most `max_terminals` at once.
    pub fn new(root: PathBuf, env: EnvPolicy, max_terminals: usize) -> Terminals {
        let base_env = env
            .resolve_from_host()
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect();
        let config = TerminalConfig {
            default_cwd: Some(root.clone()),
            env,
            max_terminals,
            ..TerminalConfig::default()
        };
        Terminals {
            service: TerminalService::new(config),
            root,
            base_env: Arc::new(base_env),
            finished: Arc::default(),
        }
    }

    /// The UI's view of finished terminals' output.
    pub fn output_lookup(&self) -> TerminalOutput {
        let finished = self.finished.clone();
        Arc::new(move |id: &str| finished.lock().unwrap_or_else(|e| e.into_inner()).get(id))
    }

    /// Keeps the end of a terminal's output for the UI (before answering the agent, so the
    /// tool call update that follows finds it); see [`Kept`].
    fn keep_output(&self, session_id: &s::SessionId, terminal_id: &s::TerminalId) {
        let Ok((mut text, cut)) =
            self.service
                .output_tail(session_id, terminal_id, KEPT_BYTES_PER_TERMINAL)
        else {
            return;
        };
        if cut {
            // Whole lines only, after a mark.
            if let Some(nl) = text.find('\n').filter(|nl| nl + 1 < text.len()) {
                text.drain(..=nl);
            }
            text.insert_str(0, "[output truncated]\n");
        }
        self.finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(terminal_id.0.to_string(), text);
    }

    /// Adds the five `terminal/*` routes to `router`; `gate` decides every `terminal/create`.
    pub fn routes(&self, router: Router, gate: Gate) -> Router {
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.service.clone(),
            self.clone(),
        );
        router
            .route::<typed::CreateTerminal, _, _>(move |req, cx| {
                let t = a.clone();
                // Checked before anyone is asked; the question shows the request as it is.
                let allowed = acp_client::terminal::question(&command_request(&req), |name| {
                    t.base_env.get(name).cloned()
                })
                .map(|question| gate(&req, question, cx.cancel.clone()));
                async move {
                    let allowed = allowed.map_err(|e| invalid(&e))?;
                    t.check_cwd(req.cwd.as_deref())?;
                    if !allowed.await {
                        return Err(refused(&req));
                    }
                    t.service.create(req).await.map_err(error)
                }
            })
            .route::<typed::TerminalOutput, _, _>(move |req, _cx| {
                let t = b.clone();
                async move {
                    let out = t.service.output(req.clone()).await.map_err(error)?;
                    if out.exit_status.is_some() {
                        t.keep_output(&req.session_id, &req.terminal_id);
                    }
                    Ok(out)
                }
            })
            .route::<typed::WaitForTerminalExit, _, _>(move |req, cx| {
                let t = c.clone();
                async move {
                    let (session, id) = (req.session_id.clone(), req.terminal_id.clone());
                    tokio::select! {
                        r = t.service.wait_for_exit(req) => {
                            t.keep_output(&session, &id);
                            r.map_err(error)
                        }
                        _ = cx.cancel.cancelled() => Err(ErrorObject::from_code(ErrorCode::RequestCancelled)),
                    }
                }
            })
            .route::<typed::KillTerminal, _, _>(move |req, _cx| {
                let t = d.clone();
                async move { t.kill(req).await.map_err(error) }
            })
            .route::<typed::ReleaseTerminal, _, _>(move |req, _cx| {
                let t = e.clone();
                async move {
                    t.keep_output(&req.session_id, &req.terminal_id);
                    t.service.release(req).await.map_err(error)
                }
            })
    }

    /// Refuses a working directory outside the session's directory.
    fn check_cwd(&self, cwd: Option<&Path>) -> Result<(), ErrorObject> {
        let Some(cwd) = cwd else { return Ok(()) };
        let invalid = |m: String| ErrorObject::new(ErrorCode::InvalidParams, m);
        if !cwd.is_absolute() {
            return Err(invalid(format!("cwd must be absolute: {}", cwd.display())));
        }
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| ErrorObject::internal(format!("session directory: {e}")))?;
        let real = std::fs::canonicalize(cwd)
            .map_err(|e| invalid(format!("cwd {}: {e}", cwd.display())))?;
        if !real.starts_with(&root) {
            return Err(invalid(format!(
                "cwd {} is outside the session directory {}",
                cwd.display(),
                root.display()
            )));
        }
        Ok(())
    }

    /// Kills every terminal still running (when the chat ends).
    pub fn release_all(&self) {
        self.service.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_directories_must_be_inside_the_session_directory() {
        let root = std::env::temp_dir().join(format!("acp-terms-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let t = Terminals::new(root.clone(), EnvPolicy::default(), 16);
        assert!(t.check_cwd(None).is_ok());
        assert!(t.check_cwd(Some(&root.join("sub"))).is_ok());
        assert!(t.check_cwd(Some(&root.join("sub/.."))).is_ok());
        assert!(t.check_cwd(Some(Path::new("/"))).is_err());
        assert!(t.check_cwd(Some(&root.join("sub/../.."))).is_err());
        assert!(t.check_cwd(Some(Path::new("relative"))).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// 40 terminals of 200 KB of output each, released one after the other over a chat: what
    /// is kept for the UI stays bounded (the newest terminals, the end of their output).
    #[tokio::test]
    async fn output_kept_for_released_terminals_is_bounded() {
        let root = std::env::temp_dir().join(format!("acp-terms-kept-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let t = Terminals::new(root.clone(), EnvPolicy::default(), 16);
        let lookup = t.output_lookup();
        let session = s::SessionId::new("s");
        let mut ids = Vec::new();
        for i in 0..40 {
            let script = format!("head -c 200000 /dev/zero | tr '\\0' x; echo; echo end{i}");
            let req = s::CreateTerminalRequest::new(session.clone(), "sh")
                .args(vec!["-c".into(), script]);
            let id = t.service.create(req).await.unwrap().terminal_id;
            let wait = s::WaitForTerminalExitRequest::new(session.clone(), id.clone());
            t.service.wait_for_exit(wait).await.unwrap();
            t.keep_output(&session, &id);
            t.service
                .release(s::ReleaseTerminalRequest::new(session.clone(), id.clone()))
                .await
                .unwrap();
            ids.push(id);
        }
        let kept: Vec<String> = ids.iter().filter_map(|id| lookup(&id.0)).collect();
        let bytes: usize = kept.iter().map(String::len).sum();
        assert!(
            bytes <= KEPT_BYTES && kept.len() <= KEPT_TERMINALS,
            "{} terminals, {bytes} bytes kept",
            kept.len()
        );
        // The newest is there, with its end (what the UI shows).
        let last = lookup(&ids[39].0).expect("the last terminal's output");
        assert!(
            last.ends_with("\nend39\n"),
            "{:?}",
            &last[last.len() - 20..]
        );
        assert!(last.starts_with("[output truncated]\n"), "{:.40}", last);
        assert!(lookup(&ids[0].0).is_none(), "the oldest was not evicted");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_command_line_shown_is_exactly_what_runs() {
        let req = s::CreateTerminalRequest::new("s", "sh").args(vec![
            "-c".into(),
            "echo it's $HOME".into(),
            "".into(),
            "a/b.txt".into(),
        ]);
        assert_eq!(
            command_line(&req),
            r#"sh -c 'echo it'\''s $HOME' '' a/b.txt"#
        );
        let e = refused(&req);
        assert!(e.message.contains("permission denied"), "{e:?}");
        assert_eq!(e.data.unwrap()["reason"], "permission_denied");
        // A newline cannot start a line of its own in what is shown.
        let req = s::CreateTerminalRequest::new("s", "sh")
            .args(vec!["-c".into(), "echo x > y\nrun `ls -la`".into()]);
        assert_eq!(command_line(&req), r#"sh -c $'echo x > y\nrun `ls -la`'"#);
        assert!(!refused(&req).message.contains('\n'));
    }
}
