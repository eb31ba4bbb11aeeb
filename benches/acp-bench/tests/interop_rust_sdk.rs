//! Interop with the official ACP Rust SDK (`agent-client-protocol` 5.x), in both directions.
//!
//! It lives here, in the bench crate that already depends on the SDK, so that the main
//! workspace's `cargo test` never compiles the SDK. CI runs it with
//! `scripts/interop-rust-sdk.sh` (the `interop-rust-sdk` step of `scripts/test.sh`).
//!
//! 1. The SDK's client (`Client.v1()`) spawns `acp demo-agent` (the SDK's process adapter,
//!    `AcpAgent`) and runs prompt turns: streamed chunks, a file read, a permission request
//!    (allowed, then denied), a file write, `end_turn`, and an error (`-32002`, with data).
//! 2. acp-native's `ClientSideConnection` drives an agent built with the SDK's `Agent.v1()`,
//!    in this process over an in-memory pipe: a full turn (updates, permission, write, read),
//!    the SDK agent's own error (code, message, data), an unhandled method, and `session/cancel`
//!    during a long turn ending with `cancelled`.
//! 3. acp-native's `AgentSideConnection` (a `Router` agent) driven by the SDK's client: a turn,
//!    and our errors (`-32602` with data, from a handler and from the router's own params
//!    check) decoded by the SDK.
//!
//! The `acp` binary: `$ACP_BIN` if set, else `target/release/acp` or `target/debug/acp` of the
//! main workspace, else it is built (`cargo build --release -p acp-cli`).
//! Every test is bounded (`BOUND`); nothing waits forever.

#![cfg(feature = "native")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use acp_core::{typed, ErrorCode as CoreCode, ErrorObject, Role};
use acp_native::{transport, AgentSideConnection, ClientSideConnection, DriverConfig, Router};
use agent_client_protocol as sdk;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, ByteStreams, Client};
use serde_json::json;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

/// Bound for one whole test.
const BOUND: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------------------------
// Helpers.

/// The main workspace's root (this crate is `benches/acp-bench`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Our `acp` binary (see the module docs); built once if missing.
fn acp_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("ACP_BIN") {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "ACP_BIN={} is not a file", p.display());
            return p;
        }
        let root = repo_root();
        for profile in ["release", "debug"] {
            let p = root.join("target").join(profile).join("acp");
            if p.is_file() {
                return p;
            }
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "--release", "-p", "acp-native", "--bin", "acp"])
            .current_dir(&root)
            .status()
            .expect("cannot run cargo to build acp");
        assert!(status.success(), "building acp failed: {status}");
        root.join("target/release/acp")
    })
    .clone()
}

/// A fresh, empty directory (absolute, symlinks resolved), removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!(
            "acp-rs-sdk-interop-{}-{n}-{name}",
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

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not finished within {BOUND:?}"),
    }
}

fn text_of(block: &s::ContentBlock) -> Option<&str> {
    match block {
        s::ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

/// The text of every `agent_message_chunk`, in order.
fn message_chunks(updates: &[s::SessionNotification]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|n| match &n.update {
            s::SessionUpdate::AgentMessageChunk(c) => text_of(&c.content).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// Every text in the `content` of `tool_call_update`s.
fn tool_update_texts(updates: &[s::SessionNotification]) -> Vec<String> {
    let mut out = Vec::new();
    for n in updates {
        if let s::SessionUpdate::ToolCallUpdate(u) = &n.update {
            for c in u.fields.content.iter().flatten() {
                if let s::ToolCallContent::Content(c) = c {
                    if let Some(t) = text_of(&c.content) {
                        out.push(t.to_owned());
                    }
                }
            }
        }
    }
    out
}

fn fs_caps() -> s::ClientCapabilities {
    s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true))
}

fn selected(id: &str) -> s::RequestPermissionResponse {
    s::RequestPermissionResponse::new(s::RequestPermissionOutcome::Selected(
        s::SelectedPermissionOutcome::new(id.to_string()),
    ))
}

/// The option of `kind` in a permission request.
fn option_of(r: &s::RequestPermissionRequest, kind: s::PermissionOptionKind) -> String {
    r.options
        .iter()
        .find(|o| o.kind == kind)
        .map(|o| o.option_id.0.to_string())
        .unwrap_or_else(|| panic!("no {kind:?} option in {r:?}"))
}

// ---------------------------------------------------------------------------------------------
// 1. The SDK's client against `acp demo-agent`.

/// What the SDK client saw during a run.
#[derive(Default)]
struct Seen {
    updates: Vec<s::SessionNotification>,
    permissions: Vec<s::RequestPermissionRequest>,
    writes: Vec<s::WriteTextFileRequest>,
    reads: Vec<s::ReadTextFileRequest>,
}

/// What the SDK client's `fs/read_text_file` handler answers (not the file on disk: proves the
/// agent read through the client).
const SERVED_BY_SDK: &str = "served by the Rust SDK client\nsecond line\n";

struct DemoRun {
    init: s::InitializeResponse,
    session: s::NewSessionResponse,
    prompt: s::PromptResponse,
    unknown_session: sdk::Error,
    seen: Seen,
}

async fn sdk_client_with_demo_agent(dir: &Path, prompt: &str, allow: bool) -> DemoRun {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let agent = AcpAgent::new(AcpAgentConfig::new(acp_bin()).arg("demo-agent"));
    let dir = dir.to_path_buf();
    let prompt = prompt.to_string();
    let out = Client
        .v1()
        .name("acp-rs-interop-sdk-client")
        .on_receive_notification(
            async move |n: s::SessionNotification, _cx| {
                s1.lock().unwrap().updates.push(n);
                Ok(())
            },
            sdk::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: s::RequestPermissionRequest, responder, _cx| {
                let kind = if allow {
                    s::PermissionOptionKind::AllowOnce
                } else {
                    s::PermissionOptionKind::RejectOnce
                };
                let id = option_of(&r, kind);
                s2.lock().unwrap().permissions.push(r);
                responder.respond(selected(&id))
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
        )
        .connect_with(agent, async move |cx| {
            // No terminal capability: the demo agent then runs no command.
            let init = cx
                .send_request(
                    s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(fs_caps()),
                )
                .block_task()
                .await?;
            let session = cx
                .send_request(s::NewSessionRequest::new(dir.clone()))
                .block_task()
                .await?;
            let prompt = cx
                .send_request(s::PromptRequest::new(
                    session.session_id.clone(),
                    vec![prompt.into()],
                ))
                .block_task()
                .await?;
            let unknown_session = cx
                .send_request(s::PromptRequest::new(
                    "no-such-session".to_string(),
                    vec!["hi".into()],
                ))
                .block_task()
                .await
                .expect_err("a prompt on an unknown session must fail");
            Ok((init, session, prompt, unknown_session))
        })
        .await;
    let (init, session, prompt, unknown_session) = out.expect("SDK client run failed");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    DemoRun {
        init,
        session,
        prompt,
        unknown_session,
        seen,
    }
}

fn check_demo_common(run: &DemoRun, prompt: &str) {
    let info = run.init.agent_info.as_ref().expect("agent_info");
    assert_eq!(info.name, "acp-demo-agent");
    assert_eq!(run.init.protocol_version, ProtocolVersion::V1);
    assert!(run.init.agent_capabilities.load_session);
    assert!(
        run.session.session_id.0.starts_with("demo-"),
        "{:?}",
        run.session.session_id
    );
    assert_eq!(run.prompt.stop_reason, s::StopReason::EndTurn);
    for n in &run.seen.updates {
        assert_eq!(n.session_id, run.session.session_id);
    }
    let chunks = message_chunks(&run.seen.updates);
    assert!(
        chunks.len() >= 3,
        "expected streamed chunks, got {chunks:?}"
    );
    let text = chunks.concat();
    assert!(
        text.contains(&format!("You said: \"{prompt}\"")),
        "answer: {text}"
    );
    assert!(run
        .seen
        .updates
        .iter()
        .any(|n| matches!(n.update, s::SessionUpdate::Plan(_))));
    assert!(run
        .seen
        .updates
        .iter()
        .any(|n| matches!(n.update, s::SessionUpdate::AgentThoughtChunk(_))));
    // The permission request: one, for the demo file, with the agent's two options.
    assert_eq!(run.seen.permissions.len(), 1, "{:?}", run.seen.permissions);
    let p = &run.seen.permissions[0];
    assert_eq!(p.session_id, run.session.session_id);
    let ids: Vec<&str> = p.options.iter().map(|o| &*o.option_id.0).collect();
    assert_eq!(ids, ["allow", "reject"]);
    assert!(p
        .tool_call
        .fields
        .title
        .as_deref()
        .unwrap_or_default()
        .contains("acp-demo.txt"));
    // The error for an unknown session, decoded by the SDK: code, message and data.
    let e = &run.unknown_session;
    assert_eq!(e.code, sdk::ErrorCode::RESOURCE_NOT_FOUND, "{e:?}");
    assert!(e.message.contains("no-such-session"), "{e:?}");
    assert_eq!(e.data, Some(json!({ "sessionId": "no-such-session" })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_runs_a_turn_with_the_demo_agent_allowed() {
    let dir = TempDir::new("demo-allow");
    std::fs::write(
        dir.0.join("notes.txt"),
        "on disk, not what the client serves\n",
    )
    .unwrap();
    let prompt = "hello from the Rust SDK, please read notes.txt";
    let run = bounded(
        "SDK client + acp demo-agent",
        sdk_client_with_demo_agent(&dir.0, prompt, true),
    )
    .await;
    check_demo_common(&run, prompt);

    // The read went through the SDK client, and the agent reported what it got; then the demo
    // agent reads the file it is about to write (for its diff's old text, ccd3cf3).
    assert_eq!(run.seen.reads.len(), 2, "{:?}", run.seen.reads);
    assert_eq!(run.seen.reads[0].path, dir.0.join("notes.txt"));
    assert_eq!(run.seen.reads[1].path, dir.0.join("acp-demo.txt"));
    assert_eq!(run.seen.reads[0].session_id, run.session.session_id);
    let tool_texts = tool_update_texts(&run.seen.updates);
    assert!(
        tool_texts
            .iter()
            .any(|t| t == "2 line(s); first line: served by the Rust SDK client"),
        "{tool_texts:?}"
    );

    // The write: the path and the content, through the SDK client's handler.
    let expected = format!("The acp demo agent was asked:\n\n{prompt}\n");
    // Its tool call, announced first with the diff (decoded by the SDK).
    let diff = run
        .seen
        .updates
        .iter()
        .find_map(|n| match &n.update {
            s::SessionUpdate::ToolCall(c) if c.kind == s::ToolKind::Edit => {
                c.content.iter().find_map(|c| match c {
                    s::ToolCallContent::Diff(d) => Some(d.clone()),
                    _ => None,
                })
            }
            _ => None,
        })
        .expect("an edit tool call with a diff");
    assert_eq!(diff.path, dir.0.join("acp-demo.txt"));
    assert_eq!(diff.new_text, expected);
    assert!(run.seen.updates.iter().any(|n| matches!(
        &n.update,
        s::SessionUpdate::ToolCall(c) if c.kind == s::ToolKind::Read
            && c.locations.iter().any(|l| l.path == dir.0.join("notes.txt"))
    )));
    assert_eq!(run.seen.writes.len(), 1);
    let w = &run.seen.writes[0];
    assert_eq!(w.session_id, run.session.session_id);
    assert_eq!(w.path, dir.0.join("acp-demo.txt"));
    assert_eq!(w.content, expected);
    assert_eq!(
        std::fs::read_to_string(dir.0.join("acp-demo.txt")).unwrap(),
        expected
    );
    let text = message_chunks(&run.seen.updates).concat();
    assert!(text.contains("I wrote acp-demo.txt"), "{text}");
    // The write's tool call ended `completed`.
    assert!(run.seen.updates.iter().any(|n| matches!(
        &n.update,
        s::SessionUpdate::ToolCallUpdate(u)
            if u.tool_call_id.0.starts_with("write-")
                && u.fields.status == Some(s::ToolCallStatus::Completed)
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_denies_the_demo_agent_and_nothing_is_written() {
    let dir = TempDir::new("demo-deny");
    let prompt = "hello from the Rust SDK";
    let run = bounded(
        "SDK client + acp demo-agent (deny)",
        sdk_client_with_demo_agent(&dir.0, prompt, false),
    )
    .await;
    check_demo_common(&run, prompt);
    // Only the file it would write, read for its diff before asking.
    let reads: Vec<_> = run.seen.reads.iter().map(|r| r.path.clone()).collect();
    assert_eq!(reads, [dir.0.join("acp-demo.txt")]);
    assert!(run.seen.writes.is_empty(), "{:?}", run.seen.writes);
    assert!(!dir.0.join("acp-demo.txt").exists());
    let text = message_chunks(&run.seen.updates).concat();
    assert!(text.contains("OK, I did not write acp-demo.txt"), "{text}");
    assert!(run.seen.updates.iter().any(|n| matches!(
        &n.update,
        s::SessionUpdate::ToolCallUpdate(u)
            if u.tool_call_id.0.starts_with("write-")
                && u.fields.status == Some(s::ToolCallStatus::Failed)
    )));
}

/// The SDK client cancels turns of `acp demo-agent --delay-ms 200`: with `session/cancel`
/// (the turn must end `cancelled`), then with `$/cancel_request` for the prompt request itself
/// (the SDK's `SentRequest::cancel`: a `cancelled` stop reason or a -32800 error are both
/// allowed answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_cancels_demo_agent_turns() {
    let dir = TempDir::new("demo-cancel");
    let updates = Arc::new(tokio::sync::Notify::new());
    let count = Arc::new(AtomicUsize::new(0));
    let (u1, c1) = (updates.clone(), count.clone());
    let permissions = Arc::new(AtomicUsize::new(0));
    let p1 = permissions.clone();
    let agent = AcpAgent::new(
        AcpAgentConfig::new(acp_bin())
            .arg("demo-agent")
            .arg("--delay-ms")
            .arg("200"),
    );
    let cwd = dir.0.clone();
    let wait_for_update = async move |count: &AtomicUsize, after: usize| {
        while count.load(Ordering::SeqCst) <= after {
            let _ = tokio::time::timeout(Duration::from_millis(50), updates.notified()).await;
        }
    };
    let out = bounded(
        "SDK client cancelling acp demo-agent turns",
        Client
            .v1()
            .name("acp-rs-interop-sdk-client")
            .on_receive_notification(
                async move |_n: s::SessionNotification, _cx| {
                    c1.fetch_add(1, Ordering::SeqCst);
                    u1.notify_waiters();
                    Ok(())
                },
                sdk::on_receive_notification!(),
            )
            .on_receive_request(
                async move |_r: s::RequestPermissionRequest, responder, _cx| {
                    // Not reached: the turns are cancelled long before.
                    p1.fetch_add(1, Ordering::SeqCst);
                    responder.respond(s::RequestPermissionResponse::new(
                        s::RequestPermissionOutcome::Cancelled,
                    ))
                },
                sdk::on_receive_request!(),
            )
            .connect_with(agent, async move |cx| {
                cx.send_request(
                    s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(fs_caps()),
                )
                .block_task()
                .await?;
                let session = cx
                    .send_request(s::NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                let sid = session.session_id;

                let before = count.load(Ordering::SeqCst);
                let turn = cx.send_request(s::PromptRequest::new(sid.clone(), vec!["one".into()]));
                wait_for_update(&count, before).await;
                cx.send_notification(s::CancelNotification::new(sid.clone()))?;
                let by_session_cancel = turn.block_task().await?;

                let before = count.load(Ordering::SeqCst);
                let turn = cx.send_request(s::PromptRequest::new(sid.clone(), vec!["two".into()]));
                wait_for_update(&count, before).await;
                turn.cancel()?;
                let by_cancel_request = turn.block_task().await;

                // The session still works afterwards: a third turn is answered (cancelled
                // again, quickly, to keep the test short).
                let before = count.load(Ordering::SeqCst);
                let turn =
                    cx.send_request(s::PromptRequest::new(sid.clone(), vec!["three".into()]));
                wait_for_update(&count, before).await;
                cx.send_notification(s::CancelNotification::new(sid))?;
                let third = turn.block_task().await?;
                Ok((by_session_cancel, by_cancel_request, third))
            }),
    )
    .await;
    let (by_session_cancel, by_cancel_request, third) = out.expect("SDK client run failed");
    eprintln!("$/cancel_request of a prompt was answered: {by_cancel_request:?}");
    assert_eq!(by_session_cancel.stop_reason, s::StopReason::Cancelled);
    match by_cancel_request {
        Ok(r) => assert_eq!(r.stop_reason, s::StopReason::Cancelled),
        Err(e) => assert_eq!(e.code, sdk::ErrorCode::REQUEST_CANCELLED, "{e:?}"),
    }
    assert_eq!(third.stop_reason, s::StopReason::Cancelled);
    assert_eq!(permissions.load(Ordering::SeqCst), 0);
    assert!(!dir.0.join("acp-demo.txt").exists());
}

/// The SDK's high-level session API (`build_session` / `ActiveSession::read_to_string`, then
/// `load_session`, which the demo agent answers by replaying the conversation first) against
/// `acp demo-agent`, with no client capabilities (so the agent asks nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_session_api_with_the_demo_agent_and_load_replay() {
    let dir = TempDir::new("demo-session-api");
    let agent = AcpAgent::new(AcpAgentConfig::new(acp_bin()).arg("demo-agent"));
    let cwd = dir.0.clone();
    let prompt = "hello via the SDK session API";
    let out = bounded(
        "SDK session API + acp demo-agent",
        Client
            .v1()
            .name("acp-rs-interop-sdk-client")
            .connect_with(agent, async move |cx| {
                let init = cx
                    .send_request(s::InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                assert!(init.agent_capabilities.load_session);
                let sdk::v1::SessionSetup { mut session, .. } =
                    cx.build_session(&cwd).block_task().start_session().await?;
                session.send_prompt(prompt)?;
                let answer = session.read_to_string().await?;
                let sid = session.session_id().clone();
                drop(session);

                // Reload it: every update of the turn (plus the user's message) is replayed
                // before the answer, onto the restored session's stream.
                let sdk::v1::SessionSetup { mut session, .. } = cx
                    .load_session(sid.clone(), &cwd)
                    .block_task()
                    .start_session()
                    .await?;
                let mut user = String::new();
                let mut replayed = String::new();
                let mut count = 0;
                while let Ok(update) =
                    tokio::time::timeout(Duration::from_millis(300), session.read_update()).await
                {
                    let sdk::v1::SessionMessage::Message(dispatch) = update? else {
                        panic!("a prompt response while nothing was prompted");
                    };
                    sdk::util::MatchDispatch::new(dispatch.into_raw())
                        .if_notification(async |n: s::SessionNotification| {
                            assert_eq!(n.session_id, sid);
                            count += 1;
                            match &n.update {
                                s::SessionUpdate::UserMessageChunk(c) => {
                                    user.push_str(text_of(&c.content).unwrap_or_default())
                                }
                                s::SessionUpdate::AgentMessageChunk(c) => {
                                    replayed.push_str(text_of(&c.content).unwrap_or_default())
                                }
                                _ => {}
                            }
                            Ok(())
                        })
                        .await
                        .otherwise_ignore()?;
                }
                Ok((answer, user, replayed, count))
            }),
    )
    .await;
    let (answer, user, replayed, count) = out.expect("SDK client run failed");
    assert!(
        answer.contains(&format!("You said: \"{prompt}\"")),
        "{answer}"
    );
    assert!(
        answer.ends_with("(The client cannot write files, so I wrote nothing.)"),
        "{answer}"
    );
    assert_eq!(user, prompt);
    assert_eq!(replayed, answer);
    assert!(count > 5, "only {count} updates replayed");
}

// ---------------------------------------------------------------------------------------------
// 2. acp-native's client against an agent built with the SDK.

const SDK_AGENT_FILE: &str = "sdk-agent.txt";
const SDK_AGENT_CONTENT: &str = "written by the Rust SDK agent through fs/write_text_file\n";
/// `session/new` with this cwd is answered with [`forbidden_error`].
const FORBIDDEN_CWD: &str = "/forbidden-by-the-sdk-agent";

fn forbidden_error() -> sdk::Error {
    sdk::Error::new(
        sdk::ErrorCode::new(-32042),
        "the SDK agent refuses this cwd",
    )
    .data(json!({
        "cwd": FORBIDDEN_CWD,
        "nested": { "list": [1, "two", null], "ok": false },
    }))
}

fn chunk(session: &s::SessionId, text: &str) -> s::SessionNotification {
    s::SessionNotification::new(
        session.clone(),
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.to_string().into())),
    )
}

/// One turn of the SDK agent, run outside the SDK's dispatch loop (it calls the client).
async fn sdk_agent_turn(
    cx: sdk::v1::ConnectionTo<Client>,
    p: s::PromptRequest,
    cwd: PathBuf,
    cancel: CancellationToken,
) -> Result<s::StopReason, sdk::Error> {
    let sid = p.session_id.clone();
    let text = p.prompt.first().and_then(text_of).unwrap_or_default();
    if text == "long" {
        // A long turn: one chunk, then wait for `session/cancel`.
        cx.send_notification(chunk(&sid, "working on it"))?;
        return tokio::select! {
            _ = cancel.cancelled() => {
                cx.send_notification(chunk(&sid, "stopped"))?;
                Ok(s::StopReason::Cancelled)
            }
            _ = tokio::time::sleep(BOUND) => Ok(s::StopReason::EndTurn),
        };
    }
    for piece in ["one", " two", " three"] {
        cx.send_notification(chunk(&sid, piece))?;
    }
    let path = cwd.join(SDK_AGENT_FILE);
    let permission = cx
        .send_request(s::RequestPermissionRequest::new(
            sid.clone(),
            s::ToolCallUpdate::new(
                "write-1".to_string(),
                s::ToolCallUpdateFields::new()
                    .title(format!("Write {}", path.display()))
                    .kind(s::ToolKind::Edit),
            ),
            vec![
                s::PermissionOption::new("yes", "Allow", s::PermissionOptionKind::AllowOnce),
                s::PermissionOption::new("no", "Reject", s::PermissionOptionKind::RejectOnce),
            ],
        ))
        .block_task()
        .await?;
    let allowed = matches!(
        &permission.outcome,
        s::RequestPermissionOutcome::Selected(sel) if &*sel.option_id.0 == "yes"
    );
    if !allowed {
        cx.send_notification(chunk(&sid, " (not allowed)"))?;
        return Ok(s::StopReason::EndTurn);
    }
    cx.send_request(s::WriteTextFileRequest::new(
        sid.clone(),
        path.clone(),
        SDK_AGENT_CONTENT.to_string(),
    ))
    .block_task()
    .await?;
    // Read it back through the client and report what came back.
    let read = cx
        .send_request(s::ReadTextFileRequest::new(sid.clone(), path))
        .block_task()
        .await?;
    cx.send_notification(chunk(&sid, &format!(" read back: {}", read.content)))?;
    Ok(s::StopReason::EndTurn)
}

/// The SDK agent, served on `transport` until the client hangs up.
async fn sdk_agent(transport: impl sdk::ConnectTo<Agent> + 'static) -> Result<(), sdk::Error> {
    let sessions: Arc<Mutex<Vec<(PathBuf, CancellationToken)>>> = Arc::default();
    let (s1, s2, s3) = (sessions.clone(), sessions.clone(), sessions);
    Agent
        .v1()
        .name("acp-rs-interop-sdk-agent")
        .on_receive_request(
            async move |init: s::InitializeRequest, responder, _cx| {
                responder.respond(
                    s::InitializeResponse::new(init.protocol_version)
                        .agent_info(s::Implementation::new("rust-sdk-test-agent", "5")),
                )
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: s::NewSessionRequest, responder, _cx| {
                if req.cwd == Path::new(FORBIDDEN_CWD) {
                    return responder.respond_with_error(forbidden_error());
                }
                let mut sessions = s1.lock().unwrap();
                sessions.push((req.cwd, CancellationToken::new()));
                responder.respond(s::NewSessionResponse::new(format!(
                    "sdk-{}",
                    sessions.len()
                )))
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async move |p: s::PromptRequest, responder, cx| {
                let found = p
                    .session_id
                    .0
                    .strip_prefix("sdk-")
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| s2.lock().unwrap().get(n.wrapping_sub(1)).cloned());
                let Some((cwd, cancel)) = found else {
                    return responder.respond_with_error(
                        s::Error::session_not_found(p.session_id.clone()).into(),
                    );
                };
                let task_cx = cx.clone();
                cx.spawn(async move {
                    match sdk_agent_turn(task_cx, p, cwd, cancel).await {
                        Ok(stop) => responder.respond(s::PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            sdk::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: s::CancelNotification, _cx| {
                let idx = n
                    .session_id
                    .0
                    .strip_prefix("sdk-")
                    .and_then(|n| n.parse::<usize>().ok());
                if let Some(i) = idx {
                    if let Some((_, token)) = s3.lock().unwrap().get(i.wrapping_sub(1)) {
                        token.cancel();
                    }
                }
                Ok(())
            },
            sdk::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

/// What acp-native's client saw from the SDK agent.
#[derive(Default)]
struct NativeSeen {
    updates: Vec<s::SessionNotification>,
    permissions: Vec<s::RequestPermissionRequest>,
    writes: Vec<s::WriteTextFileRequest>,
    reads: Vec<s::ReadTextFileRequest>,
}

fn native_client_router(seen: Arc<Mutex<NativeSeen>>, updates: Arc<tokio::sync::Notify>) -> Router {
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen);
    Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            let s1 = s1.clone();
            let updates = updates.clone();
            async move {
                s1.lock().unwrap().updates.push(n);
                updates.notify_waiters();
            }
        })
        .route::<typed::RequestPermission, _, _>(move |r: s::RequestPermissionRequest, _cx| {
            let s2 = s2.clone();
            async move {
                let id = option_of(&r, s::PermissionOptionKind::AllowOnce);
                s2.lock().unwrap().permissions.push(r);
                Ok(selected(&id))
            }
        })
        .route::<typed::WriteTextFile, _, _>(move |w: s::WriteTextFileRequest, _cx| {
            let s3 = s3.clone();
            async move {
                std::fs::write(&w.path, &w.content).map_err(ErrorObject::internal)?;
                s3.lock().unwrap().writes.push(w);
                Ok(s::WriteTextFileResponse::new())
            }
        })
        .route::<typed::ReadTextFile, _, _>(move |r: s::ReadTextFileRequest, _cx| {
            let s4 = s4.clone();
            async move {
                let content = std::fs::read_to_string(&r.path).map_err(ErrorObject::internal)?;
                s4.lock().unwrap().reads.push(r);
                Ok(s::ReadTextFileResponse::new(content))
            }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_client_drives_an_sdk_agent() {
    let dir = TempDir::new("sdk-agent");
    let ((cr, cw), (ar, aw)) = transport::duplex(64 * 1024);
    let agent = tokio::spawn(sdk_agent(ByteStreams::new(aw.compat_write(), ar.compat())));
    let seen = Arc::new(Mutex::new(NativeSeen::default()));
    let notify = Arc::new(tokio::sync::Notify::new());
    let conn = ClientSideConnection::connect(
        cr,
        cw,
        native_client_router(seen.clone(), notify.clone()),
        DriverConfig::new(Role::Client),
    )
    .with_timeout(BOUND);

    bounded("native client + SDK agent", async {
        let init = conn
            .initialize(
                s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(fs_caps()),
            )
            .await
            .expect("initialize");
        assert_eq!(init.protocol_version, ProtocolVersion::V1);
        assert_eq!(init.agent_info.unwrap().name, "rust-sdk-test-agent");

        // The SDK agent's own error: code, message and data arrive intact.
        let e = conn
            .new_session(s::NewSessionRequest::new(FORBIDDEN_CWD))
            .await
            .expect_err("the SDK agent refuses this cwd");
        let remote = e
            .remote()
            .unwrap_or_else(|| panic!("not a remote error: {e:?}"));
        let want = forbidden_error();
        assert_eq!(remote.code, -32042);
        assert_eq!(remote.message, want.message);
        assert_eq!(remote.data, want.data);

        // A method the SDK agent does not handle: -32601.
        let e = conn
            .set_session_mode(s::SetSessionModeRequest::new("sdk-1", "fast"))
            .await
            .expect_err("not handled by the SDK agent");
        assert_eq!(e.remote().map(|r| r.code), Some(-32601), "{e:?}");

        // A full turn.
        let session = conn
            .new_session(s::NewSessionRequest::new(dir.0.clone()))
            .await
            .expect("session/new");
        assert_eq!(&*session.session_id.0, "sdk-1");
        let done = conn
            .prompt(s::PromptRequest::new(
                session.session_id.clone(),
                vec!["write it".into()],
            ))
            .await
            .expect("prompt");
        assert_eq!(done.stop_reason, s::StopReason::EndTurn);
        conn.handle().notifications_handled().await;
        {
            let seen = seen.lock().unwrap();
            let path = dir.0.join(SDK_AGENT_FILE);
            assert_eq!(
                message_chunks(&seen.updates),
                [
                    "one".to_string(),
                    " two".into(),
                    " three".into(),
                    format!(" read back: {SDK_AGENT_CONTENT}")
                ]
            );
            assert!(seen
                .updates
                .iter()
                .all(|n| n.session_id == session.session_id));
            assert_eq!(seen.permissions.len(), 1);
            let p = &seen.permissions[0];
            assert_eq!(p.session_id, session.session_id);
            assert_eq!(&*p.tool_call.tool_call_id.0, "write-1");
            assert_eq!(p.tool_call.fields.kind, Some(s::ToolKind::Edit));
            assert_eq!(
                p.tool_call.fields.title.as_deref(),
                Some(&*format!("Write {}", path.display()))
            );
            assert_eq!(seen.writes.len(), 1);
            assert_eq!(seen.writes[0].path, path);
            assert_eq!(seen.writes[0].content, SDK_AGENT_CONTENT);
            assert_eq!(seen.reads.len(), 1);
            assert_eq!(seen.reads[0].path, path);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), SDK_AGENT_CONTENT);
        }

        // `session/cancel` during a long turn: it ends `cancelled`.
        let long_session = conn
            .new_session(s::NewSessionRequest::new(dir.0.clone()))
            .await
            .expect("session/new");
        let before = message_chunks(&seen.lock().unwrap().updates).len();
        let turn = tokio::spawn({
            let conn = conn.clone();
            let sid = long_session.session_id.clone();
            async move {
                conn.prompt(s::PromptRequest::new(sid, vec!["long".into()]))
                    .await
            }
        });
        // Wait until the turn is under way (its first chunk arrived).
        loop {
            let waiting = notify.notified();
            if message_chunks(&seen.lock().unwrap().updates).len() > before {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(100), waiting).await;
        }
        conn.cancel(s::CancelNotification::new(long_session.session_id.clone()))
            .await
            .expect("session/cancel");
        let done = turn
            .await
            .unwrap()
            .expect("the cancelled prompt still answers");
        assert_eq!(done.stop_reason, s::StopReason::Cancelled);
        conn.handle().notifications_handled().await;
        let chunks = message_chunks(&seen.lock().unwrap().updates);
        assert_eq!(chunks[before..], ["working on it", "stopped"]);
    })
    .await;
    conn.close("test done");
    let _ = tokio::time::timeout(Duration::from_secs(5), agent).await;
}

// ---------------------------------------------------------------------------------------------
// 3. The SDK's client against acp-native's `AgentSideConnection`.

const NATIVE_AGENT_FILE: &str = "native-agent.txt";
const NATIVE_AGENT_CONTENT: &str = "written by the acp-native agent through the SDK client\n";

fn native_agent_router() -> Router {
    Router::new()
        .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _cx| async move {
            Ok(s::InitializeResponse::new(p.protocol_version)
                .agent_info(s::Implementation::new("acp-native-test-agent", "0")))
        })
        .route::<typed::NewSession, _, _>(|p: s::NewSessionRequest, _cx| async move {
            if !p.cwd.is_absolute() {
                return Err(ErrorObject::new(
                    CoreCode::InvalidParams,
                    "cwd must be an absolute path",
                )
                .with_data(json!({ "cwd": p.cwd, "reason": "relative" })));
            }
            Ok(s::NewSessionResponse::new("native-1"))
        })
        .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
            let client = cx.client();
            let sid = p.session_id.clone();
            let fail = |e: acp_native::RpcError| e.to_error_object();
            for piece in ["alpha", " beta"] {
                client
                    .session_update(chunk(&sid, piece))
                    .await
                    .map_err(fail)?;
            }
            let answer = client
                .request_permission(s::RequestPermissionRequest::new(
                    sid.clone(),
                    s::ToolCallUpdate::new(
                        "native-write".to_string(),
                        s::ToolCallUpdateFields::new().title("Write a file".to_string()),
                    ),
                    vec![
                        s::PermissionOption::new(
                            "go",
                            "Go ahead",
                            s::PermissionOptionKind::AllowOnce,
                        ),
                        s::PermissionOption::new(
                            "stop",
                            "Don't",
                            s::PermissionOptionKind::RejectAlways,
                        ),
                    ],
                ))
                .await
                .map_err(fail)?;
            let s::RequestPermissionOutcome::Selected(sel) = answer.outcome else {
                return Ok(s::PromptResponse::new(s::StopReason::Cancelled));
            };
            if &*sel.option_id.0 == "go" {
                let text = p.prompt.first().and_then(text_of).unwrap_or_default();
                let cwd = PathBuf::from(text);
                client
                    .write_text_file(s::WriteTextFileRequest::new(
                        sid.clone(),
                        cwd.join(NATIVE_AGENT_FILE),
                        NATIVE_AGENT_CONTENT.to_string(),
                    ))
                    .await
                    .map_err(fail)?;
                client
                    .session_update(chunk(&sid, " written"))
                    .await
                    .map_err(fail)?;
            }
            Ok(s::PromptResponse::new(s::StopReason::EndTurn))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_drives_a_native_agent() {
    let dir = TempDir::new("native-agent");
    let ((cr, cw), (ar, aw)) = transport::duplex(64 * 1024);
    let agent = AgentSideConnection::connect(
        ar,
        aw,
        native_agent_router(),
        DriverConfig::new(Role::Agent),
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (s1, s2, s3) = (seen.clone(), seen.clone(), seen.clone());
    let cwd = dir.0.clone();
    let out = bounded(
        "SDK client + native agent",
        Client
            .v1()
            .name("acp-rs-interop-sdk-client")
            .on_receive_notification(
                async move |n: s::SessionNotification, _cx| {
                    s1.lock().unwrap().updates.push(n);
                    Ok(())
                },
                sdk::on_receive_notification!(),
            )
            .on_receive_request(
                async move |r: s::RequestPermissionRequest, responder, _cx| {
                    let id = option_of(&r, s::PermissionOptionKind::AllowOnce);
                    s2.lock().unwrap().permissions.push(r);
                    responder.respond(selected(&id))
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
            .connect_with(
                ByteStreams::new(cw.compat_write(), cr.compat()),
                async move |cx| {
                    let init = cx
                        .send_request(
                            s::InitializeRequest::new(ProtocolVersion::V1)
                                .client_capabilities(fs_caps()),
                        )
                        .block_task()
                        .await?;
                    // Our handler's error: -32602 with data.
                    let relative = cx
                        .send_request(s::NewSessionRequest::new("relative/dir"))
                        .block_task()
                        .await
                        .expect_err("a relative cwd is refused");
                    // The router's own params check: -32602 with data.details.
                    let bad_params = cx
                        .send_request(sdk::UntypedMessage::new(
                            "session/new",
                            json!({ "cwd": 42, "mcpServers": [] }),
                        )?)
                        .block_task()
                        .await
                        .expect_err("bad params are refused");
                    let session = cx
                        .send_request(s::NewSessionRequest::new(cwd.clone()))
                        .block_task()
                        .await?;
                    let done = cx
                        .send_request(s::PromptRequest::new(
                            session.session_id.clone(),
                            vec![cwd.display().to_string().into()],
                        ))
                        .block_task()
                        .await?;
                    Ok((init, relative, bad_params, session, done))
                },
            ),
    )
    .await;
    let (init, relative, bad_params, session, done) = out.expect("SDK client run failed");
    assert_eq!(init.agent_info.unwrap().name, "acp-native-test-agent");

    assert_eq!(
        relative.code,
        sdk::ErrorCode::INVALID_PARAMS,
        "{relative:?}"
    );
    assert_eq!(relative.message, "cwd must be an absolute path");
    assert_eq!(
        relative.data,
        Some(json!({ "cwd": "relative/dir", "reason": "relative" }))
    );

    assert_eq!(
        bad_params.code,
        sdk::ErrorCode::INVALID_PARAMS,
        "{bad_params:?}"
    );
    let details = bad_params
        .data
        .as_ref()
        .and_then(|d| d.get("details"))
        .and_then(|d| d.as_str())
        .unwrap_or_else(|| panic!("no data.details: {bad_params:?}"));
    assert!(details.contains("invalid type"), "{details}");

    assert_eq!(&*session.session_id.0, "native-1");
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    let seen = seen.lock().unwrap();
    assert_eq!(
        message_chunks(&seen.updates),
        ["alpha", " beta", " written"]
    );
    assert_eq!(seen.permissions.len(), 1);
    let ids: Vec<&str> = seen.permissions[0]
        .options
        .iter()
        .map(|o| &*o.option_id.0)
        .collect();
    assert_eq!(ids, ["go", "stop"]);
    assert_eq!(seen.writes.len(), 1);
    assert_eq!(seen.writes[0].path, dir.0.join(NATIVE_AGENT_FILE));
    assert_eq!(seen.writes[0].content, NATIVE_AGENT_CONTENT);
    assert_eq!(
        std::fs::read_to_string(dir.0.join(NATIVE_AGENT_FILE)).unwrap(),
        NATIVE_AGENT_CONTENT
    );
    agent.close("test done");
}
