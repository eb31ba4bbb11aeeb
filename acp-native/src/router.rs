//! A router of typed handlers: the usual [`crate::RpcService`].
//!
//! ```no_run
//! use acp_native::{Router, RequestContext};
//! use acp_core::typed;
//! use agent_client_protocol_schema::v1 as s;
//!
//! let router = Router::new()
//!     .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _cx: RequestContext| async move {
//!         Ok(s::InitializeResponse::new(p.protocol_version))
//!     })
//!     .notification::<typed::Cancel, _, _>(|p: s::CancelNotification, _cx| async move {
//!         let _ = p.session_id;
//!     });
//! ```
//!
//! Requests whose params fail to decode are answered -32602 with serde's message in
//! `data.details`; requests with no route -32601 (extension `_` methods included);
//! notifications with no route are ignored (logged at debug level).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use acp_core::acp::ext_name;
use acp_core::typed::{self, Method, NotificationMethod};
use acp_core::{ErrorObject, Id, RawValue};
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::driver::{ConnectionHandle, Incoming, RpcService};

/// What a handler gets besides its params.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The wire method name.
    pub method: String,
    /// The peer's id (`None` for a notification).
    pub id: Option<Id>,
    /// Fires when the request is cancelled by the peer, answered by the engine, or the
    /// connection closes.
    pub cancel: CancellationToken,
    /// The connection, to call the peer back.
    pub peer: ConnectionHandle,
}

impl RequestContext {
    fn from_incoming(i: &Incoming) -> Self {
        RequestContext {
            method: i.method.clone(),
            id: i.id.clone(),
            cancel: i.cancel.clone(),
            peer: i.peer.clone(),
        }
    }

    /// Agent side: the client, as typed calls.
    pub fn client(&self) -> crate::AgentSideConnection {
        crate::AgentSideConnection::from_handle(self.peer.clone())
    }

    /// Client side: the agent, as typed calls.
    pub fn agent(&self) -> crate::ClientSideConnection {
        crate::ClientSideConnection::from_handle(self.peer.clone())
    }
}

type HandlerFn =
    Arc<dyn Fn(Incoming) -> BoxFuture<'static, Result<Box<RawValue>, ErrorObject>> + Send + Sync>;
type NotificationFn = Arc<dyn Fn(Incoming) -> BoxFuture<'static, ()> + Send + Sync>;

#[derive(Clone, Default)]
struct Inner {
    requests: HashMap<String, HandlerFn>,
    notifications: HashMap<String, NotificationFn>,
    /// Behind a mutex only to be `Sync` (a `BoxCloneService` is not); cloned per call.
    fallback: Option<Arc<std::sync::Mutex<RpcService>>>,
}

/// Routes incoming requests and notifications by method name to typed handlers. A
/// `tower::Service<Incoming>`; cheap to clone.
#[derive(Clone, Default)]
pub struct Router {
    inner: Arc<Inner>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut r: Vec<_> = self.inner.requests.keys().collect();
        r.sort();
        let mut n: Vec<_> = self.inner.notifications.keys().collect();
        n.sort();
        f.debug_struct("Router")
            .field("requests", &r)
            .field("notifications", &n)
            .field("fallback", &self.inner.fallback.is_some())
            .finish()
    }
}

impl Router {
    /// A router with no routes: every request answered -32601, every notification ignored. A later
    /// route for a method replaces an earlier one.
    pub fn new() -> Self {
        Router::default()
    }

    fn inner(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    /// Handles request method `M` with `handler(params, cx)`.
    pub fn route<M, F, Fut>(mut self, handler: F) -> Self
    where
        M: Method,
        M::Params: Send + 'static,
        M::Result: Send + 'static,
        F: Fn(M::Params, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, ErrorObject>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let f: HandlerFn = Arc::new(move |i: Incoming| {
            let cx = RequestContext::from_incoming(&i);
            match typed::decode_params::<M>(i.params.as_deref()) {
                Err(e) => futures::future::ready(Err(ErrorObject::invalid_params(e))).boxed(),
                Ok(p) => {
                    let fut = handler(p, cx);
                    async move {
                        let r = fut.await?;
                        serde_json::value::to_raw_value(&r).map_err(ErrorObject::internal)
                    }
                    .boxed()
                }
            }
        });
        self.inner().requests.insert(M::NAME.to_owned(), f);
        self
    }

    /// Handles notification `N` with `handler(params, cx)` (in order with other notifications;
    /// see the notification contract in [`crate::driver`]). Params that fail to decode are
    /// logged and dropped.
    pub fn notification<N, F, Fut>(mut self, handler: F) -> Self
    where
        N: NotificationMethod,
        N::Params: Send + 'static,
        F: Fn(N::Params, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let f: NotificationFn = Arc::new(move |i: Incoming| {
            let cx = RequestContext::from_incoming(&i);
            match typed::decode_notification::<N>(i.params.as_deref()) {
                Err(e) => {
                    tracing::warn!(
                        method = N::NAME,
                        "dropping notification with invalid params: {e}"
                    );
                    futures::future::ready(()).boxed()
                }
                Ok(p) => handler(p, cx).boxed(),
            }
        });
        self.inner().notifications.insert(N::NAME.to_owned(), f);
        self
    }

    /// Handles request `method` (any name; an extension's includes its `_`) with raw params.
    pub fn route_raw<F, Fut>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Option<Box<RawValue>>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'static,
    {
        let f: HandlerFn = Arc::new(move |i: Incoming| {
            let cx = RequestContext::from_incoming(&i);
            handler(i.params, cx).boxed()
        });
        self.inner().requests.insert(method.into(), f);
        self
    }

    /// Handles notification `method` with raw params.
    pub fn notification_raw<F, Fut>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Option<Box<RawValue>>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let f: NotificationFn = Arc::new(move |i: Incoming| {
            let cx = RequestContext::from_incoming(&i);
            handler(i.params, cx).boxed()
        });
        self.inner().notifications.insert(method.into(), f);
        self
    }

    /// Handles extension request `method` (a leading `_` is added if missing) with JSON
    /// values (absent params arrive as `null`).
    pub fn ext_method<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: Fn(serde_json::Value, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<serde_json::Value, ErrorObject>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.route_raw(ext_name(method), move |p, cx| {
            let handler = handler.clone();
            async move {
                let v = match p {
                    None => serde_json::Value::Null,
                    Some(p) => {
                        serde_json::from_str(p.get()).map_err(ErrorObject::invalid_params)?
                    }
                };
                let r = handler(v, cx).await?;
                serde_json::value::to_raw_value(&r).map_err(ErrorObject::internal)
            }
        })
    }

    /// Handles extension notification `method` (a leading `_` is added if missing).
    pub fn ext_notification<F, Fut>(self, method: &str, handler: F) -> Self
    where
        F: Fn(serde_json::Value, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.notification_raw(ext_name(method), move |p, cx| {
            let v = p
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or(serde_json::Value::Null);
            handler(v, cx)
        })
    }

    /// Where requests and notifications with no route go (instead of -32601 / ignoring).
    pub fn fallback<S>(mut self, service: S) -> Self
    where
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        self.inner().fallback = Some(Arc::new(std::sync::Mutex::new(RpcService::new(service))));
        self
    }

    /// Whether a request handler is registered for `method`.
    pub fn has_route(&self, method: &str) -> bool {
        self.inner.requests.contains_key(method)
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("valid JSON")
}

impl Service<Incoming> for Router {
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        if req.is_notification() {
            if let Some(h) = self.inner.notifications.get(&req.method) {
                return h(req).map(|()| Ok(null())).boxed();
            }
        } else if let Some(h) = self.inner.requests.get(&req.method) {
            return h(req);
        }
        if let Some(fb) = &self.inner.fallback {
            let mut fb = fb.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return async move {
                use tower::ServiceExt;
                fb.ready().await?.call(req).await
            }
            .boxed();
        }
        if req.is_notification() {
            tracing::debug!(method = %req.method, "ignoring notification with no handler");
            futures::future::ready(Ok(null())).boxed()
        } else {
            futures::future::ready(Err(ErrorObject::method_not_found(&req.method))).boxed()
        }
    }
}
