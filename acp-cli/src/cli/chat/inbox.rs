//! What arrives from the agent outside the calls `acp chat` makes: its requests and updates as
//! [`Event`]s, what it wrote that is not a message ([`Warning`]s from the tap), and how far the
//! updates are shown, compared with what the tap counted on the wire.

use std::sync::Arc;
use std::time::Duration;

use acp_core::RawValue;
use agent_client_protocol_schema::v1 as s;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::requests::Event;
use crate::cli::render::Ui;
use crate::cli::rpc_log::{Tap, Warning};

pub(super) struct Inbox {
    ui: Ui,
    /// The agent's requests and updates, from the connection's handlers.
    pub(super) events: mpsc::Receiver<Event>,
    /// What the agent wrote that is not a message (from the tap).
    pub(super) warnings: mpsc::UnboundedReceiver<Warning>,
    /// The tap on the agent's stdio (what arrived, in order).
    pub(super) tap: Arc<Tap>,
    /// `session/update`s shown (or folded) so far; compared with [`Tap::updates_received`].
    pub(super) rendered: u64,
    /// While a `session/load` whose replay is not shown runs: the replayed updates folded
    /// so far (acp-client's `Thread::replay_view`).
    pub(super) folded: Option<u64>,
    /// The last non-JSON line the agent printed (for error messages).
    last_garbage: Option<String>,
}

impl Inbox {
    pub(super) fn new(
        ui: Ui,
        events: mpsc::Receiver<Event>,
        warnings: mpsc::UnboundedReceiver<Warning>,
        tap: Arc<Tap>,
    ) -> Inbox {
        Inbox {
            ui,
            events,
            warnings,
            tap,
            rendered: 0,
            folded: None,
            last_garbage: None,
        }
    }

    /// Says what the agent wrote that is not a message (and keeps it for error messages).
    pub(super) fn garbage(&mut self, warning: Warning) {
        match warning {
            Warning::NotJson(line) => {
                self.ui.warn(&format!(
                    "the agent wrote a line that is not JSON to stdout (ignored): {line}"
                ));
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

    /// Shows one `session/update`, or folds it unshown when it is part of a `session/load`'s
    /// replay that is not shown (see [`Inbox::folded`]).
    pub(super) fn render_update(&mut self, params: Option<Box<RawValue>>) {
        let number = self.rendered;
        self.rendered += 1;
        // Part of a `session/load`'s replay that is not shown (see `Chat::wait_replay`).
        if let (Some(folded), Some((from, to))) = (self.folded.as_mut(), self.tap.load_replay()) {
            if number >= from && to.is_none_or(|to| number < to) {
                *folded += 1;
                self.ui.fold_replayed(params.as_deref());
                return;
            }
        }
        self.ui.session_update(params.as_deref());
    }

    /// Between turns: shows updates at once (agents announce commands, modes...); refuses
    /// permission requests, which belong to turns.
    pub(super) fn idle_event(&mut self, event: Event) {
        match event {
            Event::Update(params, _bytes) => self.render_update(params),
            Event::Permission(ask) => {
                let title = ask.title(&self.ui);
                self.ui
                    .permission_outcome(&title, "cancelled (no turn is running)");
                let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
            }
        }
    }

    /// After a `session/load` was answered: takes the updates sent before the answer (up to
    /// number `to`, at most 5 s), as [`Inbox::idle_event`] does.
    pub(super) async fn catch_up(&mut self, to: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.rendered < to {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) => self.idle_event(event),
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// After a prompt's answer: updates sent before it may still be on their way to us; the
    /// tap has counted them all, so they are shown until that many have been (at most 5 s).
    /// A question still arriving belongs to the turn that ended: answered `cancelled`.
    pub(super) async fn catch_up_turn(&mut self) {
        let expected = self.tap.updates_received();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.rendered < expected {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(Event::Update(params, _bytes))) => self.render_update(params),
                Ok(Some(Event::Permission(ask))) => {
                    let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}
