//! What interrupts `acp chat`: Ctrl-C, SIGHUP, SIGTERM.

#[cfg(unix)]
use tokio::signal::unix::{signal, Signal, SignalKind};
#[cfg(windows)]
use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, CtrlBreak, CtrlC, CtrlClose};

use super::outcome::Outcome;
use crate::cli::exit;

/// The signals that interrupt or end `acp chat`.
#[cfg(unix)]
pub(super) struct Signals {
    pub(super) int: Signal,
    pub(super) hup: Signal,
    pub(super) term: Signal,
}

/// Windows: the console's events (Ctrl-C; the console closed for SIGHUP; Ctrl-Break for
/// SIGTERM), through the console control handler tokio installs.
#[cfg(windows)]
pub(super) struct Signals {
    pub(super) int: CtrlC,
    pub(super) hup: CtrlClose,
    pub(super) term: CtrlBreak,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Interrupt {
    /// Ctrl-C: cancel the turn (a second one quits).
    Int,
    /// The terminal went away (SIGHUP) or we were told to stop (SIGTERM): quit at once,
    /// stopping the agent's and the terminals' process groups.
    Hangup,
    Term,
}

impl Signals {
    #[cfg(unix)]
    pub(super) fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    #[cfg(windows)]
    pub(super) fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: ctrl_c()?,
            hup: ctrl_close()?,
            term: ctrl_break()?,
        })
    }

    pub(super) async fn recv(&mut self) -> Interrupt {
        tokio::select! {
            _ = self.int.recv() => Interrupt::Int,
            _ = self.hup.recv() => Interrupt::Hangup,
            _ = self.term.recv() => Interrupt::Term,
        }
    }
}

/// How a SIGHUP / SIGTERM ends the chat.
pub(super) fn quit(sig: Interrupt) -> Outcome {
    match sig {
        Interrupt::Hangup => Outcome::fail(exit::HANGUP, "hung up (SIGHUP): stopped the agent"),
        Interrupt::Term => {
            Outcome::fail(exit::TERMINATED, "terminated (SIGTERM): stopped the agent")
        }
        Interrupt::Int => Outcome::fail(exit::INTERRUPTED, "interrupted"),
    }
}

/// Whether an outcome ends the whole chat (not just a turn).
pub(super) fn ends_chat(outcome: &Outcome) -> bool {
    matches!(
        outcome.code,
        exit::INTERRUPTED | exit::HANGUP | exit::TERMINATED
    )
}
