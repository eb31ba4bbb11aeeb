//! `acp sessions`: the sessions of a directory: the conversations `acp chat` saved there
//! ([`records`](super::records)), and the agent's own (`session/list`) when one is given and
//! offers it.

use std::path::Path;

use acp_client::display::{escape_line, escape_text, redact_url};

use super::args::SessionsArgs;
use super::records::list;

/// `acp sessions`.
pub async fn run(args: SessionsArgs) -> i32 {
    use super::exit;
    let cwd = match args.cwd.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(d) => crate::os_compat::canonicalize(&d).unwrap_or(d),
        Err(e) => {
            eprintln!("acp: no current directory: {e}");
            return exit::ERROR;
        }
    };
    let records = list(&cwd, |m| eprintln!("acp: warning: {}", escape_text(m)));
    if args.json {
        for r in &records {
            let line = serde_json::json!({
                "source": "local", "sessionId": r.session_id, "cwd": r.cwd,
                "agent": redact_url(&r.agent), "updatedAt": r.updated_at, "title": r.title,
                "turns": r.turns,
            });
            outln!("{line}");
        }
    } else if records.is_empty() {
        outln!("No saved sessions in {}.", cwd.display());
    } else {
        outln!("Saved sessions in {}:", cwd.display());
        for r in &records {
            outln!("  {}", r.line());
        }
    }
    let command = if let Some(name) = &args.agent_name {
        // Asked for its sessions without the entry's variables (none reach it).
        match super::agents::resolve(name, None, &[], |m| eprintln!("acp: warning: {m}")).await {
            Ok(agent) => agent.command,
            Err(e) => {
                eprintln!("acp: --agent: {}", escape_text(&e));
                return exit::ERROR;
            }
        }
    } else {
        args.agent.clone()
    };
    if !command.is_empty() {
        if let Err(e) = agent_sessions(&command, &args.env, &cwd, args.json).await {
            eprintln!("acp: {}", escape_text(&e));
            return exit::ERROR;
        }
    }
    if !args.json && !records.is_empty() {
        outln!(
            "Continue one with: acp chat --resume SESSION_ID, the newest with acp chat -c \
             (and the same agent)"
        );
    }
    exit::OK
}

/// The agent's own sessions for `cwd` (`session/list`, every page up to 20).
async fn agent_sessions(
    command: &[std::ffi::OsString],
    env: &[String],
    cwd: &Path,
    json: bool,
) -> Result<(), String> {
    use acp_core::Role;
    use acp_native::process::AgentCommand;
    use acp_native::{DriverConfig, Router};
    use agent_client_protocol_schema::v1 as s;
    let cmd = AgentCommand::new(command[0].clone())
        .args(command[1..].iter().cloned())
        .cwd(cwd)
        .env(super::env::env_policy(false, env));
    let (conn, child) =
        acp_native::transport::spawn_agent(&cmd, Router::new(), DriverConfig::new(Role::Client))
            .map_err(|e| format!("cannot start the agent: {e}"))?;
    let conn = conn.with_timeout(std::time::Duration::from_secs(60));
    let result = async {
        let init = s::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_info(s::Implementation::new("acp", env!("CARGO_PKG_VERSION")));
        let info = conn
            .initialize(init)
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        if info.agent_capabilities.session_capabilities.list.is_none() {
            if !json {
                outln!("The agent does not list its sessions (no sessionCapabilities.list).");
            }
            return Ok(());
        }
        let mut cursor: Option<String> = None;
        let mut shown = 0;
        for _ in 0..20 {
            let mut req = s::ListSessionsRequest::new().cwd(cwd.to_path_buf());
            if let Some(c) = cursor.take() {
                req = req.cursor(c);
            }
            let page = conn
                .list_sessions(req)
                .await
                .map_err(|e| format!("session/list: {e}"))?;
            for info in &page.sessions {
                if json {
                    let line = serde_json::json!({
                        "source": "agent", "sessionId": info.session_id.0, "cwd": info.cwd,
                        "updatedAt": info.updated_at, "title": info.title,
                    });
                    outln!("{line}");
                } else {
                    if shown == 0 {
                        outln!("The agent's sessions in {}:", cwd.display());
                    }
                    outln!(
                        "  {}  {}  {}",
                        escape_line(&info.session_id.0),
                        escape_line(info.updated_at.as_deref().unwrap_or("")),
                        escape_line(info.title.as_deref().unwrap_or(""))
                    );
                }
                shown += 1;
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        if shown == 0 && !json {
            outln!("The agent has no sessions in {}.", cwd.display());
        }
        Ok(())
    }
    .await;
    child.shutdown(std::time::Duration::from_millis(1500)).await;
    result
}
