//! Incoming notifications, handled one at a time in order (see the module docs of
//! [`crate::driver`], "The notification contract"): the queue's task and the count of those
//! handled.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use acp_core::{ErrorObject, RawValue};
use tokio::sync::mpsc;
use tower::{Service, ServiceExt};

use super::answer_budget::Budgeted;
use super::shared::{Control, Reply, Shared};
#[cfg(doc)] // (for links in the docs)
use super::ConnectionHandle;
use super::{Incoming, RpcError, RpcService};

/// Work for the in-order notification task, and the bytes of its params.
pub(super) enum NotifWork {
    /// Not started: the task calls the service.
    Call(Incoming, usize),
    /// Started by the driver (polled once inline) and still pending: the task finishes it.
    Started {
        method: String,
        fut: Budgeted,
        bytes: usize,
    },
    /// The answer to one of our calls, which came after the notifications queued before it:
    /// handed to its caller once they are handled (wire order; the driver's docs, "Order").
    Deliver {
        reply: Reply,
        result: Result<Box<RawValue>, RpcError>,
        bytes: usize,
    },
}

impl NotifWork {
    /// The bytes of params (or of the answer) it holds.
    pub(super) fn bytes(&self) -> usize {
        match self {
            NotifWork::Call(_, bytes)
            | NotifWork::Started { bytes, .. }
            | NotifWork::Deliver { bytes, .. } => *bytes,
        }
    }
}

pub(super) async fn notification_loop(
    mut rx: mpsc::Receiver<NotifWork>,
    mut service: RpcService,
    shared: Arc<Shared>,
) {
    use futures::FutureExt;
    /// Waiters of `notifications_handled` stop waiting once no more will be handled.
    struct Ended(Arc<Shared>);
    impl Drop for Ended {
        fn drop(&mut self) {
            self.0.notifications_handled.end();
        }
    }
    let shared = Ended(shared);
    while let Some(work) = rx.recv().await {
        let bytes = work.bytes();
        match work {
            NotifWork::Call(n, _) => {
                let method = n.method.clone();
                let call = async {
                    match service.ready().await {
                        // A notification's future (`Budgeted` without an answer slot), so the
                        // calls it makes are marked as a notification handler's.
                        Ok(s) => Budgeted::new(s.call(n), None).await,
                        Err(e) => Err(e),
                    }
                };
                let r = AssertUnwindSafe(call).catch_unwind().await;
                notification_done(&method, r.map_err(|_| ()));
                shared.0.notifications_handled.add_one();
            }
            NotifWork::Started { method, fut, .. } => {
                let r = AssertUnwindSafe(fut).catch_unwind().await;
                notification_done(&method, r.map_err(|_| ()));
                shared.0.notifications_handled.add_one();
            }
            NotifWork::Deliver { reply, result, .. } => {
                let _ = reply.send(result);
                shared.0.deliveries_queued.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let shared = &shared.0;
        let before = shared.notification_bytes.fetch_sub(bytes, Ordering::SeqCst);
        if before >= shared.notification_limit && before - bytes < shared.notification_limit {
            let _ = shared.ctl.send(Control::NotificationsDrained);
        }
    }
}

/// Logs how a notification handler ended (`Err(())`: it panicked).
pub(super) fn notification_done(method: &str, r: Result<Result<Box<RawValue>, ErrorObject>, ()>) {
    match r {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::debug!(method = %method, "notification handler failed: {e}"),
        Err(()) => tracing::error!(method = %method, "notification handler panicked"),
    }
}
