//! acp-native contestant (acp-rs's tokio + tower host), through its public API (API.md):
//! `AgentSideConnection` / `ClientSideConnection` with `Router`s of typed handlers, over
//! `transport::duplex` in memory, or over a child process's stdio (`transport::spawn_agent`
//! on the client side, `transport::stdio()` in the child agent).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_core::typed;
use acp_core::typed::schema::v1 as s;
use acp_core::{ErrorObject, Role};
use acp_native::process::AgentCommand;
use acp_native::{transport, AgentSideConnection, ClientSideConnection, DriverConfig, Router};
use futures::StreamExt;

use crate::common::*;
use crate::messages::*;

type R<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

#[derive(Default)]
struct Probe {
    point_rss_kb: AtomicU64,
}

fn config(role: Role) -> DriverConfig {
    let mut c = DriverConfig::new(role);
    // Scale holds 10,000+ requests in flight; the engine refuses more than 1024 by default.
    c.core.max_incoming_in_flight = 1 << 20;
    c
}

/// The agent's router for one scenario.
fn agent_router(sc: Scenario, probe: Arc<Probe>) -> Router {
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
    let arrived = Arc::new(AtomicUsize::new(0));
    let (all_tx, all_rx) = tokio::sync::watch::channel(false);
    let all_tx = Arc::new(all_tx);
    Router::new()
        .route::<typed::Initialize, _, _>(|_p: s::InitializeRequest, _cx| async move {
            Ok(initialize_response())
        })
        .route::<typed::NewSession, _, _>(move |p: s::NewSessionRequest, _cx| {
            let arrived = arrived.clone();
            let all_tx = all_tx.clone();
            let mut all_rx = all_rx.clone();
            let probe = probe.clone();
            async move {
                if p.cwd.as_os_str().len() != CWD.len() {
                    return Err(ErrorObject::invalid_params("wrong cwd"));
                }
                if scale_n > 0 {
                    // Hold every request until all of them are in flight.
                    if arrived.fetch_add(1, Ordering::SeqCst) + 1 == scale_n {
                        probe.point_rss_kb.store(rss_kb(), Ordering::SeqCst);
                        let _ = all_tx.send(true);
                    } else {
                        let _ = all_rx.wait_for(|v| *v).await;
                    }
                }
                Ok(new_session_response())
            }
        })
        .route::<typed::Prompt, _, _>(move |_p: s::PromptRequest, cx| {
            let content = content.lock().unwrap().take();
            async move {
                let client = cx.client();
                for _ in 0..notify_n {
                    client
                        .session_update(chunk_notification())
                        .await
                        .map_err(|e| e.to_error_object())?;
                }
                if let Some(c) = content {
                    client
                        .write_text_file(write_request(c))
                        .await
                        .map_err(|e| e.to_error_object())?;
                }
                Ok(prompt_response())
            }
        })
}

fn client_router(sc: Scenario, count: Arc<AtomicUsize>) -> Router {
    let expect = match sc {
        Scenario::Large(b) => b.saturating_sub(1024),
        _ => 0,
    };
    Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            if check_chunk(&n) {
                count.fetch_add(1, Ordering::Relaxed);
            }
            async {}
        })
        .route::<typed::WriteTextFile, _, _>(move |w: s::WriteTextFileRequest, _cx| async move {
            if w.content.len() != expect {
                return Err(ErrorObject::invalid_params("wrong content length"));
            }
            drop(w);
            Ok(s::WriteTextFileResponse::new())
        })
}

async fn measure(
    client: ClientSideConnection,
    sc: Scenario,
    count: &AtomicUsize,
    probe: &Probe,
    base: u64,
) -> R<Outcome> {
    client.initialize(initialize_request()).await.map_err(err)?;
    match sc {
        Scenario::Notify(n) | Scenario::Large(n) => {
            let t0 = Instant::now();
            client.prompt(prompt_request()).await.map_err(err)?;
            if matches!(sc, Scenario::Notify(_)) {
                // Notification handlers run in order on their own task; wait for the last.
                let mut spins = 0u64;
                while count.load(Ordering::Relaxed) < n {
                    tokio::task::yield_now().await;
                    spins += 1;
                    if spins > 50_000_000 {
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
                let r = client
                    .new_session(new_session_request())
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
                .map(|_| {
                    let client = client.clone();
                    async move {
                        let t = Instant::now();
                        client
                            .new_session(new_session_request())
                            .await
                            .map_err(err)?;
                        Ok(t.elapsed())
                    }
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
                (0..n).map(|_| client.new_session(new_session_request())),
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

/// Client and agent in this process over `transport::duplex` (64 KiB each way).
pub fn run_duplex(sc: Scenario) -> R<Outcome> {
    let rt = crate::common::runtime();
    rt.block_on(async move {
        let base = rss_kb();
        let ((cr, cw), (ar, aw)) = transport::duplex(64 * 1024);
        let probe = Arc::new(Probe::default());
        let count = Arc::new(AtomicUsize::new(0));
        let p2 = probe.clone();
        let agent = AgentSideConnection::connect_with(ar, aw, config(Role::Agent), move |_c| {
            agent_router(sc, p2)
        });
        let c2 = count.clone();
        let client = ClientSideConnection::connect_with(cr, cw, config(Role::Client), move |_c| {
            client_router(sc, c2)
        });
        let out = measure(client.clone(), sc, &count, &probe, base).await;
        client.close("done");
        agent.close("done");
        out
    })
}

/// The client here; the acp-native agent in a child (`acp-bench serve native ...`), spawned
/// and supervised by `transport::spawn_agent`.
pub fn run_stdio(sc: Scenario, exe: &std::path::Path) -> R<Outcome> {
    let rt = crate::common::runtime();
    rt.block_on(async move {
        let base = rss_kb();
        let mut args = vec!["serve".to_string(), "native".to_string()];
        args.extend(sc.args());
        // The agent inherits the whole environment, as the other stdio contestants' children
        // do (so allocator tunables and ACP_BENCH_* reach it).
        let cmd = AgentCommand::new(exe.as_os_str())
            .args(args)
            .env(acp_native::process::EnvPolicy::inherit_all());
        let count = Arc::new(AtomicUsize::new(0));
        let (client, child) =
            transport::spawn_agent(&cmd, client_router(sc, count.clone()), config(Role::Client))
                .map_err(err)?;
        let out = measure(client.clone(), sc, &count, &Probe::default(), base).await;
        debug_hwm("client");
        client.close("done");
        let _ = child.shutdown(Duration::from_secs(2)).await;
        out
    })
}

/// Child side of `run_stdio`: the acp-native agent on this process's stdin/stdout.
pub fn serve(sc: Scenario) -> R<()> {
    let rt = crate::common::runtime();
    rt.block_on(async move {
        let (stdin, stdout) = transport::stdio();
        let conn =
            AgentSideConnection::connect_with(stdin, stdout, config(Role::Agent), move |_c| {
                agent_router(sc, Arc::new(Probe::default()))
            });
        conn.closed().await;
        debug_hwm("agent");
        Ok(())
    })
}

/// With ACP_BENCH_DEBUG_HWM=FILE, appends this process's peak RSS (VmHWM) to FILE: which end
/// of a stdio pair peaks (wait4 only gives the larger of the two).
fn debug_hwm(who: &str) {
    if let Ok(path) = std::env::var("ACP_BENCH_DEBUG_HWM") {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM")) {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{who} {line}");
            }
        }
    }
}
