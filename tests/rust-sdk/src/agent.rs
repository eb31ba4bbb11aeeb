//! The SDK's test agent (`Agent.v1()`), which acp-rs's clients drive: on stdio
//! (`rust-sdk-peer agent`) and behind the official HTTP server (`http-server`).
//!
//! - `initialize`: answers the client's protocol version, `agentInfo` `rust-sdk-test-agent`,
//!   and keeps whether the client can write files.
//! - `session/new`: a `cwd` of [`FORBIDDEN_CWD`] is refused with [`forbidden_error`] (its own
//!   code, message and data); otherwise sessions `sdk-1`, `sdk-2`, …
//! - `session/prompt` with the text `long`: the chunk `working on it`, then it waits for
//!   `session/cancel`, sends `stopped` and ends `cancelled`. Any other text: the chunks `one`,
//!   ` two`, ` three`, a permission request (tool call `write-1`, `Write <cwd>/sdk-agent.txt`,
//!   options `yes` / `no`), the chunk ` (answered <option>)` (or ` (cancelled)`), and, when the
//!   client allowed it and can write files, [`SDK_AGENT_CONTENT`] written to that file through
//!   `fs/write_text_file`, read back through `fs/read_text_file` and reported as
//!   ` read back: <content>`; `end_turn`.
//! - Anything else is the SDK's own answer (-32601 for a method it does not handle).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol as sdk;
use agent_client_protocol::v1::schema as s;
use agent_client_protocol::{Agent, Client, ConnectTo};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// `session/new` with this cwd is refused with [`forbidden_error`].
pub const FORBIDDEN_CWD: &str = "/forbidden-by-the-sdk-agent";
/// The file the agent writes, in its session's cwd.
pub const SDK_AGENT_FILE: &str = "sdk-agent.txt";
/// What it writes there.
pub const SDK_AGENT_CONTENT: &str = "written by the Rust SDK agent through fs/write_text_file\n";
/// How long a `long` turn waits for `session/cancel` at most.
const LONG_TURN: Duration = Duration::from_secs(120);

pub fn forbidden_error() -> sdk::Error {
    sdk::Error::new(
        sdk::ErrorCode::new(-32042),
        "the SDK agent refuses this cwd",
    )
    .data(json!({
        "cwd": FORBIDDEN_CWD,
        "nested": { "list": [1, "two", null], "ok": false },
    }))
}

fn text_of(block: &s::ContentBlock) -> Option<&str> {
    match block {
        s::ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

fn chunk(session: &s::SessionId, text: &str) -> s::SessionNotification {
    s::SessionNotification::new(
        session.clone(),
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.to_string().into())),
    )
}

/// One turn, run outside the SDK's dispatch loop (it calls the client).
async fn turn(
    cx: sdk::v1::ConnectionTo<Client>,
    p: s::PromptRequest,
    cwd: PathBuf,
    writes: bool,
    cancel: CancellationToken,
) -> Result<s::StopReason, sdk::Error> {
    let sid = p.session_id.clone();
    let text = p.prompt.first().and_then(text_of).unwrap_or_default();
    if text == "long" {
        cx.send_notification(chunk(&sid, "working on it"))?;
        return tokio::select! {
            _ = cancel.cancelled() => {
                cx.send_notification(chunk(&sid, "stopped"))?;
                Ok(s::StopReason::Cancelled)
            }
            _ = tokio::time::sleep(LONG_TURN) => Ok(s::StopReason::EndTurn),
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
    let allowed = match &permission.outcome {
        s::RequestPermissionOutcome::Selected(sel) => {
            cx.send_notification(chunk(&sid, &format!(" (answered {})", sel.option_id.0)))?;
            &*sel.option_id.0 == "yes"
        }
        _ => {
            cx.send_notification(chunk(&sid, " (cancelled)"))?;
            false
        }
    };
    if allowed && writes {
        cx.send_request(s::WriteTextFileRequest::new(
            sid.clone(),
            path.clone(),
            SDK_AGENT_CONTENT.to_string(),
        ))
        .block_task()
        .await?;
        let read = cx
            .send_request(s::ReadTextFileRequest::new(sid.clone(), path))
            .block_task()
            .await?;
        cx.send_notification(chunk(&sid, &format!(" read back: {}", read.content)))?;
    }
    Ok(s::StopReason::EndTurn)
}

/// The agent, for one connection.
pub fn agent() -> impl ConnectTo<Client> {
    let sessions: Arc<Mutex<Vec<(PathBuf, CancellationToken)>>> = Arc::default();
    let writes = Arc::new(AtomicBool::new(false));
    let (s1, s2, s3) = (sessions.clone(), sessions.clone(), sessions);
    let (w1, w2) = (writes.clone(), writes);
    let index = |sid: &s::SessionId| {
        sid.0
            .strip_prefix("sdk-")
            .and_then(|n| n.parse::<usize>().ok())
            .map(|n| n.wrapping_sub(1))
    };
    Agent
        .v1()
        .name("acp-rs-interop-sdk-agent")
        .on_receive_request(
            async move |init: s::InitializeRequest, responder, _cx| {
                w1.store(
                    init.client_capabilities.fs.write_text_file
                        && init.client_capabilities.fs.read_text_file,
                    Ordering::SeqCst,
                );
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
                let found = index(&p.session_id).and_then(|i| s2.lock().unwrap().get(i).cloned());
                let Some((cwd, cancel)) = found else {
                    return responder.respond_with_error(
                        s::Error::session_not_found(p.session_id.clone()).into(),
                    );
                };
                let writes = w2.load(Ordering::SeqCst);
                let task_cx = cx.clone();
                cx.spawn(async move {
                    match turn(task_cx, p, cwd, writes, cancel).await {
                        Ok(stop) => responder.respond(s::PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            sdk::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: s::CancelNotification, _cx| {
                if let Some((_, t)) =
                    index(&n.session_id).and_then(|i| s3.lock().unwrap().get(i).cloned())
                {
                    t.cancel();
                }
                Ok(())
            },
            sdk::on_receive_notification!(),
        )
}

/// `rust-sdk-peer agent`: the agent on stdio until the client hangs up.
pub fn serve_stdio() -> i32 {
    let res = crate::common::runtime().block_on(agent().connect_to(sdk::Stdio::new()));
    match res {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rust-sdk-peer agent: {e:?}");
            1
        }
    }
}
