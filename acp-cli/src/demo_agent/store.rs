//! The demo agent's sessions on disk (`acp demo-agent --state-dir DIR`), so `session/load`,
//! `session/resume` and `session/list` work across agent restarts (a crash, a reloaded
//! editor window).
//!
//! One file per session, `DIR/<id>.json`: `{format, sessionId, cwd, title, updated, updates}`
//! where `updates` are the `SessionUpdate`s sent so far (what `session/load` replays). Written
//! whole (a temporary file renamed over it) after each change. Bounded: at most
//! [`MAX_SESSIONS`] files (the least recently updated are deleted past it) and
//! [`MAX_SESSION_BYTES`] of updates per session (the oldest are dropped past it; an ACP v2
//! session's messages, `v2Messages`, the same). A file that
//! cannot be read (not ours, another format, truncated) is skipped, never fatal; ids that are
//! not plain file names (`[A-Za-z0-9_.-]`, at most 128, no leading `.`) are never stored.
//!
//! Private: the files hold conversations. A directory the store creates is 0700 (an existing
//! one is left as the user made it), every file 0600: the temporary file is created
//! exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600), so a file or link planted at its
//! name is never written through (another name is tried), and the rename keeps its mode.

use crate::os_compat::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_client_protocol_schema::v1 as s;
use serde::{Deserialize, Serialize};

/// Most sessions kept in the state directory.
pub const MAX_SESSIONS: usize = 64;
/// Most bytes of updates (as JSON) kept per session.
pub const MAX_SESSION_BYTES: usize = 1 << 20;
/// The file format's version; other versions are skipped.
const FORMAT: u32 = 1;

/// One session as saved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    pub format: u32,
    pub session_id: String,
    pub cwd: PathBuf,
    #[serde(default)]
    pub title: Option<String>,
    /// Unix seconds of the last change.
    pub updated: u64,
    pub updates: Vec<s::SessionUpdate>,
    /// An ACP v2 session's `user_message`/`agent_message` upserts (what its replay sends),
    /// bounded as `updates` are; empty for a v1 session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub v2_messages: Vec<serde_json::Value>,
    /// An ACP v2 session's message counter (ids stay unique across restarts); `None` for a
    /// v1 session (a v2 client resumes only v2 sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v2_next: Option<u64>,
    /// An ACP v2 session's prompt idempotency keys with the user message each inserted, oldest
    /// first: kept while that message is (v2 asks a key be recognized as long as its message
    /// is retained, across restarts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub v2_keys: Vec<(String, String)>,
    /// An ACP v2 session's config option `permissions` (`ask`, `allow`); `None` for a v1
    /// session (and read as `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v2_permissions: Option<String>,
}

/// The state directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// Whether `id` can be a file name here.
pub fn storable_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// ISO 8601 (`2026-11-23T20:14:05Z`) for a Unix time (`SessionInfo.updatedAt`).
pub fn iso8601(secs: u64) -> String {
    let (y, m, d, rem) = crate::utc::civil_date(secs);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Drops the oldest updates until the rest are within [`MAX_SESSION_BYTES`].
fn trim<T: Serialize>(updates: &mut Vec<T>) {
    let sizes: Vec<usize> = updates
        .iter()
        .map(|u| serde_json::to_vec(u).map_or(0, |v| v.len()))
        .collect();
    let mut total: usize = sizes.iter().sum();
    let mut drop = 0;
    while total > MAX_SESSION_BYTES && drop < sizes.len() {
        total -= sizes[drop];
        drop += 1;
    }
    updates.drain(..drop);
}

impl Store {
    /// The store in `dir` (created on the first save).
    pub fn new(dir: PathBuf) -> Self {
        Store { dir }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Saves a session (best effort: the error is returned for a log line).
    pub fn save(&self, saved: &mut Saved) -> std::io::Result<()> {
        if !storable_id(&saved.session_id) {
            return Ok(());
        }
        trim(&mut saved.updates);
        trim(&mut saved.v2_messages);
        let kept: std::collections::HashSet<&str> = saved
            .v2_messages
            .iter()
            .filter_map(|m| m["messageId"].as_str())
            .collect();
        saved.v2_keys.retain(|(_, id)| kept.contains(id.as_str()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let text = serde_json::to_vec(saved).map_err(std::io::Error::other)?;
        let (tmp, mut file) = self.create_temp(&saved.session_id)?;
        let written = std::io::Write::write_all(&mut file, &text)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, self.path(&saved.session_id)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        self.prune();
        Ok(())
    }

    /// A new temporary file for session `id`, 0600, created exclusively without following a
    /// link: a name already taken (by anything, a planted link included) is skipped.
    fn create_temp(&self, id: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
        use crate::os_compat::OpenOptionsExt;
        let mut last = None;
        for n in 0..16 {
            let tmp = self
                .dir
                .join(format!(".{id}.{}.{n}.tmp", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(crate::os_compat::O_NOFOLLOW)
                .open(&tmp)
            {
                Ok(file) => return Ok((tmp, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no temporary file name left")))
    }

    /// The saved session `id`, if there is a readable one.
    pub fn load(&self, id: &str) -> Option<Saved> {
        if !storable_id(id) {
            return None;
        }
        let text = std::fs::read(self.path(id)).ok()?;
        let saved: Saved = serde_json::from_slice(&text).ok()?;
        (saved.format == FORMAT && saved.session_id == id).then_some(saved)
    }

    /// Removes the saved session `id`; whether there was one.
    pub fn delete(&self, id: &str) -> bool {
        storable_id(id) && std::fs::remove_file(self.path(id)).is_ok()
    }

    /// Every readable saved session, most recently updated first.
    pub fn list(&self) -> Vec<Saved> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<Saved> = dir
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                self.load(id)
            })
            .collect();
        out.sort_by(|a, b| {
            b.updated
                .cmp(&a.updated)
                .then(b.session_id.cmp(&a.session_id))
        });
        out
    }

    /// Deletes the least recently updated sessions past [`MAX_SESSIONS`] (and files that are
    /// not readable sessions of ours are left alone).
    fn prune(&self) {
        for old in self.list().into_iter().skip(MAX_SESSIONS) {
            let _ = std::fs::remove_file(self.path(&old.session_id));
        }
    }
}

/// A session's title: its first prompt's first line, at most 60 characters.
pub fn title_from(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut t: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        t.push('…');
    }
    Some(t)
}

impl Saved {
    pub fn new(session_id: &str, cwd: &Path) -> Self {
        Saved {
            format: FORMAT,
            session_id: session_id.to_string(),
            cwd: cwd.to_path_buf(),
            title: None,
            updated: now(),
            updates: Vec::new(),
            v2_messages: Vec::new(),
            v2_next: None,
            v2_keys: Vec::new(),
            v2_permissions: None,
        }
    }

    /// `session/list`'s entry.
    pub fn info(&self) -> s::SessionInfo {
        s::SessionInfo::new(self.session_id.clone(), self.cwd.clone())
            .title(self.title.clone())
            .updated_at(iso8601(self.updated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("acp-demo-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn chunk(text: &str) -> s::SessionUpdate {
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.to_string().into()))
    }

    #[test]
    fn saves_loads_and_lists_newest_first() {
        let dir = tmp("roundtrip");
        let store = Store::new(dir.clone());
        let mut a = Saved::new("demo-1", Path::new("/w"));
        a.updates.push(chunk("hello"));
        a.updated = 10;
        store.save(&mut a).unwrap();
        let mut b = Saved::new("demo-2", Path::new("/w"));
        b.updated = 20;
        store.save(&mut b).unwrap();
        let loaded = store.load("demo-1").unwrap();
        assert_eq!(loaded.updates, a.updates);
        let ids: Vec<String> = store.list().into_iter().map(|s| s.session_id).collect();
        assert_eq!(ids, ["demo-2", "demo-1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsafe_ids_are_never_files_and_garbage_is_skipped() {
        let dir = tmp("hostile");
        let store = Store::new(dir.clone());
        for id in ["../x", "a/b", ".hidden", "", &"x".repeat(129)] {
            assert!(!storable_id(id), "{id}");
            store.save(&mut Saved::new(id, Path::new("/w"))).unwrap();
            assert!(store.load(id).is_none());
        }
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("junk.json"), "{not json").unwrap();
        std::fs::write(
            dir.join("other.json"),
            r#"{"format":2,"sessionId":"other","cwd":"/","updated":1,"updates":[]}"#,
        )
        .unwrap();
        assert!(store.list().is_empty());
        assert!(store.load("junk").is_none() && store.load("other").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bounded_in_sessions_and_bytes() {
        let dir = tmp("bounds");
        let store = Store::new(dir.clone());
        for n in 0..MAX_SESSIONS + 3 {
            let mut s = Saved::new(&format!("s-{n}"), Path::new("/w"));
            s.updated = n as u64;
            store.save(&mut s).unwrap();
        }
        let kept = store.list();
        assert_eq!(kept.len(), MAX_SESSIONS);
        assert!(store.load("s-0").is_none() && store.load("s-2").is_none());
        assert!(store.load(&format!("s-{}", MAX_SESSIONS + 2)).is_some());

        let mut big = Saved::new("big", Path::new("/w"));
        let piece = "x".repeat(100_000);
        for n in 0..15 {
            big.updates.push(chunk(&format!("{n}:{piece}")));
        }
        store.save(&mut big).unwrap();
        let loaded = store.load("big").unwrap();
        assert!(loaded.updates.len() < 15 && !loaded.updates.is_empty());
        // The newest updates are the ones kept.
        assert_eq!(loaded.updates.last(), Some(&chunk(&format!("14:{piece}"))));

        // A v2 session's messages are bounded the same, its counter kept.
        let mut v2 = Saved::new("v2", Path::new("/w"));
        v2.v2_next = Some(30);
        for n in 0..15 {
            v2.v2_messages
                .push(serde_json::json!({"sessionUpdate": "agent_message",
                "messageId": format!("a{n}"), "content": [{"type": "text", "text": piece}]}));
        }
        store.save(&mut v2).unwrap();
        let loaded = store.load("v2").unwrap();
        assert!(loaded.v2_messages.len() < 15 && !loaded.v2_messages.is_empty());
        assert_eq!(loaded.v2_messages.last().unwrap()["messageId"], "a14");
        assert_eq!(loaded.v2_next, Some(30));
        assert_eq!(
            store.load("big").unwrap().v2_next,
            None,
            "a v1 session is not v2's"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The store is private (0700 directory, 0600 files, whatever the umask) and its
    /// temporary file is never written through a link planted at its name.
    #[test]
    fn the_store_is_private_and_its_temporary_file_follows_no_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmp("private");
        let outside = tmp("private-outside");
        std::fs::create_dir_all(&outside).unwrap();
        let store = Store::new(dir.join("state"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let mut a = Saved::new("demo-1", Path::new("/w"));
        a.updates.push(chunk("a conversation"));
        store.save(&mut a).unwrap();
        assert_eq!(mode(&dir.join("state")), 0o700);
        assert_eq!(mode(&store.path("demo-1")), 0o600);

        // Links planted at the temporary file's names, to a file and to nowhere.
        let victim = outside.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        let pid = std::process::id();
        let first = dir.join(format!("state/.demo-1.{pid}.0.tmp"));
        let second = dir.join(format!("state/.demo-1.{pid}.1.tmp"));
        std::os::unix::fs::symlink(&victim, &first).unwrap();
        std::os::unix::fs::symlink(outside.join("created"), &second).unwrap();
        a.updates.push(chunk("more"));
        store.save(&mut a).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(!outside.join("created").exists());
        assert_eq!(store.load("demo-1").unwrap().updates.len(), 2);
        assert_eq!(mode(&store.path("demo-1")), 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn titles_and_dates() {
        assert_eq!(
            title_from("\n  fix the bug \nmore"),
            Some("fix the bug".into())
        );
        assert_eq!(title_from("   "), None);
        assert_eq!(title_from(&"é".repeat(70)).unwrap().chars().count(), 61);
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(1_795_479_245), "2026-11-24T00:14:05Z");
    }
}
