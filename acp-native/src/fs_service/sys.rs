//! The few `*at` system calls the service resolves and writes with, as safe wrappers over
//! `libc`. Every name passed here is one path component or a path relative to a directory fd
//! the caller holds; none of them follows a symbolic link unless its doc says so.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// What `fstat` tells about a file (the part the service uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Meta {
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    /// `st_size`.
    pub size: u64,
}

// `mode_t` is `u32` on Linux and `u16` on macOS: the casts are not useless everywhere.
#[allow(clippy::unnecessary_cast)]
impl Meta {
    fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT as u32
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR as u32
    }

    pub fn is_symlink(&self) -> bool {
        self.kind() == libc::S_IFLNK as u32
    }

    pub fn is_file(&self) -> bool {
        self.kind() == libc::S_IFREG as u32
    }

    /// A regular file with an execute bit (user, group or other).
    pub fn is_executable_file(&self) -> bool {
        self.is_file() && self.mode & 0o111 != 0
    }

    /// The permission bits `chmod` takes (with set-id and sticky bits).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    fn from_stat(st: &libc::stat) -> Meta {
        Meta {
            mode: st.st_mode as u32,
            size: u64::try_from(st.st_size).unwrap_or(0),
        }
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Retries a call interrupted by a signal; turns -1 into the OS error.
fn retry<T: PartialEq + From<i8>>(mut f: impl FnMut() -> T) -> io::Result<T> {
    loop {
        let r = f();
        if r != T::from(-1) {
            return Ok(r);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
pub(super) fn openat(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call; `dir` is an open descriptor.
    let fd = retry(|| unsafe {
        libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode)
    })?;
    // SAFETY: a descriptor openat just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a directory by path, following symbolic links (for the configured roots only).
pub(super) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = c_name(path.as_os_str())?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    let fd = retry(|| unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a descriptor open just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `struct open_how` of `openat2(2)` (libc's is `#[non_exhaustive]`).
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, flags | O_CLOEXEC)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the
/// kernel resolves `path` (symlinks and `..` included) and fails with `EXDEV` instead of leaving
/// `dir` (absolute paths and absolute symlinks included), atomically with respect to concurrent
/// renames and symlink swaps. `ENOSYS` (kernel before 5.6) or `EPERM` (a seccomp filter) mean
/// the call is unavailable.
#[cfg(target_os = "linux")]
pub(super) fn openat2_beneath(
    dir: BorrowedFd<'_>,
    path: &Path,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let c = c_name(path.as_os_str())?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `c` and `how` outlive the call; the size passed is `how`'s.
    let fd = retry(|| unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    })?;
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: a descriptor openat2 just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: a symbolic link is described, not followed.
pub(super) fn lstatat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Meta> {
    let c = c_name(name)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `c` is NUL-terminated, `st` is writable memory of the right size.
    retry(|| unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it filled `st`.
    Ok(Meta::from_stat(unsafe { &st.assume_init() }))
}

/// `fstat(fd)`.
pub(super) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Meta> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable memory of the right size.
    retry(|| unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled `st`.
    Ok(Meta::from_stat(unsafe { &st.assume_init() }))
}

/// `readlinkat(dir, name)`: the text of a symbolic link.
pub(super) fn readlinkat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OsString> {
    let c = c_name(name)?;
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    loop {
        // SAFETY: `buf` has `capacity` writable bytes; readlinkat writes at most that many.
        let n = retry(|| unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.capacity(),
            )
        })?;
        let n = usize::try_from(n).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        if n < buf.capacity() {
            // SAFETY: readlinkat initialised the first `n` bytes.
            unsafe { buf.set_len(n) };
            return Ok(OsString::from_vec(buf));
        }
        // Possibly cut short: try again with more room.
        buf.reserve(buf.capacity());
    }
}

/// `mkdirat(dir, name, mode)`.
pub(super) fn mkdirat(dir: BorrowedFd<'_>, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    retry(|| unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode) }).map(drop)
}

/// `renameat(dir, from, dir, to)`: atomic replacement within one directory.
pub(super) fn renameat(dir: BorrowedFd<'_>, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (f, t) = (c_name(from)?, c_name(to)?);
    // SAFETY: both names are NUL-terminated and outlive the call.
    retry(|| unsafe { libc::renameat(dir.as_raw_fd(), f.as_ptr(), dir.as_raw_fd(), t.as_ptr()) })
        .map(drop)
}

/// `unlinkat(dir, name, 0)`.
pub(super) fn unlinkat(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    retry(|| unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
}

/// Where an open directory is now, as the kernel names it (`/proc/self/fd/N`); `None` where
/// that is unknown (no `/proc`, another OS, a removed directory).
pub(super) fn fd_path(fd: BorrowedFd<'_>) -> Option<std::path::PathBuf> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    let removed = link.as_os_str().as_bytes().ends_with(b" (deleted)");
    (link.is_absolute() && !removed).then_some(link)
}
