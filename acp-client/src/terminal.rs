//! The `terminal/create` question: what is checked before anyone is asked, and the text every
//! face shows (one line per field, every agent-supplied byte escaped, environment changes
//! named with their values).

use serde::{Deserialize, Serialize};

use crate::display::{command_line, escape_line, quote_arg};
use crate::env::{compare, valid_name, Change, EnvChange};

/// Output kept per terminal when the request names no `outputByteLimit` (and the most kept when
/// it names more): the newest bytes are kept, cut at a character boundary.
pub const MAX_OUTPUT_BYTES: usize = 16 << 20;
/// Terminals an agent may have unreleased at once; more are refused.
pub const MAX_TERMINALS: usize = 16;
/// `terminal/kill`: `SIGTERM` to the command's process group, then `SIGKILL` to the group
/// after this grace (background jobs that ignore `SIGTERM` included). Release and the end of
/// the session kill at once.
pub const KILL_GRACE_MS: u64 = 2000;

/// A command line longer than this (in characters) is flagged in the question: a very long
/// line wraps, and what scrolls away can hide what runs.
pub const LONG_COMMAND_CHARS: usize = 400;

/// The parts of a `terminal/create` request the question is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRequest {
    /// The program, as the agent sent it (run without a shell).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// As the agent sent it (absolute, or none for the session's directory).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Variables the agent sets for the command.
    #[serde(default)]
    pub env: Vec<EnvVariable>,
}

/// `EnvVariable` of the schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVariable {
    /// The variable's name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Why a `terminal/create` is refused before anyone is asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Invalid {
    /// An `env` name that is not `[A-Za-z_][A-Za-z0-9_]*`.
    EnvName {
        /// The name as the agent sent it (unescaped; [`Invalid::message`] escapes it).
        name: String,
    },
    /// A NUL byte in the command, an argument, the directory or an env value: it cannot be
    /// passed to a program as it is.
    Nul {
        /// Which field, in words for the message: `the command`, `an argument`, `the
        /// directory` or `the value of NAME`.
        field: String,
    },
    /// An empty command.
    EmptyCommand,
}

impl Invalid {
    /// The message of the error answered to the agent (one line).
    pub fn message(&self) -> String {
        match self {
            Invalid::EnvName { name } => format!(
                "invalid environment variable name \"{}\": names must match [A-Za-z_][A-Za-z0-9_]*",
                escape_line(name)
            ),
            Invalid::Nul { field } => format!("{field} contains a NUL byte"),
            Invalid::EmptyCommand => "the command is empty".to_string(),
        }
    }
}

/// What a face shows before running a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandQuestion {
    /// One line: ``run `git status` in /dir with PATH='/tmp/x:/usr/bin'``.
    pub title: String,
    /// Exactly what runs, quoted ([`command_line`]).
    pub command_line: String,
    /// The directory, escaped, when the agent named one.
    pub cwd: Option<String>,
    /// The variables the request adds or changes (same-valued ones left out), values shown.
    pub env: Vec<EnvChange>,
    /// One line each: things to look at twice (a changed `PATH`, a very long command line).
    pub warnings: Vec<String>,
}

/// Checks a request and builds its question. `base(name)` is the value the command would get
/// without the request's `env` (the user's environment as the face passes it on).
pub fn question(
    req: &CommandRequest,
    base: impl Fn(&str) -> Option<String>,
) -> Result<CommandQuestion, Invalid> {
    question_with(req, &base)
}

/// [`question`], one copy for every caller's `base`.
fn question_with(
    req: &CommandRequest,
    base: &dyn Fn(&str) -> Option<String>,
) -> Result<CommandQuestion, Invalid> {
    if req.command.is_empty() {
        return Err(Invalid::EmptyCommand);
    }
    let nul = |field: &str, s: &str| {
        if s.contains('\0') {
            Err(Invalid::Nul {
                field: field.to_string(),
            })
        } else {
            Ok(())
        }
    };
    nul("the command", &req.command)?;
    for a in &req.args {
        nul("an argument", a)?;
    }
    if let Some(cwd) = &req.cwd {
        nul("the directory", cwd)?;
    }
    for v in &req.env {
        if !valid_name(&v.name) {
            return Err(Invalid::EnvName {
                name: v.name.clone(),
            });
        }
        nul(&format!("the value of {}", v.name), &v.value)?;
    }

    let line = command_line(&req.command, &req.args);
    let cwd = req.cwd.as_deref().map(escape_line);
    let env: Vec<EnvChange> = compare(
        req.env.iter().map(|v| (v.name.as_str(), v.value.as_str())),
        base,
    )
    .into_iter()
    .filter(|c| c.change != Change::Same)
    .collect();

    let mut title = format!("run `{line}`");
    if let Some(dir) = &cwd {
        title.push_str(&format!(" in {dir}"));
    }
    if !env.is_empty() {
        let shown: Vec<String> = env
            .iter()
            .map(|c| format!("{}={}", c.name, quote_arg(&c.value)))
            .collect();
        title.push_str(&format!(" with {}", shown.join(" ")));
    }

    let mut warnings = Vec::new();
    for c in &env {
        if crate::env::changes_what_runs(&c.name) {
            let how = if c.change == Change::Changed {
                "changes"
            } else {
                "sets"
            };
            warnings.push(format!(
                "the agent {how} {}, which decides what programs or code run",
                c.name
            ));
        }
    }
    let chars = line.chars().count();
    if chars > LONG_COMMAND_CHARS {
        warnings.push(format!(
            "the command line is {chars} characters long: read all of it"
        ));
    }
    Ok(CommandQuestion {
        title,
        command_line: line,
        cwd,
        env,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(command: &str, args: &[&str]) -> CommandRequest {
        CommandRequest {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            ..CommandRequest::default()
        }
    }

    #[test]
    fn a_spoofed_question_stays_on_its_line() {
        let q = question(
            &req("sh", &["-c", "echo payload > x\n\nrun `ls -la`? 1) Run it"]),
            |_| None,
        )
        .unwrap();
        assert!(!q.title.contains('\n'));
        assert!(q
            .title
            .starts_with("run `sh -c $'echo payload > x\\n\\nrun"));
    }

    #[test]
    fn env_changes_are_shown_with_values_and_bad_names_refused() {
        let mut r = req("git", &["status"]);
        r.env = vec![
            EnvVariable {
                name: "PATH".into(),
                value: "/tmp/evil:/usr/bin".into(),
            },
            EnvVariable {
                name: "LANG".into(),
                value: "C".into(),
            },
        ];
        let base = |n: &str| match n {
            "PATH" => Some("/usr/bin".to_string()),
            "LANG" => Some("C".to_string()),
            _ => None,
        };
        let q = question(&r, base).unwrap();
        assert_eq!(q.title, "run `git status` with PATH=/tmp/evil:/usr/bin");
        assert_eq!(q.warnings.len(), 1, "{:?}", q.warnings);
        r.env.push(EnvVariable {
            name: "X\nrun `ls`".into(),
            value: String::new(),
        });
        let err = question(&r, base).unwrap_err();
        assert!(!err.message().contains('\n'), "{}", err.message());
    }
}
