//! The official Rust SDK (`agent-client-protocol` 5.x) contestant of benches/acp-bench, through
//! its public API only:
//! `Agent.v1()` / `Client.v1()` builders with typed handlers, connected by `ByteStreams` over an
//! in-memory `tokio::io::duplex` pair, or over a child process's stdio (the agent then runs
//! the SDK's own `Stdio` adapter).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{Agent, ByteStreams, Client, ConnectTo};
use futures::StreamExt;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::common::*;
use crate::messages::*;

type R<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Shared between the in-process agent and the measuring client (RSS when all are pending).
#[derive(Default)]
pub struct Probe {
    pub point_rss_kb: AtomicU64,
}

/// Runs the SDK agent for one scenario on `transport` until the client hangs up.
pub async fn agent<T: ConnectTo<Agent> + 'static>(
    transport: T,
    sc: Scenario,
    probe: Arc<Probe>,
) -> R<()> {
    let notify_n = match sc {
        Scenario::Notify(n) => n,
        _ => 0,
    };
    let scale_n = match sc {
        Scenario::Scale(n) => n,
        _ => 0,
    };
    let content = Arc::new(Mutex::new(match sc {
        Scenario::Large(b) => Some(file_content(b)),
        _ => None,
    }));
    let held: Arc<Mutex<Vec<agent_client_protocol::v1::Responder<s::NewSessionResponse>>>> =
        Arc::default();
    Agent
        .v1()
        .name("bench-agent")
        .on_receive_request(
            async move |_init: s::InitializeRequest, responder, _cx| {
                responder.respond(initialize_response())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: s::NewSessionRequest, responder, _cx| {
                if req.cwd.as_os_str().len() != CWD.len() {
                    return Err(agent_client_protocol::Error::invalid_params());
                }
                if scale_n == 0 {
                    return responder.respond(new_session_response());
                }
                let mut h = held.lock().unwrap();
                h.push(responder);
                if h.len() == scale_n {
                    probe.point_rss_kb.store(rss_kb(), Ordering::SeqCst);
                    for r in h.drain(..) {
                        r.respond(new_session_response())?;
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: s::PromptRequest, responder, cx| {
                for _ in 0..notify_n {
                    cx.send_notification(chunk_notification())?;
                }
                let taken = content.lock().unwrap().take();
                match taken {
                    None => responder.respond(prompt_response()),
                    Some(c) => {
                        cx.prepare_request(write_request(c))
                            .on_receiving_result(async move |r| {
                                r?;
                                responder.respond(prompt_response())
                            })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await
        .map_err(err)
}

/// Runs the SDK client for one scenario; returns the measurement.
pub async fn client<T: ConnectTo<Client> + 'static>(
    transport: T,
    sc: Scenario,
    probe: Arc<Probe>,
) -> R<Outcome> {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let expect_content = match sc {
        Scenario::Large(b) => b.saturating_sub(1024),
        _ => 0,
    };
    let base = rss_kb();
    Client
        .v1()
        .name("bench-client")
        .on_receive_notification(
            async move |n: s::SessionNotification, _cx| {
                if check_chunk(&n) {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |w: s::WriteTextFileRequest, responder, _cx| {
                if w.content.len() != expect_content {
                    return Err(agent_client_protocol::Error::invalid_params());
                }
                drop(w);
                responder.respond(s::WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx| {
            cx.send_request(initialize_request()).block_task().await?;
            let out = measure(&cx, sc, &count, &probe, base).await;
            Ok(out)
        })
        .await
        .map_err(err)?
}

async fn measure(
    cx: &agent_client_protocol::v1::ConnectionTo<Agent>,
    sc: Scenario,
    count: &AtomicUsize,
    probe: &Probe,
    base: u64,
) -> R<Outcome> {
    match sc {
        Scenario::Notify(n) | Scenario::Large(n) => {
            let t0 = Instant::now();
            cx.send_request(prompt_request())
                .block_task()
                .await
                .map_err(err)?;
            if matches!(sc, Scenario::Notify(_)) {
                // Handlers run in arrival order, so all should be counted already.
                let mut spins = 0;
                while count.load(Ordering::Relaxed) < n {
                    tokio::task::yield_now().await;
                    spins += 1;
                    if spins > 10_000_000 {
                        return Err(format!("got {} of {n}", count.load(Ordering::Relaxed)));
                    }
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            Ok(Outcome {
                ok: true,
                secs,
                per_sec: n as f64 / secs,
                base_rss_kb: base,
                ..Default::default()
            })
        }
        Scenario::RtSeq(n) => {
            let mut lat = Vec::with_capacity(n);
            let t0 = Instant::now();
            for _ in 0..n {
                let t = Instant::now();
                let r = cx
                    .send_request(new_session_request())
                    .block_task()
                    .await
                    .map_err(err)?;
                if r.session_id.0.as_ref() != SESSION_ID {
                    return Err("wrong response".into());
                }
                lat.push(t.elapsed());
            }
            let mut o = Outcome::from_latencies(lat, t0.elapsed().as_secs_f64());
            o.base_rss_kb = base;
            Ok(o)
        }
        Scenario::RtConc(n, c) => {
            let t0 = Instant::now();
            let lat: Vec<R<Duration>> = futures::stream::iter(0..n)
                .map(|_| async move {
                    let t = Instant::now();
                    cx.send_request(new_session_request())
                        .block_task()
                        .await
                        .map_err(err)?;
                    Ok(t.elapsed())
                })
                .buffer_unordered(c)
                .collect()
                .await;
            let secs = t0.elapsed().as_secs_f64();
            let lat = lat.into_iter().collect::<R<Vec<_>>>()?;
            let mut o = Outcome::from_latencies(lat, secs);
            o.base_rss_kb = base;
            Ok(o)
        }
        Scenario::Scale(n) => {
            let base = rss_kb();
            let t0 = Instant::now();
            let all = futures::future::join_all(
                (0..n).map(|_| cx.send_request(new_session_request()).block_task()),
            )
            .await;
            let secs = t0.elapsed().as_secs_f64();
            for r in all {
                r.map_err(err)?;
            }
            Ok(Outcome {
                ok: true,
                secs,
                per_sec: n as f64 / secs,
                base_rss_kb: base,
                point_rss_kb: probe.point_rss_kb.load(Ordering::SeqCst),
                ..Default::default()
            })
        }
    }
}

/// In-process: SDK client and SDK agent over an in-memory duplex (64 KiB buffers each way).
pub fn run_duplex(sc: Scenario) -> R<Outcome> {
    let rt = runtime();
    rt.block_on(async move {
        let (c2a_w, c2a_r) = tokio::io::duplex(64 * 1024);
        let (a2c_w, a2c_r) = tokio::io::duplex(64 * 1024);
        let probe = Arc::new(Probe::default());
        let agent_t = ByteStreams::new(a2c_w.compat_write(), c2a_r.compat());
        let client_t = ByteStreams::new(c2a_w.compat_write(), a2c_r.compat());
        let agent_task = tokio::spawn(agent(agent_t, sc, probe.clone()));
        let out = client(client_t, sc, probe).await;
        agent_task.abort();
        out
    })
}

/// The client in this process, the SDK agent in a child (`rust-sdk-peer serve sdk ...`) on
/// stdio.
pub fn run_stdio(sc: Scenario, exe: &std::path::Path) -> R<Outcome> {
    let rt = runtime();
    rt.block_on(async move {
        let mut child = tokio::process::Command::new(exe)
            .arg("serve")
            .arg("sdk")
            .args(sc.args())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(err)?;
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let t = ByteStreams::new(stdin.compat_write(), stdout.compat());
        let out = client(t, sc, Arc::new(Probe::default())).await;
        let pid = child.id();
        let status = child.wait().await.map_err(err)?;
        let _ = (pid, status);
        out
    })
}

/// Child side of `run_stdio`: the SDK agent on this process's stdin/stdout.
pub fn serve(sc: Scenario) -> R<()> {
    let rt = runtime();
    rt.block_on(agent(
        agent_client_protocol::Stdio::new(),
        sc,
        Arc::new(Probe::default()),
    ))
}
