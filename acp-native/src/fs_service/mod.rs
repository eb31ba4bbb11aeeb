//! Client-side file-system service: `fs/read_text_file` and `fs/write_text_file`.
//!
//! [`FsService`] answers the two ACP requests with the official schema types. It enforces what
//! the protocol and a careful editor require:
//!
//! * **Absolute paths only.** A relative path, a path with a NUL byte or a non-UTF-8 path is
//!   rejected ([`FsError::RelativePath`], [`FsError::InvalidPath`]).
//! * **Reads**: `line` is 1-based (`0` is read as `1`), `limit` counts lines, line terminators
//!   are kept; a missing file is [`FsError::NotFound`], which maps to ACP's `-32002`
//!   "Resource not found"; files above [`FsConfig::max_read_bytes`] are refused, and so are
//!   FIFOs, sockets and devices (they could block or never end); content must be UTF-8.
//! * **Writes are confined to [`FsConfig::roots`]** unless [`FsConfig::writes`] is
//!   [`AccessScope::Anywhere`] or the caller uses [`FsService::write_text_file_unconfined`]
//!   (e.g. after the user approved that one write); reads too with
//!   [`FsConfig::reads`]` = `[`AccessScope::WithinRoots`].
//! * **Confinement is race-free.** A path is never checked and then used by name (a local
//!   process swapping a directory for a symbolic link in between would redirect the use): it
//!   is resolved relative to a descriptor of the root, never leaving it (Linux: `openat2(2)`
//!   with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`; elsewhere, or where `openat2` is
//!   unavailable, a walk opening one component at a time with `O_NOFOLLOW | O_DIRECTORY` and
//!   following symbolic links itself, with the same rules), and the file is then read, created
//!   and renamed relative to the descriptor of the directory the resolution ended in.
//!   Symbolic links and `..` are followed as long as they stay inside the root (absolute links
//!   that point inside it included); one that leads outside is [`FsError::OutsideRoots`].
//!   Missing parent directories of a write may only be reached by plain names, and are
//!   created (inside the root, never through a link put in their place).
//! * **Writes are atomic**: a temporary file is created in the target's directory
//!   (`O_CREAT | O_EXCL | O_NOFOLLOW`), written, `fsync`ed and renamed over the target (then
//!   the directory is `fsync`ed), so readers see the old or the new content, never a mix. The
//!   permissions of an existing file are kept. Writing through a symlink writes its target and
//!   keeps the link. A write that started always finishes or leaves nothing, even when its
//!   request is dropped ([`wait_for_writes`]).
//! * **Some writes need the user's yes** ([`acp_client::writes::classify`] of the real path:
//!   git's directory, editor and shell configuration, `.envrc`, executable files, ...). They
//!   go to the approver set with [`FsConfig::sensitive_writes`], which gets a
//!   [`SensitiveWrite`] (real path, reason, old and new text) and answers yes or no; without
//!   an approver, or on no, the write is refused with [`FsError::Refused`] and nothing is
//!   touched. Ordinary files never reach the approver.
//!
//! Errors carry [`FsError::code`], [`FsError::message`] and [`FsError::data`] so the protocol
//! layer can build the JSON-RPC error object (or use [`FsError::to_acp_error`]).
//!
//! **Windows**: the same rules over `cap-std` (a root is a directory handle; paths are resolved
//! beneath it, refusing `..`, absolute paths, symbolic links and junctions that lead out);
//! no execute bit, the read-only attribute is not kept (docs/reliability.md, "Windows").
//!
//! Known limits (docs/security.md, "Files"): a hard link inside a root to a file outside it is
//! an ordinary file inside (readable; a write replaces the link with a new file, the other
//! links keep the old content); a directory moved out of the root by another process while a
//! request is resolving below it is followed to where it went; unsaved editor buffers are not
//! consulted: an editor integration layers them on top.

mod approval;
mod error;
#[cfg(unix)]
mod resolve;
#[cfg(unix)]
mod sys;
#[cfg(all(not(unix), not(windows)))]
mod unsupported; // neither Unix nor Windows: every request refused (`FsError::Unsupported`)
#[cfg(windows)]
mod windows; // cap-std: handle-relative resolution beneath each root
#[cfg(unix)]
mod write;

use std::fmt;
use std::io;
#[cfg(any(unix, windows))]
use std::io::Read as _;
#[cfg(unix)]
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

pub use acp_client::writes::{OwnDirs, Sensitive};
use agent_client_protocol_schema::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
#[cfg(unix)]
use error::io_error;
pub use error::FsError;

use approval::Needs;
pub use approval::{SensitiveWrite, WriteApprover};
#[cfg(unix)]
use resolve::{locate, Target, Want};
#[cfg(unix)]
use sys::Meta;
#[cfg(all(not(unix), not(windows)))]
pub use unsupported::wait_for_writes;
#[cfg(all(not(unix), not(windows)))]
use unsupported::{atomic_write, locate, read_target, Want};
#[cfg(windows)]
pub use windows::wait_for_writes;
#[cfg(windows)]
use windows::{atomic_write, locate, read_target, Meta, Want};
#[cfg(unix)]
use write::atomic_write;
#[cfg(unix)]
pub use write::wait_for_writes;

/// Where an operation may touch files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessScope {
    /// Only under one of [`FsConfig::roots`] (after resolving symlinks and `..`).
    WithinRoots,
    /// Any absolute path the host user can access.
    Anywhere,
}

/// Configuration of an [`FsService`].
#[derive(Clone)]
pub struct FsConfig {
    /// Workspace roots (absolute; opened and resolved on every request, so roots may appear
    /// later; a root that does not exist confines to nothing). A root may itself be a symbolic
    /// link: it is trusted, and followed.
    pub roots: Vec<PathBuf>,
    /// Scope of reads. Default [`AccessScope::Anywhere`]: the agent process already runs as the
    /// same user with the same read access, so confining reads adds little; set
    /// [`AccessScope::WithinRoots`] for sandboxed agents.
    pub reads: AccessScope,
    /// Scope of writes. Default [`AccessScope::WithinRoots`].
    pub writes: AccessScope,
    /// Largest file [`FsService::read_text_file`] reads, in bytes. Default 10 MiB.
    pub max_read_bytes: u64,
    /// Who answers writes that need the user's question ([`FsConfig::sensitive_writes`]).
    /// `None` (the default): such writes are refused.
    pub sensitive_writes: Option<WriteApprover>,
    /// The client's own directories ([`FsConfig::own_dirs`]): writes under them need the
    /// user's question. Default: none beyond their usual places.
    pub own_dirs: OwnDirs,
    /// Resolve with `openat2` where the kernel has it (else only the portable walk).
    openat2: bool,
}

impl fmt::Debug for FsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsConfig")
            .field("roots", &self.roots)
            .field("reads", &self.reads)
            .field("writes", &self.writes)
            .field("max_read_bytes", &self.max_read_bytes)
            .field(
                "sensitive_writes",
                &self.sensitive_writes.as_ref().map(|_| "approver"),
            )
            .field("own_dirs", &self.own_dirs)
            .finish_non_exhaustive()
    }
}

impl FsConfig {
    /// Default scopes and limit, confined to `roots`.
    pub fn new<I, P>(roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        FsConfig {
            roots: roots.into_iter().map(Into::into).collect(),
            reads: AccessScope::Anywhere,
            writes: AccessScope::WithinRoots,
            max_read_bytes: 10 * 1024 * 1024,
            sensitive_writes: None,
            own_dirs: OwnDirs::none(),
            openat2: true,
        }
    }

    /// Sets the read scope.
    pub fn reads(mut self, scope: AccessScope) -> Self {
        self.reads = scope;
        self
    }

    /// Sets the write scope.
    pub fn writes(mut self, scope: AccessScope) -> Self {
        self.writes = scope;
        self
    }

    /// Sets the read size limit.
    pub fn max_read_bytes(mut self, limit: u64) -> Self {
        self.max_read_bytes = limit;
        self
    }

    /// Sets who answers writes that need the user's question: those
    /// [`acp_client::writes::classify`] marks [`Ask`](acp_client::writes::WriteClass::Ask) for
    /// the real path they reach (git's directory, editor, shell and tool configuration,
    /// `.envrc`, executable files, ...). For each such write the approver gets a
    /// [`SensitiveWrite`] and the file is written only if its future returns `true`; `false`
    /// refuses it with [`FsError::Refused`] (nothing touched, no directory created). Ordinary
    /// files never reach the approver. Applies to [`FsService::write_text_file_unconfined`]
    /// too.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use acp_native::fs_service::{FsConfig, SensitiveWrite};
    /// let config = FsConfig::new(["/work/project"]).sensitive_writes(Arc::new(
    ///     |write: SensitiveWrite| -> futures::future::BoxFuture<'static, bool> {
    ///         Box::pin(async move {
    ///             eprintln!("allow writing {} ({})?", write.path.display(), write.reason.describe());
    ///             false // ask the user here
    ///         })
    ///     },
    /// ));
    /// # let _ = config;
    /// ```
    pub fn sensitive_writes(mut self, approver: WriteApprover) -> Self {
        self.sensitive_writes = Some(approver);
        self
    }

    /// Sets the client's own directories (its registry cache, state, history, tokens): a write
    /// under one of them is [`Sensitive::ClientFiles`], the user's question like the other
    /// sensitive writes ([`FsConfig::sensitive_writes`]). Each is given as it is and, when it
    /// or an ancestor exists, with symbolic links resolved, since writes are judged by the real
    /// path they reach.
    pub fn own_dirs<I, P>(mut self, dirs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        let mut all = Vec::new();
        for dir in dirs {
            let dir: PathBuf = dir.into();
            all.push(real_dir(&dir));
            all.push(dir);
        }
        self.own_dirs = OwnDirs::new(all.iter().filter_map(|d| d.to_str()));
        self
    }

    /// Resolves every path with the portable component walk, never `openat2` (for tests of
    /// the fallback that systems without `openat2` use).
    #[doc(hidden)]
    pub fn without_openat2(mut self) -> Self {
        self.openat2 = false;
        self
    }
}

/// A write as [`FsService::write_text_file_reporting`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The real path written (absolute, symbolic links resolved).
    pub path: PathBuf,
    /// The file existed before.
    pub existed: bool,
    /// The text it replaced, when it existed as a readable UTF-8 text file within
    /// [`FsConfig::max_read_bytes`]; `None` otherwise (see `existed`).
    pub old_text: Option<String>,
    /// The text written.
    pub new_text: String,
}

/// The `fs/*` service. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Clone, Debug)]
pub struct FsService {
    config: FsConfig,
}

impl FsService {
    /// A service with this configuration.
    pub fn new(config: FsConfig) -> Self {
        FsService { config }
    }

    /// The configuration.
    pub fn config(&self) -> &FsConfig {
        &self.config
    }

    /// `fs/read_text_file`.
    pub async fn read_text_file(
        &self,
        req: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, FsError> {
        let path = req.path;
        validate_request_path(&path)?;
        let roots = self.scope(self.config.reads == AccessScope::WithinRoots);
        let (openat2, limit) = (self.config.openat2, self.config.max_read_bytes);
        let (line, lines) = (req.line, req.limit);
        let p = path.clone();
        let target = blocking(&path, move || {
            locate(&p, roots.as_deref(), Want::Read, openat2)
        })
        .await?;
        // The answer's bytes are reserved in the connection's answer budget before the file
        // is read (its size, escaped at worst 6 bytes a byte, plus the text itself), then made
        // exact: 64 reads of a file of control characters wait for each other instead of
        // holding gigabytes of escaped text (docs/security.md, "Memory budget").
        let size = target
            .meta
            .map_or(0, |m| usize::try_from(m.size).unwrap_or(usize::MAX));
        reserve(&path, size.saturating_mul(7).saturating_add(256)).await?;
        let p = path.clone();
        let text = blocking(&path, move || {
            let text = read_target(&p, &target, limit)?;
            Ok(slice_lines(&text, line, lines).to_owned())
        })
        .await?;
        let exact = crate::driver::json_string_len(&text)
            .saturating_add(text.len())
            .saturating_add(256);
        reserve(&path, exact).await?;
        Ok(ReadTextFileResponse::new(text))
    }

    /// `fs/write_text_file`, within the configured write scope. A write that needs the user's
    /// question goes to the approver first ([`FsConfig::sensitive_writes`]).
    pub async fn write_text_file(
        &self,
        req: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, FsError> {
        let confined = self.config.writes == AccessScope::WithinRoots;
        self.write(req, confined, false).await?;
        Ok(WriteTextFileResponse::new())
    }

    /// [`FsService::write_text_file`], also saying what was written and what it replaced
    /// ([`Written`]), for a UI that reports each write (`acp chat` logs `wrote PATH (+N -M)`).
    /// The text replaced is read from the file the write resolved to, before it is replaced,
    /// within [`FsConfig::max_read_bytes`].
    pub async fn write_text_file_reporting(
        &self,
        req: WriteTextFileRequest,
    ) -> Result<Written, FsError> {
        let confined = self.config.writes == AccessScope::WithinRoots;
        let written = self.write(req, confined, true).await?;
        Ok(written.expect("reported"))
    }

    /// `fs/write_text_file` ignoring the roots (the caller obtained permission for this write).
    /// All other checks (absolute, valid path, atomicity, the approver of sensitive writes)
    /// still apply.
    pub async fn write_text_file_unconfined(
        &self,
        req: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, FsError> {
        self.write(req, false, false).await?;
        Ok(WriteTextFileResponse::new())
    }

    /// Where a write to `path` would land (symlinks and `..` resolved), after every check the
    /// write itself makes. Lets a UI show the real target before asking the user. Creates
    /// nothing.
    pub async fn resolve_write_target(&self, path: &Path) -> Result<PathBuf, FsError> {
        validate_request_path(path)?;
        let roots = self.scope(self.config.writes == AccessScope::WithinRoots);
        let openat2 = self.config.openat2;
        let path = path.to_path_buf();
        blocking(&path.clone(), move || {
            let real = locate(&path, roots.as_deref(), Want::Write, openat2)?.real_path();
            if real.to_str().is_none() {
                return Err(FsError::InvalidPath {
                    path,
                    reason: "resolves to a path that is not valid UTF-8",
                });
            }
            Ok(real)
        })
        .await
    }

    /// The roots a request is confined to (`None`: anywhere).
    fn scope(&self, confined: bool) -> Option<Vec<PathBuf>> {
        confined.then(|| self.config.roots.clone())
    }

    /// The write; with `report`, what it replaced (read before it is replaced).
    async fn write(
        &self,
        mut req: WriteTextFileRequest,
        confined: bool,
        report: bool,
    ) -> Result<Option<Written>, FsError> {
        let path = req.path.clone();
        validate_request_path(&path)?;
        let content = std::mem::take(&mut req.content);
        let roots = self.scope(confined);
        let openat2 = self.config.openat2;
        let target = {
            let path = path.clone();
            blocking(&path.clone(), move || {
                locate(&path, roots.as_deref(), Want::Write, openat2)
            })
            .await?
        };
        if target.is_dir() {
            return Err(FsError::IsADirectory { path });
        }
        // The permissions the decision saw are the ones kept: a file made executable after it
        // was classified is not silently kept executable.
        let keep_mode = target.meta.map(|m| m.permissions());
        let existed = target.meta.is_some();
        let real = target.real_path();
        let limit = self.config.max_read_bytes;
        let mut replaced = None;
        let target = match approval::needs(&path, &target, &self.config.own_dirs)? {
            Needs::Nothing if report && existed => {
                let path = path.clone();
                let (target, old) = blocking(&path.clone(), move || {
                    let old = read_target(&path, &target, limit).ok();
                    Ok((target, old))
                })
                .await?;
                replaced = old;
                target
            }
            Needs::Nothing => target,
            Needs::Question {
                real,
                reason,
                executable,
            } => {
                let refused = |asked| FsError::Refused {
                    path: path.clone(),
                    resolved: real.clone(),
                    reason,
                    asked,
                };
                let Some(approver) = self.config.sensitive_writes.clone() else {
                    return Err(refused(false));
                };
                let (target, old_text) = {
                    let path = path.clone();
                    blocking(&path.clone(), move || {
                        let old = read_target(&path, &target, limit).ok();
                        Ok((target, old))
                    })
                    .await?
                };
                if report {
                    replaced = old_text.clone();
                }
                let question = SensitiveWrite {
                    path: real.clone(),
                    reason,
                    exists: existed,
                    old_text,
                    new_text: content.clone(),
                    executable,
                };
                if !approver(question).await {
                    return Err(refused(true));
                }
                target
            }
        };
        let content = atomic_write(&path, target, keep_mode, content).await?;
        Ok(report.then_some(Written {
            path: real,
            existed,
            old_text: replaced,
            new_text: content,
        }))
    }
}

/// `dir` with the symbolic links of its longest existing ancestor resolved (the rest kept as
/// it is): where writes under it really land.
fn real_dir(dir: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = dir;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return dir.to_path_buf(),
        }
    }
}

/// Runs blocking file work on tokio's blocking pool.
/// Reserves `bytes` of the answer budget ([`crate::driver::reserve_answer_bytes`]).
async fn reserve(path: &Path, bytes: usize) -> Result<(), FsError> {
    crate::driver::reserve_answer_bytes(bytes)
        .await
        .map(drop)
        .map_err(|source| FsError::AnswerBudget {
            path: path.to_path_buf(),
            source,
        })
}

async fn blocking<T: Send + 'static>(
    path: &Path,
    job: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    tokio::task::spawn_blocking(job).await.unwrap_or_else(|e| {
        Err(FsError::Io {
            path: path.to_path_buf(),
            op: "resolve",
            source: io::Error::other(e.to_string()),
        })
    })
}

#[cfg(unix)]
/// Reads a resolved file: a regular file within `limit` bytes, opened in its directory's
/// descriptor without following a link (`O_NONBLOCK`: a FIFO put there meanwhile cannot
/// block), checked again on the open descriptor, valid UTF-8.
fn read_target(path: &Path, target: &Target, limit: u64) -> Result<String, FsError> {
    if target.is_dir() {
        return Err(FsError::IsADirectory {
            path: path.to_path_buf(),
        });
    }
    let (Some(name), Some(meta)) = (&target.name, target.meta) else {
        return Err(FsError::NotFound {
            path: path.to_path_buf(),
        });
    };
    check_readable(path, meta, limit)?;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let fd =
        sys::openat(target.dir.as_fd(), name, flags, 0).map_err(|e| io_error(path, "read", e))?;
    let meta = sys::fstat(fd.as_fd()).map_err(|e| io_error(path, "read", e))?;
    check_readable(path, meta, limit)?;
    read_bounded(path, std::fs::File::from(fd), meta.size, limit)
}

/// The text of an open, checked file (`size`: its size when checked): at most `limit` bytes
/// and valid UTF-8. The file may grow between the check and the read: never more than
/// `limit + 1` bytes are read.
#[cfg(any(unix, windows))]
fn read_bounded(
    path: &Path,
    file: std::fs::File,
    size: u64,
    limit: u64,
) -> Result<String, FsError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| error::io_error(path, "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// A file the service may read: a regular file (not a directory, FIFO, socket or device) of at
/// most `limit` bytes. One rule for both platforms' `Meta`.
#[cfg(any(unix, windows))]
fn check_readable(path: &Path, meta: Meta, limit: u64) -> Result<(), FsError> {
    if meta.is_dir() {
        return Err(FsError::IsADirectory {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        // FIFOs, sockets and devices: reading them could block forever or never end.
        return Err(FsError::InvalidPath {
            path: path.to_path_buf(),
            reason: "not a regular file",
        });
    }
    if meta.size > limit {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size: meta.size,
            limit,
        });
    }
    Ok(())
}

/// The part of `text` starting at 1-based line `line` (`None` or `0`: line 1) and spanning at
/// most `limit` lines (`None`: to the end). Lines keep their terminators; a line past the end
/// gives `""`.
pub fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> &str {
    let skip = line.unwrap_or(1).max(1) as usize - 1;
    let mut start = None;
    let mut end = text.len();
    let mut offset = 0;
    let mut taken = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i == skip {
            start = Some(offset);
        }
        if start.is_some() {
            if limit.is_some_and(|n| taken == n as usize) {
                end = offset;
                break;
            }
            taken += 1;
        }
        offset += l.len();
    }
    match start {
        Some(s) if limit != Some(0) => &text[s..end],
        _ => "",
    }
}

fn validate_request_path(path: &Path) -> Result<(), FsError> {
    if path.to_str().is_none() {
        return Err(FsError::InvalidPath {
            path: path.to_path_buf(),
            reason: "not valid UTF-8",
        });
    }
    if path.to_str().is_some_and(|p| p.contains('\0')) {
        return Err(FsError::InvalidPath {
            path: path.to_path_buf(),
            reason: "contains a NUL byte",
        });
    }
    if !path.is_absolute() {
        return Err(FsError::RelativePath {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::slice_lines;

    #[test]
    fn slicing_is_one_based_and_keeps_terminators() {
        let t = "a\nb\r\nc\nd";
        assert_eq!(slice_lines(t, None, None), t);
        assert_eq!(slice_lines(t, Some(1), None), t);
        assert_eq!(slice_lines(t, Some(0), Some(1)), "a\n");
        assert_eq!(slice_lines(t, Some(2), Some(2)), "b\r\nc\n");
        assert_eq!(slice_lines(t, Some(4), Some(10)), "d");
        assert_eq!(slice_lines(t, Some(5), None), "");
        assert_eq!(slice_lines(t, None, Some(0)), "");
        assert_eq!(slice_lines(t, None, Some(3)), "a\nb\r\nc\n");
        assert_eq!(slice_lines("", Some(1), Some(1)), "");
        assert_eq!(slice_lines("x\n", Some(2), None), "");
        assert_eq!(slice_lines("é\nü\n", Some(2), None), "ü\n");
    }
}
