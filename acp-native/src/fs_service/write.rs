//! The atomic write: a temporary file created in the resolved directory's descriptor, written,
//! `fsync`ed and renamed over the target within that same descriptor, as one blocking job that
//! always runs to its end.

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::resolve::Target;
use super::sys;
use super::FsError;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes under way: each runs to its end (renamed, or its temporary file removed) even when
/// its request is abandoned, so a process about to exit can wait for them.
static WRITES: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// One write under way (counted in `WRITES` while it lives).
struct WriteInFlight;

impl WriteInFlight {
    fn start() -> WriteInFlight {
        *WRITES.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        WriteInFlight
    }
}

impl Drop for WriteInFlight {
    fn drop(&mut self) {
        let mut n = WRITES.0.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        if *n == 0 {
            WRITES.1.notify_all();
        }
    }
}

/// Blocks until every `fs/write_text_file` under way in this process has finished (the file
/// replaced, or left as it was with no temporary file behind), or `timeout` passed; returns
/// whether they all finished. Call it before the process exits (`std::process::exit` or a
/// runtime shutdown would cut a write short and leave its temporary file).
pub fn wait_for_writes(timeout: std::time::Duration) -> bool {
    let n = WRITES.0.lock().unwrap_or_else(|e| e.into_inner());
    let (n, _) = WRITES
        .1
        .wait_timeout_while(n, timeout, |n| *n > 0)
        .unwrap_or_else(|e| e.into_inner());
    *n == 0
}

/// Writes `content` to the resolved `target` atomically: missing directories created under
/// the held directory, a temporary file created next to the target (`O_CREAT | O_EXCL |
/// O_NOFOLLOW`), given the permissions the target had when it was resolved (`keep_mode`),
/// written, `fsync`ed, renamed over the target, then the directory `fsync`ed. `path` (as
/// requested) is used in errors. The file work runs as one blocking job that always finishes
/// (see [`wait_for_writes`]): dropping this future (the request cancelled, the connection
/// closed) cannot leave a temporary file behind.
pub(super) async fn atomic_write(
    path: &Path,
    target: Target,
    keep_mode: Option<u32>,
    content: String,
) -> Result<String, FsError> {
    let Some(name) = target.name else {
        return Err(FsError::IsADirectory {
            path: path.to_path_buf(),
        });
    };
    let job = WriteJob {
        path: path.to_path_buf(),
        dir: target.dir,
        missing: target.missing,
        name,
        keep_mode,
    };
    let in_flight = WriteInFlight::start();
    tokio::task::spawn_blocking(move || {
        let _in_flight = in_flight;
        job.run(content.as_bytes()).map(|()| content)
    })
    .await
    .unwrap_or_else(|e| {
        Err(FsError::Io {
            path: path.to_path_buf(),
            op: "write",
            source: io::Error::other(e.to_string()),
        })
    })
}

/// The blocking part of [`atomic_write`].
struct WriteJob {
    path: PathBuf,
    dir: OwnedFd,
    missing: Vec<OsString>,
    name: OsString,
    keep_mode: Option<u32>,
}

impl WriteJob {
    fn run(self, bytes: &[u8]) -> Result<(), FsError> {
        let path = &self.path;
        let mut dir = self.dir;
        for name in &self.missing {
            dir = make_dir(dir, name).map_err(|e| FsError::Io {
                path: path.clone(),
                op: "create the directory of",
                source: e,
            })?;
        }
        let mut tmp = OsString::from(".");
        tmp.push(&self.name);
        tmp.push(format!(
            ".acp-{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let file = sys::openat(dir.as_fd(), &tmp, flags, 0o666).map_err(|e| FsError::Io {
            path: path.clone(),
            op: "create a temporary file for",
            source: e,
        })?;
        let result = (|| {
            let mut file = std::fs::File::from(file);
            if let Some(mode) = self.keep_mode {
                file.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| FsError::Io {
                        path: path.clone(),
                        op: "copy permissions to",
                        source: e,
                    })?;
            }
            file.write_all(bytes).map_err(|e| FsError::Io {
                path: path.clone(),
                op: "write",
                source: e,
            })?;
            file.sync_all().map_err(|e| FsError::Io {
                path: path.clone(),
                op: "sync",
                source: e,
            })?;
            drop(file);
            sys::renameat(dir.as_fd(), &tmp, &self.name).map_err(|e| match e.kind() {
                io::ErrorKind::IsADirectory | io::ErrorKind::DirectoryNotEmpty => {
                    FsError::IsADirectory { path: path.clone() }
                }
                _ => FsError::Io {
                    path: path.clone(),
                    op: "replace",
                    source: e,
                },
            })
        })();
        if result.is_err() {
            let _ = sys::unlinkat(dir.as_fd(), &tmp);
            return result;
        }
        // Make the rename itself durable. Best effort: some file systems refuse to fsync a
        // directory.
        let _ = std::fs::File::from(dir).sync_all();
        Ok(())
    }
}

/// Creates directory `name` in `dir` (or finds it there) and opens it, never following a
/// symbolic link put in its place.
fn make_dir(dir: OwnedFd, name: &OsString) -> io::Result<OwnedFd> {
    match sys::mkdirat(dir.as_fd(), name, 0o777) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    sys::openat(
        dir.as_fd(),
        name,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
}
