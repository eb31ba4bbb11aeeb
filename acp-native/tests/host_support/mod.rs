//! Shared helpers for acp-native's host-side integration tests (process, fs, terminal).
#![allow(dead_code)]

#[path = "../common/executable.rs"]
mod executable;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Generous bound for "this must happen" waits on a loaded 2-core machine. Tests never sleep to
/// synchronise; they await the event, bounded by this.
pub const EVENTUALLY: Duration = Duration::from_secs(20);

/// A temporary directory removed on drop (canonicalized, so symlinked /tmp does not confuse
/// path comparisons).
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "acp-native-test-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            nanos
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(std::fs::canonicalize(dir).unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }

    /// Writes an executable `#!/bin/sh` script and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.join(name);
        executable::write_executable(&path, &format!("#!/bin/sh\n{body}\n"));
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `pid` is gone or a zombie (dead but not reaped by whoever inherited it).
pub fn process_is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // Format: "pid (comm) S ..."; comm may contain spaces, so split after the last ')'.
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, Some(Some('Z')) | Some(Some('X')))
        }
    }
}

/// Resolves once process `pid` has exited (zombie or gone), without polling: waits for its
/// pidfd to become readable. Returns immediately if it no longer exists.
pub async fn wait_dead(pid: u32) {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        assert_eq!(
            err.raw_os_error(),
            Some(libc::ESRCH),
            "pidfd_open({pid}): {err}"
        );
        return;
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the fd is owned by the AsyncFd and stays open while registered.
    let afd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .unwrap_or_else(|_| panic!("cannot register the pidfd of {pid} with tokio"));
    let _ = afd.readable().await.unwrap();
}
