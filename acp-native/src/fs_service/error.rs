//! [`FsError`]: why a file request failed, and the JSON-RPC error it becomes.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use acp_client::errors::Failure;
use acp_client::writes::Sensitive;
use serde_json::json;

/// Why a file request failed. Maps to a JSON-RPC error with [`FsError::code`],
/// [`FsError::message`] and [`FsError::data`].
///
/// | variant | code |
/// |---|---|
/// | `RelativePath`, `InvalidPath`, `IsADirectory`, `OutsideRoots` | `-32602` Invalid params |
/// | `NotFound` | `-32002` Resource not found |
/// | `TooLarge`, `NotUtf8`, `Io` | `-32603` Internal error |
/// | `Refused` | `-32603` Internal error, `data.reason = "permission_denied"` |
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
    /// The file is larger than [`FsConfig::max_read_bytes`](super::FsConfig::max_read_bytes).
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
    /// A write that needs the user's question was not allowed: the approver said no, or there
    /// is none ([`FsConfig::sensitive_writes`](super::FsConfig::sensitive_writes)). Nothing was touched.
    Refused {
        /// The path as requested.
        path: PathBuf,
        /// The real path the write would have reached.
        resolved: PathBuf,
        /// Why it needed a question.
        reason: Sensitive,
        /// Whether an approver was asked (`false`: none is configured).
        asked: bool,
    },
    /// The answer would not fit the connection's answer budget and the peer is not reading
    /// (see [`crate::driver::reserve_answer_bytes`]).
    AnswerBudget {
        /// The path as requested.
        path: PathBuf,
        /// The budget's report.
        source: crate::driver::AnswerBudgetError,
    },
    /// This platform cannot do it safely (neither Unix nor Windows: the confined file service
    /// is not implemented there; every request gets this before anything is touched).
    Unsupported {
        /// The path as requested.
        path: PathBuf,
        /// What is not supported, as a sentence.
        what: &'static str,
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
    /// Which failure it is, in the shared table (acp-client's `errors`: one code and
    /// `data.reason` per failure, the same in the extension).
    pub fn failure(&self) -> Failure {
        match self {
            FsError::RelativePath { .. } => Failure::RelativePath,
            FsError::InvalidPath { .. } => Failure::InvalidPath,
            FsError::IsADirectory { .. } => Failure::IsADirectory,
            FsError::OutsideRoots { .. } => Failure::OutsideRoots,
            FsError::NotFound { .. } => Failure::NotFound,
            FsError::TooLarge { .. } => Failure::TooLarge,
            FsError::NotUtf8 { .. } => Failure::NotText,
            FsError::AnswerBudget { .. } => Failure::AnswerBudget,
            FsError::Refused { .. } => Failure::PermissionDenied,
            FsError::Io { .. } | FsError::Unsupported { .. } => Failure::Io,
        }
    }

    /// The JSON-RPC error code ([`FsError::failure`]'s).
    pub fn code(&self) -> i32 {
        self.failure().code() as i32
    }

    /// A one-sentence message for the JSON-RPC error (same as `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Structured details for the JSON-RPC error's `data`: always `{"reason": <the failure's
    /// name>, "path": ...}`, plus variant-specific fields (`why`, `resolved`, `size`/`limit`,
    /// `op`/`error`). A refusal is `{"reason": "permission_denied", "path", "resolved",
    /// "sensitive": "git", "why"}`, like the other permission refusals of `acp chat`.
    pub fn data(&self) -> Option<serde_json::Value> {
        let mut data = self.details();
        if let Some(map) = data.as_object_mut() {
            map.entry("reason")
                .or_insert_with(|| json!(self.failure().reason()));
        }
        Some(data)
    }

    fn details(&self) -> serde_json::Value {
        let p = |p: &Path| p.to_string_lossy().into_owned();
        match self {
            FsError::RelativePath { path }
            | FsError::NotFound { path }
            | FsError::IsADirectory { path }
            | FsError::NotUtf8 { path } => json!({ "path": p(path) }),
            FsError::InvalidPath { path, reason } => json!({ "path": p(path), "why": reason }),
            FsError::OutsideRoots { path, resolved } => {
                json!({ "path": p(path), "resolved": p(resolved) })
            }
            FsError::TooLarge { path, size, limit } => {
                json!({ "path": p(path), "size": size, "limit": limit })
            }
            FsError::Refused {
                path,
                resolved,
                reason,
                ..
            } => json!({
                "reason": "permission_denied",
                "path": p(path),
                "resolved": p(resolved),
                "sensitive": reason,
                "why": reason.describe(),
            }),
            FsError::Io { path, op, source } => {
                json!({ "path": p(path), "op": op, "error": source.to_string() })
            }
            FsError::Unsupported { path, what } => {
                json!({ "path": p(path), "op": "unsupported", "error": what })
            }
            FsError::AnswerBudget { path, source } => json!({
                "path": p(path),
                "needed": source.needed,
                "budget": source.budget,
            }),
        }
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
            | FsError::Refused { path, .. }
            | FsError::AnswerBudget { path, .. }
            | FsError::Unsupported { path, .. }
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
            // The official SDKs' wording first: agents (gemini-cli) recognise a missing file by it.
            FsError::NotFound { path } => {
                write!(f, "Resource not found: {} does not exist", path.display())
            }
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
            FsError::Refused {
                resolved,
                reason,
                asked: true,
                ..
            } => write!(
                f,
                "permission denied: the user did not allow writing {} ({})",
                resolved.display(),
                reason.describe()
            ),
            FsError::Refused {
                resolved,
                reason,
                asked: false,
                ..
            } => write!(
                f,
                "permission denied: writing {} needs the user's permission and no one can be asked ({})",
                resolved.display(),
                reason.describe()
            ),
            FsError::Io { path, op, source } => {
                write!(f, "cannot {op} {}: {source}", path.display())
            }
            FsError::AnswerBudget { path, source } => {
                write!(f, "cannot answer the read of {}: {source}", path.display())
            }
            FsError::Unsupported { path, what } => write!(f, "{what}: {}", path.display()),
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

#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub(super) fn io_error(path: &Path, op: &'static str, e: io::Error) -> FsError {
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
