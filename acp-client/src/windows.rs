//! How a face starts an agent (or a terminal command) on Windows, decided once: which file a
//! command name means, how that file is run without handing agent-controlled text to a shell
//! unescaped, and how two Windows paths compare.
//!
//! Agents are mostly launched through npm's `.cmd` shims (`npx.cmd`, `claude-agent-acp.cmd`,
//! `gemini.cmd`). Since Node's 2024 security fix (CVE-2024-27980) `child_process.spawn` refuses a
//! `.cmd` or `.bat` without `shell: true`, and `shell: true` hands the whole line to `cmd.exe`,
//! where `&`, `|`, `%VAR%` and `^` in an argument run or expand things. The rules here:
//!
//! 1. [`find_program`]: a bare name is looked up in `PATH` with `PATHEXT`, **never in the working
//!    directory** (a workspace could plant an `npx.cmd` there; Windows' own search would take it
//!    first). A name with a directory is taken as given (with `PATHEXT` tried when it has no
//!    extension).
//! 2. [`plan`]: an `.exe` or `.com` is started directly (Node quotes its arguments by the
//!    C runtime's rules). An npm shim (`.cmd` whose text is npm's `cmd-shim` template) is
//!    resolved to the script it starts, run by `node` directly: no shell at all. Any other
//!    `.cmd` / `.bat` runs through `cmd.exe /e:ON /v:OFF /d /c` with each argument quoted by
//!    [`batch_arg`] (Rust's standard library rule since CVE-2024-24576: quotes doubled, `%`
//!    defused, anything not known safe quoted), and an argument that cannot be passed safely
//!    (a line break, NUL) is refused. Other extensions (`.ps1`, `.js`, …) are refused with what
//!    to write instead.
//! 3. [`contains`] / [`same_path`]: paths compared as Windows does (case-insensitive, `/` and
//!    `\` alike, `\\?\` and `\\?\UNC\` forms, drive letters), for confinement and the review of
//!    edits.
//!
//! Like the rest of the crate there is no IO: the face answers "is this a file" and "what does
//! this shim say" (bounded, [`SHIM_READ_LIMIT`]).

use serde::{Deserialize, Serialize};

/// The extensions `PATHEXT` has when it is not set.
pub const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The bytes of a `.cmd` file a face reads to recognise an npm shim (npm's are under 1 KiB).
pub const SHIM_READ_LIMIT: usize = 16 * 1024;

/// Host variables a Windows process needs to start and find its files, passed to agents by
/// default beside [`crate::env::DEFAULT_ALLOWLIST`] (none of them usually holds a secret).
/// Windows variable names are compared ignoring ASCII case ([`env_name_eq`]).
pub const WINDOWS_ALLOWLIST: &[&str] = &[
    "SystemRoot",
    "SystemDrive",
    "windir",
    "ComSpec",
    "PATHEXT",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "CommonProgramW6432",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERDOMAIN",
    "COMPUTERNAME",
    "OS",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "PROCESSOR_IDENTIFIER",
];

/// Whether two environment variable names are the same variable on Windows (ASCII case
/// ignored: `Path` is `PATH`).
pub fn env_name_eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The file `command` names, as Windows would find it but never in the working directory:
/// `path` is the `PATH` value (`;`-separated, entries may be quoted), `pathext` the `PATHEXT`
/// value (default [`DEFAULT_PATHEXT`]), `is_file` the face's answer for a candidate path.
/// In each directory, the name as given first when it has an extension (one Windows would not
/// start is found too, and [`plan`] says how to run it), then the name with each extension of
/// `PATHEXT` in order. `None`: found nowhere.
pub fn find_program(
    command: &str,
    path: &str,
    pathext: Option<&str>,
    is_file: impl Fn(&str) -> bool,
) -> Option<String> {
    if command.is_empty() || command.contains('\0') {
        return None;
    }
    let exts: Vec<&str> = pathext
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(DEFAULT_PATHEXT)
        .split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect();
    let candidates = |base: &str| -> Option<String> {
        // A name with an extension is tried as given first; one Windows would not run (a
        // `.ps1`, a `.js`) is found too, so that `plan` can say how to run it.
        if extension(base).is_some() && is_file(base) {
            return Some(base.to_string());
        }
        exts.iter()
            .map(|e| format!("{base}{e}"))
            .find(|c| is_file(c))
    };
    if has_directory(command) {
        return candidates(command);
    }
    path.split(';')
        .map(|d| d.trim().trim_matches('"'))
        .filter(|d| !d.is_empty())
        .find_map(|dir| {
            // A relative entry (`.`, `bin`, `C:tools`) is found from the working directory:
            // skipped, as the working directory itself is.
            if !is_absolute(dir) {
                return None;
            }
            let dir = dir.trim_end_matches(['\\', '/']);
            candidates(&format!("{dir}\\{command}"))
        })
}

/// Whether `path` is absolute on Windows: `X:\…`, `X:/…`, or a UNC / device path (`\\…`).
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with(r"\\")
        || path.starts_with("//")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'\\' | b'/'))
}

/// Whether `command` names a directory (`.\x`, `C:x`, `sub\x`, `//server/x`…).
fn has_directory(command: &str) -> bool {
    command.contains(['\\', '/']) || command.as_bytes().get(1) == Some(&b':')
}

/// The extension of the last component of `path`, with its dot (`.cmd`), if any.
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit(['\\', '/']).next().unwrap_or(path);
    let dot = name.rfind('.')?;
    (dot > 0 && dot + 1 < name.len()).then(|| &name[dot..])
}

/// How to start a program on Windows: what the face passes to `spawn` (Node:
/// `spawn(program, args, { shell: false, windowsVerbatimArguments: verbatim })`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spawn {
    /// The executable (a full path, or `node` / `cmd.exe` when the face gave no better).
    pub program: String,
    /// Its arguments, given one by one (`verbatim: false`) or already quoted for `cmd.exe`
    /// (`verbatim: true`: passed on as written).
    pub args: Vec<String>,
    /// The arguments are already a command line (`cmd.exe /c "…"`): not to be quoted again.
    pub verbatim: bool,
    /// How the file is run, for what the user is shown: `direct`, `npm_shim` or `batch`.
    pub via: Via,
}

/// How a found file is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// An `.exe` / `.com`, started directly.
    Direct,
    /// An npm shim: `node` on the script it names, no shell.
    NpmShim,
    /// A `.cmd` / `.bat` through `cmd.exe`, each argument quoted for it.
    Batch,
}

/// What a face knows when it plans a start: the found file, the `.cmd` file's text when it is
/// one (at most [`SHIM_READ_LIMIT`] bytes), `node.exe` beside the shim if there is one, and the
/// shell to use (`ComSpec`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// The file [`find_program`] found (a full path).
    pub file: String,
    /// The file's text, for a `.cmd` / `.bat` (else `None`).
    #[serde(default)]
    pub text: Option<String>,
    /// `node` to run an npm shim's script with: the shim's own `node.exe` when it exists,
    /// else the one found on `PATH` (else `None`: `node`).
    #[serde(default)]
    pub node: Option<String>,
    /// The `ComSpec` value (else `None`: `cmd.exe`).
    #[serde(default)]
    pub comspec: Option<String>,
}

/// How to start `facts.file` with `args` (see the module's rules), or why it cannot be done
/// safely.
pub fn plan(facts: &Facts, args: &[String]) -> Result<Spawn, String> {
    let file = facts.file.as_str();
    // What the errors show of the file name.
    let shown = crate::display::ensure_line(file);
    let ext = extension(file).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some(".exe") | Some(".com") => Ok(Spawn {
            program: file.to_string(),
            args: args.to_vec(),
            verbatim: false,
            via: Via::Direct,
        }),
        Some(".cmd") | Some(".bat") => {
            if let Some(script) = facts.text.as_deref().and_then(npm_shim_script) {
                let dir = match file.rfind(['\\', '/']) {
                    Some(i) => &file[..i],
                    None => ".",
                };
                let mut all = vec![format!("{dir}\\{script}")];
                all.extend(args.iter().cloned());
                return Ok(Spawn {
                    program: facts.node.clone().unwrap_or_else(|| "node".to_string()),
                    args: all,
                    verbatim: false,
                    via: Via::NpmShim,
                });
            }
            let line = batch_command_line(file, args)?;
            Ok(Spawn {
                program: facts
                    .comspec
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| "cmd.exe".to_string()),
                args: vec![
                    "/e:ON".into(),
                    "/v:OFF".into(),
                    "/d".into(),
                    "/c".into(),
                    line,
                ],
                verbatim: true,
                via: Via::Batch,
            })
        }
        Some(".ps1") => Err(format!(
            "cannot start {shown}: a PowerShell script; give the command as \
             `powershell -NoProfile -File {shown}`"
        )),
        other => Err(format!(
            "cannot start {shown}: Windows does not run {} files directly; give the program \
             that runs it (for a script: `node {shown}`, `python {shown}`…)",
            other.unwrap_or("extension-less")
        )),
    }
}

/// The script an npm shim starts, relative to the shim's directory (`node_modules\…\cli.js`,
/// `..\pkg\cli.js`), if `text` is exactly npm's `cmd-shim` template (npm 7 and later) for a node
/// script with no extra interpreter arguments or variables: it ends
/// `"%_prog%"  "%dp0%\SCRIPT" %*`. `None` for anything else (another interpreter, arguments to
/// node, variables, an older template, a hand-written batch file): those run through `cmd.exe`.
pub fn npm_shim_script(text: &str) -> Option<String> {
    if text.len() > SHIM_READ_LIMIT {
        return None;
    }
    let text = text.replace("\r\n", "\n");
    let last = text.trim_end().lines().last()?;
    let script = last.strip_prefix(SHIM_RUN)?.strip_suffix("\" %*")?;
    if script.is_empty() || script.contains(['%', '"', '\r', '\n', '\0', '^', '&', '|', '<', '>']) {
        return None;
    }
    let expected = format!("{SHIM_HEAD}{SHIM_RUN}{script}\" %*");
    (text.trim_end() == expected).then(|| script.to_string())
}

/// npm's `cmd-shim` template for a node script, up to its last line (line ends as `\n`).
const SHIM_HEAD: &str =
    "@ECHO off\nGOTO start\n:find_dp0\nSET dp0=%~dp0\nEXIT /b\n:start\nSETLOCAL\n\
CALL :find_dp0\n\nIF EXIST \"%dp0%\\node.exe\" (\n  SET \"_prog=%dp0%\\node.exe\"\n) ELSE (\n  \
SET \"_prog=node\"\n  SET PATHEXT=%PATHEXT:;.JS;=;%\n)\n\n";

/// The start of the template's last line, up to the script's path.
const SHIM_RUN: &str =
    "endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\";

/// The command line `cmd.exe /c` is given to run `script` with `args`: `""SCRIPT" ARG…"`
/// (the outer quotes are `/c`'s: cmd strips the first and last). Refused: a script name with a
/// `"` or a trailing `\`, an argument with a line break or NUL (they end the command).
pub fn batch_command_line(script: &str, args: &[String]) -> Result<String, String> {
    if script.contains('"') || script.ends_with('\\') || script.contains(['\0', '\r', '\n']) {
        return Err(format!(
            "cannot run {} through cmd.exe: a Windows file name has no `\"` and does not end \
             with `\\`",
            crate::display::ensure_line(script)
        ));
    }
    let mut line = String::with_capacity(script.len() + 8);
    line.push('"');
    line.push('"');
    line.push_str(script);
    line.push('"');
    for (i, arg) in args.iter().enumerate() {
        line.push(' ');
        batch_arg(&mut line, arg).map_err(|why| format!("argument {} {why}", i + 1))?;
    }
    line.push('"');
    Ok(line)
}

/// Appends `arg` quoted for a batch file's command line, Rust's standard library rule
/// (`make_bat_command_line`, since CVE-2024-24576): quoted when empty, ending in `\`, or
/// holding any ASCII character not in ``#$*+-./:?@\_`` or alphanumeric, or a control
/// character; inside, `"` doubled (with the backslashes before it doubled), and each `%`
/// written `%%cd:~,%` (an empty substring of `%cd%`), so `%VAR%` is never expanded.
pub fn batch_arg(out: &mut String, arg: &str) -> Result<(), String> {
    if arg.contains(['\r', '\n']) {
        return Err("holds a line break, which would end the command in cmd.exe".to_string());
    }
    if arg.contains('\0') {
        return Err("holds a NUL character".to_string());
    }
    const UNQUOTED: &str = r"#$*+-./:?@\_";
    let quote = arg.is_empty()
        || arg.ends_with('\\')
        || arg.chars().any(|c| {
            (c.is_ascii() && !(c.is_ascii_alphanumeric() || UNQUOTED.contains(c))) || c.is_control()
        });
    if quote {
        out.push('"');
    }
    let mut backslashes = 0usize;
    for c in arg.chars() {
        if c == '\\' {
            backslashes += 1;
        } else {
            if c == '"' {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push('"');
            } else if c == '%' {
                out.push_str("%%cd:~,");
            }
            backslashes = 0;
        }
        out.push(c);
    }
    if quote {
        out.extend(std::iter::repeat_n('\\', backslashes));
        out.push('"');
    }
    Ok(())
}

/// `path` in one form for comparing: `/` as `\`, the `\\?\` prefix dropped (`\\?\UNC\s\x` is
/// `\\s\x`), `.` components dropped and `..` applied, no trailing `\` (but a root's), ASCII
/// case folded (Windows' file systems ignore case; non-ASCII folding is left as it is, which can
/// only make two names differ, never wrongly match).
pub fn normalize(path: &str) -> String {
    let p = path.replace('/', "\\");
    let p = if let Some(rest) = p.strip_prefix(r"\\?\UNC\") {
        format!(r"\\{rest}")
    } else if let Some(rest) = p.strip_prefix(r"\\?\").or_else(|| p.strip_prefix(r"\\.\")) {
        rest.to_string()
    } else {
        p
    };
    let (prefix, rest) = if let Some(unc) = p.strip_prefix(r"\\") {
        // \\server\share is the root.
        let mut parts = unc.splitn(3, '\\');
        let server = parts.next().unwrap_or("");
        let share = parts.next().unwrap_or("");
        (
            format!(r"\\{server}\{share}"),
            parts.next().unwrap_or("").to_string(),
        )
    } else if p.as_bytes().get(1) == Some(&b':') {
        (p[..2].to_string(), p[2..].to_string())
    } else {
        (String::new(), p.clone())
    };
    let absolute = rest.starts_with('\\') || prefix.starts_with(r"\\");
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('\\') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let mut out = prefix;
    if absolute {
        out.push('\\');
    }
    out.push_str(&parts.join("\\"));
    if out.len() > 1 && out.ends_with('\\') && !out.ends_with(":\\") && !is_unc_root(&out) {
        out.pop();
    }
    out.to_ascii_lowercase()
}

fn is_unc_root(p: &str) -> bool {
    p.starts_with(r"\\") && p.trim_end_matches('\\').matches('\\').count() <= 3
}

/// Whether two Windows paths name the same place ([`normalize`]d alike).
pub fn same_path(a: &str, b: &str) -> bool {
    normalize(a) == normalize(b)
}

/// Whether `path` is `root` or under it, as Windows compares paths; both must be absolute (a
/// drive, a UNC share or a `\\?\` form): a relative path is never inside.
pub fn contains(root: &str, path: &str) -> bool {
    let (r, p) = (normalize(root), normalize(path));
    if !is_absolute(&r) || !is_absolute(&p) || p.split('\\').any(|c| c == "..") {
        return false;
    }
    if p == r {
        return true;
    }
    let base = if r.ends_with('\\') {
        r.clone()
    } else {
        format!("{r}\\")
    };
    p.starts_with(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(arg: &str) -> String {
        let mut s = String::new();
        batch_arg(&mut s, arg).unwrap();
        s
    }

    #[test]
    fn batch_quoting_follows_the_standard_library() {
        assert_eq!(quoted("plain"), "plain");
        assert_eq!(quoted(""), r#""""#);
        assert_eq!(quoted("a b"), r#""a b""#);
        assert_eq!(quoted(r#"say "hi""#), r#""say ""hi""""#);
        assert_eq!(quoted("50%"), r#""50%%cd:~,%""#);
        assert_eq!(quoted("%PATH%"), r#""%%cd:~,%PATH%%cd:~,%""#);
        assert_eq!(quoted("a&b|c^d"), r#""a&b|c^d""#);
        assert_eq!(quoted(r"dir\"), r#""dir\\""#);
        assert_eq!(quoted(r#"a\"b"#), r#""a\\""b""#);
        assert_eq!(quoted(r"C:\x\y.txt"), r"C:\x\y.txt");
        assert!(batch_arg(&mut String::new(), "a\nb").is_err());
    }

    /// What npm's cmd-shim 7 writes for `node_modules/.bin/x.cmd` -> `../pkg/cli.js`.
    const SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n\
        :start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  \
        SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  \
        SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || \
        title %COMSPEC% & \"%_prog%\"  \"%dp0%\\..\\pkg\\cli.js\" %*\r\n";

    #[test]
    fn npm_shims_are_read_exactly() {
        assert_eq!(npm_shim_script(SHIM).as_deref(), Some(r"..\pkg\cli.js"));
        // A variable set before node runs, or an argument to node: not the plain template.
        let with_var = SHIM.replace("CALL :find_dp0\r\n", "CALL :find_dp0\r\nSET X=1\r\n");
        assert_eq!(npm_shim_script(&with_var), None);
        let with_arg = SHIM.replace("\"%_prog%\"  ", "\"%_prog%\" --inspect ");
        assert_eq!(npm_shim_script(&with_arg), None);
        let other = SHIM.replace("\"_prog=node\"", "\"_prog=python\"");
        assert_eq!(npm_shim_script(&other), None);
    }
}
