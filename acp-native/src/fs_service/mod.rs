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
//!   (e.g. after the user approved that one write). Confinement is physical, not lexical: the
//!   deepest existing ancestor of the path is canonicalized (resolving `..` and symlinks), the
//!   missing remainder may only contain plain names, and the result must lie under a
//!   canonicalized root. A symlink inside a root that points outside it is therefore refused.
//! * **Writes are atomic**: a temporary file in the target's directory is written, `fsync`ed and
//!   renamed over the target (then the directory is `fsync`ed), so readers see the old or the
//!   new content, never a mix. Missing parent directories are created (inside the root). The
//!   permissions of an existing file are kept. Writing through a symlink writes its target and
//!   keeps the link.
//!
//! Errors carry [`FsError::code`], [`FsError::message`] and [`FsError::data`] so the protocol
//! layer can build the JSON-RPC error object (or use [`FsError::to_acp_error`]).
//!
//! Known limits: checks and the final rename are separate system calls, so a process that swaps a
//! directory for a symlink in between (TOCTOU) is not defended against; a hard-linked target gets
//! a new inode (the other links keep the old content). Unsaved editor buffers are not consulted:
//! an editor integration layers them on top.

use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol_schema::v1::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use serde_json::json;
use tokio::io::AsyncReadExt;

/// JSON-RPC "Invalid params".
pub const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC "Internal error".
pub const INTERNAL_ERROR: i32 = -32603;
/// ACP "Resource not found".
pub const RESOURCE_NOT_FOUND: i32 = -32002;

/// Where an operation may touch files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessScope {
    /// Only under one of [`FsConfig::roots`] (after resolving symlinks and `..`).
    WithinRoots,
    /// Any absolute path the host user can access.
    Anywhere,
}

/// Configuration of an [`FsService`].
#[derive(Clone, Debug)]
pub struct FsConfig {
    /// Workspace roots (absolute; canonicalized on every request, so roots may appear later;
    /// a root that does not exist confines to nothing).
    pub roots: Vec<PathBuf>,
    /// Scope of reads. Default [`AccessScope::Anywhere`]: the agent process already runs as the
    /// same user with the same read access, so confining reads adds little; set
    /// [`AccessScope::WithinRoots`] for sandboxed agents.
    pub reads: AccessScope,
    /// Scope of writes. Default [`AccessScope::WithinRoots`].
    pub writes: AccessScope,
    /// Largest file [`FsService::read_text_file`] reads, in bytes. Default 10 MiB.
    pub max_read_bytes: u64,
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
}

/// Why a file request failed. Maps to a JSON-RPC error with [`FsError::code`],
/// [`FsError::message`] and [`FsError::data`].
///
/// | variant | code |
/// |---|---|
/// | `RelativePath`, `InvalidPath`, `IsADirectory`, `OutsideRoots` | `-32602` Invalid params |
/// | `NotFound` | `-32002` Resource not found |
/// | `TooLarge`, `NotUtf8`, `Io` | `-32603` Internal error |
#[derive(Debug)]
pub enum FsError {
    /// The path is not absolute.
    RelativePath {
        /// The path as requested.
        path: PathBuf,
    },
    /// The path is unusable (not UTF-8, NUL byte, `..` below a missing directory, dangling
    /// symlink).
    InvalidPath {
        /// The path as requested.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// No such file (or a parent is missing or is not a directory).
    NotFound {
        /// The path as requested.
        path: PathBuf,
    },
    /// The path is a directory.
    IsADirectory {
        /// The path as requested.
        path: PathBuf,
    },
    /// The path resolves outside every configured root.
    OutsideRoots {
        /// The path as requested.
        path: PathBuf,
        /// Where it really points.
        resolved: PathBuf,
    },
    /// The file is larger than [`FsConfig::max_read_bytes`].
    TooLarge {
        /// The path as requested.
        path: PathBuf,
        /// Its size (at least this much).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file is not valid UTF-8 text.
    NotUtf8 {
        /// The path as requested.
        path: PathBuf,
    },
    /// Another I/O failure.
    Io {
        /// The path as requested.
        path: PathBuf,
        /// What was being done ("read", "write", "rename", ...).
        op: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl FsError {
    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        match self {
            FsError::RelativePath { .. }
            | FsError::InvalidPath { .. }
            | FsError::IsADirectory { .. }
            | FsError::OutsideRoots { .. } => INVALID_PARAMS,
            FsError::NotFound { .. } => RESOURCE_NOT_FOUND,
            FsError::TooLarge { .. } | FsError::NotUtf8 { .. } | FsError::Io { .. } => {
                INTERNAL_ERROR
            }
        }
    }

    /// A one-sentence message for the JSON-RPC error (same as `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Structured details for the JSON-RPC error's `data`: always `{"path": ...}`, plus
    /// variant-specific fields (`reason`, `resolved`, `size`/`limit`, `op`/`error`).
    pub fn data(&self) -> Option<serde_json::Value> {
        let p = |p: &Path| p.to_string_lossy().into_owned();
        Some(match self {
            FsError::RelativePath { path }
            | FsError::NotFound { path }
            | FsError::IsADirectory { path }
            | FsError::NotUtf8 { path } => json!({ "path": p(path) }),
            FsError::InvalidPath { path, reason } => json!({ "path": p(path), "reason": reason }),
            FsError::OutsideRoots { path, resolved } => {
                json!({ "path": p(path), "resolved": p(resolved) })
            }
            FsError::TooLarge { path, size, limit } => {
                json!({ "path": p(path), "size": size, "limit": limit })
            }
            FsError::Io { path, op, source } => {
                json!({ "path": p(path), "op": op, "error": source.to_string() })
            }
        })
    }

    /// The error as the schema crate's JSON-RPC error object.
    pub fn to_acp_error(&self) -> agent_client_protocol_schema::v1::Error {
        agent_client_protocol_schema::v1::Error::new(self.code(), self.message()).data(self.data())
    }

    /// The path the request named.
    pub fn path(&self) -> &Path {
        match self {
            FsError::RelativePath { path }
            | FsError::InvalidPath { path, .. }
            | FsError::NotFound { path }
            | FsError::IsADirectory { path }
            | FsError::OutsideRoots { path, .. }
            | FsError::TooLarge { path, .. }
            | FsError::NotUtf8 { path }
            | FsError::Io { path, .. } => path,
        }
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::RelativePath { path } => {
                write!(f, "path must be absolute: {}", path.display())
            }
            FsError::InvalidPath { path, reason } => {
                write!(f, "invalid path {}: {reason}", path.display())
            }
            FsError::NotFound { path } => write!(f, "file not found: {}", path.display()),
            FsError::IsADirectory { path } => write!(f, "path is a directory: {}", path.display()),
            FsError::OutsideRoots { path, .. } => {
                write!(f, "path is outside the workspace roots: {}", path.display())
            }
            FsError::TooLarge { path, size, limit } => write!(
                f,
                "file too large to read ({size} bytes, limit {limit}): {}",
                path.display()
            ),
            FsError::NotUtf8 { path } => {
                write!(f, "file is not valid UTF-8 text: {}", path.display())
            }
            FsError::Io { path, op, source } => {
                write!(f, "cannot {op} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for FsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FsError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
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
        let path = req.path.as_path();
        validate_request_path(path)?;
        if self.config.reads == AccessScope::WithinRoots {
            let real = match tokio::fs::canonicalize(path).await {
                Ok(real) => real,
                Err(e) => return Err(io_error(path, "read", e)),
            };
            self.check_within_roots(path, &real).await?;
        }
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| io_error(path, "read", e))?;
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
        let limit = self.config.max_read_bytes;
        if meta.len() > limit {
            return Err(FsError::TooLarge {
                path: path.to_path_buf(),
                size: meta.len(),
                limit,
            });
        }
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| io_error(path, "read", e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        // The file may grow between stat and read: never read more than limit + 1 bytes.
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| io_error(path, "read", e))?;
        if bytes.len() as u64 > limit {
            return Err(FsError::TooLarge {
                path: path.to_path_buf(),
                size: bytes.len() as u64,
                limit,
            });
        }
        let text = String::from_utf8(bytes).map_err(|_| FsError::NotUtf8 {
            path: path.to_path_buf(),
        })?;
        let content = slice_lines(&text, req.line, req.limit);
        Ok(ReadTextFileResponse::new(content.to_owned()))
    }

    /// `fs/write_text_file`, within the configured write scope.
    pub async fn write_text_file(
        &self,
        req: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, FsError> {
        let confined = self.config.writes == AccessScope::WithinRoots;
        self.write(req, confined).await
    }

    /// `fs/write_text_file` ignoring the roots (the caller obtained permission for this write).
    /// All other checks (absolute, valid path, atomicity) still apply.
    pub async fn write_text_file_unconfined(
        &self,
        req: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, FsError> {
        self.write(req, false).await
    }

    /// Where a write to `path` would land (symlinks and `..` resolved), after every check the
    /// write itself makes. Lets a UI show the real target before asking the user.
    pub async fn resolve_write_target(&self, path: &Path) -> Result<PathBuf, FsError> {
        validate_request_path(path)?;
        let target = resolve_physical(path).await?;
        if self.config.writes == AccessScope::WithinRoots {
            self.check_within_roots(path, &target).await?;
        }
        Ok(target)
    }

    async fn write(
        &self,
        mut req: WriteTextFileRequest,
        confined: bool,
    ) -> Result<WriteTextFileResponse, FsError> {
        let path = req.path.as_path();
        validate_request_path(path)?;
        let target = resolve_physical(path).await?;
        if confined {
            self.check_within_roots(path, &target).await?;
        }
        atomic_write(path, &target, std::mem::take(&mut req.content)).await?;
        Ok(WriteTextFileResponse::new())
    }

    async fn check_within_roots(&self, path: &Path, real: &Path) -> Result<(), FsError> {
        for root in &self.config.roots {
            if let Ok(root) = tokio::fs::canonicalize(root).await {
                if real.starts_with(&root) {
                    return Ok(());
                }
            }
        }
        Err(FsError::OutsideRoots {
            path: path.to_path_buf(),
            resolved: real.to_path_buf(),
        })
    }
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
    if path.as_os_str().as_bytes().contains(&0) {
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

fn io_error(path: &Path, op: &'static str, e: io::Error) -> FsError {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => FsError::NotFound {
            path: path.to_path_buf(),
        },
        io::ErrorKind::IsADirectory => FsError::IsADirectory {
            path: path.to_path_buf(),
        },
        _ => FsError::Io {
            path: path.to_path_buf(),
            op,
            source: e,
        },
    }
}

/// Resolves `path` physically: canonicalize the deepest existing ancestor (resolving `..` and
/// symlinks), then append the missing remainder, which may only hold plain names.
async fn resolve_physical(path: &Path) -> Result<PathBuf, FsError> {
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        match tokio::fs::canonicalize(&prefix).await {
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
                if real.to_str().is_none() {
                    return Err(FsError::InvalidPath {
                        path: path.to_path_buf(),
                        reason: "resolves to a path that is not valid UTF-8",
                    });
                }
                return Ok(real);
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound) => {
                // Missing: unless it is a dangling symlink, try the parent.
                if let Ok(m) = tokio::fs::symlink_metadata(&prefix).await {
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

/// Writes `content` to `target` atomically: temp file in the same directory, fsync, rename,
/// fsync the directory. `path` (as requested) is used in errors. The file work runs as one
/// blocking job that always finishes (see [`wait_for_writes`]): dropping this future (the
/// request cancelled, the connection closed) cannot leave a temporary file behind.
async fn atomic_write(path: &Path, target: &Path, content: String) -> Result<(), FsError> {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(FsError::IsADirectory {
            path: path.to_path_buf(),
        });
    };
    let existing = match tokio::fs::metadata(target).await {
        Ok(m) if m.is_dir() => {
            return Err(FsError::IsADirectory {
                path: path.to_path_buf(),
            })
        }
        Ok(m) => Some(m.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(path, "write", e)),
    };
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| FsError::Io {
            path: path.to_path_buf(),
            op: "create the directory of",
            source: e,
        })?;
    let tmp = dir.join(format!(
        ".{}.acp-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let job = WriteJob {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        target: target.to_path_buf(),
        tmp,
        existing,
    };
    let in_flight = WriteInFlight::start();
    tokio::task::spawn_blocking(move || {
        let _in_flight = in_flight;
        job.run(content.as_bytes())
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
    dir: PathBuf,
    target: PathBuf,
    tmp: PathBuf,
    existing: Option<std::fs::Permissions>,
}

impl WriteJob {
    fn run(self, bytes: &[u8]) -> Result<(), FsError> {
        use std::io::Write as _;
        let path = &self.path;
        let result = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&self.tmp)
                .map_err(|e| FsError::Io {
                    path: path.clone(),
                    op: "create a temporary file for",
                    source: e,
                })?;
            if let Some(perms) = &self.existing {
                file.set_permissions(perms.clone())
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
            std::fs::rename(&self.tmp, &self.target).map_err(|e| match e.kind() {
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
            let _ = std::fs::remove_file(&self.tmp);
            return result;
        }
        // Make the rename itself durable. Best effort: some file systems refuse to fsync a
        // directory.
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
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
