//! Which file writes need the user's question, whatever the agent asked before.
//!
//! An agent that may write files inside the session's directory may otherwise change what
//! runs without anyone seeing a command: `core.fsmonitor` in `.git/config` or a hook in
//! `.git/hooks/` runs at the next `git status` (VS Code's git runs it by itself), `.vscode/
//! tasks.json` and `settings.json` choose programs the editor starts, `.envrc` runs on `cd`,
//! a shell's rc file at the next shell, and an executable file whatever calls it. Such a
//! write is [`WriteClass::Ask`]: the face shows the path, why, and the change (a diff), and
//! writes only on the user's yes; where no one can answer, it is refused. Ordinary source
//! files stay [`WriteClass::Ordinary`]: editing them is the agent's job, and building or
//! running them is the user's act.
//!
//! The client's own files are such files too: its cache of the agent registry decides what
//! `acp chat --agent NAME` and the extension's agent picker run, and its state (session
//! records, prompt history, tokens) is what it shows and resumes. Where they are depends on the
//! environment (`XDG_*`, `HOME`, the editor's storage), so the face names them ([`OwnDirs`]);
//! their usual places (`~/.cache/acp`, `~/.local/state/acp`, `~/.config/acp`) are known here
//! too. So are other coding agents' configuration files (`.claude/`, `.mcp.json`, `.gemini/`,
//! `.codex/`, `opencode.json`…), whose hooks, MCP servers and commands those agents run.
//!
//! Faces classify the path the write will really reach (symlinks resolved, absolute), so a
//! link named `notes` pointing at `.git` is caught. Matching ignores ASCII case and, per
//! component, trailing dots and spaces and anything from a `:` on (case-insensitive file
//! systems and Windows' `.git.` / `.git::$INDEX_ALLOCATION` reach the same directory); a
//! false match only costs a question. `tests/client/writes.json` is the case table.
//!
//! Not covered (docs/security.md): code that builds or tests run by the user's act
//! (`build.rs`, `package.json` scripts, a Makefile) and language servers that execute project
//! code on open.

use serde::{Deserialize, Serialize};

/// What the face knows of the file before the write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileFacts {
    /// The file exists now.
    #[serde(default)]
    pub exists: bool,
    /// It exists with an execute bit set (any of user, group, other).
    #[serde(default)]
    pub executable: bool,
}

/// Why a write needs the user's question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sensitive {
    /// Inside a git directory (`.git/`, a bare `repo.git/`), or `.gitmodules`, `.gitconfig`.
    Git,
    /// Editor settings and tasks (`.vscode/`, `.idea/`, `*.code-workspace`, vim/emacs files).
    Editor,
    /// Shell start-up files and what a login session runs or puts on `PATH`.
    Shell,
    /// Files that set the environment of commands (`.envrc`, `.env`, mise).
    Environment,
    /// Tool configuration that runs programs (git hooks managers, cargo, npm, docker, kube,
    /// aws credential processes, ssh).
    Tool,
    /// The file is executable.
    Executable,
    /// Under one of the client's own directories ([`OwnDirs`]: its registry cache, session
    /// records, history, tokens), which decide what it runs and shows.
    ClientFiles,
    /// Another coding agent's configuration (`.claude/`, `.mcp.json`, `.gemini/`, `.qwen/`,
    /// `.codex/`, `.cursor/`, `opencode.json`, `.opencode/`…): hooks, MCP servers and commands
    /// that agent runs.
    AgentConfig,
}

impl Sensitive {
    /// Why, in words for the question.
    pub fn describe(self) -> &'static str {
        match self {
            Sensitive::Git => {
                "git runs what its directory configures (hooks, core.fsmonitor, filters)"
            }
            Sensitive::Editor => "the editor runs tasks and programs these settings name",
            Sensitive::Shell => "shells and login sessions run this file",
            Sensitive::Environment => "tools load this file into the environment of commands",
            Sensitive::Tool => "tools run programs this configuration names",
            Sensitive::Executable => "the file is executable",
            Sensitive::ClientFiles => {
                "the client's own files (its agent registry, sessions, history) decide what it runs"
            }
            Sensitive::AgentConfig => {
                "coding agents run the hooks, MCP servers and commands this configuration names"
            }
        }
    }
}

/// The decision for one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "class")]
pub enum WriteClass {
    /// Write it (within the face's other rules: the roots, the size limit).
    Ordinary,
    /// Ask the user, showing the path, [`Sensitive::describe`] and a diff; refuse when no one
    /// can answer.
    Ask {
        /// Why the write needs the question.
        reason: Sensitive,
    },
}

/// Directory names: a path with one of them as a component is sensitive.
const DIRS: &[(&str, Sensitive)] = &[
    (".git", Sensitive::Git),
    (".vscode", Sensitive::Editor),
    (".vscode-server", Sensitive::Editor),
    (".idea", Sensitive::Editor),
    (".devcontainer", Sensitive::Editor),
    (".theia", Sensitive::Editor),
    (".zed", Sensitive::Editor),
    (".fleet", Sensitive::Editor),
    (".vim", Sensitive::Editor),
    (".emacs.d", Sensitive::Editor),
    (".husky", Sensitive::Tool),
    (".githooks", Sensitive::Tool),
    (".cargo", Sensitive::Tool),
    (".ssh", Sensitive::Tool),
    (".gnupg", Sensitive::Tool),
    (".docker", Sensitive::Tool),
    (".kube", Sensitive::Tool),
    (".aws", Sensitive::Tool),
    (".mise", Sensitive::Environment),
    (".direnv", Sensitive::Environment),
    (".claude", Sensitive::AgentConfig),
    (".gemini", Sensitive::AgentConfig),
    (".qwen", Sensitive::AgentConfig),
    (".codex", Sensitive::AgentConfig),
    (".cursor", Sensitive::AgentConfig),
    (".opencode", Sensitive::AgentConfig),
    (".continue", Sensitive::AgentConfig),
    (".kiro", Sensitive::AgentConfig),
];

/// File names, wherever they are.
const FILES: &[(&str, Sensitive)] = &[
    (".gitmodules", Sensitive::Git),
    (".gitconfig", Sensitive::Git),
    (".exrc", Sensitive::Editor),
    (".vimrc", Sensitive::Editor),
    ("_vimrc", Sensitive::Editor),
    (".gvimrc", Sensitive::Editor),
    (".nvimrc", Sensitive::Editor),
    (".nvim.lua", Sensitive::Editor),
    (".emacs", Sensitive::Editor),
    (".dir-locals.el", Sensitive::Editor),
    (".dir-locals-2.el", Sensitive::Editor),
    (".bashrc", Sensitive::Shell),
    (".bash_profile", Sensitive::Shell),
    (".bash_login", Sensitive::Shell),
    (".bash_logout", Sensitive::Shell),
    (".profile", Sensitive::Shell),
    (".zshrc", Sensitive::Shell),
    (".zshenv", Sensitive::Shell),
    (".zprofile", Sensitive::Shell),
    (".zlogin", Sensitive::Shell),
    (".zlogout", Sensitive::Shell),
    (".kshrc", Sensitive::Shell),
    (".mkshrc", Sensitive::Shell),
    (".cshrc", Sensitive::Shell),
    (".tcshrc", Sensitive::Shell),
    (".login", Sensitive::Shell),
    (".logout", Sensitive::Shell),
    (".inputrc", Sensitive::Shell),
    (".xprofile", Sensitive::Shell),
    (".xinitrc", Sensitive::Shell),
    (".xsession", Sensitive::Shell),
    (".xsessionrc", Sensitive::Shell),
    (".pam_environment", Sensitive::Shell),
    (".envrc", Sensitive::Environment),
    (".env", Sensitive::Environment),
    (".mise.toml", Sensitive::Environment),
    ("mise.toml", Sensitive::Environment),
    (".tool-versions", Sensitive::Environment),
    (".npmrc", Sensitive::Tool),
    (".yarnrc", Sensitive::Tool),
    (".yarnrc.yml", Sensitive::Tool),
    (".pnpmfile.cjs", Sensitive::Tool),
    (".pre-commit-config.yaml", Sensitive::Tool),
    ("lefthook.yml", Sensitive::Tool),
    (".lefthook.yml", Sensitive::Tool),
    (".netrc", Sensitive::Tool),
    (".mcp.json", Sensitive::AgentConfig),
    (".claude.json", Sensitive::AgentConfig),
    ("opencode.json", Sensitive::AgentConfig),
    ("opencode.jsonc", Sensitive::AgentConfig),
];

/// Consecutive directory names (under a home directory, usually).
const DIR_PAIRS: &[(&str, &str, Sensitive)] = &[
    (".config", "git", Sensitive::Git),
    (".config", "fish", Sensitive::Shell),
    (".config", "environment.d", Sensitive::Shell),
    (".config", "autostart", Sensitive::Shell),
    (".config", "systemd", Sensitive::Shell),
    (".local", "bin", Sensitive::Shell),
    (".config", "nvim", Sensitive::Editor),
    (".config", "code", Sensitive::Editor),
    (".config", "code - oss", Sensitive::Editor),
    (".config", "vscodium", Sensitive::Editor),
    (".config", "zed", Sensitive::Editor),
    (".config", "mise", Sensitive::Environment),
    (".config", "direnv", Sensitive::Environment),
    (".config", "opencode", Sensitive::AgentConfig),
    (".cache", "acp", Sensitive::ClientFiles),
    (".config", "acp", Sensitive::ClientFiles),
];

/// The client's own directories where the environment does not move them
/// (`~/.local/state/acp`; `~/.cache/acp` and `~/.config/acp` are [`DIR_PAIRS`]).
const OWN_DEFAULTS: &[&[&str]] = &[&[".local", "state", "acp"]];

/// The client's own directories, as the face finds them (`$XDG_STATE_HOME/acp`,
/// `$XDG_CACHE_HOME/acp`, the editor's storage for the extension…): a write under one of them
/// is [`Sensitive::ClientFiles`]. Give real paths (symbolic links resolved), absolute; a face
/// that is not sure gives both forms. Compared per component like every other rule (ASCII case,
/// trailing dots and spaces, `:` streams).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnDirs {
    dirs: Vec<Vec<String>>,
}

impl OwnDirs {
    /// No directory of the face's own beyond the usual places (`~/.local/state/acp`,
    /// `~/.cache/acp`, `~/.config/acp`).
    pub fn none() -> OwnDirs {
        OwnDirs::default()
    }

    /// These directories (empty and relative ones are left out: they would match everything or
    /// depend on the session's directory).
    pub fn new<I, S>(dirs: I) -> OwnDirs
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let dirs = dirs
            .into_iter()
            .filter(|d| {
                let d = d.as_ref();
                d.starts_with(['/', '\\']) || d.as_bytes().get(1) == Some(&b':')
            })
            .map(|d| components(d.as_ref()))
            .filter(|c| !c.is_empty())
            .collect();
        OwnDirs { dirs }
    }

    fn contains(&self, parts: &[String]) -> bool {
        self.dirs.iter().any(|d| parts.starts_with(d))
    }
}

/// A path component as the file systems that matter would compare it.
fn normalize(component: &str) -> String {
    let lower = component.to_ascii_lowercase();
    let cut = lower.split(':').next().unwrap_or("");
    let trimmed = cut.trim_end_matches(['.', ' ']);
    if trimmed.is_empty() {
        lower
    } else {
        trimmed.to_string()
    }
}

/// A path's components as they are compared.
fn components(path: &str) -> Vec<String> {
    path.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .map(normalize)
        .collect()
}

/// Classifies a write to `path` (the real path the write reaches: absolute, or relative to
/// the session's directory; `/` or `\` separated). `own` are the face's own directories.
pub fn classify(path: &str, facts: FileFacts, own: &OwnDirs) -> WriteClass {
    let parts = components(path);
    let mine = own.contains(&parts)
        || OWN_DEFAULTS.iter().any(|seq| {
            parts
                .windows(seq.len())
                .any(|w| w.iter().zip(seq.iter()).all(|(a, b)| a == b))
        });
    let found = mine
        .then_some(Sensitive::ClientFiles)
        .or_else(|| {
            parts
                .iter()
                .enumerate()
                .find_map(|(i, part)| {
                    let dir = DIRS.iter().find(|(d, _)| d == part).map(|(_, s)| *s);
                    // A bare repository (`repo.git/`) is a git directory too.
                    let bare =
                        (i + 1 < parts.len() && part.ends_with(".git")).then_some(Sensitive::Git);
                    let pair = parts.get(i + 1).and_then(|next| {
                        DIR_PAIRS
                            .iter()
                            .find(|(a, b, _)| a == part && b == next)
                            .map(|(_, _, s)| *s)
                    });
                    dir.or(bare).or(pair)
                })
                .or_else(|| {
                    let name = parts.last()?;
                    FILES
                        .iter()
                        .find(|(f, _)| f == name)
                        .map(|(_, s)| *s)
                        .or_else(|| {
                            name.ends_with(".code-workspace")
                                .then_some(Sensitive::Editor)
                        })
                })
        })
        .or_else(|| facts.executable.then_some(Sensitive::Executable));
    match found {
        Some(reason) => WriteClass::Ask { reason },
        None => WriteClass::Ordinary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(path: &str) -> WriteClass {
        classify(path, FileFacts::default(), &OwnDirs::none())
    }

    #[test]
    fn the_reproduced_cases_ask() {
        for p in [
            "/repo/.git/config",
            "/repo/.git/hooks/pre-commit",
            ".vscode/tasks.json",
            "/home/u/.bashrc",
            ".envrc",
            "/srv/project.git/hooks/update",
            "/repo/.GIT/config",
            "C:\\repo\\.git.\\config",
            "/repo/.git::$INDEX_ALLOCATION/config",
            "/home/u/.config/fish/config.fish",
            "a/b.code-workspace",
        ] {
            assert!(matches!(class(p), WriteClass::Ask { .. }), "{p}");
        }
    }

    #[test]
    fn the_clients_own_files_and_other_agents_configuration_ask() {
        let own = OwnDirs::new(["/data/xdg-cache/acp", "relative/acp", ""]);
        let ask = |p: &str, reason| {
            assert_eq!(
                classify(p, FileFacts::default(), &own),
                WriteClass::Ask { reason },
                "{p}"
            )
        };
        ask("/data/xdg-cache/acp/registry.json", Sensitive::ClientFiles);
        ask("/DATA/xdg-cache/acp./registry.json", Sensitive::ClientFiles);
        ask("/home/u/.cache/acp/registry.json", Sensitive::ClientFiles);
        ask("/home/u/.local/state/acp/history", Sensitive::ClientFiles);
        ask("/home/u/.config/acp/x", Sensitive::ClientFiles);
        ask("/repo/.claude/settings.local.json", Sensitive::AgentConfig);
        ask("/repo/.mcp.json", Sensitive::AgentConfig);
        ask("/repo/opencode.json", Sensitive::AgentConfig);
        ask("/home/u/.codex/config.toml", Sensitive::AgentConfig);
        for p in [
            "/data/xdg-cache/acpx/registry.json",
            "/data/xdg-cache/registry.json",
            "relative/acp/x",
            "/repo/.local/acp/x",
        ] {
            assert_eq!(
                classify(p, FileFacts::default(), &own),
                WriteClass::Ordinary,
                "{p}"
            );
        }
    }

    #[test]
    fn ordinary_files_do_not() {
        for p in [
            "/repo/src/main.rs",
            "/repo/.github/workflows/ci.yml",
            "/repo/gitignore.md",
            "/repo/.gitignore",
            "/repo/my.git", // a file, not a directory
            "/home/u/.config/other/x",
            "/repo/.env.example",
        ] {
            assert_eq!(class(p), WriteClass::Ordinary, "{p}");
        }
        let exe = FileFacts {
            exists: true,
            executable: true,
        };
        assert_eq!(
            classify("/repo/run.sh", exe, &OwnDirs::none()),
            WriteClass::Ask {
                reason: Sensitive::Executable
            }
        );
    }
}
