//! Starting a child without a shell: explicit executable resolution ([`resolve_executable`]),
//! the prepared command shared by agents and terminals, and [`SpawnError`].

#[cfg(unix)]
use std::collections::BTreeMap;
#[cfg(unix)]
use std::ffi::OsStr;
use std::ffi::OsString;
use std::fmt;
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;

/// Why a child could not be started. The `Display` names the command and says what to fix.
#[derive(Debug)]
pub enum SpawnError {
    /// A bare command name was not found in any `PATH` directory.
    CommandNotFound {
        /// The command as given.
        command: String,
        /// The `PATH` that was searched (`None`: there was none).
        search_path: Option<OsString>,
    },
    /// The command names a path (or a `PATH` match) that exists but cannot be executed.
    NotExecutable {
        /// The command as given.
        command: String,
        /// The file that was found.
        path: PathBuf,
        /// Why it cannot be run ("is a directory", "has no execute permission", ...).
        reason: String,
    },
    /// The working directory is unusable.
    InvalidCwd {
        /// The directory.
        cwd: PathBuf,
        /// Why.
        reason: String,
    },
    /// The command is empty or contains a NUL byte.
    InvalidCommand {
        /// The command as given.
        command: String,
        /// Why.
        reason: &'static str,
    },
    /// `fork`/`exec` or pipe setup failed.
    Io {
        /// The command as given.
        command: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::CommandNotFound {
                command,
                search_path,
            } => {
                write!(f, "command not found: `{command}`")?;
                match search_path {
                    Some(p) if !p.is_empty() => {
                        write!(f, " (searched PATH={})", p.to_string_lossy())?
                    }
                    _ => write!(f, " (no PATH to search; give an absolute path)")?,
                }
                if command.contains(char::is_whitespace) {
                    write!(
                        f,
                        "; commands run without a shell, pass arguments separately"
                    )?;
                }
                Ok(())
            }
            SpawnError::NotExecutable {
                command,
                path,
                reason,
            } => {
                write!(f, "cannot execute `{command}`: {} {reason}", path.display())
            }
            SpawnError::InvalidCwd { cwd, reason } => {
                write!(f, "invalid working directory {}: {reason}", cwd.display())
            }
            SpawnError::InvalidCommand { command, reason } => {
                write!(f, "invalid command `{command}`: {reason}")
            }
            SpawnError::Io { command, source } => {
                write!(f, "failed to start `{command}`: {source}")
            }
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(unix)]
/// Finds the executable for `program`, without a shell.
///
/// * A program containing `/` is a path: absolute paths are used as is, relative ones are taken
///   relative to `cwd` (the child's working directory; this process's if `None`).
/// * Otherwise each directory of `search_path` (a `PATH`-style, `:`-separated list) is tried in
///   order. Empty entries (which POSIX reads as "current directory") are skipped on purpose.
///
/// The result must be a regular file (after following symlinks) with an execute bit; otherwise
/// [`SpawnError::NotExecutable`] (for a path) or [`SpawnError::CommandNotFound`] (for a name,
/// when no `PATH` entry qualifies).
pub fn resolve_executable(
    program: &OsStr,
    search_path: Option<&OsStr>,
    cwd: Option<&Path>,
) -> Result<PathBuf, SpawnError> {
    let command = program.to_string_lossy().into_owned();
    if program.is_empty() {
        return Err(SpawnError::InvalidCommand {
            command,
            reason: "empty command",
        });
    }
    if program.as_bytes().contains(&0) {
        return Err(SpawnError::InvalidCommand {
            command,
            reason: "contains a NUL byte",
        });
    }
    if program.as_bytes().contains(&b'/') {
        let path = Path::new(program);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            let base = match cwd {
                Some(c) => c.to_path_buf(),
                None => std::env::current_dir().map_err(|source| SpawnError::Io {
                    command: command.clone(),
                    source,
                })?,
            };
            base.join(path)
        };
        return match check_executable(&full) {
            Ok(()) => Ok(full),
            Err(reason) => Err(SpawnError::NotExecutable {
                command,
                path: full,
                reason,
            }),
        };
    }
    if let Some(search) = search_path {
        for dir in std::env::split_paths(search) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let candidate = dir.join(program);
            if check_executable(&candidate).is_ok() {
                return Ok(candidate);
            }
        }
    }
    Err(SpawnError::CommandNotFound {
        command,
        search_path: search_path.map(OsStr::to_os_string),
    })
}

#[cfg(unix)]
fn check_executable(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err("does not exist".into()),
        Err(e) => Err(format!("cannot be inspected: {e}")),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(m) if !m.is_file() => Err("is not a regular file".into()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("has no execute permission".into()),
        Ok(_) => Ok(()),
    }
}

/// A fully prepared (not yet spawned) child: resolved executable, exact environment, cwd,
/// own process group, kill-on-drop. Shared by agents and terminals.
pub(crate) struct PreparedCommand {
    pub(crate) command: tokio::process::Command,
    pub(crate) display: String,
}

#[cfg(unix)]
pub(crate) fn prepare_command(
    program: &OsStr,
    args: &[OsString],
    env: &BTreeMap<OsString, OsString>,
    cwd: Option<&Path>,
    search_path: Option<&OsStr>,
) -> Result<PreparedCommand, SpawnError> {
    if let Some(dir) = cwd {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SpawnError::InvalidCwd {
                    cwd: dir.to_path_buf(),
                    reason: "is not a directory".into(),
                })
            }
            Err(e) => {
                return Err(SpawnError::InvalidCwd {
                    cwd: dir.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        }
    }
    let search = search_path
        .map(OsStr::to_os_string)
        .or_else(|| env.get(OsStr::new("PATH")).cloned());
    let exe = resolve_executable(program, search.as_deref(), cwd)?;
    let mut command = tokio::process::Command::new(&exe);
    command
        .args(args)
        .env_clear()
        .envs(env)
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    // argv[0] is what the user typed, as a shell would do.
    command.arg0(program);
    Ok(PreparedCommand {
        command,
        display: program.to_string_lossy().into_owned(),
    })
}
