//! The driver's answer budget (`driver::reserve_answer_bytes`): large answers to the peer's
//! requests are reserved before they are built and held until they are written, so what a
//! batch of concurrent requests costs is bounded by the budget, not by their number; a single
//! answer over the budget still goes (alone); a peer that stops reading gets errors naming the
//! limit instead of waiting handlers.

mod rpc_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use acp_native::{driver, transport, DriverConfig, Incoming};
use rpc_support::eventually;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What the handlers of one test saw.
#[derive(Default)]
struct Count {
    /// Handlers that got their reservation.
    reserved: AtomicUsize,
    /// Answers the peer has read completely.
    read: AtomicUsize,
    /// Reservations granted while more than `max_ahead` answers were reserved but unread.
    too_far_ahead: AtomicBool,
}

/// A service answering every request with a string of `size` bytes, reserved first; it checks
/// that at most `max_ahead` reserved answers are not yet read by the peer.
fn big_answers(
    size: usize,
    max_ahead: usize,
    count: Arc<Count>,
) -> impl tower::Service<
    Incoming,
    Response = Box<RawValue>,
    Error = ErrorObject,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    tower::service_fn(move |_req: Incoming| {
        let count = count.clone();
        async move {
            driver::reserve_answer_bytes(size + 2).await?;
            let reserved = count.reserved.fetch_add(1, Ordering::SeqCst) + 1;
            if reserved > count.read.load(Ordering::SeqCst) + max_ahead {
                count.too_far_ahead.store(true, Ordering::SeqCst);
            }
            let answer = serde_json::value::to_raw_value(&"x".repeat(size)).unwrap();
            Ok::<_, ErrorObject>(answer)
        }
    })
}

fn request(id: usize) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"_big\"}}\n")
}

/// Six concurrent requests whose answers are 256 KiB each, under a 512 KiB budget, to a peer
/// reading everything: all are answered, and no handler got its reservation while more than
/// two answers (plus the one partly in the 64 KiB pipe) were unread by the peer.
#[tokio::test]
async fn large_answers_are_built_only_as_the_peer_reads_them() {
    const N: usize = 256 << 10;
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let count = Arc::new(Count::default());
    let config = DriverConfig::new(Role::Agent).answer_budget(2 * (N + 2));
    let _agent = driver::spawn(ar, aw, big_answers(N, 3, count.clone()), config);
    for id in 0..6 {
        pw.write_all(request(id).as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(pr).lines();
    for _ in 0..6 {
        let line = eventually("an answer", lines.next_line()).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(v["result"].as_str().map(str::len), Some(N), "{v:.200}");
        count.read.fetch_add(1, Ordering::SeqCst);
    }
    assert_eq!(count.reserved.load(Ordering::SeqCst), 6);
    assert!(
        !count.too_far_ahead.load(Ordering::SeqCst),
        "answers were built faster than the peer read them"
    );
}

/// One answer larger than the whole budget is not refused: it waits for the budget to be
/// free and takes all of it; the next one waits until it is written.
#[tokio::test]
async fn an_answer_larger_than_the_budget_goes_alone() {
    const N: usize = 1 << 20;
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let count = Arc::new(Count::default());
    let config = DriverConfig::new(Role::Agent).answer_budget(64 << 10);
    let _agent = driver::spawn(ar, aw, big_answers(N, 2, count.clone()), config);
    for id in 0..3 {
        pw.write_all(request(id).as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(pr).lines();
    for _ in 0..3 {
        let line = eventually("an answer", lines.next_line()).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(v["result"].as_str().map(str::len), Some(N), "{v:.200}");
        count.read.fetch_add(1, Ordering::SeqCst);
    }
    assert!(!count.too_far_ahead.load(Ordering::SeqCst));
}

/// A peer that sends requests and never reads: two answers fit the budget and are built; the
/// other handlers wait, and once the writer has made no progress for `answer_stall` they fail
/// with an error naming the limit (so nothing waits forever). Paused time: the clock only
/// moves when everything is idle, i.e. when the handlers really wait.
#[tokio::test(start_paused = true)]
async fn a_peer_that_stops_reading_gets_errors_naming_the_budget() {
    const N: usize = 256 << 10;
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let count = Arc::new(Count::default());
    let config = DriverConfig::new(Role::Agent)
        .answer_budget(2 * (N + 2))
        .answer_stall(Duration::from_secs(10));
    let _agent = driver::spawn(ar, aw, big_answers(N, usize::MAX, count.clone()), config);
    for id in 0..6 {
        pw.write_all(request(id).as_bytes()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(count.reserved.load(Ordering::SeqCst), 2);
    let mut lines = BufReader::new(pr).lines();
    let (mut results, mut errors) = (0, 0);
    for _ in 0..6 {
        let line = eventually("an answer", lines.next_line()).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v.get("result").is_some() {
            results += 1;
        } else {
            let e = &v["error"];
            assert_eq!(e["code"], -32603, "{v}");
            assert_eq!(e["data"]["reason"], "answer_budget", "{v}");
            assert_eq!(e["data"]["budget"], 2 * (N + 2), "{v}");
            let message = e["message"].as_str().unwrap();
            assert!(message.contains("answer budget"), "{message}");
            errors += 1;
        }
    }
    assert_eq!((results, errors), (2, 4));
}

/// A handler that reserved and then failed, or that panicked, gives its reservation back: the
/// next one gets the whole budget at once (it would fail after `answer_stall` otherwise).
#[tokio::test]
async fn reservations_of_failed_handlers_are_given_back() {
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let service = tower::service_fn(|req: Incoming| async move {
        driver::reserve_answer_bytes(1 << 20).await?;
        match req.method.as_str() {
            "_fail" => Err(ErrorObject::internal("failed on purpose")),
            "_panic" => panic!("on purpose"),
            _ => Ok(serde_json::value::to_raw_value("ok").unwrap()),
        }
    });
    let config = DriverConfig::new(Role::Agent)
        .answer_budget(1 << 20)
        .answer_stall(Duration::from_secs(3600));
    let _agent = driver::spawn(ar, aw, service, config);
    let mut lines = BufReader::new(pr).lines();
    for (id, method) in ["_fail", "_panic", "_ok", "_ok"].iter().enumerate() {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"}}\n");
        pw.write_all(line.as_bytes()).await.unwrap();
        let line = eventually("an answer", lines.next_line()).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(v["id"], id, "{v}");
        if method == &"_ok" {
            assert_eq!(v["result"], "ok", "{v}");
        }
    }
}

/// A reservation made smaller gives the difference back at once: a second handler gets it
/// while the first still holds the rest.
#[tokio::test]
async fn a_smaller_reservation_gives_the_difference_back() {
    let ((ar, aw), (pr, mut pw)) = transport::duplex(64 << 10);
    let second_done = Arc::new(tokio::sync::Notify::new());
    let service = tower::service_fn({
        let second_done = second_done.clone();
        move |req: Incoming| {
            let second_done = second_done.clone();
            async move {
                if req.method == "_first" {
                    assert_eq!(driver::reserve_answer_bytes(4 << 20).await?, 1 << 20);
                    // The estimate was too high: keep a quarter.
                    assert_eq!(driver::reserve_answer_bytes(256 << 10).await?, 256 << 10);
                    second_done.notified().await;
                } else {
                    assert_eq!(driver::reserve_answer_bytes(768 << 10).await?, 768 << 10);
                    second_done.notify_one();
                }
                Ok::<_, ErrorObject>(serde_json::value::to_raw_value(&req.method).unwrap())
            }
        }
    });
    let config = DriverConfig::new(Role::Agent)
        .answer_budget(1 << 20)
        .answer_stall(Duration::from_secs(3600));
    let _agent = driver::spawn(ar, aw, service, config);
    pw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_first\"}\n")
        .await
        .unwrap();
    pw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"_second\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(pr).lines();
    let mut got = Vec::new();
    for _ in 0..2 {
        let line = eventually("an answer", lines.next_line()).await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        got.push(v["result"].as_str().unwrap().to_owned());
    }
    assert_eq!(got, ["_second", "_first"]);
}

/// Outside a request handler (a task of its own, a notification handler) there is no answer
/// to reserve for: it returns 0 at once.
#[tokio::test]
async fn reservations_outside_request_handlers_are_free() {
    assert_eq!(driver::reserve_answer_bytes(1 << 30).await, Ok(0));
    let ((ar, aw), (_pr, mut pw)) = transport::duplex(64 << 10);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let service = tower::service_fn(move |_req: Incoming| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(driver::reserve_answer_bytes(1 << 30).await);
            Ok::<_, ErrorObject>(serde_json::value::to_raw_value(&()).unwrap())
        }
    });
    let config = DriverConfig::new(Role::Agent).answer_budget(1024);
    let _agent = driver::spawn(ar, aw, service, config);
    pw.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"_note\"}\n")
        .await
        .unwrap();
    assert_eq!(eventually("the notification", rx.recv()).await, Some(Ok(0)));
}

/// `json_string_len` is exactly the length serde_json writes.
#[test]
fn json_string_len_is_what_serde_json_writes() {
    let all_ascii: String = (0u8..128).map(char::from).collect();
    for text in [
        "",
        "plain",
        "\"quoted\" \\ back",
        "\x01\x02\x1f\x7f",
        "\u{8}\t\n\u{c}\r",
        "é€😀\u{85}\u{2028}",
        &all_ascii,
    ] {
        assert_eq!(
            driver::json_string_len(text),
            serde_json::to_string(text).unwrap().len(),
            "{text:?}"
        );
    }
}
