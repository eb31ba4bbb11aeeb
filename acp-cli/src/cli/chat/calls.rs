//! Awaiting the agent's answers (methods of [`Chat`]): a call raced with the signals, what the
//! agent sends meanwhile and its garbage (the requests that open a session: `open.rs`), and a failed call turned
//! into a message for the user: a timeout, an error answer, authentication needed, the agent
//! gone.

use std::future::Future;

use acp_core::{CallError, ErrorCode};
use acp_native::RpcError;

use super::outcome::Outcome;
use super::remote;
use super::signals::quit;
use super::timeouts::EXIT_REPORT_WAIT;
use super::Chat;
use crate::cli::exit;

impl Chat {
    /// Awaits a start-up call, failing on its error, the agent's exit or Ctrl-C.
    pub(super) async fn wait<T>(
        &mut self,
        what: &str,
        call: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<T, Outcome> {
        match self.wait_raw(call).await? {
            Ok(v) => Ok(v),
            Err(e) => Err(self.explain(what, e).await),
        }
    }

    /// Awaits a call outside a turn, taking what the agent sends meanwhile as between turns:
    /// its answer comes after the updates sent before it (wire order), so they must not wait
    /// in a full queue for a loop that waits for the answer.
    pub(super) async fn wait_raw<T>(
        &mut self,
        call: impl Future<Output = Result<T, RpcError>>,
    ) -> Result<Result<T, RpcError>, Outcome> {
        tokio::pin!(call);
        loop {
            tokio::select! {
                r = &mut call => return Ok(r),
                Some(event) = self.inbox.events.recv() => self.inbox.idle_event(event),
                Some(line) = self.inbox.warnings.recv() => self.inbox.garbage(line),
                sig = self.signals.recv() => return Err(quit(sig)),
            }
        }
    }

    /// Turns a failed call into a message for the user.
    pub(super) async fn explain(&mut self, what: &str, e: RpcError) -> Outcome {
        // Keep warnings about garbage in order before the error.
        self.inbox.drain_warnings();
        match &e {
            RpcError::Call(CallError::TimedOut { after_ms }) => Outcome::fail(
                exit::TIMEOUT,
                format!(
                    "the agent did not answer `{what}` within {} s (--timeout){}",
                    *after_ms as f64 / 1000.0,
                    self.stderr_hint().await
                ),
            ),
            // Agents that offer no method (or that check only when prompted) say so here.
            RpcError::Call(CallError::Remote(err)) if is_auth_required(&e) => Outcome::fail(
                exit::ERROR,
                format!(
                    "the agent needs authentication (it answered `{what}` with: {err}); pass its \
                     API key with --env NAME (e.g. --env ANTHROPIC_API_KEY, --env OPENAI_API_KEY, \
                     --env GEMINI_API_KEY), choose one of its methods with --auth, or log in with \
                     the agent's own command first"
                ),
            ),
            RpcError::Call(CallError::Remote(err)) => Outcome::fail(
                exit::ERROR,
                format!("the agent answered `{what}` with an error: {err}"),
            ),
            _ if e.is_closed() && self.link.remote().is_some() => {
                let reason = self.link.failure();
                Outcome::fail(
                    exit::ERROR,
                    format!(
                        "the connection to {} failed during `{what}`: {}",
                        self.link.program,
                        remote::with_hint(&reason)
                    ),
                )
            }
            _ if e.is_closed() => {
                let report = tokio::time::timeout(EXIT_REPORT_WAIT, self.link.wait_exit())
                    .await
                    .ok();
                match report {
                    Some(report) => Outcome::fail(
                        exit::ERROR,
                        format!("the agent stopped during `{what}`: {report}"),
                    ),
                    None => Outcome::fail(
                        exit::ERROR,
                        format!(
                            "the agent closed the connection during `{what}` ({}){}",
                            self.link.conn.handle().close_reason().unwrap_or_default(),
                            self.stderr_hint().await
                        ),
                    ),
                }
            }
            _ => Outcome::fail(exit::ERROR, format!("`{what}` failed: {e}")),
        }
    }

    /// "; it printed this non-JSON line...; last stderr lines: ..." for error messages.
    pub(super) async fn stderr_hint(&self) -> String {
        let mut out = self.inbox.garbage_hint();
        if self.link.remote().is_some() {
            return out;
        }
        let tail = self.link.stderr_tail().await;
        if tail.is_empty() {
            out.push_str("; it wrote nothing to stderr");
        } else {
            out.push_str("; last stderr lines:");
            for line in tail.iter().rev().take(10).rev() {
                out.push_str("\n  ");
                out.push_str(line);
            }
        }
        out
    }
}

/// The agent answered that it needs authentication (-32000).
pub(super) fn is_auth_required(e: &RpcError) -> bool {
    e.remote()
        .is_some_and(|o| o.code == ErrorCode::AuthRequired.code())
}
