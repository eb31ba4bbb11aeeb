//! What arrives from the agent outside the calls `acp chat` makes: its requests and updates as
//! [`Event`]s, in the order their handlers ran (acp-native keeps wire order: a call's answer
//! comes after the updates sent before it), and what it wrote that is not a message
//! ([`Warning`]s from the [`Watch`]).

use std::sync::Arc;

use agent_client_protocol_schema::v1 as s;
use tokio::sync::mpsc;

use super::requests::{Event, UpdateGate};
use crate::cli::render::Ui;
use crate::cli::watch::{Warning, Watch};

pub(super) struct Inbox {
    ui: Ui,
    /// The agent's requests and updates, from the connection's handlers.
    pub(super) events: mpsc::Receiver<Event>,
    /// What the agent wrote that is not a message (from the watch).
    pub(super) warnings: mpsc::UnboundedReceiver<Warning>,
    /// The agent's stream as the watch sees it (when it last wrote).
    pub(super) watch: Arc<Watch>,
    /// Whether updates wait until taken (while a session opens).
    pub(super) gate: Arc<UpdateGate>,
    /// The last non-JSON line the agent printed (for error messages).
    last_garbage: Option<String>,
    /// Whether the "is this an ACP agent?" hint was given.
    hinted: bool,
}

impl Inbox {
    pub(super) fn new(
        ui: Ui,
        events: mpsc::Receiver<Event>,
        warnings: mpsc::UnboundedReceiver<Warning>,
        watch: Arc<Watch>,
        gate: Arc<UpdateGate>,
    ) -> Inbox {
        Inbox {
            ui,
            events,
            warnings,
            watch,
            gate,
            last_garbage: None,
            hinted: false,
        }
    }

    /// Says what the agent wrote that is not a message (and keeps it for error messages).
    pub(super) fn garbage(&mut self, warning: Warning) {
        match warning {
            Warning::NotJson(line) => {
                self.ui.warn(&format!(
                    "the agent wrote a line that is not JSON to stdout (ignored): {line}"
                ));
                // After its first such line, a hint instead of a silent wait for the timeout.
                if !self.hinted {
                    self.hinted = true;
                    self.ui.warn(
                        "is this an ACP agent? its output is not JSON-RPC; \
                         some agents need a flag such as --acp",
                    );
                }
                self.last_garbage = Some(line);
            }
            Warning::Oversize { limit, start } => {
                self.ui.warn(&format!(
                    "the agent wrote a message over the {limit}-byte limit (skipped): {start}…"
                ));
                self.last_garbage = Some(format!("(a message over {limit} bytes) {start}…"));
            }
        }
    }

    /// Says the warnings waiting, in order (before an error or a turn's end).
    pub(super) fn drain_warnings(&mut self) {
        while let Ok(w) = self.warnings.try_recv() {
            self.garbage(w);
        }
    }

    /// "; it wrote non-JSON to stdout: …" for error messages, if it did.
    pub(super) fn garbage_hint(&self) -> String {
        match &self.last_garbage {
            Some(g) => format!("; it wrote non-JSON to stdout: {g}"),
            None => String::new(),
        }
    }

    /// Between turns: shows updates at once (agents announce commands, modes...); refuses
    /// permission requests, which belong to turns.
    pub(super) fn idle_event(&mut self, event: Event) {
        match event {
            // (`_bytes` and `_taken` are given back once it is shown.)
            Event::Update(params, _bytes, _taken) => self.ui.session_update(params.as_deref()),
            Event::Wrote(line) => self.ui.wrote(&line),
            Event::Permission(ask) => {
                let title = ask.title(&self.ui);
                self.ui
                    .permission_outcome(&title, "cancelled (no turn is running)");
                let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
            }
        }
        self.settle();
    }

    /// Once every event waiting was taken: what they added to stdout is written (in one go
    /// for a burst of updates).
    pub(super) fn settle(&self) {
        if self.events.is_empty() {
            self.ui.flush();
        }
    }

    /// After a prompt's answer: the updates sent before it are all queued already (wire
    /// order), and are shown now; a question still there belongs to the turn that ended:
    /// answered `cancelled`.
    pub(super) fn catch_up_turn(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            match event {
                Event::Update(params, _bytes, _taken) => self.ui.session_update(params.as_deref()),
                Event::Wrote(line) => self.ui.wrote(&line),
                Event::Permission(ask) => {
                    let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                }
            }
        }
    }
}
