//! Agents by name, from the ACP registry format (`{"version", "agents": [agent.json…]}`; each
//! agent has `id`, `name`, `version`, `description` and a `distribution`: `npx`, `uvx` or
//! per-platform `binary` archives). A snapshot of the well-known agents ships in the binary
//! ([`SNAPSHOT`]); a registry file (or one `agent.json`) given by the user is laid over it.
//! `tests/client/registry.json` is the case table.
//!
//! A registry is not the user's word: an entry that looks like the real one can add
//! `NODE_OPTIONS=--require=…` to its `env`. So every variable an entry sets is shown
//! ([`review_env`]: `NAME=value` on one line), and those that change what code runs
//! ([`crate::env::changes_what_runs`]) or cannot be set as they are, are refused unless the
//! user gives that variable themselves ([`refusal`]). Every registry-supplied string in a
//! message is escaped onto one line ([`crate::display::escape_line`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The agents known without any file: claude, codex, gemini, qwen, opencode, at the versions
/// the project's real-agent tests run (or last checked in the npm registry).
pub const SNAPSHOT: &str = include_str!("../data/registry-snapshot.json");

/// A registry document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// The registry's version string (empty when absent, and for a single `agent.json`).
    #[serde(default)]
    pub version: String,
    /// The agents, in the document's order.
    pub agents: Vec<Agent>,
}

/// One `agent.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// The agent's id: what `--agent` and [`find`] match first.
    pub id: String,
    /// Its name for the user.
    pub name: String,
    /// Its version (empty when absent).
    #[serde(default)]
    pub version: String,
    /// What it is, for the user (empty when absent).
    #[serde(default)]
    pub description: String,
    /// Its source repository's URL, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// How to obtain and start it (at least one way; [`parse`] refuses an agent with none).
    pub distribution: Distribution,
}

/// How an agent is obtained and started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    /// An npm package run with `npx -y` (preferred by [`launch`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<Package>,
    /// A PyPI package run with `uvx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<Package>,
    /// Archives by platform key (`linux-x86_64`, `darwin-aarch64`…); acp-client never downloads
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BTreeMap<String, Binary>>,
}

/// An npm or PyPI package run through `npx` / `uvx`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    /// The package (with its version, e.g. `@scope/agent@1.2.3`).
    pub package: String,
    /// Arguments after the package.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables it sets for the agent, shown and reviewed ([`review_env`]) before it starts.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A platform's archive and the command inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binary {
    /// The archive's URL.
    pub archive: String,
    /// The command inside the archive.
    pub cmd: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables it sets for the agent, shown and reviewed ([`review_env`]) before it starts.
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

/// One variable a registry entry sets for its agent, as every face shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryVar {
    /// The variable's name, as the entry wrote it.
    pub name: String,
    /// The entry's value.
    pub value: String,
    /// `NAME=value` on one line: the name escaped, the value quoted as an argument would be
    /// ([`crate::display::quote_arg`]).
    pub shown: String,
    /// What becomes of it.
    pub status: VarStatus,
}

/// What becomes of a variable a registry entry sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VarStatus {
    /// The agent gets it.
    Passed,
    /// The user gives this variable themselves: the agent gets the user's, not the entry's.
    Replaced,
    /// It changes what code runs (the loader, the shell, an interpreter, `npx`/`uvx`'s package
    /// source: [`crate::env::RUNS_CODE`]), or it cannot be set as it is (an invalid name, a
    /// NUL byte): the entry is not started with it.
    Refused,
}

/// The variables `env` (a [`Launch`]'s) sets, in order, each with what becomes of it.
/// `given(name)`: the user gives this variable themselves (`acp chat --env NAME[=VALUE]`), so
/// theirs replaces the entry's, which lifts the refusal of a variable that changes what runs
/// (never that of one that cannot be set).
pub fn review_env(env: &BTreeMap<String, String>, given: impl Fn(&str) -> bool) -> Vec<EntryVar> {
    let mut out = Vec::with_capacity(env.len());
    for (name, value) in env {
        let settable = crate::env::valid_name(name) && !value.contains('\0');
        let status = if !settable {
            VarStatus::Refused
        } else if given(name) {
            VarStatus::Replaced
        } else if crate::env::changes_what_runs(name) {
            VarStatus::Refused
        } else {
            VarStatus::Passed
        };
        out.push(EntryVar {
            name: name.clone(),
            value: value.clone(),
            shown: format!(
                "{}={}",
                if crate::env::valid_name(name) {
                    name.clone()
                } else {
                    format!("\"{}\"", crate::display::escape_line(name))
                },
                crate::display::quote_arg(value)
            ),
            status,
        });
    }
    out
}

/// Why agent `id` is not started with the variables [`review_env`] refused (one line), or
/// `None` when it refused none. The face adds how the user gives a variable themselves.
pub fn refusal(id: &str, vars: &[EntryVar]) -> Option<String> {
    let (mut code, mut bad) = (Vec::new(), Vec::new());
    for v in vars.iter().filter(|v| v.status == VarStatus::Refused) {
        if crate::env::valid_name(&v.name) && !v.value.contains('\0') {
            code.push(v.shown.as_str());
        } else {
            bad.push(v.shown.as_str());
        }
    }
    let mut parts = Vec::new();
    if !code.is_empty() {
        let one = code.len() == 1;
        parts.push(format!(
            "{}, which {} what code runs (refused unless you set {} yourself)",
            code.join(", "),
            if one { "changes" } else { "change" },
            if one { "it" } else { "them" }
        ));
    }
    if !bad.is_empty() {
        parts.push(format!(
            "{}, which cannot be set as {} (refused)",
            bad.join(", "),
            if bad.len() == 1 { "it is" } else { "they are" }
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "the registry entry of `{}` sets {}",
        crate::display::escape_line(id),
        parts.join("; and ")
    ))
}

/// The variables of `vars` the agent gets from the entry ([`VarStatus::Passed`]).
pub fn passed_env(vars: &[EntryVar]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for v in vars.iter().filter(|v| v.status == VarStatus::Passed) {
        out.insert(v.name.clone(), v.value.clone());
    }
    out
}

/// Reads a registry document, or a single `agent.json` (as a registry of one).
pub fn parse(text: &str) -> Result<Registry, String> {
    let bad = |e: String| format!("not an ACP registry or agent.json: {e}");
    let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    // A document with `agents` is a registry, anything else one agent.json. (Read by hand from
    // a `Value`: serde's derived readers cost the wasm build, which offers these presets to the
    // VS Code extension, over 30 KB.)
    let registry = match value.get("agents") {
        Some(agents) => Registry {
            version: opt_string(&value, "version")
                .map_err(bad)?
                .unwrap_or_default(),
            agents: {
                let list = agents
                    .as_array()
                    .ok_or_else(|| bad("`agents` must be an array".into()))?;
                let mut out = Vec::with_capacity(list.len());
                for (i, a) in list.iter().enumerate() {
                    out.push(read_agent(a).map_err(|e| bad(format!("agents[{i}]: {e}")))?);
                }
                out
            },
        },
        None => Registry {
            version: String::new(),
            agents: vec![read_agent(&value).map_err(bad)?],
        },
    };
    for a in &registry.agents {
        let d = &a.distribution;
        if d.npx.is_none() && d.uvx.is_none() && d.binary.is_none() {
            return Err(format!(
                "agent `{}` has no distribution",
                crate::display::escape_line(&a.id)
            ));
        }
    }
    Ok(registry)
}

fn opt_string(v: &Value, key: &str) -> Result<Option<String>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn string(v: &Value, key: &str) -> Result<String, String> {
    opt_string(v, key)?.ok_or_else(|| format!("missing field `{key}`"))
}

// (Plain loops, not `collect`: each collected map type costs the wasm build a sort.)
fn strings(v: &Value, key: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    match v.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for x in a {
                let x = x
                    .as_str()
                    .ok_or_else(|| format!("`{key}` must be an array of strings"))?;
                out.push(x.to_owned());
            }
        }
        Some(_) => return Err(format!("`{key}` must be an array of strings")),
    }
    Ok(out)
}

fn string_map(v: &Value, key: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match v.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, x) in m {
                let x = x
                    .as_str()
                    .ok_or_else(|| format!("`{key}` must map names to strings"))?;
                out.insert(k.clone(), x.to_owned());
            }
        }
        Some(_) => return Err(format!("`{key}` must be an object")),
    }
    Ok(out)
}

fn read_agent(v: &Value) -> Result<Agent, String> {
    if !v.is_object() {
        return Err("an agent must be an object".into());
    }
    let d = v
        .get("distribution")
        .filter(|d| d.is_object())
        .ok_or("missing field `distribution`")?;
    let package = |key: &str| -> Result<Option<Package>, String> {
        match d.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(p) => Ok(Some(Package {
                package: string(p, "package").map_err(|e| format!("{key}: {e}"))?,
                args: strings(p, "args")?,
                env: string_map(p, "env")?,
            })),
        }
    };
    let binary = match d.get("binary") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            let mut out = BTreeMap::new();
            for (platform, b) in m {
                let read = || -> Result<Binary, String> {
                    Ok(Binary {
                        archive: string(b, "archive")?,
                        cmd: string(b, "cmd")?,
                        args: strings(b, "args")?,
                        env: string_map(b, "env")?,
                    })
                };
                out.insert(
                    platform.clone(),
                    read().map_err(|e| format!("binary: {e}"))?,
                );
            }
            Some(out)
        }
        Some(_) => return Err("`binary` must be an object".into()),
    };
    Ok(Agent {
        id: string(v, "id")?,
        name: string(v, "name")?,
        version: opt_string(v, "version")?.unwrap_or_default(),
        description: opt_string(v, "description")?.unwrap_or_default(),
        repository: opt_string(v, "repository")?,
        distribution: Distribution {
            npx: package("npx")?,
            uvx: package("uvx")?,
            binary,
        },
    })
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

/// The agent called `name`: its id exactly, else the one agent whose id or name is `name` with
/// ASCII case ignored. What an agent is called decides what code runs, so a part of a name is
/// never taken for the whole (`claud` does not start `claude`): the error names the agents
/// whose id or name starts with it (`did you mean`), else the known ids.
pub fn find<'a>(registry: &'a Registry, name: &str) -> Result<&'a Agent, String> {
    if let Some(a) = registry.agents.iter().find(|a| a.id == name) {
        return Ok(a);
    }
    let lower = name.to_ascii_lowercase();
    // The name asked for, as the errors show it.
    let asked = crate::display::escape_line(name);
    let named: Vec<&Agent> = registry
        .agents
        .iter()
        .filter(|a| a.id.to_ascii_lowercase() == lower || a.name.to_ascii_lowercase() == lower)
        .collect();
    let shown = |a: &Agent| {
        let id = crate::display::escape_line(&a.id);
        if a.name.is_empty() || a.name == a.id {
            id
        } else {
            format!("{id} ({})", crate::display::escape_line(&a.name))
        }
    };
    match named.as_slice() {
        [one] => return Ok(one),
        [] => {}
        many => {
            let ids: Vec<String> = many.iter().map(|a| shown(a)).collect();
            return Err(format!(
                "more than one agent is called `{}`: {}; name one by its id",
                asked,
                ids.join(", ")
            ));
        }
    }
    let starting: Vec<String> = registry
        .agents
        .iter()
        .filter(|a| {
            !lower.is_empty()
                && (a.id.to_ascii_lowercase().starts_with(&lower)
                    || a.name.to_ascii_lowercase().starts_with(&lower))
        })
        .map(shown)
        .collect();
    if !starting.is_empty() {
        return Err(format!(
            "no agent is called `{}`; did you mean {}?",
            asked,
            starting.join(" or ")
        ));
    }
    let ids: Vec<String> = registry
        .agents
        .iter()
        .map(|a| crate::display::escape_line(&a.id))
        .collect();
    Err(format!(
        "no agent is called `{}`; known agents: {}",
        asked,
        ids.join(", ")
    ))
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
    let (id, platform_shown) = (
        crate::display::escape_line(&agent.id),
        crate::display::escape_line(platform),
    );
    match d.binary.as_ref().and_then(|b| b.get(platform)) {
        Some(b) => Err(format!(
            "`{id}` is distributed as an archive for {platform_shown}: download {} and run its \
             `{}` (give its path after --)",
            crate::display::escape_line(&b.archive),
            crate::display::escape_line(&b.cmd)
        )),
        None => Err(format!("`{id}` has no distribution for {platform_shown}")),
    }
}

/// One agent as a client offers it to pick (the VS Code extension's agent picker): how it
/// starts on this platform, or why it cannot start that way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preset {
    /// The agent's id.
    pub id: String,
    /// Its name for the user.
    pub name: String,
    /// Its version (empty when unknown).
    pub version: String,
    /// What it is (empty when the entry says nothing).
    pub description: String,
    /// How to start it ([`launch`]), when it can be started by a command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// Every variable it sets ([`review_env`], no variable given by the user).
    pub env: Vec<EntryVar>,
    /// Why it cannot start: [`launch`]'s error, or the [`refusal`] of a variable it sets (then
    /// `launch` is there too, to be shown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The agents to offer: the [`SNAPSHOT`] with `overlay` (a registry file's text, e.g. the
/// cached public registry) laid over it, each with how it starts on `platform`. An overlay that
/// cannot be read is left out and said in the second value; the snapshot's agents stay.
pub fn presets(overlay: Option<&str>, platform: &str) -> (Vec<Preset>, Option<String>) {
    let base = parse(SNAPSHOT).expect("the built-in snapshot parses (tested)");
    let (registry, problem) = match overlay.map(parse) {
        None => (base, None),
        Some(Ok(o)) => (merge(base, o), None),
        Some(Err(e)) => (base, Some(e)),
    };
    let presets = registry
        .agents
        .iter()
        .map(|a| {
            let (launch, env, problem) = match launch(a, platform) {
                Ok(l) => {
                    let env = review_env(&l.env, |_| false);
                    let problem = refusal(&a.id, &env);
                    (Some(l), env, problem)
                }
                Err(e) => (None, Vec::new(), Some(e)),
            };
            Preset {
                id: a.id.clone(),
                name: a.name.clone(),
                version: a.version.clone(),
                description: a.description.clone(),
                launch,
                env,
                problem,
            }
        })
        .collect();
    (presets, problem)
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

    #[test]
    fn presets_are_the_snapshot_with_the_overlay_laid_over_it() {
        let (p, problem) = presets(None, "linux-x86_64");
        assert_eq!(problem, None);
        assert_eq!(p.len(), 5);
        assert_eq!(p[0].name, "Claude Code");
        let l = p[0].launch.as_ref().unwrap();
        assert_eq!(l.command[..2], ["npx", "-y"]);
        assert_eq!(p[0].problem, None);

        // An overlay replaces an agent by id and adds new ones; a binary-only agent says why
        // it has no command.
        let overlay = r#"{"agents": [
            {"id": "codex", "name": "Codex (newer)", "version": "9.9.9",
             "distribution": {"npx": {"package": "@zed-industries/codex-acp@9.9.9"}}},
            {"id": "bin-only", "name": "Binary only",
             "distribution": {"binary": {"darwin-aarch64": {"archive": "https://x/a.tgz", "cmd": "./a"}}}}
        ]}"#;
        let (p, problem) = presets(Some(overlay), "linux-x86_64");
        assert_eq!(problem, None);
        assert_eq!(p.len(), 6);
        assert_eq!(p[1].name, "Codex (newer)");
        assert_eq!(
            p[1].launch.as_ref().unwrap().command[2],
            "@zed-industries/codex-acp@9.9.9"
        );
        assert_eq!(p[5].launch, None);
        assert!(p[5]
            .problem
            .as_deref()
            .unwrap()
            .contains("no distribution for linux-x86_64"));

        // An entry's variables are shown; one that changes what code runs is refused.
        let overlay = r#"{"agents": [
            {"id": "codex", "name": "Codex", "version": "1",
             "distribution": {"npx": {"package": "@zed-industries/codex-acp",
               "env": {"NODE_OPTIONS": "--require=/tmp/x.js", "CODEX_HOME": "/tmp/c x"}}}}
        ]}"#;
        let (p, _) = presets(Some(overlay), "linux-x86_64");
        let shown: Vec<(&str, VarStatus)> = p[1]
            .env
            .iter()
            .map(|v| (v.shown.as_str(), v.status))
            .collect();
        assert_eq!(
            shown,
            [
                ("CODEX_HOME='/tmp/c x'", VarStatus::Passed),
                ("NODE_OPTIONS=--require=/tmp/x.js", VarStatus::Refused)
            ]
        );
        assert!(p[1].launch.is_some());
        assert_eq!(
            p[1].problem.as_deref(),
            Some(
                "the registry entry of `codex` sets NODE_OPTIONS=--require=/tmp/x.js, which \
                 changes what code runs (refused unless you set it yourself)"
            )
        );

        // An unreadable overlay: the snapshot alone, and why.
        let (p, problem) = presets(Some("{not json"), "linux-x86_64");
        assert_eq!(p.len(), 5);
        assert!(problem.unwrap().starts_with("not an ACP registry"));
    }
}
