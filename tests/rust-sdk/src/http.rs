//! The official HTTP transport's server (`agent-client-protocol-http`'s `AcpHttpServer`: HTTP +
//! SSE and WebSocket on `/acp`), for the interop tests (`http-server`) and for the remote scale
//! benchmark (`remote-serve official`).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_client_protocol as sdk;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{Agent, Client, ConnectTo};
use agent_client_protocol_http::AcpHttpServer;
use axum::serve::ListenerExt;

/// Runs `serve` until this process's stdin closes (the test or the load generator holds it).
async fn until_stdin_closes() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await;
}

/// `rust-sdk-peer http-server --token T`: the interop agent (`agent.rs`) behind
/// `AcpHttpServer`, nested (as its docs suggest for authentication) in an axum router whose
/// middleware requires `Authorization: Bearer T`. Prints `listening ADDR`, then for every HTTP
/// request `request METHOD[ (upgrade)] token=ok|wrong` (what the tests check our client
/// sends), and serves until stdin closes.
pub fn interop_server(args: &[String]) -> i32 {
    use axum::extract::Request;
    use axum::middleware::Next;
    use axum::response::IntoResponse;
    let token = match args {
        [flag, t] if flag == "--token" => t.clone(),
        _ => {
            eprintln!("usage: rust-sdk-peer http-server --token TOKEN");
            return 2;
        }
    };
    let auth = move |request: Request, next: Next| {
        let token = token.clone();
        async move {
            let ok = request
                .headers()
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                == Some(&format!("Bearer {token}"));
            let upgrade = request.headers().contains_key("upgrade");
            {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(
                    out,
                    "request {}{} token={}",
                    request.method(),
                    if upgrade { " (upgrade)" } else { "" },
                    if ok { "ok" } else { "wrong" }
                );
                let _ = out.flush();
            }
            if !ok {
                return (
                    axum::http::StatusCode::UNAUTHORIZED,
                    "a valid bearer token is required",
                )
                    .into_response();
            }
            next.run(request).await
        }
    };
    let res: Result<(), String> = crate::common::runtime().block_on(async move {
        let app = AcpHttpServer::new(crate::agent::agent)
            .into_router()
            .layer(axum::middleware::from_fn(auth));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening {addr}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("rust-sdk-peer http-server: {e}");
            }
        });
        until_stdin_closes().await;
        Ok(())
    });
    match res {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("rust-sdk-peer http-server: {e}");
            1
        }
    }
}

/// Session ids, unique in the server process (the scheme of acp-bench's server of ours).
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The remote scale benchmark's agent: `initialize` answered, `session/new` answered with a
/// fresh session id, `session/prompt` streams one `agent_message_chunk` and ends the turn.
fn scale_agent() -> impl ConnectTo<Client> {
    Agent
        .v1()
        .name("remote-scale-agent")
        .on_receive_request(
            async move |_init: s::InitializeRequest, responder, _cx| {
                responder.respond(crate::messages::initialize_response())
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: s::NewSessionRequest, responder, _cx| {
                let id = format!("sess_{}", NEXT_SESSION.fetch_add(1, Ordering::Relaxed));
                responder.respond(s::NewSessionResponse::new(id))
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: s::PromptRequest, responder, cx| {
                let chunk = s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(
                    s::ContentBlock::Text(s::TextContent::new(crate::common::CHUNK_TEXT)),
                ));
                cx.send_notification(s::SessionNotification::new(req.session_id, chunk))?;
                responder.respond(crate::messages::prompt_response())
            },
            sdk::on_receive_request!(),
        )
}

/// Raises this process's open-file soft limit to its hard limit; returns the new soft limit.
fn raise_nofile() -> u64 {
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        }
        lim.rlim_cur
    }
}

/// `rust-sdk-peer remote-serve official`: the official server of acp-bench's remote scale
/// benchmark, as `acp-bench remote-serve ours` runs ours: binds 127.0.0.1:0 (backlog 4096),
/// prints `port N nofile M`, serves until its stdin closes, then exits at once.
pub fn remote_serve() -> i32 {
    let nofile = raise_nofile();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let res: Result<(), String> = rt.block_on(async move {
        let err = |what: &'static str| move |e: std::io::Error| format!("{what}: {e}");
        let socket = tokio::net::TcpSocket::new_v4().map_err(err("socket"))?;
        socket.set_reuseaddr(true).map_err(err("SO_REUSEADDR"))?;
        socket
            .bind("127.0.0.1:0".parse().unwrap())
            .map_err(err("bind"))?;
        let listener = socket.listen(4096).map_err(err("listen"))?;
        let port = listener.local_addr().map_err(err("local_addr"))?.port();
        let app = AcpHttpServer::new(scale_agent).into_router();
        // Started as its docs show, plus TCP_NODELAY (without it a WebSocket turn waits for
        // Nagle against delayed ACKs, ~40-90 ms).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("official server: {e}");
            }
        });
        println!("port {port} nofile {nofile}");
        std::io::stdout().flush().map_err(err("stdout"))?;
        until_stdin_closes().await;
        Ok(())
    });
    match res {
        // No graceful shutdown of thousands of connections: the measurement is over.
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("rust-sdk-peer remote-serve official: {e}");
            1
        }
    }
}
