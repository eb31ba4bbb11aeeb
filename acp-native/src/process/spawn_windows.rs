//! Windows: finding a program and preparing its start with `acp_client::windows`'s rules
//! (`PATH` + `PATHEXT`, never the working directory; an npm `.cmd` shim run as `node SCRIPT`
//! without a shell; another batch file through `cmd.exe` with its arguments quoted for it).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use acp_client::windows::{find_program, plan, Facts, SHIM_READ_LIMIT};

use super::spawn::{PreparedCommand, SpawnError};

/// Finds the file for `program` as Windows would, but never in the working directory:
/// a program naming a directory (`C:\x\agent`, `.\agent`, `sub\agent`) is that file, relative
/// ones taken from `cwd`; a bare name is looked up in each absolute directory of `search_path`
/// (`;`-separated), with each extension of the host's `PATHEXT`.
pub fn resolve_executable(
    program: &OsStr,
    search_path: Option<&OsStr>,
    cwd: Option<&Path>,
) -> Result<PathBuf, SpawnError> {
    let command = program.to_string_lossy().into_owned();
    let invalid = |reason| SpawnError::InvalidCommand {
        command: command.clone(),
        reason,
    };
    if program.is_empty() {
        return Err(invalid("empty command"));
    }
    let Some(name) = program.to_str() else {
        return Err(invalid("not valid Unicode"));
    };
    if name.contains('\0') {
        return Err(invalid("contains a NUL byte"));
    }
    let relative_dir = name.contains(['\\', '/']) && !Path::new(name).is_absolute();
    let name = match (relative_dir, cwd) {
        (true, Some(dir)) => dir.join(name).to_string_lossy().into_owned(),
        _ => name.to_string(),
    };
    let path = search_path.and_then(OsStr::to_str).unwrap_or("");
    let pathext = std::env::var("PATHEXT").ok();
    let is_file = |p: &str| std::fs::metadata(p).is_ok_and(|m| m.is_file());
    find_program(&name, path, pathext.as_deref(), is_file)
        .map(PathBuf::from)
        .ok_or_else(|| SpawnError::CommandNotFound {
            command,
            search_path: search_path.map(OsStr::to_os_string),
        })
}

/// The prepared start of `program` on Windows (see the module docs); the child is put in a job
/// object of its own when it is spawned (`super::orphans::spawn`).
pub(crate) fn prepare_command(
    program: &OsStr,
    args: &[OsString],
    env: &BTreeMap<OsString, OsString>,
    cwd: Option<&Path>,
    search_path: Option<&OsStr>,
) -> Result<PreparedCommand, SpawnError> {
    if let Some(dir) = cwd {
        if let Err(reason) = std::fs::metadata(dir)
            .map_err(|e| e.to_string())
            .and_then(|m| {
                if m.is_dir() {
                    Ok(())
                } else {
                    Err("is not a directory".to_string())
                }
            })
        {
            return Err(SpawnError::InvalidCwd {
                cwd: dir.to_path_buf(),
                reason,
            });
        }
    }
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k.to_str().is_some_and(|k| k.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.clone())
    };
    let search = search_path.map(OsStr::to_os_string).or_else(|| var("PATH"));
    let exe = resolve_executable(program, search.as_deref(), cwd)?;
    let command_name = program.to_string_lossy().into_owned();
    let file = exe.to_string_lossy().into_owned();
    let batch =
        file.to_ascii_lowercase().ends_with(".cmd") || file.to_ascii_lowercase().ends_with(".bat");
    let text = batch
        .then(|| std::fs::read(&exe).ok())
        .flatten()
        .filter(|b| b.len() <= SHIM_READ_LIMIT)
        .and_then(|b| String::from_utf8(b).ok());
    let node_beside = exe.with_file_name("node.exe");
    let node = if node_beside.is_file() {
        Some(node_beside.to_string_lossy().into_owned())
    } else {
        resolve_executable(OsStr::new("node"), search.as_deref(), None)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    };
    let facts = Facts {
        file,
        text,
        node,
        comspec: var("ComSpec").and_then(|c| c.into_string().ok()),
    };
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or(SpawnError::InvalidCommand {
            command: command_name.clone(),
            reason: "an argument is not valid Unicode",
        })?;
    let spawn = plan(&facts, &args).map_err(|reason| SpawnError::NotExecutable {
        command: command_name.clone(),
        path: exe.clone(),
        reason,
    })?;
    let mut command = tokio::process::Command::new(&spawn.program);
    if spawn.verbatim {
        for arg in &spawn.args {
            command.raw_arg(arg);
        }
    } else {
        command.args(&spawn.args);
    }
    command.env_clear().envs(env).kill_on_drop(true);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    Ok(PreparedCommand {
        command,
        display: command_name,
    })
}
