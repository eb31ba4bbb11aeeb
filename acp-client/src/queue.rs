//! The prompt queue: prompts the user sends while a turn runs wait here, shown, editable and
//! removable, and go one by one, in order, when the turn ends. The face asks the queue what to
//! do with each prompt the user sends ([`PromptQueue::submit`]) and at the end of each turn
//! ([`PromptQueue::turn_ended`]); it sends what the queue hands back and does nothing else on
//! its own.
//!
//! The rules:
//! 1. A prompt sent while no turn runs and nothing waits is sent now.
//! 2. A prompt sent while a turn runs is queued (at most [`MAX_QUEUED`] prompts and
//!    [`MAX_QUEUED_BYTES`] bytes in all, the face's data counted; an empty prompt is refused).
//! 3. A turn that ends normally sends the first queued prompt.
//! 4. A turn the user cancelled, or one that failed, holds the queue: nothing more is sent
//!    until the user says so ([`PromptQueue::send_held`]), or sends another prompt (rule 5),
//!    or removes what waits. A cancel means "stop", not "go on with the next".
//! 5. A prompt sent while nothing runs but the queue is held resumes it: the first queued
//!    prompt is sent now and the new one waits at the end (order is kept).
//!
//! Budget: at most [`MAX_QUEUED`] prompts and [`MAX_QUEUED_BYTES`] bytes (text plus the face's
//! data), whatever the user pastes.

use std::collections::VecDeque;
use std::fmt;

use serde::Serialize;

/// Prompts waiting at most.
pub const MAX_QUEUED: usize = 16;
/// Bytes of waiting prompts at most (their text and the face's data).
pub const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;

/// A prompt waiting for the turn to end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Queued {
    /// Stable while it waits (edits and removals name it).
    pub id: u64,
    /// What the user typed.
    pub text: String,
    /// The face's own data for it (its attachments), sent with it; opaque here.
    pub data: String,
}

impl Queued {
    fn bytes(&self) -> usize {
        self.text.len() + self.data.len()
    }
}

/// What to do with a prompt the user sent ([`PromptQueue::submit`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "do", rename_all = "camelCase")]
pub enum Submitted {
    /// Send this prompt now (the one submitted, or the first that waited: rule 5).
    Send {
        /// The prompt to send.
        prompt: Queued,
    },
    /// It waits for the turn to end.
    Queued {
        /// Its id in the queue.
        id: u64,
    },
}

/// How a turn ended, for [`PromptQueue::turn_ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The agent answered (any stop reason but `cancelled`).
    Done,
    /// The user cancelled it (stop reason `cancelled`).
    Cancelled,
    /// It failed (an error answer, the agent gone).
    Failed,
}

impl TurnEnd {
    /// The end of a turn the agent answered with `stop_reason`.
    pub fn from_stop_reason(stop_reason: &str) -> TurnEnd {
        if stop_reason == "cancelled" {
            TurnEnd::Cancelled
        } else {
            TurnEnd::Done
        }
    }
}

/// What follows a turn's end ([`PromptQueue::turn_ended`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "next", rename_all = "camelCase")]
pub enum AfterTurn {
    /// Send this queued prompt now.
    Send {
        /// The prompt to send.
        prompt: Queued,
    },
    /// The queue is held (rule 4); `text` says so to the user.
    Held {
        /// Prompts waiting.
        waiting: usize,
        /// For the user.
        text: String,
    },
    /// Nothing waits.
    Idle,
}

/// Why a queue operation was refused (words for the user: `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// An empty (or blank) prompt.
    Empty,
    /// [`MAX_QUEUED`] prompts wait already.
    Full,
    /// The prompt would take the queue over [`MAX_QUEUED_BYTES`].
    TooLarge,
    /// No queued prompt has this id (it was sent or removed meanwhile).
    Gone(u64),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Empty => f.write_str("an empty prompt is not queued"),
            Refused::Full => write!(
                f,
                "not queued: {MAX_QUEUED} prompts wait already for the turn to end"
            ),
            Refused::TooLarge => write!(
                f,
                "not queued: the waiting prompts would take more than {} MiB",
                MAX_QUEUED_BYTES / (1024 * 1024)
            ),
            Refused::Gone(_) => f.write_str("that queued prompt was sent or removed meanwhile"),
        }
    }
}

impl std::error::Error for Refused {}

/// Prompts waiting for the running turn to end (see the module's rules).
#[derive(Debug, Default)]
pub struct PromptQueue {
    items: VecDeque<Queued>,
    bytes: usize,
    next_id: u64,
    held: bool,
}

impl PromptQueue {
    /// An empty queue.
    pub fn new() -> PromptQueue {
        PromptQueue::default()
    }

    /// The prompts waiting, first to be sent first.
    pub fn items(&self) -> impl ExactSizeIterator<Item = &Queued> {
        self.items.iter()
    }

    /// How many prompts wait.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The queue is held after a cancelled or failed turn (rule 4).
    pub fn is_held(&self) -> bool {
        self.held && !self.items.is_empty()
    }

    /// Bytes of the waiting prompts (their text and data).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The user sent `text` (with the face's `data`) while a turn runs (`running`) or not: sent
    /// now or queued (rules 1, 2 and 5).
    pub fn submit(&mut self, text: &str, data: &str, running: bool) -> Result<Submitted, Refused> {
        if text.trim().is_empty() {
            return Err(Refused::Empty);
        }
        if !running && self.items.is_empty() {
            self.held = false;
            let id = self.take_id();
            return Ok(Submitted::Send {
                prompt: Queued {
                    id,
                    text: text.to_string(),
                    data: data.to_string(),
                },
            });
        }
        let id = self.push(text, data)?;
        if running {
            return Ok(Submitted::Queued { id });
        }
        // Nothing runs, the queue was held: it goes on, first prompt first.
        self.held = false;
        let prompt = self.pop().expect("a prompt was just queued");
        Ok(Submitted::Send { prompt })
    }

    /// The running turn ended (`end`): what is sent next, if anything (rules 3 and 4).
    pub fn turn_ended(&mut self, end: TurnEnd) -> AfterTurn {
        if self.items.is_empty() {
            self.held = false;
            return AfterTurn::Idle;
        }
        match end {
            TurnEnd::Done if !self.held => AfterTurn::Send {
                prompt: self.pop().expect("not empty"),
            },
            _ => {
                self.held = true;
                let waiting = self.items.len();
                let why = match end {
                    TurnEnd::Failed => "The turn failed",
                    _ => "The turn was cancelled",
                };
                AfterTurn::Held {
                    waiting,
                    text: format!(
                        "{why}: {waiting} queued prompt{} wait{} (send, edit or remove them).",
                        if waiting == 1 { "" } else { "s" },
                        if waiting == 1 { "s" } else { "" },
                    ),
                }
            }
        }
    }

    /// The user resumes a held queue while nothing runs: the first waiting prompt, to send now.
    pub fn send_held(&mut self) -> Option<Queued> {
        self.held = false;
        self.pop()
    }

    /// The queued prompt `id` now says `text` (its data kept).
    pub fn edit(&mut self, id: u64, text: &str) -> Result<(), Refused> {
        if text.trim().is_empty() {
            return Err(Refused::Empty);
        }
        let bytes = self.bytes;
        let item = self
            .items
            .iter_mut()
            .find(|q| q.id == id)
            .ok_or(Refused::Gone(id))?;
        let after = bytes - item.text.len() + text.len();
        if after > MAX_QUEUED_BYTES {
            return Err(Refused::TooLarge);
        }
        item.text = text.to_string();
        self.bytes = after;
        Ok(())
    }

    /// The queued prompt `id` is not sent; it is handed back.
    pub fn remove(&mut self, id: u64) -> Result<Queued, Refused> {
        let at = self
            .items
            .iter()
            .position(|q| q.id == id)
            .ok_or(Refused::Gone(id))?;
        let item = self.items.remove(at).expect("found");
        self.bytes -= item.bytes();
        Ok(item)
    }

    /// Nothing waits any more; how many prompts were dropped.
    pub fn clear(&mut self) -> usize {
        let n = self.items.len();
        self.items.clear();
        self.bytes = 0;
        self.held = false;
        n
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn push(&mut self, text: &str, data: &str) -> Result<u64, Refused> {
        if self.items.len() >= MAX_QUEUED {
            return Err(Refused::Full);
        }
        if self.bytes + text.len() + data.len() > MAX_QUEUED_BYTES {
            return Err(Refused::TooLarge);
        }
        let id = self.take_id();
        let item = Queued {
            id,
            text: text.to_string(),
            data: data.to_string(),
        };
        self.bytes += item.bytes();
        self.items.push_back(item);
        Ok(id)
    }

    fn pop(&mut self) -> Option<Queued> {
        let item = self.items.pop_front()?;
        self.bytes -= item.bytes();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(q: &PromptQueue) -> Vec<&str> {
        q.items().map(|i| i.text.as_str()).collect()
    }

    fn sent(s: Submitted) -> String {
        match s {
            Submitted::Send { prompt } => prompt.text,
            other => panic!("expected Send, got {other:?}"),
        }
    }

    #[test]
    fn idle_prompt_is_sent_now_and_running_ones_wait_in_order() {
        let mut q = PromptQueue::new();
        assert_eq!(sent(q.submit("one", "", false).unwrap()), "one");
        assert!(matches!(
            q.submit("two", "", true),
            Ok(Submitted::Queued { .. })
        ));
        assert!(matches!(
            q.submit("three", "d", true),
            Ok(Submitted::Queued { .. })
        ));
        assert_eq!(texts(&q), ["two", "three"]);
        assert_eq!(q.bytes(), "two".len() + "three".len() + 1);
        match q.turn_ended(TurnEnd::Done) {
            AfterTurn::Send { prompt } => assert_eq!(prompt.text, "two"),
            other => panic!("{other:?}"),
        }
        match q.turn_ended(TurnEnd::from_stop_reason("end_turn")) {
            AfterTurn::Send { prompt } => {
                assert_eq!((prompt.text.as_str(), prompt.data.as_str()), ("three", "d"))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(q.turn_ended(TurnEnd::Done), AfterTurn::Idle);
        assert_eq!(q.bytes(), 0);
    }

    #[test]
    fn cancel_or_failure_holds_until_the_user_goes_on() {
        for end in [TurnEnd::from_stop_reason("cancelled"), TurnEnd::Failed] {
            let mut q = PromptQueue::new();
            q.submit("a", "", true).unwrap();
            q.submit("b", "", true).unwrap();
            match q.turn_ended(end) {
                AfterTurn::Held { waiting, text } => {
                    assert_eq!(waiting, 2);
                    assert!(text.contains("2 queued prompts wait"), "{text}");
                }
                other => panic!("{other:?}"),
            }
            assert!(q.is_held());
            // A later normal end (another face's turn) does not release a held queue.
            assert!(matches!(
                q.turn_ended(TurnEnd::Done),
                AfterTurn::Held { .. }
            ));
            assert_eq!(q.send_held().unwrap().text, "a");
            assert!(!q.is_held());
            assert!(matches!(
                q.turn_ended(TurnEnd::Done),
                AfterTurn::Send { .. }
            ));
        }
    }

    #[test]
    fn a_prompt_sent_to_a_held_queue_resumes_it_in_order() {
        let mut q = PromptQueue::new();
        q.submit("a", "", true).unwrap();
        q.turn_ended(TurnEnd::Cancelled);
        assert_eq!(sent(q.submit("new", "", false).unwrap()), "a");
        assert_eq!(texts(&q), ["new"]);
        assert!(!q.is_held());
        assert!(
            matches!(q.turn_ended(TurnEnd::Done), AfterTurn::Send { prompt } if prompt.text == "new")
        );
    }

    #[test]
    fn edit_and_remove_by_id_and_gone_ids_are_refused() {
        let mut q = PromptQueue::new();
        let Submitted::Queued { id: a } = q.submit("a", "", true).unwrap() else {
            panic!()
        };
        let Submitted::Queued { id: b } = q.submit("b", "", true).unwrap() else {
            panic!()
        };
        q.edit(a, "a longer").unwrap();
        assert_eq!(q.bytes(), "a longer".len() + 1);
        assert_eq!(q.edit(a, "  "), Err(Refused::Empty));
        assert_eq!(q.remove(b).unwrap().text, "b");
        assert_eq!(q.remove(b), Err(Refused::Gone(b)));
        assert_eq!(q.edit(b, "x"), Err(Refused::Gone(b)));
        assert_eq!(texts(&q), ["a longer"]);
        assert_eq!(q.clear(), 1);
        assert_eq!((q.len(), q.bytes()), (0, 0));
        assert!(Refused::Gone(b).to_string().contains("sent or removed"));
    }

    #[test]
    fn empty_prompts_are_refused() {
        let mut q = PromptQueue::new();
        assert_eq!(q.submit(" \n", "", true), Err(Refused::Empty));
        assert_eq!(q.submit("", "", false), Err(Refused::Empty));
        assert!(q.is_empty());
    }

    #[test]
    fn the_budget_holds_whatever_is_pasted() {
        let mut q = PromptQueue::new();
        for i in 0..MAX_QUEUED {
            q.submit(&format!("p{i}"), "", true).unwrap();
        }
        assert_eq!(q.submit("one more", "", true), Err(Refused::Full));
        assert!(Refused::Full.to_string().contains("16 prompts"));
        q.clear();
        let big = "x".repeat(MAX_QUEUED_BYTES / 2);
        q.submit(&big, "", true).unwrap();
        assert_eq!(q.submit(&big, "y", true), Err(Refused::TooLarge));
        let Submitted::Queued { id } = q.submit("small", "", true).unwrap() else {
            panic!()
        };
        assert_eq!(q.edit(id, &format!("{big}x")), Err(Refused::TooLarge));
        q.edit(id, &big).unwrap(); // exactly at the budget: taken
        assert!(q.bytes() <= MAX_QUEUED_BYTES);
        assert_eq!(texts(&q).len(), 2);
    }
}
