//! Race-free resolution of a requested path to a directory descriptor and a name in it.
//!
//! A path is never checked and then used by name: it is resolved relative to a descriptor of
//! a root directory, and what is then read, created or renamed is named relative to the
//! descriptor of the directory the resolution ended in. A directory swapped for a symbolic link
//! (or moved) by another process after that moment changes nothing: the descriptor still refers
//! to the directory that was checked.
//!
//! Two resolvers, with the same rules (those of `openat2`'s `RESOLVE_BENEATH`, plus absolute
//! symbolic links that point inside the root, which are followed from the root):
//!
//! * Linux: `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` opens the parent
//!   directory in one call; the kernel refuses any step outside the root.
//! * Everywhere (and whenever `openat2` is unavailable, refuses, or meets a symbolic link it
//!   will not follow): a walk, one component at a time, each opened with
//!   `O_NOFOLLOW | O_DIRECTORY` relative to the previous one. A symbolic link is read with
//!   `readlinkat` and its text spliced into the rest of the path; `..` pops the walk's own
//!   stack of descriptors and may not climb above the root; at most [`MAX_LINKS`] links are
//!   followed.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use super::sys::{self, Meta};
use super::{io_error, FsError};

/// Symbolic links followed in one resolution at most (Linux's `MAXSYMLINKS`).
pub(super) const MAX_LINKS: u32 = 40;

/// How many times one resolution looks again at a component that changed under it (a symbolic
/// link that became a directory again) before giving up.
const MAX_RETRIES: u32 = 100;

/// A root directory: the descriptor everything is resolved beneath, and where it is.
pub(super) struct Root {
    fd: OwnedFd,
    /// Its real path (symlinks resolved).
    real: PathBuf,
    /// As configured.
    configured: PathBuf,
}

impl Root {
    /// Opens a configured root (following symbolic links: the root itself is trusted).
    pub(super) fn open(configured: &Path) -> io::Result<Root> {
        let fd = sys::open_dir(configured)?;
        let real = match sys::fd_path(fd.as_fd()) {
            Some(real) => real,
            None => std::fs::canonicalize(configured)?,
        };
        Ok(Root {
            fd,
            real,
            configured: configured.to_path_buf(),
        })
    }

    /// `/`: nothing is above it (`/..` is `/`).
    fn is_filesystem_root(&self) -> bool {
        self.real == Path::new("/")
    }
}

/// What the resolution is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// A missing file or directory is "not found".
    Read,
    /// Missing directories are reported (to be created), a dangling symlink is refused.
    Write,
}

/// Where a path leads: a directory held open, and what lies below it.
pub(super) struct Target {
    /// The deepest existing directory on the way.
    pub dir: OwnedFd,
    /// Its real path (the kernel's name for it where known, else the walked names).
    pub dir_real: PathBuf,
    /// Directories to create under `dir`, outermost first (writes only; `name` then goes in
    /// the last of them).
    pub missing: Vec<OsString>,
    /// The file's name; `None` when the path names a directory (the root, or ends in `..`).
    pub name: Option<OsString>,
    /// The file as it is now (never a symbolic link: a final link is followed); `None` when it
    /// does not exist.
    pub meta: Option<Meta>,
}

impl Target {
    /// The real path the target has (or will have once created).
    pub(super) fn real_path(&self) -> PathBuf {
        let mut real = self.dir_real.clone();
        real.extend(&self.missing);
        if let Some(name) = &self.name {
            real.push(name);
        }
        real
    }

    /// The path names a directory.
    pub(super) fn is_dir(&self) -> bool {
        self.name.is_none() || self.meta.is_some_and(|m| m.is_dir())
    }
}

/// Why a resolution beneath one root failed.
pub(super) enum Failure {
    /// It would leave the root.
    Escape,
    /// Unusable path (the reason is [`FsError::InvalidPath`]'s).
    Invalid(&'static str),
    /// A system call failed (`ENOENT`, `ENOTDIR`, `ELOOP`, ...).
    Io(io::Error),
}

/// Resolves `path` (absolute, validated) under one of `roots` (`None`: anywhere, beneath `/`).
///
/// A path that lexically starts with a root is resolved beneath it; a path that does not (or
/// that leaves its root through a symbolic link, e.g. to another root) is located physically
/// first (its deepest existing ancestor canonicalized) and then resolved beneath the root it
/// seems to be in. The physical step may be stale by the time it is used, which only matters
/// for which root is tried: the resolution itself never leaves the root.
pub(super) fn locate(
    path: &Path,
    roots: Option<&[PathBuf]>,
    want: Want,
    openat2: bool,
) -> Result<Target, FsError> {
    let roots: Vec<Root> = match roots {
        None => vec![Root::open(Path::new("/")).map_err(|e| io_error(path, "resolve", e))?],
        Some(list) => list.iter().filter_map(|r| Root::open(r).ok()).collect(),
    };
    for root in &roots {
        let rel = path
            .strip_prefix(&root.configured)
            .or_else(|_| path.strip_prefix(&root.real));
        if let Ok(rel) = rel {
            match resolve(root, rel, want, openat2) {
                Err(Failure::Escape) => {}
                other => return finish(path, other),
            }
        }
    }
    let real = physical(path)?;
    for root in &roots {
        if let Ok(rel) = real.strip_prefix(&root.real) {
            match resolve(root, rel, want, openat2) {
                Err(Failure::Escape) => {}
                other => return finish(path, other),
            }
        }
    }
    Err(FsError::OutsideRoots {
        path: path.to_path_buf(),
        resolved: real,
    })
}

fn finish(path: &Path, result: Result<Target, Failure>) -> Result<Target, FsError> {
    result.map_err(|failure| match failure {
        Failure::Invalid(reason) => FsError::InvalidPath {
            path: path.to_path_buf(),
            reason,
        },
        Failure::Io(e) => io_error(path, "resolve", e),
        // Callers handle escapes themselves.
        Failure::Escape => FsError::OutsideRoots {
            path: path.to_path_buf(),
            resolved: path.to_path_buf(),
        },
    })
}

/// One step of a relative path.
#[derive(Clone, Debug)]
enum Step {
    Name(OsString),
    Up,
}

fn steps_of(rel: &Path) -> Vec<Step> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            Component::ParentDir => Some(Step::Up),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Resolves `rel` beneath `root`, race-free.
pub(super) fn resolve(
    root: &Root,
    rel: &Path,
    want: Want,
    openat2: bool,
) -> Result<Target, Failure> {
    let steps = steps_of(rel);
    #[cfg(target_os = "linux")]
    if openat2 {
        if let Some(done) = beneath_openat2(root, &steps) {
            return done;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = openat2;
    walk(root, steps, want)
}

/// The `openat2` path: the parent directory opened by the kernel beneath the root, the last
/// name looked at without following it. `None` hands the request to [`walk`], which gives the
/// definitive answer: `openat2` missing or refused (`ENOSYS`, `EPERM` from seccomp), an escape
/// or an absolute symlink (`EXDEV`), a missing directory, a final symlink, any other error.
#[cfg(target_os = "linux")]
fn beneath_openat2(root: &Root, steps: &[Step]) -> Option<Result<Target, Failure>> {
    let (Step::Name(name), parent) = steps.split_last()? else {
        return None;
    };
    let parent: PathBuf = if parent.is_empty() {
        PathBuf::from(".")
    } else {
        parent
            .iter()
            .map(|s| match s {
                Step::Name(n) => n.as_os_str(),
                Step::Up => OsStr::new(".."),
            })
            .collect()
    };
    let dir =
        sys::openat2_beneath(root.fd.as_fd(), &parent, libc::O_RDONLY | libc::O_DIRECTORY).ok()?;
    let dir_real = sys::fd_path(dir.as_fd())?;
    let meta = match sys::lstatat(dir.as_fd(), name) {
        Ok(m) if m.is_symlink() => return None,
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => return None,
    };
    Some(Ok(Target {
        dir,
        dir_real,
        missing: Vec::new(),
        name: Some(name.clone()),
        meta,
    }))
}

/// The portable resolver: one component at a time from the root's descriptor.
fn walk(root: &Root, steps: Vec<Step>, want: Want) -> Result<Target, Failure> {
    // Each step, and whether it came from a symbolic link's text.
    let mut queue: VecDeque<(Step, bool)> = steps.into_iter().map(|s| (s, false)).collect();
    // The directories entered below the root, with their names.
    let mut stack: Vec<(OwnedFd, OsString)> = Vec::new();
    let (mut links, mut retries) = (0u32, 0u32);
    while let Some((step, from_link)) = queue.pop_front() {
        let name = match step {
            Step::Up => {
                if stack.pop().is_none() && !root.is_filesystem_root() {
                    return Err(Failure::Escape);
                }
                continue;
            }
            Step::Name(name) => name,
        };
        let dir = current(root, &stack);
        let last = queue.is_empty();
        if !last {
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            match sys::openat(dir, &name, flags, 0) {
                Ok(fd) => {
                    stack.push((fd, name));
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return missing(root, stack, name, from_link, queue, want);
                }
                // A symbolic link or not a directory: look at it below.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ELOOP | libc::ENOTDIR | libc::EMLINK)
                    ) => {}
                Err(e) => return Err(Failure::Io(e)),
            }
        }
        let meta = match sys::lstatat(dir, &name) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return missing(root, stack, name, from_link, queue, want);
            }
            Err(e) => return Err(Failure::Io(e)),
        };
        if meta.is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(Failure::Io(io::Error::from_raw_os_error(libc::ELOOP)));
            }
            let text = PathBuf::from(sys::readlinkat(dir, &name).map_err(Failure::Io)?);
            if text.as_os_str().is_empty() {
                return Err(Failure::Io(io::Error::from_raw_os_error(libc::ENOENT)));
            }
            let spliced = if text.is_absolute() {
                // Followed from the root when it points inside it; refused otherwise.
                let Ok(rest) = text.strip_prefix(&root.real) else {
                    return Err(Failure::Escape);
                };
                stack.clear();
                steps_of(rest)
            } else {
                steps_of(&text)
            };
            for step in spliced.into_iter().rev() {
                queue.push_front((step, true));
            }
            continue;
        }
        if last {
            let dir_real = real_of(root, &stack);
            return Ok(Target {
                dir: take(root, stack)?,
                dir_real,
                missing: Vec::new(),
                name: Some(name),
                meta: Some(meta),
            });
        }
        if meta.is_dir() {
            // A symbolic link a moment ago, a directory again now: look again.
            retries += 1;
            if retries > MAX_RETRIES {
                return Err(Failure::Io(io::Error::from_raw_os_error(libc::EAGAIN)));
            }
            queue.push_front((Step::Name(name), from_link));
            continue;
        }
        return Err(Failure::Io(io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    // The path ends at a directory (the root itself, or after `..`).
    let dir_real = real_of(root, &stack);
    Ok(Target {
        dir: take(root, stack)?,
        dir_real,
        missing: Vec::new(),
        name: None,
        meta: None,
    })
}

/// `name` does not exist in the current directory.
fn missing(
    root: &Root,
    stack: Vec<(OwnedFd, OsString)>,
    name: OsString,
    from_link: bool,
    queue: VecDeque<(Step, bool)>,
    want: Want,
) -> Result<Target, Failure> {
    let not_found = || Failure::Io(io::Error::from_raw_os_error(libc::ENOENT));
    if from_link {
        // A symbolic link's target is missing.
        return Err(match want {
            Want::Read => not_found(),
            Want::Write => Failure::Invalid("goes through a dangling symbolic link"),
        });
    }
    if want == Want::Read && !queue.is_empty() {
        return Err(not_found());
    }
    // Only plain names may follow a missing directory (steps from links always come first).
    let mut names = vec![name];
    for (step, _) in queue {
        match step {
            Step::Name(n) => names.push(n),
            Step::Up => {
                return Err(Failure::Invalid(
                    "`..` below a directory that does not exist",
                ))
            }
        }
    }
    let name = names.pop();
    let dir_real = real_of(root, &stack);
    Ok(Target {
        dir: take(root, stack)?,
        dir_real,
        missing: names,
        name,
        meta: None,
    })
}

fn current<'a>(root: &'a Root, stack: &'a [(OwnedFd, OsString)]) -> BorrowedFd<'a> {
    stack.last().map_or(root.fd.as_fd(), |(fd, _)| fd.as_fd())
}

/// The innermost directory of the walk, owned.
fn take(root: &Root, mut stack: Vec<(OwnedFd, OsString)>) -> Result<OwnedFd, Failure> {
    match stack.pop() {
        Some((fd, _)) => Ok(fd),
        None => root.fd.try_clone().map_err(Failure::Io),
    }
}

/// The real path of the walk's current directory: the kernel's name for it, else the names
/// walked (the same unless a directory on the way was renamed meanwhile).
fn real_of(root: &Root, stack: &[(OwnedFd, OsString)]) -> PathBuf {
    sys::fd_path(current(root, stack)).unwrap_or_else(|| {
        let mut real = root.real.clone();
        real.extend(stack.iter().map(|(_, n)| n));
        real
    })
}

/// Where `path` physically leads now: the deepest existing ancestor canonicalized (resolving
/// `..` and symlinks), then the missing remainder, which may only hold plain names. Only used
/// to pick a root and to report where an escape leads: never to open anything.
pub(super) fn physical(path: &Path) -> Result<PathBuf, FsError> {
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        match std::fs::canonicalize(&prefix) {
            Ok(mut real) => {
                for c in &components[split..] {
                    match c {
                        Component::Normal(name) => real.push(name),
                        _ => {
                            return Err(FsError::InvalidPath {
                                path: path.to_path_buf(),
                                reason: "`..` below a directory that does not exist",
                            })
                        }
                    }
                }
                return Ok(real);
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound) => {
                // Missing: unless it is a dangling symlink, try the parent.
                if let Ok(m) = std::fs::symlink_metadata(&prefix) {
                    if m.file_type().is_symlink() {
                        return Err(FsError::InvalidPath {
                            path: path.to_path_buf(),
                            reason: "goes through a dangling symbolic link",
                        });
                    }
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::NotADirectory) => {
                return Err(FsError::NotFound {
                    path: path.to_path_buf(),
                });
            }
            Err(e) => {
                return Err(FsError::Io {
                    path: path.to_path_buf(),
                    op: "resolve",
                    source: e,
                })
            }
        }
    }
    // Even "/" failed to canonicalize.
    Err(FsError::NotFound {
        path: path.to_path_buf(),
    })
}
