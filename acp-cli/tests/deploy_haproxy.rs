//! A deployment beyond one machine's process: two `acp serve --http` instances (the demo agent,
//! its sessions in one shared state directory) behind HAProxy (the Debian package), as
//! docs/deployment.md describes:
//!
//! * session affinity for HTTP + SSE: the backend that answered `initialize` (its
//!   `Acp-Connection-Id`) gets every later request of that connection (a stick table learnt from
//!   the response header); a WebSocket is one TCP connection, so it sticks by itself;
//! * every client's turns complete, over SSE and WebSocket, with both backends serving;
//! * when a backend is stopped, its clients' connections fail; each reconnects through HAProxy
//!   (now to the other backend) and continues its session with `session/load`; `acp chat
//!   --connect` does it by itself between two turns.
//!
//! HAProxy is installed with apt-get when missing (scripts/test.sh does it first); the test is
//! skipped, loudly, only when it cannot be.

mod cli_support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use acp_core::Role;
use acp_native::remote::client::{connect, ClientOptions};
use acp_native::{ClientSideConnection, DriverConfig, Router};
use agent_client_protocol_schema::v1 as s;
use cli_support::{acp, TempDir};

const TOKEN: &str = "deploy-test-token-0123456789abcdef";
const CLIENTS_PER_TRANSPORT: usize = 12;
const TURNS: usize = 3;

fn haproxy_works() -> bool {
    Command::new("haproxy")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ensure_haproxy() -> Result<(), String> {
    if haproxy_works() {
        return Ok(());
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "haproxy"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let _ = install();
    if !haproxy_works() {
        let _ = Command::new("apt-get").args(["update", "-q"]).output();
        let out = install();
        if !haproxy_works() {
            return Err(format!(
                "`apt-get install haproxy` failed: {:?}",
                out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            ));
        }
    }
    Ok(())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn backend(dir: &TempDir, name: &str, port: u16) -> Proc {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let child = Command::new(acp())
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .arg("--token-file")
        .arg(dir.join("token"))
        .args(["--", acp(), "demo-agent", "--state-dir"])
        .arg(dir.join("sessions"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start acp serve");
    wait_port(port, name);
    Proc(child)
}

/// The HAProxy configuration of docs/deployment.md, for these ports, plus a stats listener on
/// `stats` (the test's own: it reads the servers' health from it instead of sleeping).
fn haproxy_config(front: u16, a: u16, b: u16, stats: u16) -> String {
    format!(
        r#"global
    log stderr format short local0 warning
defaults
    mode http
    log global
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    option redispatch
    retries 2
frontend acp
    bind 127.0.0.1:{front}
    default_backend agents
backend agents
    balance roundrobin
    # HTTP + SSE: a connection's requests go where its `initialize` went.
    stick-table type string len 64 size 100k expire 1h
    stick store-response res.hdr(Acp-Connection-Id)
    stick on req.hdr(Acp-Connection-Id)
    option httpchk
    http-check send meth GET uri /health
    default-server check inter 300ms fall 1 rise 2
    server a 127.0.0.1:{a}
    server b 127.0.0.1:{b}
listen stats
    bind 127.0.0.1:{stats}
    stats enable
    stats uri /stats
"#
    )
}

/// Waits until HAProxy's health checks hold every server of backend `agents` named in
/// `servers` UP (its stats page as CSV: `pxname,svname,…`, the status in the column named
/// `status`).
async fn servers_up(stats: u16, servers: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    loop {
        if let Ok(csv) = stats_csv(stats).await {
            let mut lines = csv.lines();
            let header: Vec<&str> = lines
                .next()
                .unwrap_or_default()
                .trim_start_matches("# ")
                .split(',')
                .collect();
            let col = |name: &str| header.iter().position(|h| *h == name);
            if let (Some(px), Some(sv), Some(st)) = (col("pxname"), col("svname"), col("status")) {
                let up = lines
                    .map(|l| l.split(',').collect::<Vec<_>>())
                    .filter(|r| r.get(px) == Some(&"agents") && r.get(st) == Some(&"UP"))
                    .filter_map(|r| r.get(sv).map(|s| s.to_string()))
                    .collect::<Vec<_>>();
                if servers.iter().all(|s| up.iter().any(|u| u == s)) {
                    return;
                }
                last = format!("up: {up:?}");
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "HAProxy never saw {servers:?} up ({last})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn stats_csv(port: u16) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    s.write_all(b"GET /stats;csv HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    s.read_to_string(&mut response).await?;
    let (head, mut body) = response.split_once("\r\n\r\n").unwrap_or_default();
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Ok(body.to_owned());
    }
    // HAProxy answers in chunks (even to HTTP/1.0): a hex size line, the bytes, CRLF.
    let mut csv = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        csv.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    Ok(csv)
}

fn opened(dir: &TempDir, name: &str) -> usize {
    std::fs::read_to_string(dir.join(format!("{name}.log")))
        .unwrap_or_default()
        .matches(": connected over ")
        .count()
}

async fn open(url: &str) -> Result<ClientSideConnection, String> {
    let (conn, _link) = connect(
        url,
        &ClientOptions::default().token(TOKEN),
        Router::new(),
        DriverConfig::new(Role::Client),
    )
    .await
    .map_err(|e| e.to_string())?;
    let conn = conn.with_timeout(Duration::from_secs(60));
    conn.initialize(s::InitializeRequest::new(
        agent_client_protocol_schema::ProtocolVersion::V1,
    ))
    .await
    .map_err(|e| format!("initialize: {e}"))?;
    Ok(conn)
}

async fn turn(
    conn: &ClientSideConnection,
    session: &s::SessionId,
    text: &str,
) -> Result<(), String> {
    let answer = conn
        .prompt(s::PromptRequest::new(session.clone(), vec![text.into()]))
        .await
        .map_err(|e| e.to_string())?;
    if answer.stop_reason != s::StopReason::EndTurn {
        return Err(format!("stop reason {:?}", answer.stop_reason));
    }
    Ok(())
}

/// One client: a session, `TURNS` turns; returns its session id.
async fn client(
    url: String,
    cwd: PathBuf,
    n: usize,
) -> Result<(String, ClientSideConnection, s::SessionId), String> {
    let conn = open(&url).await?;
    let session = conn
        .new_session(s::NewSessionRequest::new(cwd))
        .await
        .map_err(|e| format!("session/new: {e}"))?
        .session_id;
    for t in 0..TURNS {
        turn(&conn, &session, &format!("client {n} turn {t}")).await?;
    }
    Ok((url, conn, session))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_backends_behind_haproxy_serve_every_client_and_a_stopped_one_fails_over() {
    if let Err(why) = ensure_haproxy() {
        println!("SKIPPED two_backends_behind_haproxy…: HAProxy is unavailable: {why}");
        eprintln!("SKIPPED: HAProxy is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("deploy");
    std::fs::write(dir.join("token"), TOKEN).unwrap();
    std::fs::create_dir_all(dir.join("sessions")).unwrap();
    let (pa, pb, front, stats) = (free_port(), free_port(), free_port(), free_port());
    let mut a = Some(backend(&dir, "a", pa));
    let b = backend(&dir, "b", pb);
    let config = dir.join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(front, pa, pb, stats)).unwrap();
    let hlog = std::fs::File::create(dir.join("haproxy.log")).unwrap();
    let _haproxy = Proc(
        Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(hlog)
            .spawn()
            .expect("start haproxy"),
    );
    wait_port(front, "haproxy");
    // Both backends up in HAProxy's eyes (health checks pass) before the clients come.
    servers_up(stats, &["a", "b"]).await;

    let cwd = dir.path().to_path_buf();
    let mut tasks = Vec::new();
    for n in 0..2 * CLIENTS_PER_TRANSPORT {
        let url = if n % 2 == 0 {
            format!("http://127.0.0.1:{front}/acp")
        } else {
            format!("ws://127.0.0.1:{front}/acp")
        };
        tasks.push(tokio::spawn(client(url, cwd.clone(), n)));
    }
    let mut clients = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(c) => clients.push(c),
            Err(e) => panic!(
                "a client's turns failed: {e}\nhaproxy log:\n{}",
                std::fs::read_to_string(dir.join("haproxy.log")).unwrap_or_default()
            ),
        }
    }
    let (on_a, on_b) = (opened(&dir, "a"), opened(&dir, "b"));
    assert_eq!(
        on_a + on_b,
        2 * CLIENTS_PER_TRANSPORT,
        "a: {on_a}, b: {on_b}"
    );
    assert!(
        on_a > 0 && on_b > 0,
        "both backends serve: a {on_a}, b {on_b}"
    );

    // Backend a stops. Its clients' next turn fails; each reconnects through HAProxy (to b
    // now) and continues its session with session/load.
    drop(a.take());
    let mut failed_over = 0;
    for (url, conn, session) in clients {
        if turn(&conn, &session, "after the stop").await.is_ok() {
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let conn = loop {
            match open(&url).await {
                Ok(c) => break c,
                Err(e) => {
                    assert!(Instant::now() < deadline, "no reconnection: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        };
        conn.load_session(s::LoadSessionRequest::new(session.clone(), cwd.clone()))
            .await
            .unwrap_or_else(|e| panic!("session/load of {} on the other backend: {e}", session.0));
        turn(&conn, &session, "continued on the other backend")
            .await
            .unwrap_or_else(|e| panic!("a turn after the failover: {e}"));
        failed_over += 1;
    }
    assert_eq!(
        failed_over, on_a,
        "every client of the stopped backend failed over"
    );
    assert!(
        opened(&dir, "b") >= on_b + on_a,
        "the failed-over clients reached b"
    );

    // `acp chat --connect` through HAProxy: its backend stopped between two turns, it
    // reconnects by itself (to the other backend) and the second turn continues the session.
    let a2 = backend(&dir, "a2", pa);
    servers_up(stats, &["a", "b"]).await; // a is back in HAProxy's eyes
    let mut backends = [("a2", Some(a2)), ("b", Some(b))];
    let before: Vec<usize> = backends.iter().map(|(n, _)| opened(&dir, n)).collect();
    let mut chat = tokio::process::Command::new(acp())
        .args(["chat", "--deny", "--connect"])
        .arg(format!("http://127.0.0.1:{front}/acp"))
        .env("ACP_TOKEN", TOKEN)
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", dir.join("xdg"))
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start acp chat --connect");
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut stdin = chat.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(chat.stdout.take().unwrap()).lines();
    stdin
        .write_all(b"first through the balancer\n")
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let line = tokio::time::timeout_at(deadline, stdout.next_line())
            .await
            .expect("the first turn's answer")
            .unwrap()
            .expect("acp chat ended early");
        if line.contains("OK, I did not write") {
            break;
        }
    }
    let serving = backends
        .iter()
        .zip(&before)
        .position(|((n, _), b)| opened(&dir, n) > *b)
        .expect("one backend got the chat's connection");
    // stderr is read as it comes: the drop is noticed while idle (the SSE stream ends) and the
    // chat reconnects before the next prompt is typed. (A prompt sent into a dropped
    // connection is not sent again after the reconnection: it may have reached the agent.)
    let mut stderr = tokio::io::BufReader::new(chat.stderr.take().unwrap()).lines();
    backends[serving].1.take(); // stopped
    let mut err = String::new();
    while !err.contains("reconnected to") {
        let line = tokio::time::timeout_at(deadline, stderr.next_line())
            .await
            .unwrap_or_else(|_| panic!("no reconnection within 60 s:\n{err}"))
            .unwrap()
            .unwrap_or_else(|| panic!("acp chat ended:\n{err}"));
        err.push_str(&line);
        err.push('\n');
    }
    stdin.write_all(b"second after the stop\n").await.unwrap();
    drop(stdin);
    let mut rest = String::new();
    while let Some(line) = tokio::time::timeout_at(deadline, stdout.next_line())
        .await
        .expect("acp chat ends")
        .unwrap()
    {
        rest.push_str(&line);
        rest.push('\n');
    }
    while let Ok(Some(line)) = stderr.next_line().await {
        err.push_str(&line);
        err.push('\n');
    }
    let status = chat.wait().await.unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        rest.contains("You said: \"second after the stop\""),
        "{rest}\n{err}"
    );
}
