//! `acp serve --ws`: a WebSocket client (tokio-tungstenite) does a full turn with the demo
//! agent behind the bridge, answering its permission and file requests itself, as a browser
//! client would. Also: foreign browser origins are refused.

mod cli_support;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::{acp, TempDir, EVENTUALLY};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// `acp serve --ws 127.0.0.1:0`, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(cwd: &std::path::Path) -> Server {
    start_server_with(cwd, &[])
}

fn start_server_with(cwd: &std::path::Path, agent: &[&str]) -> Server {
    let mut args = vec!["serve", "--ws", "127.0.0.1:0"];
    if !agent.is_empty() {
        args.push("--");
        args.extend_from_slice(agent);
    }
    let mut child = Command::new(acp())
        .args(&args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr until the "listening on ws://ADDR" line (bounded by the reader thread and a
    // deadline on the channel).
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if let Some(i) = seen.find("listening on ws://") {
                let rest = &seen[i + "listening on ".len()..];
                if let Some(end) = rest.find(' ') {
                    let _ = tx.send(rest[..end].to_string());
                    // Keep draining so the server never blocks on a full pipe.
                    while let Ok(n) = stderr.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                    }
                    return;
                }
            }
        }
    });
    let url = rx
        .recv_timeout(EVENTUALLY)
        .expect("acp serve never printed its address");
    Server { child, url }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).await.unwrap();
}

/// The next JSON-RPC message (bounded).
async fn next(ws: &mut Ws) -> Value {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let msg = tokio::time::timeout(remaining, ws.next())
            .await
            .expect("no message from the agent in time")
            .expect("the WebSocket closed")
            .unwrap();
        match msg {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => continue,
        }
    }
}

#[tokio::test]
async fn a_websocket_client_runs_a_full_turn_through_the_bridge() {
    let dir = TempDir::new("serve");
    let server = start_server(dir.path());
    let (mut ws, _) = tokio_tungstenite::connect_async(server.url.as_str())
        .await
        .unwrap();

    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":1,
        "clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":true},"terminal":false}}}),
    )
    .await;
    let init = next(&mut ws).await;
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["agentInfo"]["name"], "acp-demo-agent");

    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{
        "cwd": dir.path(), "mcpServers": []}}),
    )
    .await;
    let session = next(&mut ws).await;
    let sid = session["result"]["sessionId"].as_str().unwrap().to_string();

    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{
        "sessionId": sid, "prompt": [{"type":"text","text":"over websocket"}]}}),
    )
    .await;
    let mut text = String::new();
    let mut wrote = None;
    let stop = loop {
        let msg = next(&mut ws).await;
        match msg["method"].as_str() {
            Some("session/update") => {
                if msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                    text.push_str(
                        msg["params"]["update"]["content"]["text"]
                            .as_str()
                            .unwrap_or(""),
                    );
                }
            }
            Some("session/request_permission") => {
                let option = msg["params"]["options"][0]["optionId"].clone();
                send(
                    &mut ws,
                    json!({"jsonrpc":"2.0","id":msg["id"],"result":{
                    "outcome":{"outcome":"selected","optionId":option}}}),
                )
                .await;
            }
            Some("fs/write_text_file") => {
                wrote = Some(msg["params"]["path"].as_str().unwrap().to_string());
                send(&mut ws, json!({"jsonrpc":"2.0","id":msg["id"],"result":{}})).await;
            }
            Some(other) => panic!("unexpected request {other}: {msg}"),
            None => {
                assert_eq!(msg["id"], 3, "{msg}");
                break msg["result"]["stopReason"].clone();
            }
        }
    };
    assert_eq!(stop, "end_turn");
    assert!(text.contains("You said: \"over websocket\""), "{text}");
    assert_eq!(wrote.unwrap(), dir.join("acp-demo.txt").to_str().unwrap());

    // The demo agent replays a session on `session/load` (same process), then answers.
    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":4,"method":"session/load","params":{
        "sessionId": sid, "cwd": dir.path(), "mcpServers": []}}),
    )
    .await;
    let mut replayed = Vec::new();
    loop {
        let msg = next(&mut ws).await;
        if msg["id"] == 4 {
            assert!(msg["result"].is_object(), "{msg}");
            break;
        }
        assert_eq!(msg["method"], "session/update", "{msg}");
        replayed.push(msg["params"]["update"].clone());
    }
    assert_eq!(replayed[0]["sessionUpdate"], "user_message_chunk");
    assert_eq!(replayed[0]["content"]["text"], "over websocket");
    let replayed_text: String = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(replayed_text, text);
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn foreign_browser_origins_are_refused_and_local_ones_accepted() {
    let dir = TempDir::new("origin");
    let server = start_server(dir.path());
    let mut req = server.url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", "https://evil.example".parse().unwrap());
    let err = tokio_tungstenite::connect_async(req).await.unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");

    let mut req = server.url.as_str().into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", "http://localhost:5173".parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
    )
    .await;
    assert_eq!(next(&mut ws).await["result"]["protocolVersion"], 1);
    let _ = tokio::time::timeout(Duration::from_secs(5), ws.close(None)).await;
}

#[tokio::test]
async fn an_agent_that_cannot_start_fails_the_handshake_with_the_reason() {
    let dir = TempDir::new("serve-missing");
    let server = start_server_with(dir.path(), &["acp-no-such-agent-xyz"]);
    let err = tokio_tungstenite::connect_async(server.url.as_str())
        .await
        .unwrap_err();
    let shown = match &err {
        tokio_tungstenite::tungstenite::Error::Http(resp) => format!(
            "{} {}",
            resp.status(),
            String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default())
        ),
        other => panic!("expected an HTTP error, got {other}"),
    };
    assert!(shown.starts_with("502"), "{shown}");
    assert!(
        shown.contains("command not found: `acp-no-such-agent-xyz`"),
        "{shown}"
    );
}
