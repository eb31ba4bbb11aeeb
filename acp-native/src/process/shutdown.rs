//! Stopping an agent: [`AgentProcess::shutdown`] (stdin closed, grace, `SIGTERM`, grace,
//! `SIGKILL` of the group), and the `SIGKILL` of the group when an [`AgentProcess`] is dropped.
//! Under [`adopt_orphans`](super::adopt_orphans) the agent's descendants are recorded before
//! each step, so those outside its group are ended with it (see [`orphans`](super::orphans)).

use std::time::Duration;

use super::{orphans, signal_group, AgentProcess, ExitReport};

/// Records the agent's current descendants (see [`orphans`]), off the async threads.
async fn note_descendants() {
    if orphans::orphans_adopted() {
        let _ = tokio::task::spawn_blocking(|| orphans::note_descendants(true)).await;
    }
}

/// Which step of [`AgentProcess::shutdown`] ended the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownStage {
    /// It had already exited before shutdown began.
    AlreadyExited,
    /// It exited within the grace period after stdin was closed.
    StdinClosed,
    /// It exited within the grace period after `SIGTERM` to its group.
    Terminated,
    /// It needed `SIGKILL`.
    Killed,
}

/// Result of [`AgentProcess::shutdown`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownOutcome {
    /// Which step ended it.
    pub stage: ShutdownStage,
    /// The exit report (with `shutdown_requested` set unless it had already exited).
    pub report: ExitReport,
}

impl AgentProcess {
    /// Stops the child: close stdin (if still held), wait up to `grace`; `SIGTERM` the group,
    /// wait up to `grace`; `SIGKILL` the group and reap. Whatever step ended the leader, a final
    /// `SIGKILL` goes to the group while anything may be left in it (its stderr pipe is still
    /// open), so no grandchild in it outlives the agent; under
    /// [`adopt_orphans`](super::adopt_orphans), neither does one that left the group (returns
    /// once they are ended). Worst case about `2 * grace` plus the kill (and
    /// [`orphans::END_LIMIT`]).
    pub async fn shutdown(&mut self, grace: Duration) -> ShutdownOutcome {
        self.shutdown_staged(grace, grace).await
    }

    /// [`AgentProcess::shutdown`] with separate waits after closing stdin (`stdin_grace`) and
    /// after `SIGTERM` (`term_grace`).
    pub async fn shutdown_staged(
        &mut self,
        stdin_grace: Duration,
        term_grace: Duration,
    ) -> ShutdownOutcome {
        if !self.is_alive() {
            self.kill_stragglers();
            let report = self.wait().await;
            return ShutdownOutcome {
                stage: ShutdownStage::AlreadyExited,
                report,
            };
        }
        self.shutdown_requested = true;
        note_descendants().await;
        drop(self.stdin.take());
        let exit = self.exit_status();
        tokio::pin!(exit);
        let stage = if tokio::time::timeout(stdin_grace, &mut exit).await.is_ok() {
            ShutdownStage::StdinClosed
        } else {
            note_descendants().await;
            if let Err(e) = signal_group(self.pid, super::SIGTERM) {
                tracing::warn!(pid = self.pid, "SIGTERM to agent group failed: {e}");
            }
            if tokio::time::timeout(term_grace, &mut exit).await.is_ok() {
                ShutdownStage::Terminated
            } else {
                note_descendants().await;
                if let Err(e) = signal_group(self.pid, super::SIGKILL) {
                    tracing::warn!(pid = self.pid, "SIGKILL to agent group failed: {e}");
                }
                (&mut exit).await;
                ShutdownStage::Killed
            }
        };
        // Grandchildren that stayed behind in the group.
        self.kill_stragglers();
        let report = self.wait().await;
        ShutdownOutcome { stage, report }
    }
}

impl AgentProcess {
    /// After the leader has exited: `SIGKILL` the group if something may still be in it (its
    /// stderr pipe is still open). Once the leader is reaped and the pipe is at EOF, the group
    /// id may be free for reuse, so it is not signalled.
    fn kill_stragglers(&self) {
        if !*self.stderr_done_rx.borrow() {
            let _ = signal_group(self.pid, super::SIGKILL);
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if self.is_alive() {
            // (Not waiting for the registry: the end of its orphans runs in its waiter task.)
            orphans::note_descendants(false);
            let _ = signal_group(self.pid, super::SIGKILL);
        } else {
            self.kill_stragglers();
        }
    }
}
