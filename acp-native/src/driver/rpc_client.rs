//! The outgoing side as a `tower::Service`: [`RpcClient`] and the [`RpcRequest`] it takes.

use std::fmt;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::RawValue;
use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::oneshot;
use tokio_util::sync::PollSender;
use tower::Service;

use super::answer_budget::polling_notification_handler;
use super::shared::Command;
use super::{to_raw, ConnectionHandle, RpcError};

/// One outgoing request, as the [`RpcClient`] tower service takes it.
#[derive(Debug, Clone)]
pub struct RpcRequest {
    /// The method name.
    pub method: String,
    /// Raw JSON params (an object or array), or none.
    pub params: Option<Box<RawValue>>,
    /// The engine-level deadline (the peer is sent `$/cancel_request` when it passes).
    pub timeout: Option<Duration>,
}

impl RpcRequest {
    /// A request of `method` with raw `params` (an object or array), with the connection's default
    /// deadline ([`acp_core::Config::default_request_timeout`]).
    pub fn new(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        RpcRequest {
            method: method.into(),
            params,
            timeout: None,
        }
    }

    /// A request with serialized params.
    pub fn with_params<P: Serialize + ?Sized>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, RpcError> {
        Ok(RpcRequest::new(method, Some(to_raw(params)?)))
    }

    /// Sets the deadline: `d` after it is sent the call fails with `CallError::TimedOut`.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
}

/// Outgoing calls as a `tower::Service<RpcRequest>`. `poll_ready` waits for room in the
/// driver's command queue (backpressure); cloning is cheap.
pub struct RpcClient {
    pub(super) handle: ConnectionHandle,
    pub(super) sender: PollSender<Command>,
}

impl Clone for RpcClient {
    fn clone(&self) -> Self {
        self.handle.client()
    }
}

impl fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcClient")
            .field("handle", &self.handle)
            .finish()
    }
}

impl RpcClient {
    /// The connection it sends on.
    pub fn handle(&self) -> &ConnectionHandle {
        &self.handle
    }
}

impl Service<RpcRequest> for RpcClient {
    type Response = Box<RawValue>;
    type Error = RpcError;
    type Future = BoxFuture<'static, Result<Box<RawValue>, RpcError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RpcError>> {
        match self.sender.poll_reserve(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(_)) => Poll::Ready(Err(self.handle.closed_error())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, req: RpcRequest) -> Self::Future {
        let handle = self.handle.clone();
        let (tx, rx) = oneshot::channel();
        let key = handle.shared.next_key.fetch_add(1, Ordering::Relaxed);
        let sent = self.sender.send_item(Command::Request {
            key,
            method: req.method,
            params: req.params,
            timeout: req.timeout,
            reply: tx,
            ordered: !polling_notification_handler(),
        });
        Box::pin(async move {
            if sent.is_err() {
                return Err(handle.closed_error());
            }
            handle.await_reply(key, rx).await
        })
    }
}
