//! `acp-bench interop-agent`: an acp-native agent (`AgentSideConnection` with a `Router`) on
//! this process's stdio, which the official Rust SDK's client drives in
//! tests/interop_rust_sdk.rs (`rust-sdk-peer client native-agent -- acp-bench interop-agent`).
//!
//! `initialize` names it `acp-native-test-agent`; `session/new` refuses a relative `cwd` with
//! -32602 and data (our handler's error) and answers `native-1`; `session/prompt` streams
//! `alpha`, ` beta`, asks permission (options `go`, `stop`), and on `go` writes
//! [`NATIVE_AGENT_CONTENT`] to `<prompt text>/native-agent.txt` through the client, then
//! streams ` written`. Params that do not decode are the router's own -32602.

use std::path::PathBuf;

use acp_core::typed;
use acp_core::typed::schema::v1 as s;
use acp_core::{ErrorCode, ErrorObject, Role};
use acp_native::{transport, AgentSideConnection, DriverConfig, Router};
use serde_json::json;

/// The file the agent writes, in the directory its prompt names.
pub const NATIVE_AGENT_FILE: &str = "native-agent.txt";
/// What it writes there.
pub const NATIVE_AGENT_CONTENT: &str = "written by the acp-native agent through the SDK client\n";

fn chunk(session: &s::SessionId, text: &str) -> s::SessionNotification {
    s::SessionNotification::new(
        session.clone(),
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.to_string().into())),
    )
}

fn router() -> Router {
    Router::new()
        .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _cx| async move {
            Ok(s::InitializeResponse::new(p.protocol_version)
                .agent_info(s::Implementation::new("acp-native-test-agent", "0")))
        })
        .route::<typed::NewSession, _, _>(|p: s::NewSessionRequest, _cx| async move {
            if !p.cwd.is_absolute() {
                return Err(ErrorObject::new(
                    ErrorCode::InvalidParams,
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
                let dir = match p.prompt.first() {
                    Some(s::ContentBlock::Text(t)) => PathBuf::from(&t.text),
                    _ => PathBuf::new(),
                };
                client
                    .write_text_file(s::WriteTextFileRequest::new(
                        sid.clone(),
                        dir.join(NATIVE_AGENT_FILE),
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

/// Serves one client on stdio until it hangs up; the exit status.
pub fn main() -> i32 {
    crate::common::runtime().block_on(async {
        let (stdin, stdout) = transport::stdio();
        let conn =
            AgentSideConnection::connect(stdin, stdout, router(), DriverConfig::new(Role::Agent));
        conn.closed().await;
    });
    0
}
