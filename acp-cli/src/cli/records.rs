//! Session records: a local record of each `acp chat` conversation per directory (the shared
//! thread model's saved form, with the agent and the time), what `acp sessions` and `/sessions`
//! list and what `acp chat --resume` reads back.
//!
//! Records live in `$XDG_STATE_HOME/acp/sessions/<directory key>/<session id>.json` (else
//! `~/.local/state/acp/sessions/…`), private to the user (directories 0700, files 0600),
//! written atomically (a temporary file, created exclusively without following a link, renamed
//! over the old one). A record is read only up to [`MAX_RECORD_BYTES`] (a bigger file, not
//! one acp wrote, is refused naming the file and the limit); anything else that is not a
//! record of ours is skipped. What a record holds is shown escaped: it may hold agent text.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use acp_client::display::{ensure_line, escape_line, redact_url};
use serde::{Deserialize, Serialize};

/// The record format's version.
const RECORD_FORMAT: u32 = 1;

/// The largest record read back (and written): the thread keeps at most 8 MiB of
/// conversation (the renderer's limit), at most 6 bytes of JSON per byte of text (a control
/// character is `\u0001`), plus its bookkeeping. A bigger file is not one acp wrote; reading
/// it whole would cost several times its size (a planted 240 MB record took `--resume` to
/// 1 GB).
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// What `acp sessions` and `/sessions` show of a record (its thread is skipped unread).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub format: u32,
    pub session_id: String,
    pub cwd: PathBuf,
    pub agent: String,
    pub updated_at: u64,
    pub title: String,
    /// Prompts sent in the conversation (0 in records written before it was kept).
    #[serde(default)]
    pub turns: usize,
}

impl Summary {
    /// `id  when  agent  N turn(s)  title`, every field as it can be shown (escaped; a URL
    /// without its credentials).
    pub fn line(&self) -> String {
        format!(
            "{}  {}  {}  {} turn(s)  {}",
            escape_line(&self.session_id),
            when(self.updated_at),
            escape_line(&redact_url(&self.agent)),
            self.turns,
            ensure_line(&self.title)
        )
    }
}

/// One saved conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub format: u32,
    pub session_id: String,
    pub cwd: PathBuf,
    /// The agent as the user named it (`--agent` name, or the program).
    pub agent: String,
    /// Seconds since the Unix epoch.
    pub updated_at: u64,
    /// The title the agent gave, else the first prompt's first line (acp-client's
    /// `session::list_title`).
    pub title: String,
    /// Prompts sent in the conversation.
    #[serde(default)]
    pub turns: usize,
    /// The thread's saved form (acp-client's `Thread::to_json`), kept as text.
    pub thread: Box<serde_json::value::RawValue>,
}

/// The directory records are kept in.
pub fn root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            crate::os_compat::home().map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("acp").join("sessions"))
}

/// A directory's key: its name and a hash of its full path (FNV-1a 64).
fn dir_key(cwd: &Path) -> String {
    let bytes = cwd.as_os_str().as_encoded_bytes();
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    let name: String = cwd
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
        .take(40)
        .collect();
    format!("{name}-{h:016x}")
}

/// A session id as a file name: ASCII letters, digits, `-`, `_` and `.` kept, the rest `%XX`.
fn file_name(session_id: &str) -> String {
    let mut out = String::new();
    for b in session_id.bytes() {
        if b.is_ascii_alphanumeric() || b"-_".contains(&b) || (b == b'.' && !out.is_empty()) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out + ".json"
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Saves the conversation: `title` (acp-client's `session::list_title`, the one title rule of
/// every session list) and `thread_json` (its saved form) come from the live thread (best effort: a failure is returned for a warning, never fatal).
pub fn save(
    cwd: &Path,
    agent: &str,
    session_id: &str,
    title: String,
    turns: usize,
    thread_json: String,
) -> Result<(), String> {
    use crate::os_compat::{DirBuilderExt, OpenOptionsExt};
    let Some(root) = root() else {
        return Err("no HOME or XDG_STATE_HOME to keep session records in".into());
    };
    let dir = root.join(dir_key(cwd));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let record = Record {
        format: RECORD_FORMAT,
        session_id: session_id.to_string(),
        cwd: cwd.to_path_buf(),
        agent: agent.to_string(),
        updated_at: now(),
        title,
        turns,
        thread: serde_json::value::RawValue::from_string(thread_json).map_err(|e| e.to_string())?,
    };
    let path = dir.join(file_name(session_id));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file_name(session_id),
        std::process::id()
    ));
    let text = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_RECORD_BYTES {
        return Err(format!(
            "{}: not saved: the record would be {} bytes, over the limit of {}",
            path.display(),
            text.len(),
            limit_text()
        ));
    }
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(crate::os_compat::O_NOFOLLOW)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// [`MAX_RECORD_BYTES`] in words.
fn limit_text() -> String {
    format!("{} MiB", MAX_RECORD_BYTES >> 20)
}

/// The bytes of the record file at `path`: a regular file (a link, a FIFO or a device is not
/// a record; it is opened without following a link and without waiting), read through a
/// `take` of at most [`MAX_RECORD_BYTES`]; a bigger one is refused naming the file and the
/// limit, before anything is read. `Ok(None)`: no such file.
fn read_record_bytes(path: &Path) -> Result<Option<Vec<u8>>, String> {
    use crate::os_compat::OpenOptionsExt;
    use std::io::Read;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::os_compat::O_NOFOLLOW | crate::os_compat::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let too_big = |size: u64| {
        format!(
            "{}: the session record is {size} bytes, over the limit of {}: not read",
            path.display(),
            limit_text()
        )
    };
    if meta.len() > MAX_RECORD_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // It grew while being read.
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// The records of `cwd`, newest first. Files that are not records of ours are skipped; one
/// over [`MAX_RECORD_BYTES`] (or unreadable) is skipped and named to `warn`. Records are read
/// one at a time and only their summary kept.
pub fn list(cwd: &Path, mut warn: impl FnMut(&str)) -> Vec<Summary> {
    let Some(root) = root() else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir(root.join(dir_key(cwd))) else {
        return Vec::new();
    };
    // Newest first: by the record's time, then (within its second) by the file's.
    let mut records: Vec<(Summary, Option<SystemTime>)> = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        match read_record_bytes(&entry.path()) {
            Ok(Some(bytes)) => {
                if let Ok(r) = serde_json::from_slice::<Summary>(&bytes) {
                    if r.format == RECORD_FORMAT && r.cwd == cwd {
                        let modified = entry.metadata().and_then(|m| m.modified()).ok();
                        records.push((r, modified));
                    }
                }
            }
            Ok(None) => {}
            Err(e) => warn(&e),
        }
    }
    records.sort_by_key(|(r, modified)| std::cmp::Reverse((r.updated_at, *modified)));
    records.into_iter().map(|(r, _)| r).collect()
}

/// The record of `session_id` in `cwd` (its file, read within [`MAX_RECORD_BYTES`]):
/// `Ok(None)` when there is none, an error naming the file when it cannot be read (too big,
/// not a file, not a record).
pub fn find(cwd: &Path, session_id: &str) -> Result<Option<Record>, String> {
    let Some(root) = root() else {
        return Ok(None);
    };
    let path = root.join(dir_key(cwd)).join(file_name(session_id));
    let Some(bytes) = read_record_bytes(&path)? else {
        return Ok(None);
    };
    let record: Record = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a session record: {e}", path.display()))?;
    Ok(
        (record.format == RECORD_FORMAT && record.session_id == session_id && record.cwd == cwd)
            .then_some(record),
    )
}

/// "2026-11-23 20:14 UTC" for a Unix time.
pub fn when(secs: u64) -> String {
    let (y, m, d, rem) = crate::utc::civil_date(secs);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_and_dates() {
        assert_eq!(file_name("demo-1a2b-1"), "demo-1a2b-1.json");
        assert_eq!(file_name("../x y"), "%2E.%2Fx%20y.json");
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
        assert_eq!(when(1_795_464_840), "2026-11-23 20:14 UTC");
    }
}
