//! Remote agents at scale: many concurrent sessions over the official HTTP transport's wire
//! (`agent-client-protocol-http` 5: HTTP + SSE, and WebSocket, on `/acp`) to ONE server
//! process hosting an in-process agent, for two servers side by side in the same run:
//!
//! * **ours**: `acp_native::remote::server::RemoteServer` with an acp-native agent
//!   (`router_agent`: a `Router` of typed handlers per connection);
//! * **official**: `agent_client_protocol_http::AcpHttpServer` (axum, `TCP_NODELAY` set on every
//!   accepted socket) with an agent built on the official SDK (`Agent.v1()`), in the program
//!   `rust-sdk-peer` (tests/rust-sdk: `rust-sdk-peer remote-serve official`, the same protocol
//!   as below), named by `--sdk-peer PATH`.
//!
//! Both agents behave the same: `initialize` answered, `session/new` answered with a fresh
//! session id, `session/prompt` streams one `agent_message_chunk` `session/update` for its
//! session and ends the turn.
//!
//!   acp-bench remote-scale [--sessions N] [--sse-per-conn K] [--prompters P] [--turns T]
//!                          [--seq-turns S] [--seq-rounds R] [--only ws,sse,seq]
//!                          [--servers ours,official] [--sdk-peer PATH] [--smoke] [--md FILE]
//!   acp-bench remote-serve ours                the server process (prints `port N`, runs
//!                                              until its stdin closes)
//!
//! This process is the load generator; each server runs in its own child process, whose
//! resident memory is read from `/proc/PID/status` (VmRSS, VmHWM). Both processes raise their
//! open-file soft limit to the hard limit. A run measures, per transport and server:
//! the time to open every session (connect + handshake + `initialize` + `session/new`, and
//! over SSE the session's stream), the server's RSS growth per idle session, then every session
//! runs `T` turns with `P` prompters at once (p50/p99 of a turn's round trip: prompt sent to
//! the end of turn received, with its chunk checked); then sequential turns over one
//! connection on a fresh server. Every session must complete its turns, or the run fails.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::common::CHUNK_TEXT;

type R<T> = Result<T, String>;

/// The bearer token the load generator sends (ours requires it; the official server has no
/// authentication and ignores it).
const TOKEN: &str = "remote-scale-bench-token-0123456789abcdef";
const CWD: &str = "/home/user/projects/example-workspace";
/// Setups in flight at once (TCP connect + handshake + initialize + session/new).
const CONNECT_PARALLEL: usize = 64;
/// How long a session's setup or a turn may take before the run is declared failed.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Raises this process's open-file soft limit to its hard limit; returns the new soft limit.
pub fn raise_nofile() -> u64 {
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------------------------
// The server process.

/// Without the feature `native` there is no server of ours to run.
#[cfg(not(feature = "native"))]
pub fn serve(_args: &[String]) -> i32 {
    eprintln!("acp-bench remote-serve: built without the feature native");
    2
}

/// `acp-bench remote-serve ours`: binds 127.0.0.1:0 (backlog 4096), prints
/// `port N`, serves until its stdin closes, then exits at once.
#[cfg(feature = "native")]
pub fn serve(args: &[String]) -> i32 {
    let which = args.first().map(String::as_str).unwrap_or("");
    let nofile = raise_nofile();
    let rt = runtime();
    let res: R<()> = rt.block_on(async move {
        let socket = tokio::net::TcpSocket::new_v4().map_err(err("socket"))?;
        socket.set_reuseaddr(true).map_err(err("SO_REUSEADDR"))?;
        socket
            .bind("127.0.0.1:0".parse().unwrap())
            .map_err(err("bind"))?;
        let listener = socket.listen(4096).map_err(err("listen"))?;
        let port = listener.local_addr().map_err(err("local_addr"))?.port();
        match which {
            "ours" => {
                tokio::spawn(ours::serve(listener));
            }
            other => {
                return Err(format!(
                    "unknown server {other:?} (ours; the official one is rust-sdk-peer's)"
                ))
            }
        }
        println!("port {port} nofile {nofile}");
        std::io::Write::flush(&mut std::io::stdout()).map_err(err("stdout"))?;
        // Until the load generator closes our stdin (or dies).
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        })
        .await
        .map_err(err("stdin"))?;
        Ok(())
    });
    match res {
        Ok(()) => {
            // No graceful shutdown of thousands of connections: the measurement is over.
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("acp-bench remote-serve {which}: {e}");
            1
        }
    }
}

/// Session ids, unique in the server process (the official server's agent, in rust-sdk-peer,
/// uses the same scheme).
#[cfg(feature = "native")]
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

#[cfg(feature = "native")]
fn next_session_id() -> String {
    format!("sess_{}", NEXT_SESSION.fetch_add(1, Ordering::Relaxed))
}

#[cfg(feature = "native")]
mod ours {
    use acp_core::typed;
    use acp_core::typed::schema::v1 as s;
    use acp_core::Role;
    use acp_native::remote::server::{router_agent, RemoteServer, RemoteServerConfig};
    use acp_native::{DriverConfig, Router};

    use crate::common::CHUNK_TEXT;
    use crate::messages::{initialize_response, prompt_response};

    /// The acp-native agent: a `Router` per connection.
    fn agent() -> Router {
        Router::new()
            .route::<typed::Initialize, _, _>(|_p: s::InitializeRequest, _cx| async move {
                Ok(initialize_response())
            })
            .route::<typed::NewSession, _, _>(|_p: s::NewSessionRequest, _cx| async move {
                Ok(s::NewSessionResponse::new(super::next_session_id()))
            })
            .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
                let chunk = s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(
                    s::ContentBlock::Text(s::TextContent::new(CHUNK_TEXT)),
                ));
                cx.client()
                    .session_update(s::SessionNotification::new(p.session_id, chunk))
                    .await
                    .map_err(|e| e.to_error_object())?;
                Ok(prompt_response())
            })
    }

    pub async fn serve(listener: tokio::net::TcpListener) {
        let mut config = RemoteServerConfig::new(super::TOKEN);
        // The benchmark's load, not the defaults' (64 connections): the process's open-file
        // limit is what bounds it.
        config.max_connections = 100_000;
        config.max_sockets = 100_000;
        // Every socket comes from 127.0.0.1, CONNECT_PARALLEL at a time: none is closed to
        // make room for another before it showed the token.
        config.max_unauthenticated = 100_000;
        config.max_unauthenticated_per_peer = 100_000;
        let factory = router_agent(DriverConfig::new(Role::Agent), |_c| agent());
        RemoteServer::new(factory, config).serve(listener).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The load generator's clients.

fn initialize_json() -> String {
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#.to_string()
}

fn new_session_json(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"{CWD}","mcpServers":[]}}}}"#
    )
}

fn prompt_json(id: u64, session: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"go"}}]}}}}"#
    )
}

/// The response to request `id` in `msg`: `Some(Ok(result))`, `Some(Err(..))` for an error
/// answer, `None` when `msg` is something else.
fn response_to(msg: &Value, id: u64) -> Option<R<&Value>> {
    if msg.get("method").is_some() || msg.get("id").and_then(Value::as_u64) != Some(id) {
        return None;
    }
    Some(match (msg.get("result"), msg.get("error")) {
        (Some(r), None) => Ok(r),
        _ => Err(format!("error answer to request {id}: {msg}")),
    })
}

/// What a turn receives, checked: exactly one chunk for `session`, then `end_turn`.
#[derive(Default)]
struct TurnCheck {
    chunks: usize,
}

impl TurnCheck {
    /// Feeds one message; `Ok(true)` once the turn's answer arrived.
    fn feed(&mut self, msg: &Value, id: u64, session: &str) -> R<bool> {
        if msg.get("method").and_then(Value::as_str) == Some("session/update") {
            let p = &msg["params"];
            let ok = p["sessionId"] == session
                && p["update"]["sessionUpdate"] == "agent_message_chunk"
                && p["update"]["content"]["text"] == CHUNK_TEXT;
            if !ok {
                return Err(format!("unexpected session/update for {session}: {msg}"));
            }
            self.chunks += 1;
            return Ok(false);
        }
        match response_to(msg, id) {
            None => Ok(false),
            Some(Err(e)) => Err(e),
            Some(Ok(result)) => {
                if result["stopReason"] != "end_turn" {
                    return Err(format!("turn did not end with end_turn: {msg}"));
                }
                if self.chunks != 1 {
                    return Err(format!("{} chunks in a turn (expected 1)", self.chunks));
                }
                Ok(true)
            }
        }
    }
}

async fn tcp(port: u16) -> R<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(err("connect"))?;
    s.set_nodelay(true).map_err(err("TCP_NODELAY"))?;
    Ok(s)
}

// --- WebSocket: one session per socket.

struct WsSession {
    ws: WebSocketStream<TcpStream>,
    session: String,
    next_id: u64,
}

impl WsSession {
    async fn open(port: u16) -> R<WsSession> {
        let stream = tcp(port).await?;
        let mut req = format!("ws://127.0.0.1:{port}/acp")
            .into_client_request()
            .map_err(err("request"))?;
        req.headers_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let (ws, _resp) = tokio_tungstenite::client_async_with_config(req, stream, Some(config))
            .await
            .map_err(err("WebSocket handshake"))?;
        let mut s = WsSession {
            ws,
            session: String::new(),
            next_id: 1,
        };
        s.request(initialize_json(), 0).await?;
        let id = s.take_id();
        let r = s.request(new_session_json(id), id).await?;
        s.session = r["sessionId"]
            .as_str()
            .ok_or_else(|| format!("session/new answered without a sessionId: {r}"))?
            .to_string();
        Ok(s)
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    async fn recv(&mut self) -> R<Value> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    return serde_json::from_str(t.as_str()).map_err(err("JSON from the server"))
                }
                Some(Ok(Message::Close(c))) => return Err(format!("server closed: {c:?}")),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(format!("WebSocket: {e}")),
                None => return Err("WebSocket ended".into()),
            }
        }
    }

    async fn request(&mut self, json: String, id: u64) -> R<Value> {
        self.ws
            .send(Message::text(json))
            .await
            .map_err(err("send"))?;
        loop {
            let msg = self.recv().await?;
            if let Some(r) = response_to(&msg, id) {
                return r.cloned();
            }
        }
    }

    async fn turn(&mut self) -> R<Duration> {
        let id = self.take_id();
        let t0 = Instant::now();
        self.ws
            .send(Message::text(prompt_json(id, &self.session)))
            .await
            .map_err(err("send"))?;
        let mut check = TurnCheck::default();
        loop {
            let msg = self.recv().await?;
            if check.feed(&msg, id, &self.session)? {
                return Ok(t0.elapsed());
            }
        }
    }
}

// --- HTTP + SSE: one ACP connection (a POST socket and the connection's SSE stream) carries
// several sessions, each with its own SSE stream (one socket each).

type Sender = SendRequest<Full<Bytes>>;

async fn http_socket(port: u16) -> R<Sender> {
    let io = hyper_util::rt::TokioIo::new(tcp(port).await?);
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(err("HTTP handshake"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn request(method: &str, headers: &[(&str, &str)], body: String) -> hyper::Request<Full<Bytes>> {
    let mut b = hyper::Request::builder()
        .method(method)
        .uri("/acp")
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {TOKEN}"));
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

/// An open SSE stream: the socket's sender (kept so the socket lives) and the body.
struct Sse {
    _sender: Sender,
    body: Incoming,
    buf: Vec<u8>,
    events: VecDeque<String>,
}

impl Sse {
    async fn open(port: u16, connection: &str, session: Option<&str>) -> R<Sse> {
        let mut sender = http_socket(port).await?;
        let mut headers = vec![
            ("accept", "text/event-stream"),
            ("acp-connection-id", connection),
        ];
        if let Some(s) = session {
            headers.push(("acp-session-id", s));
        }
        let resp = sender
            .send_request(request("GET", &headers, String::new()))
            .await
            .map_err(err("SSE GET"))?;
        if resp.status() != 200 {
            let status = resp.status();
            let body = resp.into_body().collect().await.map(|b| b.to_bytes());
            return Err(format!("SSE GET answered {status}: {body:?}"));
        }
        Ok(Sse {
            _sender: sender,
            body: resp.into_body(),
            buf: Vec::new(),
            events: VecDeque::new(),
        })
    }

    /// The next event's data (keep-alive comments skipped).
    async fn next(&mut self) -> R<Value> {
        loop {
            if let Some(data) = self.events.pop_front() {
                return serde_json::from_str(&data).map_err(err("JSON from the server"));
            }
            let frame = match self.body.frame().await {
                Some(Ok(f)) => f,
                Some(Err(e)) => return Err(format!("SSE stream: {e}")),
                None => return Err("SSE stream ended".into()),
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            self.buf.extend_from_slice(&data);
            while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&event);
                let mut data = String::new();
                for line in text.lines() {
                    if let Some(d) = line.strip_prefix("data:") {
                        if !data.is_empty() {
                            data.push('\n');
                        }
                        data.push_str(d.strip_prefix(' ').unwrap_or(d));
                    }
                }
                if !data.is_empty() {
                    self.events.push_back(data);
                }
            }
        }
    }
}

/// One HTTP ACP connection: its POST socket (shared by its sessions) and its id.
struct HttpConn {
    id: String,
    post: tokio::sync::Mutex<Sender>,
    next_id: AtomicU64,
}

impl HttpConn {
    /// Opens the connection (initialize) and `sessions` sessions with their streams.
    async fn open(port: u16, sessions: usize) -> R<Vec<SseSession>> {
        let mut post = http_socket(port).await?;
        let resp = post
            .send_request(request(
                "POST",
                &[("content-type", "application/json")],
                initialize_json(),
            ))
            .await
            .map_err(err("initialize POST"))?;
        let status = resp.status();
        let id = resp
            .headers()
            .get("acp-connection-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(err("initialize answer"))?
            .to_bytes();
        let Some(id) = id.filter(|_| status == 200) else {
            return Err(format!(
                "initialize answered {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        };
        let conn = Arc::new(HttpConn {
            id,
            post: tokio::sync::Mutex::new(post),
            next_id: AtomicU64::new(1),
        });
        let mut stream = Sse::open(port, &conn.id, None).await?;
        let mut out = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            let rid = conn.take_id();
            conn.post(new_session_json(rid), None).await?;
            let session = loop {
                let msg = stream.next().await?;
                if let Some(r) = response_to(&msg, rid) {
                    let r = r?;
                    break r["sessionId"]
                        .as_str()
                        .ok_or_else(|| format!("session/new answered without a sessionId: {r}"))?
                        .to_string();
                }
            };
            let sse = Sse::open(port, &conn.id, Some(&session)).await?;
            out.push(SseSession {
                conn: conn.clone(),
                session,
                stream: sse,
                conn_stream: None,
            });
        }
        // The connection's own stream stays open (as a client's would), unread while idle.
        out[0].conn_stream = Some(stream);
        Ok(out)
    }

    fn take_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn post(&self, body: String, session: Option<&str>) -> R<()> {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("acp-connection-id", self.id.as_str()),
        ];
        if let Some(s) = session {
            headers.push(("acp-session-id", s));
        }
        let mut sender = self.post.lock().await;
        sender.ready().await.map_err(err("POST socket"))?;
        let resp = sender
            .send_request(request("POST", &headers, body))
            .await
            .map_err(err("POST"))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(err("POST answer"))?;
        if status != 202 {
            return Err(format!(
                "POST answered {status}: {}",
                String::from_utf8_lossy(&body.to_bytes())
            ));
        }
        Ok(())
    }
}

struct SseSession {
    conn: Arc<HttpConn>,
    session: String,
    stream: Sse,
    /// The connection's own stream (held by its first session).
    conn_stream: Option<Sse>,
}

impl SseSession {
    async fn turn(&mut self) -> R<Duration> {
        let id = self.conn.take_id();
        let t0 = Instant::now();
        self.conn
            .post(prompt_json(id, &self.session), Some(&self.session))
            .await?;
        let mut check = TurnCheck::default();
        loop {
            let msg = self.stream.next().await?;
            if check.feed(&msg, id, &self.session)? {
                return Ok(t0.elapsed());
            }
        }
    }
}

enum Session {
    Ws(WsSession),
    Sse(SseSession),
}

impl Session {
    async fn turn(&mut self) -> R<Duration> {
        match self {
            Session::Ws(s) => s.turn().await,
            Session::Sse(s) => s.turn().await,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transport {
    Ws,
    Sse,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Ws => "WebSocket",
            Transport::Sse => "HTTP + SSE",
        }
    }
}

async fn step<T>(what: &str, f: impl std::future::Future<Output = R<T>>) -> R<T> {
    match tokio::time::timeout(STEP_TIMEOUT, f).await {
        Ok(r) => r.map_err(|e| format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {STEP_TIMEOUT:?}")),
    }
}

/// Opens `sessions` sessions (over SSE, `per_conn` per connection), `CONNECT_PARALLEL`
/// setups in flight.
async fn open_all(port: u16, t: Transport, sessions: usize, per_conn: usize) -> R<Vec<Session>> {
    let out: Vec<R<Vec<Session>>> = match t {
        Transport::Ws => {
            futures::stream::iter(0..sessions)
                .map(|_| async move {
                    step("WebSocket session setup", WsSession::open(port))
                        .await
                        .map(|s| vec![Session::Ws(s)])
                })
                .buffer_unordered(CONNECT_PARALLEL)
                .collect()
                .await
        }
        Transport::Sse => {
            let conns = sessions.div_ceil(per_conn);
            futures::stream::iter(0..conns)
                .map(|i| async move {
                    let n = per_conn.min(sessions - i * per_conn);
                    step("HTTP connection setup", HttpConn::open(port, n))
                        .await
                        .map(|v| v.into_iter().map(Session::Sse).collect())
                })
                .buffer_unordered(CONNECT_PARALLEL)
                .collect()
                .await
        }
    };
    let mut all = Vec::with_capacity(sessions);
    for r in out {
        all.extend(r?);
    }
    Ok(all)
}

/// Every session runs `turns` turns, `prompters` at once; the round trips.
async fn run_turns(
    sessions: Vec<Session>,
    turns: usize,
    prompters: usize,
) -> R<(Vec<Duration>, Vec<Session>)> {
    let n = sessions.len();
    let sessions: Arc<Vec<tokio::sync::Mutex<Session>>> =
        Arc::new(sessions.into_iter().map(tokio::sync::Mutex::new).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let total = n * turns;
    let mut tasks = Vec::new();
    for _ in 0..prompters.min(total).max(1) {
        let (sessions, next) = (sessions.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut rtts = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= total {
                    return Ok::<_, String>(rtts);
                }
                let mut s = sessions[k % n].lock().await;
                rtts.push(step("turn", s.turn()).await?);
            }
        }));
    }
    let mut rtts = Vec::with_capacity(total);
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(v)) => rtts.extend(v),
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(e) => first_err = first_err.or(Some(format!("prompter panicked: {e}"))),
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if rtts.len() != total {
        return Err(format!("{} turns completed of {total}", rtts.len()));
    }
    let sessions = Arc::try_unwrap(sessions)
        .map_err(|_| "sessions still shared".to_string())?
        .into_iter()
        .map(tokio::sync::Mutex::into_inner)
        .collect();
    Ok((rtts, sessions))
}

// ---------------------------------------------------------------------------------------------
// The driver.

/// A server child process; killed when dropped.
struct ServerProc {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    port: u16,
}

#[derive(Clone, Copy, Default, Debug)]
struct Mem {
    rss_kb: u64,
    hwm_kb: u64,
}

impl ServerProc {
    /// `program remote-serve which` (this program for ours, `rust-sdk-peer` for the official
    /// one).
    fn start(program: &Path, which: &'static str) -> R<ServerProc> {
        // ACP_BENCH_SERVER_PREFIX="heaptrack" (say) runs the server under a profiler; its
        // memory readings are then the wrapper's, not the server's.
        let prefix = std::env::var("ACP_BENCH_SERVER_PREFIX").unwrap_or_default();
        let mut words: Vec<String> = prefix.split_whitespace().map(str::to_string).collect();
        words.push(program.display().to_string());
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .args(["remote-serve", which])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(err("spawning the server"))?;
        let stdin = child.stdin.take();
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stdout = BufReader::new(stdout);
        // The first line starting with `port` (a profiler's wrapper may talk first).
        loop {
            line.clear();
            let n = stdout
                .read_line(&mut line)
                .map_err(err("reading the server's port"))?;
            if n == 0 || line.starts_with("port ") {
                break;
            }
        }
        let mut proc = ServerProc {
            child,
            stdin,
            port: 0,
        };
        proc.port = line
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("the {which} server did not start (said {line:?})"))?;
        Ok(proc)
    }

    fn mem(&self) -> R<Mem> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(err("reading the server's /proc status"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(Mem {
            rss_kb: field("VmRSS:"),
            hwm_kb: field("VmHWM:"),
        })
    }

    /// Closes its stdin (it exits at once), then kills it if it has not within 10 s.
    fn stop(mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Plan {
    sessions: usize,
    per_conn: usize,
    prompters: usize,
    turns: usize,
    seq_turns: usize,
    seq_rounds: usize,
    only: Vec<String>,
    servers: Vec<&'static str>,
    md: Option<String>,
    /// `rust-sdk-peer`, which runs the official server.
    sdk_peer: Option<std::path::PathBuf>,
}

impl Plan {
    /// The program that runs server `which`: this one for ours, `rust-sdk-peer` for the
    /// official one.
    fn program<'a>(&'a self, exe: &'a Path, which: &str) -> R<&'a Path> {
        match which {
            "official" => self.sdk_peer.as_deref().ok_or_else(|| {
                "the official server runs in rust-sdk-peer: pass --sdk-peer PATH \
                 (scripts/bench.sh builds it from tests/rust-sdk)"
                    .to_string()
            }),
            _ => Ok(exe),
        }
    }
}

fn parse(args: &[String]) -> R<Plan> {
    let mut p = Plan {
        sessions: 10_000,
        per_conn: 5,
        prompters: 100,
        turns: 2,
        seq_turns: 2000,
        seq_rounds: 3,
        only: vec!["ws".into(), "sse".into(), "seq".into()],
        servers: Vec::new(),
        md: None,
        sdk_peer: None,
    };
    let mut servers_given = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> R<usize> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name} needs a positive number"))
        };
        match a.as_str() {
            "--smoke" => {
                p.sessions = 200;
                p.prompters = 20;
                p.turns = 1;
                p.seq_turns = 50;
                p.seq_rounds = 1;
            }
            "--sessions" => p.sessions = num("--sessions")?,
            "--sse-per-conn" => p.per_conn = num("--sse-per-conn")?,
            "--prompters" => p.prompters = num("--prompters")?,
            "--turns" => p.turns = num("--turns")?,
            "--seq-turns" => p.seq_turns = num("--seq-turns")?,
            "--seq-rounds" => p.seq_rounds = num("--seq-rounds")?,
            "--only" => {
                let v = it.next().ok_or("--only needs ws,sse,seq")?;
                p.only = v.split(',').map(str::to_string).collect();
                if let Some(bad) = p
                    .only
                    .iter()
                    .find(|o| !["ws", "sse", "seq"].contains(&o.as_str()))
                {
                    return Err(format!("--only: unknown part {bad:?} (ws, sse, seq)"));
                }
            }
            "--servers" => {
                let v = it.next().ok_or("--servers needs ours,official")?;
                servers_given = true;
                let all = servers(true);
                p.servers = Vec::new();
                for w in v.split(',') {
                    match all.iter().find(|a| **a == w) {
                        Some(a) => p.servers.push(*a),
                        None => return Err(format!("--servers: {w:?} is not one of {all:?}")),
                    }
                }
            }
            "--md" => p.md = Some(it.next().ok_or("--md needs a file")?.clone()),
            "--sdk-peer" => {
                p.sdk_peer = Some(it.next().ok_or("--sdk-peer needs a path")?.into());
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !servers_given {
        p.servers = servers(p.sdk_peer.is_some());
    }
    Ok(p)
}

/// The servers that can run: ours with the feature `native`, the official one with
/// `rust-sdk-peer`.
fn servers(official: bool) -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "native") {
        v.push("ours");
    }
    if official {
        v.push("official");
    }
    v
}

fn label(which: &str) -> &'static str {
    match which {
        "ours" => "ours: acp-native `RemoteServer` + acp-native agent",
        _ => "official: `AcpHttpServer` (TCP_NODELAY) + official SDK agent",
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

struct ScaleResult {
    which: &'static str,
    sockets: usize,
    connections: usize,
    setup: Duration,
    base: Mem,
    idle: Mem,
    loaded: Mem,
    turns: usize,
    load_time: Duration,
    p50: Duration,
    p99: Duration,
}

impl ScaleResult {
    fn per_session_kb(&self, sessions: usize) -> f64 {
        self.idle.rss_kb.saturating_sub(self.base.rss_kb) as f64 / sessions as f64
    }
}

fn scale_one(
    exe: &Path,
    rt: &tokio::runtime::Runtime,
    which: &'static str,
    t: Transport,
    plan: &Plan,
) -> R<ScaleResult> {
    let server = ServerProc::start(plan.program(exe, which)?, which)?;
    let port = server.port;
    std::thread::sleep(Duration::from_millis(300));
    let base = server.mem()?;
    let (sessions, per_conn, prompters, turns) =
        (plan.sessions, plan.per_conn, plan.prompters, plan.turns);
    let t0 = Instant::now();
    let opened = rt.block_on(open_all(port, t, sessions, per_conn))?;
    let setup = t0.elapsed();
    // Let the server settle (tasks parked, buffers released), then read its memory.
    std::thread::sleep(Duration::from_secs(2));
    let idle = server.mem()?;
    let t1 = Instant::now();
    let (mut rtts, opened) = rt.block_on(run_turns(opened, turns, prompters))?;
    let load_time = t1.elapsed();
    let loaded = server.mem()?;
    server.stop();
    drop(opened);
    rtts.sort();
    let connections = match t {
        Transport::Ws => sessions,
        Transport::Sse => sessions.div_ceil(per_conn),
    };
    let sockets = match t {
        Transport::Ws => sessions,
        // A POST socket and the connection's stream, and a stream per session.
        Transport::Sse => 2 * connections + sessions,
    };
    Ok(ScaleResult {
        which,
        sockets,
        connections,
        setup,
        base,
        idle,
        loaded,
        turns: rtts.len(),
        load_time,
        p50: pct(&rtts, 0.5),
        p99: pct(&rtts, 0.99),
    })
}

struct SeqResult {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn seq_one(
    program: &Path,
    rt: &tokio::runtime::Runtime,
    which: &'static str,
    t: Transport,
    turns: usize,
) -> R<SeqResult> {
    let server = ServerProc::start(program, which)?;
    let port = server.port;
    let mut rtts = rt.block_on(async move {
        let mut s = open_all(port, t, 1, 1).await?.pop().ok_or("no session")?;
        for _ in 0..turns.min(200) {
            step("warm-up turn", s.turn()).await?;
        }
        let mut v = Vec::with_capacity(turns);
        for _ in 0..turns {
            v.push(step("turn", s.turn()).await?);
        }
        Ok::<_, String>(v)
    })?;
    server.stop();
    rtts.sort();
    let mean = rtts.iter().sum::<Duration>() / rtts.len().max(1) as u32;
    Ok(SeqResult {
        p50: pct(&rtts, 0.5),
        p99: pct(&rtts, 0.99),
        mean,
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// `acp-bench remote-scale ...`: the whole benchmark; the exit status is non-zero when a
/// server failed to carry every session through its turns.
pub fn main(args: &[String], exe: &Path) -> i32 {
    let plan = match parse(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("acp-bench remote-scale: {e}");
            return 2;
        }
    };
    let nofile = raise_nofile();
    let rt = runtime();
    let servers = plan.servers.clone();
    let mut md = String::new();
    let mut failed = Vec::new();
    let host = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_default();
    md.push_str(&format!(
        "Remote scale: {} sessions, {} prompters, {} turns per session; {} CPUs ({host}), open files {nofile}.\n\n",
        plan.sessions,
        plan.prompters,
        plan.turns,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    ));
    if !cfg!(feature = "native") {
        md.push_str("(built without feature `native`: only the official server is measured)\n\n");
    }
    for (k, t) in [
        (String::from("ws"), Transport::Ws),
        ("sse".into(), Transport::Sse),
    ] {
        if !plan.only.contains(&k) {
            continue;
        }
        let mut results = Vec::new();
        // Alternate which server goes first, per transport.
        let mut order = servers.clone();
        if t == Transport::Sse {
            order.reverse();
        }
        for which in order {
            eprintln!(
                "remote-scale: {} {which}: {} sessions",
                t.name(),
                plan.sessions
            );
            match scale_one(exe, &rt, which, t, &plan) {
                Ok(r) => {
                    eprintln!(
                        "remote-scale: {} {which}: setup {:?}, idle RSS +{} KiB, p50 {:?} p99 {:?}",
                        t.name(),
                        r.setup,
                        r.idle.rss_kb.saturating_sub(r.base.rss_kb),
                        r.p50,
                        r.p99
                    );
                    results.push(r)
                }
                Err(e) => {
                    eprintln!("remote-scale: {} {which}: FAILED: {e}", t.name());
                    failed.push(format!("{} {which}: {e}", t.name()));
                }
            }
        }
        results.sort_by_key(|r| r.which != "ours");
        md.push_str(&scale_table(t, &plan, &results));
    }
    if plan.only.iter().any(|o| o == "seq") {
        md.push_str(&format!(
            "#### Sequential turns, one session on one connection (fresh server; {} turns after {} warm-up turns, {} rounds alternating, medians of the rounds)\n\n",
            plan.seq_turns,
            plan.seq_turns.min(200),
            plan.seq_rounds
        ));
        md.push_str("| transport | server | p50 | p99 | mean | official p50 ÷ this |\n|---|---|---:|---:|---:|---:|\n");
        for t in [Transport::Ws, Transport::Sse] {
            let mut by: Vec<(&'static str, Vec<SeqResult>)> =
                servers.iter().map(|w| (*w, Vec::new())).collect();
            for round in 0..plan.seq_rounds {
                let n = by.len();
                for i in 0..n {
                    let idx = (i + round) % n;
                    let which = by[idx].0;
                    let run = plan
                        .program(exe, which)
                        .and_then(|program| seq_one(program, &rt, which, t, plan.seq_turns));
                    match run {
                        Ok(r) => by[idx].1.push(r),
                        Err(e) => failed.push(format!("sequential {} {which}: {e}", t.name())),
                    }
                }
            }
            let official_p50 = by
                .iter()
                .find(|(w, _)| *w == "official")
                .map(|(_, v)| median(v.iter().map(|r| r.p50).collect()));
            for (which, v) in &by {
                if v.is_empty() {
                    continue;
                }
                let p50 = median(v.iter().map(|r| r.p50).collect());
                let p99 = median(v.iter().map(|r| r.p99).collect());
                let mean = median(v.iter().map(|r| r.mean).collect());
                let ratio = official_p50
                    .map(|o| format!("{:.2}×", o.as_secs_f64() / p50.as_secs_f64()))
                    .unwrap_or_default();
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {ratio} |\n",
                    t.name(),
                    label(which),
                    ms(p50),
                    ms(p99),
                    ms(mean)
                ));
            }
        }
        md.push('\n');
    }
    for f in &failed {
        md.push_str(&format!("**FAILED** {f}\n\n"));
    }
    print!("{md}");
    if let Some(path) = &plan.md {
        if let Err(e) = std::fs::write(path, &md) {
            eprintln!("acp-bench remote-scale: cannot write {path}: {e}");
        }
    }
    if failed.is_empty() {
        0
    } else {
        1
    }
}

fn scale_table(t: Transport, plan: &Plan, results: &[ScaleResult]) -> String {
    let mut s = String::new();
    let conns = match t {
        Transport::Ws => format!("{} WebSocket connections", plan.sessions),
        Transport::Sse => format!(
            "{} sessions over {} HTTP connections ({} per connection; each connection a POST socket and its SSE stream, each session its SSE stream)",
            plan.sessions,
            plan.sessions.div_ceil(plan.per_conn),
            plan.per_conn
        ),
    };
    s.push_str(&format!("#### {}: {conns}\n\n", t.name()));
    s.push_str("| server | sockets | setup (all sessions) | connections/s | sessions/s | server RSS at start | idle, all open | **per idle session** | peak (VmHWM) after the turns | turns | turns/s | turn p50 | turn p99 |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in results {
        let secs = r.setup.as_secs_f64();
        s.push_str(&format!(
            "| {} | {} | {:.2} s | {:.0} | {:.0} | {:.1} MiB | {:.1} MiB | **{:.1} KiB** | {:.1} MiB | {} | {:.0} | {} | {} |\n",
            label(r.which),
            r.sockets,
            secs,
            r.connections as f64 / secs,
            plan.sessions as f64 / secs,
            r.base.rss_kb as f64 / 1024.0,
            r.idle.rss_kb as f64 / 1024.0,
            r.per_session_kb(plan.sessions),
            r.loaded.hwm_kb as f64 / 1024.0,
            r.turns,
            r.turns as f64 / r.load_time.as_secs_f64(),
            ms(r.p50),
            ms(r.p99),
        ));
    }
    let ours = results.iter().find(|r| r.which == "ours");
    let official = results.iter().find(|r| r.which == "official");
    if let (Some(o), Some(f)) = (ours, official) {
        s.push_str(&format!(
            "\nours ÷ official: memory per idle session {:.2}× (target ≤ 0.33×), setup rate {:.2}×, turn p50 {:.2}×, p99 {:.2}×, turns/s {:.2}×.\n",
            o.per_session_kb(plan.sessions) / f.per_session_kb(plan.sessions),
            f.setup.as_secs_f64() / o.setup.as_secs_f64(),
            o.p50.as_secs_f64() / f.p50.as_secs_f64(),
            o.p99.as_secs_f64() / f.p99.as_secs_f64(),
            (o.turns as f64 / o.load_time.as_secs_f64()) / (f.turns as f64 / f.load_time.as_secs_f64()),
        ));
    }
    s.push('\n');
    s
}
