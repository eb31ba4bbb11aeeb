//! What the agent asks of the client: the router serving `fs/*`, `terminal/*` and
//! `session/request_permission`, turned into events for the UI loop (a bounded queue: see
//! [`EVENT_QUEUE`], [`EVENT_BYTES`]; small `session/update`s put in it directly when there is
//! room, [`QuickUpdates`]); the questions acp adds (a command, a write that changes what
//! runs), built by acp-client's question model; each write served, reported as `wrote PATH
//! (+N -M)`; the count of the agent's requests being served.

use std::sync::Arc;

use acp_client::permission;
use acp_client::question::{self, Before, Question};
use acp_core::{typed, ErrorCode, ErrorObject, RawValue};
use acp_native::fs_service::{AccessScope, FsConfig, FsError, FsService};
use acp_native::{Incoming, Router};
use agent_client_protocol_schema::v1 as s;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cli::render::{wire_name, Ui};
use crate::cli::terminals::{Gate, Terminals};

/// Events between the connection's handlers and the UI loop. When it is full (the UI is
/// blocked writing to a stdout nobody reads, or holds events back while a question is open),
/// the handlers wait, the connection's notification queue fills and it stops reading the
/// agent: memory stays bounded and the agent is slowed down instead.
pub(super) const EVENT_QUEUE: usize = 64;
/// Bytes of `session/update` params waiting for the UI (queued or held back), in KiB permits:
/// with the counts above, what an unread stdout or an open question can make `acp chat` hold
/// (a larger update waits until it is alone).
const EVENT_BYTES: usize = 64 << 20;
/// Updates smaller than this take no share of [`EVENT_BYTES`]: their count bounds them
/// ([`EVENT_QUEUE`] queued and 256 held back, under 1.3 MiB), and a stream of small chunks
/// does not take and give back a permit each.
const SMALL_UPDATE: usize = 4 << 10;

/// An update's share of [`EVENT_BYTES`], given back when the update has been shown.
type UpdateBytes = Option<tokio::sync::OwnedSemaphorePermit>;

/// Dropped when the UI loop is done with an update, while its handler waits for that (see
/// [`UpdateGate`]).
pub(super) type Taken = Option<oneshot::Sender<()>>;

/// While a session is being opened, each `session/update`'s handler waits until the UI loop
/// is done with the update (its [`Taken`] dropped) or the open is over. The driver hands a
/// call's answer over only after the notifications before it were handled (acp-native's wire
/// order), so while the open request's answer is not in, every update before it has been
/// taken or is in hand, and an update in hand once the answer is in came after it:
/// `Chat::open_call` knows which updates are a replay's (or held before a new session's id)
/// exactly, as the engine needs them. Closing the gate releases the handlers still waiting
/// (updates after the answer, taken later in order), so nothing waits on a UI loop that no
/// longer takes updates; outside an open the handlers do not wait (updates flow through the
/// bounded queue).
pub(super) struct UpdateGate {
    open: tokio::sync::watch::Sender<bool>,
}

impl Default for UpdateGate {
    fn default() -> Self {
        UpdateGate {
            open: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl UpdateGate {
    /// An open request is about to go out: updates wait until taken.
    pub(super) fn open(&self) {
        self.open.send_replace(true);
    }

    /// The open is over: updates no longer wait, and those waiting are released.
    pub(super) fn close(&self) {
        self.open.send_replace(false);
    }

    fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// Until the gate is closed (at once if it is).
    async fn closed(&self) {
        let _ = self.open.subscribe().wait_for(|open| !*open).await;
    }
}

/// What the connection's handlers hand to the UI loop.
pub(super) enum Event {
    /// A `session/update` notification (raw params), holding its bytes of [`EVENT_BYTES`]
    /// until it is shown (and, while a session opens, its handler: [`UpdateGate`]).
    Update(Option<Box<RawValue>>, UpdateBytes, Taken),
    /// A `session/request_permission` waiting for an answer.
    Permission(Box<PermissionAsk>),
    /// A write the agent made: acp-client's `wrote PATH (+N -M)` line.
    Wrote(String),
}

pub(super) struct PermissionAsk {
    pub(super) request: s::RequestPermissionRequest,
    /// What is shown (acp-client's question model): our own questions (a command, a
    /// sensitive write) have it from the start; the agent's requests get it when they are
    /// shown (with what the conversation then knows of the tool call).
    pub(super) question: Option<Question>,
    /// Only the user may approve it: `--yes` does not answer it (writes that change what
    /// runs); with no one to answer, it is refused.
    pub(super) user_only: bool,
    pub(super) reply: oneshot::Sender<s::RequestPermissionOutcome>,
    /// Fires when the engine answered it already (we sent `session/cancel`, or it closed).
    pub(super) withdrawn: CancellationToken,
}

impl PermissionAsk {
    /// The one-line title of the question.
    pub(super) fn title(&self, ui: &Ui) -> String {
        match &self.question {
            Some(q) => q.title.clone(),
            None => ui.permission_title(&self.request),
        }
    }
}

/// The options of one of acp's own questions, for the request it is answered through.
fn wire_options(q: &Question) -> Vec<s::PermissionOption> {
    q.options
        .iter()
        .map(|c| {
            let kind = match c.kind {
                permission::OptionKind::AllowOnce => s::PermissionOptionKind::AllowOnce,
                permission::OptionKind::AllowAlways => s::PermissionOptionKind::AllowAlways,
                permission::OptionKind::RejectAlways => s::PermissionOptionKind::RejectAlways,
                _ => s::PermissionOptionKind::RejectOnce,
            };
            s::PermissionOption::new(c.option_id.clone(), c.name.clone(), kind)
        })
        .collect()
}

/// The agent's options as the shared policy reads them.
pub(super) fn policy_options(options: &[s::PermissionOption]) -> Vec<permission::PermissionOption> {
    options
        .iter()
        .map(|o| permission::PermissionOption {
            option_id: o.option_id.0.to_string(),
            name: o.name.clone(),
            kind: serde_json::to_value(o.kind)
                .and_then(serde_json::from_value)
                .unwrap_or_else(|_| permission::OptionKind::Other(wire_name(&o.kind))),
        })
        .collect()
}

/// The agent's requests in flight on our side, and when the last one finished.
#[derive(Default)]
pub(super) struct Activity {
    pub(super) in_flight: std::sync::atomic::AtomicUsize,
    pub(super) last_done: std::sync::Mutex<Option<Instant>>,
}

impl Activity {
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(super) fn last_done(&self) -> Option<Instant> {
        *self.last_done.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts the agent's requests while our handlers serve them (a `tower::Service` wrapper).
#[derive(Clone)]
pub(super) struct CountInFlight<S> {
    pub(super) inner: S,
    pub(super) activity: Arc<Activity>,
}

impl<S> tower::Service<Incoming> for CountInFlight<S>
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    /// A notification's own future (nothing to count); a request's, counted.
    type Future = futures::future::Either<
        S::Future,
        futures::future::BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Incoming) -> Self::Future {
        if req.is_notification() {
            return futures::future::Either::Left(self.inner.call(req));
        }
        let activity = self.activity.clone();
        activity
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let fut = self.inner.call(req);
        futures::future::Either::Right(Box::pin(async move {
            let result = fut.await;
            *activity.last_done.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            activity
                .in_flight
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            result
        }))
    }
}

/// `session/update` notifications handed to the UI loop at once when they can be: small (they
/// take no share of [`EVENT_BYTES`]), no session being opened ([`UpdateGate`]) and room in the
/// queue. Nothing is built for them but the event (no handler future); the others go to the
/// router's handler, which waits for room (and, while a session opens, until taken).
///
/// Either way they reach the queue in wire order: the driver calls the service for a
/// notification only once the one before it has been handled (its future finished: acp-native's
/// notification contract), so an update put in the queue here, inside `call`, comes after an
/// earlier one that waited for room. Test `tests::quick_and_waiting_updates_keep_wire_order`.
#[derive(Clone)]
pub(super) struct QuickUpdates<S> {
    pub(super) inner: S,
    pub(super) events: mpsc::Sender<Event>,
    pub(super) gate: Arc<UpdateGate>,
}

impl<S> tower::Service<Incoming> for QuickUpdates<S>
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = futures::future::Either<
        futures::future::Ready<Result<Box<RawValue>, ErrorObject>>,
        S::Future,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Incoming) -> Self::Future {
        let quick = req.is_notification()
            && req.method == acp_core::acp::client::SESSION_UPDATE
            && req.params.as_ref().map_or(0, |p| p.get().len()) < SMALL_UPDATE
            && !self.gate.is_open();
        if quick {
            use tokio::sync::mpsc::error::TrySendError;
            match self
                .events
                .try_send(Event::Update(req.params.take(), None, None))
            {
                Ok(()) | Err(TrySendError::Closed(_)) => {
                    let null = serde_json::value::RawValue::NULL.to_owned();
                    return futures::future::Either::Left(futures::future::ready(Ok(null)));
                }
                Err(TrySendError::Full(event)) => {
                    if let Event::Update(params, ..) = event {
                        req.params = params;
                    }
                }
            }
        }
        futures::future::Either::Right(self.inner.call(req))
    }
}

/// The client side's handlers: everything the agent may ask of us.
pub(super) fn client_router(
    events: mpsc::Sender<Event>,
    update_gate: Arc<UpdateGate>,
    cwd: &std::path::Path,
    terminals: Terminals,
    edits: super::edits::Edits,
) -> Router {
    // Reads and writes are confined to the session's directory; writes that change what runs
    // are the user's question.
    let fs = Arc::new(FsService::new(
        FsConfig::new([cwd.to_path_buf()])
            .reads(AccessScope::WithinRoots)
            .writes(AccessScope::WithinRoots)
            .own_dirs(crate::cli::own_dirs())
            .sensitive_writes(write_gate(events.clone())),
    ));
    let (fs_read, fs_write) = (fs.clone(), fs);
    let updates = events.clone();
    let wrote = events.clone();
    let update_bytes = Arc::new(tokio::sync::Semaphore::new(EVENT_BYTES >> 10));
    let gate = terminal_gate(events.clone());
    #[cfg(feature = "unstable_protocol_v2")]
    let asks_v2 = events.clone();
    let router = Router::new()
        .notification_raw(acp_core::acp::client::SESSION_UPDATE, move |params, _cx| {
            // Waits while the UI is behind: the connection then stops reading the agent.
            let updates = updates.clone();
            let budget = update_bytes.clone();
            let update_gate = update_gate.clone();
            async move {
                let len = params.as_ref().map_or(0, |p| p.get().len());
                let bytes = if len < SMALL_UPDATE {
                    None
                } else {
                    let kib = (len / 1024 + 1).min(EVENT_BYTES >> 10);
                    let kib = u32::try_from(kib).unwrap_or(u32::MAX);
                    budget.acquire_many_owned(kib).await.ok()
                };
                if update_gate.is_open() {
                    let (taken, done) = oneshot::channel();
                    if updates
                        .send(Event::Update(params, bytes, Some(taken)))
                        .await
                        .is_ok()
                    {
                        tokio::select! {
                            _ = done => {}
                            () = update_gate.closed() => {}
                        }
                    }
                } else {
                    let _ = updates.send(Event::Update(params, bytes, None)).await;
                }
            }
        })
        .route::<typed::RequestPermission, _, _>(move |request, cx| {
            let events = events.clone();
            async move { Ok(ask_user(&events, request, cx.cancel).await) }
        })
        .route::<typed::ReadTextFile, _, _>(move |req, _cx| {
            let fs = fs_read.clone();
            async move { fs.read_text_file(req).await.map_err(fs_error) }
        })
        .route::<typed::WriteTextFile, _, _>(move |req, _cx| {
            let fs = fs_write.clone();
            let events = wrote.clone();
            let edits = edits.clone();
            async move {
                let w = fs.write_text_file_reporting(req).await.map_err(fs_error)?;
                // For /diff and /undo.
                super::edits::record(&edits, &w);
                let before = match (&w.old_text, w.existed) {
                    (Some(t), _) => Before::Text(t),
                    (None, true) => Before::Unreadable,
                    (None, false) => Before::Missing,
                };
                let path = w.path.display().to_string();
                let line = question::wrote(&path, before, &w.new_text);
                // Shown in order with the agent's updates (held while a question is open).
                let _ = events.send(Event::Wrote(line)).await;
                Ok(s::WriteTextFileResponse::new())
            }
        });
    // On a v2 connection the question has a `title` instead of v1's `toolCall`: read as v1's
    // (acp-client's question::v2, as the extension reads it); on a v1 connection it is read as above.
    #[cfg(feature = "unstable_protocol_v2")]
    let router = router.route_raw(
        acp_core::acp::client::SESSION_REQUEST_PERMISSION,
        move |params, cx| {
            let events = asks_v2.clone();
            async move {
                let text = params.as_deref().map_or("null", RawValue::get);
                let v1 = match cx.peer.protocol_version() {
                    acp_core::v2::PROTOCOL_VERSION => acp_client::question::v2::as_v1(text),
                    _ => None,
                };
                let request: s::RequestPermissionRequest =
                    serde_json::from_str(v1.as_deref().unwrap_or(text))
                        .map_err(ErrorObject::invalid_params)?;
                let answer = ask_user(&events, request, cx.cancel).await;
                serde_json::value::to_raw_value(&answer).map_err(ErrorObject::internal)
            }
        },
    );
    terminals.routes(router, gate)
}

/// The agent's permission question, put to the UI loop; `cancelled` when the UI is gone or
/// the engine answered it already (the turn was cancelled).
async fn ask_user(
    events: &mpsc::Sender<Event>,
    request: s::RequestPermissionRequest,
    cancel: CancellationToken,
) -> s::RequestPermissionResponse {
    let (reply, answer) = oneshot::channel();
    let ask = PermissionAsk {
        request,
        question: None,
        user_only: false,
        reply,
        withdrawn: cancel.clone(),
    };
    let outcome = if events.send(Event::Permission(Box::new(ask))).await.is_ok() {
        tokio::select! {
            a = answer => a.unwrap_or(s::RequestPermissionOutcome::Cancelled),
            // Answered by the engine already; this answer is dropped.
            _ = cancel.cancelled() => s::RequestPermissionOutcome::Cancelled,
        }
    } else {
        s::RequestPermissionOutcome::Cancelled
    };
    s::RequestPermissionResponse::new(outcome)
}

/// Every `terminal/create` is a permission question (the exact command line, directory and
/// environment changes, on one line, from acp-client's question), answered like the agent's
/// own: by the user, `--yes` (runs it) or `--deny` (refuses it); end of input refuses it and
/// cancels the turn.
pub(super) fn terminal_gate(events: mpsc::Sender<Event>) -> Gate {
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(
        move |req: &s::CreateTerminalRequest,
              question: acp_client::terminal::CommandQuestion,
              cancel: CancellationToken| {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let q = question::command(&question);
            let request = s::RequestPermissionRequest::new(
                req.session_id.clone(),
                s::ToolCallUpdate::new(
                    format!("acp-terminal-{n}"),
                    s::ToolCallUpdateFields::new()
                        .title(q.title.clone())
                        .kind(s::ToolKind::Execute)
                        .raw_input(serde_json::json!({
                            "command": req.command, "args": req.args, "cwd": req.cwd,
                        })),
                ),
                wire_options(&q),
            );
            let events = events.clone();
            Box::pin(async move {
                let (reply, answer) = oneshot::channel();
                let ask = PermissionAsk {
                    request,
                    question: Some(q),
                    user_only: false,
                    reply,
                    withdrawn: cancel.clone(),
                };
                if events.send(Event::Permission(Box::new(ask))).await.is_err() {
                    return false;
                }
                tokio::select! {
                    a = answer => matches!(
                        a,
                        Ok(s::RequestPermissionOutcome::Selected(o)) if &*o.option_id.0 == question::RUN
                    ),
                    _ = cancel.cancelled() => false,
                }
            })
        },
    )
}

/// A write that changes what runs (acp-client's `writes` rule: `.git/`, `.vscode/`, shell rc
/// files, executables…) is a question (acp-client's `question::write`) showing the real path,
/// why and the diff. Only the user answers it (`--yes` does not); `--deny` and end of input
/// refuse it.
pub(super) fn write_gate(events: mpsc::Sender<Event>) -> acp_native::fs_service::WriteApprover {
    let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(move |w: acp_native::fs_service::SensitiveWrite| {
        let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let path = w.path.display().to_string();
        let q = question::write(&question::WriteRequest {
            path: &path,
            asked_path: None,
            reason: w.reason,
            exists: w.exists,
            executable: w.executable,
            old_text: w.old_text.as_deref(),
            new_text: &w.new_text,
        });
        let request = s::RequestPermissionRequest::new(
            // Not the agent's session id: the question is ours, about its request.
            "acp",
            s::ToolCallUpdate::new(
                format!("acp-write-{n}"),
                s::ToolCallUpdateFields::new()
                    .title(q.title.clone())
                    .kind(s::ToolKind::Edit)
                    .locations(vec![s::ToolCallLocation::new(w.path.clone())]),
            ),
            wire_options(&q),
        );
        let events = events.clone();
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let ask = PermissionAsk {
                request,
                question: Some(q),
                user_only: true,
                reply,
                withdrawn: CancellationToken::new(),
            };
            if events.send(Event::Permission(Box::new(ask))).await.is_err() {
                return false;
            }
            matches!(
                answer.await,
                Ok(s::RequestPermissionOutcome::Selected(o)) if &*o.option_id.0 == question::WRITE
            )
        })
    })
}

fn fs_error(e: FsError) -> ErrorObject {
    let mut o = ErrorObject::new(ErrorCode::from_code(i64::from(e.code())), e.message());
    o.data = e.data();
    o
}

#[cfg(test)]
mod tests {
    use acp_native::process::EnvPolicy;
    use acp_native::{driver, transport, DriverConfig, Role};
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// Updates of both sizes (a large one always waits in the router's handler) through a
    /// queue of two to a UI loop that falls behind: the quick path and the waiting one
    /// alternate, and the UI loop takes every update once, in the order the agent sent them.
    #[tokio::test(flavor = "current_thread")]
    async fn quick_and_waiting_updates_keep_wire_order() {
        const N: usize = 3000;
        let (events, mut ui) = mpsc::channel(2);
        let gate = Arc::new(UpdateGate::default());
        let cwd = std::env::temp_dir();
        let terminals = Terminals::new(cwd.clone(), EnvPolicy::default(), 1);
        let service = QuickUpdates {
            inner: client_router(
                events.clone(),
                gate.clone(),
                &cwd,
                terminals,
                Default::default(),
            ),
            events,
            gate,
        };
        let ((cr, cw), (_agent_reads, mut agent)) = transport::duplex(64 << 10);
        let _conn = driver::spawn(cr, cw, service, DriverConfig::new(Role::Client));
        tokio::spawn(async move {
            let large = "x".repeat(SMALL_UPDATE);
            for i in 0..N {
                let pad = if i % 5 == 0 { large.as_str() } else { "" };
                let line = format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{i} {pad}"}}}}}}}}"#
                );
                agent.write_all(line.as_bytes()).await.unwrap();
                agent.write_all(b"\n").await.unwrap();
            }
        });
        for i in 0..N {
            // Behind now and then: the queue fills and updates wait for room.
            if i % 3 == 0 {
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
            }
            let Some(Event::Update(Some(params), _, taken)) = ui.recv().await else {
                panic!("update {i}: not an update");
            };
            let v: serde_json::Value = serde_json::from_str(params.get()).unwrap();
            let text = v["update"]["content"]["text"].as_str().unwrap();
            let n: usize = text.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(n, i, "update {n} arrived as the {i}th");
            assert!(taken.is_none(), "no session is being opened");
        }
    }
}
