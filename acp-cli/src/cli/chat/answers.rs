//! Answering the agent's questions by acp-client's shared permission policy: `--yes`,
//! `--yes-always`, `--deny` or the user ([`AutoMode`]); what the user chose, carried out; a
//! `cancelled` answer held until the turn's `session/cancel` is sent (the schema's order).

use acp_client::display::escape_line;
use acp_client::permission::{self, AutoMode, Decision};
use agent_client_protocol_schema::v1 as s;
use tokio::sync::oneshot;

use super::requests::{policy_options, PermissionAsk};
use crate::cli::render::Ui;

/// How questions are answered, and the `cancelled` answers waiting for `session/cancel`.
pub(super) struct Answers {
    ui: Ui,
    /// `--yes`, `--yes-always`, `--deny`, or ask the user.
    mode: AutoMode,
    /// Permission requests to answer `cancelled` once `session/cancel` is sent.
    cancelling: Vec<oneshot::Sender<s::RequestPermissionOutcome>>,
}

impl Answers {
    pub(super) fn new(ui: Ui, mode: AutoMode) -> Answers {
        Answers {
            ui,
            mode,
            cancelling: Vec::new(),
        }
    }

    /// Answers a question at once when the shared policy decides it (`--yes`, `--deny`, no
    /// options); returns it when the user must be asked. A `cancelled` answer is only queued
    /// (see [`Answers::has_cancelling`]): the turn sends `session/cancel` before it (the
    /// schema's order).
    pub(super) fn auto_answer(&mut self, ask: PermissionAsk) -> Option<PermissionAsk> {
        let flag = match self.mode {
            AutoMode::Ask => "",
            AutoMode::AllowOnce => "--yes",
            AutoMode::AllowAlways => "--yes-always",
            AutoMode::Deny => "--deny",
        };
        // Our own questions about writes that change what runs are never answered by --yes:
        // the user sees them (they are refused when no one can answer).
        let mode = if ask.user_only && self.mode != AutoMode::Deny {
            AutoMode::Ask
        } else {
            self.mode
        };
        match permission::decide(&policy_options(&ask.request.options), mode) {
            Decision::Ask => {
                if mode != self.mode {
                    self.ui.notice(&format!(
                        "{flag} does not answer this question: it changes what runs"
                    ));
                } else if self.mode != AutoMode::Ask {
                    self.ui.notice(&format!(
                        "{flag}: the agent offers no option {flag} may choose; asking"
                    ));
                }
                Some(ask)
            }
            decision => {
                let how = if flag.is_empty() { "automatic" } else { flag };
                self.answer(ask, decision, how);
                None
            }
        }
    }

    /// Carries out a decision of the shared policy for `ask` (`how`: what decided it).
    pub(super) fn answer(&mut self, ask: PermissionAsk, decision: Decision, how: &str) {
        let title = ask.title(&self.ui);
        match decision {
            Decision::Select { option_id, .. } => {
                let name = ask
                    .request
                    .options
                    .iter()
                    .find(|o| *o.option_id.0 == *option_id)
                    .map(|o| escape_line(&o.name))
                    .unwrap_or_default();
                self.ui
                    .permission_outcome(&title, &format!("{name} ({how})"));
                let _ = ask.reply.send(s::RequestPermissionOutcome::Selected(
                    s::SelectedPermissionOutcome::new(option_id),
                ));
            }
            Decision::Cancel { reason } => {
                let why = match reason {
                    permission::CancelReason::Unanswerable => format!("cancelled ({how})"),
                    _ => format!("cancelled ({how}: {})", reason.describe()),
                };
                self.ui.permission_outcome(&title, &why);
                self.cancelling.push(ask.reply);
            }
            Decision::Ask => unreachable!("answer() is given decisions"),
        }
    }

    /// `cancelled` answers wait for `session/cancel`.
    pub(super) fn has_cancelling(&self) -> bool {
        !self.cancelling.is_empty()
    }

    /// Sends the waiting `cancelled` answers (once `session/cancel` went out).
    pub(super) fn send_cancelling(&mut self) {
        for reply in self.cancelling.drain(..) {
            let _ = reply.send(s::RequestPermissionOutcome::Cancelled);
        }
    }
}
