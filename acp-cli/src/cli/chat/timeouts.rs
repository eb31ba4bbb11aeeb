//! How long `acp chat` waits, for what: start-up and each request (`--timeout`), the silence
//! limit of a turn, the wait for a cancelled turn's answer, the agent's exit.

use std::time::Duration;

use crate::cli::args::ChatArgs;

/// Start-up and per-request limit when `--timeout` is not given.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the agent gets to exit after its stdin closes (then SIGTERM, then SIGKILL).
pub(super) const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// Longest wait to hand `session/cancel` to a connection whose peer stopped reading (its
/// write buffer is full): the turn ends anyway.
pub(super) const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(2);
/// After the connection drops, how long to wait for the agent's exit status.
pub(super) const EXIT_REPORT_WAIT: Duration = Duration::from_secs(3);
/// The silence limit of a `--prompt` turn when `--timeout` is not given: a run never hangs on
/// an agent that stays silent (an interactive chat has none: Ctrl-C is there).
pub(super) const DEFAULT_PROMPT_SILENCE: Duration = Duration::from_secs(300);
/// After `session/cancel` (Ctrl-C, a timeout), how long the agent gets to end the turn with
/// stop reason `cancelled` before acp gives up on the turn.
pub(super) const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The limits of this chat, from `--timeout` and whether a `--prompt` runs.
pub(super) struct Timeouts {
    /// Start-up and each request.
    pub(super) request: Duration,
    /// The longest the agent may stay silent during a turn (none: no limit).
    pub(super) silence: Option<Duration>,
    /// `silence` is [`DEFAULT_PROMPT_SILENCE`], not the user's `--timeout`.
    pub(super) silence_is_default: bool,
}

impl Timeouts {
    pub(super) fn new(args: &ChatArgs) -> Timeouts {
        Timeouts {
            request: args.timeout.unwrap_or(DEFAULT_TIMEOUT),
            silence: args
                .timeout
                .or(args.prompt.as_ref().map(|_| DEFAULT_PROMPT_SILENCE)),
            silence_is_default: args.timeout.is_none(),
        }
    }
}
