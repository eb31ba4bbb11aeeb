//! Replays the conformance vectors (`tests/vectors/*.transcript`, format in
//! `tests/vectors/README.md`) through the tokio driver over a real transport: the scripted
//! peer's bytes go through an in-memory pipe into a driven connection, and its answers are read
//! back from the pipe. Local commands map to the host API:
//!
//! | transcript | host |
//! | --- | --- |
//! | `> bytes`, `>> bytes` | written to the pipe |
//! | `< line` | read from the pipe |
//! | `@ t` | paused tokio time advanced to `t` ms after the start |
//! | `$ sendRequest` | `ConnectionHandle::request` (spawned; its result is the response event) |
//! | `$ notify` | `ConnectionHandle::notify` |
//! | `$ respond` / `respondError` | the incoming service's answer for that request |
//! | `$ cancelRequest` | dropping the request's future |
//! | `$ close` | `close_with_reason` |
//! | `$ feedEof` | the peer shuts its write side |
//! | `! request` | the service receives it (matched by the peer's id) |
//! | `! notification` | the service receives it, in order |
//! | `! response` / `requestFailed` | the request's future resolves with it |
//! | `! autoAnswered` / `cancelRequested` | the request's cancellation token fires |
//! | `! closed` | `closed()` resolves with the reason |
//!
//! Not observable through the host API, so skipped: `! protocolError` (logged), `?` getters,
//! and the value of failures of `respond` (`throws`; the host logs them).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::{BatchPolicy, Config, ErrorObject, RawValue, Role};
use acp_native::{driver, transport, ConnectionHandle, DriverConfig, Incoming, RpcError};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(60);

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let h: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&h, 16).expect("\\xHH"));
            }
            other => panic!("bad escape \\{other:?}"),
        }
    }
    out
}

fn config(header: &Value) -> Config {
    let role = match header["role"].as_str() {
        Some("client") => Role::Client,
        Some("agent") => Role::Agent,
        other => panic!("bad role {other:?}"),
    };
    let mut c = Config::new(role);
    for (k, v) in header.as_object().unwrap() {
        match k.as_str() {
            "role" => {}
            "maxMessageBytes" => c.max_message_bytes = v.as_u64().unwrap() as usize,
            "batchPolicy" => {
                c.batch_policy = match v.as_str() {
                    Some("seed") => BatchPolicy::Seed,
                    Some("rejectAll") => BatchPolicy::RejectAll,
                    other => panic!("bad batchPolicy {other:?}"),
                }
            }
            "requestTimeoutMs" => c.default_request_timeout = v.as_u64(),
            "incomingTimeoutMs" => c.incoming_request_timeout = v.as_u64(),
            "permissionTimeoutMs" => c.permission_timeout = v.as_u64(),
            "maxIncomingInFlight" => c.max_incoming_in_flight = v.as_u64().unwrap() as usize,
            "enforceCapabilities" => c.enforce_capabilities = v.as_bool().unwrap(),
            other => panic!("unknown header key {other}"),
        }
    }
    c
}

type Answer = oneshot::Sender<Result<Box<RawValue>, ErrorObject>>;

/// What the recording service saw.
struct Seen {
    request: Incoming,
    answer: Option<Answer>,
}

/// The incoming service: hands every request to the test and answers with what the test says
/// (never, if the test drops the answer: the engine then answers on its own); records
/// notifications in order.
fn recording_service(
    requests: mpsc::UnboundedSender<(Incoming, Answer)>,
    notifications: mpsc::UnboundedSender<Incoming>,
) -> impl tower::Service<
    Incoming,
    Response = Box<RawValue>,
    Error = ErrorObject,
    Future = BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>,
> + Clone {
    tower::service_fn(move |i: Incoming| {
        let (requests, notifications) = (requests.clone(), notifications.clone());
        async move {
            if i.is_notification() {
                let _ = notifications.send(i);
                return Ok(RawValue::from_string("null".into()).unwrap());
            }
            let (tx, rx) = oneshot::channel();
            let _ = requests.send((i, tx));
            match rx.await {
                Ok(r) => r,
                Err(_) => futures::future::pending().await,
            }
        }
        .boxed()
    })
}

struct Runner {
    handle: ConnectionHandle,
    start: Instant,
    /// Feed the peer's bytes one write per byte (the reader then sees arbitrary chunks).
    bytewise: bool,
    peer_write: Option<WriteHalf<DuplexStream>>,
    peer_lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    requests_rx: mpsc::UnboundedReceiver<(Incoming, Answer)>,
    notifications_rx: mpsc::UnboundedReceiver<Incoming>,
    /// Requests received but not yet claimed by a `! request` step.
    unclaimed: VecDeque<(Incoming, Answer)>,
    /// Claimed requests by token.
    tokens: HashMap<u64, Seen>,
    next_id: u64,
    calls: HashMap<u64, JoinHandle<Result<Box<RawValue>, RpcError>>>,
    cancelled: Arc<Mutex<Vec<u64>>>,
}

fn id_of(i: &Incoming) -> Value {
    serde_json::to_value(i.id.as_ref().unwrap()).unwrap()
}

fn params_of(v: &Value) -> Option<Box<RawValue>> {
    match v.get("params") {
        None | Some(Value::Null) => None,
        Some(p) => Some(serde_json::value::to_raw_value(p).unwrap()),
    }
}

fn raw_to_value(r: &Option<Box<RawValue>>) -> Option<Value> {
    r.as_ref().map(|p| serde_json::from_str(p.get()).unwrap())
}

async fn wait<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

impl Runner {
    fn new(header: &Value, bytewise: bool) -> Runner {
        let ((lr, lw), (pr, pw)) = transport::duplex(1 << 20);
        let (rq_tx, requests_rx) = mpsc::unbounded_channel();
        let (n_tx, notifications_rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let handle = driver::spawn(
            lr,
            lw,
            recording_service(rq_tx, n_tx),
            DriverConfig::with_core(config(header)),
        );
        Runner {
            handle,
            start,
            bytewise,
            peer_write: Some(pw),
            peer_lines: BufReader::new(pr).lines(),
            requests_rx,
            notifications_rx,
            unclaimed: VecDeque::new(),
            tokens: HashMap::new(),
            next_id: 0,
            calls: HashMap::new(),
            cancelled: Arc::default(),
        }
    }

    async fn feed(&mut self, bytes: &[u8]) {
        let w = self.peer_write.as_mut().expect("feed after feedEof");
        let r = if self.bytewise {
            let mut r = Ok(());
            for b in bytes {
                r = w.write_all(std::slice::from_ref(b)).await;
                if r.is_err() {
                    break;
                }
                tokio::task::yield_now().await; // let the reader take partial chunks
            }
            r
        } else {
            w.write_all(bytes).await
        };
        if let Err(e) = r {
            // After a close the host stops reading (input is ignored, as the vectors say).
            assert!(
                self.handle.is_closed(),
                "write to the host failed while open: {e}"
            );
        }
    }

    async fn expect_line(&mut self, want: &Value) -> Result<(), String> {
        let line = wait("a transmitted line", self.peer_lines.next_line())
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the connection sent nothing more (EOF)")?;
        let got: Value =
            serde_json::from_str(&line).map_err(|e| format!("not JSON: {line}: {e}"))?;
        if json_eq(&got, want) {
            Ok(())
        } else {
            Err(format!("transmitted {line}"))
        }
    }

    async fn claim_request(&mut self, token: u64, want: &Value) -> Result<(), String> {
        let id = &want["id"];
        loop {
            if let Some(pos) = self
                .unclaimed
                .iter()
                .position(|(i, _)| json_eq(&id_of(i), id))
            {
                let (i, answer) = self.unclaimed.remove(pos).unwrap();
                let got = json!({
                    "type": "request", "token": token, "id": id_of(&i), "method": i.method,
                });
                let mut got = got;
                if let Some(p) = raw_to_value(&i.params) {
                    got["params"] = p;
                }
                if !json_eq(&got, want) {
                    return Err(format!("request {got}"));
                }
                self.tokens.insert(
                    token,
                    Seen {
                        request: i,
                        answer: Some(answer),
                    },
                );
                return Ok(());
            }
            let next = wait("a request", self.requests_rx.recv())
                .await
                .ok_or("service gone")?;
            self.unclaimed.push_back(next);
        }
    }

    async fn expect_event(&mut self, want: &Value) -> Result<(), String> {
        match want["type"].as_str().unwrap() {
            "request" => {
                self.claim_request(want["token"].as_u64().unwrap(), want)
                    .await
            }
            "notification" => {
                let n = wait("a notification", self.notifications_rx.recv())
                    .await
                    .ok_or("service gone")?;
                let mut got = json!({"type": "notification", "method": n.method});
                if let Some(p) = raw_to_value(&n.params) {
                    got["params"] = p;
                }
                if json_eq(&got, want) {
                    Ok(())
                } else {
                    Err(format!("notification {got}"))
                }
            }
            "response" | "requestFailed" => {
                let id = want["requestId"].as_u64().unwrap();
                if self.cancelled.lock().unwrap().contains(&id) {
                    // Its future was dropped (that is how a host cancels): nothing to observe
                    // but the `$/cancel_request` line, checked by `<`.
                    return if want["kind"] == "cancelled" {
                        Ok(())
                    } else {
                        Err(format!("cancelled request {id} expected as {want}"))
                    };
                }
                let call = self.calls.remove(&id).ok_or(format!("no request {id}"))?;
                let r = wait("a response", call).await.map_err(|e| e.to_string())?;
                let got = match r {
                    Ok(raw) => json!({
                        "type": "response", "requestId": id, "method": want["method"],
                        "result": serde_json::from_str::<Value>(raw.get()).unwrap(),
                    }),
                    Err(RpcError::Call(e)) => json!({
                        "type": "requestFailed", "requestId": id, "method": want["method"],
                        "kind": e.kind(), "error": e.to_error_object(),
                    }),
                    Err(e) => return Err(format!("request {id} failed locally: {e:?}")),
                };
                if json_eq(&got, want) {
                    Ok(())
                } else {
                    Err(format!("event {got}"))
                }
            }
            "autoAnswered" | "cancelRequested" => {
                let token = want["token"].as_u64().unwrap();
                let seen = self
                    .tokens
                    .get(&token)
                    .ok_or(format!("no request token {token}"))?;
                wait(
                    "the request's cancellation",
                    seen.request.cancel.cancelled(),
                )
                .await;
                if want["type"] == "autoAnswered" {
                    // The engine answered: a later respond is refused (the host just logs it).
                    self.tokens.get_mut(&token).unwrap().answer = None;
                }
                Ok(())
            }
            "closed" => {
                let reason = wait("closed", self.handle.closed()).await;
                if json_eq(&json!(reason), &want["reason"]) {
                    Ok(())
                } else {
                    Err(format!("closed with {reason:?}"))
                }
            }
            "protocolError" => Ok(()), // logged by the host, not surfaced
            other => Err(format!("unknown event type {other}")),
        }
    }

    async fn command(&mut self, c: &Value) -> Result<(), String> {
        let throws = c.get("throws").and_then(Value::as_str);
        match c["cmd"].as_str().unwrap() {
            "sendRequest" => {
                let method = c["method"].as_str().unwrap().to_owned();
                let params = params_of(c);
                let timeout = c
                    .get("timeoutMs")
                    .and_then(Value::as_u64)
                    .map(Duration::from_millis);
                let h = self.handle.clone();
                let mut fut = Box::pin(async move { h.request(method, params, timeout).await });
                // One poll queues it (so ids follow command order).
                let first = futures::poll!(&mut fut);
                if let Some(name) = throws {
                    let r = match first {
                        std::task::Poll::Ready(r) => r,
                        std::task::Poll::Pending => wait("a refusal", fut).await,
                    };
                    return match r {
                        Err(RpcError::Refused(e)) if e.name() == name => Ok(()),
                        // The host reports calls on a closed connection as `Closed { reason }`.
                        Err(e) if name == "ConnectionClosed" && e.is_closed() => Ok(()),
                        other => Err(format!("expected {name}, got {other:?}")),
                    };
                }
                let id = self.next_id;
                self.next_id += 1;
                if let Some(r) = c.get("returns") {
                    if r.as_u64() != Some(id) {
                        return Err(format!("the host would have used id {id}"));
                    }
                }
                let done = match first {
                    std::task::Poll::Ready(r) => tokio::spawn(async move { r }),
                    std::task::Poll::Pending => tokio::spawn(fut),
                };
                self.calls.insert(id, done);
                Ok(())
            }
            "notify" => {
                let r = self
                    .handle
                    .notify(c["method"].as_str().unwrap(), params_of(c))
                    .await;
                match (r, throws) {
                    (Ok(()), None) => Ok(()),
                    (Err(RpcError::Refused(e)), Some(name)) if e.name() == name => Ok(()),
                    (Err(e), Some("ConnectionClosed")) if e.is_closed() => Ok(()),
                    (r, _) => Err(format!("notify: {r:?}")),
                }
            }
            "respond" | "respondError" => {
                let token = c["token"].as_u64().unwrap();
                let result = if c["cmd"] == "respond" {
                    Ok(serde_json::value::to_raw_value(&c["result"]).unwrap())
                } else {
                    let mut e = ErrorObject::new(
                        c["code"].as_i64().unwrap().into(),
                        c["message"].as_str().unwrap(),
                    );
                    if let Some(d) = c.get("data").filter(|d| !d.is_null()) {
                        e = e.with_data(d.clone());
                    }
                    Err(e)
                };
                match self.tokens.get_mut(&token).and_then(|s| s.answer.take()) {
                    Some(answer) => {
                        let _ = answer.send(result);
                        Ok(())
                    }
                    // Already answered / unknown: the engine refuses; the host logs it.
                    None if throws.is_some() => Ok(()),
                    None => Err(format!("no pending request with token {token}")),
                }
            }
            "cancelRequest" => {
                let id = c["requestId"].as_u64().unwrap();
                match self.calls.remove(&id) {
                    Some(call) => {
                        call.abort();
                        let _ = call.await;
                        self.cancelled.lock().unwrap().push(id);
                        Ok(())
                    }
                    None if throws.is_some() => Ok(()),
                    None => Err(format!("no request {id} to cancel")),
                }
            }
            "close" => {
                self.handle.close_with_reason(c["reason"].as_str().unwrap());
                Ok(())
            }
            "feedEof" => {
                let mut w = self.peer_write.take().expect("one EOF");
                w.shutdown().await.unwrap();
                Ok(())
            }
            other => Err(format!("unknown command {other}")),
        }
    }

    async fn set_clock(&mut self, ms: u64) {
        let at = self.start + Duration::from_millis(ms);
        let now = Instant::now();
        assert!(
            at >= now,
            "the clock already passed {ms} ms (auto-advanced while idle?)"
        );
        tokio::time::advance(at - now).await;
    }
}

async fn replay(transcript: &str, bytewise: bool) -> Result<usize, String> {
    let mut r: Option<Runner> = None;
    let mut steps = 0;
    for (n, line) in transcript.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (tag, arg) = line.split_once(' ').unwrap_or((line, ""));
        let fail = |why: String| format!("line {}: {why}\n  {line}", n + 1);
        if tag == "=" {
            r = Some(Runner::new(&serde_json::from_str(arg).unwrap(), bytewise));
            continue;
        }
        let r = r.as_mut().ok_or_else(|| fail("no header".into()))?;
        let json = || serde_json::from_str::<Value>(arg).unwrap();
        steps += 1;
        match tag {
            ">" => r.feed(format!("{arg}\n").as_bytes()).await,
            ">>" => r.feed(&unescape(arg)).await,
            "<" => r.expect_line(&json()).await.map_err(fail)?,
            "!" => r.expect_event(&json()).await.map_err(fail)?,
            "$" => r.command(&json()).await.map_err(fail)?,
            "@" => r.set_clock(arg.parse().unwrap()).await,
            "?" => steps -= 1,
            other => return Err(fail(format!("unknown tag {other}"))),
        }
    }
    Ok(steps)
}

/// Every vector file, through the driver over an in-memory pipe, on paused time: once with the
/// feeds as written, once with every byte written on its own.
#[test]
fn vectors_replay_through_the_driver() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .expect("tests/vectors exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "transcript"))
        // `unstable-*` vectors need the feature `unstable` (the draft methods' rules).
        .filter(|p| {
            cfg!(feature = "unstable")
                || !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("unstable-"))
        })
        // `v2-*` vectors need the feature `unstable_protocol_v2` (ACP v2's rules).
        .filter(|p| {
            cfg!(feature = "unstable_protocol_v2")
                || !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("v2-"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vectors found");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for bytewise in [false, true] {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let name = if bytewise {
                format!("{name} (bytewise)")
            } else {
                name
            };
            match rt.block_on(replay(&text, bytewise)) {
                Ok(steps) => eprintln!("{name}: {steps} steps ok"),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} vector(s) diverged:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
