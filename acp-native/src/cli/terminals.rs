//! `terminal/*` for `acp chat`: the crate's [`TerminalService`] behind the five routes, with
//! one rule added: a terminal's working directory must lie inside the session's directory
//! (`--cwd`), like file writes.
//!
//! Commands run without a shell, in their own process group, with the user's environment (the
//! agent itself already has it: restricting its commands would protect nothing). Quitting
//! `acp chat` releases, and so kills, every terminal.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_core::{typed, ErrorCode, ErrorObject};
use acp_native::process::EnvPolicy;
use acp_native::terminal_service::{TerminalConfig, TerminalError, TerminalService};
use acp_native::Router;
use agent_client_protocol_schema::v1 as s;

use super::render::TerminalOutput;

/// The session's terminals. Cheap to clone.
#[derive(Clone)]
pub struct Terminals {
    service: TerminalService,
    root: PathBuf,
    /// Output of terminals that finished or were released, for the UI (by terminal id).
    finished: Arc<Mutex<HashMap<String, String>>>,
}

fn error(e: TerminalError) -> ErrorObject {
    let mut o = ErrorObject::new(ErrorCode::from_code(i64::from(e.code())), e.message());
    o.data = e.data();
    o
}

impl Terminals {
    /// Terminals whose working directories must be inside `root` (the default one).
    pub fn new(root: PathBuf) -> Terminals {
        let config = TerminalConfig {
            default_cwd: Some(root.clone()),
            env: EnvPolicy::inherit_all(),
            ..TerminalConfig::default()
        };
        Terminals {
            service: TerminalService::new(config),
            root,
            finished: Arc::default(),
        }
    }

    /// The UI's view of finished terminals' output.
    pub fn output_lookup(&self) -> TerminalOutput {
        let finished = self.finished.clone();
        Arc::new(move |id: &str| finished.lock().unwrap().get(id).cloned())
    }

    /// Keeps a terminal's output for the UI (before answering the agent, so the tool call
    /// update that follows finds it).
    async fn keep_output(&self, session_id: &s::SessionId, terminal_id: &s::TerminalId) {
        let req = s::TerminalOutputRequest::new(session_id.clone(), terminal_id.clone());
        if let Ok(out) = self.service.output(req).await {
            let mut text = out.output;
            if out.truncated {
                text.insert_str(0, "[output truncated]\n");
            }
            self.finished
                .lock()
                .unwrap()
                .insert(terminal_id.0.to_string(), text);
        }
    }

    /// Adds the five `terminal/*` routes to `router`.
    pub fn routes(&self, router: Router) -> Router {
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.service.clone(),
            self.clone(),
        );
        router
            .route::<typed::CreateTerminal, _, _>(move |req, _cx| {
                let t = a.clone();
                async move {
                    t.check_cwd(req.cwd.as_deref())?;
                    t.service.create(req).await.map_err(error)
                }
            })
            .route::<typed::TerminalOutput, _, _>(move |req, _cx| {
                let t = b.clone();
                async move {
                    let out = t.service.output(req.clone()).await.map_err(error)?;
                    if out.exit_status.is_some() {
                        t.keep_output(&req.session_id, &req.terminal_id).await;
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
                            t.keep_output(&session, &id).await;
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
                    t.keep_output(&req.session_id, &req.terminal_id).await;
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
        let t = Terminals::new(root.clone());
        assert!(t.check_cwd(None).is_ok());
        assert!(t.check_cwd(Some(&root.join("sub"))).is_ok());
        assert!(t.check_cwd(Some(&root.join("sub/.."))).is_ok());
        assert!(t.check_cwd(Some(Path::new("/"))).is_err());
        assert!(t.check_cwd(Some(&root.join("sub/../.."))).is_err());
        assert!(t.check_cwd(Some(Path::new("relative"))).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
