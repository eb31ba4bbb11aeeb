//! The answer budget (see the module docs of [`crate::driver`], "The answer budget").

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::{ErrorCode, ErrorObject, RawValue};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::incoming::HandlerFuture;
#[cfg(doc)] // (for links in the docs)
use super::{json_string_len, DriverConfig};

/// A connection's budget of answer bytes (see the module docs, "The answer budget").
pub(super) struct AnswerBudget {
    /// One permit per byte.
    pub(super) permits: Arc<Semaphore>,
    /// The budget's size (what a reservation is clamped to).
    pub(super) total: usize,
    /// How long a reservation may wait without the writer making progress.
    pub(super) stall: Duration,
    /// Bytes the writer has written so far (progress, for the stall rule).
    pub(super) written: AtomicU64,
    /// Bytes queued for the transport and not written yet.
    pub(super) unwritten: AtomicUsize,
    /// When the writer last made progress (or output became pending after none was).
    pub(super) progress_at: std::sync::Mutex<Instant>,
}

impl AnswerBudget {
    pub(super) fn new(total: usize, stall: Duration) -> AnswerBudget {
        // `acquire_many` counts in u32: a budget is at most 4 GiB - 1.
        let total = total.clamp(1, u32::MAX as usize);
        AnswerBudget {
            permits: Arc::new(Semaphore::new(total)),
            total,
            stall,
            written: AtomicU64::new(0),
            unwritten: AtomicUsize::new(0),
            progress_at: std::sync::Mutex::new(Instant::now()),
        }
    }
}

/// The reservation of the request handler being polled (set by [`Budgeted`] around each poll).
struct AnswerSlot {
    budget: Arc<AnswerBudget>,
    permit: Option<OwnedSemaphorePermit>,
}

thread_local! {
    /// The slot of the request handler being polled on this thread, if any.
    static CURRENT_ANSWER: std::cell::RefCell<Option<AnswerSlot>> =
        const { std::cell::RefCell::new(None) };
}

thread_local! {
    /// Whether the handler being polled on this thread is a notification handler: the calls it
    /// makes to the peer are answered at once, not in wire order behind later notifications
    /// (which it would hold up: see the driver's docs, "Order").
    static POLLING_NOTIFICATION: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is running inside a notification handler's poll.
pub(super) fn polling_notification_handler() -> bool {
    POLLING_NOTIFICATION.with(std::cell::Cell::get)
}

/// Runs `f` on the slot of the request handler being polled (`None` outside one).
fn with_current_slot<R>(f: impl FnOnce(Option<&mut AnswerSlot>) -> R) -> R {
    CURRENT_ANSWER.with(|c| f(c.borrow_mut().as_mut()))
}

/// A handler's future with its answer slot: the slot is current while the future is polled,
/// and what it reserved is taken with the result ([`Budgeted::take_reserved`]).
pub(super) struct Budgeted {
    fut: HandlerFuture,
    /// `None` for notifications (nothing to answer).
    slot: Option<AnswerSlot>,
    /// A notification handler's future.
    notification: bool,
}

impl Budgeted {
    pub(super) fn new(fut: HandlerFuture, budget: Option<&Arc<AnswerBudget>>) -> Budgeted {
        Budgeted {
            fut,
            notification: budget.is_none(),
            slot: budget.map(|b| AnswerSlot {
                budget: b.clone(),
                permit: None,
            }),
        }
    }

    /// What the handler reserved (to hold until its answer is written).
    pub(super) fn take_reserved(&mut self) -> Option<OwnedSemaphorePermit> {
        self.slot.as_mut().and_then(|s| s.permit.take())
    }
}

impl Future for Budgeted {
    type Output = Result<Box<RawValue>, ErrorObject>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        /// Puts the slot back where it belongs, even if the handler panics.
        struct Restore<'a> {
            slot: &'a mut Option<AnswerSlot>,
            outer: Option<Option<AnswerSlot>>,
            outer_notification: bool,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                let outer = self.outer.take().unwrap_or_default();
                *self.slot = CURRENT_ANSWER.with(|c| c.replace(outer));
                POLLING_NOTIFICATION.with(|c| c.set(self.outer_notification));
            }
        }
        let this = &mut *self;
        let outer = CURRENT_ANSWER.with(|c| c.replace(this.slot.take()));
        let outer_notification = POLLING_NOTIFICATION.with(|c| c.replace(this.notification));
        let _restore = Restore {
            slot: &mut this.slot,
            outer: Some(outer),
            outer_notification,
        };
        this.fut.as_mut().poll(cx)
    }
}

/// A reservation of the answer budget that could not be made: the peer has not read what was
/// already answered (see [`reserve_answer_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerBudgetError {
    /// The bytes asked for.
    pub needed: usize,
    /// The connection's budget ([`DriverConfig::answer_budget`]).
    pub budget: usize,
    /// Bytes written to the peer and not read by it yet (at least those queued here).
    pub unwritten: usize,
    /// How long the writer made no progress.
    pub stalled: Duration,
}

impl fmt::Display for AnswerBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "answer budget exhausted: this answer needs {} bytes of the {}-byte answer budget, \
             which earlier answers still hold ({} bytes of them unread by the peer for {} s)",
            self.needed,
            self.budget,
            self.unwritten,
            self.stalled.as_secs()
        )
    }
}

impl std::error::Error for AnswerBudgetError {}

impl From<AnswerBudgetError> for ErrorObject {
    fn from(e: AnswerBudgetError) -> ErrorObject {
        ErrorObject::new(ErrorCode::InternalError, e.to_string()).with_data(serde_json::json!({
            "reason": "answer_budget",
            "needed": e.needed,
            "budget": e.budget,
        }))
    }
}

/// Inside a request handler: reserves `bytes` of the connection's answer budget for this
/// request's answer, waiting (in order with other reservations) until they are free. Call it
/// before building a large answer, with its serialized size (for text, [`json_string_len`]);
/// the reservation is given back once the answer has been written to the transport, or when
/// the handler ends without an answer.
///
/// `bytes` is clamped to the budget: an answer larger than the whole budget waits until every
/// other reservation is given back, then takes all of it. Calling it again replaces the
/// reservation: a smaller one gives the difference back at once (an estimate made exact); a
/// larger one gives everything back and waits again (never holding while waiting).
///
/// Returns the bytes reserved; `Ok(0)` when called outside a request handler polled by the
/// driver (a notification, a task of its own). Fails when it waited while the writer made no
/// progress for [`DriverConfig::answer_stall`] with output unwritten (the peer does not read):
/// the handler should answer with that error (it converts to a JSON-RPC error naming the
/// limit, `data.reason = "answer_budget"`).
pub async fn reserve_answer_bytes(bytes: usize) -> Result<usize, AnswerBudgetError> {
    enum Next {
        Done(usize),
        Wait(Arc<AnswerBudget>, usize),
    }
    let next = with_current_slot(|slot| {
        let Some(slot) = slot else {
            return Next::Done(0);
        };
        let want = bytes.min(slot.budget.total);
        let held = slot.permit.as_ref().map_or(0, |p| p.num_permits());
        if want <= held && held > 0 {
            if let Some(p) = slot.permit.as_mut() {
                drop(p.split(held - want));
            }
            return Next::Done(want);
        }
        // Never hold while waiting (two handlers each holding part could wait forever).
        slot.permit = None;
        if want == 0 {
            return Next::Done(0);
        }
        Next::Wait(slot.budget.clone(), want)
    });
    let (budget, want) = match next {
        Next::Done(n) => return Ok(n),
        Next::Wait(budget, want) => (budget, want),
    };
    let acquire = budget.permits.clone().acquire_many_owned(want as u32);
    tokio::pin!(acquire);
    // Checked a few times per stall period: it fails within 1.25 periods of the stall.
    let check = (budget.stall / 4).max(Duration::from_millis(1));
    loop {
        tokio::select! {
            permit = &mut acquire => {
                let permit = permit.expect("the budget's semaphore is never closed");
                with_current_slot(|slot| {
                    if let Some(slot) = slot {
                        slot.permit = Some(permit);
                    }
                });
                return Ok(want);
            }
            _ = tokio::time::sleep(check) => {
                let unwritten = budget.unwritten.load(Ordering::Relaxed);
                let since = budget
                    .progress_at
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .elapsed();
                if unwritten > 0 && since >= budget.stall {
                    return Err(AnswerBudgetError {
                        needed: bytes,
                        budget: budget.total,
                        unwritten,
                        stalled: since,
                    });
                }
            }
        }
    }
}
