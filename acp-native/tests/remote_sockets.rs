//! `RemoteServer`'s HTTP/1.1 sockets as bytes: the first request of a socket is read by the
//! server itself, and a plain `GET` (an SSE stream, `/health`, a refusal) is answered without
//! hyper; everything else, and whatever a socket carries after that answer, is hyper's. These
//! tests pin down that hand-off: keep-alive after a first answer, a stream opened on a socket
//! that hyper already serves, a stream freed as soon as its client leaves, `Connection: close`,
//! a head that never completes, pipelined and oversized heads, and the server stopping. And
//! the WebSocket keep-alive: a silent client is pinged, one that answers nothing is closed, a
//! live idle one stays, and an agent that ends closes its socket with the reason. And
//! `ServerMode::WebSocketOnly` (`acp serve --ws`): a WebSocket on any path and a 426 for
//! anything else, a WebSocket holding its socket's place until it closes, a handshake that does
//! not come in time said. Every wait is bounded.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{typed, Role};
use acp_native::remote::server::{
    self as remote, AgentFactory, RemoteServer, RemoteServerConfig, ServerEvent, ServerMode,
};
use acp_native::{DriverConfig, Router};
use agent_client_protocol_schema::v1 as s;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const TOKEN: &str = "remote-sockets-token-0123456789";
const BOUND: Duration = Duration::from_secs(20);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {BOUND:?}"))
}

/// An in-process agent that answers `initialize` (and `method not found` to anything else).
fn agent() -> Arc<dyn AgentFactory> {
    remote::router_agent(DriverConfig::new(Role::Agent), |_conn| {
        Router::new().route::<typed::Initialize, _, _>(|p, _cx| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        })
    })
}

async fn start(config: RemoteServerConfig) -> (RemoteServer, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = RemoteServer::new(agent(), config);
    let s = server.clone();
    tokio::spawn(async move { s.serve(listener).await });
    (server, addr)
}

/// A raw HTTP/1.1 client socket with what was read and not yet consumed.
struct Raw {
    tcp: TcpStream,
    buf: Vec<u8>,
}

/// An answer's status, headers (names lower-cased) and, when it has a length, its body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Raw {
    async fn connect(addr: SocketAddr) -> Raw {
        Raw {
            tcp: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn write(&mut self, text: &str) {
        self.tcp.write_all(text.as_bytes()).await.unwrap();
    }

    /// Reads more; false at the end of the stream.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        let n = bounded("a read", self.tcp.read(&mut chunk))
            .await
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// Reads an answer's head (and its body when it has a `content-length`).
    async fn answer(&mut self) -> Answer {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            assert!(
                self.fill().await,
                "the socket closed before an answer's head"
            );
        };
        let head = String::from_utf8(self.buf.drain(..end + 4).collect()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap();
        assert!(status.starts_with("HTTP/1.1 "), "{status}");
        let status = status[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.trim().to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        let mut a = Answer {
            status,
            headers,
            body: String::new(),
        };
        if let Some(n) = a
            .header("content-length")
            .map(|v| v.parse::<usize>().unwrap())
        {
            while self.buf.len() < n {
                assert!(self.fill().await, "the socket closed inside a body");
            }
            a.body = String::from_utf8(self.buf.drain(..n).collect()).unwrap();
        }
        a
    }

    /// Reads a chunked body until its text contains `needle`.
    async fn chunked_until(&mut self, needle: &str) -> String {
        let mut text = String::new();
        loop {
            // One chunk: size line, data, CRLF.
            let line_end = loop {
                if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                assert!(self.fill().await, "the stream closed; read so far: {text}");
            };
            let size_line = String::from_utf8(self.buf.drain(..line_end + 2).collect()).unwrap();
            let size = usize::from_str_radix(size_line.trim(), 16).unwrap();
            while self.buf.len() < size + 2 {
                assert!(self.fill().await, "the stream closed inside a chunk");
            }
            let data: Vec<u8> = self.buf.drain(..size + 2).collect();
            text.push_str(std::str::from_utf8(&data[..size]).unwrap());
            if text.contains(needle) {
                return text;
            }
            assert!(size > 0, "the stream ended without {needle:?}: {text}");
        }
    }

    /// True once the server closed the socket (within the bound).
    async fn closed(&mut self) -> bool {
        loop {
            if !self.fill().await {
                return true;
            }
        }
    }
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: localhost\r\n{extra}\r\n")
}

fn post(body: &str, extra: &str) -> String {
    format!(
        "POST /acp HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
}

fn stream_get(conn: &str) -> String {
    get(
        "/acp",
        &format!(
            "authorization: Bearer {TOKEN}\r\naccept: text/event-stream\r\nacp-connection-id: {conn}\r\n"
        ),
    )
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        .to_string()
}

/// A request the agent answers with an error, on the connection's stream.
fn unknown_request(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "x/unknown", "params": {}}).to_string()
}

/// Opens an ACP connection on `raw`: its id.
async fn initialize(raw: &mut Raw) -> String {
    raw.write(&post(&initialize_body(), "")).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    a.header("acp-connection-id").unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_answered_first_without_hyper_goes_on_serving_requests() {
    let (_server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    let mut raw = Raw::connect(addr).await;
    raw.write(&get("/health", "")).await;
    let a = raw.answer().await;
    assert_eq!((a.status, a.body.as_str()), (200, "ok"), "{a:?}");
    assert!(a.header("date").is_some(), "{a:?}");
    // The same socket, now hyper's: a POST that opens a connection...
    let conn = initialize(&mut raw).await;
    // ...and then, still on it, the connection's stream.
    raw.write(&stream_get(&conn)).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    assert_eq!(a.header("transfer-encoding"), Some("chunked"));
    let mut other = Raw::connect(addr).await;
    other
        .write(&post(
            &unknown_request(7),
            &format!("acp-connection-id: {conn}\r\n"),
        ))
        .await;
    assert_eq!(other.answer().await.status, 202);
    let events = raw.chunked_until("\"id\":7").await;
    assert!(events.contains("data: "), "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_on_a_fresh_socket_carries_events_and_is_freed_when_its_client_leaves() {
    let (_server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    let conn = initialize(&mut Raw::connect(addr).await).await;
    let mut stream = Raw::connect(addr).await;
    stream.write(&stream_get(&conn)).await;
    let a = stream.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    assert_eq!(a.header("acp-connection-id"), Some(conn.as_str()));
    let mut poster = Raw::connect(addr).await;
    poster
        .write(&post(
            &unknown_request(1),
            &format!("acp-connection-id: {conn}\r\n"),
        ))
        .await;
    assert_eq!(poster.answer().await.status, 202);
    let text = stream.chunked_until("\"id\":1").await;
    assert!(text.contains("\"error\""), "{text}");

    // While it is open, a second reader of the same stream is refused...
    let mut second = Raw::connect(addr).await;
    second.write(&stream_get(&conn)).await;
    assert_eq!(second.answer().await.status, 409);
    // ...and once its client has gone, the stream can be opened again (the server noticed
    // the socket close without writing to it).
    drop(stream);
    let reopened = bounded("the stream freed", async {
        loop {
            let mut again = Raw::connect(addr).await;
            again.write(&stream_get(&conn)).await;
            let a = again.answer().await;
            if a.status == 200 {
                return again;
            }
            assert_eq!(a.status, 409, "{a:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(reopened);
}

#[tokio::test]
async fn connection_close_on_a_first_get_is_honoured() {
    let (_server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    let mut raw = Raw::connect(addr).await;
    raw.write(&get("/health", "connection: close\r\n")).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("connection"), Some("close"));
    assert!(raw.closed().await);
}

#[tokio::test]
async fn refusals_to_a_first_get_are_the_same_as_hyper_s() {
    let (_server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    // No token: 401 with the challenge, and the socket stays usable.
    let mut raw = Raw::connect(addr).await;
    raw.write(&get("/acp", "accept: text/event-stream\r\n"))
        .await;
    let a = raw.answer().await;
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    raw.write(&get("/health", "")).await;
    assert_eq!(raw.answer().await.status, 200);
    // An unknown connection: 404 with the reason.
    let mut raw = Raw::connect(addr).await;
    raw.write(&stream_get("no-such-connection")).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 404, "{a:?}");
    assert!(a.body.contains("unknown Acp-Connection-Id"), "{a:?}");
}

#[tokio::test]
async fn a_head_that_never_completes_is_closed_after_the_handshake_timeout() {
    let mut config = RemoteServerConfig::new(TOKEN);
    config.handshake_timeout = Duration::from_millis(300);
    let (_server, addr) = start(config).await;
    let mut raw = Raw::connect(addr).await;
    raw.write("GET /acp HTTP/1.1\r\nhost: localhost\r\n").await;
    assert!(raw.closed().await);
    assert!(
        raw.buf.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&raw.buf)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_sockets_cannot_keep_a_token_holder_out() {
    // The review's lockout: idle sockets held all of `max_sockets` (272 by default), so the
    // token holder got 503. The handshake timeout is long: nothing here waits for it.
    let mut config = RemoteServerConfig::new(TOKEN);
    config.max_sockets = 4;
    config.max_unauthenticated_per_peer = 8;
    config.handshake_timeout = Duration::from_secs(600);
    let (_server, addr) = start(config).await;
    // The oldest: a socket that was refused (401) and kept alive; its refusal gave it nothing.
    let mut refused = Raw::connect(addr).await;
    refused
        .write(&get("/acp", "accept: text/event-stream\r\n"))
        .await;
    assert_eq!(refused.answer().await.status, 401);
    // Then idle sockets, more than `max_sockets` and than this address's budget.
    let mut idle = Vec::new();
    for _ in 0..12 {
        idle.push(Raw::connect(addr).await);
    }
    // The token holder: a connection, and its stream on another socket.
    let mut client = Raw::connect(addr).await;
    let conn = initialize(&mut client).await;
    let mut stream = Raw::connect(addr).await;
    stream.write(&stream_get(&conn)).await;
    let a = stream.answer().await;
    assert_eq!(a.status, 200, "{a:?}");
    // Each socket over the budget closed the address's oldest unauthenticated one.
    assert!(refused.closed().await, "the refused socket was kept");
    for (n, raw) in idle[..4].iter_mut().enumerate() {
        assert!(raw.closed().await, "idle socket {n} was kept");
    }
    // Sockets that showed the token count against `max_sockets` only: the fifth is refused.
    let mut more = Vec::new();
    for _ in 0..2 {
        let mut raw = Raw::connect(addr).await;
        initialize(&mut raw).await;
        more.push(raw);
    }
    let mut fifth = Raw::connect(addr).await;
    fifth.write(&post(&initialize_body(), "")).await;
    let a = fifth.answer().await;
    assert_eq!(a.status, 503, "{a:?}");
    assert!(a.body.contains("max_sockets"), "{a:?}");
}

#[tokio::test]
async fn pipelined_and_large_first_heads_are_served_whole_by_hyper() {
    let (_server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    // Two requests in one write: the bytes after the first head go to hyper with it.
    let mut raw = Raw::connect(addr).await;
    raw.write(&format!("{}{}", get("/health", ""), get("/nowhere", "")))
        .await;
    assert_eq!(raw.answer().await.status, 200);
    assert_eq!(raw.answer().await.status, 404);
    // A head larger than what is read before hyper takes over (8 KiB).
    let mut raw = Raw::connect(addr).await;
    let big = format!("x-padding: {}\r\n", "p".repeat(12 << 10));
    raw.write(&get("/health", &big)).await;
    let a = raw.answer().await;
    assert_eq!((a.status, a.body.as_str()), (200, "ok"), "{a:?}");
    // A POST first: hyper's from the start.
    let mut raw = Raw::connect(addr).await;
    initialize(&mut raw).await;
    raw.write(&get("/health", "")).await;
    assert_eq!(raw.answer().await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_server_closes_open_streams() {
    let (server, addr) = start(RemoteServerConfig::new(TOKEN)).await;
    let conn = initialize(&mut Raw::connect(addr).await).await;
    let mut stream = Raw::connect(addr).await;
    stream.write(&stream_get(&conn)).await;
    assert_eq!(stream.answer().await.status, 200);
    server.stop();
    assert!(stream.closed().await);
}

/// A server whose connection ends are reported on a channel (connection id, reason).
async fn start_watched(
    agent: Arc<dyn AgentFactory>,
    mut config: RemoteServerConfig,
) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    config.on_event = Some(Arc::new(move |e| {
        if let remote::ServerEvent::Closed { reason, .. } = e {
            let _ = tx.send(reason);
        }
    }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = RemoteServer::new(agent, config);
    tokio::spawn(async move { server.serve(listener).await });
    (addr, rx)
}

async fn websocket(
    addr: SocketAddr,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut r = format!("ws://{addr}/acp").into_client_request().unwrap();
    r.headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    tokio_tungstenite::connect_async(r).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_client_that_answers_nothing_is_pinged_then_closed() {
    let mut config = RemoteServerConfig::new(TOKEN);
    config.ws_ping_interval = Duration::from_millis(200);
    let (addr, mut closed) = start_watched(agent(), config).await;
    // Connected, then never read: tungstenite answers a ping only while its socket is read.
    let mut ws = websocket(addr).await;
    let reason = bounded("the connection closed", closed.recv())
        .await
        .unwrap();
    assert!(reason.contains("did not answer pings"), "{reason}");
    // What the server had sent meanwhile: a ping, then the end.
    use futures::StreamExt;
    let first = bounded("a frame", ws.next()).await.unwrap().unwrap();
    assert!(first.is_ping(), "{first:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_websocket_whose_client_answers_pings_stays_open() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let mut config = RemoteServerConfig::new(TOKEN);
    config.ws_ping_interval = Duration::from_millis(200);
    let (addr, mut closed) = start_watched(agent(), config).await;
    let (mut tx, mut rx) = websocket(addr).await.split();
    // Reading answers pings; each frame is reported as it comes.
    let (got, mut frames) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = rx.next().await {
            let seen = match m {
                Message::Ping(_) => None,
                Message::Text(t) => Some(t.as_str().to_string()),
                _ => continue,
            };
            if got.send(seen).is_err() {
                break;
            }
        }
    });
    // Silence from the client (pongs only) for four ping intervals, twice the limit past which
    // a client that answers nothing is closed: counted as the pings arrive, however slowly.
    let mut pings = 0;
    while pings < 4 {
        match bounded("four pings", frames.recv()).await {
            Some(None) => pings += 1,
            Some(Some(text)) => panic!("unexpected text frame: {text}"),
            None => panic!("the WebSocket ended after {pings} pings"),
        }
    }
    // ...and the connection still serves: the answer comes on it (pings may come between).
    tx.send(Message::text(initialize_body())).await.unwrap();
    let answer = loop {
        match bounded("the answer", frames.recv()).await {
            Some(None) => {}
            Some(Some(text)) => break text,
            None => panic!("the WebSocket ended before the answer"),
        }
    };
    assert!(answer.contains("\"protocolVersion\":1"), "{answer}");
    assert!(closed.try_recv().is_err(), "a live client was closed");
    reader.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_ends_closes_its_websocket_with_the_reason() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    // An agent that reads one line and exits.
    let once = remote::in_process_agent(|(r, w)| {
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut line = String::new();
            let _ = tokio::io::BufReader::new(r).read_line(&mut line).await;
            drop(w);
        });
    });
    let (addr, mut closed) = start_watched(once, RemoteServerConfig::new(TOKEN)).await;
    let mut ws = websocket(addr).await;
    ws.send(Message::text(initialize_body())).await.unwrap();
    let reason = bounded("the connection closed", closed.recv())
        .await
        .unwrap();
    assert!(reason.contains("the agent closed its output"), "{reason}");
    loop {
        match bounded("the close", ws.next()).await {
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `ServerMode::WebSocketOnly` (`acp serve --ws`): a WebSocket on any path, nothing else.

/// A server in `mode` whose events all come on a channel.
async fn start_reporting(
    mut config: RemoteServerConfig,
    mode: ServerMode,
) -> (SocketAddr, mpsc::UnboundedReceiver<ServerEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    config.mode = mode;
    config.on_event = Some(Arc::new(move |e| {
        let _ = tx.send(e);
    }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = RemoteServer::new(agent(), config);
    tokio::spawn(async move { server.serve(listener).await });
    (addr, rx)
}

/// The next event `pick` takes (others are skipped), within the bound.
async fn event<T>(
    events: &mut mpsc::UnboundedReceiver<ServerEvent>,
    mut pick: impl FnMut(ServerEvent) -> Option<T>,
) -> T {
    bounded("the event", async {
        loop {
            if let Some(t) = pick(events.recv().await.expect("the server is gone")) {
                return t;
            }
        }
    })
    .await
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// A WebSocket to `url` with the token as a bearer header, `initialize`d.
async fn websocket_initialized(url: &str) -> Ws {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    let mut r = url.into_client_request().unwrap();
    r.headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut ws, _) = bounded("the handshake", tokio_tungstenite::connect_async(r))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    ws.send(Message::text(initialize_body())).await.unwrap();
    loop {
        match bounded("initialize's answer", ws.next()).await {
            Some(Ok(Message::Text(t))) => {
                assert!(t.as_str().contains("\"protocolVersion\":1"), "{t}");
                return ws;
            }
            Some(Ok(_)) => {}
            other => panic!("{url}: no answer to initialize: {other:?}"),
        }
    }
}

/// A raw WebSocket handshake for `path`, with `extra` header lines.
fn ws_handshake(path: &str, extra: &str) -> String {
    get(
        path,
        &format!(
            "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\n\
             sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_only_serves_a_websocket_on_any_path_and_answers_anything_else_426() {
    let (addr, mut events) =
        start_reporting(RemoteServerConfig::new(TOKEN), ServerMode::WebSocketOnly).await;
    // Any path is the endpoint (`acp serve --ws` clients use `/`, with or without a query).
    let mut ws = websocket_initialized(&format!("ws://{addr}/")).await;
    websocket_initialized(&format!("ws://{addr}/some/path?session=x")).await;
    let (peer, transport) = event(&mut events, |e| match e {
        ServerEvent::Opened {
            peer, transport, ..
        } => Some((peer, transport)),
        _ => None,
    })
    .await;
    assert_eq!(transport, "websocket");
    assert_eq!(peer.ip(), addr.ip());

    // Anything but a handshake: 426, its socket closed, said (a first GET is answered without
    // hyper, anything else by hyper: the same answer).
    for request in [
        get("/", &format!("authorization: Bearer {TOKEN}\r\n")),
        get("/health", ""),
        get("/acp", "accept: text/event-stream\r\n"),
        post(&initialize_body(), ""),
    ] {
        let mut raw = Raw::connect(addr).await;
        raw.write(&request).await;
        let a = raw.answer().await;
        assert_eq!(a.status, 426, "{request}: {a:?}");
        assert_eq!(a.header("upgrade"), Some("websocket"), "{a:?}");
        assert_eq!(a.header("connection"), Some("close"), "{a:?}");
        assert!(a.body.contains("WebSocket only"), "{a:?}");
        assert!(raw.closed().await, "{request}: the socket was kept");
        let status = event(&mut events, |e| match e {
            ServerEvent::Refused { status, .. } => Some(status),
            _ => None,
        })
        .await;
        assert_eq!(status, 426);
    }

    // A handshake without the token: 401 with the challenge, its socket closed.
    let mut raw = Raw::connect(addr).await;
    raw.write(&ws_handshake("/", "")).await;
    let a = raw.answer().await;
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    assert_eq!(a.header("connection"), Some("close"), "{a:?}");
    assert!(raw.closed().await);

    // The client leaves: the connection ends, said with its peer and why.
    ws.close(None).await.unwrap();
    let (closed_peer, reason) = event(&mut events, |e| match e {
        ServerEvent::Closed { peer, reason, .. } => Some((peer, reason)),
        _ => None,
    })
    .await;
    assert_eq!(closed_peer.ip(), addr.ip());
    assert!(
        reason.contains("the client closed the connection"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_holds_its_socket_s_place_until_it_closes() {
    // WebSocket-only: the sockets that showed the token are its connections
    // (`max_connections`); with HTTP + SSE, `max_sockets`.
    for (mode, max_connections, max_sockets, limit) in [
        (
            ServerMode::WebSocketOnly,
            1,
            64,
            "1 connections open (max_connections)",
        ),
        (
            ServerMode::HttpAndWebSocket,
            64,
            1,
            "1 sockets open (max_sockets)",
        ),
    ] {
        let mut config = RemoteServerConfig::new(TOKEN);
        config.max_connections = max_connections;
        config.max_sockets = max_sockets;
        let (addr, mut events) = start_reporting(config, mode).await;
        let url = format!("ws://{addr}/acp");
        let mut ws = websocket_initialized(&url).await;
        // A new socket is refused at once, whether it sends anything or not.
        let mut raw = Raw::connect(addr).await;
        let a = raw.answer().await;
        assert_eq!(a.status, 503, "{mode:?}: {a:?}");
        assert_eq!(a.header("retry-after"), Some("5"), "{a:?}");
        let reason = event(&mut events, |e| match e {
            ServerEvent::Refused {
                status: 503,
                reason,
                ..
            } => Some(reason),
            _ => None,
        })
        .await;
        assert_eq!(reason, limit, "{mode:?}");
        // Once the WebSocket has closed, its place is free.
        ws.close(None).await.unwrap();
        event(&mut events, |e| match e {
            ServerEvent::Closed { .. } => Some(()),
            _ => None,
        })
        .await;
        websocket_initialized(&url).await;
    }
}

#[tokio::test]
async fn websocket_only_says_when_a_handshake_does_not_come_in_time() {
    let mut config = RemoteServerConfig::new(TOKEN);
    config.handshake_timeout = Duration::from_millis(300);
    let (addr, mut events) = start_reporting(config, ServerMode::WebSocketOnly).await;
    // Half a handshake, never finished.
    let mut raw = Raw::connect(addr).await;
    raw.write("GET / HTTP/1.1\r\nhost: localhost\r\nupgrade: websocket\r\n")
        .await;
    assert!(raw.closed().await);
    assert!(
        raw.buf.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&raw.buf)
    );
    let (status, reason) = event(&mut events, |e| match e {
        ServerEvent::Refused { status, reason, .. } => Some((status, reason)),
        _ => None,
    })
    .await;
    assert_eq!(status, 0);
    assert_eq!(reason, "no WebSocket handshake within 300ms; closed");
}
