//! The few POSIX file facilities acp uses (private modes, `O_NOFOLLOW`, positional reads, a
//! file's identity), with their Windows stand-ins: there a file created in the user's profile
//! gets the profile's access list (private to the user), so modes are no-ops; `O_NOFOLLOW`
//! and `O_NONBLOCK` have no `CreateFile` equivalent here and are 0 (docs/reliability.md,
//! "Windows").

#[cfg(unix)]
pub use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

/// `O_NOFOLLOW` (0 on Windows).
#[cfg(unix)]
pub const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;
/// `O_NONBLOCK` (0 on Windows).
#[cfg(unix)]
pub const O_NONBLOCK: i32 = libc::O_NONBLOCK;
/// `O_NOFOLLOW` (0 on Windows).
#[cfg(not(unix))]
pub const O_NOFOLLOW: i32 = 0;
/// `O_NONBLOCK` (0 on Windows).
#[cfg(not(unix))]
pub const O_NONBLOCK: i32 = 0;

/// Windows: `mode` and `custom_flags` accepted and ignored (see the module docs).
#[cfg(not(unix))]
pub trait OpenOptionsExt {
    /// Ignored on Windows.
    fn mode(&mut self, mode: u32) -> &mut Self;
    /// Ignored on Windows.
    fn custom_flags(&mut self, flags: i32) -> &mut Self;
}

#[cfg(not(unix))]
impl OpenOptionsExt for std::fs::OpenOptions {
    fn mode(&mut self, _mode: u32) -> &mut Self {
        self
    }
    fn custom_flags(&mut self, _flags: i32) -> &mut Self {
        self
    }
}

/// Windows: `mode` accepted and ignored (see the module docs).
#[cfg(not(unix))]
pub trait DirBuilderExt {
    /// Ignored on Windows.
    fn mode(&mut self, mode: u32) -> &mut Self;
}

#[cfg(not(unix))]
impl DirBuilderExt for std::fs::DirBuilder {
    fn mode(&mut self, _mode: u32) -> &mut Self {
        self
    }
}

/// Reads at `offset` without moving a shared cursor (`pread`; `seek_read` on Windows).
pub fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, offset)
    }
}

/// What tells a file from one put in its place: device and inode (Windows: its creation
/// time; std has no stable file index there).
pub fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt;
        (meta.creation_time(), 0)
    }
}

/// The user's home directory: `HOME` (on Windows, where it is usually unset, `USERPROFILE`).
/// acp's state, cache and configuration go under it as on Unix (`.local/state/acp`, ...)
/// unless the `XDG_*` variables say otherwise.
pub fn home() -> Option<std::ffi::OsString> {
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty());
    #[cfg(windows)]
    let home = home.or_else(|| std::env::var_os("USERPROFILE").filter(|v| !v.is_empty()));
    home
}

/// `std::fs::canonicalize`, without Windows' `\\?\` prefix on a plain drive path
/// (`\\?\C:\work` is `C:\work`), which users and agents do not expect to see.
pub fn canonicalize(path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let real = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    if let Some(plain) = real.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        let b = plain.as_bytes();
        if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\' {
            return Ok(std::path::PathBuf::from(plain));
        }
    }
    Ok(real)
}
