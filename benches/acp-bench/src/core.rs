//! acp-core contestant: the sans-IO engine, client and agent wired by the in-memory `Pair`
//! (bytes handed over after every message, no batching advantage: one pump per message).

use std::time::{Duration, Instant};

use acp_core::pair::Pair;
use acp_core::typed::{self, decode_notification, decode_params, decode_result};
use acp_core::{Config, Event, RequestOptions, Role};

use crate::common::*;
use crate::messages::*;

type R<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn pair() -> Pair {
    let mut c = Config::new(Role::Client);
    let mut a = Config::new(Role::Agent);
    // Scale runs 10,000+ requests in flight; the engine refuses more than 1024 by default.
    c.max_incoming_in_flight = 1 << 20;
    a.max_incoming_in_flight = 1 << 20;
    Pair::with_configs(c, a)
}

fn agent_request(p: &mut Pair) -> R<(u64, String, Option<Box<acp_core::RawValue>>)> {
    match p.agent.poll_event() {
        Some(Event::Request {
            token,
            method,
            params,
            ..
        }) => Ok((token, method, params)),
        other => Err(format!("agent expected a request, got {other:?}")),
    }
}

fn client_response(p: &mut Pair) -> R<(u64, Box<acp_core::RawValue>)> {
    match p.client.poll_event() {
        Some(Event::Response {
            id,
            result: Ok(raw),
            ..
        }) => Ok((id, raw)),
        other => Err(format!("client expected a response, got {other:?}")),
    }
}

fn initialize(p: &mut Pair) -> R<()> {
    p.client
        .request::<typed::Initialize>(&initialize_request(), RequestOptions::default(), 0)
        .map_err(err)?;
    p.pump();
    let (token, _, params) = agent_request(p)?;
    decode_params::<typed::Initialize>(params.as_deref()).map_err(err)?;
    p.agent
        .respond_typed::<typed::Initialize>(token, &initialize_response())
        .map_err(err)?;
    p.pump();
    let (_, raw) = client_response(p)?;
    decode_result::<typed::Initialize>(&raw).map_err(err)?;
    Ok(())
}

pub fn run(sc: Scenario) -> R<Outcome> {
    let base = rss_kb();
    let mut p = pair();
    initialize(&mut p)?;
    match sc {
        Scenario::Notify(n) => {
            let t0 = Instant::now();
            p.client
                .request::<typed::Prompt>(&prompt_request(), RequestOptions::default(), 0)
                .map_err(err)?;
            p.pump();
            let (token, _, _) = agent_request(&mut p)?;
            let mut count = 0usize;
            for _ in 0..n {
                p.agent
                    .notify_typed::<typed::SessionUpdate>(&chunk_notification())
                    .map_err(err)?;
                p.pump();
                while let Some(ev) = p.client.poll_event() {
                    match ev {
                        Event::Notification { params, .. } => {
                            let note =
                                decode_notification::<typed::SessionUpdate>(params.as_deref())
                                    .map_err(err)?;
                            if !check_chunk(&note) {
                                return Err("wrong notification".into());
                            }
                            count += 1;
                        }
                        other => return Err(format!("unexpected {other:?}")),
                    }
                }
            }
            p.agent
                .respond_typed::<typed::Prompt>(token, &prompt_response())
                .map_err(err)?;
            p.pump();
            let (_, raw) = client_response(&mut p)?;
            decode_result::<typed::Prompt>(&raw).map_err(err)?;
            let secs = t0.elapsed().as_secs_f64();
            if count != n {
                return Err(format!("got {count} of {n} notifications"));
            }
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
                let id = p
                    .client
                    .request::<typed::NewSession>(
                        &new_session_request(),
                        RequestOptions::default(),
                        0,
                    )
                    .map_err(err)?;
                p.pump();
                answer_new_sessions(&mut p)?;
                p.pump();
                let (got, raw) = client_response(&mut p)?;
                let r = decode_result::<typed::NewSession>(&raw).map_err(err)?;
                if got != id || r.session_id.0.as_ref() != SESSION_ID {
                    return Err("wrong response".into());
                }
                lat.push(t.elapsed());
            }
            let mut o = Outcome::from_latencies(lat, t0.elapsed().as_secs_f64());
            o.base_rss_kb = base;
            Ok(o)
        }
        Scenario::RtConc(n, c) => {
            let mut sent_at: Vec<Instant> = Vec::with_capacity(n);
            let mut lat = vec![Duration::ZERO; n];
            let first_id = p.client.pending_outgoing() as u64; // ids continue after initialize
            let _ = first_id;
            let mut base_id = None;
            let (mut sent, mut done) = (0usize, 0usize);
            let t0 = Instant::now();
            while done < n {
                while sent < n && sent - done < c {
                    let id = p
                        .client
                        .request::<typed::NewSession>(
                            &new_session_request(),
                            RequestOptions::default(),
                            0,
                        )
                        .map_err(err)?;
                    base_id.get_or_insert(id);
                    sent_at.push(Instant::now());
                    sent += 1;
                    p.pump();
                }
                answer_new_sessions(&mut p)?;
                p.pump();
                while let Some(ev) = p.client.poll_event() {
                    let Event::Response {
                        id,
                        result: Ok(raw),
                        ..
                    } = ev
                    else {
                        return Err(format!("unexpected {ev:?}"));
                    };
                    decode_result::<typed::NewSession>(&raw).map_err(err)?;
                    let i = (id - base_id.unwrap()) as usize;
                    lat[i] = sent_at[i].elapsed();
                    done += 1;
                }
            }
            let mut o = Outcome::from_latencies(lat, t0.elapsed().as_secs_f64());
            o.base_rss_kb = base;
            Ok(o)
        }
        Scenario::Scale(n) => {
            let base = rss_kb();
            let t0 = Instant::now();
            for _ in 0..n {
                p.client
                    .request::<typed::NewSession>(
                        &new_session_request(),
                        RequestOptions::default(),
                        0,
                    )
                    .map_err(err)?;
                p.pump();
            }
            let mut tokens = Vec::with_capacity(n);
            while let Some(ev) = p.agent.poll_event() {
                let Event::Request { token, params, .. } = ev else {
                    return Err(format!("unexpected {ev:?}"));
                };
                decode_params::<typed::NewSession>(params.as_deref()).map_err(err)?;
                tokens.push(token);
            }
            if tokens.len() != n || p.client.pending_outgoing() != n {
                return Err(format!("{} of {n} pending", tokens.len()));
            }
            let point = rss_kb();
            for t in tokens {
                p.agent
                    .respond_typed::<typed::NewSession>(t, &new_session_response())
                    .map_err(err)?;
                p.pump();
            }
            let mut done = 0;
            while let Some(ev) = p.client.poll_event() {
                let Event::Response {
                    result: Ok(raw), ..
                } = ev
                else {
                    return Err(format!("unexpected {ev:?}"));
                };
                decode_result::<typed::NewSession>(&raw).map_err(err)?;
                done += 1;
            }
            let secs = t0.elapsed().as_secs_f64();
            if done != n {
                return Err(format!("{done} of {n} answered"));
            }
            Ok(Outcome {
                ok: true,
                secs,
                per_sec: n as f64 / secs,
                base_rss_kb: base,
                point_rss_kb: point,
                ..Default::default()
            })
        }
        Scenario::Large(bytes) => {
            let base = rss_kb();
            let content = file_content(bytes);
            let t0 = Instant::now();
            p.client
                .request::<typed::Prompt>(&prompt_request(), RequestOptions::default(), 0)
                .map_err(err)?;
            p.pump();
            let (prompt_token, _, _) = agent_request(&mut p)?;
            let req = write_request(content);
            p.agent
                .request::<typed::WriteTextFile>(&req, RequestOptions::default(), 0)
                .map_err(err)?;
            drop(req);
            p.pump();
            let (token, _, params) = agent_request_from_client(&mut p)?;
            let w = decode_params::<typed::WriteTextFile>(params.as_deref()).map_err(err)?;
            drop(params);
            if w.content.len() != bytes.saturating_sub(1024) {
                return Err(format!("content {} bytes", w.content.len()));
            }
            drop(w);
            p.client
                .respond_typed::<typed::WriteTextFile>(
                    token,
                    &typed::schema::v1::WriteTextFileResponse::new(),
                )
                .map_err(err)?;
            p.pump();
            match p.agent.poll_event() {
                Some(Event::Response { result: Ok(_), .. }) => {}
                other => return Err(format!("agent expected the write response, got {other:?}")),
            }
            p.agent
                .respond_typed::<typed::Prompt>(prompt_token, &prompt_response())
                .map_err(err)?;
            p.pump();
            client_response(&mut p)?;
            let secs = t0.elapsed().as_secs_f64();
            Ok(Outcome {
                ok: true,
                secs,
                per_sec: bytes as f64 / secs,
                base_rss_kb: base,
                ..Default::default()
            })
        }
    }
}

fn agent_request_from_client(p: &mut Pair) -> R<(u64, String, Option<Box<acp_core::RawValue>>)> {
    match p.client.poll_event() {
        Some(Event::Request {
            token,
            method,
            params,
            ..
        }) => Ok((token, method, params)),
        other => Err(format!("client expected a request, got {other:?}")),
    }
}

/// The agent answers every pending `session/new` (decoding each).
fn answer_new_sessions(p: &mut Pair) -> R<()> {
    while let Some(ev) = p.agent.poll_event() {
        let Event::Request { token, params, .. } = ev else {
            return Err(format!("unexpected {ev:?}"));
        };
        let req = decode_params::<typed::NewSession>(params.as_deref()).map_err(err)?;
        if req.cwd.as_os_str().len() != CWD.len() {
            return Err("wrong cwd".into());
        }
        p.agent
            .respond_typed::<typed::NewSession>(token, &new_session_response())
            .map_err(err)?;
    }
    Ok(())
}
