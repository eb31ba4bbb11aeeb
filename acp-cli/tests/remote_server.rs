//! `acp_native::remote::server::RemoteServer` over real sockets: authentication on every
//! method (and no agent started before it), the Origin rule, full turns with `acp demo-agent`
//! over HTTP + SSE and over WebSocket, the body limit, the connection limit, and TLS with a
//! certificate made here. Every wait is bounded.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_core::{typed, Role};
use acp_native::process::AgentCommand;
use acp_native::remote::server::{
    self as remote, AgentFactory, AgentLink, RemoteServer, RemoteServerConfig,
};
use acp_native::remote::wire::{SseDecoder, SseItem};
use acp_native::{DriverConfig, Router};
use agent_client_protocol_schema::v1 as s;
use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "remote-test-token-0123456789";
const BOUND: Duration = Duration::from_secs(30);

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {BOUND:?}"))
}

/// A minimal in-process agent that answers `initialize`, counting how many were started.
struct Counting {
    started: Arc<AtomicUsize>,
    inner: Arc<dyn AgentFactory>,
}

impl AgentFactory for Counting {
    fn start(&self) -> Result<AgentLink, String> {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.inner.start()
    }
}

fn counting_agent() -> (Arc<dyn AgentFactory>, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let inner = remote::router_agent(DriverConfig::new(Role::Agent), |_conn| {
        Router::new().route::<typed::Initialize, _, _>(|p, _cx| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        })
    });
    let f = Counting {
        started: started.clone(),
        inner,
    };
    (Arc::new(f), started)
}

fn demo_agent() -> Arc<dyn AgentFactory> {
    remote::command_agent(AgentCommand::new(env!("CARGO_BIN_EXE_acp")).arg("demo-agent"))
}

async fn start(
    agent: Arc<dyn AgentFactory>,
    config: RemoteServerConfig,
) -> (RemoteServer, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = RemoteServer::new(agent, config);
    let s = server.clone();
    tokio::spawn(async move { s.serve(listener).await });
    (server, addr)
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// Sends one request on a fresh socket (through `tls` when given).
async fn send(
    addr: SocketAddr,
    tls: Option<&tokio_rustls::TlsConnector>,
    req: Request<Full<Bytes>>,
) -> Response<Incoming> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let io: Box<dyn Io> = match tls {
        Some(c) => {
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            Box::new(c.connect(name, tcp).await.expect("TLS handshake"))
        }
        None => Box::new(tcp),
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn);
    bounded("a response", sender.send_request(req))
        .await
        .unwrap()
}

fn req(method: &str, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri("/acp")
        .header("host", "localhost");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

const AUTH: (&str, &str) = ("authorization", "Bearer remote-test-token-0123456789");
const JSON: (&str, &str) = ("content-type", "application/json");
const SSE: (&str, &str) = ("accept", "text/event-stream");

fn initialize_body(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": true}}
    }})
    .to_string()
}

async fn text_of(r: Response<Incoming>) -> String {
    let b = r.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&b).into_owned()
}

/// Opens an HTTP connection: (connection id, initialize answer).
async fn initialize(addr: SocketAddr, extra: &[(&str, &str)]) -> (String, Value) {
    let mut h = vec![AUTH, JSON];
    h.extend_from_slice(extra);
    let r = send(addr, None, req("POST", &h, &initialize_body(0))).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_string();
    let v: Value = serde_json::from_str(&text_of(r).await).unwrap();
    (id, v)
}

/// An SSE stream's messages, one at a time.
struct Events {
    body: Incoming,
    decoder: SseDecoder,
    ready: std::collections::VecDeque<Value>,
}

impl Events {
    async fn open(addr: SocketAddr, conn: &str, session: Option<&str>) -> Events {
        let mut h = vec![AUTH, SSE, ("acp-connection-id", conn)];
        if let Some(s) = session {
            h.push(("acp-session-id", s));
        }
        let r = send(addr, None, req("GET", &h, "")).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        Events {
            body: r.into_body(),
            decoder: SseDecoder::new(1 << 20),
            ready: Default::default(),
        }
    }

    async fn next(&mut self) -> Value {
        loop {
            if let Some(v) = self.ready.pop_front() {
                return v;
            }
            let frame = bounded("an SSE event", self.body.frame())
                .await
                .expect("the stream ended")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                let ready = &mut self.ready;
                self.decoder.feed(&data, &mut |e| {
                    if let SseItem::Data(d) = e {
                        ready.push_back(serde_json::from_str(&d).unwrap());
                    }
                });
            }
        }
    }
}

async fn post(addr: SocketAddr, conn: &str, session: Option<&str>, msg: Value) -> StatusCode {
    let mut h = vec![AUTH, JSON, ("acp-connection-id", conn)];
    if let Some(s) = session {
        h.push(("acp-session-id", s));
    }
    send(addr, None, req("POST", &h, &msg.to_string()))
        .await
        .status()
}

fn ws_request(
    addr: SocketAddr,
    headers: &[(&str, &str)],
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let mut r = format!("ws://{addr}/acp").into_client_request().unwrap();
    for (k, v) in headers {
        r.headers_mut().insert(
            hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    r
}

fn ws_status(e: tokio_tungstenite::tungstenite::Error) -> u16 {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(r) => r.status().as_u16(),
        other => panic!("not an HTTP refusal: {other}"),
    }
}

#[tokio::test]
async fn every_method_needs_the_token_and_nothing_starts_before_it() {
    let (agent, started) = counting_agent();
    let (_server, addr) = start(agent, RemoteServerConfig::new(TOKEN)).await;
    let wrong = ("authorization", "Bearer remote-test-token-012345678X");
    for auth in [
        None,
        Some(wrong),
        Some(("authorization", "Basic remote-test-token-0123456789")),
    ] {
        let mut h = vec![JSON, SSE, ("acp-connection-id", "x")];
        h.extend(auth);
        for method in ["POST", "GET", "DELETE"] {
            let body = if method == "POST" {
                initialize_body(0)
            } else {
                String::new()
            };
            let r = send(addr, None, req(method, &h, &body)).await;
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{method} {auth:?}");
            assert_eq!(r.headers()["www-authenticate"], "Bearer");
            assert!(text_of(r).await.contains("missing or wrong token"));
        }
        let ws = tokio_tungstenite::connect_async(ws_request(
            addr,
            &auth.into_iter().collect::<Vec<_>>(),
        ))
        .await;
        assert_eq!(ws_status(ws.unwrap_err()), 401, "{auth:?}");
    }
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "an agent started before authentication"
    );
    // The health route needs nothing; the token in the query or as a subprotocol works.
    let r = send(
        addr,
        None,
        Request::get("/health")
            .header("host", "x")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send(
        addr,
        None,
        Request::post(format!("/acp?token={TOKEN}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(initialize_body(0))))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let (ws, resp) = tokio_tungstenite::connect_async(ws_request(
        addr,
        &[("sec-websocket-protocol", &format!("acp.token.{TOKEN}"))],
    ))
    .await
    .unwrap();
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        format!("acp.token.{TOKEN}").as_str()
    );
    drop(ws);
    assert_eq!(started.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn cross_origin_pages_are_refused() {
    let (agent, started) = counting_agent();
    let (_server, addr) = start(agent, RemoteServerConfig::new(TOKEN)).await;
    let evil = ("origin", "https://evil.example");
    let r = send(
        addr,
        None,
        req("POST", &[AUTH, JSON, evil], &initialize_body(0)),
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(text_of(r)
        .await
        .contains("https://evil.example is not allowed"));
    let r = send(
        addr,
        None,
        req("GET", &[AUTH, SSE, evil, ("acp-connection-id", "x")], ""),
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = send(addr, None, req("OPTIONS", &[evil], "")).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let ws = tokio_tungstenite::connect_async(ws_request(addr, &[AUTH, evil])).await;
    assert_eq!(ws_status(ws.unwrap_err()), 403);
    assert_eq!(started.load(Ordering::SeqCst), 0);
    // A local page is allowed (with the token), and gets CORS headers.
    let local = ("origin", "http://localhost:5173");
    let r = send(
        addr,
        None,
        req("POST", &[AUTH, JSON, local], &initialize_body(0)),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
}

#[tokio::test]
async fn a_host_that_is_not_this_server_is_refused() {
    // DNS rebinding: a page whose DNS name now points at this server sends its own name as
    // the Host (and no Origin on a same-origin GET): with the token it was served.
    let (agent, started) = counting_agent();
    let (_server, addr) = start(agent, RemoteServerConfig::new(TOKEN)).await;
    let rebound = |method: &str, extra: &[(&str, &str)], body: &str| {
        let mut r = req(method, extra, body);
        r.headers_mut()
            .insert("host", "rebind.example:8765".parse().unwrap());
        r
    };
    let r = send(
        addr,
        None,
        rebound("POST", &[AUTH, JSON], &initialize_body(0)),
    )
    .await;
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    let text = text_of(r).await;
    assert!(text.contains("host rebind.example:8765"), "{text}");
    assert!(text.contains("--allow-host"), "{text}");
    for (method, extra) in [
        ("GET", vec![AUTH, SSE, ("acp-connection-id", "x")]),
        ("DELETE", vec![AUTH, ("acp-connection-id", "x")]),
        ("OPTIONS", vec![("origin", "http://localhost:3000")]),
    ] {
        let r = send(addr, None, rebound(method, &extra, "")).await;
        assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST, "{method}");
    }
    let mut ws = ws_request(addr, &[AUTH]);
    ws.headers_mut()
        .insert("host", "rebind.example:8765".parse().unwrap());
    let e = tokio_tungstenite::connect_async(ws).await.unwrap_err();
    assert_eq!(ws_status(e), 421);
    assert_eq!(started.load(Ordering::SeqCst), 0, "an agent started");
    // A request in absolute form is judged by its authority too.
    let mut absolute = req("POST", &[AUTH, JSON], &initialize_body(0));
    *absolute.uri_mut() = "http://rebind.example/acp".parse().unwrap();
    let r = send(addr, None, absolute).await;
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    // A server reached by a name is told its name.
    let mut config = RemoteServerConfig::new(TOKEN);
    config.allowed_hosts = vec!["rebind.example".into()];
    let (agent, started) = counting_agent();
    let (_server, addr) = start(agent, config).await;
    let r = send(
        addr,
        None,
        rebound("POST", &[AUTH, JSON], &initialize_body(0)),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(started.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_turn_over_sse_with_the_demo_agent() {
    let dir = std::env::temp_dir().join(format!("acp-remote-sse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (server, addr) = start(demo_agent(), RemoteServerConfig::new(TOKEN)).await;
    let (conn, init) = initialize(addr, &[]).await;
    assert_eq!(init["result"]["agentInfo"]["name"], "acp-demo-agent");
    let mut conn_events = Events::open(addr, &conn, None).await;
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": dir, "mcpServers": []}});
    assert_eq!(post(addr, &conn, None, new).await, StatusCode::ACCEPTED);
    let answer = conn_events.next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    let sid = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let mut events = Events::open(addr, &conn, Some(&sid)).await;
    // Session-scoped without a session: refused.
    let bare =
        json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": {"prompt": []}});
    assert_eq!(post(addr, &conn, None, bare).await, StatusCode::BAD_REQUEST);
    // The session header fills in params.sessionId.
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"prompt": [{"type": "text", "text": "hi remote"}]}});
    assert_eq!(
        post(addr, &conn, Some(&sid), prompt).await,
        StatusCode::ACCEPTED
    );
    let mut text = String::new();
    let mut asked = 0;
    let stop = loop {
        let m = events.next().await;
        match m["method"].as_str() {
            Some("session/update") => {
                assert_eq!(m["params"]["sessionId"], sid.as_str());
                if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                    text.push_str(
                        m["params"]["update"]["content"]["text"]
                            .as_str()
                            .unwrap_or(""),
                    );
                }
            }
            Some("session/request_permission") => {
                asked += 1;
                let answer = json!({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
                assert_eq!(post(addr, &conn, None, answer).await, StatusCode::ACCEPTED);
            }
            Some("fs/write_text_file") => {
                let answer = json!({"jsonrpc": "2.0", "id": m["id"], "result": {}});
                assert_eq!(post(addr, &conn, None, answer).await, StatusCode::ACCEPTED);
            }
            Some(other) => panic!("unexpected {other}: {m}"),
            None => break m,
        }
    };
    assert_eq!(stop["id"], 2, "{stop}");
    assert_eq!(stop["result"]["stopReason"], "end_turn", "{stop}");
    assert_eq!(asked, 1);
    assert!(text.contains("You said: \"hi remote\""), "{text}");
    // A second reader of the same stream is refused; DELETE ends the connection.
    let r = send(
        addr,
        None,
        req("GET", &[AUTH, SSE, ("acp-connection-id", &conn)], ""),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let r = send(
        addr,
        None,
        req("DELETE", &[AUTH, ("acp-connection-id", &conn)], ""),
    )
    .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let r = send(
        addr,
        None,
        req("DELETE", &[AUTH, ("acp-connection-id", &conn)], ""),
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    bounded("the agent stopping", async {
        while server.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_turn_over_websocket_with_the_demo_agent() {
    let dir = std::env::temp_dir().join(format!("acp-remote-ws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_server, addr) = start(demo_agent(), RemoteServerConfig::new(TOKEN)).await;
    let (mut ws, resp) = tokio_tungstenite::connect_async(ws_request(addr, &[AUTH]))
        .await
        .unwrap();
    assert!(resp.headers().contains_key("acp-connection-id"));
    let next = async move |ws: &mut tokio_tungstenite::WebSocketStream<_>| -> Value {
        loop {
            match bounded("a frame", ws.next()).await.unwrap().unwrap() {
                Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
                _ => continue,
            }
        }
    };
    ws.send(Message::text(initialize_body(0))).await.unwrap();
    assert_eq!(next(&mut ws).await["id"], 0);
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": dir, "mcpServers": []}});
    ws.send(Message::text(new.to_string())).await.unwrap();
    let sid = next(&mut ws).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let prompt = json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi ws"}]}});
    ws.send(Message::text(prompt.to_string())).await.unwrap();
    let mut asked = 0;
    let stop = loop {
        let m = next(&mut ws).await;
        match m["method"].as_str() {
            Some("session/update") => {}
            Some("session/request_permission") => {
                asked += 1;
                let a = json!({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
                ws.send(Message::text(a.to_string())).await.unwrap();
            }
            Some("fs/write_text_file") => {
                let a = json!({"jsonrpc": "2.0", "id": m["id"], "result": {}});
                ws.send(Message::text(a.to_string())).await.unwrap();
            }
            Some(other) => panic!("unexpected {other}"),
            None => break m,
        }
    };
    assert_eq!(stop["result"]["stopReason"], "end_turn", "{stop}");
    assert_eq!(asked, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The WebSocket reader starts with a small buffer (resident memory of every idle socket);
/// a message far larger than it still goes through whole, both ways.
#[tokio::test]
async fn a_websocket_message_larger_than_the_read_buffer_goes_through_whole() {
    // An agent that writes back every line it reads.
    let echo = remote::in_process_agent(|(mut r, mut w)| {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
    });
    let (_server, addr) = start(echo, RemoteServerConfig::new(TOKEN)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_request(addr, &[AUTH]))
        .await
        .unwrap();
    let pad = "x".repeat(1 << 20);
    let msg = json!({"jsonrpc": "2.0", "id": 7, "method": "_echo", "params": {"pad": pad}});
    ws.send(Message::text(msg.to_string())).await.unwrap();
    let back = loop {
        match bounded("the echo", ws.next()).await.unwrap().unwrap() {
            Message::Text(t) => break serde_json::from_str::<Value>(t.as_str()).unwrap(),
            _ => continue,
        }
    };
    assert_eq!(back, msg);
}

/// Over WebSocket, an agent's response longer than `max_agent_message_bytes` is dropped and
/// the client gets an error for its id instead; the messages around it go through.
#[tokio::test]
async fn an_oversize_agent_response_becomes_an_error_over_websocket() {
    let echo = remote::in_process_agent(|(mut r, mut w)| {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
    });
    let mut config = RemoteServerConfig::new(TOKEN);
    config.max_agent_message_bytes = 1024;
    let (_server, addr) = start(echo, config).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_request(addr, &[AUTH]))
        .await
        .unwrap();
    let big = json!({"jsonrpc": "2.0", "id": 9, "result": {"pad": "x".repeat(4096)}});
    let small = json!({"jsonrpc": "2.0", "method": "_after", "params": {}});
    ws.send(Message::text(big.to_string())).await.unwrap();
    ws.send(Message::text(small.to_string())).await.unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        if let Message::Text(t) = bounded("a frame", ws.next()).await.unwrap().unwrap() {
            got.push(serde_json::from_str::<Value>(t.as_str()).unwrap());
        }
    }
    assert_eq!(got[0]["id"], 9, "{}", got[0]);
    assert_eq!(got[0]["error"]["code"], -32603, "{}", got[0]);
    assert!(
        got[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024-byte limit"),
        "{}",
        got[0]
    );
    assert_eq!(got[1], small);
}

#[tokio::test]
async fn an_oversize_body_is_refused_with_the_limit() {
    let (agent, _) = counting_agent();
    let mut config = RemoteServerConfig::new(TOKEN);
    config.max_body_bytes = 1024;
    let (_server, addr) = start(agent, config).await;
    let big = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"pad": "x".repeat(2000)}}).to_string();
    let r = send(addr, None, req("POST", &[AUTH, JSON], &big)).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(text_of(r).await.contains("the limit is 1024 bytes"));
    // Without a Content-Length (chunked), the limit holds while reading.
    let body = http_body_util::StreamBody::new(futures::stream::iter((0..4).map(|_| {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![b' '; 600])))
    })));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let r = sender
        .send_request(
            Request::post("/acp")
                .header("authorization", AUTH.1)
                .header("content-type", "application/json")
                .body(body)
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn connections_beyond_the_limit_get_503() {
    let (agent, started) = counting_agent();
    let mut config = RemoteServerConfig::new(TOKEN);
    config.max_connections = 1;
    let (server, addr) = start(agent, config).await;
    let (first, _) = initialize(addr, &[]).await;
    let r = send(addr, None, req("POST", &[AUTH, JSON], &initialize_body(0))).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(text_of(r).await.contains("too many connections"));
    let ws = tokio_tungstenite::connect_async(ws_request(addr, &[AUTH])).await;
    assert_eq!(ws_status(ws.unwrap_err()), 503);
    assert_eq!(started.load(Ordering::SeqCst), 1);
    let r = send(
        addr,
        None,
        req("DELETE", &[AUTH, ("acp-connection-id", &first)], ""),
    )
    .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    bounded("the slot freed", async {
        while server.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    initialize(addr, &[]).await;
}

#[tokio::test]
async fn tls_with_a_self_signed_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let dir = std::env::temp_dir().join(format!("acp-remote-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path): (PathBuf, PathBuf) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let mut config = RemoteServerConfig::new(TOKEN);
    config.tls = Some(remote::tls_config_from_pem(&cert_path, &key_path).unwrap());
    // A key that does not exist is a clear error.
    let e = remote::tls_config_from_pem(&cert_path, &dir.join("nope.pem")).unwrap_err();
    assert!(e.contains("nope.pem"), "{e}");
    let (agent, _) = counting_agent();
    let (_server, addr) = start(agent, config).await;
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let client = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let r = send(
        addr,
        Some(&connector),
        req("POST", &[AUTH, JSON], &initialize_body(0)),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().contains_key("acp-connection-id"));
    let _ = std::fs::remove_dir_all(&dir);
}
