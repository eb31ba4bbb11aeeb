//! Real pipes between two processes: the bare floor (an echo child, no protocol at all) and
//! acp-core driven by a minimal blocking loop on each side (child agent on stdin/stdout).

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use acp_core::typed::{self, decode_notification, decode_params, decode_result};
use acp_core::{Config, Connection, Event, RequestOptions, Role};

use crate::common::*;
use crate::messages::*;

type R<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn spawn(exe: &std::path::Path, args: &[String]) -> R<(Child, ChildStdin, ChildStdout)> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(err)?;
    let i = child.stdin.take().unwrap();
    let o = child.stdout.take().unwrap();
    Ok((child, i, o))
}

/// The size of one `session/new` request line as acp-core writes it.
fn request_line() -> Vec<u8> {
    let mut c: Connection = Connection::new(Config::new(Role::Client));
    c.request::<typed::NewSession>(&new_session_request(), RequestOptions::default(), 0)
        .unwrap();
    c.poll_transmit().unwrap()
}

// ----- the floor -----

/// Child: echo stdin to stdout until EOF.
pub fn serve_echo() -> R<()> {
    let mut i = std::io::stdin().lock();
    let mut o = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = i.read(&mut buf).map_err(err)?;
        if n == 0 {
            return Ok(());
        }
        o.write_all(&buf[..n]).map_err(err)?;
        o.flush().map_err(err)?;
    }
}

pub fn run_pipe(sc: Scenario, exe: &std::path::Path) -> R<Outcome> {
    let (mut child, mut to, mut from) = spawn(exe, &["serve".into(), "pipe".into()])?;
    let line = request_line();
    let mut buf = vec![0u8; 64 * 1024];
    let base = rss_kb();
    let mut read_lines = |want: usize, from: &mut ChildStdout| -> R<()> {
        let mut got = 0;
        while got < want {
            let n = from.read(&mut buf).map_err(err)?;
            if n == 0 {
                return Err("echo child closed".into());
            }
            got += memchr_count(&buf[..n]);
        }
        Ok(())
    };
    let out = match sc {
        Scenario::RtSeq(n) => {
            let mut lat = Vec::with_capacity(n);
            let t0 = Instant::now();
            for _ in 0..n {
                let t = Instant::now();
                to.write_all(&line).map_err(err)?;
                read_lines(1, &mut from)?;
                lat.push(t.elapsed());
            }
            Outcome::from_latencies(lat, t0.elapsed().as_secs_f64())
        }
        Scenario::RtConc(n, c) => {
            // Windows of C lines: write C, read C back. Per-line latency = its window's time.
            let mut lat = Vec::with_capacity(n);
            let t0 = Instant::now();
            let mut done = 0;
            let window: Vec<u8> = line.repeat(c);
            while done < n {
                let k = c.min(n - done);
                let t = Instant::now();
                to.write_all(&window[..k * line.len()]).map_err(err)?;
                read_lines(k, &mut from)?;
                let e = t.elapsed();
                lat.extend(std::iter::repeat(e).take(k));
                done += k;
            }
            Outcome::from_latencies(lat, t0.elapsed().as_secs_f64())
        }
        _ => return Err("the pipe floor only measures round trips".into()),
    };
    drop(to);
    child.wait().map_err(err)?;
    Ok(Outcome {
        base_rss_kb: base,
        ..out
    })
}

// ----- the floor on tokio's reactor -----

/// Child: echo stdin to stdout until EOF, both pipes driven by tokio's reactor (as
/// `acp_native::transport::stdio()` drives them), on the runtime the acp-native contestants use.
pub fn serve_echo_tokio() -> R<()> {
    use std::os::fd::AsFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::unix::pipe;
    crate::common::runtime().block_on(async {
        let fd = std::io::stdin().as_fd().try_clone_to_owned().map_err(err)?;
        let mut i = pipe::Receiver::from_owned_fd(fd).map_err(err)?;
        let fd = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(err)?;
        let mut o = pipe::Sender::from_owned_fd(fd).map_err(err)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = i.read(&mut buf).await.map_err(err)?;
            if n == 0 {
                return Ok(());
            }
            o.write_all(&buf[..n]).await.map_err(err)?;
        }
    })
}

/// The bare ping-pong with both ends on tokio (a spawned `tokio::process` child): what the
/// runtime alone costs per round trip, the floor for any tokio-based stdio host.
pub fn run_pipe_tokio(sc: Scenario, exe: &std::path::Path) -> R<Outcome> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    crate::common::runtime().block_on(async move {
        let mut child = tokio::process::Command::new(exe)
            .args(["serve", "pipe-tokio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(err)?;
        let mut to = child.stdin.take().unwrap();
        let mut from = child.stdout.take().unwrap();
        let line = request_line();
        let mut buf = vec![0u8; 64 * 1024];
        let base = rss_kb();
        let (n, c) = match sc {
            Scenario::RtSeq(n) => (n, 1),
            Scenario::RtConc(n, c) => (n, c),
            _ => return Err("the pipe floor only measures round trips".into()),
        };
        // Windows of C lines, as `run_pipe` does (C = 1: sequential).
        let window: Vec<u8> = line.repeat(c);
        let mut lat = Vec::with_capacity(n);
        let t0 = Instant::now();
        let mut done = 0;
        while done < n {
            let k = c.min(n - done);
            let t = Instant::now();
            to.write_all(&window[..k * line.len()]).await.map_err(err)?;
            let mut got = 0;
            while got < k {
                let r = from.read(&mut buf).await.map_err(err)?;
                if r == 0 {
                    return Err("echo child closed".into());
                }
                got += memchr_count(&buf[..r]);
            }
            let e = t.elapsed();
            lat.extend(std::iter::repeat(e).take(k));
            done += k;
        }
        let out = Outcome::from_latencies(lat, t0.elapsed().as_secs_f64());
        drop(to);
        child.wait().await.map_err(err)?;
        Ok(Outcome {
            base_rss_kb: base,
            ..out
        })
    })
}

fn memchr_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

// ----- acp-core over pipes -----

/// Flushes once this much output is pending (a host writes what the engine has queued).
const FLUSH_AT: usize = 16 * 1024;

/// Child: an acp-core agent on stdin/stdout, driven by a blocking read/handle/write loop.
pub fn serve_core(sc: Scenario) -> R<()> {
    let mut cfg = Config::new(Role::Agent);
    cfg.max_incoming_in_flight = 1 << 20;
    let mut agent: Connection = Connection::new(cfg);
    let mut i = std::io::stdin().lock();
    let mut o = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    let notify_n = match sc {
        Scenario::Notify(n) => n,
        _ => 0,
    };
    loop {
        let n = i.read(&mut buf).map_err(err)?;
        if n == 0 {
            return Ok(());
        }
        agent.handle_bytes(&buf[..n], 0);
        while let Some(ev) = agent.poll_event() {
            let Event::Request {
                token,
                method,
                params,
                ..
            } = ev
            else {
                continue;
            };
            match method.as_str() {
                "initialize" => {
                    decode_params::<typed::Initialize>(params.as_deref()).map_err(err)?;
                    agent
                        .respond_typed::<typed::Initialize>(token, &initialize_response())
                        .map_err(err)?;
                }
                "session/new" => {
                    decode_params::<typed::NewSession>(params.as_deref()).map_err(err)?;
                    agent
                        .respond_typed::<typed::NewSession>(token, &new_session_response())
                        .map_err(err)?;
                }
                "session/prompt" => {
                    for _ in 0..notify_n {
                        agent
                            .notify_typed::<typed::SessionUpdate>(&chunk_notification())
                            .map_err(err)?;
                        agent.poll_transmit_into(&mut out);
                        if out.len() >= FLUSH_AT {
                            o.write_all(&out).map_err(err)?;
                            out.clear();
                        }
                    }
                    agent
                        .respond_typed::<typed::Prompt>(token, &prompt_response())
                        .map_err(err)?;
                }
                _ => {}
            }
        }
        if agent.poll_transmit_into(&mut out) || !out.is_empty() {
            o.write_all(&out).map_err(err)?;
            o.flush().map_err(err)?;
            out.clear();
        }
    }
}

struct CoreClient {
    conn: Connection,
    to: ChildStdin,
    from: ChildStdout,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl CoreClient {
    fn flush(&mut self) -> R<()> {
        if self.conn.poll_transmit_into(&mut self.out) {
            self.to.write_all(&self.out).map_err(err)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads once and feeds the engine.
    fn read(&mut self) -> R<()> {
        let n = self.from.read(&mut self.buf).map_err(err)?;
        if n == 0 {
            return Err("agent closed".into());
        }
        self.conn.handle_bytes(&self.buf[..n], 0);
        Ok(())
    }

    fn response(&mut self) -> R<(u64, Box<acp_core::RawValue>)> {
        loop {
            match self.conn.poll_event() {
                Some(Event::Response {
                    id,
                    result: Ok(raw),
                    ..
                }) => return Ok((id, raw)),
                Some(other) => return Err(format!("unexpected {other:?}")),
                None => self.read()?,
            }
        }
    }
}

pub fn run_core(sc: Scenario, exe: &std::path::Path) -> R<Outcome> {
    let mut args = vec!["serve".to_string(), "core".to_string()];
    args.extend(sc.args());
    let (mut child, to, from) = spawn(exe, &args)?;
    let mut c = CoreClient {
        conn: Connection::new(Config::new(Role::Client)),
        to,
        from,
        buf: vec![0u8; 64 * 1024],
        out: Vec::with_capacity(64 * 1024),
    };
    let base = rss_kb();
    c.conn
        .request::<typed::Initialize>(&initialize_request(), RequestOptions::default(), 0)
        .map_err(err)?;
    c.flush()?;
    let (_, raw) = c.response()?;
    decode_result::<typed::Initialize>(&raw).map_err(err)?;
    let out = match sc {
        Scenario::Notify(n) => {
            let t0 = Instant::now();
            c.conn
                .request::<typed::Prompt>(&prompt_request(), RequestOptions::default(), 0)
                .map_err(err)?;
            c.flush()?;
            let mut count = 0;
            'outer: loop {
                while let Some(ev) = c.conn.poll_event() {
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
                        Event::Response { result: Ok(_), .. } => break 'outer,
                        other => return Err(format!("unexpected {other:?}")),
                    }
                }
                c.read()?;
            }
            let secs = t0.elapsed().as_secs_f64();
            if count != n {
                return Err(format!("got {count} of {n}"));
            }
            Outcome {
                ok: true,
                secs,
                per_sec: n as f64 / secs,
                ..Default::default()
            }
        }
        Scenario::RtSeq(n) => {
            let mut lat = Vec::with_capacity(n);
            let t0 = Instant::now();
            for _ in 0..n {
                let t = Instant::now();
                c.conn
                    .request::<typed::NewSession>(
                        &new_session_request(),
                        RequestOptions::default(),
                        0,
                    )
                    .map_err(err)?;
                c.flush()?;
                let (_, raw) = c.response()?;
                decode_result::<typed::NewSession>(&raw).map_err(err)?;
                lat.push(t.elapsed());
            }
            Outcome::from_latencies(lat, t0.elapsed().as_secs_f64())
        }
        Scenario::RtConc(n, conc) => {
            let mut sent_at: Vec<Instant> = Vec::with_capacity(n);
            let mut lat = vec![Duration::ZERO; n];
            let mut base_id = None;
            let (mut sent, mut done) = (0usize, 0usize);
            let t0 = Instant::now();
            while done < n {
                while sent < n && sent - done < conc {
                    let id = c
                        .conn
                        .request::<typed::NewSession>(
                            &new_session_request(),
                            RequestOptions::default(),
                            0,
                        )
                        .map_err(err)?;
                    base_id.get_or_insert(id);
                    sent_at.push(Instant::now());
                    sent += 1;
                }
                c.flush()?;
                let (id, raw) = c.response()?;
                decode_result::<typed::NewSession>(&raw).map_err(err)?;
                let i = (id - base_id.unwrap()) as usize;
                lat[i] = sent_at[i].elapsed();
                done += 1;
                while let Some(ev) = c.conn.poll_event() {
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
            Outcome::from_latencies(lat, t0.elapsed().as_secs_f64())
        }
        _ => return Err("stdio contestants measure notify and round trips".into()),
    };
    drop(c);
    child.wait().map_err(err)?;
    Ok(Outcome {
        base_rss_kb: base,
        ..out
    })
}
