//! Shared pieces of the host-core tests: a small agent, a small client, and one scenario that
//! exercises both directions (requests each way, notifications, extension methods).
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed;
use acp_core::{ErrorObject, RawValue, Role};
use acp_native::layers::{CatchPanicLayer, LifecycleLayer, TraceLayer};
use acp_native::{
    AgentSideConnection, ClientSideConnection, DriverConfig, RequestContext, Router, RpcError,
    RpcService,
};
use agent_client_protocol_schema::v1 as s;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tower::ServiceBuilder;

/// `v` as raw params.
pub fn raw(v: serde_json::Value) -> Option<Box<RawValue>> {
    Some(serde_json::value::to_raw_value(&v).unwrap())
}

/// The peer's error object of a failed call (panics on any other failure).
pub fn remote(e: RpcError) -> ErrorObject {
    e.remote()
        .cloned()
        .unwrap_or_else(|| panic!("expected a remote error, got {e:?}"))
}

/// Bound for "this must happen" waits (a hang fails instead of blocking CI). Never a
/// synchronisation sleep: tests await the event itself.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

pub async fn eventually<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(EVENTUALLY, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

pub fn text(s: &str) -> s::ContentBlock {
    s.into()
}

/// The demo agent: initialize, session/new, and a prompt that streams three chunks, asks
/// permission, reads a file through the client, streams it back and ends the turn.
pub fn agent_router() -> Router {
    Router::new()
        .route::<typed::Initialize, _, _>(
            |p: s::InitializeRequest, _cx: RequestContext| async move {
                Ok(s::InitializeResponse::new(p.protocol_version))
            },
        )
        .route::<typed::NewSession, _, _>(|p: s::NewSessionRequest, _cx| async move {
            Ok(s::NewSessionResponse::new(format!(
                "session-{}",
                p.cwd.display()
            )))
        })
        .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
            let client = cx.client();
            let sid = p.session_id.clone();
            let err = |e: acp_native::RpcError| e.to_error_object();
            for i in 0..3 {
                client
                    .session_update(s::SessionNotification::new(
                        sid.clone(),
                        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text(&format!(
                            "chunk {i}"
                        )))),
                    ))
                    .await
                    .map_err(err)?;
            }
            let permission = client
                .request_permission(s::RequestPermissionRequest::new(
                    sid.clone(),
                    s::ToolCallUpdate::new("call-1", s::ToolCallUpdateFields::new()),
                    vec![s::PermissionOption::new(
                        "allow",
                        "Allow",
                        s::PermissionOptionKind::AllowOnce,
                    )],
                ))
                .await
                .map_err(err)?;
            if !matches!(permission.outcome, s::RequestPermissionOutcome::Selected(_)) {
                return Ok(s::PromptResponse::new(s::StopReason::Cancelled));
            }
            let file = client
                .read_text_file(s::ReadTextFileRequest::new(sid.clone(), "/project/a.txt"))
                .await
                .map_err(err)?;
            client
                .session_update(s::SessionNotification::new(
                    sid,
                    s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text(&file.content))),
                ))
                .await
                .map_err(err)?;
            Ok(s::PromptResponse::new(s::StopReason::EndTurn))
        })
        .ext_method("test/echo", |v, _cx| async move { Ok(v) })
        .route_raw("_test/panic", |_p, _cx| async move {
            panic!("boom in handler");
        })
}

/// The agent's full stack: tracing, panics caught, lifecycle gating.
pub fn agent_service() -> RpcService {
    RpcService::new(
        ServiceBuilder::new()
            .layer(TraceLayer::new())
            .layer(CatchPanicLayer)
            .layer(LifecycleLayer::new())
            .service(agent_router()),
    )
}

/// What the test client saw.
#[derive(Default)]
pub struct Seen {
    pub updates: Mutex<Vec<String>>,
    pub changed: Notify,
}

impl Seen {
    pub fn texts(&self) -> Vec<String> {
        self.updates.lock().unwrap().clone()
    }
}

/// The test client: records `session/update` text chunks, allows every permission, serves
/// `/project/a.txt`.
pub fn client_router(seen: Arc<Seen>) -> Router {
    Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            let seen = seen.clone();
            async move {
                if let s::SessionUpdate::AgentMessageChunk(c) = n.update {
                    if let s::ContentBlock::Text(t) = c.content {
                        seen.updates.lock().unwrap().push(t.text);
                        seen.changed.notify_waiters();
                    }
                }
            }
        })
        .route::<typed::RequestPermission, _, _>(|p: s::RequestPermissionRequest, _cx| async move {
            let id = p.options[0].option_id.clone();
            Ok(s::RequestPermissionResponse::new(
                s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(id)),
            ))
        })
        .route::<typed::ReadTextFile, _, _>(|p: s::ReadTextFileRequest, _cx| async move {
            if p.path.to_str() == Some("/project/a.txt") {
                Ok(s::ReadTextFileResponse::new("file contents"))
            } else {
                Err(ErrorObject::from_code(
                    acp_core::ErrorCode::ResourceNotFound,
                ))
            }
        })
}

pub fn client_caps() -> s::ClientCapabilities {
    s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new().read_text_file(true))
}

/// Connects an agent ([`agent_service`]) over one pair of halves.
pub fn start_agent<R, W>(reader: R, writer: W) -> AgentSideConnection
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    AgentSideConnection::connect(
        reader,
        writer,
        agent_service(),
        DriverConfig::new(Role::Agent),
    )
}

pub fn start_client<R, W>(reader: R, writer: W, seen: Arc<Seen>) -> ClientSideConnection
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    ClientSideConnection::connect(
        reader,
        writer,
        RpcService::new(TraceLayer::new().layer_on(client_router(seen))),
        DriverConfig::new(Role::Client),
    )
}

/// The scenario, from the client's side.
pub async fn exercise(client: &ClientSideConnection, seen: &Seen) {
    let client = client.with_timeout(EVENTUALLY);
    let init = client
        .initialize(
            s::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
                .client_capabilities(client_caps()),
        )
        .await
        .expect("initialize");
    assert_eq!(
        init.protocol_version,
        agent_client_protocol_schema::ProtocolVersion::V1
    );
    let session = client
        .new_session(s::NewSessionRequest::new("/project"))
        .await
        .expect("session/new");
    assert_eq!(&*session.session_id.0, "session-/project");
    let done = client
        .prompt(s::PromptRequest::new(
            session.session_id.clone(),
            vec![text("hello")],
        ))
        .await
        .expect("session/prompt");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    client.handle().notifications_handled().await;
    assert_eq!(
        seen.texts(),
        ["chunk 0", "chunk 1", "chunk 2", "file contents"],
        "updates arrive in order, all before the prompt's result is final"
    );
    let echoed = client
        .ext_method("test/echo", serde_json::json!({"x": [1, 2, 3]}))
        .await
        .expect("_test/echo");
    assert_eq!(echoed, serde_json::json!({"x": [1, 2, 3]}));
}

/// `Layer::layer` as a method, for brevity.
pub trait LayerOn {
    fn layer_on<S>(self, s: S) -> <Self as tower::Layer<S>>::Service
    where
        Self: tower::Layer<S> + Sized,
    {
        tower::Layer::layer(&self, s)
    }
}
impl<L> LayerOn for L {}
