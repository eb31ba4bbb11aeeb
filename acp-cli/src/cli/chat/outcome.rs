//! How `acp chat` ends: an exit code and, for failures, what to tell the user.

use agent_client_protocol_schema::v1 as s;

use crate::cli::exit;

/// How the command ends: an exit code and, for failures, what to tell the user.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub message: Option<String>,
}

impl Outcome {
    pub(super) fn code(code: i32) -> Outcome {
        Outcome {
            code,
            message: None,
        }
    }

    pub(super) fn fail(code: i32, message: impl Into<String>) -> Outcome {
        Outcome {
            code,
            message: Some(message.into()),
        }
    }
}

/// The exit code for a stop reason.
pub(super) fn stop_reason_code(reason: s::StopReason) -> i32 {
    match reason {
        s::StopReason::EndTurn => exit::OK,
        s::StopReason::Cancelled => exit::CANCELLED,
        s::StopReason::MaxTokens => exit::MAX_TOKENS,
        s::StopReason::MaxTurnRequests => exit::MAX_TURN_REQUESTS,
        s::StopReason::Refusal => exit::REFUSAL,
        _ => exit::ERROR,
    }
}
