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
use super::shared::{Control, Shared};
#[cfg(doc)] // (for links in the docs)
use super::ConnectionHandle;
use super::{Incoming, RpcService};

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
        let (method, r, bytes) = match work {
            NotifWork::Call(n, bytes) => {
                let method = n.method.clone();
                let call = async {
                    match service.ready().await {
                        Ok(s) => s.call(n).await,
                        Err(e) => Err(e),
                    }
                };
                (method, AssertUnwindSafe(call).catch_unwind().await, bytes)
            }
            NotifWork::Started { method, fut, bytes } => {
                (method, AssertUnwindSafe(fut).catch_unwind().await, bytes)
            }
        };
        notification_done(&method, r.map_err(|_| ()));
        shared.0.notifications_handled.add_one();
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
