//! `acp serve --ws`: a WebSocket client (tokio-tungstenite) does a full turn with the demo
//! agent behind the bridge, answering its permission and file requests itself, as a browser
//! client would. Also: foreign browser origins are refused, an agent that cannot start fails
//! the handshake, Ctrl-C stops the server and kills its agents, an agent crashing mid-turn
//! closes its WebSocket (the crash report is logged, the server goes on), a client vanishing
//! mid-turn gets its agent stopped, and bad frames get JSON-RPC errors without ending the
//! connection.

mod cli_support;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
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
    /// Everything it printed on stderr so far.
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Polls its stderr until `pred` finds something (bounded).
    fn wait_log<T>(&self, what: &str, pred: impl Fn(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + EVENTUALLY;
        loop {
            if let Some(v) = pred(&self.log.lock().unwrap()) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "acp serve never logged {what}; log:\n{}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
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
    // Collect stderr (so the server never blocks on a full pipe) and find the address in it.
    let mut stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let mut server = Server {
        child,
        url: String::new(),
        log,
    };
    server.url = server.wait_log("its address", |log| {
        let rest = &log[log.find("listening on ws://")? + "listening on ".len()..];
        Some(rest[..rest.find(' ')?].to_string())
    });
    server
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

/// A WebSocket to the server, `initialize`d (id 0).
async fn connect_initialized(server: &Server) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(server.url.as_str())
        .await
        .unwrap();
    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}),
    )
    .await;
    assert_eq!(next(&mut ws).await["id"], 0);
    ws
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

#[tokio::test]
async fn ctrl_c_stops_the_server_and_its_agents() {
    let dir = TempDir::new("serve-stop");
    // An agent that would outlive a closed stdin: only a kill stops it.
    let agent = dir.script(
        "agent.sh",
        r#"read -r line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
exec sleep 1000"#,
    );
    let mut server = start_server_with(dir.path(), &[agent.to_str().unwrap()]);
    let _connected = connect_initialized(&server).await;
    let pid = agent_pid(&server, 0);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + EVENTUALLY;
    let status = loop {
        if let Some(st) = server.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "acp serve ignored Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    // The agent is gone too (dead, at most a zombie waiting for init to reap it).
    let deadline = Instant::now() + EVENTUALLY;
    while alive(pid) {
        assert!(Instant::now() < deadline, "agent {pid} outlived acp serve");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The agent's pid, from the server's log line for the `n`th connection (0-based).
fn agent_pid(server: &Server, n: usize) -> i32 {
    server.wait_log("the agent's pid", |log| {
        let rest = log.split("agent pid ").nth(n + 1)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Whether `pid` is still running (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// The WebSocket ends (a close frame, or the stream's end) within the bound; messages before
/// that are returned.
async fn until_closed(ws: &mut Ws) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(remaining, ws.next())
            .await
            .expect("the WebSocket stayed open")
        {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return seen,
            Some(Ok(Message::Text(t))) => seen.push(serde_json::from_str(t.as_str()).unwrap()),
            Some(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn an_agent_crashing_mid_turn_closes_its_websocket_and_the_server_goes_on() {
    let dir = TempDir::new("serve-crash");
    let agent = dir.script(
        "agent.sh",
        r#"read -r line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
read -r line
echo '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"half"}}}}'
echo 'agent: out of memory, giving up' >&2
exit 3"#,
    );
    let server = start_server_with(dir.path(), &[agent.to_str().unwrap()]);
    for round in 0..2 {
        let mut ws = connect_initialized(&server).await;
        send(
            &mut ws,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{
            "sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}),
        )
        .await;
        let seen = until_closed(&mut ws).await;
        assert_eq!(seen.len(), 1, "the update sent before the crash: {seen:?}");
        assert_eq!(seen[0]["params"]["update"]["content"]["text"], "half");
        // The server says why, with the exit status and the agent's last words.
        let pid = agent_pid(&server, round);
        server.wait_log("the crash report", |log| {
            let report = log.split("the agent closed its stdout").nth(round + 1)?;
            (report.contains("exited with code 3") && report.contains("out of memory"))
                .then_some(())
        });
        assert!(!alive(pid), "the crashed agent {pid} was reaped");
    }
}

#[tokio::test]
async fn a_client_vanishing_mid_turn_stops_its_agent() {
    let dir = TempDir::new("serve-vanish");
    // An agent that never finishes its turn and ignores a closed stdin: only the server's
    // shutdown (terminate, then kill the group) stops it.
    let agent = dir.script(
        "agent.sh",
        r#"trap '' TERM
read -r line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}'
read -r line
sleep 1000 &
wait"#,
    );
    let server = start_server_with(dir.path(), &[agent.to_str().unwrap()]);
    let mut ws = connect_initialized(&server).await;
    send(
        &mut ws,
        json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{
        "sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}),
    )
    .await;
    let pid = agent_pid(&server, 0);
    // No close frame: the TCP connection just goes away (a closed laptop lid, a killed tab).
    drop(ws);
    server.wait_log("the client's departure", |log| {
        log.contains("the client closed the connection")
            .then_some(())
    });
    let deadline = Instant::now() + EVENTUALLY;
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "agent {pid} outlived its client; log:\n{}",
            server.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The server still accepts connections.
    connect_initialized(&server).await;
}

#[tokio::test]
async fn bad_frames_get_json_rpc_errors_and_the_connection_goes_on() {
    let dir = TempDir::new("serve-garbage");
    let server = start_server(dir.path());
    let (mut ws, _) = tokio_tungstenite::connect_async(server.url.as_str())
        .await
        .unwrap();
    // Not JSON: a Parse error (id null) from the agent's engine, through the bridge.
    ws.send(Message::text("this is not json")).await.unwrap();
    let err = next(&mut ws).await;
    assert_eq!(err["id"], Value::Null, "{err}");
    assert_eq!(err["error"]["code"], -32700, "{err}");
    // JSON but no JSON-RPC message: Invalid Request.
    send(&mut ws, json!({"hello": "world"})).await;
    let err = next(&mut ws).await;
    assert_eq!(err["error"]["code"], -32600, "{err}");
    // Invalid UTF-8 in a binary frame: a Parse error too.
    ws.send(Message::binary(vec![0xff, 0xfe, b'{', b'}']))
        .await
        .unwrap();
    let err = next(&mut ws).await;
    assert_eq!(err["error"]["code"], -32700, "{err}");
    // A pretty-printed (multi-line) frame is still one message.
    ws.send(Message::text(
        "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"method\": \"initialize\",\n  \"params\": {\"protocolVersion\": 1}\n}",
    ))
    .await
    .unwrap();
    let init = next(&mut ws).await;
    assert_eq!(init["id"], 7, "{init}");
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
}
