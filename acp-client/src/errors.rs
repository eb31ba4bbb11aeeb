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

/// A turn's stop reason in plain words, as every face shows it (`end_turn` → "Done"); a reason
/// this version does not know is named as sent.
pub fn stop_words(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" => "Done".into(),
        "cancelled" => "Cancelled".into(),
        "max_tokens" => "Stopped: the agent reached its output limit".into(),
        "max_turn_requests" => "Stopped: the agent reached its limit of steps for one turn".into(),
        "refusal" => "The agent declined to continue".into(),
        "error" => "Failed".into(),
        other => format!(
            "Stopped ({})",
            crate::display::escape_line(&other.replace('_', " "))
        ),
    }
}

/// A JSON-RPC error an agent answered (`code`, `message`, `data.reason` when given) in plain
/// words: what happened, then the agent's own message (one line, escaped) when it says more.
pub fn rpc_words(code: i64, message: &str, reason: Option<&str>) -> String {
    let what = match (code, reason) {
        (_, Some("permission_denied")) => "it was not allowed",
        (-32000, _) => "the agent needs you to sign in",
        (-32002, _) => "the agent could not find it",
        (-32600, _) => "the agent could not read the request",
        (-32601, _) => "the agent does not support this",
        (-32602, _) => "the agent did not accept the request",
        (-32603, _) => "the agent ran into an internal error",
        (-32700, _) => "the agent could not read the message",
        (-32800, _) => "it was cancelled",
        _ => "the agent reported an error",
    };
    let message = crate::display::escape_line(message.trim());
    let generic = [
        "Internal error",
        "Method not found",
        "Invalid params",
        "Invalid request",
        "Parse error",
        "Authentication required",
        "Resource not found",
        "Request cancelled",
    ];
    if message.is_empty() || generic.iter().any(|g| message.eq_ignore_ascii_case(g)) {
        what.to_string()
    } else {
        format!("{what}: {message}")
    }
}

#[cfg(test)]
mod words_tests {
    use super::*;

    #[test]
    fn stop_reasons_in_words() {
        assert_eq!(stop_words("end_turn"), "Done");
        assert_eq!(stop_words("cancelled"), "Cancelled");
        assert!(stop_words("max_tokens").contains("output limit"));
        assert!(!stop_words("max_turn_requests").contains('_'));
        assert_eq!(stop_words("new_reason"), "Stopped (new reason)");
        assert_eq!(stop_words("a\u{1b}[2J"), "Stopped (a\\e[2J)");
    }

    #[test]
    fn rpc_errors_in_words() {
        assert_eq!(
            rpc_words(-32603, "Internal error", None),
            "the agent ran into an internal error"
        );
        assert_eq!(
            rpc_words(-32603, "disk full", None),
            "the agent ran into an internal error: disk full"
        );
        assert_eq!(
            rpc_words(-32000, "Authentication required", None),
            "the agent needs you to sign in"
        );
        assert_eq!(
            rpc_words(-32602, "x", Some("permission_denied")),
            "it was not allowed: x"
        );
        assert_eq!(rpc_words(1234, "", None), "the agent reported an error");
        assert!(!rpc_words(-32603, "a\nb", None).contains('\n'));
    }
}
