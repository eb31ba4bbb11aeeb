//! One prompt turn (methods of [`Chat`]): the prompt, what the agent sends during it, one
//! question on screen at a time with everything after it held back (bounded), the automatic
//! answers of the shared policy, Ctrl-C, the silence limit and the wait for the turn's
//! `cancelled` answer.

use std::collections::VecDeque;
use std::time::Duration;

use acp_client::display::escape_line;
use acp_client::permission;
use acp_native::ClientSideConnection;
use agent_client_protocol_schema::v1 as s;
use tokio::time::Instant;

use super::input::{DuringTurn, Input};
use super::outcome::Outcome;
use super::requests::{policy_options, Event, PermissionAsk};
use super::signals::{quit, Interrupt};
use super::timeouts::{CANCEL_SEND_LIMIT, CANCEL_WAIT};
use super::Chat;
use crate::cli::exit;
use crate::cli::render::wire_name;

/// Most events held back while a question is open (shown in order after the answer); past
/// that the UI stops taking events, with the same effect as a full queue.
const HELD_EVENTS: usize = 256;

/// How a `session/prompt` was answered.
enum Answered {
    /// v1: the turn is over (boxed: with feature `unstable` it carries the turn's usage).
    Done(Box<s::PromptResponse>),
    /// v2 (feature `unstable_protocol_v2`): the prompt was accepted (the answer as sent); the
    /// turn goes on until an idle `state_update` ends it.
    #[cfg_attr(not(feature = "unstable_protocol_v2"), allow(dead_code))]
    Accepted(Box<acp_core::RawValue>),
}

/// How a v2 agent ended the turn (the session engine's stop reason, from its idle
/// `state_update`), as v1's type, which the chat prints and maps to exit codes. `""`: the agent
/// went idle without a stop reason (the draft makes it a SHOULD): the turn is over and nothing
/// failed, so it counts as ended (exit 0) and is shown as unreported. `error` (v2's, with the
/// failure the thread kept: `failure`) and a reason this version does not know are errors
/// saying so.
fn v2_stop_reason(
    reason: &str,
    failure: Option<String>,
) -> Result<s::PromptResponse, acp_native::RpcError> {
    match reason {
        "" => Ok(s::PromptResponse::new(s::StopReason::EndTurn)),
        "error" => Err(acp_native::RpcError::Other(escape_line(
            &failure.unwrap_or_else(|| "the turn failed (the agent gave no details)".into()),
        ))),
        _ => serde_json::from_value(serde_json::json!(reason))
            .map(s::PromptResponse::new)
            .map_err(|_| {
                acp_native::RpcError::Other(format!(
                    "the agent ended the turn with a stop reason acp does not know: {}",
                    escape_line(reason)
                ))
            }),
    }
}

/// A turn's questions: the one on screen, and what arrived after it.
#[derive(Default)]
struct TurnState {
    open: Option<PermissionAsk>,
    held: VecDeque<Event>,
    /// Ctrl-C sent `session/cancel`.
    cancel_sent: bool,
    /// `session/cancel` sent for a question answered `cancelled`.
    session_cancelled: bool,
    /// The prompt was answered: questions still arriving are answered `cancelled`.
    over: bool,
    /// `session/cancel` was sent (Ctrl-C, the silence limit): the turn's answer is awaited
    /// until then.
    cancel_deadline: Option<Instant>,
    /// The silence limit cancelled the turn: how the turn ends, whatever the agent answers.
    timed_out: Option<Outcome>,
}

impl Chat {
    /// One prompt turn: sends `session/prompt`, renders what comes until its response.
    ///
    /// One question is on screen at a time. While it is open, nothing else from the agent is
    /// shown (it could push the question off screen or print a fake one): updates and further
    /// questions are held back, in order, and shown after the answer. At most
    /// [`HELD_EVENTS`] are held; then the loop stops taking events and the agent is no longer
    /// read until the user answers.
    /// `attached`: content blocks sent after the text (the prompt's files).
    pub(super) async fn turn(
        &mut self,
        text: String,
        attached: Vec<s::ContentBlock>,
    ) -> Result<s::StopReason, Outcome> {
        self.ui
            .begin_turn(&text, super::attach::recorded(&attached));
        // /undo is about the last turn: the one before is kept as it is.
        self.edits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keep_all();
        self.ui.spinner_start("thinking…");
        let mut blocks = vec![text.into()];
        blocks.extend(attached);
        let request = s::PromptRequest::new(self.session.id.clone(), blocks);
        let conn = self.link.conn.without_timeout();
        #[cfg(feature = "unstable_protocol_v2")]
        let v2 = self.ui.is_v2();
        let prompt = async {
            // v2: the answer only acknowledges (its result is not v1's `PromptResponse`).
            #[cfg(feature = "unstable_protocol_v2")]
            if v2 {
                let params = acp_native::driver::to_raw(&request)?;
                return conn
                    .handle()
                    .request("session/prompt", Some(params), None)
                    .await
                    .map(Answered::Accepted);
            }
            conn.prompt(request)
                .await
                .map(|r| Answered::Done(Box::new(r)))
        };
        tokio::pin!(prompt);
        // v2: the prompt was accepted; the turn ends when the engine says so.
        let mut accepted = false;
        let mut turn = TurnState::default();
        let mut last_activity = Instant::now();
        // Timers are armed once: the silence limit's is moved on only when it fires (a burst
        // of updates does not re-arm a timer for each), the cancel wait's only matters once
        // set.
        let never = last_activity + Duration::from_secs(100 * 365 * 86_400);
        let silence = self.timeouts.silence;
        let idle = tokio::time::sleep_until(silence.map_or(never, |d| last_activity + d));
        tokio::pin!(idle);
        // v2: the agent went idle without a stop reason (shown as unreported).
        let mut unreported = false;
        let result = loop {
            if accepted {
                if let Some(reason) = self.ui.turn_ended() {
                    unreported = reason.is_empty();
                    break v2_stop_reason(&reason, self.ui.turn_failure());
                }
            }
            let withdrawn = turn.open.as_ref().map(|a| a.withdrawn.clone());
            tokio::select! {
                answer = &mut prompt, if !accepted => match answer {
                    Ok(Answered::Done(response)) => break Ok(*response),
                    Ok(Answered::Accepted(raw)) => {
                        accepted = true;
                        if let Err(e) = self.ui.prompt_answered(raw.get()) {
                            break Err(acp_native::RpcError::Other(e));
                        }
                    }
                    Err(e) => break Err(e),
                },
                Some(event) = self.inbox.events.recv(), if turn.held.len() < HELD_EVENTS => {
                    last_activity = Instant::now();
                    turn.held.push_back(event);
                    // What else is waiting comes with it (a burst is taken, and written, in
                    // one go).
                    while turn.held.len() < HELD_EVENTS {
                        match self.inbox.events.try_recv() {
                            Ok(event) => turn.held.push_back(event),
                            Err(_) => break,
                        }
                    }
                    self.show_held(&conn, &mut turn).await;
                }
                Some(line) = self.inbox.warnings.recv(), if turn.open.is_none() => {
                    self.inbox.garbage(line)
                }
                got = self.stdin.during_turn(turn.open.is_some()) => {
                    let input = match got {
                        // A prompt typed meanwhile: queued, sent when the turn ends.
                        DuringTurn::Typed(line) => {
                            // `/cancel-tool` is about this turn: done at once.
                            if let Some(arg) = super::cancel_tool::arg_of(&line) {
                                let arg = arg.to_string();
                                self.cancel_tool(&arg, true);
                                continue;
                            }
                            self.stdin.enqueue(line);
                            continue;
                        }
                        // The answer to the open question.
                        DuringTurn::Answer(input) => input,
                    };
                    last_activity = Instant::now();
                    let dismissed = input == Input::Dismiss;
                    let line = match input {
                        Input::Line(l) => Some(l),
                        Input::Eof | Input::Dismiss => None,
                        // Ctrl-C at the question: as the signal does.
                        Input::Interrupt => {
                            self.interrupt(&conn, &mut turn).await?;
                            continue;
                        }
                    };
                    let ask = turn.open.as_ref().expect("guarded");
                    let question = ask.question.as_ref().expect("shown questions have one");
                    let options = policy_options(&ask.request.options);
                    let decision = match &line {
                        // Ctrl-D at the question on a terminal: this question is refused
                        // (reject once), the turn goes on.
                        // (The line editor ended the line.)
                        None if dismissed => permission::dismissed(&options),
                        None => {
                            self.ui.end_input_line();
                            permission::unanswerable()
                        }
                        // `d`: the whole diff, then the question again.
                        Some(l) if l.trim() == "d" && question.hidden_lines() > 0 => {
                            self.ui.whole_diff(question);
                            continue;
                        }
                        Some(l) => match permission::chosen(&options, l) {
                            Some(d) => d,
                            None => {
                                self.ui.permission_reask(question, &escape_line(l));
                                continue;
                            }
                        },
                    };
                    let ask = turn.open.take().expect("guarded");
                    let how = match &line {
                        None if dismissed => "Ctrl-D".to_string(),
                        None => "end of input".to_string(),
                        Some(l) => format!("option {}", l.trim()),
                    };
                    self.answers.answer(ask, decision, &how);
                    self.show_held(&conn, &mut turn).await;
                }
                _ = async { withdrawn.expect("guarded").cancelled().await }, if withdrawn.is_some() => {
                    let ask = turn.open.take().expect("guarded");
                    let title = ask.title(&self.ui);
                    self.ui.permission_outcome(&title, "withdrawn (the turn was cancelled)");
                    self.show_held(&conn, &mut turn).await;
                }
                sig = self.signals.recv() => {
                    if sig != Interrupt::Int {
                        return Err(quit(sig));
                    }
                    self.interrupt(&conn, &mut turn).await?;
                }
                _ = tokio::time::sleep_until(turn.cancel_deadline.unwrap_or(never)),
                    if turn.cancel_deadline.is_some() => {
                    let waited = CANCEL_WAIT.as_secs();
                    return Err(match turn.timed_out.take() {
                        Some(mut o) => {
                            o.message = o.message.map(|m| format!("{m}; it did not end the turn within {waited} s"));
                            o
                        }
                        None => Outcome::fail(
                            exit::CANCELLED,
                            format!("the agent did not end the cancelled turn within {waited} s"),
                        ),
                    });
                }
                _ = &mut idle,
                    if silence.is_some() && turn.open.is_none() && turn.cancel_deadline.is_none() => {
                    // Not silent if the agent wrote anything since, or waits on a request of
                    // its own that we are still serving (a long command in a terminal...).
                    let heard = self.inbox.watch.last_received().map(Instant::from_std);
                    if self.activity.in_flight() > 0 {
                        last_activity = Instant::now();
                    } else if let Some(t) = heard.into_iter().chain(self.activity.last_done()).max() {
                        last_activity = last_activity.max(t);
                    }
                    let deadline = last_activity + silence.unwrap_or_default();
                    if deadline > Instant::now() {
                        idle.as_mut().reset(deadline);
                        continue;
                    }
                    self.send_session_cancel(&conn).await;
                    let secs = self.timeouts.silence.unwrap_or_default().as_secs_f64();
                    let flag = if self.timeouts.silence_is_default { "the default for --prompt; set it with --timeout" } else { "--timeout" };
                    turn.timed_out = Some(Outcome::fail(
                        exit::TIMEOUT,
                        format!("the agent sent nothing for {secs} s during the turn ({flag}); cancelled it{}",
                            self.stderr_hint().await),
                    ));
                    // The turn's `cancelled` answer is awaited (bounded), with what comes before it.
                    turn.cancel_sent = true;
                    turn.cancel_deadline = Some(Instant::now() + CANCEL_WAIT);
                }
            }
        };
        // What was typed until now is queued; the line editor reads the rest.
        self.stdin.stop_typing();
        // The turn is over: a question still open belongs to it (answered `cancelled`, which
        // the engine already did if the agent ended the turn); what was held is shown now.
        turn.over = true;
        if let Some(ask) = turn.open.take() {
            let title = ask.title(&self.ui);
            self.ui
                .permission_outcome(&title, "cancelled (the turn ended)");
            let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
        }
        self.show_held(&conn, &mut turn).await;
        // The updates sent before the response are queued already (wire order): shown now,
        // before the turn's end.
        self.inbox.catch_up_turn();
        // Warnings about what came with the turn (an oversize line...) are shown before its end.
        self.inbox.drain_warnings();
        if let Some(o) = turn.timed_out.take() {
            // Timed out, and the agent answered the cancelled turn: the run still says why.
            if let Ok(r) = &result {
                let shown = if unreported {
                    String::new()
                } else {
                    wire_name(&r.stop_reason)
                };
                self.ui.turn_end(&self.session.id.0, &shown);
            }
            return Err(o);
        }
        match result {
            Ok(response) => {
                #[cfg(feature = "unstable")]
                self.ui.prompt_result(&response);
                let reason = response.stop_reason;
                let shown = if unreported {
                    String::new()
                } else {
                    wire_name(&reason)
                };
                self.ui.turn_end(&self.session.id.0, &shown);
                Ok(reason)
            }
            Err(e) => {
                self.ui.spinner_stop();
                Err(self.explain("session/prompt", e).await)
            }
        }
    }

    /// Ctrl-C during a turn (the signal, or typed at a question): the first cancels the turn
    /// and waits (bounded) for its answer (prompts queued meanwhile are held), the second
    /// quits.
    async fn interrupt(
        &mut self,
        conn: &ClientSideConnection,
        turn: &mut TurnState,
    ) -> Result<(), Outcome> {
        if turn.cancel_sent {
            return Err(Outcome::fail(exit::INTERRUPTED, "interrupted"));
        }
        turn.cancel_sent = true;
        turn.cancel_deadline
            .get_or_insert(Instant::now() + CANCEL_WAIT);
        // Prompts typed meanwhile are not sent after a cancel, nor dropped: the queue holds
        // them (acp-client's rule) and the user decides at the prompt.
        let waiting = self.stdin.queue.len();
        let held = match waiting {
            0 => String::new(),
            1 => "; the queued prompt will be held".to_string(),
            n => format!("; the {n} queued prompts will be held"),
        };
        self.ui.notice(&format!(
            "cancelling the turn… (press Ctrl-C again to quit){held}"
        ));
        self.send_session_cancel(conn).await;
        // The schema: after `session/cancel`, every pending permission request is answered
        // `cancelled` (our own questions too: nothing waits on the agent withdrawing them);
        // held ones are answered as they are reached.
        if let Some(ask) = turn.open.take() {
            let title = ask.title(&self.ui);
            self.ui
                .permission_outcome(&title, "withdrawn (the turn was cancelled)");
            let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
        }
        self.show_held(conn, turn).await;
        Ok(())
    }

    /// Shows held events in order until one of them opens a question (or none is left), then
    /// sends `session/cancel` if an answer needs it.
    async fn show_held(&mut self, conn: &ClientSideConnection, turn: &mut TurnState) {
        loop {
            if self.answers.has_cancelling() {
                self.send_cancelled(conn, &mut turn.session_cancelled).await;
            }
            if turn.open.is_some() {
                break;
            }
            let Some(event) = turn.held.pop_front() else {
                break;
            };
            match event {
                Event::Update(params, _bytes, _taken) => self.ui.session_update(params.as_deref()),
                Event::Wrote(line) => self.ui.wrote(&line),
                Event::Permission(ask) => {
                    let title = ask.title(&self.ui);
                    if ask.withdrawn.is_cancelled() {
                        self.ui
                            .permission_outcome(&title, "withdrawn (the turn was cancelled)");
                    } else if turn.over || turn.cancel_sent || turn.session_cancelled {
                        self.ui
                            .permission_outcome(&title, "cancelled (the turn was cancelled)");
                        let _ = ask.reply.send(s::RequestPermissionOutcome::Cancelled);
                    } else if let Some(mut ask) = self.answers.auto_answer(*ask) {
                        // The agent's request: its question, with what the conversation now
                        // knows of its tool call (the diff of the `tool_call` before it).
                        let question = match ask.question.take() {
                            Some(q) => q,
                            None => self.ui.permission_question(&ask.request),
                        };
                        // The terminal is the question's before it is shown: a key pressed
                        // as soon as it is seen (Ctrl-D, an option) is its answer, never read
                        // as a line typed ahead (what was typed before is queued).
                        self.stdin.stop_typing();
                        self.ui.permission_dialog(&question);
                        ask.question = Some(question);
                        turn.open = Some(ask);
                    }
                }
            }
        }
        if turn.open.is_none() && !turn.over {
            self.ui.spinner_start("thinking…");
        }
        self.inbox.settle();
    }

    /// Answers the queued `cancelled` outcomes, after sending `session/cancel` for the turn
    /// (once): per the schema, `cancelled` is the answer of a client that cancelled the turn.
    async fn send_cancelled(&mut self, conn: &ClientSideConnection, session_cancelled: &mut bool) {
        if !self.answers.has_cancelling() {
            return;
        }
        if !*session_cancelled {
            *session_cancelled = true;
            self.send_session_cancel(conn).await;
        }
        self.answers.send_cancelling();
    }

    /// `session/cancel` for this session, bounded by [`CANCEL_SEND_LIMIT`] (an agent that
    /// stopped reading cannot hold the turn: it ends anyway).
    async fn send_session_cancel(&self, conn: &ClientSideConnection) {
        let cancel = conn.cancel(s::CancelNotification::new(self.session.id.clone()));
        let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, cancel).await;
    }
}
