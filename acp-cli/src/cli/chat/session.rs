//! The session `acp chat` opens: its id once the agent gave it, its directory, and what it is
//! opened with (`--auth`, `--mode`, `--mcp-config`, the variables the agent gets). Which
//! request opens it, and what the user is told, is acp-client's session engine (held by the
//! renderer: `render/session.rs`); carrying it out is `open.rs`.

use std::collections::HashSet;
use std::path::PathBuf;

use acp_client::display::escape_line;
use acp_client::mcp::McpServer;
use agent_client_protocol_schema::v1 as s;

use super::outcome::Outcome;
use crate::cli::args::ChatArgs;
use crate::cli::exit;
use crate::cli::render::Ui;

pub(super) struct Session {
    /// The agent's session id (empty until the session is open).
    pub(super) id: s::SessionId,
    /// The session's directory.
    pub(super) cwd: PathBuf,
    /// The authentication method named with `--auth`.
    pub(super) auth: Option<String>,
    /// The session mode named with `--mode`.
    pub(super) mode: Option<String>,
    /// The servers of `--mcp-config`.
    mcp: Vec<McpServer>,
    /// Variables set (non-empty) in the agent's environment, for the auth choice.
    pub(super) agent_vars: HashSet<String>,
    /// The agent's `promptCapabilities` (what an attachment is sent as).
    pub(super) prompt_caps: acp_client::prompt::PromptCapabilities,
}

impl Session {
    pub(super) fn new(
        cwd: PathBuf,
        args: &ChatArgs,
        mcp: Vec<McpServer>,
        agent_vars: HashSet<String>,
    ) -> Session {
        Session {
            id: s::SessionId::new(""),
            cwd,
            auth: args.auth.clone(),
            mode: args.mode.clone(),
            mcp,
            agent_vars,
            prompt_caps: Default::default(),
        }
    }

    /// The `--mcp-config` servers the agent can use (acp-client's `mcp`: stdio always, http
    /// and sse when its `mcpCapabilities` say so); the others are named on stderr.
    pub(super) fn mcp_servers(
        &self,
        ui: &Ui,
        info: &s::InitializeResponse,
    ) -> Result<Vec<s::McpServer>, Outcome> {
        let caps = acp_client::mcp::McpCapabilities {
            http: info.agent_capabilities.mcp_capabilities.http,
            sse: info.agent_capabilities.mcp_capabilities.sse,
        };
        let selection = acp_client::mcp::select(&self.mcp, caps);
        for left in &selection.left_out {
            ui.warn(&format!("--mcp-config: left out {}", escape_line(left)));
        }
        selection
            .servers
            .iter()
            .map(|m| serde_json::to_value(m).and_then(serde_json::from_value))
            .collect::<Result<_, _>>()
            .map_err(|e| Outcome::fail(exit::ERROR, format!("--mcp-config: {e}")))
    }
}
