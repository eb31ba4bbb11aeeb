//! Host-core benchmark: request round-trip latency and notification throughput of the tokio
//! driver, against a bare pipe ping-pong between two processes measured in the same run.
//!
//!     cargo bench -p acp-native --bench host            # full run (~1 min)
//!     cargo bench -p acp-native --bench host -- --quick # small counts
//!
//! The binary re-executes itself for its child processes (`--child-echo`, `--child-agent`).
//! Results go to stdout as a markdown table (the `## acp-native` section of docs/benchmarks.md).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_core::typed;
use acp_core::{ErrorObject, RawValue, Role};
use acp_native::process::{AgentCommand, EnvPolicy};
use acp_native::{
    transport, AgentSideConnection, ClientSideConnection, ConnectionHandle, DriverConfig,
    RequestContext, Router,
};
use agent_client_protocol_schema::v1 as s;

/// The request every round trip sends (about the size of a small real request).
const PING: &str = r#"{"sessionId":"sess_0123456789","modeId":"code","note":"ping"}"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--child-echo") {
        return child_echo();
    }
    if args.iter().any(|a| a == "--child-agent") {
        return child_agent();
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it:
    // then it is a smoke test with tiny counts.
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick");
    let (rt_n, notif_n, rounds) = match (bench, quick) {
        (false, _) => (200, 2_000, 1),
        (true, true) => (2_000, 20_000, 1),
        (true, false) => (20_000, 200_000, 3),
    };
    if !bench {
        eprintln!("smoke run (not `cargo bench`): tiny counts, numbers are not measurements");
    }
    let exe = std::env::current_exe().expect("own path");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut pipe = Vec::new();
    let mut mem = Vec::new();
    let mut sub = Vec::new();
    let mut sub_task = Vec::new();
    let mut n_mem = Vec::new();
    let mut n_sub = Vec::new();
    // Alternate the contestants so drift from other load on the machine hits all of them.
    for round in 0..rounds {
        eprintln!("round {}/{rounds}", round + 1);
        pipe.push(bare_pipe(&exe, rt_n));
        mem.push(rt.block_on(in_memory_roundtrips(rt_n)));
        sub.push(rt.block_on(subprocess_roundtrips(&exe, rt_n)));
        // The caller as a task on the runtime's workers instead of `block_on`'s thread: waking
        // the driver and being woken by it then stays on one worker.
        let e = exe.clone();
        sub_task.push(
            rt.block_on(rt.spawn(async move { subprocess_roundtrips(&e, rt_n).await }))
                .unwrap(),
        );
        n_mem.push(rt.block_on(in_memory_notifications(notif_n)));
        n_sub.push(rt.block_on(subprocess_notifications(&exe, notif_n)));
    }
    let pipe = best(&pipe);
    let mem = best(&mem);
    let sub = best(&sub);
    let sub_task = best(&sub_task);
    let n_mem = n_mem.iter().copied().fold(0.0, f64::max);
    let n_sub = n_sub.iter().copied().fold(0.0, f64::max);

    println!("| measurement | median | p99 | vs bare pipe (median) |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| bare pipe ping-pong, two processes (baseline) | {:.1} µs | {:.1} µs | 1.0× |",
        pipe.0, pipe.1
    );
    println!(
        "| acp-native request round trip, in-memory duplex | {:.1} µs | {:.1} µs | {:.2}× |",
        mem.0,
        mem.1,
        mem.0 / pipe.0
    );
    println!(
        "| acp-native request round trip, subprocess stdio | {:.1} µs | {:.1} µs | {:.2}× |",
        sub.0,
        sub.1,
        sub.0 / pipe.0
    );
    println!(
        "| acp-native request round trip, subprocess stdio, caller spawned on the runtime | {:.1} µs | {:.1} µs | {:.2}× |",
        sub_task.0,
        sub_task.1,
        sub_task.0 / pipe.0
    );
    println!();
    println!("| notification throughput (`session/update`, agent -> client, typed both ends) | messages/s |");
    println!("| --- | ---: |");
    println!("| in-memory duplex | {:.0} |", n_mem);
    println!("| subprocess stdio | {:.0} |", n_sub);
    println!();
    println!(
        "{rt_n} sequential round trips per contestant, {notif_n} notifications, best median of {rounds} alternating rounds; \
         tokio multi-thread runtime with 2 workers; the caller runs in `block_on` (its own thread) \
         unless said otherwise."
    );
}

/// (median, p99) in µs of per-round-trip samples; the round with the lowest median wins.
fn best(rounds: &[Vec<Duration>]) -> (f64, f64) {
    rounds
        .iter()
        .map(|samples| {
            let mut v: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (v[v.len() / 2], v[(v.len() * 99) / 100])
        })
        .min_by(|a, b| a.0.partial_cmp(&b.0).unwrap())
        .unwrap()
}

// ----- baseline: a bare pipe ping-pong between two processes -----

fn child_echo() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut line = String::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        if input.read_line(&mut line).unwrap() == 0 {
            return;
        }
        out.write_all(line.as_bytes()).unwrap();
        out.flush().unwrap();
    }
}

fn bare_pipe(exe: &std::path::Path, n: usize) -> Vec<Duration> {
    let mut child = Command::new(exe)
        .arg("--child-echo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap());
    let msg = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"_ping\",\"params\":{PING}}}\n");
    let mut line = String::new();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        to.write_all(msg.as_bytes()).unwrap();
        to.flush().unwrap();
        line.clear();
        from.read_line(&mut line).unwrap();
        if i >= n / 10 {
            samples.push(t.elapsed()); // the first 10% warm up
        }
        assert_eq!(line, msg);
    }
    drop(to);
    child.wait().unwrap();
    samples
}

// ----- the agent -----

fn agent_router(session_updates: Option<AgentSideConnection>) -> Router {
    let _ = session_updates;
    Router::new()
        .route::<typed::Initialize, _, _>(
            |p: s::InitializeRequest, _cx: RequestContext| async move {
                Ok(s::InitializeResponse::new(p.protocol_version))
            },
        )
        .route_raw("_ping", |p: Option<Box<RawValue>>, _cx| async move {
            Ok(p.unwrap_or_else(|| RawValue::from_string("{}".into()).unwrap()))
        })
        .ext_method("flood", |v, cx| async move {
            let n = v["n"].as_u64().unwrap_or(0);
            let client = cx.client();
            for i in 0..n {
                let chunk = s::ContentChunk::new(format!("chunk {i}").into());
                client
                    .session_update(s::SessionNotification::new(
                        "sess_0123456789",
                        s::SessionUpdate::AgentMessageChunk(chunk),
                    ))
                    .await
                    .map_err(|e| e.to_error_object())?;
            }
            Ok(serde_json::json!({ "sent": n }))
        })
}

fn child_agent() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (stdin, stdout) = transport::stdio();
        let conn = AgentSideConnection::connect(
            stdin,
            stdout,
            agent_router(None),
            DriverConfig::new(Role::Agent),
        );
        conn.closed().await;
    });
}

// ----- the client -----

fn client_router(count: Arc<AtomicUsize>) -> Router {
    Router::new().notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _| {
        let count = count.clone();
        async move {
            if let s::SessionUpdate::AgentMessageChunk(_) = n.update {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
}

async fn roundtrips(h: &ConnectionHandle, n: usize) -> Vec<Duration> {
    let params = RawValue::from_string(PING.into()).unwrap();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        let r = h
            .request("_ping", Some(params.clone()), None)
            .await
            .unwrap();
        if i >= n / 10 {
            samples.push(t.elapsed());
        }
        debug_assert_eq!(r.get(), PING);
    }
    samples
}

fn memory_pair(count: Arc<AtomicUsize>) -> (ClientSideConnection, AgentSideConnection) {
    let ((cr, cw), (ar, aw)) = transport::duplex(256 << 10);
    let agent =
        AgentSideConnection::connect(ar, aw, agent_router(None), DriverConfig::new(Role::Agent));
    let client = ClientSideConnection::connect(
        cr,
        cw,
        client_router(count),
        DriverConfig::new(Role::Client),
    );
    (client, agent)
}

async fn in_memory_roundtrips(n: usize) -> Vec<Duration> {
    let (client, _agent) = memory_pair(Arc::default());
    let r = roundtrips(client.handle(), n).await;
    client.close("done");
    r
}

fn spawn_child(
    exe: &std::path::Path,
    count: Arc<AtomicUsize>,
) -> (ClientSideConnection, transport::AgentChild) {
    let cmd = AgentCommand::new(exe.as_os_str())
        .arg("--child-agent")
        .env(EnvPolicy::default());
    transport::spawn_agent(&cmd, client_router(count), DriverConfig::new(Role::Client)).unwrap()
}

async fn subprocess_roundtrips(exe: &std::path::Path, n: usize) -> Vec<Duration> {
    let (client, child) = spawn_child(exe, Arc::default());
    let r = roundtrips(client.handle(), n).await;
    child.shutdown(Duration::from_secs(5)).await;
    r
}

async fn flood(client: &ClientSideConnection, count: &AtomicUsize, n: usize) -> f64 {
    let t = Instant::now();
    let r = client
        .ext_method("flood", serde_json::json!({ "n": n }))
        .await
        .map_err(ErrorObject::internal)
        .unwrap();
    client.handle().notifications_handled().await;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(r["sent"], n as u64);
    assert_eq!(count.load(Ordering::SeqCst), n);
    n as f64 / secs
}

async fn in_memory_notifications(n: usize) -> f64 {
    let count = Arc::new(AtomicUsize::new(0));
    let (client, _agent) = memory_pair(count.clone());
    let r = flood(&client, &count, n).await;
    client.close("done");
    r
}

async fn subprocess_notifications(exe: &std::path::Path, n: usize) -> f64 {
    let count = Arc::new(AtomicUsize::new(0));
    let (client, child) = spawn_child(exe, count.clone());
    let r = flood(&client, &count, n).await;
    child.shutdown(Duration::from_secs(5)).await;
    r
}
