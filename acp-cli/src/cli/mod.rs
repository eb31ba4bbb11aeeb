//! The `acp` command: its command line (`args.rs`, clap derive) and its subcommands, each a
//! module run from `main.rs`: `chat/` (`acp chat`), `serve.rs`, `agents.rs`, `sessions.rs`,
//! `login.rs`, `trace/` (`acp trace`; `acp demo-agent` is the crate's `demo_agent`). Shared
//! by them: `exit.rs` (the exit codes), `env.rs` (the agents' environment), `render/` (what
//! `acp chat` shows), `watch.rs` (what `acp chat` and `acp login` notice of an agent's stream:
//! lines that are not messages), `rpc_log/` (`--log-rpc`), `records.rs` (the saved
//! conversations), `terminals.rs`, `fetch.rs`, and here the default agent and acp's own
//! directories.
//!
//! Dependencies go one way: the subcommands use the shared modules, never the reverse, and
//! nothing here reaches into the demo agent but the options it is run with.

#[macro_use]
mod out; // lines to stdout; a closed stdout ends acp quietly

pub mod agents;
pub mod args;
pub mod chat;
pub mod env;
pub mod exit;
mod fetch;
pub mod login;
pub mod records;
pub mod render;
pub mod rpc_log;
pub mod serve;
pub mod sessions;
pub mod terminals;
pub mod trace;
pub mod watch;

use std::ffi::OsString;
use std::path::PathBuf;

// `serve.rs` names these from here.
pub use args::{Cli, Command, ServeArgs};
pub use env::env_policy;

/// The default agent: this executable's `demo-agent` subcommand.
pub fn default_agent() -> Vec<OsString> {
    let exe = std::env::current_exe()
        .map(PathBuf::into_os_string)
        .unwrap_or_else(|_| OsString::from("acp"));
    vec![exe, OsString::from("demo-agent")]
}

/// acp's own directories: its state (`$XDG_STATE_HOME/acp`, else `~/.local/state/acp`: session
/// records, prompt history), its cache (`$XDG_CACHE_HOME/acp`, else `~/.cache/acp`: the agent
/// registry `--agent` runs from) and its configuration (`$XDG_CONFIG_HOME/acp`, else
/// `~/.config/acp`). An agent's write under one of them is the user's question
/// (`acp_client::writes::Sensitive::ClientFiles`).
pub fn own_dirs() -> Vec<PathBuf> {
    let home = crate::os_compat::home().map(PathBuf::from);
    let dir = |var: &str, usual: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(usual)))
            .map(|base| base.join("acp"))
    };
    [
        dir("XDG_STATE_HOME", ".local/state"),
        dir("XDG_CACHE_HOME", ".cache"),
        dir("XDG_CONFIG_HOME", ".config"),
    ]
    .into_iter()
    .flatten()
    .collect()
}
