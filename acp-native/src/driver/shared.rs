//! What the [`ConnectionHandle`]s, the driver task and the notification task share: the
//! commands a handle sends to the task, the state they all read, and the count of handled
//! notifications.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use tokio::sync::{mpsc, oneshot, watch, Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::answer_budget::AnswerBudget;
use super::RpcError;
#[cfg(doc)] // (for links in the docs)
use super::{reserve_answer_bytes, ConnectionHandle, DriverConfig};

pub(super) type Reply = oneshot::Sender<Result<Box<RawValue>, RpcError>>;

pub(super) enum Command {
    Request {
        key: u64,
        method: String,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
        reply: oneshot::Sender<Result<Box<RawValue>, RpcError>>,
        /// Its answer is handed over in wire order, after the notifications that came before
        /// it (false for calls a notification handler makes: see the driver's docs, "Order").
        ordered: bool,
    },
    Notify {
        method: String,
        params: Option<Box<RawValue>>,
    },
    Respond {
        token: u64,
        result: Result<Box<RawValue>, ErrorObject>,
        /// The handler's reservation of the answer budget, held until the answer is written.
        reserved: Option<OwnedSemaphorePermit>,
    },
}

/// Commands that bypass backpressure (small, bounded by the number of calls).
pub(super) enum Control {
    Cancel {
        key: u64,
    },
    Close {
        reason: String,
    },
    /// Close with this reason once everything the peer sent is read (see
    /// [`ConnectionHandle::close_at_eof_with_reason`]).
    CloseAtEof {
        reason: String,
    },
    /// A request handler's task ended without answering (it panicked or was aborted).
    Abandoned {
        token: u64,
    },
    /// The notification queue fell below [`DriverConfig::notification_bytes`]: reading may
    /// resume.
    NotificationsDrained,
}

pub(super) struct Shared {
    pub(super) cmd: mpsc::Sender<Command>,
    pub(super) ctl: mpsc::UnboundedSender<Control>,
    pub(super) role: Role,
    pub(super) next_key: AtomicU64,
    /// Both sides' capabilities as the engine read them, as `acp_core::acp::Advertised`'s
    /// bits, so `notify` refuses what they do not allow without a round trip to the engine.
    pub(super) advertised: AtomicU32,
    /// [`acp_core::Connection::protocol_version`], so `notify` applies ACP v2's rules (feature
    /// `unstable_protocol_v2`) without a round trip.
    pub(super) protocol_version: AtomicU16,
    /// [`acp_core::Config::enforce_capabilities`].
    pub(super) enforce_capabilities: bool,
    pub(super) closed: watch::Receiver<Option<String>>,
    pub(super) token: CancellationToken,
    /// Notifications received from the peer (counted by the driver as they arrive).
    pub(super) notifications_received: AtomicU64,
    /// Notifications the handlers are done with.
    pub(super) notifications_handled: HandledCounter,
    /// Answers queued behind notifications (`NotifWork::Deliver`) not yet handed over.
    pub(super) deliveries_queued: AtomicU64,
    /// True once the writer wrote everything and shut the transport down (or failed).
    pub(super) writer_done: watch::Receiver<bool>,
    /// The answer budget (see [`reserve_answer_bytes`]).
    pub(super) budget: Arc<AnswerBudget>,
    /// Bytes of params of the notifications queued for (or being handled by) the notification
    /// task, and the limit above which reading pauses.
    pub(super) notification_bytes: AtomicUsize,
    pub(super) notification_limit: usize,
}

/// How many notifications the handlers are done with; wakes
/// [`ConnectionHandle::notifications_handled`] (only when someone waits: counting is on the
/// path of every notification).
#[derive(Default)]
pub(super) struct HandledCounter {
    pub(super) count: AtomicU64,
    waiters: AtomicUsize,
    /// No more notifications will be handled (the notification task ended).
    ended: AtomicBool,
    changed: Notify,
}

impl HandledCounter {
    pub(super) fn add_one(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.changed.notify_waiters();
        }
    }

    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    pub(super) async fn wait_for(&self, target: u64) {
        if self.count.load(Ordering::SeqCst) >= target {
            return;
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiters);
        loop {
            // Created before the check: a `notify_waiters` after it wakes this one.
            let changed = self.changed.notified();
            if self.count.load(Ordering::SeqCst) >= target || self.ended.load(Ordering::SeqCst) {
                return;
            }
            changed.await;
        }
    }
}
