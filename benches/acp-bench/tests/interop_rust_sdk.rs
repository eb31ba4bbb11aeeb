//! Interop with the official ACP Rust SDK (`agent-client-protocol` 5.2), in both directions.
//!
//! The SDK's side is its own program, `rust-sdk-peer` (tests/rust-sdk): the SDK pins another
//! version of the schema crate than acp-core, so the two never share a build; what crosses
//! between them is the wire. CI runs this with `scripts/interop-rust-sdk.sh` (the
//! `interop-rust-sdk` step of `scripts/test.sh`), which builds both programs.
//!
//! 1. The SDK's client (`Client.v1()`) spawns `acp demo-agent` (the SDK's process adapter,
//!    `AcpAgent`) and runs prompt turns: streamed chunks, a file read, a permission request
//!    (allowed, then denied), a file write, `end_turn`, and an error (`-32002`, with data);
//!    cancels turns (`session/cancel`, `$/cancel_request`); and uses the SDK's session API with
//!    `session/load`'s replay.
//! 2. acp-native's `ClientSideConnection` drives the SDK's agent (`rust-sdk-peer agent`, spawned
//!    by `transport::spawn_agent`): a full turn (updates, permission, write, read), the SDK
//!    agent's own error (code, message, data), an unhandled method, and `session/cancel` during
//!    a long turn ending with `cancelled`.
//! 3. acp-native's `AgentSideConnection` (a `Router` agent: `acp-bench interop-agent`) driven by
//!    the SDK's client: a turn, and our errors (`-32602` with data, from a handler and from the
//!    router's own params check) decoded by the SDK.
//!
//! Every test is bounded (`BOUND`); nothing waits forever.

#![cfg(feature = "native")]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed::schema::ProtocolVersion;
use acp_core::{typed, ErrorObject, Role};
use acp_native::process::AgentCommand;
use acp_native::{transport, DriverConfig, Router};
use serde_json::json;
use support::*;

/// What `rust-sdk-peer`'s client serves for `fs/read_text_file`.
const SERVED_BY_SDK: &str = "served by the Rust SDK client\nsecond line\n";

fn fs_caps() -> s::ClientCapabilities {
    s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true))
}

fn acp() -> String {
    acp_bin().display().to_string()
}

// ---------------------------------------------------------------------------------------------
// 1. The SDK's client against `acp demo-agent`.

struct DemoRun {
    init: s::InitializeResponse,
    session: s::NewSessionResponse,
    prompt: s::PromptResponse,
    unknown_session: RpcErr,
    seen: Seen,
}

async fn sdk_client_with_demo_agent(dir: &std::path::Path, prompt: &str, allow: bool) -> DemoRun {
    let cwd = dir.display().to_string();
    let acp = acp();
    let mut args = vec![
        "client",
        "turn",
        "--cwd",
        &cwd,
        "--prompt",
        prompt,
        "--probe-unknown-session",
    ];
    if !allow {
        args.push("--deny");
    }
    args.extend(["--", &acp, "demo-agent"]);
    let r = peer_ok(&args).await;
    DemoRun {
        init: decode(&r["init"]),
        session: decode(&r["session"]),
        prompt: decode(&r["prompt"]),
        unknown_session: error_of(&r["unknownSession"]),
        seen: seen(&r),
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
    assert_eq!(e.code, -32002, "{e:?}");
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
    let run = sdk_client_with_demo_agent(&dir.0, prompt, true).await;
    check_demo_common(&run, prompt);

    // The read went through the SDK client, and the agent reported what it got; then the demo
    // agent reads the file it is about to write (for its diff's old text, ccd3cf3).
    assert_eq!(run.seen.reads.len(), 2, "{:?}", run.seen.reads);
    assert_eq!(run.seen.reads[0].path, dir.0.join("notes.txt"));
    assert_eq!(run.seen.reads[1].path, dir.0.join("acp-demo.txt"));
    assert_eq!(run.seen.reads[0].session_id, run.session.session_id);
    let mut tool_texts = Vec::new();
    for n in &run.seen.updates {
        if let s::SessionUpdate::ToolCallUpdate(u) = &n.update {
            for c in u.fields.content.iter().flatten() {
                if let s::ToolCallContent::Content(c) = c {
                    tool_texts.extend(text_of(&c.content).map(str::to_owned));
                }
            }
        }
    }
    assert!(
        tool_texts
            .iter()
            .any(|t| t == "2 line(s); first line: served by the Rust SDK client"),
        "{tool_texts:?} (served {SERVED_BY_SDK:?})"
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
    let run = sdk_client_with_demo_agent(&dir.0, prompt, false).await;
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
/// allowed answers), then the session still answers a third turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_cancels_demo_agent_turns() {
    let dir = TempDir::new("demo-cancel");
    let cwd = dir.0.display().to_string();
    let acp = acp();
    let r = peer_ok(&[
        "client",
        "cancel",
        "--cwd",
        &cwd,
        "--",
        &acp,
        "demo-agent",
        "--delay-ms",
        "200",
    ])
    .await;
    let by_session_cancel: s::PromptResponse = decode(&r["bySessionCancel"]);
    assert_eq!(by_session_cancel.stop_reason, s::StopReason::Cancelled);
    eprintln!(
        "$/cancel_request of a prompt was answered: {}",
        r["byCancelRequest"]
    );
    match r["byCancelRequest"].get("ok") {
        Some(ok) => assert_eq!(
            decode::<s::PromptResponse>(ok).stop_reason,
            s::StopReason::Cancelled
        ),
        None => assert_eq!(error_of(&r["byCancelRequest"]).code, -32800),
    }
    let third: s::PromptResponse = decode(&r["third"]);
    assert_eq!(third.stop_reason, s::StopReason::Cancelled);
    // No permission was asked: the turns are cancelled long before.
    assert!(seen(&r).permissions.is_empty());
    assert!(!dir.0.join("acp-demo.txt").exists());
}

/// The SDK's high-level session API (`build_session` / `ActiveSession::read_to_string`, then
/// `load_session`, which the demo agent answers by replaying the conversation first) against
/// `acp demo-agent`, with no client capabilities (so the agent asks nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_session_api_with_the_demo_agent_and_load_replay() {
    let dir = TempDir::new("demo-session-api");
    let cwd = dir.0.display().to_string();
    let acp = acp();
    let prompt = "hello via the SDK session API";
    let r = peer_ok(&[
        "client",
        "session-api",
        "--cwd",
        &cwd,
        "--prompt",
        prompt,
        "--",
        &acp,
        "demo-agent",
    ])
    .await;
    let init: s::InitializeResponse = decode(&r["init"]);
    assert!(init.agent_capabilities.load_session);
    let sid: s::SessionId = decode(&r["sessionId"]);
    let answer: String = decode(&r["answer"]);
    let replay: Vec<s::SessionNotification> = decode(&r["replay"]);
    assert!(
        answer.contains(&format!("You said: \"{prompt}\"")),
        "{answer}"
    );
    assert!(
        answer.ends_with("(The client cannot write files, so I wrote nothing.)"),
        "{answer}"
    );
    // Every update of the turn (plus the user's message) was replayed onto the restored
    // session's stream.
    let mut user = String::new();
    for n in &replay {
        assert_eq!(n.session_id, sid);
        if let s::SessionUpdate::UserMessageChunk(c) = &n.update {
            user.push_str(text_of(&c.content).unwrap_or_default());
        }
    }
    assert_eq!(user, prompt);
    assert_eq!(message_chunks(&replay).concat(), answer);
    assert!(replay.len() > 5, "only {} updates replayed", replay.len());
}

// ---------------------------------------------------------------------------------------------
// 2. acp-native's client against the SDK's agent (`rust-sdk-peer agent`).

/// What `rust-sdk-peer`'s agent writes (tests/rust-sdk/src/agent.rs).
const SDK_AGENT_FILE: &str = "sdk-agent.txt";
const SDK_AGENT_CONTENT: &str = "written by the Rust SDK agent through fs/write_text_file\n";
/// `session/new` with this cwd is refused by the SDK agent with its own error.
const FORBIDDEN_CWD: &str = "/forbidden-by-the-sdk-agent";

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
                let id = r
                    .options
                    .iter()
                    .find(|o| o.kind == s::PermissionOptionKind::AllowOnce)
                    .map(|o| o.option_id.clone())
                    .expect("an allow_once option");
                s2.lock().unwrap().permissions.push(r);
                Ok(s::RequestPermissionResponse::new(
                    s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(id)),
                ))
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
    let seen = Arc::new(Mutex::new(NativeSeen::default()));
    let notify = Arc::new(tokio::sync::Notify::new());
    let cmd = AgentCommand::new(sdk_peer().as_os_str()).args(["agent"]);
    let (conn, child) = transport::spawn_agent(
        &cmd,
        native_client_router(seen.clone(), notify.clone()),
        DriverConfig::new(Role::Client),
    )
    .expect("spawn rust-sdk-peer agent");
    let conn = conn.with_timeout(BOUND);

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
        assert_eq!(remote.code, -32042);
        assert_eq!(remote.message, "the SDK agent refuses this cwd");
        assert_eq!(
            remote.data,
            Some(json!({
                "cwd": FORBIDDEN_CWD,
                "nested": { "list": [1, "two", null], "ok": false },
            }))
        );

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
                    " (answered yes)".into(),
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
    let _ = child.shutdown(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// 3. The SDK's client against acp-native's `AgentSideConnection` (`acp-bench interop-agent`,
//    src/interop_agent.rs).

const NATIVE_AGENT_FILE: &str = "native-agent.txt";
const NATIVE_AGENT_CONTENT: &str = "written by the acp-native agent through the SDK client\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_client_drives_a_native_agent() {
    let dir = TempDir::new("native-agent");
    let cwd = dir.0.display().to_string();
    let r = peer_ok(&[
        "client",
        "native-agent",
        "--cwd",
        &cwd,
        "--",
        env!("CARGO_BIN_EXE_acp-bench"),
        "interop-agent",
    ])
    .await;
    let init: s::InitializeResponse = decode(&r["init"]);
    assert_eq!(init.agent_info.unwrap().name, "acp-native-test-agent");

    let relative = error_of(&r["relative"]);
    assert_eq!(relative.code, -32602, "{relative:?}");
    assert_eq!(relative.message, "cwd must be an absolute path");
    assert_eq!(
        relative.data,
        Some(json!({ "cwd": "relative/dir", "reason": "relative" }))
    );

    let bad_params = error_of(&r["badParams"]);
    assert_eq!(bad_params.code, -32602, "{bad_params:?}");
    let details = bad_params
        .data
        .as_ref()
        .and_then(|d| d.get("details"))
        .and_then(|d| d.as_str())
        .unwrap_or_else(|| panic!("no data.details: {bad_params:?}"));
    assert!(details.contains("invalid type"), "{details}");

    let session: s::NewSessionResponse = decode(&r["session"]);
    assert_eq!(&*session.session_id.0, "native-1");
    let done: s::PromptResponse = decode(&r["done"]);
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    let seen = seen(&r);
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
}
