//! Agents by name, from the ACP registry format (`{"version", "agents": [agent.json…]}`; each
//! agent has `id`, `name`, `version`, `description` and a `distribution`: `npx`, `uvx` or
//! per-platform `binary` archives). A snapshot of the well-known agents ships in the binary
//! ([`SNAPSHOT`]); a registry file (or one `agent.json`) given by the user is laid over it.
//! `tests/client/registry.json` is the case table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The agents known without any file: claude, codex, gemini, qwen, opencode, at the versions
/// the project's real-agent tests run (or last checked in the npm registry).
pub const SNAPSHOT: &str = include_str!("../data/registry-snapshot.json");

/// A registry document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub version: String,
    pub agents: Vec<Agent>,
}

/// One `agent.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    pub distribution: Distribution,
}

/// How an agent is obtained and started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<Package>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<Package>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BTreeMap<String, Binary>>,
}

/// An npm or PyPI package run through `npx` / `uvx`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    pub package: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A platform's archive and the command inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binary {
    pub archive: String,
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// How to start an agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The program and its arguments (no shell).
    pub command: Vec<String>,
    /// Variables the distribution sets.
    pub env: BTreeMap<String, String>,
    /// `npx`, `uvx` or `binary`.
    pub via: String,
}

/// Reads a registry document, or a single `agent.json` (as a registry of one).
pub fn parse(text: &str) -> Result<Registry, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Doc {
        Registry(Registry),
        Agent(Box<Agent>),
    }
    let doc: Doc = serde_json::from_str(text)
        .map_err(|e| format!("not an ACP registry or agent.json: {e}"))?;
    let registry = match doc {
        Doc::Registry(r) => r,
        Doc::Agent(a) => Registry {
            version: String::new(),
            agents: vec![*a],
        },
    };
    for a in &registry.agents {
        let d = &a.distribution;
        if d.npx.is_none() && d.uvx.is_none() && d.binary.is_none() {
            return Err(format!("agent `{}` has no distribution", a.id));
        }
    }
    Ok(registry)
}

/// The snapshot with `overlay`'s agents laid over it (same id: the overlay's wins).
pub fn merge(mut base: Registry, overlay: Registry) -> Registry {
    for agent in overlay.agents {
        match base.agents.iter_mut().find(|a| a.id == agent.id) {
            Some(slot) => *slot = agent,
            None => base.agents.push(agent),
        }
    }
    base
}

/// The agent called `name`: its id exactly, else the one agent whose id or name starts with it
/// (ASCII case ignored). An error lists the known ids.
pub fn find<'a>(registry: &'a Registry, name: &str) -> Result<&'a Agent, String> {
    if let Some(a) = registry.agents.iter().find(|a| a.id == name) {
        return Ok(a);
    }
    let lower = name.to_ascii_lowercase();
    let matches: Vec<&Agent> = registry
        .agents
        .iter()
        .filter(|a| {
            a.id.to_ascii_lowercase().starts_with(&lower)
                || a.name.to_ascii_lowercase().starts_with(&lower)
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        _ => {
            let ids: Vec<&str> = registry.agents.iter().map(|a| a.id.as_str()).collect();
            let why = if matches.is_empty() {
                "no agent"
            } else {
                "more than one agent"
            };
            Err(format!(
                "{why} is called `{}`; known agents: {}",
                crate::display::escape_line(name),
                ids.join(", ")
            ))
        }
    }
}

/// How to start `agent` on `platform` (`linux-x86_64`, `darwin-aarch64`…): `npx -y PACKAGE
/// ARGS…` first, then `uvx PACKAGE ARGS…`; a binary-only agent needs its archive installed
/// first, which is said in the error.
pub fn launch(agent: &Agent, platform: &str) -> Result<Launch, String> {
    let d = &agent.distribution;
    if let Some(p) = &d.npx {
        let mut command = vec!["npx".to_string(), "-y".to_string(), p.package.clone()];
        command.extend(p.args.iter().cloned());
        return Ok(Launch {
            command,
            env: p.env.clone(),
            via: "npx".into(),
        });
    }
    if let Some(p) = &d.uvx {
        let mut command = vec!["uvx".to_string(), p.package.clone()];
        command.extend(p.args.iter().cloned());
        return Ok(Launch {
            command,
            env: p.env.clone(),
            via: "uvx".into(),
        });
    }
    match d.binary.as_ref().and_then(|b| b.get(platform)) {
        Some(b) => Err(format!(
            "`{}` is distributed as an archive for {platform}: download {} and run its `{}` \
             (give its path after --)",
            agent.id, b.archive, b.cmd
        )),
        None => Err(format!("`{}` has no distribution for {platform}", agent.id)),
    }
}

/// This machine's platform key (`linux-x86_64`…).
pub fn this_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_parses_and_every_agent_launches() {
        let r = parse(SNAPSHOT).unwrap();
        let ids: Vec<&str> = r.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["claude", "codex", "gemini", "qwen", "opencode"]);
        for a in &r.agents {
            let l = launch(a, "linux-x86_64").unwrap();
            assert_eq!(l.command[..2], ["npx", "-y"], "{}", a.id);
        }
    }
}
