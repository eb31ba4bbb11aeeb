//! One session's client side, decided once for every face: which request opens it (new,
//! resume or load, from what the user asked, the agent's capabilities and the saved record),
//! where a `session/load`'s replay begins and ends and how it is taken, what happens to updates
//! that arrive before the session's id is known, whether a crashed agent is restarted and how
//! the conversation is re-established, and what the user is told at each step — the truth
//! about whether the agent remembers the conversation.
//!
//! [`Session`] is sans-IO, like the rest of this crate: the face sends the requests it names
//! and feeds it, **in wire order** (acp-native's driver keeps it: an answer reaches its caller
//! after the notifications sent before it), what comes back: [`Session::initialized`],
//! [`Session::update`], [`Session::opened`] / [`Session::open_failed`], and
//! [`Session::agent_ended`] when the agent's process or connection ends. Time is passed in.
//! It owns the conversation ([`Session::thread`]); what it tells the user is added to it as
//! notices and returned ([`Notice`]). `tests/client/session.json` is the case table.
//!
//! A session's life:
//!
//! ```text
//!   Session::new(intent) ─▶ initialized(init) ─▶ Open::{New|Resume|Load} sent
//!       ─▶ update()*  (held before a new session's id; the replay of a load)
//!       ─▶ opened(result) | open_failed(error) ─▶ open: update()*, turns…
//!       ─▶ agent_ended(now) ─▶ AfterEnd::Restart{after} ─▶ initialized(init) ─▶ …
//!                           └▶ AfterEnd::GiveUp{reason}
//! ```

mod open;
mod title;
#[cfg(feature = "unstable_protocol_v2")]
mod v2;

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::restart::{CrashBudget, RestartDecision, RestartPolicy};
use crate::thread::{Applied, BadUpdate, Limits, NoticeLevel, ReadUpdate, ReplayView, Thread};

pub use open::{reopen, AgentFacts, Open};
pub use title::{list_title, MAX_TITLE_CHARS};
#[cfg(feature = "unstable_protocol_v2")]
pub use v2::reopen_v2;

/// Updates held while a new session's id is not known yet (the agent may send some before it
/// answers `session/new`): at most this many…
pub const MAX_HELD_UPDATES: usize = 256;
/// …and this many bytes of their params. Past either, later ones are dropped (and counted).
pub const MAX_HELD_BYTES: usize = 8 << 20;

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "open", rename_all = "camelCase")]
pub enum Intent {
    /// A new session.
    New,
    /// Continue a session saved here (`acp chat --resume ID`, `--continue`, a history entry).
    /// `saved` is its record's conversation, `None` when no record of that id exists here: then
    /// it is refused unless `tryUnknown` (the user insists the agent has it).
    #[serde(rename_all = "camelCase")]
    Continue {
        /// The session id.
        session_id: String,
        /// The saved conversation (a [`Thread`]'s saved form), if any.
        #[serde(default)]
        saved: Option<crate::thread::RawJson>,
        /// Try an id with no record here anyway.
        #[serde(default)]
        try_unknown: bool,
        /// When the agent cannot reopen it, or refuses: go on in a new session (the saved
        /// conversation shown, the agent not remembering it) instead of failing.
        #[serde(default)]
        or_new: bool,
    },
    /// Load a session by id and show the agent's replay (`acp chat --load ID`).
    #[serde(rename_all = "camelCase")]
    Load {
        /// The session id.
        session_id: String,
    },
}

/// Something to tell the user, also added to the conversation as a notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// How it is shown.
    pub level: NoticeLevel,
    /// One line, agent-supplied parts escaped.
    pub text: String,
}

/// Whether the conversation the user sees is one the agent remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Memory {
    /// A new session: nothing to remember.
    Fresh,
    /// Resumed: the agent has the session (no replay), the conversation shown is the copy
    /// saved here.
    Resumed,
    /// Loaded: the agent replayed the conversation.
    Replayed,
    /// The agent opened the session but did not restore the conversation (it replayed
    /// nothing, or the conversation goes on in a new session): what is shown is only the copy
    /// saved here.
    Lost,
}

/// How a `session/update` was taken.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "routed", rename_all = "snake_case")]
pub enum Routed {
    /// Folded into the conversation and to be shown (a streaming face draws `applied`).
    Shown {
        /// What it changed.
        applied: Applied,
    },
    /// Part of a replay not shown again (the conversation is on screen already): the session's
    /// state (mode, commands, plan…) was taken from it, nothing else.
    Folded,
    /// Held until the session's id is known (before a new session is answered).
    Held,
    /// Not for this session, or dropped (over the hold limit): ignored.
    Ignored,
}

/// The answer to the request that opened the session, as the face got it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    /// The session's id.
    pub session_id: String,
    /// Whether the agent remembers the conversation shown.
    pub memory: Memory,
    /// What to tell the user (also in the conversation).
    pub notices: Vec<Notice>,
    /// What the updates held until the session's id was known (sent before a new session's
    /// answer) changed, in their order, now that they are folded into the conversation: a
    /// face that draws each update as it comes draws these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shown: Vec<Applied>,
}

/// After an open request failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "next", rename_all = "snake_case")]
pub enum AfterFailure {
    /// Send this request instead (a new session, the conversation kept on screen).
    Retry {
        /// What to send.
        open: Open,
        /// What to tell the user.
        notices: Vec<Notice>,
    },
    /// Stop: the session cannot be opened as asked.
    Fail {
        /// Why, for the user.
        message: String,
    },
}

/// After the agent's process or connection ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "next", rename_all = "snake_case")]
pub enum AfterEnd {
    /// Start the agent again after this delay, then call [`Session::initialized`] with its new
    /// `initialize` answer: the session is re-established from there.
    Restart {
        /// The delay.
        #[serde(rename = "afterMs", serialize_with = "ms")]
        after: Duration,
        /// What to tell the user.
        notices: Vec<Notice>,
    },
    /// Do not restart (the crash budget is spent, or restarts are off).
    GiveUp {
        /// What to tell the user.
        notices: Vec<Notice>,
    },
}

fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// Where an update goes: shown (folded by the caller, with or without its [`Applied`]), or
/// taken otherwise. (Returned on the stack and matched at once: boxing the update would cost
/// an allocation per update.)
#[allow(clippy::large_enum_variant)]
enum Route {
    Show(ReadUpdate),
    Taken(Routed),
}

/// An update held until a new session's id is known: read (v1), or its params as sent (v2:
/// folded by the v2 reader when the session opens).
enum Held {
    Read(ReadUpdate),
    #[cfg(feature = "unstable_protocol_v2")]
    V2(String),
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held")
    }
}

/// Where the session is.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Waiting for `initialize`'s answer (first start, or after a restart).
    Starting,
    /// The open request is out.
    Opening(Open),
    /// Open: updates of `id` are the conversation.
    Open,
    /// The agent ended and will not be restarted, or the face closed it.
    Ended,
}

/// One session's client side (module docs).
#[derive(Debug)]
pub struct Session {
    intent: Intent,
    cwd: String,
    phase: Phase,
    thread: Thread,
    /// The session's id once known.
    session_id: Option<String>,
    /// The agent, in words, from the last `initialize`.
    agent: String,
    /// The last `initialize`'s facts.
    facts: Option<AgentFacts>,
    /// Restarted at least once (the next open re-establishes the session).
    recovering: bool,
    /// The open under way is a new session sent after the agent refused to reopen the one
    /// on screen ([`Session::open_failed`]): it could reopen sessions, it did not have this one.
    fell_back: bool,
    /// The conversation on screen before this open (decides how a replay is taken).
    replay_view: ReplayView,
    /// Updates of the replay under way.
    replayed: u64,
    /// ACP v2 was negotiated (feature `unstable_protocol_v2`): updates are v2's upserts, a
    /// reopen is a `session/resume` with a replay ([`Open::Replay`]), a turn ends with an idle
    /// `state_update` (`v2.rs`).
    v2: bool,
    /// v2: the replay under way ended (its `replay_complete` came).
    replay_done: bool,
    held: VecDeque<(String, Held)>,
    held_bytes: usize,
    dropped: u64,
    crashes: CrashBudget,
}

impl Session {
    /// A session to open as `intent` in directory `cwd` (for what the user is told), keeping
    /// `limits` of conversation, restarting a crashed agent per `policy`. Refuses an intent
    /// that cannot be carried out whatever the agent (a saved session that is not saved here).
    pub fn new(
        intent: Intent,
        cwd: &str,
        limits: Limits,
        policy: RestartPolicy,
    ) -> Result<Session, String> {
        let mut thread = Thread::new(limits);
        if let Intent::Continue {
            session_id,
            saved,
            try_unknown,
            ..
        } = &intent
        {
            match saved {
                Some(saved) => {
                    thread = Thread::from_json(saved.0.get(), limits)
                        .map_err(|e| format!("the saved conversation is unreadable: {e}"))?;
                }
                None if !*try_unknown => {
                    return Err(format!(
                        "no session {} is saved for this directory",
                        crate::display::escape_line(session_id)
                    ));
                }
                None => {}
            }
        }
        Ok(Session {
            intent,
            cwd: crate::display::escape_line(cwd),
            phase: Phase::Starting,
            thread,
            session_id: None,
            agent: "the agent".into(),
            facts: None,
            recovering: false,
            fell_back: false,
            replay_view: ReplayView::Show,
            replayed: 0,
            v2: false,
            replay_done: false,
            held: VecDeque::new(),
            held_bytes: 0,
            dropped: 0,
            crashes: CrashBudget::new(policy),
        })
    }

    /// The conversation.
    pub fn thread(&self) -> &Thread {
        &self.thread
    }

    /// The conversation, to fold turns and notices into (`begin_turn`, `end_turn`…) and take
    /// deltas from.
    pub fn thread_mut(&mut self) -> &mut Thread {
        &mut self.thread
    }

    /// The session's id, once opened (or being reopened).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The agent in words (its `agentInfo`: title or name, and version), after `initialize`.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The title a list of sessions shows ([`list_title`]).
    pub fn title(&self) -> String {
        list_title(&self.thread)
    }

    /// Whether the session is open (updates are the conversation; prompts can be sent).
    pub fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// `initialize` was answered (`result`, its JSON text): which request opens the session.
    /// After a restart this re-establishes the session on screen: resumed where the agent
    /// can, else loaded (its replay folded, not shown twice), else a new session, the user told
    /// the agent does not remember the conversation.
    pub fn initialized(&mut self, result: &str) -> Result<Open, String> {
        let facts = AgentFacts::read(result)?;
        self.agent = facts.name.clone();
        #[cfg(feature = "unstable_protocol_v2")]
        {
            self.v2 = v2::negotiated(result);
        }
        let holds = self.thread.replay_view() == ReplayView::Fold;
        let open = match (&self.session_id, self.recovering) {
            (Some(id), true) => open::recover(&facts, id, holds),
            (None, true) => Open::New,
            (_, false) => open::first(&facts, &self.intent, holds)
                .map_err(|why| format!("{}: {why}", self.agent))?,
        };
        #[cfg(feature = "unstable_protocol_v2")]
        let open = if self.v2 { v2::reopen(open) } else { open };
        self.facts = Some(facts);
        self.fell_back = false;
        self.begin(open.clone());
        Ok(open)
    }

    fn begin(&mut self, open: Open) {
        self.replayed = 0;
        self.replay_done = false;
        self.replay_view = self.thread.replay_view();
        self.held.clear();
        self.held_bytes = 0;
        self.dropped = 0;
        self.session_id = open.session_id().map(str::to_string);
        self.phase = Phase::Opening(open);
    }

    /// A `session/update` (its params' JSON text), in wire order.
    pub fn update(&mut self, params: &str) -> Result<Routed, BadUpdate> {
        #[cfg(feature = "unstable_protocol_v2")]
        if self.v2 {
            return self.update_v2(params);
        }
        Ok(match self.route(params)? {
            Route::Show(read) => Routed::Shown {
                applied: self.thread.apply_read(read),
            },
            Route::Taken(routed) => routed,
        })
    }

    /// [`Session::update`] for a face that draws from the thread's deltas
    /// ([`Thread::take_delta`]): routed the same, an update shown is folded without building
    /// what it did ([`Thread::fold_read`]).
    ///
    /// Returns whether the session took it: `false` for an update it ignores (another
    /// session's, on a connection with several; or one past the hold limit), which a face
    /// with several sessions hands to the one it is for.
    pub fn fold_update(&mut self, params: &str) -> Result<bool, BadUpdate> {
        #[cfg(feature = "unstable_protocol_v2")]
        if self.v2 {
            return Ok(!matches!(self.update_v2(params)?, Routed::Ignored));
        }
        Ok(match self.route(params)? {
            Route::Show(read) => {
                self.thread.fold_read(read);
                true
            }
            Route::Taken(routed) => !matches!(routed, Routed::Ignored),
        })
    }

    /// Where an update goes: one to show is handed back to be folded, the others are taken here.
    fn route(&mut self, params: &str) -> Result<Route, BadUpdate> {
        let read = ReadUpdate::read(params)?;
        let ours =
            |id: &Option<String>| read.session_id().is_some() && read.session_id() == id.as_deref();
        match &self.phase {
            Phase::Opening(Open::New) => {
                let Some(sid) = read.session_id().map(str::to_string) else {
                    return Ok(Route::Taken(Routed::Ignored));
                };
                if self.held.len() >= MAX_HELD_UPDATES
                    || self.held_bytes + params.len() > MAX_HELD_BYTES
                {
                    self.dropped += 1;
                    return Ok(Route::Taken(Routed::Ignored));
                }
                self.held_bytes += params.len();
                self.held.push_back((sid, Held::Read(read)));
                Ok(Route::Taken(Routed::Held))
            }
            Phase::Opening(Open::Load { .. }) if ours(&self.session_id) => {
                self.replayed += 1;
                Ok(match self.replay_view {
                    ReplayView::Show => Route::Show(read),
                    ReplayView::Fold => {
                        self.thread.apply_replayed_read(read);
                        Route::Taken(Routed::Folded)
                    }
                })
            }
            Phase::Opening(Open::Resume { .. }) | Phase::Open if ours(&self.session_id) => {
                Ok(Route::Show(read))
            }
            _ => Ok(Route::Taken(Routed::Ignored)),
        }
    }

    /// The open request was answered (`result`, its JSON text: a `NewSessionResponse`,
    /// `ResumeSessionResponse` or `LoadSessionResponse`). For a load this is the end of the
    /// replay: every update before it was fed to [`Session::update`].
    pub fn opened(&mut self, result: &str) -> Result<Opened, String> {
        let Phase::Opening(open) = self.phase.clone() else {
            return Err("no session is being opened".into());
        };
        let answer = open::Answer::read(result)?;
        let session_id = match &open {
            Open::New => answer
                .session_id
                .clone()
                .ok_or("the session/new answer has no sessionId")?,
            Open::Resume { session_id }
            | Open::Load { session_id }
            | Open::Replay { session_id } => session_id.clone(),
        };
        self.thread.set_session(
            &session_id,
            answer.modes,
            answer.current_mode,
            answer.config_options,
        );
        self.session_id = Some(session_id.clone());
        self.phase = Phase::Open;
        let mut shown = Vec::new();
        for (sid, held) in std::mem::take(&mut self.held) {
            if sid != session_id {
                continue;
            }
            match held {
                Held::Read(read) => shown.push(self.thread.apply_read(read)),
                // Checked when it was held.
                #[cfg(feature = "unstable_protocol_v2")]
                Held::V2(params) => shown.extend(self.thread.apply_v2_json(&params).ok()),
            }
        }
        self.held_bytes = 0;
        let holds_conversation = self.replay_view == ReplayView::Fold;
        let id = crate::display::escape_line(&session_id);
        let agent = &self.agent;
        let cwd = &self.cwd;
        let mut notices = Vec::new();
        let memory = match &open {
            Open::New if self.recovering && holds_conversation && !self.fell_back => {
                notices.push(warning(format!(
                    "{agent} restarted without the conversation above (it can neither resume \
                     nor load sessions): a new session {id} goes on here, and the agent does not \
                     remember what is above"
                )));
                Memory::Lost
            }
            Open::New if holds_conversation => {
                notices.push(warning(format!(
                    "new session {id} with {agent}: the conversation above is the copy saved \
                     here; the agent does not remember it"
                )));
                Memory::Lost
            }
            Open::New => {
                notices.push(info(format!("connected to {agent}; session {id} in {cwd}")));
                Memory::Fresh
            }
            Open::Resume { .. } if self.recovering => {
                notices.push(info(format!(
                    "{agent} restarted; session {id} resumed: it remembers the conversation"
                )));
                Memory::Resumed
            }
            Open::Resume { .. } => {
                notices.push(info(format!(
                    "connected to {agent}; resumed session {id} in {cwd}"
                )));
                Memory::Resumed
            }
            Open::Replay { .. } if self.replayed > 0 && holds_conversation => {
                notices.push(info(format!(
                    "{agent}{} session {id} resumed with a replay of {} update(s), folded into \
                     the conversation above (what it lacked is added, nothing is shown twice)",
                    if self.recovering { " restarted;" } else { ":" },
                    self.replayed
                )));
                Memory::Replayed
            }
            Open::Load { .. } | Open::Replay { .. } if self.replayed == 0 && holds_conversation => {
                notices.push(warning(format!(
                    "{agent} did not restore the conversation of session {id} (it replayed \
                     nothing): what is above is the copy saved here, and the agent does not \
                     remember it"
                )));
                Memory::Lost
            }
            Open::Load { .. } | Open::Replay { .. } if self.replayed == 0 => {
                notices.push(warning(format!(
                    "{agent} opened session {id} in {cwd} but replayed nothing: it did not \
                     restore a conversation"
                )));
                Memory::Lost
            }
            Open::Load { .. } | Open::Replay { .. } if holds_conversation => {
                notices.push(info(format!(
                    "{agent}{} session {id} reloaded: {} replayed update(s) not shown again \
                     (the conversation is above)",
                    if self.recovering { " restarted;" } else { ":" },
                    self.replayed
                )));
                Memory::Replayed
            }
            Open::Load { .. } | Open::Replay { .. } => {
                notices.push(info(format!(
                    "connected to {agent}; loaded session {id} in {cwd} ({} replayed update(s))",
                    self.replayed
                )));
                Memory::Replayed
            }
        };
        if self.dropped > 0 {
            notices.push(warning(format!(
                "{} update(s) sent before the session opened were dropped (over the limit of \
                 {MAX_HELD_UPDATES} updates or {} MiB held)",
                self.dropped,
                MAX_HELD_BYTES >> 20
            )));
        }
        self.dropped = 0;
        self.recovering = false;
        self.fell_back = false;
        self.tell(&notices);
        Ok(Opened {
            session_id,
            memory,
            notices,
            shown,
        })
    }

    /// The open request failed (JSON-RPC `code` and `message`). A session the agent does not
    /// have (`-32002`, resource not found) is said so; an intent that allows it goes on in a
    /// new session, the others fail.
    pub fn open_failed(&mut self, code: i64, message: &str) -> AfterFailure {
        let Phase::Opening(open) = self.phase.clone() else {
            return AfterFailure::Fail {
                message: "no session is being opened".into(),
            };
        };
        let agent = self.agent.clone();
        let why = match (&open, code) {
            (
                Open::Resume { session_id }
                | Open::Load { session_id }
                | Open::Replay { session_id },
                -32002,
            ) => format!(
                "{agent} does not have session {} (any more)",
                crate::display::escape_line(session_id)
            ),
            (open, _) => format!(
                "{agent} refused {}: {} ({code})",
                open.method(),
                crate::display::escape_line(message)
            ),
        };
        let or_new =
            self.recovering || matches!(self.intent, Intent::Continue { or_new: true, .. });
        if matches!(open, Open::New) || !or_new {
            self.phase = Phase::Ended;
            return AfterFailure::Fail { message: why };
        }
        let notices = vec![warning(format!(
            "{why}: a new session goes on here, and the agent does not remember the \
             conversation above"
        ))];
        self.tell(&notices);
        self.fell_back = true;
        self.begin(Open::New);
        AfterFailure::Retry {
            open: Open::New,
            notices,
        }
    }

    /// The agent's process or connection ended (`why`: its exit report or the connection's
    /// close reason) at `now` (time since any fixed origin): restart it, or give up. An
    /// unfinished turn ends as failed. On a restart, call [`Session::initialized`] with the new
    /// agent's `initialize` answer.
    pub fn agent_ended(&mut self, now: Duration, why: &str) -> AfterEnd {
        if self.thread.turn == crate::thread::Turn::Running {
            self.thread.fail_turn(why);
        }
        let why = crate::display::escape_line(why);
        match self.crashes.record_crash(now) {
            RestartDecision::Restart { after, attempt } => {
                self.recovering = self.session_id.is_some();
                self.phase = Phase::Starting;
                let notices = vec![warning(format!(
                    "{} ended ({why}); restarting it in {} (restart {attempt})",
                    self.agent,
                    crate::restart::human_duration(after)
                ))];
                self.tell(&notices);
                AfterEnd::Restart { after, notices }
            }
            RestartDecision::GiveUp { reason } => {
                self.phase = Phase::Ended;
                let notices = vec![error(format!("{} ended ({why}); {reason}", self.agent))];
                self.tell(&notices);
                AfterEnd::GiveUp { notices }
            }
        }
    }

    /// Whether ACP v2 was negotiated with the agent (feature `unstable_protocol_v2`): a turn
    /// is then ended by an idle `state_update`, not by the `session/prompt` answer
    /// ([`Session::prompt_answered`]).
    pub fn is_v2(&self) -> bool {
        self.v2
    }

    /// The `session/prompt` answer (its JSON text) of the turn begun with
    /// [`Thread::begin_turn`]. v1: the turn is over, its stop reason returned (the thread's
    /// turn ended with it). v2: the answer only acknowledges the prompt (its entry takes the
    /// agent's `messageId`): the turn goes on until an idle `state_update`, so the stop reason
    /// is returned only if that came already (it may precede the answer on the wire).
    pub fn prompt_answered(&mut self, result: &str) -> Result<Option<String>, BadUpdate> {
        #[cfg(feature = "unstable_protocol_v2")]
        if self.v2 {
            self.thread.v2_prompt_accepted(result);
            return Ok(self.turn_ended());
        }
        self.thread.end_turn_json(result).map(Some)
    }

    /// v2: the stop reason of the last turn once its idle `state_update` ended it (`None` while
    /// it runs; empty when the agent went idle without one). v1 faces end turns from the
    /// `session/prompt` answer.
    pub fn turn_ended(&self) -> Option<String> {
        match self.thread.turn {
            crate::thread::Turn::Idle => Some(self.thread.last_stop.clone().unwrap_or_default()),
            crate::thread::Turn::Running => None,
        }
    }

    /// Forgets the crashes counted (the user restarts the agent by hand).
    pub fn reset_crashes(&mut self) {
        self.crashes.reset();
    }

    fn tell(&mut self, notices: &[Notice]) {
        for n in notices {
            self.thread.notice(n.level, &n.text);
        }
    }
}

fn info(text: String) -> Notice {
    Notice {
        level: NoticeLevel::Info,
        text,
    }
}

fn warning(text: String) -> Notice {
    Notice {
        level: NoticeLevel::Warning,
        text,
    }
}

fn error(text: String) -> Notice {
    Notice {
        level: NoticeLevel::Error,
        text,
    }
}

#[cfg(test)]
mod tests;
