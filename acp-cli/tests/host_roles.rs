//! Client <-> agent through the typed role APIs over every transport: in-memory duplex, TCP,
//! WebSocket and a subprocess's stdio.

#[path = "../../acp-native/tests/rpc_support/mod.rs"]
mod rpc_support;

use std::sync::Arc;

use acp_native::transport;
use rpc_support::*;

#[tokio::test]
async fn roundtrip_over_in_memory_duplex() {
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent = start_agent(ar, aw);
    let seen = Arc::new(Seen::default());
    let client = start_client(cr, cw, seen.clone());
    eventually("the scenario", exercise(&client, &seen)).await;

    // Closing the client ends both sides; each learns why.
    client.close("test done");
    assert_eq!(
        eventually("client closed", client.closed()).await,
        "test done"
    );
    let reason = eventually("agent closed", agent.closed()).await;
    assert_eq!(reason, "the peer closed the connection");
    assert!(agent.cancellation_token().is_cancelled());
}

#[tokio::test]
async fn roundtrip_over_tcp() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = transport::tcp_split(stream);
        let agent = start_agent(r, w);
        agent.closed().await
    });
    let (r, w) = transport::tcp_connect(addr).await.unwrap();
    let seen = Arc::new(Seen::default());
    let client = start_client(r, w, seen.clone());
    eventually("the scenario", exercise(&client, &seen)).await;
    client.close("bye");
    let agent_reason = eventually("agent end", server).await.unwrap();
    assert_eq!(agent_reason, "the peer closed the connection");
}

#[tokio::test]
async fn roundtrip_over_websocket() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = transport::ws_accept(stream).await.unwrap();
        let agent = start_agent(r, w);
        agent.closed().await
    });
    let (r, w) = transport::ws_connect(&format!("ws://{addr}"))
        .await
        .unwrap();
    let seen = Arc::new(Seen::default());
    let client = start_client(r, w, seen.clone());
    eventually("the scenario", exercise(&client, &seen)).await;
    client.close("bye");
    let agent_reason = eventually("agent end", server).await.unwrap();
    assert_eq!(agent_reason, "the peer closed the connection");
}

/// A WebSocket peer that sends pretty-printed JSON (newlines inside one frame) and reads one
/// frame per message back.
#[tokio::test]
async fn websocket_frames_are_messages() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = transport::ws_accept(stream).await.unwrap();
        let agent = start_agent(r, w);
        agent.closed().await
    });
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .unwrap();
    let pretty = "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"method\": \"initialize\",\n  \"params\": {\"protocolVersion\": 1}\n}";
    ws.send(Message::text(pretty)).await.unwrap();
    let reply = eventually("a reply frame", ws.next())
        .await
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["protocolVersion"], 1);
    // Unknown method: one error frame.
    ws.send(Message::text(r#"{"jsonrpc":"2.0","id":8,"method":"nope"}"#))
        .await
        .unwrap();
    let reply = eventually("a reply frame", ws.next())
        .await
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (8.into(), (-32601).into())
    );
}

/// The real thing over real pipes: `acp demo-agent` spawned by `transport::spawn_agent`, serving
/// with `transport::stdio()`; a typed prompt turn streams chunks and ends the turn.
#[tokio::test]
async fn roundtrip_with_the_demo_agent_subprocess() {
    use acp_core::{typed, Role};
    use acp_native::process::AgentCommand;
    use acp_native::{DriverConfig, Router};
    use agent_client_protocol_schema::v1 as s;
    use agent_client_protocol_schema::ProtocolVersion;

    let chunks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = chunks.clone();
    let router = Router::new().notification::<typed::SessionUpdate, _, _>(
        move |n: s::SessionNotification, _| {
            let c = c2.clone();
            async move {
                if let s::SessionUpdate::AgentMessageChunk(_) = n.update {
                    c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        },
    );
    let cmd = AgentCommand::new(env!("CARGO_BIN_EXE_acp")).arg("demo-agent");
    let (client, child) =
        transport::spawn_agent(&cmd, router, DriverConfig::new(Role::Client)).unwrap();
    let client = client.with_timeout(EVENTUALLY);
    let init = eventually(
        "initialize",
        client.initialize(s::InitializeRequest::new(ProtocolVersion::V1)),
    )
    .await
    .unwrap();
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    let cwd = std::env::temp_dir();
    let session = client
        .new_session(s::NewSessionRequest::new(cwd))
        .await
        .unwrap();
    let done = client
        .prompt(s::PromptRequest::new(
            session.session_id,
            vec![text("hello there")],
        ))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    client.handle().notifications_handled().await;
    assert!(chunks.load(std::sync::atomic::Ordering::SeqCst) > 0);
    let out = eventually(
        "shutdown",
        child.shutdown(std::time::Duration::from_secs(5)),
    )
    .await;
    assert!(!out.report.is_crash(), "{}", out.report);
}

/// `AgentSideConnection::create_terminal` and its `TerminalHandle` against a fake client
/// terminal: output, wait, kill, release, and release-on-drop.
#[tokio::test]
async fn terminal_handle_calls_and_release_on_drop() {
    use acp_core::{typed, Role};
    use acp_native::{AgentSideConnection, ClientSideConnection, DriverConfig, Router};
    use agent_client_protocol_schema::v1 as s;
    use agent_client_protocol_schema::ProtocolVersion;

    let calls = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let released = Arc::new(tokio::sync::Notify::new());
    let log =
        |calls: &Arc<std::sync::Mutex<Vec<String>>>, what: String| calls.lock().unwrap().push(what);
    let (c1, c2, c3, c4, c5) = (
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
    );
    let rel = released.clone();
    let client_router = Router::new()
        .route::<typed::CreateTerminal, _, _>(move |p: s::CreateTerminalRequest, _| {
            c1.lock().unwrap().push(format!("create {}", p.command));
            async move { Ok(s::CreateTerminalResponse::new(format!("t-{}", p.command))) }
        })
        .route::<typed::TerminalOutput, _, _>(move |p: s::TerminalOutputRequest, _| {
            log(&c2, format!("output {}", p.terminal_id.0));
            async move { Ok(s::TerminalOutputResponse::new("hello\n", false)) }
        })
        .route::<typed::WaitForTerminalExit, _, _>(move |p: s::WaitForTerminalExitRequest, _| {
            log(&c3, format!("wait {}", p.terminal_id.0));
            async move {
                Ok(s::WaitForTerminalExitResponse::new(
                    s::TerminalExitStatus::new().exit_code(0),
                ))
            }
        })
        .route::<typed::KillTerminal, _, _>(move |p: s::KillTerminalRequest, _| {
            log(&c4, format!("kill {}", p.terminal_id.0));
            async move { Ok(s::KillTerminalResponse::new()) }
        })
        .route::<typed::ReleaseTerminal, _, _>(move |p: s::ReleaseTerminalRequest, _| {
            log(&c5, format!("release {}", p.terminal_id.0));
            rel.notify_waiters();
            async move { Ok(s::ReleaseTerminalResponse::new()) }
        });
    let agent_router =
        Router::new().route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent = AgentSideConnection::connect(ar, aw, agent_router, DriverConfig::new(Role::Agent));
    let client =
        ClientSideConnection::connect(cr, cw, client_router, DriverConfig::new(Role::Client));

    // Before the client advertised `terminal`, the call is refused locally.
    let e = agent
        .create_terminal(s::CreateTerminalRequest::new("s1", "ls"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            acp_native::RpcError::Refused(acp_core::Error::CapabilityNotAdvertised { .. })
        ),
        "{e:?}"
    );

    client
        .initialize(
            s::InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(s::ClientCapabilities::new().terminal(true)),
        )
        .await
        .unwrap();
    assert!(agent.client_capabilities().terminal);

    let t = agent
        .create_terminal(s::CreateTerminalRequest::new("s1", "make"))
        .await
        .unwrap();
    assert_eq!(&*t.id().0, "t-make");
    assert_eq!(t.current_output().await.unwrap().output, "hello\n");
    assert_eq!(
        t.wait_for_exit().await.unwrap().exit_status.exit_code,
        Some(0)
    );
    t.kill().await.unwrap();
    t.release().await.unwrap();

    let dropped = agent
        .create_terminal(s::CreateTerminalRequest::new("s1", "sleep"))
        .await
        .unwrap();
    let notified = released.notified();
    drop(dropped);
    eventually("release on drop", notified).await;
    assert_eq!(
        *calls.lock().unwrap(),
        [
            "create make",
            "output t-make",
            "wait t-make",
            "kill t-make",
            "release t-make",
            "create sleep",
            "release t-sleep"
        ]
    );
}
