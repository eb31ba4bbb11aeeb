//! The `--log-rpc` file, opened private: the log holds secrets.

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens the `--log-rpc` file for writing, private: the log holds secrets (`--mcp-config`'s
/// headers and variables, the text of every file the agent read).
///
/// * A new file is created 0600 (whatever the umask).
/// * An existing one must be a regular file of this user's with no other hard link; its mode
///   is **tightened** to 0600 (it is about to be overwritten: what it held is discarded, so
///   there is nothing to keep it readable for), then it is truncated.
/// * The path is opened with `O_NOFOLLOW` (and `O_NONBLOCK`, so a FIFO cannot block the
///   open): a symbolic link at the path is refused, never followed, so a link planted in a
///   shared directory cannot make acp truncate or fill another file. A link, a FIFO, a
///   directory, a device, another user's file or a hard-linked one is refused with an error
///   saying which.
#[cfg(unix)]
pub fn open_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let refuse = |why: &str| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", path.display()),
        )
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse(
                "is a symbolic link: not followed (the log holds secrets; name the file itself)",
            ),
            Some(libc::ENXIO) => refuse("is a FIFO or a socket, not a regular file"),
            _ => io::Error::new(e.kind(), format!("{}: {e}", path.display())),
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file"));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(refuse(
            "belongs to another user, who could read it: not used (the log holds secrets)",
        ));
    }
    if meta.nlink() > 1 {
        return Err(refuse(
            "has other hard links: not overwritten (the log holds secrets)",
        ));
    }
    if meta.mode() & 0o7777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.set_len(0)?;
    Ok(file)
}

/// Windows: the file opened for writing and truncated; a symbolic link at the path refused.
#[cfg(not(unix))]
pub fn open_private(path: &Path) -> io::Result<File> {
    // Windows: no O_NOFOLLOW here; a link at the path is refused before the open (a link put
    // there between the check and the open is followed: docs/reliability.md, "Windows").
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: is a symbolic link: not followed (the log holds secrets; name the file itself)",
                path.display()
            ),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: is not a regular file", path.display()),
        ));
    }
    Ok(file)
}
