//! The environment an agent and its commands get: the default allowlist of host variables,
//! which names are valid, and what an agent-supplied `env` changes from the user's.

use serde::{Deserialize, Serialize};

/// Host variables passed to agents and their commands by default: what a program needs to
/// find tools, locate its config and print text correctly, and nothing that usually holds a
/// secret. A trailing `*` matches a prefix. More only when the user says so (`--env`,
/// `acp.env.passthrough`, inherit-all).
pub const DEFAULT_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TMPDIR",
    "TZ",
    "XDG_*",
];

/// Variables that decide which programs or code a process runs: the search path, the dynamic
/// loader's preloads and paths, shell start-up files, and the interpreters' and package
/// managers' options, load paths and package sources (`npx` and `uvx` fetch the agent with
/// them). A trailing `*` matches a prefix. One list for every face: a `terminal/create` that sets
/// one gets a warning ([`crate::terminal`]); a registry entry that sets one is refused unless the
/// user gives that variable themselves ([`crate::registry::review_env`]).
pub const RUNS_CODE: &[&str] = &[
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "LD_*",
    "DYLD_*",
    "GCONV_PATH",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "PROMPT_COMMAND",
    "PS4",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
    "PYTHON*",
    "NODE_OPTIONS",
    "NODE_PATH",
    "ELECTRON_RUN_AS_NODE",
    "npm_config_*",
    "NPM_CONFIG_*",
    "UV_*",
    "PIP_*",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "CLASSPATH",
    "DOTNET_STARTUP_HOOKS",
    "LUA_INIT*",
    "LUA_PATH*",
    "LUA_CPATH*",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "GIT_*",
    "EDITOR",
    "VISUAL",
    "PAGER",
];

/// Whether `name` is in [`RUNS_CODE`].
pub fn changes_what_runs(name: &str) -> bool {
    RUNS_CODE.iter().any(|p| matches_pattern(p, name))
}

/// Whether `name` matches `pattern` (exact, or a prefix when the pattern ends in `*`).
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Whether `name` is in the default allowlist.
pub fn in_default_allowlist(name: &str) -> bool {
    DEFAULT_ALLOWLIST.iter().any(|p| matches_pattern(p, name))
}

/// A portable variable name: `[A-Za-z_][A-Za-z0-9_]*`. Anything else (`=`, NUL, a newline, an
/// empty name) is refused: it cannot be set faithfully and can hide what a question shows.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// How an agent-supplied variable relates to what the command would get without it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Not set otherwise.
    Added,
    /// Set otherwise, to another value (shown: an agent-set `PATH` decides what runs).
    Changed,
    /// Set otherwise, to the same value.
    Same,
}

/// One variable of an agent-supplied `env`, compared with the user's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvChange {
    /// The variable's name.
    pub name: String,
    /// The value the agent asks for.
    pub value: String,
    /// How it differs from what the command gets otherwise.
    pub change: Change,
}

/// Compares `requested` (name, value) with the environment the command gets otherwise
/// (`base(name)`). Names must be [`valid_name`]s (checked by the caller first).
pub fn compare<'a>(
    requested: impl IntoIterator<Item = (&'a str, &'a str)>,
    base: impl Fn(&str) -> Option<String>,
) -> Vec<EnvChange> {
    requested
        .into_iter()
        .map(|(name, value)| {
            let change = match base(name) {
                None => Change::Added,
                Some(v) if v == value => Change::Same,
                Some(_) => Change::Changed,
            };
            EnvChange {
                name: name.to_string(),
                value: value.to_string(),
                change,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["PATH", "_x", "a1_B"] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "1A", "A-B", "A=B", "A\nB", "A B", "É", "A\0"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn allowlist_prefixes() {
        assert!(in_default_allowlist("LC_ALL"));
        assert!(in_default_allowlist("XDG_CONFIG_HOME"));
        assert!(!in_default_allowlist("OPENAI_API_KEY"));
        assert!(!in_default_allowlist("PATHX"));
    }

    #[test]
    fn variables_that_change_what_runs() {
        for name in [
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "PATH",
            "PYTHONSTARTUP",
            "npm_config_registry",
            "BASH_ENV",
            "ENV",
            "PERL5OPT",
            "RUBYOPT",
            "JAVA_TOOL_OPTIONS",
            "GIT_SSH_COMMAND",
        ] {
            assert!(changes_what_runs(name), "{name}");
        }
        for name in ["OPENAI_API_KEY", "LANG", "ENVIRONMENT", "PATHX", "NO_COLOR"] {
            assert!(!changes_what_runs(name), "{name}");
        }
    }
}
