//! The JSON-RPC error every face answers for each way an `fs/*` or `terminal/*` request can
//! fail: one code and one `data.reason` per failure (`tests/client/errors.json`).
//!
//! Codes: -32602 (invalid params) for requests that cannot be served as asked (a relative or
//! malformed path, outside the session, a directory, a command that does not exist or cannot be
//! run as given); -32002 (resource not found) for a file or terminal that does not exist;
//! -32603 (internal error) for refusals and failures of ours (too large, not text, the user
//! said no, too many terminals, the system failed).

use serde::{Deserialize, Serialize};

/// How a client-side request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// A path that is not absolute.
    RelativePath,
    /// A path that cannot be used as it is (NUL, not UTF-8, resolves badly).
    InvalidPath,
    /// A directory where a file was asked for.
    IsADirectory,
    /// A path outside the session's directories.
    OutsideRoots,
    /// A file that does not exist.
    NotFound,
    /// A `terminalId` this session does not have (or released).
    UnknownTerminal,
    /// A file over the read limit.
    TooLarge,
    /// A file that is not UTF-8 text.
    NotText,
    /// The user (or the policy, with no one to ask) refused.
    PermissionDenied,
    /// A terminal request that cannot be run as given (invalid env name, NUL, empty command,
    /// a `cwd` outside the session).
    InvalidCommand,
    /// The command does not exist or is not executable.
    CommandNotFound,
    /// The command exists but could not be started (the system refused).
    SpawnFailed,
    /// Too many terminals are open.
    TooManyTerminals,
    /// Answers in flight are over their byte budget and the agent is not reading them.
    AnswerBudget,
    /// Another system error.
    Io,
}

/// -32602
pub const INVALID_PARAMS: i64 = -32602;
/// -32002
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// -32603
pub const INTERNAL_ERROR: i64 = -32603;

impl Failure {
    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        use Failure::*;
        match self {
            RelativePath | InvalidPath | IsADirectory | OutsideRoots | InvalidCommand
            | CommandNotFound => INVALID_PARAMS,
            NotFound | UnknownTerminal => RESOURCE_NOT_FOUND,
            TooLarge | NotText | PermissionDenied | SpawnFailed | TooManyTerminals
            | AnswerBudget | Io => INTERNAL_ERROR,
        }
    }

    /// `data.reason`: the failure's name (`not_found`, `permission_denied`…).
    pub fn reason(self) -> &'static str {
        use Failure::*;
        match self {
            RelativePath => "relative_path",
            InvalidPath => "invalid_path",
            IsADirectory => "is_a_directory",
            OutsideRoots => "outside_roots",
            NotFound => "not_found",
            UnknownTerminal => "unknown_terminal",
            TooLarge => "too_large",
            NotText => "not_text",
            PermissionDenied => "permission_denied",
            InvalidCommand => "invalid_command",
            CommandNotFound => "command_not_found",
            SpawnFailed => "spawn_failed",
            TooManyTerminals => "too_many_terminals",
            AnswerBudget => "answer_budget",
            Io => "io",
        }
    }
}
