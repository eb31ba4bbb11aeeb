//! What the incoming side receives: [`Incoming`], and the [`RpcService`] that answers it.

use acp_core::{ErrorObject, Id, RawValue};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tower::util::BoxCloneService;

use super::ConnectionHandle;

/// The service that answers incoming requests and notifications: params in, a raw JSON result
/// or a JSON-RPC error out. See [`crate::Router`] for a typed one.
pub type RpcService = BoxCloneService<Incoming, Box<RawValue>, ErrorObject>;

/// An incoming request or notification, as the [`RpcService`] receives it.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// The method name, as the peer sent it.
    pub method: String,
    /// The params as the peer wrote them (an object or an array); `None` when absent or `null`.
    pub params: Option<Box<RawValue>>,
    /// The peer's id for a request; `None` for a notification.
    pub id: Option<Id>,
    /// Fires when the peer cancels this request (`$/cancel_request`), when the engine answered
    /// it itself (deadline, `session/cancel`), or when the connection closes.
    pub cancel: CancellationToken,
    /// The connection it came on, to call the peer back.
    pub peer: ConnectionHandle,
}

impl Incoming {
    /// Whether it is a notification: nothing is sent back, whatever the service returns.
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }
}

/// A handler's future, as the service returns it.
pub(super) type HandlerFuture = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;
