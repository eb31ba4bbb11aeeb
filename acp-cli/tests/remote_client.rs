//! `acp_native::remote::client` against our server (`acp_native::remote::server`, what
//! `acp serve --http` runs) with `acp demo-agent`: full turns over HTTP + SSE and WebSocket
//! (permission asked and answered), a wrong token, an unreachable server, TLS with a
//! self-signed certificate (trusted through a CA file, refused without), a server that
//! goes away mid-turn (the call fails with the transport's reason), and messages over the
//! client's size limit (an SSE event is skipped and the connection goes on; a WebSocket
//! message ends it, saying so). `acp chat --connect` is
//! run too: a turn, a wrong token (a clear message, exit 1), and a reconnect after the server
//! restarted (the session continued with `session/load` / `session/resume` of the demo
//! agent's `--state-dir`), and a hostile server flooding pings without reading (closed with
//! the reason, in bounded memory). Every wait is bounded.

mod flood_support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{typed, Role};
use acp_native::process::AgentCommand;
use acp_native::remote::client::{self as client, ClientOptions, RemoteError};
use acp_native::remote::server::{self as server, RemoteServer, RemoteServerConfig};
use acp_native::{ClientSideConnection, DriverConfig, Router};
use agent_client_protocol_schema::v1 as s;
use agent_client_protocol_schema::ProtocolVersion;
use tokio::net::TcpListener;

const TOKEN: &str = "remote-client-test-token-0123456789";
const BOUND: Duration = Duration::from_secs(60);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {BOUND:?}"))
}

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "acp-remote-client-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn demo_agent(state_dir: Option<&Path>) -> Arc<dyn server::AgentFactory> {
    let mut cmd = AgentCommand::new(env!("CARGO_BIN_EXE_acp")).arg("demo-agent");
    if let Some(dir) = state_dir {
        cmd = cmd.arg("--state-dir").arg(dir);
    }
    server::command_agent(cmd)
}

/// Our server on `addr` (port 0: a free one).
async fn serve_on(
    addr: &str,
    agent: Arc<dyn server::AgentFactory>,
    config: RemoteServerConfig,
) -> (RemoteServer, SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = RemoteServer::new(agent, config);
    let s = server.clone();
    let task = tokio::spawn(async move { s.serve(listener).await });
    (server, addr, task)
}

#[derive(Default)]
struct Seen {
    chunks: Vec<String>,
    permissions: usize,
    written: Vec<PathBuf>,
}

/// A client that allows every permission request and serves `fs/write_text_file`.
fn client_router(seen: Arc<Mutex<Seen>>) -> Router {
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen);
    Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            let s1 = s1.clone();
            async move {
                if let s::SessionUpdate::AgentMessageChunk(c) = &n.update {
                    if let s::ContentBlock::Text(t) = &c.content {
                        s1.lock().unwrap().chunks.push(t.text.clone());
                    }
                }
            }
        })
        .route::<typed::RequestPermission, _, _>(move |r: s::RequestPermissionRequest, _cx| {
            let s2 = s2.clone();
            async move {
                s2.lock().unwrap().permissions += 1;
                let allow = r
                    .options
                    .iter()
                    .find(|o| o.kind == s::PermissionOptionKind::AllowOnce)
                    .expect("an allow_once option");
                Ok(s::RequestPermissionResponse::new(
                    s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                        allow.option_id.clone(),
                    )),
                ))
            }
        })
        .route::<typed::WriteTextFile, _, _>(move |w: s::WriteTextFileRequest, _cx| {
            let s3 = s3.clone();
            async move {
                std::fs::write(&w.path, &w.content).map_err(acp_core::ErrorObject::internal)?;
                s3.lock().unwrap().written.push(w.path);
                Ok(s::WriteTextFileResponse::new())
            }
        })
}

fn init_request() -> s::InitializeRequest {
    s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new().write_text_file(true)),
    )
}

/// initialize, session/new, a turn whose file write is asked and allowed.
async fn full_turn(url: &str, options: &ClientOptions) {
    let dir = TempDir::new("turn");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (conn, link) = client::connect(
        url,
        options,
        client_router(seen.clone()),
        DriverConfig::new(Role::Client),
    )
    .await
    .unwrap_or_else(|e| panic!("{url}: {e}"));
    let conn = conn.with_timeout(BOUND);
    let init = conn.initialize(init_request()).await.expect("initialize");
    assert!(init.agent_capabilities.load_session);
    let session = conn
        .new_session(s::NewSessionRequest::new(dir.0.clone()))
        .await
        .expect("session/new");
    let done = conn
        .prompt(s::PromptRequest::new(
            session.session_id.clone(),
            vec!["hello over the network".into()],
        ))
        .await
        .expect("prompt");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    conn.handle().notifications_handled().await;
    {
        let seen = seen.lock().unwrap();
        assert!(!seen.chunks.is_empty(), "no chunks over {url}");
        assert_eq!(seen.permissions, 1, "{url}");
        assert_eq!(seen.written, [dir.0.join("acp-demo.txt")], "{url}");
    }
    // A second turn on the same connection, and a second session beside it.
    let other = conn
        .new_session(s::NewSessionRequest::new(dir.0.clone()))
        .await
        .expect("session/new");
    let done = conn
        .prompt(s::PromptRequest::new(
            other.session_id,
            vec!["/echo second".into()],
        ))
        .await
        .expect("prompt");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    conn.handle().notifications_handled().await;
    assert_eq!(
        seen.lock().unwrap().chunks.last().map(String::as_str),
        Some("second")
    );
    assert_eq!(link.failure(), None);
    conn.close("done");
    bounded("the transport ends", link.ended()).await;

    // A new connection (a new agent process, the session from its state directory) loads the
    // first session: over HTTP its stream is opened before `session/load` names it to the
    // agent (an unconfirmed stream), and the load's answer comes on it.
    let (conn, link) = client::connect(
        url,
        options,
        client_router(seen.clone()),
        DriverConfig::new(Role::Client),
    )
    .await
    .unwrap();
    let conn = conn.with_timeout(BOUND);
    conn.initialize(init_request()).await.expect("initialize");
    conn.load_session(s::LoadSessionRequest::new(
        session.session_id.clone(),
        dir.0.clone(),
    ))
    .await
    .expect("session/load");
    let done = conn
        .prompt(s::PromptRequest::new(
            session.session_id.clone(),
            vec!["/echo loaded".into()],
        ))
        .await
        .expect("prompt on the loaded session");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    conn.handle().notifications_handled().await;
    assert_eq!(
        seen.lock().unwrap().chunks.last().map(String::as_str),
        Some("loaded")
    );
    assert_eq!(link.failure(), None);
    conn.close("done");
    bounded("the transport ends", link.ended()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_turns_over_sse_and_websocket() {
    // Its sessions kept on disk, so another connection's agent process can load them.
    let state = TempDir::new("turn-state");
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        demo_agent(Some(&state.0)),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    let options = ClientOptions::default().token(TOKEN);
    bounded("SSE", full_turn(&format!("http://{addr}/acp"), &options)).await;
    bounded(
        "WebSocket",
        full_turn(&format!("ws://{addr}/acp"), &options),
    )
    .await;
    // Closing ended both connections on the server (DELETE; the socket's close).
    bounded("connections closed", async {
        while server.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    server.stop();
    let _ = bounded("stop", task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_and_no_server_are_clear_errors() {
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        demo_agent(None),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    bounded("errors", async {
        for token in [Some("a-wrong-token-0123456789"), None] {
            let options = ClientOptions {
                token: token.map(str::to_string),
                ..ClientOptions::default()
            };
            let e = client::open(&format!("ws://{addr}/acp"), &options)
                .await
                .expect_err("refused");
            assert_eq!(e.status(), Some(401), "{e}");
            assert!(
                e.to_string().contains("the token is missing or wrong"),
                "{e}"
            );
            let (conn, link) = client::connect(
                &format!("http://{addr}/acp"),
                &options,
                Router::new(),
                DriverConfig::new(Role::Client),
            )
            .await
            .expect("reachable");
            let e = conn.initialize(init_request()).await.expect_err("refused");
            assert!(e.is_closed(), "{e:?}");
            assert!(e.to_string().contains("HTTP 401"), "{e}");
            let reason = bounded("closed", conn.closed()).await;
            assert!(reason.contains("HTTP 401"), "{reason}");
            assert!(link.failure().unwrap().contains("initialize"));
        }
        // Nothing was started for them.
        assert_eq!(server.open_connections(), 0);
        let options = ClientOptions::default().token(TOKEN);
        server.stop();
        let _ = task.await;
        for scheme in ["http", "ws"] {
            let e = client::open(&format!("{scheme}://{addr}/acp"), &options)
                .await
                .expect_err("nothing listens");
            assert!(matches!(e, RemoteError::Refused { .. }), "{e:?}");
            assert!(e.to_string().contains("connection refused"), "{e}");
        }
        // A token a header cannot carry, a URL we do not speak.
        let bad = ClientOptions::default().token("bad\ntoken");
        let e = client::open("http://127.0.0.1:1/acp", &bad)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, RemoteError::Options(_)), "{e:?}");
        let e = client::open("tcp://127.0.0.1:1", &options)
            .await
            .err()
            .unwrap();
        assert!(matches!(e, RemoteError::Url(_)), "{e:?}");
    })
    .await;
}

/// An in-process agent that sends messages over a 4096-byte client limit: `session/new`
/// answers a session id of 8 KiB when its cwd ends in `big`; a prompt sends an 8 KiB
/// update, then a small one, then asks to write an 8 KiB file and says in a last update how
/// that went.
fn oversize_agent() -> Arc<dyn server::AgentFactory> {
    server::router_agent(DriverConfig::new(Role::Agent), |conn| {
        Router::new()
            .route::<typed::Initialize, _, _>(|p, _cx| async move {
                Ok(s::InitializeResponse::new(p.protocol_version))
            })
            .route::<typed::NewSession, _, _>(|p: s::NewSessionRequest, _cx| async move {
                if p.cwd.ends_with("big") {
                    Ok(s::NewSessionResponse::new("x".repeat(8192)))
                } else {
                    Ok(s::NewSessionResponse::new("small"))
                }
            })
            .route::<typed::Prompt, _, _>(move |p: s::PromptRequest, _cx| {
                let conn = conn.clone();
                async move {
                    let say = |text: String| {
                        s::SessionNotification::new(
                            p.session_id.clone(),
                            s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.into())),
                        )
                    };
                    let _ = conn.session_update(say("y".repeat(8192))).await;
                    let _ = conn.session_update(say("after the big one".into())).await;
                    let wrote = conn
                        .write_text_file(s::WriteTextFileRequest::new(
                            p.session_id.clone(),
                            std::env::temp_dir().join("acp-remote-client-never-written"),
                            "z".repeat(8192),
                        ))
                        .await;
                    let _ = conn
                        .session_update(say(match wrote {
                            Ok(_) => "the write went through".into(),
                            Err(e) => format!("the write failed: {e}"),
                        }))
                        .await;
                    Ok(s::PromptResponse::new(s::StopReason::EndTurn))
                }
            })
    })
}

/// Over HTTP + SSE, an event over the client's limit is skipped as an oversize line is on
/// stdio, and the connection goes on: the call it answered fails at once naming the limit
/// (the next call succeeds), an oversize notification is dropped (the next one arrives), and
/// an oversize request from the agent is answered with an error for its id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_event_over_the_limit_is_skipped_and_the_connection_goes_on() {
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        oversize_agent(),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    let options = ClientOptions {
        max_message_bytes: 4096,
        ..ClientOptions::default().token(TOKEN)
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (conn, link) = client::connect(
        &format!("http://{addr}/acp"),
        &options,
        client_router(seen.clone()),
        DriverConfig::new(Role::Client),
    )
    .await
    .unwrap();
    let conn = conn.with_timeout(BOUND);
    bounded("the calls", async {
        conn.initialize(init_request()).await.expect("initialize");
        let e = conn
            .new_session(s::NewSessionRequest::new(std::env::temp_dir().join("big")))
            .await
            .expect_err("its answer is over the limit");
        assert!(!e.is_closed(), "{e:?}");
        assert!(e.to_string().contains("4096-byte limit"), "{e}");
        let session = conn
            .new_session(s::NewSessionRequest::new(std::env::temp_dir()))
            .await
            .expect("the next call on the same connection");
        assert_eq!(session.session_id.to_string(), "small");
        let done = conn
            .prompt(s::PromptRequest::new(session.session_id, vec!["go".into()]))
            .await
            .expect("prompt");
        assert_eq!(done.stop_reason, s::StopReason::EndTurn);
        conn.handle().notifications_handled().await;
    })
    .await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.chunks.len(), 2, "{:?}", seen.chunks);
        assert_eq!(seen.chunks[0], "after the big one");
        assert!(
            seen.chunks[1].starts_with("the write failed")
                && seen.chunks[1].contains("message exceeds the maximum size of 4096 bytes"),
            "{}",
            seen.chunks[1]
        );
        assert!(seen.written.is_empty());
    }
    assert_eq!(link.failure(), None);
    conn.close("done");
    bounded("the transport ends", link.ended()).await;
    server.stop();
    let _ = task.await;
}

/// Over WebSocket, a message over the client's limit ends the transport, saying so: tungstenite
/// reads a message whole, and once one is over its limit every later read fails the same way,
/// so it cannot be skipped (FIXME: skipping needs a frame reader that drops the payload).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_message_over_the_limit_is_a_clear_failure() {
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        oversize_agent(),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    let options = ClientOptions {
        max_message_bytes: 4096,
        ..ClientOptions::default().token(TOKEN)
    };
    let (conn, link) = client::connect(
        &format!("ws://{addr}/acp"),
        &options,
        Router::new(),
        DriverConfig::new(Role::Client),
    )
    .await
    .unwrap();
    let conn = conn.with_timeout(BOUND);
    conn.initialize(init_request()).await.expect("initialize");
    let e = conn
        .new_session(s::NewSessionRequest::new(std::env::temp_dir().join("big")))
        .await
        .expect_err("over the limit");
    assert!(e.is_closed(), "{e:?}");
    let failure = link.failure().expect("a failure");
    assert!(
        failure.contains("4096-byte limit") && failure.contains("cannot be skipped"),
        "{failure}"
    );
    server.stop();
    let _ = task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_self_signed_certificate() {
    let dir = TempDir::new("tls");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_path, key_path) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let mut config = RemoteServerConfig::new(TOKEN);
    config.tls = Some(server::tls_config_from_pem(&cert_path, &key_path).unwrap());
    let state = dir.0.join("state");
    let (server, addr, task) = serve_on("127.0.0.1:0", demo_agent(Some(&state)), config).await;
    let port = addr.port();
    // Without the certificate: refused by TLS, saying why.
    let untrusted = ClientOptions::default().token(TOKEN);
    for scheme in ["https", "wss"] {
        let e = bounded(
            "untrusted",
            client::open(&format!("{scheme}://localhost:{port}/acp"), &untrusted),
        )
        .await
        .expect_err("untrusted");
        assert!(matches!(e, RemoteError::Tls { .. }), "{e:?}");
        assert!(e.to_string().contains("CA file"), "{e}");
    }
    // A CA file that is not one.
    let not_pem = dir.0.join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let e = client::open(
        &format!("https://localhost:{port}/acp"),
        &ClientOptions::default().token(TOKEN).ca_file(&not_pem),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(e, RemoteError::Options(_)), "{e:?}");
    // With it: full turns over HTTPS and WSS.
    let trusted = ClientOptions::default().token(TOKEN).ca_file(&cert_path);
    bounded(
        "https",
        full_turn(&format!("https://localhost:{port}/acp"), &trusted),
    )
    .await;
    bounded(
        "wss",
        full_turn(&format!("wss://localhost:{port}/acp"), &trusted),
    )
    .await;
    server.stop();
    let _ = task.await;
}

/// The server stops during a turn: the prompt fails with the transport's reason, and the
/// link keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_fails_the_pending_call_with_why() {
    for scheme in ["http", "ws"] {
        let dir = TempDir::new("gone");
        let (server, addr, task) = serve_on(
            "127.0.0.1:0",
            demo_agent(None),
            RemoteServerConfig::new(TOKEN),
        )
        .await;
        let (conn, link) = ClientSideConnection::connect_url(
            &format!("{scheme}://{addr}/acp"),
            &ClientOptions::default().token(TOKEN),
            Router::new(),
            DriverConfig::new(Role::Client),
        )
        .await
        .unwrap();
        let conn = conn.with_timeout(BOUND);
        conn.initialize(init_request()).await.unwrap();
        let session = conn
            .new_session(s::NewSessionRequest::new(dir.0.clone()))
            .await
            .unwrap();
        let stopper = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.stop();
        });
        // Turns one after the other until the server's stop cuts one off.
        let e = bounded("the call fails", async {
            loop {
                match conn
                    .prompt(s::PromptRequest::new(
                        session.session_id.clone(),
                        vec!["/echo again".into()],
                    ))
                    .await
                {
                    Ok(_) => continue,
                    Err(e) => break e,
                }
            }
        })
        .await;
        assert!(e.is_closed(), "{scheme}: {e:?}");
        let failure = link.failure().expect("a failure is recorded");
        let reason = bounded("closed", conn.closed()).await;
        assert_eq!(reason, failure, "{scheme}");
        assert!(e.to_string().contains(&failure), "{scheme}: {e}");
        // The stream's end, or a message's POST finding nothing listening any more.
        assert!(
            failure.contains("closed") || failure.contains("ended") || failure.contains("refused"),
            "{scheme}: {failure}"
        );
        let _ = stopper.await;
        let _ = task.await;
    }
}

/// This machine's address on its network (not loopback), if it has one: a listener there
/// stands for a remote server. (Connecting a UDP socket sends nothing.)
fn a_network_address() -> Option<std::net::IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("203.0.113.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_not_sent_in_clear_beyond_loopback_unless_allowed() {
    let with_token = ClientOptions::default().token(TOKEN);
    // Refused before anything is sent, saying what to do instead.
    let in_query = format!("ws://203.0.113.1:9/?token={TOKEN}");
    for (url, options) in [
        ("http://203.0.113.1:9/acp", &with_token),
        ("ws://203.0.113.1:9/acp", &with_token),
        ("http://devbox.invalid/acp", &with_token),
        ("ws://[2001:db8::1]:9/acp", &with_token),
        // A token in the URL is a token too.
        (in_query.as_str(), &ClientOptions::default()),
    ] {
        let Err(RemoteError::Options(e)) = client::open(url, options).await else {
            panic!("{url}: not refused")
        };
        assert!(
            e.contains("in clear") && e.contains("https://") && e.contains("wss://"),
            "{e}"
        );
        assert!(e.contains("--allow-insecure"), "{e}");
        assert!(!e.contains(TOKEN), "the refusal shows the token: {e}");
    }
    // Loopback, by name or address, is this machine.
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        demo_agent(None),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    let url = format!("ws://localhost:{}/acp", addr.port());
    let opened = bounded("a loopback WebSocket", client::open(&url, &with_token)).await;
    assert!(opened.is_ok(), "{url}");
    drop(opened);
    server.stop();
    let _ = task.await;
    // A listener on this machine's network address stands for a remote server: refused,
    // nothing reaches it; allowed, the handshake brings it the token (what was kept from it).
    let Some(ip) = a_network_address() else {
        eprintln!("no network address besides loopback: the listener part is skipped");
        return;
    };
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let url = format!("ws://{}/acp", listener.local_addr().unwrap());
    assert!(matches!(
        client::open(&url, &with_token).await,
        Err(RemoteError::Options(_))
    ));
    listener.set_nonblocking(true).unwrap();
    let e = listener.accept().unwrap_err();
    assert_eq!(
        e.kind(),
        std::io::ErrorKind::WouldBlock,
        "a connection came"
    );
    listener.set_nonblocking(false).unwrap();
    let allowed = with_token.clone().allow_insecure(true);
    let opening = tokio::spawn(async move { client::open(&url, &allowed).await.is_ok() });
    let head = bounded(
        "the handshake",
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let (mut socket, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).unwrap() == 1 {
                head.push(byte[0]);
            }
            String::from_utf8_lossy(&head).to_ascii_lowercase()
        }),
    )
    .await
    .unwrap();
    assert!(
        head.contains(&format!(
            "authorization: bearer {}",
            TOKEN.to_ascii_lowercase()
        )),
        "{head}"
    );
    assert!(!bounded("the failed handshake", opening).await.unwrap());
}

// ---------------------------------------------------------------------------------------------
// `acp chat --connect`

/// A running `acp chat`: its stdin, and its stdout / stderr as they come.
struct Chat {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    more: Arc<tokio::sync::Notify>,
}

impl Chat {
    fn start(args: &[&str], cwd: &Path) -> Chat {
        use tokio::io::AsyncReadExt;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_acp"))
            .arg("chat")
            .args(args)
            .current_dir(cwd)
            .env_remove("ACP_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (out, err) = (
            Arc::new(Mutex::new(String::new())),
            Arc::new(Mutex::new(String::new())),
        );
        let more = Arc::new(tokio::sync::Notify::new());
        fn pump(
            mut r: impl tokio::io::AsyncRead + Unpin + Send + 'static,
            into: Arc<Mutex<String>>,
            more: Arc<tokio::sync::Notify>,
        ) {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    into.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                    more.notify_waiters();
                }
            });
        }
        pump(child.stdout.take().unwrap(), out.clone(), more.clone());
        pump(child.stderr.take().unwrap(), err.clone(), more.clone());
        let stdin = child.stdin.take();
        Chat {
            child,
            stdin,
            out,
            err,
            more,
        }
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    /// Waits until stdout (`err`: stderr) contains `needle`.
    async fn wait_for(&self, needle: &str, err: bool) {
        let buf = if err { &self.err } else { &self.out };
        let found = tokio::time::timeout(BOUND, async {
            loop {
                let waiting = self.more.notified();
                if buf.lock().unwrap().contains(needle) {
                    return;
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), waiting).await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "`{needle}` not seen; stdout:\n{}\nstderr:\n{}",
            self.out.lock().unwrap(),
            self.err.lock().unwrap()
        );
    }

    /// Closes stdin and waits for the exit code.
    async fn finish(mut self) -> (i32, String, String) {
        drop(self.stdin.take());
        let status = bounded("acp chat exits", self.child.wait()).await.unwrap();
        // The pumps have read everything once the pipes close.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let out = self.out.lock().unwrap().clone();
        let err = self.err.lock().unwrap().clone();
        (status.code().unwrap_or(-1), out, err)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_runs_turns_and_says_why_it_cannot() {
    let dir = TempDir::new("chat");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_file = token_file.to_str().unwrap().to_string();
    let (server, addr, task) = serve_on(
        "127.0.0.1:0",
        demo_agent(None),
        RemoteServerConfig::new(TOKEN),
    )
    .await;
    for url in [format!("http://{addr}/acp"), format!("ws://{addr}/acp")] {
        // A turn with a permission (--yes) and the file written in --cwd.
        let chat = Chat::start(
            &[
                "--connect",
                &url,
                "--token-file",
                &token_file,
                "--yes",
                "-p",
                "hello",
            ],
            &dir.0,
        );
        let (code, out, err) = chat.finish().await;
        assert_eq!(code, 0, "{url}\nstdout:\n{out}\nstderr:\n{err}");
        assert!(out.contains("You said: \"hello\""), "{out}");
        assert!(err.contains("Allow this write (--yes)"), "{err}");
        assert!(dir.0.join("acp-demo.txt").is_file());
        std::fs::remove_file(dir.0.join("acp-demo.txt")).unwrap();
        // A wrong token: exit 1, the status and what to do.
        let chat = Chat::start(
            &[
                "--connect",
                &url,
                "--token",
                "a-wrong-token-0123456789",
                "-p",
                "x",
            ],
            &dir.0,
        );
        let (code, _, err) = chat.finish().await;
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("HTTP 401"), "{err}");
        assert!(err.contains("--token-file"), "{err}");
    }
    // No token at all (ACP_TOKEN unset): the same clear refusal.
    let chat = Chat::start(&["--connect", &format!("ws://{addr}"), "-p", "x"], &dir.0);
    let (code, _, err) = chat.finish().await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("the token is missing or wrong"), "{err}");
    server.stop();
    let _ = task.await;
    // Nothing listens any more.
    let chat = Chat::start(
        &[
            "--connect",
            &format!("http://{addr}/acp"),
            "--token-file",
            &token_file,
            "-p",
            "x",
        ],
        &dir.0,
    );
    let (code, _, err) = chat.finish().await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("connection refused"), "{err}");
    // --token without --connect is a usage error.
    let chat = Chat::start(&["--token", "x", "-p", "x"], &dir.0);
    let (code, _, err) = chat.finish().await;
    assert_eq!(code, 2, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_refuses_to_send_the_token_in_clear_beyond_loopback() {
    let dir = TempDir::new("chat-insecure");
    for url in ["http://203.0.113.1:9/acp", "ws://203.0.113.1:9/acp"] {
        let chat = Chat::start(&["--connect", url, "--token", TOKEN, "-p", "x"], &dir.0);
        let (code, _, err) = chat.finish().await;
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("in clear"), "{err}");
        assert!(
            err.contains("--allow-insecure") && err.contains("https://") && err.contains("wss://"),
            "{err}"
        );
        // With --allow-insecure it tries (whatever it finds there: nothing, or a machine on the
        // way that answers).
        let chat = Chat::start(
            &[
                "--connect",
                url,
                "--token",
                TOKEN,
                "--allow-insecure",
                "--timeout",
                "3",
                "-p",
                "x",
            ],
            &dir.0,
        );
        let (code, _, err) = chat.finish().await;
        assert_eq!(code, 1, "{err}");
        assert!(!err.contains("in clear"), "{err}");
        assert!(err.contains("203.0.113.1"), "{err}");
    }
}

/// The server restarts between two prompts: the chat reconnects (a new connection and agent
/// process) and continues the session (the demo agent's `--state-dir` keeps it: resumed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_reconnects_and_continues_the_session() {
    for scheme in ["http", "ws"] {
        let dir = TempDir::new("reconnect");
        let state = dir.0.join("state");
        std::fs::create_dir_all(&state).unwrap();
        let (server, addr, task) = serve_on(
            "127.0.0.1:0",
            demo_agent(Some(&state)),
            RemoteServerConfig::new(TOKEN),
        )
        .await;
        let url = format!("{scheme}://{addr}/acp");
        let mut chat = Chat::start(&["--connect", &url, "--token", TOKEN, "--yes"], &dir.0);
        // The agent's commands arrive right behind the session's answer.
        chat.wait_for("[commands: /echo", true).await;
        chat.send("/echo first").await;
        chat.wait_for("first", false).await;
        // The server goes away (its agents stopped) and comes back on the same address.
        server.stop();
        let _ = bounded("stop", task).await;
        chat.wait_for("was lost", true).await;
        let (server, _, task) = serve_on(
            &addr.to_string(),
            demo_agent(Some(&state)),
            RemoteServerConfig::new(TOKEN),
        )
        .await;
        chat.wait_for("reconnected to", true).await;
        chat.send("/echo second").await;
        chat.wait_for("second", false).await;
        let (code, out, err) = chat.finish().await;
        assert_eq!(code, 0, "{scheme}\nstdout:\n{out}\nstderr:\n{err}");
        assert!(
            err.contains("resumed: it remembers the conversation"),
            "{err}"
        );
        server.stop();
        let _ = task.await;
    }
}

/// The same with an agent that can only load (`--no-resume`): the session is loaded again and
/// the agent's replay of the conversation on screen is not shown a second time; one line says
/// the session was reloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_reloads_the_session_without_showing_the_replay_again() {
    for scheme in ["http", "ws"] {
        let dir = TempDir::new("reconnect-load");
        let state = dir.0.join("state");
        std::fs::create_dir_all(&state).unwrap();
        let agent = || {
            let cmd = AgentCommand::new(env!("CARGO_BIN_EXE_acp"))
                .args(["demo-agent", "--no-resume", "--state-dir"])
                .arg(&state);
            server::command_agent(cmd)
        };
        let (server, addr, task) =
            serve_on("127.0.0.1:0", agent(), RemoteServerConfig::new(TOKEN)).await;
        let url = format!("{scheme}://{addr}/acp");
        let mut chat = Chat::start(&["--connect", &url, "--token", TOKEN, "--yes"], &dir.0);
        chat.wait_for("[commands: /echo", true).await;
        chat.send("/echo earlier words").await;
        chat.wait_for("earlier words", false).await;
        server.stop();
        let _ = bounded("stop", task).await;
        chat.wait_for("was lost", true).await;
        let (server, _, task) =
            serve_on(&addr.to_string(), agent(), RemoteServerConfig::new(TOKEN)).await;
        chat.wait_for("reconnected to", true).await;
        chat.send("/echo later words").await;
        chat.wait_for("later words", false).await;
        let (code, out, err) = chat.finish().await;
        assert_eq!(code, 0, "{scheme}\nstdout:\n{out}\nstderr:\n{err}");
        assert!(
            err.contains("reloaded: 2 replayed update(s) not shown again"),
            "{scheme}: {err}"
        );
        assert_eq!(out.matches("earlier words").count(), 1, "{scheme}: {out}");
        server.stop();
        let _ = task.await;
    }
}

/// A remote agent that can neither resume nor load: after the reconnect the chat ends with a
/// clear error instead of silently starting a new conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_without_resume_or_load_says_the_session_is_lost() {
    let dir = TempDir::new("noload");
    let agent = server::router_agent(DriverConfig::new(Role::Agent), |_conn| {
        Router::new()
            .route::<typed::Initialize, _, _>(|p, _cx| async move {
                Ok(s::InitializeResponse::new(p.protocol_version))
            })
            .route::<typed::NewSession, _, _>(|_p, _cx| async move {
                Ok(s::NewSessionResponse::new("only-here"))
            })
            .route::<typed::Prompt, _, _>(|_p, _cx| async move {
                Ok(s::PromptResponse::new(s::StopReason::EndTurn))
            })
    });
    let (server, addr, task) =
        serve_on("127.0.0.1:0", agent.clone(), RemoteServerConfig::new(TOKEN)).await;
    let url = format!("http://{addr}/acp");
    let chat = Chat::start(&["--connect", &url, "--token", TOKEN], &dir.0);
    chat.wait_for("session only-here", true).await;
    server.stop();
    let _ = task.await;
    chat.wait_for("was lost", true).await;
    let (server, _, task) =
        serve_on(&addr.to_string(), agent, RemoteServerConfig::new(TOKEN)).await;
    let (code, _, err) = chat.finish().await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot be continued"), "{err}");
    server.stop();
    let _ = task.await;
}

/// At most this much of pings is sent by the flooding server (old code: a pong queued per
/// ping, about as many bytes of memory in the client).
const FLOOD_LIMIT: u64 = 256 << 20;
/// What a flood may add to the client's peak memory: its write side's bound (one message of
/// its own, 128 KiB of tungstenite's write buffer, 1024 owed pongs of at most 131 bytes: under
/// 1 MiB here) plus allocator slack.
const FLOOD_GROWTH_KIB: u64 = 16 << 10;

/// Issue 19, finding 1 (docs/security.md): a server that sends ping frames as fast as it can
/// and never reads. Before, `acp chat --connect ws://…` queued a pong per ping without limit
/// (over 1 GiB in 6 s; here, the flood ran out of its 256 MiB still connected, the client's
/// peak grown by as much). Now the client owes at most 1024 pongs, then closes the connection
/// and says why; its peak memory grows by less than 16 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_chat_connect_closes_a_server_that_floods_pings_without_reading() {
    use flood_support::{flood, ping_frames, Flood, Watch};
    let dir = TempDir::new("ping-flood");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (connected_tx, connected) = tokio::sync::oneshot::channel();
    let (go, go_rx) = tokio::sync::oneshot::channel::<()>();
    // The hostile server: any handshake is accepted, then pings, never a read.
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        connected_tx.send(()).unwrap();
        go_rx.await.unwrap();
        flood(ws.get_mut(), &ping_frames(false), FLOOD_LIMIT).await
    });
    let chat = Chat::start(
        &[
            "--connect",
            &format!("ws://{addr}/acp"),
            "--token",
            TOKEN,
            "-p",
            "hello",
        ],
        &dir.0,
    );
    let watch = Watch::start(chat.child.id().expect("acp chat runs"));
    bounded("the handshake", connected).await.unwrap();
    let before = watch.peak_kib();
    go.send(()).unwrap();
    // Only bounds a failure: the old code took 5-10 s to take the whole flood (debug build).
    let outcome = tokio::time::timeout(Duration::from_secs(300), server)
        .await
        .expect("the flood ended within 5 minutes")
        .unwrap();
    let peak = watch.peak_kib();
    let killed = watch.killed();
    let (code, out, err) = chat.finish().await;
    let growth = peak.saturating_sub(before);
    eprintln!(
        "ping flood against acp chat: {outcome:?}; peak {} MiB ({} MiB before the flood)",
        peak >> 10,
        before >> 10
    );
    assert!(
        !killed,
        "acp chat was killed by the watchdog (over 1.5 GiB) during the flood"
    );
    assert!(
        matches!(outcome, Flood::Closed(_)),
        "the client did not close a connection flooded with pings ({outcome:?}); its peak: \
         {} MiB, {} MiB more than before the flood\nstderr:\n{err}",
        peak >> 10,
        growth >> 10
    );
    assert!(
        growth <= FLOOD_GROWTH_KIB,
        "the flood cost acp chat {growth} KiB (peak {peak} KiB), over the {FLOOD_GROWTH_KIB} KiB \
         allowed"
    );
    // The user is told why.
    eprintln!("acp chat's stderr:\n{err}");
    assert_ne!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("the server sent pings faster than it reads our answers"),
        "stderr:\n{err}"
    );
}
