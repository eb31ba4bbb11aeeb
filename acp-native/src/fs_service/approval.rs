//! Writes that need the user's question ([`acp_client::writes`]): files that git, shells,
//! editors or tools execute or obey, and executable files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use acp_client::writes::{classify, FileFacts, OwnDirs, Sensitive, WriteClass};
use futures::future::BoxFuture;

#[cfg(unix)]
use super::resolve::Target;
#[cfg(all(not(unix), not(windows)))]
use super::unsupported::Target;
#[cfg(windows)]
use super::windows::Target;
use super::FsError;

/// One write that needs the user's yes, as the approver gets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SensitiveWrite {
    /// The real path the write reaches (absolute, symbolic links resolved): what to show,
    /// rather than the path the agent named (`notes/config` through `notes -> .git` is
    /// `.git/config` here).
    pub path: PathBuf,
    /// Why it needs a question; [`Sensitive::describe`] says it in words.
    pub reason: Sensitive,
    /// The file exists now (when it does and `old_text` is `None`, its content could not be
    /// read as text).
    pub exists: bool,
    /// The file's current content, when it exists as a readable UTF-8 text file within
    /// [`FsConfig::max_read_bytes`](super::FsConfig::max_read_bytes) (for a diff); `None`
    /// otherwise (missing, binary, too large, not a regular file).
    pub old_text: Option<String>,
    /// The content the agent wants written.
    pub new_text: String,
    /// The file exists and is executable; a yes writes the new content with the same
    /// permissions, so it stays executable.
    pub executable: bool,
}

/// Answers sensitive writes: `true` writes, `false` refuses (the agent gets
/// [`FsError::Refused`]). The future may wait for a person; dropping it (the request cancelled)
/// writes nothing.
pub type WriteApprover = Arc<dyn Fn(SensitiveWrite) -> BoxFuture<'static, bool> + Send + Sync>;

/// What a write needs before it may go ahead.
pub(super) enum Needs {
    /// Nothing: an ordinary file.
    Nothing,
    /// The user's yes.
    Question {
        real: PathBuf,
        reason: Sensitive,
        executable: bool,
    },
}

/// Classifies a resolved write target by its real path and the file's facts; `own` are the
/// client's own directories ([`FsConfig::own_dirs`](super::FsConfig::own_dirs)).
pub(super) fn needs(path: &Path, target: &Target, own: &OwnDirs) -> Result<Needs, FsError> {
    let real = target.real_path();
    let Some(text) = real.to_str() else {
        return Err(FsError::InvalidPath {
            path: path.to_path_buf(),
            reason: "resolves to a path that is not valid UTF-8",
        });
    };
    let facts = FileFacts {
        exists: target.meta.is_some(),
        executable: target.meta.is_some_and(|m| m.is_executable_file()),
    };
    Ok(match classify(text, facts, own) {
        WriteClass::Ordinary => Needs::Nothing,
        WriteClass::Ask { reason } => Needs::Question {
            real,
            reason,
            executable: facts.executable,
        },
    })
}
