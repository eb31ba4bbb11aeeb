//! [`EnvPolicy`]: which host environment variables a child inherits, plus explicit ones.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;

/// Host variables passed to children by [`EnvPolicy::default`]: what a program needs to find
/// tools, locate its config and print text correctly, and nothing that usually holds a secret.
/// A trailing `*` matches a prefix. The list is the shared client policy's
/// ([`acp_client::env::DEFAULT_ALLOWLIST`]), the same in the VS Code extension.
pub use acp_client::env::DEFAULT_ALLOWLIST as DEFAULT_ENV_ALLOWLIST;

/// Which host environment variables a child inherits, plus explicit variables.
///
/// **Default: allowlist ([`DEFAULT_ENV_ALLOWLIST`]), not inherit-all.** A host such as an editor
/// often carries API keys, cloud credentials and tokens in its environment; an agent (or a
/// command an agent runs in a terminal) should only see them if the user says so. Pass what an
/// agent needs explicitly with [`EnvPolicy::var`] / [`EnvPolicy::allow`], or opt into
/// [`EnvPolicy::inherit_all`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvPolicy {
    inherit: EnvInherit,
    vars: BTreeMap<OsString, OsString>,
}

/// The inheritance part of an [`EnvPolicy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvInherit {
    /// Every host variable.
    All,
    /// No host variable.
    Nothing,
    /// Host variables whose name matches one of these patterns (exact, or prefix with a
    /// trailing `*`).
    Only(Vec<String>),
}

impl Default for EnvPolicy {
    /// [`DEFAULT_ENV_ALLOWLIST`]; on Windows also what a Windows process needs to start
    /// ([`acp_client::windows::WINDOWS_ALLOWLIST`]: `SystemRoot`, `ComSpec`, `PATHEXT`, ...).
    fn default() -> Self {
        #[cfg(windows)]
        let windows = acp_client::windows::WINDOWS_ALLOWLIST.iter().copied();
        #[cfg(not(windows))]
        let windows = std::iter::empty();
        EnvPolicy::allowlist(DEFAULT_ENV_ALLOWLIST.iter().copied().chain(windows))
    }
}

impl EnvPolicy {
    /// Inherit the whole host environment (explicit variables still override).
    pub fn inherit_all() -> Self {
        EnvPolicy {
            inherit: EnvInherit::All,
            vars: BTreeMap::new(),
        }
    }

    /// Inherit nothing: the child sees only explicit variables.
    pub fn empty() -> Self {
        EnvPolicy {
            inherit: EnvInherit::Nothing,
            vars: BTreeMap::new(),
        }
    }

    /// Inherit only host variables matching `patterns` (exact name, or prefix with trailing `*`).
    pub fn allowlist<I, S>(patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EnvPolicy {
            inherit: EnvInherit::Only(patterns.into_iter().map(Into::into).collect()),
            vars: BTreeMap::new(),
        }
    }

    /// Also inherit host variables matching `pattern`. Turns [`EnvInherit::Nothing`] into an
    /// allowlist; a no-op under [`EnvInherit::All`].
    pub fn allow(mut self, pattern: impl Into<String>) -> Self {
        match &mut self.inherit {
            EnvInherit::All => {}
            EnvInherit::Nothing => self.inherit = EnvInherit::Only(vec![pattern.into()]),
            EnvInherit::Only(list) => list.push(pattern.into()),
        }
        self
    }

    /// Set `name=value` in the child, overriding any inherited value.
    pub fn var(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Set `name=value` in place (see [`EnvPolicy::var`]).
    pub fn set_var(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        self.vars.insert(name.into(), value.into());
    }

    /// The inheritance rule.
    pub fn inherit(&self) -> &EnvInherit {
        &self.inherit
    }

    /// The explicit variables.
    pub fn vars(&self) -> &BTreeMap<OsString, OsString> {
        &self.vars
    }

    /// The child's complete environment given a host environment. Pure: tests pass a fake host.
    pub fn resolve<I>(&self, host: I) -> BTreeMap<OsString, OsString>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut out = BTreeMap::new();
        for (name, value) in host {
            let keep = match &self.inherit {
                EnvInherit::All => true,
                EnvInherit::Nothing => false,
                EnvInherit::Only(patterns) => {
                    patterns.iter().any(|p| env_pattern_matches(p, &name))
                }
            };
            if keep {
                out.insert(name, value);
            }
        }
        for (name, value) in &self.vars {
            out.insert(name.clone(), value.clone());
        }
        out
    }

    /// The child's complete environment given this process's environment.
    pub fn resolve_from_host(&self) -> BTreeMap<OsString, OsString> {
        self.resolve(std::env::vars_os())
    }
}

/// Windows: names compare without regard to ASCII case (`Path` is `PATH`).
#[cfg(not(unix))]
fn env_pattern_matches(pattern: &str, name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let name = name.to_ascii_uppercase();
    let pattern = pattern.to_ascii_uppercase();
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

#[cfg(unix)]
fn env_pattern_matches(pattern: &str, name: &OsStr) -> bool {
    let name = name.as_bytes();
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix.as_bytes()),
        None => name == pattern.as_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_policy_resolution() {
        let host = || {
            vec![
                (OsString::from("PATH"), OsString::from("/bin")),
                (OsString::from("HOME"), OsString::from("/home/u")),
                (OsString::from("LC_ALL"), OsString::from("C")),
                (
                    OsString::from("AWS_SECRET_ACCESS_KEY"),
                    OsString::from("s3cr3t"),
                ),
                (OsString::from("OPENAI_API_KEY"), OsString::from("sk-x")),
            ]
        };
        let d = EnvPolicy::default().resolve(host());
        assert_eq!(
            d.keys().map(|k| k.to_str().unwrap()).collect::<Vec<_>>(),
            ["HOME", "LC_ALL", "PATH"]
        );

        let e = EnvPolicy::empty().var("X", "1").resolve(host());
        assert_eq!(e.len(), 1);
        assert_eq!(e[OsStr::new("X")], "1");

        let a = EnvPolicy::inherit_all().var("PATH", "/opt").resolve(host());
        assert_eq!(a.len(), 5);
        assert_eq!(a[OsStr::new("PATH")], "/opt");

        let l = EnvPolicy::empty().allow("OPENAI_*").resolve(host());
        assert_eq!(l.keys().collect::<Vec<_>>(), [OsStr::new("OPENAI_API_KEY")]);
        // `allow` under inherit-all is a no-op.
        assert_eq!(
            EnvPolicy::inherit_all().allow("X").inherit(),
            &EnvInherit::All
        );
    }
}
