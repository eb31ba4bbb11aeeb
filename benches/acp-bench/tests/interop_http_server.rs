//! Interop: the official HTTP transport's client (`agent-client-protocol-http` 5, `HttpClient`,
//! driving the official SDK's `Client.v1()`) against our server, `acp serve --http ADDR --
//! acp demo-agent`, over HTTP + SSE (`http://…/acp`) and over WebSocket (`ws://…/acp`).
//!
//! Our server requires a bearer token; the official client sends it through its reqwest
//! default headers on every POST, SSE GET, DELETE and the WebSocket handshake. Each transport:
//! a full turn (plan, thought, streamed chunks, a permission request answered by the SDK
//! client, the file written through the client's `fs/write_text_file`, `end_turn`), then
//! `session/cancel` during a slow turn (`--delay-ms`), which must end `cancelled`. A wrong
//! token is refused (HTTP 401) before any agent starts.
//!
//! The `acp` binary: `$ACP_BIN`, else `target/release/acp` or `target/debug/acp` of the main
//! workspace. CI runs this with `scripts/interop-rust-sdk.sh`. Every test is bounded (`BOUND`).

#![cfg(feature = "native")]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol as sdk;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::Client;
use agent_client_protocol_http::HttpClient;

const BOUND: Duration = Duration::from_secs(60);
const TOKEN: &str = "interop-server-token-0123456789";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

fn acp_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ACP_BIN") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "ACP_BIN={} is not a file", p.display());
        return p;
    }
    for profile in ["release", "debug"] {
        let p = repo_root().join("target").join(profile).join("acp");
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "no acp binary: set ACP_BIN or build it (cargo build --release -p acp-cli)"
    );
}

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not finished within {BOUND:?}"),
    }
}

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!(
            "acp-rs-http-interop-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `acp serve --http 127.0.0.1:0 … -- acp demo-agent ARGS`, killed on drop; its stderr lines
/// are kept.
struct Server {
    child: std::process::Child,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(cwd: &Path, agent_args: &[&str]) -> Server {
        let acp = acp_bin();
        let mut child = std::process::Command::new(&acp)
            .args(["serve", "--http", "127.0.0.1:0", "--cwd"])
            .arg(cwd)
            .arg("--")
            .arg(&acp)
            .arg("demo-agent")
            .args(agent_args)
            .env("ACP_SERVE_TOKEN", TOKEN)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cannot start acp serve");
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest.split('/').next().unwrap_or_default().to_string();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                log2.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("acp serve did not print its address");
        Server { child, addr, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The official client for `url`, sending `token` on every request.
fn http_client(url: &str, token: &str) -> HttpClient {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    HttpClient::builder(url)
        .configure_http(move |h| h.no_proxy().default_headers(headers))
        .build()
        .expect("HttpClient")
}

fn fs_caps() -> s::ClientCapabilities {
    s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true))
}

#[derive(Default)]
struct Seen {
    updates: Vec<s::SessionNotification>,
    permissions: Vec<s::RequestPermissionRequest>,
    writes: Vec<s::WriteTextFileRequest>,
}

fn chunks(updates: &[s::SessionNotification]) -> String {
    updates
        .iter()
        .filter_map(|n| match &n.update {
            s::SessionUpdate::AgentMessageChunk(c) => match &c.content {
                s::ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// One full turn through the official client over `url` (http:// or ws://).
async fn full_turn(url: &str, dir: &Path) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let cwd = dir.to_path_buf();
    let prompt = "hello over the official remote transport";
    let out = bounded(
        "the official HttpClient against acp serve --http",
        Client
            .v1()
            .name("official-http-client")
            .on_receive_notification(
                async move |n: s::SessionNotification, _cx| {
                    s1.lock().unwrap().updates.push(n);
                    Ok(())
                },
                sdk::on_receive_notification!(),
            )
            .on_receive_request(
                async move |r: s::RequestPermissionRequest, responder, _cx| {
                    let allow = r
                        .options
                        .iter()
                        .find(|o| o.kind == s::PermissionOptionKind::AllowOnce)
                        .map(|o| o.option_id.0.to_string())
                        .expect("an allow_once option");
                    s2.lock().unwrap().permissions.push(r);
                    responder.respond(s::RequestPermissionResponse::new(
                        s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                            allow,
                        )),
                    ))
                },
                sdk::on_receive_request!(),
            )
            .on_receive_request(
                async move |w: s::WriteTextFileRequest, responder, _cx| {
                    std::fs::write(&w.path, &w.content).map_err(sdk::Error::into_internal_error)?;
                    s3.lock().unwrap().writes.push(w);
                    responder.respond(s::WriteTextFileResponse::new())
                },
                sdk::on_receive_request!(),
            )
            .connect_with(http_client(url, TOKEN), async move |cx| {
                let init = cx
                    .send_request(
                        s::InitializeRequest::new(ProtocolVersion::V1)
                            .client_capabilities(fs_caps()),
                    )
                    .block_task()
                    .await?;
                let session = cx
                    .send_request(s::NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                let turn = cx
                    .send_request(s::PromptRequest::new(
                        session.session_id.clone(),
                        vec![prompt.into()],
                    ))
                    .block_task()
                    .await?;
                Ok((init, session, turn))
            }),
    )
    .await;
    let (init, session, turn) = out.unwrap_or_else(|e| panic!("{url}: {e:?}"));
    assert_eq!(
        init.agent_info.as_ref().map(|i| i.name.as_str()),
        Some("acp-demo-agent")
    );
    assert_eq!(turn.stop_reason, s::StopReason::EndTurn, "{url}");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    for n in &seen.updates {
        assert_eq!(n.session_id, session.session_id);
    }
    let text = chunks(&seen.updates);
    assert!(
        text.contains(&format!("You said: \"{prompt}\"")),
        "{url}: {text}"
    );
    assert!(seen
        .updates
        .iter()
        .any(|n| matches!(n.update, s::SessionUpdate::Plan(_))));
    assert_eq!(seen.permissions.len(), 1, "{url}");
    assert_eq!(seen.permissions[0].session_id, session.session_id);
    assert_eq!(seen.writes.len(), 1, "{url}");
    assert!(dir.join("acp-demo.txt").is_file(), "{url}: not written");
    assert!(text.contains("I wrote acp-demo.txt"), "{url}: {text}");
}

/// `session/cancel` during a slow turn ends it `cancelled`.
async fn cancelled_turn(url: &str, dir: &Path) {
    let count = Arc::new(AtomicUsize::new(0));
    let c1 = count.clone();
    let cwd = dir.to_path_buf();
    let out = bounded(
        "cancel through the official HttpClient",
        Client
            .v1()
            .name("official-http-client")
            .on_receive_notification(
                async move |_n: s::SessionNotification, _cx| {
                    c1.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                sdk::on_receive_notification!(),
            )
            .connect_with(http_client(url, TOKEN), async move |cx| {
                cx.send_request(s::InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let session = cx
                    .send_request(s::NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                let before = count.load(Ordering::SeqCst);
                let turn = cx.send_request(s::PromptRequest::new(
                    session.session_id.clone(),
                    vec!["a slow turn".into()],
                ));
                // The turn is under way (an update arrived) before it is cancelled.
                while count.load(Ordering::SeqCst) <= before {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                cx.send_notification(s::CancelNotification::new(session.session_id.clone()))?;
                turn.block_task().await
            }),
    )
    .await;
    let turn = out.unwrap_or_else(|e| panic!("{url}: {e:?}"));
    assert_eq!(turn.stop_reason, s::StopReason::Cancelled, "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_runs_a_turn_over_sse_and_websocket() {
    let dir = TempDir::new("turn");
    let server = Server::start(&dir.0, &[]);
    for scheme in ["http", "ws"] {
        let _ = std::fs::remove_file(dir.0.join("acp-demo.txt"));
        full_turn(&format!("{scheme}://{}", server.addr), &dir.0).await;
    }
    let log = server.log();
    assert!(log.contains("connected over http"), "{log}");
    assert!(log.contains("connected over websocket"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_cancels_a_turn_over_sse_and_websocket() {
    let dir = TempDir::new("cancel");
    let server = Server::start(&dir.0, &["--delay-ms", "300"]);
    for scheme in ["http", "ws"] {
        cancelled_turn(&format!("{scheme}://{}", server.addr), &dir.0).await;
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_before_any_agent_starts() {
    let dir = TempDir::new("refused");
    let server = Server::start(&dir.0, &[]);
    for scheme in ["http", "ws"] {
        let url = format!("{scheme}://{}", server.addr);
        let out = bounded(
            "a wrong token",
            Client.v1().connect_with(
                http_client(&url, "not-the-token-0123456789"),
                async move |cx| {
                    cx.send_request(s::InitializeRequest::new(ProtocolVersion::V1))
                        .block_task()
                        .await
                },
            ),
        )
        .await;
        let e = out.expect_err("a wrong token must fail");
        assert!(format!("{e:?}").contains("401"), "{scheme}: {e:?}");
    }
    let log = server.log();
    assert!(log.contains("refused (401)"), "{log}");
    assert!(!log.contains("connected over"), "{log}");
}
