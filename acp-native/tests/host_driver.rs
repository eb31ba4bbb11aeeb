//! The driver's guarantees: a reader never blocked by handlers, error mapping (-32601, -32602,
//! -32603), lifecycle gating, timeouts, closing and EOF, backpressure, tower on the outgoing side.

mod rpc_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed;
use acp_core::{CallError, ErrorObject, Role};
use acp_native::layers::{LifecycleLayer, MethodTimeoutLayer};
use acp_native::{
    driver, transport, AgentSideConnection, ClientSideConnection, DriverConfig, Router, RpcError,
    RpcRequest, RpcService,
};
use agent_client_protocol_schema::v1 as s;
use agent_client_protocol_schema::ProtocolVersion;
use rpc_support::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tower::{Service, ServiceBuilder, ServiceExt};

/// A client and an agent (with `service`) over an in-memory pipe.
fn pair(service: RpcService) -> (ClientSideConnection, AgentSideConnection, Arc<Seen>) {
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent = AgentSideConnection::connect(ar, aw, service, DriverConfig::new(Role::Agent));
    let seen = Arc::new(Seen::default());
    let client = start_client(cr, cw, seen.clone());
    (client, agent, seen)
}

async fn initialize(client: &ClientSideConnection) {
    client
        .initialize(
            s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(client_caps()),
        )
        .await
        .expect("initialize");
}

/// The agent asks permission, then streams three updates while that request is pending; the
/// client's permission handler only answers once it has seen the three updates. If a pending
/// request handler blocked the reader, this would deadlock. Also, the client's notification
/// handler itself calls the agent (and gets its answer) while notifications queue behind it.
#[tokio::test]
async fn reader_is_never_blocked_by_a_waiting_handler() {
    let agent_router = Router::new()
        .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        })
        .ext_method("test/echo", |v, _| async move { Ok(v) })
        .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
            let client = cx.client();
            let sid = p.session_id;
            let ask = client.request_permission(s::RequestPermissionRequest::new(
                sid.clone(),
                s::ToolCallUpdate::new("t", s::ToolCallUpdateFields::new()),
                vec![s::PermissionOption::new(
                    "ok",
                    "OK",
                    s::PermissionOptionKind::AllowOnce,
                )],
            ));
            tokio::pin!(ask);
            // One poll queues the request; the updates are queued after it.
            assert!(futures::poll!(&mut ask).is_pending());
            for i in 0..3 {
                let chunk = s::ContentChunk::new(text(&format!("u{i}")));
                client
                    .session_update(s::SessionNotification::new(
                        sid.clone(),
                        s::SessionUpdate::AgentMessageChunk(chunk),
                    ))
                    .await
                    .map_err(|e| e.to_error_object())?;
            }
            let answer = ask.await.map_err(|e| e.to_error_object())?;
            assert!(matches!(
                answer.outcome,
                s::RequestPermissionOutcome::Selected(_)
            ));
            Ok(s::PromptResponse::new(s::StopReason::EndTurn))
        });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let _agent = AgentSideConnection::connect(ar, aw, agent_router, DriverConfig::new(Role::Agent));

    let seen = Arc::new(Seen::default());
    let echoes = Arc::new(Mutex::new(Vec::new()));
    let (seen2, seen3, echoes2) = (seen.clone(), seen.clone(), echoes.clone());
    let client_router = Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, cx| {
            let (seen, echoes) = (seen2.clone(), echoes2.clone());
            async move {
                // A notification handler awaiting a call to the peer.
                let echo = cx
                    .agent()
                    .ext_method("test/echo", json!({"n": 1}))
                    .await
                    .unwrap();
                echoes.lock().unwrap().push(echo);
                if let s::SessionUpdate::AgentMessageChunk(c) = n.update {
                    if let s::ContentBlock::Text(t) = c.content {
                        seen.updates.lock().unwrap().push(t.text);
                        seen.changed.notify_waiters();
                    }
                }
            }
        })
        .route::<typed::RequestPermission, _, _>(move |p: s::RequestPermissionRequest, _| {
            let seen = seen3.clone();
            async move {
                // Wait for the updates sent after this request.
                loop {
                    let changed = seen.changed.notified();
                    if seen.texts().len() >= 3 {
                        break;
                    }
                    changed.await;
                }
                Ok(s::RequestPermissionResponse::new(
                    s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                        p.options[0].option_id.clone(),
                    )),
                ))
            }
        });
    let client =
        ClientSideConnection::connect(cr, cw, client_router, DriverConfig::new(Role::Client));
    initialize(&client).await;
    let done = eventually(
        "the prompt",
        client.prompt(s::PromptRequest::new("s1", vec![text("go")])),
    )
    .await
    .unwrap();
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    client.handle().notifications_handled().await;
    assert_eq!(seen.texts(), ["u0", "u1", "u2"]);
    assert_eq!(echoes.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn router_maps_unknown_methods_and_bad_params() {
    let (client, _agent, _) = pair(agent_service());
    initialize(&client).await;
    let h = client.handle();

    let e = remote(
        h.request("session/nope", raw(json!({})), None)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32601);
    assert_eq!(e.data, Some(json!({"method": "session/nope"})));

    let e = remote(h.request("_vendor/unknown", None, None).await.unwrap_err());
    assert_eq!(
        e.code, -32601,
        "unknown extension requests are method-not-found"
    );

    let e = remote(
        h.request("session/new", raw(json!({"cwdx": 1})), None)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32602);
    let details = e.data.as_ref().and_then(|d| d["details"].as_str()).unwrap();
    assert!(
        details.contains("missing field `cwd`"),
        "serde's message in data: {details}"
    );

    let e = remote(h.request("session/new", None, None).await.unwrap_err());
    assert_eq!(e.code, -32602, "absent params are invalid for session/new");

    // Unknown extension notifications are ignored; the connection goes on.
    h.notify("_vendor/note", raw(json!({"x": 1})))
        .await
        .unwrap();
    let v = client.ext_method("_test/echo", json!([1])).await.unwrap();
    assert_eq!(v, json!([1]));
}

#[tokio::test]
async fn handler_panics_become_internal_errors() {
    // With CatchPanicLayer: the panic message is in data.details.
    let (client, _agent, _) = pair(agent_service());
    initialize(&client).await;
    let e = remote(
        client
            .handle()
            .request("_test/panic", None, None)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32603);
    let details = e.data.as_ref().and_then(|d| d["details"].as_str()).unwrap();
    assert!(details.contains("boom in handler"), "{details}");
    // The connection survives.
    assert_eq!(
        client
            .ext_method("test/echo", json!({"v": 2}))
            .await
            .unwrap(),
        json!({"v": 2})
    );

    // Without the layer the driver still answers (the handler task ended without answering).
    let (client, _agent, _) = pair(RpcService::new(agent_router()));
    let e = remote(
        client
            .handle()
            .request("_test/panic", None, None)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32603);
    assert_eq!(
        client
            .ext_method("test/echo", json!({"v": 3}))
            .await
            .unwrap(),
        json!({"v": 3})
    );
}

#[tokio::test]
async fn lifecycle_gates_everything_before_initialize() {
    let cancels = Arc::new(AtomicUsize::new(0));
    let c2 = cancels.clone();
    let router = agent_router()
        .route::<typed::Authenticate, _, _>(|_p: s::AuthenticateRequest, _| async move {
            Ok(s::AuthenticateResponse::new())
        })
        .notification::<typed::Cancel, _, _>(move |_n: s::CancelNotification, _| {
            let c = c2.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
            }
        });
    let service = RpcService::new(
        ServiceBuilder::new()
            .layer(LifecycleLayer::new().require_authentication())
            .service(router),
    );
    let (client, agent, _) = pair(service);

    let e = remote(
        client
            .new_session(s::NewSessionRequest::new("/p"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32600);
    assert_eq!(e.data.as_ref().unwrap()["reason"], "notInitialized");
    // Dropped before initialize.
    client
        .cancel(s::CancelNotification::new("s"))
        .await
        .unwrap();

    initialize(&client).await;
    let e = remote(
        client
            .new_session(s::NewSessionRequest::new("/p"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32000, "authentication required");
    client
        .authenticate(s::AuthenticateRequest::new("key"))
        .await
        .unwrap();
    client
        .new_session(s::NewSessionRequest::new("/p"))
        .await
        .unwrap();

    // Passed after initialize.
    client
        .cancel(s::CancelNotification::new("s"))
        .await
        .unwrap();
    client.ext_method("test/echo", json!({})).await.unwrap(); // both notifications arrived
    agent.handle().notifications_handled().await;
    assert_eq!(cancels.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn per_method_timeout_answers_and_cancels_the_handler() {
    let (fired_tx, fired_rx) = tokio::sync::oneshot::channel::<()>();
    let fired_tx = Arc::new(Mutex::new(Some(fired_tx)));
    let router = agent_router().route_raw("_test/slow", move |_p, cx| {
        let fired_tx = fired_tx.clone();
        async move {
            let token = cx.cancel.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                if let Some(tx) = fired_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            });
            futures::future::pending::<()>().await;
            unreachable!()
        }
    });
    let service = RpcService::new(
        ServiceBuilder::new()
            .layer(MethodTimeoutLayer::new(None).method("_test/slow", Some(Duration::from_secs(5))))
            .service(router),
    );
    let (client, _agent, _) = pair(service);
    let e = remote(
        client
            .handle()
            .request("_test/slow", None, None)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, -32603);
    assert_eq!(
        e.data,
        Some(json!({"reason": "timeout", "timeoutMs": 5000}))
    );
    fired_rx.await.expect("the handler's token fired");
    // Other methods are not limited by a `None` default.
    assert_eq!(
        client
            .ext_method("test/echo", json!({"v": 1}))
            .await
            .unwrap(),
        json!({"v": 1})
    );
}

/// The agent's router with `_test/slow`, which answers only once cancelled; the receiver
/// fires when the handler saw its cancellation.
fn slow_until_cancelled() -> (Router, tokio::sync::oneshot::Receiver<()>) {
    let (fired_tx, fired_rx) = tokio::sync::oneshot::channel::<()>();
    let fired_tx = Arc::new(Mutex::new(Some(fired_tx)));
    let router = agent_router().route_raw("_test/slow", move |_p, cx| {
        let fired_tx = fired_tx.clone();
        async move {
            cx.cancel.cancelled().await;
            if let Some(tx) = fired_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            Err(ErrorObject::from_code(
                acp_core::ErrorCode::RequestCancelled,
            ))
        }
    });
    (router, fired_rx)
}

#[tokio::test(start_paused = true)]
async fn outgoing_timeout_cancels_on_the_peer() {
    let (router, fired_rx) = slow_until_cancelled();
    let (client, _agent, _) = pair(RpcService::new(router));
    let e = client
        .handle()
        .request("_test/slow", None, Some(Duration::from_millis(1500)))
        .await
        .unwrap_err();
    assert_eq!(e, RpcError::Call(CallError::TimedOut { after_ms: 1500 }));
    fired_rx.await.expect("the agent saw $/cancel_request");

    // The same through with_timeout on the typed API.
    let e = client
        .with_timeout(Duration::from_secs(2))
        .ext_method("_test/slow", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e, RpcError::Call(CallError::TimedOut { after_ms: 2000 }));
}

#[tokio::test]
async fn dropping_a_call_cancels_it_on_the_peer() {
    let (fired_tx, mut fired_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let router = agent_router().route_raw("_test/slow", move |_p, cx| {
        let (fired_tx, started_tx) = (fired_tx.clone(), started_tx.clone());
        async move {
            let _ = started_tx.send(());
            cx.cancel.cancelled().await;
            let _ = fired_tx.send(());
            Err(ErrorObject::from_code(
                acp_core::ErrorCode::RequestCancelled,
            ))
        }
    });
    let (client, _agent, _) = pair(RpcService::new(router));
    let h = client.handle().clone();
    let call = tokio::spawn(async move { h.request("_test/slow", None, None).await });
    eventually("the handler to start", started_rx.recv())
        .await
        .unwrap();
    call.abort();
    eventually("the cancellation", fired_rx.recv())
        .await
        .unwrap();
}

#[tokio::test]
async fn tower_stack_on_the_outgoing_side() {
    let (client, _agent, _) = pair(agent_service());
    initialize(&client).await;
    let mut svc = ServiceBuilder::new()
        .buffer(8)
        .concurrency_limit(2)
        .timeout(EVENTUALLY)
        .service(client.handle().client());
    let mut calls = Vec::new();
    for i in 0..5 {
        let req = RpcRequest::with_params("_test/echo", &json!({"i": i})).unwrap();
        let fut = svc.ready().await.unwrap().call(req);
        calls.push(fut);
    }
    for (i, fut) in calls.into_iter().enumerate() {
        let raw = fut.await.unwrap();
        let v: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v, json!({"i": i}));
    }
    // Errors come back as RpcError.
    let e = svc
        .ready()
        .await
        .unwrap()
        .call(RpcRequest::new("nope", None))
        .await
        .map_err(acp_native::layers::rpc_error_from_box)
        .unwrap_err();
    assert_eq!(remote(e).code, -32601);
}

/// A `tower::timeout` of the caller's own on the outgoing side: the call fails as `TimedOut`
/// with that layer's duration (mapped by `rpc_error_from_box_after`), and the peer's handler
/// is cancelled (the future is dropped, so the engine sends `$/cancel_request`).
#[tokio::test(start_paused = true)]
async fn a_tower_timeout_says_after_how_long() {
    let (router, fired_rx) = slow_until_cancelled();
    let (client, _agent, _) = pair(RpcService::new(router));
    let limit = Duration::from_millis(250);
    let mut svc = ServiceBuilder::new()
        .timeout(limit)
        .service(client.handle().client());
    let e = svc
        .ready()
        .await
        .unwrap()
        .call(RpcRequest::new("_test/slow", None))
        .await
        .map_err(acp_native::layers::rpc_error_from_box_after(limit))
        .unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::Call(acp_core::CallError::TimedOut { after_ms: 250 })
        ),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "request timed out after 250 ms");
    fired_rx.await.expect("the peer's handler was cancelled");
}

/// A peer that reads one request line and hangs up: the pending call fails at once with
/// `Closed`, `closed()` resolves with the same reason, the token is cancelled, and later calls
/// fail the same way.
#[tokio::test]
async fn pending_calls_fail_when_the_peer_hangs_up() {
    let ((cr, cw), (pr, pw)) = transport::duplex(64 << 10);
    let client =
        ClientSideConnection::connect(cr, cw, Router::new(), DriverConfig::new(Role::Client));
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.new_session(s::NewSessionRequest::new("/p")).await }
    });
    let mut lines = BufReader::new(pr).lines();
    let line = eventually("the request", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert!(line.contains("session/new"));
    drop(lines);
    drop(pw);
    let err = eventually("the failure", pending)
        .await
        .unwrap()
        .unwrap_err();
    let reason = "the peer closed the connection".to_string();
    assert_eq!(
        err,
        RpcError::Call(CallError::Closed {
            reason: reason.clone()
        })
    );
    assert_eq!(client.closed().await, reason);
    assert!(client.cancellation_token().is_cancelled());
    let again = client
        .new_session(s::NewSessionRequest::new("/p"))
        .await
        .unwrap_err();
    assert!(again.is_closed(), "{again:?}");
}

/// With an EOF grace, whoever owns the peer process supplies the reason (exit status and
/// stderr tail) and pending calls fail with it.
#[tokio::test]
async fn close_reason_from_the_process_owner() {
    let ((cr, cw), (pr, pw)) = transport::duplex(64 << 10);
    let config = DriverConfig::new(Role::Client).eof_grace(Duration::from_secs(3600));
    let client = ClientSideConnection::connect(cr, cw, Router::new(), config);
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.new_session(s::NewSessionRequest::new("/p")).await }
    });
    let mut lines = BufReader::new(pr).lines();
    eventually("the request", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    drop(lines);
    drop(pw);
    let reason = "agent `x` exited with code 3; last stderr lines:\n  no API key";
    client.handle().close_with_reason(reason);
    let err = eventually("the failure", pending)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err,
        RpcError::Call(CallError::Closed {
            reason: reason.into()
        })
    );
    assert_eq!(client.closed().await, reason);
}

/// A call made just as the input ends, in the grace the EOF waits for its reason, fails with
/// that reason, not a generic "the peer closed the connection" (CI saw `acp chat --connect`
/// report the generic one under load). On a current-thread runtime the order is fixed: the
/// caller's task is queued before the EOF is given, so the caller's command and the EOF are
/// both waiting when the driver next runs, and it reads before it takes commands.
#[tokio::test(flavor = "current_thread")]
async fn a_call_made_as_the_input_ends_fails_with_the_reason_given_after() {
    let ((cr, cw), (pr, mut pw)) = transport::duplex(64 << 10);
    let config = DriverConfig::new(Role::Client).eof_grace(Duration::from_secs(3600));
    let client = ClientSideConnection::connect(cr, cw, Router::new(), config);
    // Let the driver start and wait for input.
    tokio::task::yield_now().await;
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.new_session(s::NewSessionRequest::new("/p")).await }
    });
    pw.shutdown().await.unwrap(); // EOF for the driver (its output still has a reader)
                                  // The caller's task runs (its command is queued), then the driver (the EOF, then the
                                  // command, in one round).
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    let reason = "the server closed the WebSocket (1001)";
    client.handle().close_at_eof_with_reason(reason);
    let err = eventually("the failure", pending)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err,
        RpcError::Call(CallError::Closed {
            reason: reason.into()
        })
    );
    drop(pr);
}

/// A real subprocess: a shell script answering `initialize`, then one that dies. The close
/// reason carries the exit code and the stderr tail.
#[tokio::test]
async fn subprocess_agent_and_its_exit_report() {
    use acp_native::process::{AgentCommand, EnvPolicy};
    let ok = AgentCommand::new("/bin/sh")
        .arg("-c")
        .arg(r#"read line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'; read rest"#)
        .env(EnvPolicy::default());
    let (client, child) =
        transport::spawn_agent(&ok, Router::new(), DriverConfig::new(Role::Client)).unwrap();
    let init = eventually(
        "initialize",
        client.initialize(s::InitializeRequest::new(ProtocolVersion::V1)),
    )
    .await
    .unwrap();
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    let out = eventually("shutdown", child.shutdown(Duration::from_secs(5))).await;
    assert!(!out.report.is_crash(), "{}", out.report);
    assert!(client.is_closed());

    let dies = AgentCommand::new("/bin/sh")
        .arg("-c")
        .arg("read line; echo 'fatal: no API key' >&2; exit 3");
    let (client, _child) =
        transport::spawn_agent(&dies, Router::new(), DriverConfig::new(Role::Client)).unwrap();
    let err = eventually(
        "initialize",
        client.initialize(s::InitializeRequest::new(ProtocolVersion::V1)),
    )
    .await
    .unwrap_err();
    let RpcError::Call(CallError::Closed { reason }) = &err else {
        panic!("expected Closed, got {err:?}");
    };
    assert!(reason.contains("code 3"), "{reason}");
    assert!(reason.contains("fatal: no API key"), "{reason}");
    assert_eq!(&client.closed().await, reason);
}

/// A peer that never reads: the sender ends up waiting, with a bounded amount buffered
/// (high-water mark + pipe buffer + command queue), instead of growing memory.
#[tokio::test(start_paused = true)]
async fn backpressure_when_the_peer_does_not_read() {
    let ((cr, cw), (_pr, _pw)) = transport::duplex(4 << 10);
    let mut config = DriverConfig::new(Role::Client).write_high_water(32 << 10);
    config.command_buffer = 8;
    let client = ClientSideConnection::connect(cr, cw, Router::new(), config);
    let sent = Arc::new(AtomicUsize::new(0));
    let flood = tokio::spawn({
        let (client, sent) = (client.clone(), sent.clone());
        async move {
            let payload = "x".repeat(1000);
            loop {
                client
                    .ext_notification("_flood", json!({ "p": payload }))
                    .await
                    .unwrap();
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    // Paused time only advances when every task is idle: this elapses iff the flood is stuck.
    let r = tokio::time::timeout(Duration::from_secs(3600), flood).await;
    assert!(r.is_err(), "the flooding task must be waiting");
    let n = sent.load(Ordering::SeqCst);
    // ~1 KiB per message: 32 KiB high water + 4 KiB pipe + one over + 8 queued commands.
    assert!(n >= 30, "it sent until the high-water mark ({n})");
    assert!(
        n <= 32 + 4 + 1 + 8 + 2,
        "bounded buffering ({n} messages accepted)"
    );
}

/// `driver::spawn` directly, with a raw `tower::service_fn` as the incoming service.
#[tokio::test]
async fn raw_driver_with_service_fn() {
    let ((cr, cw), (ar, aw)) = transport::duplex(1 << 10);
    let service = tower::service_fn(|req: acp_native::Incoming| async move {
        let body = json!({ "method": req.method, "notification": req.is_notification() });
        Ok::<_, ErrorObject>(serde_json::value::to_raw_value(&body).unwrap())
    });
    let _agent = driver::spawn(ar, aw, service, DriverConfig::new(Role::Agent));
    let client = driver::spawn(cr, cw, Router::new(), DriverConfig::new(Role::Client));
    let r = client
        .request("anything/at_all", raw(json!([1, 2])), None)
        .await
        .unwrap();
    assert_eq!(
        r.get(),
        r#"{"method":"anything/at_all","notification":false}"#
    );
}

/// Bytes written by hand: responses to a raw peer look exactly like JSON-RPC 2.0 lines.
#[tokio::test]
async fn wire_format_of_answers() {
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let _agent =
        AgentSideConnection::connect(ar, aw, agent_service(), DriverConfig::new(Role::Agent));
    pw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"session/new\",\"params\":{\"cwd\":\"/\"}}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(pr).lines();
    let line = eventually("an answer", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["id"], "a");
    assert_eq!(v["error"]["code"], -32600);
}

/// The notification contract: while the (in-order) notification handler is blocked, fewer than
/// `notification_buffer` notifications queue behind it and responses keep flowing; once it is
/// released every notification is handled, in order.
#[tokio::test]
async fn blocked_notification_handler_does_not_stall_responses() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (g, o) = (gate.clone(), order.clone());
    let client_router = Router::new().ext_notification("note", move |v, _| {
        let (g, o) = (g.clone(), o.clone());
        async move {
            g.acquire().await.unwrap().forget();
            o.lock().unwrap().push(v["i"].as_u64().unwrap());
        }
    });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent = AgentSideConnection::connect(ar, aw, Router::new(), DriverConfig::new(Role::Agent));
    let client = ClientSideConnection::connect(
        cr,
        cw,
        client_router,
        DriverConfig::new(Role::Client).notification_buffer(8),
    );
    for i in 0..5 {
        agent
            .ext_notification("note", json!({ "i": i }))
            .await
            .unwrap();
    }
    // The handler is stuck on the first; a request/response exchange still completes.
    let e = agent
        .ext_method("nothing/here", json!({}))
        .await
        .unwrap_err();
    assert_eq!(remote(e).code, -32601);
    assert!(order.lock().unwrap().is_empty());
    gate.add_permits(5);
    client.handle().notifications_handled().await;
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
}

/// Dropping the last `AgentChild` closes the connection and kills the agent's process group.
#[tokio::test]
async fn dropping_the_agent_child_kills_the_agent() {
    use acp_native::process::AgentCommand;
    let cmd = AgentCommand::new("/bin/sh")
        .arg("-c")
        .arg("exec sleep 1000");
    let (client, child) =
        transport::spawn_agent(&cmd, Router::new(), DriverConfig::new(Role::Client)).unwrap();
    let exit = child.process().lock().await.exit_status();
    let clone = child.clone();
    drop(child);
    assert!(!client.is_closed(), "a clone still holds it");
    drop(clone);
    let termination = eventually("the agent's death", exit).await;
    assert_eq!(termination.signal(), Some(libc::SIGKILL), "{termination}");
    assert_eq!(
        eventually("closed", client.closed()).await,
        "the agent's handle was dropped"
    );
}

/// Half-close (`printf request | agent`): an agent whose input ends still answers the requests
/// it already read, then closes. Each handler first asks the peer something that nobody answers
/// (the test never does): that call fails with `Closed` only once the EOF is seen, so the
/// answers are necessarily sent after the EOF.
#[tokio::test]
async fn an_agent_answers_what_it_read_before_its_input_ended() {
    let ((cr, mut cw), (ar, aw)) = transport::duplex(64 << 10);
    let router = Router::new().ext_method("test/slow", {
        move |v, cx| async move {
            let client = cx.client();
            let ask = client.request_permission(s::RequestPermissionRequest::new(
                "s",
                s::ToolCallUpdate::new("t", s::ToolCallUpdateFields::new()),
                vec![],
            ));
            let asked = match ask.await {
                Ok(_) => "answered".to_string(),
                Err(e) if e.is_closed() => "closed".to_string(),
                Err(e) => format!("{e}"),
            };
            Ok(json!({"echo": v, "ask": asked}))
        }
    });
    let agent = AgentSideConnection::connect(
        ar,
        aw,
        RpcService::new(router),
        DriverConfig::new(Role::Agent),
    );
    // The last request has no newline: the EOF ends it.
    cw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_test/slow\",\"params\":{\"n\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"_test/slow\",\"params\":{\"n\":2}}")
        .await
        .unwrap();
    cw.shutdown().await.unwrap();
    let mut lines = BufReader::new(cr).lines();
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let line = eventually("the agent's answers", lines.next_line())
            .await
            .unwrap();
        let Some(line) = line else { break };
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v.get("method").is_none() {
            answers.push(v);
        }
    }
    answers.sort_by_key(|v| v["id"].as_u64());
    assert_eq!(answers.len(), 2, "{answers:?}");
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["result"]["echo"]["n"], i + 1, "{a}");
        assert_eq!(a["result"]["ask"], "closed", "{a}");
    }
    // Then it closes: the output ends.
    let rest = eventually("the agent's output to end", async {
        let mut rest = Vec::new();
        while let Some(l) = lines.next_line().await.unwrap() {
            rest.push(l);
        }
        rest
    })
    .await;
    assert!(rest.iter().all(|l| !l.contains("\"result\"")), "{rest:?}");
    assert_eq!(
        eventually("closed", agent.closed()).await,
        "the peer closed the connection"
    );
}

/// A handler that never answers does not keep a half-closed connection open beyond
/// `answer_on_eof`: the connection closes and the request gets the engine's error answer.
#[tokio::test]
async fn a_half_closed_connection_closes_even_if_a_handler_never_answers() {
    let ((cr, mut cw), (ar, aw)) = transport::duplex(64 << 10);
    let router = Router::new().ext_method("test/never", |_v, _cx| async move {
        std::future::pending::<()>().await;
        Ok(json!(null))
    });
    let agent = AgentSideConnection::connect(
        ar,
        aw,
        RpcService::new(router),
        DriverConfig::new(Role::Agent).answer_on_eof(Duration::from_millis(50)),
    );
    cw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"_test/never\"}\n")
        .await
        .unwrap();
    cw.shutdown().await.unwrap();
    let mut lines = BufReader::new(cr).lines();
    let out = eventually("the agent's output to end", async {
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().await.unwrap() {
            out.push(serde_json::from_str::<serde_json::Value>(&l).unwrap());
        }
        out
    })
    .await;
    assert!(
        out.iter().all(|v| v.get("result").is_none()),
        "never answered, yet: {out:?}"
    );
    eventually("closed", agent.closed()).await;
}

/// Wire order: the agent streams `N` updates then answers `session/prompt`; the client's
/// notification handler is slow (it yields to the scheduler many times per update, and every
/// few updates calls the agent itself and awaits the answer). When `prompt` returns, every
/// update must have been through the handler. Before the order guarantee the answer overtook
/// the queued updates (the caller saw a fraction of them). Run on a multi-thread runtime, with
/// the agent on its own tasks, several turns in a row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_reaches_its_caller_after_the_notifications_sent_before_it() {
    const N: usize = 200;
    let agent_router = Router::new()
        .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        })
        .ext_method("test/echo", |v, _| async move { Ok(v) })
        .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
            let client = cx.client();
            for i in 0..N {
                client
                    .session_update(s::SessionNotification::new(
                        p.session_id.clone(),
                        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text(&format!(
                            "{i}"
                        )))),
                    ))
                    .await
                    .map_err(|e| e.to_error_object())?;
            }
            Ok(s::PromptResponse::new(s::StopReason::EndTurn))
        });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let _agent = AgentSideConnection::connect(
        ar,
        aw,
        RpcService::new(agent_router),
        DriverConfig::new(Role::Agent),
    );
    let handled = Arc::new(AtomicUsize::new(0));
    let client_router = Router::new().notification::<typed::SessionUpdate, _, _>({
        let handled = handled.clone();
        move |_n: s::SessionNotification, cx| {
            let handled = handled.clone();
            async move {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
                let count = handled.load(Ordering::SeqCst);
                if count % 50 == 0 {
                    // A notification handler's own call: answered at once, not held behind
                    // the updates queued after this one.
                    let echo = cx
                        .agent()
                        .handle()
                        .ext_method("test/echo", json!({"n": count}), None)
                        .await
                        .expect("echo from inside a notification handler");
                    assert_eq!(echo, json!({"n": count}));
                }
                handled.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let client = ClientSideConnection::connect(
        cr,
        cw,
        RpcService::new(client_router),
        DriverConfig::new(Role::Client),
    )
    .with_timeout(EVENTUALLY);
    client
        .initialize(s::InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    for turn in 1..=3 {
        let done = client
            .prompt(s::PromptRequest::new("s", vec![text("go")]))
            .await
            .unwrap();
        assert_eq!(done.stop_reason, s::StopReason::EndTurn);
        assert_eq!(
            handled.load(Ordering::SeqCst),
            turn * N,
            "turn {turn}: the answer came before the updates sent before it were handled"
        );
    }
}

/// The handle checks an agent's gated `session/update` kinds itself (`notify` needs no round
/// trip to the engine): `plan_removed` is refused until the client advertised `plan`, then it
/// is sent and reaches the client; a client's handle knows what it advertised.
#[tokio::test]
async fn gated_session_updates_wait_for_the_clients_capability() {
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent_router =
        Router::new().route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        });
    let agent = AgentSideConnection::connect(ar, aw, agent_router, DriverConfig::new(Role::Agent));
    let kinds = Arc::new(Mutex::new(Vec::new()));
    let got = Arc::new(tokio::sync::Notify::new());
    let (k, g) = (kinds.clone(), got.clone());
    let client_router = Router::new().notification::<typed::SessionUpdate, _, _>(
        move |n: s::SessionNotification, _cx| {
            let (k, g) = (k.clone(), g.clone());
            async move {
                let v = serde_json::to_value(&n.update).unwrap();
                k.lock()
                    .unwrap()
                    .push(v["sessionUpdate"].as_str().unwrap().to_owned());
                g.notify_waiters();
            }
        },
    );
    let client =
        ClientSideConnection::connect(cr, cw, client_router, DriverConfig::new(Role::Client));
    let removed = || {
        s::SessionNotification::new(
            "s1",
            s::SessionUpdate::PlanRemoved(s::PlanRemoved::new("p1")),
        )
    };

    let e = agent.session_update(removed()).await.unwrap_err();
    assert!(
        matches!(
            e,
            RpcError::Refused(acp_core::Error::CapabilityNotAdvertised {
                capability: "plan",
                ..
            })
        ),
        "{e:?}"
    );
    client
        .initialize(
            s::InitializeRequest::new(ProtocolVersion::V1)
                .client_capabilities(s::ClientCapabilities::new().plan(s::PlanCapabilities::new())),
        )
        .await
        .unwrap();
    assert!(agent.client_capabilities().plan);
    assert!(client.handle().client_capabilities().plan);
    let arrived = got.notified();
    agent.session_update(removed()).await.unwrap();
    eventually("the update", arrived).await;
    assert_eq!(*kinds.lock().unwrap(), ["plan_removed"]);
}
