//! [`TerminalError`]: why a terminal request failed, and its JSON-RPC error.

use std::fmt;
use std::io;

use acp_client::errors::Failure;
use acp_core::ErrorObject;
use serde_json::json;

#[cfg(doc)] // (for links in the docs)
use super::TerminalConfig;
use crate::driver::AnswerBudgetError;
use crate::process::SpawnError;

/// Why a terminal request failed. Maps to a JSON-RPC error with [`TerminalError::code`],
/// [`TerminalError::message`] and [`TerminalError::data`].
///
/// | variant | code |
/// |---|---|
/// | `NotFound` (unknown, released, or another session's id) | `-32002` Resource not found |
/// | `InvalidParams`; `Spawn` except `SpawnError::Io` | `-32602` Invalid params |
/// | `TooManyTerminals`, `Spawn(SpawnError::Io)`, `Io`, `AnswerBudget`, `Unsupported` | `-32603` Internal error |
#[derive(Debug)]
pub enum TerminalError {
    /// No such terminal for this session (never created, already released, or another
    /// session's).
    NotFound {
        /// The id as requested.
        terminal_id: String,
    },
    /// [`TerminalConfig::max_terminals`] unreleased terminals already exist.
    TooManyTerminals {
        /// The limit.
        limit: usize,
    },
    /// The request itself is unusable (relative `cwd`, malformed env variable, NUL in args).
    InvalidParams {
        /// What is wrong.
        reason: String,
    },
    /// The command could not be started.
    Spawn(SpawnError),
    /// Setting up the output pipe failed.
    Io {
        /// What was being done.
        op: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The output could not be reserved in the connection's answer budget: earlier answers
    /// still hold it, unread by the agent (see [`crate::driver::reserve_answer_bytes`]).
    AnswerBudget(AnswerBudgetError),
    /// This platform cannot run terminals (Windows, for now): nothing was started.
    Unsupported {
        /// The command requested.
        command: String,
        /// What is not supported, as a sentence.
        what: &'static str,
    },
}

impl TerminalError {
    /// Which failure it is, in the shared table (acp-client's `errors`: one code and
    /// `data.reason` per failure, the same in the extension).
    pub fn failure(&self) -> Failure {
        match self {
            TerminalError::NotFound { .. } => Failure::UnknownTerminal,
            TerminalError::InvalidParams { .. } => Failure::InvalidCommand,
            TerminalError::Spawn(SpawnError::Io { .. }) => Failure::SpawnFailed,
            TerminalError::Spawn(
                SpawnError::CommandNotFound { .. } | SpawnError::NotExecutable { .. },
            ) => Failure::CommandNotFound,
            TerminalError::Spawn(_) => Failure::InvalidCommand,
            TerminalError::TooManyTerminals { .. } => Failure::TooManyTerminals,
            TerminalError::Io { .. } => Failure::Io,
            TerminalError::Unsupported { .. } => Failure::SpawnFailed,
            TerminalError::AnswerBudget(_) => Failure::AnswerBudget,
        }
    }

    /// The JSON-RPC error code ([`TerminalError::failure`]'s).
    pub fn code(&self) -> i32 {
        self.failure().code() as i32
    }

    /// A one-sentence message for the JSON-RPC error (same as `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Structured details for the JSON-RPC error's `data`, with `reason` (the failure's
    /// name) always set.
    pub fn data(&self) -> Option<serde_json::Value> {
        let mut data = self.details().unwrap_or_else(|| json!({}));
        if let Some(map) = data.as_object_mut() {
            map.entry("reason")
                .or_insert_with(|| json!(self.failure().reason()));
        }
        Some(data)
    }

    fn details(&self) -> Option<serde_json::Value> {
        match self {
            TerminalError::NotFound { terminal_id } => Some(json!({ "terminalId": terminal_id })),
            TerminalError::TooManyTerminals { limit } => Some(json!({ "limit": limit })),
            TerminalError::InvalidParams { .. } => None,
            TerminalError::Spawn(e) => match e {
                SpawnError::CommandNotFound { command, .. }
                | SpawnError::InvalidCommand { command, .. }
                | SpawnError::NotExecutable { command, .. }
                | SpawnError::Io { command, .. } => Some(json!({ "command": command })),
                SpawnError::InvalidCwd { cwd, .. } => Some(json!({ "cwd": cwd.to_string_lossy() })),
            },
            TerminalError::Io { .. } => None,
            TerminalError::Unsupported { command, .. } => Some(json!({ "command": command })),
            TerminalError::AnswerBudget(e) => ErrorObject::from(e.clone()).data,
        }
    }

    /// The error as the schema crate's JSON-RPC error object.
    pub fn to_acp_error(&self) -> agent_client_protocol_schema::v1::Error {
        agent_client_protocol_schema::v1::Error::new(self.code(), self.message()).data(self.data())
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TerminalError::NotFound { terminal_id } => {
                write!(f, "terminal not found: {terminal_id}")
            }
            TerminalError::TooManyTerminals { limit } => write!(
                f,
                "too many terminals (limit {limit}); release terminals that are no longer needed"
            ),
            TerminalError::InvalidParams { reason } => {
                write!(f, "invalid terminal request: {reason}")
            }
            TerminalError::Spawn(e) => e.fmt(f),
            TerminalError::Io { op, source } => write!(f, "cannot {op}: {source}"),
            TerminalError::AnswerBudget(e) => e.fmt(f),
            TerminalError::Unsupported { command, what } => {
                write!(f, "cannot run `{command}`: {what}")
            }
        }
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TerminalError::Spawn(e) => Some(e),
            TerminalError::Io { source, .. } => Some(source),
            TerminalError::AnswerBudget(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SpawnError> for TerminalError {
    fn from(e: SpawnError) -> Self {
        TerminalError::Spawn(e)
    }
}
