//! Windows: the confined `fs/*` service over [`cap_std`]. A root is opened as a directory
//! handle (`cap_std::fs::Dir`), and a request's path below it is resolved by cap-std relative
//! to that handle, never leaving it: `..` above the root, an absolute path, and a symbolic
//! link, junction or other reparse point leading outside are refused (cap-std's "a path led
//! outside of the filesystem", reported as [`FsError::OutsideRoots`]); a link that stays inside
//! is followed, as on Unix. Reads and writes then go through the same handle. Which root a path
//! is in is decided by comparing its components with the root's as Windows does (ASCII case
//! folded, `/` as `\`, `\\?\` forms: [`acp_client::windows::normalize`]).
//!
//! Unconfined requests (reads with [`super::AccessScope::Anywhere`], unconfined writes) use the
//! path as given, as any program of the user would.
//!
//! Differences from Unix (docs/reliability.md, "Windows"): no execute bit (so no executable
//! file is classified as sensitive by its mode: `acp_client::writes` still classifies by path),
//! a file's read-only attribute is not carried over to the replacement, and the target's real
//! path is the root's canonical path joined with the requested components (links inside the
//! root are not spelled out).

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::{Condvar, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use super::error::io_error;
use super::FsError;

/// File facts the service uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Meta {
    /// The size in bytes.
    pub size: u64,
    is_dir: bool,
    is_file: bool,
}

impl Meta {
    fn of(m: &cap_std::fs::Metadata) -> Meta {
        Meta {
            size: m.len(),
            is_dir: m.is_dir(),
            is_file: m.is_file(),
        }
    }

    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.is_file
    }

    /// Windows has no execute bit.
    pub fn is_executable_file(&self) -> bool {
        false
    }

    /// Nothing is carried over on Windows.
    pub fn permissions(&self) -> u32 {
        0
    }
}

/// What the resolution is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    Read,
    Write,
}

/// Where a path leads: the directory handle it is resolved beneath and the path below it.
pub(super) struct Target {
    /// The file as it is now (a final link followed); `None` when it does not exist.
    pub meta: Option<Meta>,
    /// The root (or, unconfined, the path's filesystem root) held open.
    dir: Dir,
    /// The path below `dir` (empty: `dir` itself).
    rel: PathBuf,
    /// `dir`'s canonical path joined with `rel`.
    real: PathBuf,
}

impl Target {
    pub(super) fn real_path(&self) -> PathBuf {
        self.real.clone()
    }

    pub(super) fn is_dir(&self) -> bool {
        self.rel.as_os_str().is_empty() || self.meta.is_some_and(|m| m.is_dir())
    }
}

/// Whether `e` is cap-std's refusal of a path leaving its directory.
fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
        && e.to_string()
            .contains("a path led outside of the filesystem")
}

/// `path` below `root` (components compared as Windows does), `..` kept for cap-std to judge.
fn below(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut p = path.components();
    for rc in root.components() {
        let same = match (rc, p.next()?) {
            (Component::Prefix(a), Component::Prefix(b)) => acp_client::windows::same_path(
                &format!("{}\\", a.as_os_str().to_string_lossy()),
                &format!("{}\\", b.as_os_str().to_string_lossy()),
            ),
            (Component::RootDir, Component::RootDir) | (Component::CurDir, Component::CurDir) => {
                true
            }
            (Component::Normal(a), Component::Normal(b)) => {
                a.to_string_lossy().to_ascii_lowercase() == b.to_string_lossy().to_ascii_lowercase()
            }
            _ => false,
        };
        if !same {
            return None;
        }
    }
    Some(p.collect())
}

/// The filesystem root of an absolute path (`C:\`, `\\server\share\`) and the rest.
fn split_root(path: &Path) -> (PathBuf, PathBuf) {
    let mut root = PathBuf::new();
    let mut rest = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir if rest.as_os_str().is_empty() => {
                root.push(c)
            }
            other => rest.push(other),
        }
    }
    (root, rest)
}

/// Resolves `path` (absolute, validated) beneath one of `roots` (`None`: anywhere).
pub(super) fn locate(
    path: &Path,
    roots: Option<&[PathBuf]>,
    want: Want,
    _openat2: bool,
) -> Result<Target, FsError> {
    let Some(roots) = roots else {
        let (root, rel) = split_root(path);
        let dir = Dir::open_ambient_dir(&root, ambient_authority())
            .map_err(|e| io_error(path, "resolve", e))?;
        // Unconfined: `..` may climb anywhere, so the path is resolved by Windows itself.
        return finish(path, dir, root, rel, want).map_err(|e| match e {
            FsError::OutsideRoots { .. } => io_error(
                path,
                "resolve",
                io::Error::from(io::ErrorKind::PermissionDenied),
            ),
            other => other,
        });
    };
    let mut real_outside = path.to_path_buf();
    for root in roots {
        let Some(rel) = below(root, path) else {
            continue;
        };
        let Ok(dir) = Dir::open_ambient_dir(root, ambient_authority()) else {
            continue;
        };
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        match finish(path, dir, real, rel, want) {
            Err(FsError::OutsideRoots { resolved, .. }) => real_outside = resolved,
            other => return other,
        }
    }
    Err(FsError::OutsideRoots {
        path: path.to_path_buf(),
        resolved: real_outside,
    })
}

fn finish(
    path: &Path,
    dir: Dir,
    real: PathBuf,
    rel: PathBuf,
    want: Want,
) -> Result<Target, FsError> {
    let outside = || FsError::OutsideRoots {
        path: path.to_path_buf(),
        resolved: path.to_path_buf(),
    };
    if rel.as_os_str().is_empty() {
        let meta = dir.dir_metadata().ok().map(|m| Meta::of(&m));
        return Ok(Target {
            meta,
            dir,
            rel,
            real,
        });
    }
    // `metadata` follows a final link (inside only); `symlink_metadata` tells a dangling one.
    let meta = match dir.metadata(&rel) {
        Ok(m) => Some(Meta::of(&m)),
        Err(e) if is_escape(&e) => return Err(outside()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match dir.symlink_metadata(&rel) {
                Ok(m) if m.file_type().is_symlink() && want == Want::Write => {
                    return Err(FsError::InvalidPath {
                        path: path.to_path_buf(),
                        reason: "a symbolic link to nothing",
                    })
                }
                Err(e) if is_escape(&e) => return Err(outside()),
                _ => {}
            }
            if want == Want::Read {
                return Err(FsError::NotFound {
                    path: path.to_path_buf(),
                });
            }
            // The parent must resolve inside too (created later if missing).
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                match dir.metadata(parent) {
                    Err(e) if is_escape(&e) => return Err(outside()),
                    Ok(m) if !m.is_dir() => {
                        return Err(io_error(
                            path,
                            "resolve",
                            io::Error::other("not a directory"),
                        ))
                    }
                    _ => {}
                }
            }
            None
        }
        Err(e) => return Err(io_error(path, "resolve", e)),
    };
    let real = real.join(&rel);
    Ok(Target {
        meta,
        dir,
        rel,
        real,
    })
}

/// Reads a resolved file: a regular file within `limit` bytes, opened through the root's
/// handle, checked again on the open file, valid UTF-8.
pub(super) fn read_target(path: &Path, target: &Target, limit: u64) -> Result<String, FsError> {
    if target.is_dir() {
        return Err(FsError::IsADirectory {
            path: path.to_path_buf(),
        });
    }
    let Some(meta) = target.meta else {
        return Err(FsError::NotFound {
            path: path.to_path_buf(),
        });
    };
    super::check_readable(path, meta, limit)?;
    let file = target.dir.open(&target.rel).map_err(|e| {
        if is_escape(&e) {
            FsError::OutsideRoots {
                path: path.to_path_buf(),
                resolved: path.to_path_buf(),
            }
        } else {
            io_error(path, "read", e)
        }
    })?;
    let meta = file.metadata().map_err(|e| io_error(path, "read", e))?;
    super::check_readable(path, Meta::of(&meta), limit)?;
    super::read_bounded(path, file.into_std(), meta.len(), limit)
}

/// Writes under way in this process (see [`wait_for_writes`]).
static WRITES: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// Blocks until every `fs/write_text_file` under way in this process has finished, or
/// `timeout` passed; returns whether they all finished.
pub fn wait_for_writes(timeout: std::time::Duration) -> bool {
    let n = WRITES.0.lock().unwrap_or_else(|e| e.into_inner());
    let (n, _) = WRITES
        .1
        .wait_timeout_while(n, timeout, |n| *n > 0)
        .unwrap_or_else(|e| e.into_inner());
    *n == 0
}

struct InFlight;

impl InFlight {
    fn start() -> InFlight {
        *WRITES.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *WRITES.0.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        WRITES.1.notify_all();
    }
}

/// Writes `content` atomically through the root's handle: missing directories created, a new
/// temporary file beside the target (`create_new`), written, synced, renamed over the target.
/// One blocking job that always finishes (dropping the future cannot leave a temporary file).
pub(super) async fn atomic_write(
    path: &Path,
    target: Target,
    _keep_mode: Option<u32>,
    content: String,
) -> Result<String, FsError> {
    let path = path.to_path_buf();
    let guard = InFlight::start();
    let p = path.clone();
    let job = tokio::task::spawn_blocking(move || {
        let _guard = guard;
        write_now(&p, &target, content.as_bytes()).map(|()| content)
    });
    job.await.unwrap_or_else(|e| {
        Err(FsError::Io {
            path,
            op: "write",
            source: io::Error::other(e.to_string()),
        })
    })
}

fn write_now(path: &Path, target: &Target, bytes: &[u8]) -> Result<(), FsError> {
    let err = |op: &'static str| {
        move |e: io::Error| {
            if is_escape(&e) {
                FsError::OutsideRoots {
                    path: path.to_path_buf(),
                    resolved: path.to_path_buf(),
                }
            } else {
                io_error(path, op, e)
            }
        }
    };
    let parent = target.rel.parent().unwrap_or(Path::new(""));
    // Missing directories are created only when reached by plain names (as on Unix): `x\..\f`
    // with no `x` creates nothing.
    let plain = parent
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if plain && !parent.as_os_str().is_empty() {
        target.dir.create_dir_all(parent).map_err(err("mkdir"))?;
    }
    let name = target
        .rel
        .file_name()
        .map(OsString::from)
        .unwrap_or_default();
    let mut n = 0u32;
    let (tmp, mut file) = loop {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(&name);
        tmp_name.push(format!(".acp-{}-{n}.tmp", std::process::id()));
        let tmp = parent.join(tmp_name);
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        match target.dir.open_with(&tmp, &opts) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(err("create")(e)),
        }
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(err("write"));
    drop(file);
    let renamed = written.and_then(|()| {
        target
            .dir
            .rename(&tmp, &target.dir, &target.rel)
            .map_err(err("rename"))
    });
    if renamed.is_err() {
        let _ = target.dir.remove_file(&tmp);
    }
    renamed
}
