//! What interrupts `acp chat` (Ctrl-C, SIGHUP, SIGTERM) and its stdin, read on a thread.

use super::*;

/// The signals that interrupt or end `acp chat`.
pub(super) struct Signals {
    pub(super) int: Signal,
    pub(super) hup: Signal,
    pub(super) term: Signal,
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
    pub(super) fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
            term: signal(SignalKind::terminate())?,
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

/// Lines of this process's stdin, read on a thread (stdin cannot be read asynchronously in
/// a portable way), started on first use. `None` once at end of input.
pub(super) struct Stdin {
    pub(super) rx: Option<mpsc::UnboundedReceiver<String>>,
    pub(super) is_terminal: bool,
}

impl Stdin {
    pub(super) fn new() -> Stdin {
        use std::io::IsTerminal;
        Stdin {
            rx: None,
            is_terminal: std::io::stdin().is_terminal(),
        }
    }

    pub(super) async fn next_line(&mut self) -> Option<String> {
        let rx = self.rx.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                let stdin = std::io::stdin();
                for line in stdin.lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        });
        rx.recv().await
    }
}
