//! Neither Unix nor Windows: the confined `fs/*` service is not implemented there, and every
//! request is refused with [`FsError::Unsupported`] before anything is touched. The Unix service
//! resolves each path beneath a directory descriptor (`openat2`, `O_NOFOLLOW` walks), the
//! Windows one beneath a cap-std directory handle; a path-based check would be open to the very
//! races the service exists to close.
//!
//! This module has the types the service's code names (`Target`, `Meta`, `Want`), with a
//! `Target` that cannot exist: everything after the refusal is unreachable by construction.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use super::FsError;

/// What is refused here, as [`FsError::Unsupported`] says it.
const WHAT: &str = "confined file access (the fs/* service) is not supported on this platform";

/// File facts (never produced here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Meta {
    pub size: u64,
    never: Never,
}

/// An uninhabited marker that is `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Never {}

impl Meta {
    pub fn is_executable_file(&self) -> bool {
        match self.never {}
    }

    pub fn permissions(&self) -> u32 {
        match self.never {}
    }
}

/// Where a path leads (never produced here).
pub(super) struct Target {
    pub meta: Option<Meta>,
    never: Infallible,
}

impl Target {
    pub(super) fn real_path(&self) -> PathBuf {
        match self.never {}
    }

    pub(super) fn is_dir(&self) -> bool {
        match self.never {}
    }
}

/// What the resolution is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    Read,
    Write,
}

/// Refuses: see the module docs.
pub(super) fn locate(
    path: &Path,
    _roots: Option<&[PathBuf]>,
    _want: Want,
    _openat2: bool,
) -> Result<Target, FsError> {
    Err(FsError::Unsupported {
        path: path.to_path_buf(),
        what: WHAT,
    })
}

pub(super) fn read_target(_path: &Path, target: &Target, _limit: u64) -> Result<String, FsError> {
    match target.never {}
}

pub(super) async fn atomic_write(
    _path: &Path,
    target: Target,
    _keep_mode: Option<u32>,
    _content: String,
) -> Result<String, FsError> {
    match target.never {}
}

/// No write is ever in flight here: `true` at once.
pub fn wait_for_writes(_timeout: std::time::Duration) -> bool {
    true
}
