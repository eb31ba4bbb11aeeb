//! Interop: acp-native's remote client (`acp_native::remote::client`) against the official
//! HTTP transport's server (`agent-client-protocol-http` 5, `AcpHttpServer`) hosting an agent
//! built with the official SDK (`Agent.v1()`), over HTTP + SSE and over WebSocket. The server
//! is `rust-sdk-peer http-server` (tests/rust-sdk: the SDK pins another version of the schema
//! crate than acp-core, so it runs in its own program).
//!
//! The official server has no authentication: as its docs suggest, it is nested in an axum
//! router whose middleware requires `Authorization: Bearer TOKEN` (so the tests also show our
//! client sends the token on every POST, SSE GET, DELETE and the WebSocket handshake, and that
//! a wrong one is a clear HTTP 401 error); the peer prints a line per HTTP request it got.
//!
//! Each transport: `initialize`, an SDK agent error (code, message, data intact), a full turn
//! (streamed chunks, a permission request answered by us, `end_turn`), `session/cancel` during
//! a long turn (ends `cancelled`), two sessions at once on one connection, and the connection
//! ended with `DELETE` (HTTP) / a close frame (WebSocket) when we close.
//!
//! CI runs it with `scripts/interop-rust-sdk.sh`. Every test is bounded (`BOUND`).

#![cfg(feature = "native")]

mod support;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed::schema::ProtocolVersion;
use acp_core::{typed, Role};
use acp_native::remote::client::{self as remote, ClientOptions, RemoteError};
use acp_native::{ClientSideConnection, DriverConfig, Router};
use serde_json::json;
use support::*;

const TOKEN: &str = "interop-token-0123456789";
/// `session/new` with this cwd is refused by the SDK agent with its own error.
const FORBIDDEN_CWD: &str = "/forbidden-by-the-sdk-agent";

/// The official server, `rust-sdk-peer http-server --token TOKEN`: its address, and the HTTP
/// requests it got (`GET`, `POST`, `DELETE`, `GET (upgrade)`; and how many did not carry the
/// token). It exits when its stdin closes (on drop).
struct OfficialServer {
    child: Child,
    addr: String,
    requests: Arc<Mutex<Vec<String>>>,
    without_token: Arc<Mutex<usize>>,
    arrived: Arc<tokio::sync::Notify>,
}

impl OfficialServer {
    fn start() -> OfficialServer {
        let mut child = Command::new(sdk_peer())
            .args(["http-server", "--token", TOKEN])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start rust-sdk-peer http-server");
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let without_token = Arc::new(Mutex::new(0));
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (r, w, a) = (requests.clone(), without_token.clone(), arrived.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix("listening ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr.to_string());
                    }
                } else if let Some(rest) = line.strip_prefix("request ") {
                    let (what, token) = rest.rsplit_once(" token=").unwrap_or((rest, "wrong"));
                    r.lock().unwrap().push(what.to_string());
                    if token != "ok" {
                        *w.lock().unwrap() += 1;
                    }
                    a.notify_waiters();
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("rust-sdk-peer http-server did not print its address");
        OfficialServer {
            child,
            addr,
            requests,
            without_token,
            arrived,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    fn without_token(&self) -> usize {
        *self.without_token.lock().unwrap()
    }

    /// Waits until the server logged a request `what` past the first `after`.
    async fn logged(&self, what: &str, after: usize) {
        loop {
            let waiting = self.arrived.notified();
            if self.requests.lock().unwrap()[after..]
                .iter()
                .any(|r| r == what)
            {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), waiting).await;
        }
    }
}

impl Drop for OfficialServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn forbidden_data() -> serde_json::Value {
    json!({
        "cwd": FORBIDDEN_CWD,
        "nested": { "list": [1, "two", null], "ok": false },
    })
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

async fn full_conversation(url: &str, server: &OfficialServer) {
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
    assert_eq!(init.agent_info.unwrap().name, "rust-sdk-test-agent");

    // The SDK agent's own error arrives intact.
    let e = conn
        .new_session(s::NewSessionRequest::new(FORBIDDEN_CWD))
        .await
        .expect_err("refused");
    let remote_err = e.remote().unwrap_or_else(|| panic!("not remote: {e:?}"));
    assert_eq!(remote_err.code, -32042);
    assert_eq!(remote_err.data, Some(forbidden_data()));

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
    let requests_before = server.requests().len();
    conn.close("done");
    let _ = tokio::time::timeout(Duration::from_secs(5), link.ended()).await;
    if url.starts_with("http") {
        server.logged("DELETE", requests_before).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_official_server_over_sse() {
    let server = OfficialServer::start();
    let addr = server.addr.clone();
    bounded(
        "SSE",
        full_conversation(&format!("http://{addr}/acp"), &server),
    )
    .await;
    let requests = server.requests();
    // POSTs, the connection's and each session's stream (GET), and DELETE; all with the token.
    assert!(
        requests.iter().filter(|r| *r == "GET").count() >= 3,
        "{requests:?}"
    );
    assert!(requests.iter().any(|r| r == "POST"), "{requests:?}");
    assert_eq!(server.without_token(), 0, "{requests:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_official_server_over_websocket() {
    let server = OfficialServer::start();
    let addr = server.addr.clone();
    bounded(
        "WebSocket",
        full_conversation(&format!("ws://{addr}/acp"), &server),
    )
    .await;
    let requests = server.requests();
    assert_eq!(requests, ["GET (upgrade)"], "one socket for everything");
    assert_eq!(server.without_token(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_a_clear_401_on_both_transports() {
    let server = OfficialServer::start();
    let addr = server.addr.clone();
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
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_and_wrong_paths_are_clear_errors() {
    let server = OfficialServer::start();
    let addr = server.addr.clone();
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
    drop(server);
}

/// `ClientSideConnection::connect_url` is the same transport.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_url_on_the_connection_type() {
    let server = OfficialServer::start();
    let addr = server.addr.clone();
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
    drop(server);
}
