//! ACP v2 (feature `unstable_protocol_v2`) carried unchanged by the remote transports, to `acp
//! demo-agent` (which takes the v2 offer): over our server's HTTP + SSE and WebSocket on `/acp`
//! (`acp serve --http`), its WebSocket-only mode (`acp serve --ws`), and NDJSON over TCP. On
//! each: `initialize` settles on v2, a turn is acknowledged by its `session/prompt` answer, asks
//! a permission question (answered) and ends with an idle `state_update`; then a new connection
//! (a new agent process, the session from its `--state-dir`) reopens the session the v2 way,
//! `session/resume` with `replayFrom`, whose replay and `replay_complete` come before the answer
//! (over SSE on the session's stream, opened before the session is confirmed), and a second
//! turn runs in it. Every wait is on an event, bounded as a hang guard only.

mod cli_support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use acp_core::{ErrorObject, Role};
use acp_native::remote::client::{self as client, ClientOptions};
use acp_native::remote::server::{self as server, RemoteServer, RemoteServerConfig, ServerMode};
use acp_native::{process::AgentCommand, ClientSideConnection, DriverConfig, RawValue, Router};
use cli_support::{acp, TempDir, EVENTUALLY};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const TOKEN: &str = "remote-v2-test-token-0123456789";

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(EVENTUALLY, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {EVENTUALLY:?}"))
}

fn raw(v: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&v).unwrap()
}

/// The client's side: every `session/update`'s params on `updates`, in order; a permission
/// question answered "allow" (and counted).
fn host(updates: mpsc::UnboundedSender<Value>, questions: Arc<AtomicUsize>) -> Router {
    Router::new()
        .notification_raw("session/update", move |p, _cx| {
            let updates = updates.clone();
            async move {
                let p: Value = serde_json::from_str(p.as_deref().map_or("{}", RawValue::get))
                    .expect("session/update params");
                let _ = updates.send(p);
            }
        })
        .route_raw("session/request_permission", move |p, _cx| {
            let questions = questions.clone();
            async move {
                let p: Value = serde_json::from_str(p.as_deref().map_or("{}", RawValue::get))
                    .map_err(ErrorObject::invalid_params)?;
                // v2's question: a title, no tool call.
                assert!(p["title"].is_string(), "{p}");
                assert!(p.get("toolCall").is_none(), "{p}");
                questions.fetch_add(1, Ordering::SeqCst);
                Ok(raw(
                    json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
                ))
            }
        })
}

/// One client connection with what its host saw.
struct Client {
    conn: ClientSideConnection,
    updates: mpsc::UnboundedReceiver<Value>,
    questions: Arc<AtomicUsize>,
}

impl Client {
    /// `initialize` offering v2 (v1's request with v2's fields beside), which must settle on 2.
    async fn initialize(&self) {
        let offer = json!({
            "protocolVersion": 2,
            "clientCapabilities": {},
            "clientInfo": {"name": "remote-v2-test", "version": "1"},
            "info": {"name": "remote-v2-test", "version": "1"},
            "capabilities": {},
        });
        let answer = bounded(
            "initialize",
            self.conn
                .handle()
                .request("initialize", Some(raw(offer)), None),
        )
        .await
        .expect("initialize");
        let answer: Value = serde_json::from_str(answer.get()).unwrap();
        assert_eq!(answer["protocolVersion"], 2, "{answer}");
        assert_eq!(self.conn.handle().protocol_version(), 2);
    }

    async fn request(&self, method: &str, params: Value) -> Value {
        let answer = bounded(
            method,
            self.conn.handle().request(method, Some(raw(params)), None),
        )
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"));
        serde_json::from_str(answer.get()).unwrap()
    }

    /// A turn: the prompt's acknowledgement, then the updates up to the idle state; returns
    /// the stop reason and what the agent said.
    async fn turn(&mut self, session: &str, text: &str) -> (String, String) {
        let asked = self.questions.load(Ordering::SeqCst);
        let ack = self
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            )
            .await;
        assert!(ack["messageId"].is_string(), "{ack}");
        assert!(
            ack.get("stopReason").is_none(),
            "a v2 answer only acknowledges: {ack}"
        );
        let mut said = String::new();
        loop {
            let p = bounded("the turn's updates", self.updates.recv())
                .await
                .expect("updates");
            assert_eq!(p["sessionId"], session, "{p}");
            let u = &p["update"];
            match u["sessionUpdate"].as_str() {
                Some("agent_message_chunk") => {
                    said.push_str(u["content"]["text"].as_str().unwrap())
                }
                Some("state_update") if u["state"] == "idle" => {
                    assert_eq!(self.questions.load(Ordering::SeqCst), asked + 1);
                    return (u["stopReason"].as_str().unwrap().to_string(), said);
                }
                _ => {}
            }
        }
    }

    /// `session/resume` replaying from the start: the replayed updates, handled before the
    /// answer (the driver hands an answer over after the notifications before it).
    async fn resume_with_replay(&mut self, session: &str, cwd: &std::path::Path) -> Vec<Value> {
        let answer = self
            .request(
                "session/resume",
                json!({"sessionId": session, "cwd": cwd, "mcpServers": [],
                       "replayFrom": {"type": "start"}}),
            )
            .await;
        assert!(answer.is_object(), "{answer}");
        let mut replay = Vec::new();
        while let Ok(p) = self.updates.try_recv() {
            assert_eq!(p["sessionId"], session, "{p}");
            replay.push(p["update"].clone());
        }
        replay
    }
}

/// The same scenario on every transport: `connect` makes a client connection (a new agent
/// process each time, sharing the state directory).
async fn v2_over<F, Fut>(what: &str, cwd: &std::path::Path, connect: F)
where
    F: Fn(Router) -> Fut,
    Fut: std::future::Future<Output = ClientSideConnection>,
{
    let new_client = || async {
        let (tx, updates) = mpsc::unbounded_channel();
        let questions = Arc::new(AtomicUsize::new(0));
        let conn = connect(host(tx, questions.clone())).await;
        Client {
            conn,
            updates,
            questions,
        }
    };
    let mut c = new_client().await;
    c.initialize().await;
    let session = c
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let session = session["sessionId"].as_str().unwrap().to_string();
    let (stop, said) = c.turn(&session, &format!("hello over {what}")).await;
    assert_eq!(stop, "end_turn", "{what}");
    assert_eq!(
        said,
        format!("You said: hello over {what}. The write was allowed.")
    );
    c.conn.close("done");

    // Another connection, another agent process: the session replayed, then a turn in it.
    let mut c = new_client().await;
    c.initialize().await;
    let replay = c.resume_with_replay(&session, cwd).await;
    let kinds: Vec<&str> = replay
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message",
            "agent_message",
            "replay_complete",
            "state_update"
        ],
        "{what}"
    );
    assert_eq!(
        replay[0]["content"][0]["text"],
        format!("hello over {what}"),
        "{what}"
    );
    let (stop, said) = c.turn(&session, "again").await;
    assert_eq!(stop, "end_turn", "{what}");
    assert_eq!(said, "You said: again. The write was allowed.", "{what}");
    c.conn.close("done");
}

fn demo_agent(state: &std::path::Path) -> AgentCommand {
    AgentCommand::new(acp())
        .arg("demo-agent")
        .arg("--state-dir")
        .arg(state)
}

async fn serve(mode: ServerMode, state: &std::path::Path) -> (RemoteServer, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = RemoteServerConfig::new(TOKEN);
    config.mode = mode;
    let server = RemoteServer::new(server::command_agent(demo_agent(state)), config);
    let s = server.clone();
    tokio::spawn(async move { s.serve(listener).await });
    (server, addr)
}

async fn remote(url: String, host: Router) -> ClientSideConnection {
    let options = ClientOptions::default().token(TOKEN);
    let (conn, _link) = bounded(
        "connect",
        client::connect(&url, &options, host, DriverConfig::new(Role::Client)),
    )
    .await
    .unwrap_or_else(|e| panic!("{url}: {e}"));
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_over_http_sse_and_websocket() {
    let dir = TempDir::new("remote-v2");
    let (server, addr) = serve(ServerMode::HttpAndWebSocket, &dir.join("state")).await;
    v2_over("SSE", dir.path(), |h| {
        remote(format!("http://{addr}/acp"), h)
    })
    .await;
    v2_over("WebSocket", dir.path(), |h| {
        remote(format!("ws://{addr}/acp"), h)
    })
    .await;
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_over_the_websocket_only_server() {
    let dir = TempDir::new("remote-v2-ws");
    let (server, addr) = serve(ServerMode::WebSocketOnly, &dir.join("state")).await;
    v2_over("the WebSocket bridge", dir.path(), |h| {
        remote(format!("ws://{addr}/"), h)
    })
    .await;
    server.stop();
}

/// NDJSON over TCP: each accepted socket is bridged to a new demo agent's stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_over_tcp() {
    let dir = TempDir::new("remote-v2-tcp");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = dir.join("state");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let mut child = tokio::process::Command::new(acp())
                .arg("demo-agent")
                .arg("--state-dir")
                .arg(&state)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let (mut stdin, mut stdout) =
                (child.stdin.take().unwrap(), child.stdout.take().unwrap());
            let (mut r, mut w) = socket.into_split();
            tokio::spawn(async move {
                let to_agent = async {
                    let _ = tokio::io::copy(&mut r, &mut stdin).await;
                    drop(stdin);
                };
                let from_agent = tokio::io::copy(&mut stdout, &mut w);
                let _ = tokio::join!(to_agent, from_agent);
                let _ = child.wait().await;
            });
        }
    });
    v2_over("TCP", dir.path(), |h| async move {
        let (r, w) = acp_native::transport::tcp_connect(addr).await.unwrap();
        ClientSideConnection::connect(r, w, h, DriverConfig::new(Role::Client))
    })
    .await;
}
