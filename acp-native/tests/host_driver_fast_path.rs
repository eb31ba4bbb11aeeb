//! The driver's fast path: handlers are polled once on the driver task and answered there when
//! they do not wait; those that wait move to their own task. Panics on either path, slow
//! handlers next to fast ones, notification order across both paths, and two peers writing
//! large messages to each other at once.

mod rpc_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use acp_native::{driver, transport, DriverConfig, Incoming, Router};
use rpc_support::*;
use serde_json::json;

/// A raw client end (`driver::spawn`) against an agent end with `service`.
fn pair<S>(
    service: S,
    config: DriverConfig,
) -> (acp_native::ConnectionHandle, acp_native::ConnectionHandle)
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let agent = driver::spawn(ar, aw, service, config);
    let client = driver::spawn(cr, cw, Router::new(), DriverConfig::new(Role::Client));
    (client, agent)
}

/// Without `CatchPanicLayer`: a handler that panics on its first (inline) poll, one that
/// panics inside the service's `call` itself, and one that panics after waiting (on its own
/// task) are all answered -32603, and the connection goes on answering.
#[tokio::test]
async fn panics_on_the_inline_poll_and_on_the_task_become_internal_errors() {
    let service = tower::service_fn(|req: Incoming| {
        if req.method == "_panic/in_call" {
            panic!("boom in call");
        }
        async move {
            match req.method.as_str() {
                "_panic/first_poll" => panic!("boom on the first poll"),
                "_panic/after_wait" => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    panic!("boom after waiting");
                }
                _ => Ok(req.params.unwrap_or_else(|| raw(json!(null)).unwrap())),
            }
        }
    });
    let (client, _agent) = pair(service, DriverConfig::new(Role::Agent));
    for method in ["_panic/first_poll", "_panic/in_call", "_panic/after_wait"] {
        let e = remote(
            eventually(method, client.request(method, None, None))
                .await
                .unwrap_err(),
        );
        assert_eq!(e.code, -32603, "{method}: {e:?}");
        assert_eq!(
            e.data,
            Some(json!({"details": "the request handler ended without answering"})),
            "{method}"
        );
        let ok = eventually("an echo", client.request("_echo", raw(json!([1])), None))
            .await
            .unwrap();
        assert_eq!(ok.get(), "[1]", "the connection survives {method}");
    }
}

/// A request whose handler waits does not hold up reading nor other requests: while it waits,
/// many quick requests are answered; then it is released and answered too.
#[tokio::test]
async fn a_slow_request_handler_blocks_neither_reading_nor_other_requests() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    let router = Router::new()
        .ext_method("slow", move |v, _cx| {
            let g = g.clone();
            async move {
                g.acquire().await.unwrap().forget();
                Ok(json!({ "slow": v["n"] }))
            }
        })
        .ext_method("fast", |v, _cx| async move { Ok(v) });
    let (client, _agent) = pair(router, DriverConfig::new(Role::Agent));
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.ext_method("slow", json!({ "n": 1 }), None).await }
    });
    for i in 0..200 {
        let v = eventually("a fast answer", client.ext_method("fast", json!([i]), None))
            .await
            .unwrap();
        assert_eq!(v, json!([i]));
    }
    assert!(!slow.is_finished(), "the slow one still waits");
    gate.add_permits(1);
    let v = eventually("the slow answer", slow).await.unwrap().unwrap();
    assert_eq!(v, json!({ "slow": 1 }));
}

/// Notifications stay in order when some handlers finish on their first poll (inline) and
/// others wait (finished by the notification task): no handler starts before the previous one
/// ended, and `notifications_handled` covers both kinds.
#[tokio::test]
async fn notifications_stay_in_order_across_inline_and_waiting_handlers() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let (l, r) = (log.clone(), running.clone());
    let router = Router::new().ext_notification("note", move |v, _cx| {
        let (l, r) = (l.clone(), r.clone());
        async move {
            assert_eq!(r.fetch_add(1, Ordering::SeqCst), 0, "one at a time");
            let i = v["i"].as_u64().unwrap();
            // Every third waits a little (and so moves off the driver).
            if i % 3 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if i % 7 == 0 {
                tokio::task::yield_now().await;
            }
            l.lock().unwrap().push(i);
            r.fetch_sub(1, Ordering::SeqCst);
        }
    });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let sender = driver::spawn(ar, aw, Router::new(), DriverConfig::new(Role::Agent));
    let receiver = driver::spawn(
        cr,
        cw,
        router,
        DriverConfig::new(Role::Client).notification_buffer(4),
    );
    let n = 300u64;
    for i in 0..n {
        sender
            .ext_notification("note", json!({ "i": i }))
            .await
            .unwrap();
    }
    // A round trip after the notifications: they were all read once it completes.
    let e = eventually("a round trip", sender.request("_nothing", None, None))
        .await
        .unwrap_err();
    assert_eq!(remote(e).code, -32601);
    eventually("all handled", receiver.notifications_handled()).await;
    assert_eq!(*log.lock().unwrap(), (0..n).collect::<Vec<_>>());
}

/// A notification handler that panics (inline or after waiting) counts as handled and the
/// next ones still run.
#[tokio::test]
async fn panicking_notification_handlers_count_as_handled() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let router = Router::new().ext_notification("note", move |v, _cx| {
        let s = s.clone();
        async move {
            let i = v["i"].as_u64().unwrap();
            if i == 1 {
                panic!("inline notification panic");
            }
            if i == 3 {
                tokio::task::yield_now().await;
                panic!("notification panic after waiting");
            }
            s.lock().unwrap().push(i);
        }
    });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let sender = driver::spawn(ar, aw, Router::new(), DriverConfig::new(Role::Agent));
    let receiver = driver::spawn(cr, cw, router, DriverConfig::new(Role::Client));
    for i in 0..6 {
        sender
            .ext_notification("note", json!({ "i": i }))
            .await
            .unwrap();
    }
    let _ = eventually("a round trip", sender.request("_nothing", None, None)).await;
    eventually("all handled", receiver.notifications_handled()).await;
    assert_eq!(*seen.lock().unwrap(), [0, 2, 4, 5]);
}

/// Two peers each send the other an 8 MiB request at the same moment, over a 64 KiB pipe:
/// each driver must keep reading while its own message is being written, or both block
/// writing forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_peers_writing_large_messages_to_each_other_both_complete() {
    let size = 8 << 20;
    let router = || {
        Router::new().ext_method("big", |v, _cx| async move {
            let len = v["data"].as_str().map_or(0, str::len);
            Ok(json!({ "len": len }))
        })
    };
    let ((ar, aw), (br, bw)) = transport::duplex(64 << 10);
    let a = driver::spawn(ar, aw, router(), DriverConfig::new(Role::Client));
    let b = driver::spawn(br, bw, router(), DriverConfig::new(Role::Agent));
    let payload = json!({ "data": "x".repeat(size) });
    let (ra, rb) = eventually(
        "both large requests",
        futures::future::join(
            a.ext_method("big", payload.clone(), None),
            b.ext_method("big", payload.clone(), None),
        ),
    )
    .await;
    assert_eq!(ra.unwrap(), json!({ "len": size }));
    assert_eq!(rb.unwrap(), json!({ "len": size }));
}

/// The same on a current-thread runtime, with the large answers going back the other way too.
#[tokio::test]
async fn large_requests_and_answers_cross_on_one_thread() {
    let size = 8 << 20;
    let router = || Router::new().ext_method("echo", |v, _cx| async move { Ok(v) });
    let ((ar, aw), (br, bw)) = transport::duplex(16 << 10);
    let a = driver::spawn(ar, aw, router(), DriverConfig::new(Role::Client));
    let b = driver::spawn(br, bw, router(), DriverConfig::new(Role::Agent));
    let payload = json!({ "data": "y".repeat(size) });
    let (ra, rb) = eventually(
        "both echoes",
        futures::future::join(
            a.ext_method("echo", payload.clone(), None),
            b.ext_method("echo", payload.clone(), None),
        ),
    )
    .await;
    assert!(ra.unwrap() == payload && rb.unwrap() == payload);
}

/// A handler that sends notifications and then answers without waiting (so it is answered on
/// the driver): its notifications still reach the peer before its answer, as they did when
/// both went through the command queue.
#[tokio::test]
async fn what_an_inline_handler_sent_goes_out_before_its_answer() {
    let router = Router::new().ext_method("chatty", |v, cx| async move {
        for i in 0..v["n"].as_u64().unwrap() {
            cx.peer
                .ext_notification("said", json!({ "i": i }))
                .await
                .map_err(|e| e.to_error_object())?;
        }
        Ok(json!({ "done": true }))
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let client_router = Router::new().ext_notification("said", move |v, _cx| {
        let s = s.clone();
        async move { s.lock().unwrap().push(v["i"].as_u64().unwrap()) }
    });
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let _agent = driver::spawn(ar, aw, router, DriverConfig::new(Role::Agent));
    let client = driver::spawn(cr, cw, client_router, DriverConfig::new(Role::Client));
    for n in [1u64, 5, 40] {
        seen.lock().unwrap().clear();
        let r = eventually(
            "chatty",
            client.ext_method("chatty", json!({ "n": n }), None),
        )
        .await
        .unwrap();
        assert_eq!(r, json!({ "done": true }));
        // Read before the answer; handled once `notifications_handled` says so.
        eventually("handled", client.notifications_handled()).await;
        assert_eq!(*seen.lock().unwrap(), (0..n).collect::<Vec<_>>());
    }
}

/// A peer that floods requests and never reads the answers: the answers given inline pile up
/// only until `read_pause_bytes`, then the driver stops reading and the peer's writes block
/// (instead of this process buffering without bound).
#[tokio::test(start_paused = true)]
async fn a_peer_that_does_not_read_its_answers_is_paused() {
    use tokio::io::AsyncWriteExt;
    let answer = "a".repeat(4 << 10);
    let router = Router::new().ext_method("big_answer", move |_v, _cx| {
        let answer = answer.clone();
        async move { Ok(json!(answer)) }
    });
    let ((ar, aw), (_pr, mut pw)) = transport::duplex(16 << 10);
    let mut config = DriverConfig::new(Role::Agent);
    config.read_pause_bytes = 256 << 10;
    config.read_chunk = 4 << 10;
    let _agent = driver::spawn(ar, aw, router, config);
    let sent = Arc::new(AtomicUsize::new(0));
    let flood = tokio::spawn({
        let sent = sent.clone();
        async move {
            for id in 0u64.. {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"_big_answer\",\"params\":{{}}}}\n"
                );
                pw.write_all(line.as_bytes()).await.unwrap();
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    // Paused time only advances when every task is idle: this elapses iff the flood is stuck.
    let r = tokio::time::timeout(Duration::from_secs(3600), flood).await;
    assert!(r.is_err(), "the flooding peer must be blocked");
    let n = sent.load(Ordering::SeqCst);
    // ~4 KiB per answer, ~70 bytes per request: the reads (4 KiB, ~58 requests each) that
    // took the answers past 256 KiB, plus what the 16 KiB inbound pipe holds (~230): about
    // 400 (without the pause it would never stop).
    assert!(n >= 60, "it answered until the pause ({n})");
    assert!(n <= 600, "bounded buffering ({n} requests accepted)");
}
