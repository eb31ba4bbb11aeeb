//! The bookkeeping of one transport: why it ended (the first failure wins, and becomes the
//! connection's close reason), whether we closed it, the server's connection id
//! ([`RemoteLink`], and the part its tasks share).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use super::CLOSE_GRACE;
use crate::driver::ConnectionHandle;

/// What the transport and its [`RemoteLink`]s share.
#[derive(Debug)]
pub(super) struct LinkShared {
    /// The URL connected to (in logs and [`RemoteLink::url`]).
    pub(super) url: String,
    failure: Mutex<Option<String>>,
    /// The connection over this transport, closed with the failure as its reason.
    handle: OnceLock<ConnectionHandle>,
    /// Cancelled when the transport ends (failure or close).
    pub(super) stop: CancellationToken,
    /// Closed by us: what follows is not a failure.
    closing: AtomicBool,
    /// The server's id of the connection (HTTP + SSE, once initialized).
    pub(super) connection_id: Mutex<Option<String>>,
}

impl LinkShared {
    pub(super) fn new(url: String) -> Arc<LinkShared> {
        Arc::new(LinkShared {
            url,
            failure: Mutex::new(None),
            handle: OnceLock::new(),
            stop: CancellationToken::new(),
            closing: Default::default(),
            connection_id: Mutex::new(None),
        })
    }

    /// Records why the transport ended (the first reason wins) and stops it; the connection
    /// closes with that reason once the driver has read what came before.
    pub(super) fn fail(&self, reason: String) {
        if self.closing.load(Ordering::SeqCst) {
            self.stop.cancel();
            return;
        }
        {
            let mut failure = self.failure.lock().unwrap();
            if failure.is_none() {
                tracing::debug!(url = %self.url, "remote transport failed: {reason}");
                if let Some(h) = self.handle.get() {
                    h.close_at_eof_with_reason(reason.clone());
                }
                *failure = Some(reason);
            }
        }
        self.stop.cancel();
    }

    /// The transport is being closed by us (the driver closed its end, or
    /// [`RemoteLink::close`]): what ends it from now on is no failure.
    pub(super) fn mark_closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }
}

/// The transport of a connection to a remote agent: why it ended, its server-side id. Cheap
/// to clone.
#[derive(Debug, Clone)]
pub struct RemoteLink {
    pub(super) shared: Arc<LinkShared>,
}

impl RemoteLink {
    /// The URL connected to.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// Why the transport ended, once it failed (the server closed it, a stream ended, an
    /// answer was an error status...).
    pub fn failure(&self) -> Option<String> {
        self.shared.failure.lock().unwrap().clone()
    }

    /// The server's id of the connection (HTTP + SSE, once initialized).
    pub fn connection_id(&self) -> Option<String> {
        self.shared.connection_id.lock().unwrap().clone()
    }

    /// Resolves once the transport ended.
    pub async fn ended(&self) {
        self.shared.stop.cancelled().await
    }

    /// Ends the transport without a failure (the connection's own `close` does this too:
    /// for HTTP, the server is sent `DELETE`).
    pub fn close(&self) {
        self.shared.mark_closing();
        if let Some(h) = self.shared.handle.get() {
            h.close_with_reason("the client closed the connection");
        }
    }

    /// Ties the connection over this transport to it: its close reason is the failure.
    pub(super) fn attach(&self, handle: &ConnectionHandle) {
        let _ = self.shared.handle.set(handle.clone());
        if let Some(reason) = self.failure() {
            handle.close_with_reason(reason);
        }
    }
}

/// Once the transport ended and the driver's input was shut (it sees EOF and closes with the
/// failure as its reason): reads and drops what the driver still writes until it closes
/// (bounded). Dropping its pipe instead would fail a write of the driver's in flight, whose
/// error ("broken pipe") would become the close reason in place of the failure.
pub(super) async fn drain_driver(mut from_driver: tokio::io::ReadHalf<tokio::io::DuplexStream>) {
    let mut sink = tokio::io::sink();
    let drain = tokio::io::copy(&mut from_driver, &mut sink);
    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
}
