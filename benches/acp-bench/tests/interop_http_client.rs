//! Interop: acp-native's remote client (`acp_native::remote::client`) against the official
//! HTTP transport's server (`agent-client-protocol-http` 5, `AcpHttpServer`) hosting an agent
//! built with the official SDK (`Agent.v1()`), over HTTP + SSE and over WebSocket.
//!
//! The official server has no authentication: as its docs suggest, it is nested in an axum
//! router whose middleware requires `Authorization: Bearer TOKEN` (so the tests also show our
//! client sends the token on every POST, SSE GET, DELETE and the WebSocket handshake, and that
//! a wrong one is a clear HTTP 401 error).
//!
//! Each transport: `initialize`, an SDK agent error (code, message, data intact), a full turn
//! (streamed chunks, a permission request answered by us, `end_turn`), `session/cancel` during
//! a long turn (ends `cancelled`), two sessions at once on one connection, and the connection
//! ended with `DELETE` (HTTP) / a close frame (WebSocket) when we close.
//!
//! CI runs it with `scripts/interop-rust-sdk.sh`. Every test is bounded (`BOUND`).

#![cfg(feature = "native")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{typed, Role};
use acp_native::remote::client::{self as remote, ClientOptions, RemoteError};
use acp_native::{ClientSideConnection, DriverConfig, Router};
use agent_client_protocol as sdk;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{Agent, Client, ConnectTo};
use agent_client_protocol_http::AcpHttpServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const BOUND: Duration = Duration::from_secs(60);
const TOKEN: &str = "interop-token-0123456789";

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not finished within {BOUND:?}"),
    }
}

fn text_of(block: &s::ContentBlock) -> Option<&str> {
    match block {
        s::ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

fn chunk(session: &s::SessionId, text: &str) -> s::SessionNotification {
    s::SessionNotification::new(
        session.clone(),
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.to_string().into())),
    )
}

fn forbidden_error() -> sdk::Error {
    sdk::Error::new(
        sdk::ErrorCode::new(-32042),
        "the SDK agent refuses this cwd",
    )
    .data(json!({"cwd": "/forbidden", "nested": {"list": [1, "two", null]}}))
}

/// One turn: three chunks and a permission request ("write it"), or one chunk then a wait for
/// `session/cancel` ("long").
async fn agent_turn(
    cx: sdk::v1::ConnectionTo<Client>,
    p: s::PromptRequest,
    cancel: CancellationToken,
) -> Result<s::StopReason, sdk::Error> {
    let sid = p.session_id.clone();
    let text = p.prompt.first().and_then(text_of).unwrap_or_default();
    if text == "long" {
        cx.send_notification(chunk(&sid, "working on it"))?;
        return tokio::select! {
            _ = cancel.cancelled() => {
                cx.send_notification(chunk(&sid, "stopped"))?;
                Ok(s::StopReason::Cancelled)
            }
            _ = tokio::time::sleep(BOUND) => Ok(s::StopReason::EndTurn),
        };
    }
    for piece in ["one", " two", " three"] {
        cx.send_notification(chunk(&sid, piece))?;
    }
    let permission = cx
        .send_request(s::RequestPermissionRequest::new(
            sid.clone(),
            s::ToolCallUpdate::new(
                "write-1".to_string(),
                s::ToolCallUpdateFields::new()
                    .title("Write notes.txt")
                    .kind(s::ToolKind::Edit),
            ),
            vec![
                s::PermissionOption::new("yes", "Allow", s::PermissionOptionKind::AllowOnce),
                s::PermissionOption::new("no", "Reject", s::PermissionOptionKind::RejectOnce),
            ],
        ))
        .block_task()
        .await?;
    let answer = match &permission.outcome {
        s::RequestPermissionOutcome::Selected(sel) => format!(" (answered {})", sel.option_id.0),
        _ => " (cancelled)".to_string(),
    };
    cx.send_notification(chunk(&sid, &answer))?;
    Ok(s::StopReason::EndTurn)
}

/// The SDK agent: sessions `sdk-N`, each with its cancel token.
fn sdk_agent() -> impl ConnectTo<Client> {
    let sessions: Arc<Mutex<Vec<CancellationToken>>> = Arc::default();
    let (s1, s2, s3) = (sessions.clone(), sessions.clone(), sessions);
    let index = |sid: &s::SessionId| {
        sid.0
            .strip_prefix("sdk-")
            .and_then(|n| n.parse::<usize>().ok())
            .map(|n| n.wrapping_sub(1))
    };
    Agent
        .v1()
        .name("acp-rs-http-interop-agent")
        .on_receive_request(
            async move |init: s::InitializeRequest, responder, _cx| {
                responder.respond(
                    s::InitializeResponse::new(init.protocol_version)
                        .agent_info(s::Implementation::new("rust-sdk-http-agent", "5")),
                )
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: s::NewSessionRequest, responder, _cx| {
                if req.cwd == std::path::Path::new("/forbidden") {
                    return responder.respond_with_error(forbidden_error());
                }
                let mut sessions = s1.lock().unwrap();
                sessions.push(CancellationToken::new());
                responder.respond(s::NewSessionResponse::new(format!(
                    "sdk-{}",
                    sessions.len()
                )))
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |p: s::PromptRequest, responder, cx| {
                let found = index(&p.session_id).and_then(|i| s2.lock().unwrap().get(i).cloned());
                let Some(cancel) = found else {
                    return responder.respond_with_error(
                        s::Error::session_not_found(p.session_id.clone()).into(),
                    );
                };
                let task_cx = cx.clone();
                cx.spawn(async move {
                    match agent_turn(task_cx, p, cancel).await {
                        Ok(stop) => responder.respond(s::PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            sdk::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: s::CancelNotification, _cx| {
                if let Some(t) =
                    index(&n.session_id).and_then(|i| s3.lock().unwrap().get(i).cloned())
                {
                    t.cancel();
                }
                Ok(())
            },
            sdk::on_receive_notification!(),
        )
}

/// What the official server saw: requests by method, and whether each carried the token.
#[derive(Default)]
struct ServerLog {
    requests: Mutex<Vec<String>>,
    without_token: AtomicUsize,
}

/// The official server (SSE and WebSocket on `/acp`) behind a bearer-token check; its address.
async fn serve() -> (
    std::net::SocketAddr,
    Arc<ServerLog>,
    tokio::task::JoinHandle<()>,
) {
    use axum::extract::Request;
    use axum::middleware::Next;
    use axum::response::{IntoResponse, Response};
    let log = Arc::new(ServerLog::default());
    let seen = log.clone();
    let auth = move |request: Request, next: Next| {
        let seen = seen.clone();
        async move {
            let bearer = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let upgrade = request.headers().contains_key("upgrade");
            seen.requests.lock().unwrap().push(format!(
                "{}{}",
                request.method(),
                if upgrade { " (upgrade)" } else { "" }
            ));
            if bearer.as_deref() != Some(&format!("Bearer {TOKEN}")) {
                seen.without_token.fetch_add(1, Ordering::SeqCst);
                return (
                    axum::http::StatusCode::UNAUTHORIZED,
                    "a valid bearer token is required",
                )
                    .into_response();
            }
            let response: Response = next.run(request).await;
            response
        }
    };
    let app = AcpHttpServer::new(sdk_agent)
        .into_router()
        .layer(axum::middleware::from_fn(auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, log, server)
}

/// What our client saw from the agent.
#[derive(Default)]
struct Seen {
    chunks: Vec<(String, String)>,
    permissions: Vec<s::RequestPermissionRequest>,
}

fn client_router(seen: Arc<Mutex<Seen>>, updates: Arc<tokio::sync::Notify>) -> Router {
    let (s1, s2) = (seen.clone(), seen);
    Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            let s1 = s1.clone();
            let updates = updates.clone();
            async move {
                if let s::SessionUpdate::AgentMessageChunk(c) = &n.update {
                    if let Some(t) = text_of(&c.content) {
                        s1.lock()
                            .unwrap()
                            .chunks
                            .push((n.session_id.0.to_string(), t.to_owned()));
                    }
                }
                updates.notify_waiters();
            }
        })
        .route::<typed::RequestPermission, _, _>(move |r: s::RequestPermissionRequest, _cx| {
            let s2 = s2.clone();
            async move {
                s2.lock().unwrap().permissions.push(r);
                Ok(s::RequestPermissionResponse::new(
                    s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                        "yes".to_string(),
                    )),
                ))
            }
        })
}

fn chunks_of(seen: &Mutex<Seen>, session: &s::SessionId) -> Vec<String> {
    seen.lock()
        .unwrap()
        .chunks
        .iter()
        .filter(|(sid, _)| *sid == *session.0)
        .map(|(_, t)| t.clone())
        .collect()
}

async fn full_conversation(url: &str, log: &ServerLog) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let notify = Arc::new(tokio::sync::Notify::new());
    let options = ClientOptions::default().token(TOKEN);
    let (conn, link) = remote::connect(
        url,
        &options,
        client_router(seen.clone(), notify.clone()),
        DriverConfig::new(Role::Client),
    )
    .await
    .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    let conn = conn.with_timeout(BOUND);

    let init = conn
        .initialize(s::InitializeRequest::new(ProtocolVersion::V1))
        .await
        .expect("initialize");
    assert_eq!(init.agent_info.unwrap().name, "rust-sdk-http-agent");

    // The SDK agent's own error arrives intact.
    let e = conn
        .new_session(s::NewSessionRequest::new("/forbidden"))
        .await
        .expect_err("refused");
    let remote_err = e.remote().unwrap_or_else(|| panic!("not remote: {e:?}"));
    assert_eq!(remote_err.code, -32042);
    assert_eq!(remote_err.data, forbidden_error().data);

    // A full turn with a permission request answered by us.
    let dir = std::env::temp_dir();
    let session = conn
        .new_session(s::NewSessionRequest::new(dir.clone()))
        .await
        .expect("session/new");
    let done = conn
        .prompt(s::PromptRequest::new(
            session.session_id.clone(),
            vec!["write it".into()],
        ))
        .await
        .expect("prompt");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    conn.handle().notifications_handled().await;
    assert_eq!(
        chunks_of(&seen, &session.session_id),
        ["one", " two", " three", " (answered yes)"]
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.permissions.len(), 1);
        assert_eq!(seen.permissions[0].session_id, session.session_id);
        assert_eq!(&*seen.permissions[0].tool_call.tool_call_id.0, "write-1");
    }

    // A second session, with a long turn cancelled while the first session runs a turn.
    let long = conn
        .new_session(s::NewSessionRequest::new(dir.clone()))
        .await
        .expect("session/new");
    assert_ne!(long.session_id, session.session_id);
    let turn = tokio::spawn({
        let conn = conn.clone();
        let sid = long.session_id.clone();
        async move {
            conn.prompt(s::PromptRequest::new(sid, vec!["long".into()]))
                .await
        }
    });
    loop {
        let waiting = notify.notified();
        if !chunks_of(&seen, &long.session_id).is_empty() {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), waiting).await;
    }
    let again = conn
        .prompt(s::PromptRequest::new(
            session.session_id.clone(),
            vec!["write it".into()],
        ))
        .await
        .expect("a turn beside the long one");
    assert_eq!(again.stop_reason, s::StopReason::EndTurn);
    conn.cancel(s::CancelNotification::new(long.session_id.clone()))
        .await
        .expect("session/cancel");
    let done = turn.await.unwrap().expect("the cancelled prompt answers");
    assert_eq!(done.stop_reason, s::StopReason::Cancelled);
    conn.handle().notifications_handled().await;
    assert_eq!(
        chunks_of(&seen, &long.session_id),
        ["working on it", "stopped"]
    );
    assert_eq!(seen.lock().unwrap().permissions.len(), 2);
    assert_eq!(link.failure(), None, "{url}");

    // Closing ends the connection on the server: DELETE (HTTP) or a close frame.
    let requests_before = log.requests.lock().unwrap().len();
    conn.close("done");
    let _ = tokio::time::timeout(Duration::from_secs(5), link.ended()).await;
    if url.starts_with("http") {
        let requests = log.requests.lock().unwrap();
        assert!(
            requests[requests_before..].iter().any(|r| r == "DELETE"),
            "no DELETE after close: {requests:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_official_server_over_sse() {
    let (addr, log, server) = serve().await;
    bounded(
        "SSE",
        full_conversation(&format!("http://{addr}/acp"), &log),
    )
    .await;
    let requests = log.requests.lock().unwrap().clone();
    // POSTs, the connection's and each session's stream (GET), and DELETE; all with the token.
    assert!(
        requests.iter().filter(|r| *r == "GET").count() >= 3,
        "{requests:?}"
    );
    assert!(requests.iter().any(|r| r == "POST"), "{requests:?}");
    assert_eq!(log.without_token.load(Ordering::SeqCst), 0, "{requests:?}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_official_server_over_websocket() {
    let (addr, log, server) = serve().await;
    bounded(
        "WebSocket",
        full_conversation(&format!("ws://{addr}/acp"), &log),
    )
    .await;
    let requests = log.requests.lock().unwrap().clone();
    assert_eq!(requests, ["GET (upgrade)"], "one socket for everything");
    assert_eq!(log.without_token.load(Ordering::SeqCst), 0);
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_a_clear_401_on_both_transports() {
    let (addr, _log, server) = serve().await;
    let options = ClientOptions::default().token("not-the-token-at-all");
    bounded("wrong token", async {
        // WebSocket: the handshake fails at once.
        let e = remote::open(&format!("ws://{addr}/acp"), &options)
            .await
            .expect_err("refused");
        assert_eq!(e.status(), Some(401), "{e}");
        assert!(e.is_refusal());
        assert!(
            e.to_string().contains("the token is missing or wrong"),
            "{e}"
        );
        // HTTP: the initialize POST fails, and the call says why.
        let (conn, link) = remote::connect(
            &format!("http://{addr}/acp"),
            &options,
            Router::new(),
            DriverConfig::new(Role::Client),
        )
        .await
        .expect("the server is reachable");
        let e = conn
            .initialize(s::InitializeRequest::new(ProtocolVersion::V1))
            .await
            .expect_err("refused");
        assert!(e.to_string().contains("HTTP 401"), "{e}");
        // The connection's close reason (set once the driver has closed: awaited).
        let reason = conn.closed().await;
        assert!(reason.contains("HTTP 401"), "{reason} / {e:?}");
        assert!(link
            .failure()
            .unwrap()
            .contains("the token is missing or wrong"));
    })
    .await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_and_wrong_paths_are_clear_errors() {
    let (addr, _log, server) = serve().await;
    let options = ClientOptions::default().token(TOKEN);
    bounded("errors", async {
        // Nothing listens: refused, for both schemes.
        let free = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        for scheme in ["http", "ws"] {
            let e = remote::open(&format!("{scheme}://{free}/acp"), &options)
                .await
                .expect_err("refused");
            assert!(matches!(e, RemoteError::Refused { .. }), "{e:?}");
        }
        // Not the ACP path: 404 says so.
        let e = remote::open(&format!("ws://{addr}/elsewhere"), &options)
            .await
            .expect_err("404");
        assert_eq!(e.status(), Some(404), "{e}");
        assert!(e.to_string().contains("no ACP endpoint"), "{e}");
        // A scheme we do not speak.
        let e = remote::open("ftp://example.com/acp", &options)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, RemoteError::Url(_)), "{e:?}");
    })
    .await;
    server.abort();
}

/// `ClientSideConnection::connect_url` is the same transport.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_url_on_the_connection_type() {
    let (addr, _log, server) = serve().await;
    let (conn, _link) = ClientSideConnection::connect_url(
        &format!("http://{addr}"),
        &ClientOptions::default().token(TOKEN),
        Router::new(),
        DriverConfig::new(Role::Client),
    )
    .await
    .expect("connect (the path defaults to /acp)");
    let init = bounded(
        "initialize",
        conn.initialize(s::InitializeRequest::new(ProtocolVersion::V1)),
    )
    .await
    .expect("initialize");
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    server.abort();
}
