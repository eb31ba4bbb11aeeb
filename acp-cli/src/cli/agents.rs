//! Agents by name (`acp agents`, `acp chat --agent NAME`): acp-client's registry (the ACP
//! registry format), from the snapshot built into `acp`, then the cached copy of the public
//! registry (`$XDG_CACHE_HOME/acp/registry.json`, else `~/.cache/acp/registry.json`), then
//! `--registry FILE` (a registry or one `agent.json`), each laid over the one before.
//!
//! The cache is refreshed from the public registry ([`REGISTRY_URL`], or `ACP_REGISTRY_URL`)
//! when it is older than a day (`acp agents`, `acp chat --agent`, `acp login --agent`: at most
//! [`AUTO_DEADLINE`], and at most one attempt a day, so an offline machine does not wait each
//! time), or on demand (`acp agents --refresh`). What is fetched must parse as a registry
//! before it replaces the cache (written whole, then renamed). `ACP_OFFLINE=1` never fetches.
//!
//! Every variable an entry sets is shown (`acp agents`, and on stderr when `--agent` starts
//! it); those that change what code runs are refused unless the user sets that variable
//! themselves with `--env` (acp-client's `registry::review_env`). Registry strings are shown
//! escaped onto one line (acp-client's `display`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_client::display::{escape_line, escape_text, is_hidden, quote_arg};
use acp_client::registry::{self, EntryVar, Registry, VarStatus};

use super::args::AgentsArgs;
use super::exit;

/// The public ACP registry.
pub const REGISTRY_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";
/// How old the cache may get before it is refreshed.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long an automatic refresh may take (`--refresh`: [`REFRESH_DEADLINE`]).
pub const AUTO_DEADLINE: Duration = Duration::from_secs(4);
pub const REFRESH_DEADLINE: Duration = Duration::from_secs(20);
/// The largest registry accepted.
pub const MAX_REGISTRY_BYTES: usize = 4 << 20;

fn registry_url() -> String {
    std::env::var("ACP_REGISTRY_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| REGISTRY_URL.to_string())
}

fn offline() -> bool {
    std::env::var_os("ACP_OFFLINE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// When the cache was last refreshed or tried (the stamp beside it).
fn stamp_file(cache: &Path) -> PathBuf {
    cache.with_extension("checked")
}

fn age(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(
        std::time::SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default(),
    )
}

/// Fetches the public registry into the cache: with `force`, now; otherwise only when neither
/// the cache nor the last attempt is younger than [`MAX_AGE`]. Returns what happened, for the
/// user (`None`: nothing was tried).
pub async fn refresh(force: bool) -> Option<Result<String, String>> {
    let cache = cache_file()?;
    if !force {
        if offline() {
            return None;
        }
        let fresh = |p: &Path| age(p).is_some_and(|a| a < MAX_AGE);
        if fresh(&cache) || fresh(&stamp_file(&cache)) {
            return None;
        }
    }
    let url = registry_url();
    let deadline = if force {
        REFRESH_DEADLINE
    } else {
        AUTO_DEADLINE
    };
    if let Some(dir) = cache.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Tried now, whatever comes of it: an offline machine tries once a day.
    let _ = std::fs::write(stamp_file(&cache), b"");
    let result = async {
        let got = super::fetch::get(&url, deadline, MAX_REGISTRY_BYTES).await?;
        // Said as fetched: the URL the registry really came from, after any redirect.
        let url = got.url;
        let text = std::str::from_utf8(&got.body).map_err(|_| format!("{url}: not UTF-8"))?;
        let reg = registry::parse(text).map_err(|e| format!("{url}: not a registry: {e}"))?;
        let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &cache))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("cannot write {}: {e}", cache.display())
            })?;
        Ok(format!(
            "refreshed the agent registry from {url} ({} agents)",
            reg.agents.len()
        ))
    }
    .await;
    Some(result)
}

/// An automatic [`refresh`]: a failure is a warning (the cache or the built-in list serve).
pub async fn refresh_if_stale(warn: impl Fn(&str)) {
    if let Some(Err(e)) = refresh(false).await {
        warn(&format!(
            "could not refresh the agent registry ({e}); using the cached or built-in list"
        ));
    }
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

/// An agent found by name: what it runs and every variable its entry sets.
#[derive(Debug)]
pub struct Resolved {
    pub id: String,
    pub command: Vec<OsString>,
    /// The entry's variables, reviewed against the user's `--env`.
    pub env: Vec<EntryVar>,
}

impl Resolved {
    /// One line per variable the entry sets, for stderr before the agent starts.
    pub fn env_lines(&self) -> Vec<String> {
        self.env
            .iter()
            .map(|v| {
                let what = match v.status {
                    VarStatus::Passed => "",
                    VarStatus::Replaced => " (yours from --env is used instead)",
                    VarStatus::Refused => " (refused)",
                };
                format!(
                    "the registry entry of `{}` sets {}{what}",
                    escape_line(&self.id),
                    v.shown
                )
            })
            .collect()
    }

    /// The variables the agent gets from the entry, or why it is not started (one line, with
    /// how to set a refused variable yourself).
    pub fn agent_env(&self) -> Result<BTreeMap<String, String>, String> {
        match registry::refusal(&self.id, &self.env) {
            None => Ok(registry::passed_env(&self.env)),
            Some(why) => Err(match env_args(&self.env) {
                Some(args) => format!("{why}; to use it anyway, pass {args}"),
                None => why,
            }),
        }
    }
}

/// The `--env 'NAME=value'` arguments that would set the refused variables the user can set
/// themselves, or `None`.
fn env_args(vars: &[EntryVar]) -> Option<String> {
    let args: Vec<String> = vars
        .iter()
        .filter(|v| v.status == VarStatus::Refused && acp_client::env::valid_name(&v.name))
        .filter(|v| !v.value.contains('\0'))
        .map(|v| format!("--env {}", quote_arg(&format!("{}={}", v.name, v.value))))
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

/// Whether `--env` items (`NAME`, `NAME_*`, `NAME=VALUE`) set `name`.
fn given_by(items: &[String]) -> impl Fn(&str) -> bool + '_ {
    move |name| {
        items.iter().any(|item| {
            let pattern = item.split_once('=').map_or(item.as_str(), |(n, _)| n);
            acp_client::env::matches_pattern(pattern, name)
        })
    }
}

/// Agent `name` (the registry refreshed first when it is a day old), its variables reviewed
/// against `env_items` (the user's `--env`).
pub async fn resolve(
    name: &str,
    file: Option<&Path>,
    env_items: &[String],
    warn: impl Fn(&str),
) -> Result<Resolved, String> {
    refresh_if_stale(&warn).await;
    let reg = load(file, warn)?;
    let agent = registry::find(&reg, name)?;
    let launch = registry::launch(agent, &registry::this_platform())?;
    Ok(Resolved {
        id: agent.id.clone(),
        command: launch.command.into_iter().map(OsString::from).collect(),
        env: registry::review_env(&launch.env, given_by(env_items)),
    })
}

/// `value` as one JSON line whose hidden characters (bidi overrides, zero-width characters…,
/// which JSON may carry raw) are written as `\uXXXX` escapes: the same JSON, safe to show.
fn json_line(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) {
            // Only inside strings (serde writes no whitespace), and all in the BMP.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `acp agents`.
pub async fn run(args: AgentsArgs) -> i32 {
    let warn = |m: &str| eprintln!("acp: warning: {}", escape_text(m));
    if args.refresh {
        match refresh(true).await {
            Some(Ok(m)) => eprintln!("acp: {}", escape_text(&m)),
            Some(Err(e)) => {
                eprintln!(
                    "acp: cannot refresh the agent registry: {}",
                    escape_text(&e)
                );
                return exit::ERROR;
            }
            None => {
                eprintln!("acp: no cache directory (set HOME or XDG_CACHE_HOME)");
                return exit::ERROR;
            }
        }
    } else {
        refresh_if_stale(warn).await;
    }
    let reg = match load(args.registry.as_deref(), warn) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp: {}", escape_text(&e));
            return exit::ERROR;
        }
    };
    let platform = registry::this_platform();
    for a in &reg.agents {
        let launch = registry::launch(a, &platform);
        let vars = launch
            .as_ref()
            .map(|l| registry::review_env(&l.env, |_| false))
            .unwrap_or_default();
        let refused = registry::refusal(&a.id, &vars);
        if args.json {
            let (command, env, error) = match &launch {
                Ok(l) => (Some(&l.command), Some(&l.env), None),
                Err(e) => (None, None, Some(e)),
            };
            let line = serde_json::json!({
                "id": a.id, "name": a.name, "version": a.version, "description": a.description,
                "command": command, "env": env, "error": error, "refused": refused,
            });
            outln!("{}", json_line(&line));
        } else {
            // What runs, as a shell would read it: the entry's variables, then the command.
            let how = match &launch {
                Ok(l) => vars
                    .iter()
                    .map(|v| v.shown.clone())
                    .chain([acp_client::display::command_line(
                        &l.command[0],
                        &l.command[1..],
                    )])
                    .collect::<Vec<_>>()
                    .join(" "),
                Err(e) => format!("({})", acp_client::display::ensure_line(e)),
            };
            outln!(
                "{:<10} {} {} — {}\n           {how}",
                escape_line(&a.id),
                escape_line(&a.name),
                escape_line(&a.version),
                escape_line(&a.description),
            );
            if let Some(why) = refused {
                match env_args(&vars) {
                    Some(args) => {
                        outln!("           ⚠ {why}; acp chat --agent starts it only with {args}")
                    }
                    None => outln!("           ⚠ {why}; acp chat --agent does not start it"),
                }
            }
        }
    }
    if !args.json {
        outln!("\nUse one with: acp chat --agent ID (add the key it needs with --env NAME)");
    }
    exit::OK
}
