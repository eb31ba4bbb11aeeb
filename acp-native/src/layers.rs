//! `tower` layers for the incoming side (each concern its own layer), and tracing for the
//! outgoing side.
//!
//! ```no_run
//! use std::time::Duration;
//! use acp_native::layers::{CatchPanicLayer, LifecycleLayer, MethodTimeoutLayer, TraceLayer};
//! use tower::ServiceBuilder;
//!
//! let service = ServiceBuilder::new()
//!     .layer(TraceLayer::new())
//!     .layer(CatchPanicLayer)
//!     .layer(LifecycleLayer::new())
//!     .layer(MethodTimeoutLayer::new(Some(Duration::from_secs(60))).method("session/prompt", None))
//!     .service(acp_native::Router::new());
//! ```
//!
//! All of them keep the service's types (`Incoming` -> `Box<RawValue>` or `ErrorObject`), so
//! they stack in any order and the result still fits [`crate::RpcService`].

use std::collections::HashMap;
use std::fmt::Display;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::acp::agent as methods;
use acp_core::{ErrorCode, ErrorObject, RawValue};
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::time::Instant;
use tower::{Layer, Service};

use crate::driver::{Incoming, RpcError, RpcRequest};

// ---------------------------------------------------------------------------------------------
// Tracing
// ---------------------------------------------------------------------------------------------

/// The `tracing` target of RPC logs.
pub const RPC_TARGET: &str = "acp::rpc";

/// Logs every RPC through it: direction, id, method, params (truncated), then the duration in
/// ms and the outcome (`ok`, or the error). Target [`RPC_TARGET`]; start and success at DEBUG,
/// failures at INFO. Works on the incoming service and on [`crate::RpcClient`].
#[derive(Debug, Clone, Copy)]
pub struct TraceLayer {
    max_params: usize,
}

impl TraceLayer {
    /// Logs up to 256 characters of params.
    pub fn new() -> Self {
        TraceLayer { max_params: 256 }
    }

    /// How many characters of params to log (default 256).
    pub fn max_params(mut self, chars: usize) -> Self {
        self.max_params = chars;
        self
    }
}

impl Default for TraceLayer {
    fn default() -> Self {
        TraceLayer::new()
    }
}

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;
    fn layer(&self, inner: S) -> Trace<S> {
        Trace {
            inner,
            max_params: self.max_params,
        }
    }
}

/// The service [`TraceLayer`] makes: the inner service, every call logged.
#[derive(Debug, Clone)]
pub struct Trace<S> {
    inner: S,
    max_params: usize,
}

/// `s` cut to at most `max` characters (on a char boundary), with an ellipsis if cut.
pub fn truncate(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => s.into(),
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()).into(),
    }
}

/// What the trace layer reads from a request.
pub trait Traced {
    /// `in-request`, `in-notification` or `out-request`.
    fn direction(&self) -> &'static str;
    /// The method name.
    fn method(&self) -> &str;
    /// The request's id as text; empty for a notification, and for an outgoing request (its id is
    /// given later, by the engine).
    fn id(&self) -> String;
    /// The raw params, if any.
    fn params(&self) -> Option<&RawValue>;
}

impl Traced for Incoming {
    fn direction(&self) -> &'static str {
        if self.is_notification() {
            "in-notification"
        } else {
            "in-request"
        }
    }
    fn method(&self) -> &str {
        &self.method
    }
    fn id(&self) -> String {
        self.id.as_ref().map(|i| i.to_string()).unwrap_or_default()
    }
    fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
}

impl Traced for RpcRequest {
    fn direction(&self) -> &'static str {
        "out-request"
    }
    fn method(&self) -> &str {
        &self.method
    }
    fn id(&self) -> String {
        String::new()
    }
    fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }
}

impl<S, R> Service<R> for Trace<S>
where
    R: Traced,
    S: Service<R>,
    S::Error: Display,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let direction = req.direction();
        let method = req.method().to_owned();
        let id = req.id();
        tracing::debug!(
            target: RPC_TARGET,
            direction,
            id = %id,
            method = %method,
            params = %req.params().map(|p| truncate(p.get(), self.max_params)).unwrap_or_default(),
            "rpc start"
        );
        let start = Instant::now();
        let fut = self.inner.call(req);
        async move {
            let r = fut.await;
            let duration_ms = start.elapsed().as_secs_f64() * 1000.0;
            match &r {
                Ok(_) => tracing::debug!(
                    target: RPC_TARGET, direction, id = %id, method = %method,
                    duration_ms, outcome = "ok", "rpc done"
                ),
                Err(e) => tracing::info!(
                    target: RPC_TARGET, direction, id = %id, method = %method,
                    duration_ms, outcome = "error", error = %e, "rpc failed"
                ),
            }
            r
        }
        .boxed()
    }
}

// ---------------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------------

/// Turns a handler panic (in `call` or in its future) into a -32603 Internal error whose
/// `data.details` holds the panic message.
#[derive(Debug, Clone, Copy, Default)]
pub struct CatchPanicLayer;

impl<S> Layer<S> for CatchPanicLayer {
    type Service = CatchPanic<S>;
    fn layer(&self, inner: S) -> CatchPanic<S> {
        CatchPanic { inner }
    }
}

/// The service [`CatchPanicLayer`] makes: the inner service, its panics answered -32603.
#[derive(Debug, Clone)]
pub struct CatchPanic<S> {
    inner: S,
}

fn panic_error(method: &str, payload: Box<dyn std::any::Any + Send>) -> ErrorObject {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".into());
    tracing::error!(target: RPC_TARGET, method, "handler panicked: {msg}");
    ErrorObject::internal(format!("handler for {method} panicked: {msg}"))
}

impl<S> Service<Incoming> for CatchPanic<S>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        let method = req.method.clone();
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(req))) {
            Err(p) => futures::future::ready(Err(panic_error(&method, p))).boxed(),
            Ok(fut) => AssertUnwindSafe(fut)
                .catch_unwind()
                .map(move |r| r.unwrap_or_else(|p| Err(panic_error(&method, p))))
                .boxed(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Per-method timeouts
// ---------------------------------------------------------------------------------------------

/// Answers a request whose handler takes longer than its method's limit with -32603 (data
/// `{"reason":"timeout","timeoutMs":N}`) and fires the request's cancellation token.
/// Notifications are not limited.
#[derive(Debug, Clone, Default)]
pub struct MethodTimeoutLayer {
    default: Option<Duration>,
    per_method: Arc<HashMap<String, Option<Duration>>>,
}

impl MethodTimeoutLayer {
    /// `default` applies to every method not set with [`method`](Self::method).
    pub fn new(default: Option<Duration>) -> Self {
        MethodTimeoutLayer {
            default,
            per_method: Arc::default(),
        }
    }

    /// Sets `method`'s limit (`None`: unlimited, e.g. `session/prompt`).
    pub fn method(mut self, method: impl Into<String>, limit: Option<Duration>) -> Self {
        Arc::make_mut(&mut self.per_method).insert(method.into(), limit);
        self
    }

    fn limit(&self, method: &str) -> Option<Duration> {
        match self.per_method.get(method) {
            Some(l) => *l,
            None => self.default,
        }
    }
}

impl<S> Layer<S> for MethodTimeoutLayer {
    type Service = MethodTimeout<S>;
    fn layer(&self, inner: S) -> MethodTimeout<S> {
        MethodTimeout {
            inner,
            config: self.clone(),
        }
    }
}

/// The service [`MethodTimeoutLayer`] makes: the inner service, each request limited to its
/// method's time.
#[derive(Debug, Clone)]
pub struct MethodTimeout<S> {
    inner: S,
    config: MethodTimeoutLayer,
}

impl<S> Service<Incoming> for MethodTimeout<S>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        let limit = if req.is_notification() {
            None
        } else {
            self.config.limit(&req.method)
        };
        let cancel = req.cancel.clone();
        let method = req.method.clone();
        let fut = self.inner.call(req);
        match limit {
            None => fut.boxed(),
            Some(limit) => async move {
                match tokio::time::timeout(limit, fut).await {
                    Ok(r) => r,
                    Err(_) => {
                        cancel.cancel();
                        let ms = crate::driver::duration_ms(limit);
                        Err(ErrorObject::new(
                            ErrorCode::InternalError,
                            format!("{method} did not complete within {ms} ms"),
                        )
                        .with_data(serde_json::json!({ "reason": "timeout", "timeoutMs": ms })))
                    }
                }
            }
            .boxed(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lifecycle gating
// ---------------------------------------------------------------------------------------------

const INITIALIZED: u8 = 1;
const AUTHENTICATED: u8 = 2;

/// Where a connection's lifecycle stands; shared by clones (so the application can also look,
/// or mark it by hand).
#[derive(Debug, Clone, Default)]
pub struct Lifecycle(Arc<AtomicU8>);

impl Lifecycle {
    /// Neither initialized nor authenticated.
    pub fn new() -> Self {
        Lifecycle::default()
    }
    /// Whether an `initialize` has succeeded through the gate (or
    /// [`mark_initialized`](Self::mark_initialized) was called).
    pub fn is_initialized(&self) -> bool {
        self.0.load(Ordering::Acquire) >= INITIALIZED
    }
    /// Whether an `authenticate` has succeeded through the gate (or
    /// [`mark_authenticated`](Self::mark_authenticated) was called).
    pub fn is_authenticated(&self) -> bool {
        self.0.load(Ordering::Acquire) >= AUTHENTICATED
    }
    /// Marks the connection initialized, as a successful `initialize` does.
    pub fn mark_initialized(&self) {
        self.0.fetch_max(INITIALIZED, Ordering::AcqRel);
    }
    /// Marks the connection authenticated (and so initialized), as a successful `authenticate`
    /// does.
    pub fn mark_authenticated(&self) {
        self.0.fetch_max(AUTHENTICATED, Ordering::AcqRel);
    }
}

/// Agent side: refuses every request but `initialize` until an `initialize` has succeeded
/// (-32600 Invalid Request, `data: {"reason":"notInitialized","method":...}`), and drops
/// notifications until then. With [`require_authentication`](Self::require_authentication),
/// also refuses everything but `initialize`/`authenticate` until an `authenticate` succeeded
/// (-32000 Authentication required).
#[derive(Debug, Clone, Default)]
pub struct LifecycleLayer {
    state: Lifecycle,
    require_auth: bool,
}

impl LifecycleLayer {
    /// A gate with a state of its own; authentication not required.
    pub fn new() -> Self {
        LifecycleLayer::default()
    }

    /// Uses (and updates) a shared state.
    pub fn with_state(state: Lifecycle) -> Self {
        LifecycleLayer {
            state,
            require_auth: false,
        }
    }

    /// Also refuses every request but `initialize` and `authenticate` until an `authenticate` has
    /// succeeded: -32000 Authentication required, `data: {"method": ...}` (notifications are
    /// dropped).
    pub fn require_authentication(mut self) -> Self {
        self.require_auth = true;
        self
    }

    /// The state the gate reads and updates (shared by its clones and the services it makes).
    pub fn state(&self) -> &Lifecycle {
        &self.state
    }
}

impl<S> Layer<S> for LifecycleLayer {
    type Service = LifecycleGate<S>;
    fn layer(&self, inner: S) -> LifecycleGate<S> {
        LifecycleGate {
            inner,
            config: self.clone(),
        }
    }
}

/// The service [`LifecycleLayer`] makes: the inner service behind the lifecycle rules.
#[derive(Debug, Clone)]
pub struct LifecycleGate<S> {
    inner: S,
    config: LifecycleLayer,
}

impl<S> Service<Incoming> for LifecycleGate<S>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        let state = self.config.state.clone();
        let m = req.method.as_str();
        let refuse = if m == methods::INITIALIZE {
            None
        } else if !state.is_initialized() {
            Some(
                ErrorObject::new(
                    ErrorCode::InvalidRequest,
                    format!("initialize must complete before {m}"),
                )
                .with_data(serde_json::json!({ "reason": "notInitialized", "method": m })),
            )
        } else if self.config.require_auth
            && m != methods::AUTHENTICATE
            && !state.is_authenticated()
        {
            Some(
                ErrorObject::from_code(ErrorCode::AuthRequired)
                    .with_data(serde_json::json!({ "method": m })),
            )
        } else {
            None
        };
        if let Some(e) = refuse {
            if req.is_notification() {
                tracing::debug!(method = m, "dropping notification: {}", e.message);
                let null = RawValue::from_string("null".into()).expect("valid JSON");
                return futures::future::ready(Ok(null)).boxed();
            }
            return futures::future::ready(Err(e)).boxed();
        }
        let marks = match m {
            methods::INITIALIZE => Some(INITIALIZED),
            methods::AUTHENTICATE => Some(AUTHENTICATED),
            _ => None,
        };
        let fut = self.inner.call(req);
        match marks {
            None => fut.boxed(),
            Some(level) => fut
                .map(move |r| {
                    if r.is_ok() {
                        state.0.fetch_max(level, Ordering::AcqRel);
                    }
                    r
                })
                .boxed(),
        }
    }
}

/// Maps any `tower` error (e.g. from `tower::timeout` on an [`crate::RpcClient`]) back to an
/// [`RpcError`]: an [`RpcError`] is unboxed, `tower::timeout`'s `Elapsed` becomes
/// `Call(CallError::TimedOut { after_ms: 0 })` (the error does not say after how long: with a
/// `TimeoutLayer` of your own, map with [`rpc_error_from_box_after`] and its duration), anything
/// else `Other` with its message.
pub fn rpc_error_from_box(e: tower::BoxError) -> RpcError {
    from_box(e, 0)
}

/// [`rpc_error_from_box`] for a stack whose `tower::timeout` waits `timeout`: its `Elapsed`
/// becomes `Call(CallError::TimedOut { after_ms })` with that duration, so the message says
/// "request timed out after 250 ms", not "after 0 ms".
///
/// ```
/// # use std::time::Duration;
/// let map = acp_native::layers::rpc_error_from_box_after(Duration::from_millis(250));
/// let e = map(Box::new(tower::timeout::error::Elapsed::new()));
/// assert_eq!(e.to_string(), "request timed out after 250 ms");
/// ```
pub fn rpc_error_from_box_after(
    timeout: std::time::Duration,
) -> impl Fn(tower::BoxError) -> RpcError + Clone {
    let after_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    move |e| from_box(e, after_ms)
}

fn from_box(e: tower::BoxError, after_ms: u64) -> RpcError {
    match e.downcast::<RpcError>() {
        Ok(e) => *e,
        Err(e) => {
            if e.is::<tower::timeout::error::Elapsed>() {
                RpcError::Call(acp_core::CallError::TimedOut { after_ms })
            } else {
                RpcError::Other(e.to_string())
            }
        }
    }
}
