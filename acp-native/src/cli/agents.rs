//! Agents by name (`acp agents`, `acp chat --agent NAME`): acp-client's registry (the ACP
//! registry format), from the snapshot built into `acp`, then a cached registry file if there is
//! one (`$XDG_CACHE_HOME/acp/registry.json`, else `~/.cache/acp/registry.json`: the public
//! registry's `registry.json`, saved there by the user), then `--registry FILE` (a registry or
//! one `agent.json`), each laid over the one before.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use acp_client::registry::{self, Registry};
use clap::Args;

use super::exit;

#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// A registry file (the ACP registry's `registry.json`) or one `agent.json`, laid over the
    /// built-in list.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,

    /// One agent per line as JSON (id, name, version, description, the command and env).
    #[arg(long)]
    pub json: bool,
}

/// Where a user's cached copy of the public registry is read from.
pub fn cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("acp").join("registry.json"))
}

/// The registry: snapshot, cache (a broken cache is warned about and skipped), `file`.
pub fn load(file: Option<&Path>, warn: impl Fn(&str)) -> Result<Registry, String> {
    let mut reg = registry::parse(registry::SNAPSHOT).expect("the built-in snapshot parses");
    if let Some(cache) = cache_file().filter(|p| p.is_file()) {
        match std::fs::read_to_string(&cache)
            .map_err(|e| e.to_string())
            .and_then(|t| registry::parse(&t))
        {
            Ok(r) => reg = registry::merge(reg, r),
            Err(e) => warn(&format!(
                "ignoring the cached registry {}: {e}",
                cache.display()
            )),
        }
    }
    if let Some(file) = file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("--registry {}: {e}", file.display()))?;
        let r =
            registry::parse(&text).map_err(|e| format!("--registry {}: {e}", file.display()))?;
        reg = registry::merge(reg, r);
    }
    Ok(reg)
}

/// The command and extra environment of agent `name`.
pub fn resolve(
    name: &str,
    file: Option<&Path>,
    warn: impl Fn(&str),
) -> Result<(Vec<OsString>, BTreeMap<String, String>), String> {
    let reg = load(file, warn)?;
    let agent = registry::find(&reg, name)?;
    let launch = registry::launch(agent, &registry::this_platform())?;
    Ok((
        launch.command.into_iter().map(OsString::from).collect(),
        launch.env,
    ))
}

/// `acp agents`.
pub fn run(args: AgentsArgs) -> i32 {
    let warn = |m: &str| eprintln!("acp: warning: {}", super::render::sanitize(m));
    let reg = match load(args.registry.as_deref(), warn) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp: {}", super::render::sanitize(&e));
            return exit::ERROR;
        }
    };
    let platform = registry::this_platform();
    for a in &reg.agents {
        let launch = registry::launch(a, &platform);
        if args.json {
            let (command, env, error) = match &launch {
                Ok(l) => (Some(&l.command), Some(&l.env), None),
                Err(e) => (None, None, Some(e)),
            };
            let line = serde_json::json!({
                "id": a.id, "name": a.name, "version": a.version, "description": a.description,
                "command": command, "env": env, "error": error,
            });
            println!("{line}");
        } else {
            let how = match &launch {
                Ok(l) => acp_client::display::command_line(&l.command[0], &l.command[1..]),
                Err(e) => format!("({e})"),
            };
            println!(
                "{:<10} {} {} — {}\n           {how}",
                acp_client::display::escape_line(&a.id),
                acp_client::display::escape_line(&a.name),
                acp_client::display::escape_line(&a.version),
                acp_client::display::escape_line(&a.description),
            );
        }
    }
    if !args.json {
        println!("\nUse one with: acp chat --agent ID (add the key it needs with --env NAME)");
    }
    exit::OK
}
