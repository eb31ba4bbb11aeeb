//! `rust-sdk-peer client SCENARIO …`: the SDK's client (`Client.v1()`) against an agent it
//! spawns (`-- COMMAND ARGS…`, the SDK's process adapter `AcpAgent`) or a remote agent
//! (`--url URL --token T`, the official `HttpClient` with the token as a default header on
//! every request). One JSON report line on stdout: what the scenario got, as the SDK decoded
//! it; `{"failed": "<the SDK's error>"}` (exit status 1) when the connection itself failed.
//!
//! The client's handlers: `session/update`s recorded; `session/request_permission` answered
//! with the `allow_once` option (`reject_once` with `--deny`); `fs/write_text_file` written to
//! disk; `fs/read_text_file` answered with [`SERVED_BY_SDK`] (not the file: it shows the agent
//! read through the client). It advertises `fs` (read and write) unless the scenario says not.
//!
//! Scenarios:
//!
//! - `turn`: `initialize`, `session/new` in `--cwd`, one prompt (`--prompt`); with
//!   `--probe-unknown-session` also a prompt for the session `no-such-session`, which must fail.
//! - `cancel`: a session in `--cwd`, then turns cancelled once under way: by `session/cancel`,
//!   by `$/cancel_request` of the prompt request itself, and by `session/cancel` again (only the
//!   first with `--session-cancel-only`).
//! - `session-api`: no capabilities; the SDK's session API (`build_session`, `read_to_string`),
//!   then `load_session` of that session, whose replay is read until it pauses.
//! - `native-agent`: our errors as the SDK decodes them (`session/new` with a relative cwd, and
//!   with params that do not decode: `cwd: 42`), then a turn whose prompt is `--cwd`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol as sdk;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Client, ConnectTo};
use agent_client_protocol_http::HttpClient;
use serde_json::{json, Value};

/// What the client's `fs/read_text_file` handler answers.
pub const SERVED_BY_SDK: &str = "served by the Rust SDK client\nsecond line\n";

/// The command line.
#[derive(Default)]
struct Options {
    scenario: String,
    cwd: PathBuf,
    prompt: String,
    deny: bool,
    probe_unknown_session: bool,
    session_cancel_only: bool,
    url: Option<String>,
    token: String,
    command: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        prompt: "hello from the Rust SDK".into(),
        cwd: std::env::temp_dir(),
        ..Options::default()
    };
    let mut it = args.iter();
    o.scenario = it.next().ok_or("a scenario is needed")?.clone();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--cwd" => o.cwd = value("--cwd")?.into(),
            "--prompt" => o.prompt = value("--prompt")?,
            "--deny" => o.deny = true,
            "--probe-unknown-session" => o.probe_unknown_session = true,
            "--session-cancel-only" => o.session_cancel_only = true,
            "--url" => o.url = Some(value("--url")?),
            "--token" => o.token = value("--token")?,
            "--" => {
                o.command = it.by_ref().cloned().collect();
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.url.is_none() && o.command.is_empty() {
        return Err("an agent is needed: --url URL or -- COMMAND ARGS".into());
    }
    Ok(o)
}

/// What the client's handlers saw.
#[derive(Default)]
struct Seen {
    updates: Vec<s::SessionNotification>,
    permissions: Vec<s::RequestPermissionRequest>,
    writes: Vec<s::WriteTextFileRequest>,
    reads: Vec<s::ReadTextFileRequest>,
}

impl Seen {
    fn json(&self) -> Value {
        json!({
            "updates": self.updates,
            "permissions": self.permissions,
            "writes": self.writes,
            "reads": self.reads,
        })
    }
}

fn fs_caps() -> s::ClientCapabilities {
    s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true))
}

/// The outcome of a call that may fail, as JSON: `{"ok": result}` or `{"error": error}`.
fn outcome<T: serde::Serialize>(r: Result<T, sdk::Error>) -> Value {
    match r {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "error": e }),
    }
}

/// Waits until more than `after` updates arrived (the turn is under way).
async fn updates_past(count: &AtomicUsize, after: usize, arrived: &tokio::sync::Notify) {
    loop {
        let waiting = arrived.notified();
        if count.load(Ordering::SeqCst) > after {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_millis(50), waiting).await;
    }
}

/// The session API scenario: a client without handlers of its own (a `session/update`
/// handler would take the updates the session API reads).
async fn session_api(
    o: Options,
    transport: impl ConnectTo<Client> + 'static,
) -> Result<Value, sdk::Error> {
    Client
        .v1()
        .name("acp-rs-interop-sdk-client")
        .connect_with(transport, async move |cx| {
            let mut report = serde_json::Map::new();
            let init = cx
                .send_request(s::InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            report.insert("init".into(), json!(init));
            let sdk::v1::SessionSetup { mut session, .. } = cx
                .build_session(&o.cwd)
                .block_task()
                .start_session()
                .await?;
            session.send_prompt(o.prompt.clone())?;
            let answer = session.read_to_string().await?;
            let sid = session.session_id().clone();
            drop(session);

            // Reload it: every update of the turn (plus the user's message) is
            // replayed before the answer, onto the restored session's stream.
            let sdk::v1::SessionSetup { mut session, .. } = cx
                .load_session(sid.clone(), &o.cwd)
                .block_task()
                .start_session()
                .await?;
            let mut replay = Vec::new();
            while let Ok(update) =
                tokio::time::timeout(Duration::from_millis(300), session.read_update()).await
            {
                let sdk::v1::SessionMessage::Message(dispatch) = update? else {
                    return Err(sdk::Error::internal_error()
                        .data("a prompt response while nothing was prompted"));
                };
                sdk::util::MatchDispatch::new(dispatch.into_raw())
                    .if_notification(async |n: s::SessionNotification| {
                        replay.push(n);
                        Ok(())
                    })
                    .await
                    .otherwise_ignore()?;
            }
            report.insert("sessionId".into(), json!(sid));
            report.insert("answer".into(), json!(answer));
            report.insert("replay".into(), json!(replay));
            Ok(Value::Object(report))
        })
        .await
}

async fn run(o: Options, transport: impl ConnectTo<Client> + 'static) -> Result<Value, sdk::Error> {
    if o.scenario == "session-api" {
        return session_api(o, transport).await;
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let count = Arc::new(AtomicUsize::new(0));
    let arrived = Arc::new(tokio::sync::Notify::new());
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let (c1, a1) = (count.clone(), arrived.clone());
    let deny = o.deny;
    let builder = Client
        .v1()
        .name("acp-rs-interop-sdk-client")
        .on_receive_notification(
            async move |n: s::SessionNotification, _cx| {
                s1.lock().unwrap().updates.push(n);
                c1.fetch_add(1, Ordering::SeqCst);
                a1.notify_waiters();
                Ok(())
            },
            sdk::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: s::RequestPermissionRequest, responder, _cx| {
                let kind = if deny {
                    s::PermissionOptionKind::RejectOnce
                } else {
                    s::PermissionOptionKind::AllowOnce
                };
                let option = r.options.iter().find(|o| o.kind == kind).cloned();
                s2.lock().unwrap().permissions.push(r);
                match option {
                    Some(o) => responder.respond(s::RequestPermissionResponse::new(
                        s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                            o.option_id,
                        )),
                    )),
                    None => responder.respond(s::RequestPermissionResponse::new(
                        s::RequestPermissionOutcome::Cancelled,
                    )),
                }
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
        .on_receive_request(
            async move |r: s::ReadTextFileRequest, responder, _cx| {
                s4.lock().unwrap().reads.push(r);
                responder.respond(s::ReadTextFileResponse::new(SERVED_BY_SDK.to_string()))
            },
            sdk::on_receive_request!(),
        );
    let scenario = o.scenario.clone();
    let mut report = builder
        .connect_with(transport, async move |cx| {
            let mut report = serde_json::Map::new();
            match scenario.as_str() {
                "turn" => {
                    let init = cx
                        .send_request(
                            s::InitializeRequest::new(ProtocolVersion::V1)
                                .client_capabilities(fs_caps()),
                        )
                        .block_task()
                        .await?;
                    let session = cx
                        .send_request(s::NewSessionRequest::new(o.cwd.clone()))
                        .block_task()
                        .await?;
                    let prompt = cx
                        .send_request(s::PromptRequest::new(
                            session.session_id.clone(),
                            vec![o.prompt.clone().into()],
                        ))
                        .block_task()
                        .await?;
                    report.insert("init".into(), json!(init));
                    report.insert("session".into(), json!(session));
                    report.insert("prompt".into(), json!(prompt));
                    if o.probe_unknown_session {
                        let unknown = cx
                            .send_request(s::PromptRequest::new(
                                "no-such-session".to_string(),
                                vec!["hi".into()],
                            ))
                            .block_task()
                            .await;
                        report.insert("unknownSession".into(), outcome(unknown));
                    }
                }
                "cancel" => {
                    cx.send_request(
                        s::InitializeRequest::new(ProtocolVersion::V1)
                            .client_capabilities(fs_caps()),
                    )
                    .block_task()
                    .await?;
                    let session = cx
                        .send_request(s::NewSessionRequest::new(o.cwd.clone()))
                        .block_task()
                        .await?;
                    let sid = session.session_id;

                    let before = count.load(Ordering::SeqCst);
                    let turn =
                        cx.send_request(s::PromptRequest::new(sid.clone(), vec!["one".into()]));
                    updates_past(&count, before, &arrived).await;
                    cx.send_notification(s::CancelNotification::new(sid.clone()))?;
                    report.insert("bySessionCancel".into(), json!(turn.block_task().await?));

                    if !o.session_cancel_only {
                        let before = count.load(Ordering::SeqCst);
                        let turn =
                            cx.send_request(s::PromptRequest::new(sid.clone(), vec!["two".into()]));
                        updates_past(&count, before, &arrived).await;
                        turn.cancel()?;
                        report.insert("byCancelRequest".into(), outcome(turn.block_task().await));

                        // The session still works afterwards: a third turn is answered
                        // (cancelled again, quickly).
                        let before = count.load(Ordering::SeqCst);
                        let turn = cx
                            .send_request(s::PromptRequest::new(sid.clone(), vec!["three".into()]));
                        updates_past(&count, before, &arrived).await;
                        cx.send_notification(s::CancelNotification::new(sid))?;
                        report.insert("third".into(), json!(turn.block_task().await?));
                    }
                }
                "native-agent" => {
                    let init = cx
                        .send_request(
                            s::InitializeRequest::new(ProtocolVersion::V1)
                                .client_capabilities(fs_caps()),
                        )
                        .block_task()
                        .await?;
                    // Our handler's error.
                    let relative = cx
                        .send_request(s::NewSessionRequest::new("relative/dir"))
                        .block_task()
                        .await;
                    // The router's own params check.
                    let bad_params = cx
                        .send_request(sdk::UntypedMessage::new(
                            "session/new",
                            json!({ "cwd": 42, "mcpServers": [] }),
                        )?)
                        .block_task()
                        .await;
                    let session = cx
                        .send_request(s::NewSessionRequest::new(o.cwd.clone()))
                        .block_task()
                        .await?;
                    let done = cx
                        .send_request(s::PromptRequest::new(
                            session.session_id.clone(),
                            vec![o.cwd.display().to_string().into()],
                        ))
                        .block_task()
                        .await?;
                    report.insert("init".into(), json!(init));
                    report.insert("relative".into(), outcome(relative));
                    report.insert("badParams".into(), outcome(bad_params));
                    report.insert("session".into(), json!(session));
                    report.insert("done".into(), json!(done));
                }
                other => {
                    return Err(
                        sdk::Error::invalid_params().data(format!("unknown scenario {other}"))
                    )
                }
            }
            Ok(report)
        })
        .await?;
    report.insert("seen".into(), seen.lock().unwrap().json());
    Ok(Value::Object(report))
}

/// The official client for `url`, sending `token` on every request.
fn http_client(url: &str, token: &str) -> Result<HttpClient, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}")
            .parse()
            .map_err(|e| format!("token: {e}"))?,
    );
    HttpClient::builder(url)
        .configure_http(move |h| h.no_proxy().default_headers(headers))
        .build()
        .map_err(|e| format!("HttpClient: {e:?}"))
}

pub fn main(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rust-sdk-peer client: {e}");
            return 2;
        }
    };
    let rt = crate::common::runtime();
    let res = rt.block_on(async move {
        match o.url.clone() {
            Some(url) => match http_client(&url, &o.token) {
                Ok(t) => run(o, t).await,
                Err(e) => Err(sdk::Error::internal_error().data(e)),
            },
            None => {
                let mut config = AcpAgentConfig::new(o.command[0].clone());
                for a in &o.command[1..] {
                    config = config.arg(a.clone());
                }
                run(o, AcpAgent::new(config)).await
            }
        }
    });
    match res {
        Ok(report) => {
            println!("{report}");
            0
        }
        Err(e) => {
            println!("{}", json!({ "failed": format!("{e:?}") }));
            1
        }
    }
}
