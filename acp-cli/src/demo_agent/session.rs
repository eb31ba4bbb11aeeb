//! What the demo agent remembers about one session (in memory; `store.rs` keeps it on disk
//! with `--state-dir`).

use std::path::PathBuf;

use agent_client_protocol_schema::v1 as s;
use tokio_util::sync::CancellationToken;

/// What the agent remembers about one session.
pub(super) struct Session {
    pub(super) cwd: PathBuf,
    /// Fired by `session/cancel`; replaced at the start of every turn.
    pub(super) turn: CancellationToken,
    /// Every update sent so far, replayed by `session/load`.
    pub(super) history: Vec<s::SessionUpdate>,
    /// The first prompt's first line (`session/list`'s title).
    pub(super) title: Option<String>,
    /// The names of the MCP servers the client gave it (what `#mcp` answers).
    pub(super) mcp: Vec<String>,
}

impl Session {
    pub(super) fn new(cwd: PathBuf, mcp: Vec<String>) -> Self {
        Session {
            cwd,
            turn: CancellationToken::new(),
            history: Vec::new(),
            title: None,
            mcp,
        }
    }
}

/// The servers' names, in order (whatever their transport).
pub(super) fn mcp_names(servers: &[s::McpServer]) -> Vec<String> {
    servers
        .iter()
        .filter_map(|m| {
            let v = serde_json::to_value(m).ok()?;
            v.get("name")?.as_str().map(str::to_string)
        })
        .collect()
}
