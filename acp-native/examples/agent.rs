//! An agent on its own stdin/stdout: answers `initialize`, `session/new` and
//! `session/prompt`, streaming its answer and, when the client can write files, asking
//! permission before it writes the prompt into `agent-example.txt` in the session's
//! directory through the client; `session/cancel` ends the turn with stop reason `cancelled`.
//!
//! ```sh
//! cargo build -p acp-native --examples
//! target/debug/examples/client target/debug/examples/agent     # the client example runs it
//! cargo run -p acp-cli -- chat -- target/debug/examples/agent  # and so does `acp chat`
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_native::layers::{CatchPanicLayer, LifecycleLayer};
use acp_native::schema::{v1 as s, ProtocolVersion};
use acp_native::{transport, typed, AgentSideConnection, CancellationToken, DriverConfig};
use acp_native::{ErrorCode, ErrorObject, RequestContext, Role, Router, RpcError};
use tower::ServiceBuilder;

/// The file a turn writes, in the session's directory.
const FILE: &str = "agent-example.txt";

/// Each session's directory and the cancellation token of its current turn.
#[derive(Default)]
struct Agent {
    sessions: Mutex<HashMap<String, (PathBuf, CancellationToken)>>,
}

#[tokio::main]
async fn main() {
    let agent = Arc::new(Agent::default());
    // This process's stdin and stdout: nothing else may write to stdout (log to stderr).
    let (stdin, stdout) = transport::stdio();
    let config = DriverConfig::new(Role::Agent);
    let conn = AgentSideConnection::connect_with(stdin, stdout, config, |_conn| {
        let (sessions, turns, cancels) = (agent.clone(), agent.clone(), agent);
        let router = Router::new()
            .route::<typed::Initialize, _, _>(|_p: s::InitializeRequest, _cx| async move {
                let info = s::Implementation::new("acp-native-example-agent", "0.1.0");
                Ok(s::InitializeResponse::new(ProtocolVersion::V1).agent_info(info))
            })
            .route::<typed::NewSession, _, _>(move |p: s::NewSessionRequest, _cx| {
                let mut all = sessions.sessions.lock().unwrap();
                let id = format!("session-{}", all.len() + 1);
                all.insert(id.clone(), (p.cwd, CancellationToken::new()));
                async move { Ok(s::NewSessionResponse::new(id)) }
            })
            .route::<typed::Prompt, _, _>(move |p: s::PromptRequest, cx| {
                let agent = turns.clone();
                async move { agent.prompt(p, cx).await }
            })
            .notification::<typed::Cancel, _, _>(move |n: s::CancelNotification, _cx| {
                if let Some((_, turn)) = cancels.sessions.lock().unwrap().get(&*n.session_id.0) {
                    turn.cancel();
                }
                async {}
            });
        // A panicking handler becomes an error answer; before `initialize` succeeded,
        // nothing else is served.
        ServiceBuilder::new()
            .layer(CatchPanicLayer)
            .layer(LifecycleLayer::new())
            .service(router)
    });
    let reason = conn.closed().await;
    // Let the last answers reach the client before the process exits.
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.handle().flushed()).await;
    eprintln!("agent: the connection ended: {reason}");
}

impl Agent {
    async fn prompt(
        &self,
        p: s::PromptRequest,
        cx: RequestContext,
    ) -> Result<s::PromptResponse, ErrorObject> {
        let (cwd, turn) = {
            let mut sessions = self.sessions.lock().unwrap();
            let Some((cwd, turn)) = sessions.get_mut(&*p.session_id.0) else {
                let message = format!("unknown session {}", p.session_id.0);
                return Err(ErrorObject::new(ErrorCode::ResourceNotFound, message));
            };
            // A fresh token per turn: `session/cancel` fires it, and so does the request's
            // own (the client's `$/cancel_request`, or the connection closing).
            *turn = cx.cancel.child_token();
            (cwd.clone(), turn.clone())
        };
        let text: Vec<&str> = p
            .prompt
            .iter()
            .filter_map(|block| match block {
                s::ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        let text = text.join(" ");
        let client = cx.client();
        tokio::select! {
            _ = turn.cancelled() => Ok(s::PromptResponse::new(s::StopReason::Cancelled)),
            done = run_turn(&client, &p.session_id, &cwd, &text) => {
                done.map_err(|e| e.to_error_object())?;
                Ok(s::PromptResponse::new(s::StopReason::EndTurn))
            }
        }
    }
}

/// The turn: the answer streamed a few words at a time, then the write, if the client can
/// write files and the user allows it.
async fn run_turn(
    client: &AgentSideConnection,
    session: &s::SessionId,
    cwd: &Path,
    text: &str,
) -> Result<(), RpcError> {
    let answer = format!("You said: {text}");
    let words: Vec<&str> = answer.split_inclusive(' ').collect();
    for chunk in words.chunks(3) {
        say(client, session, chunk.concat()).await?;
    }
    if !client.client_capabilities().write_text_file {
        return say(client, session, "\n(The client cannot write files.)".into()).await;
    }

    // A tool call the client shows, the user's permission, then the write through the client
    // (which may hold unsaved edits, and decides where the agent may write).
    let path = cwd.join(FILE);
    let call = s::ToolCall::new("write-1", format!("Write {FILE}"))
        .kind(s::ToolKind::Edit)
        .status(s::ToolCallStatus::Pending)
        .locations(vec![s::ToolCallLocation::new(&path)]);
    update(client, session, s::SessionUpdate::ToolCall(call)).await?;
    let options = vec![
        s::PermissionOption::new("allow", "Allow", s::PermissionOptionKind::AllowOnce),
        s::PermissionOption::new("reject", "Reject", s::PermissionOptionKind::RejectOnce),
    ];
    let title = format!("Write {}", path.display());
    let asked = s::ToolCallUpdate::new("write-1", s::ToolCallUpdateFields::new().title(title));
    let answer = client
        .request_permission(s::RequestPermissionRequest::new(
            session.clone(),
            asked,
            options,
        ))
        .await?;
    let allowed = matches!(
        &answer.outcome,
        s::RequestPermissionOutcome::Selected(chosen) if &*chosen.option_id.0 == "allow"
    );
    let (status, end) = if allowed {
        let write = s::WriteTextFileRequest::new(session.clone(), &path, format!("{text}\n"));
        client.write_text_file(write).await?;
        (s::ToolCallStatus::Completed, format!("\nI wrote {FILE}."))
    } else {
        (
            s::ToolCallStatus::Failed,
            format!("\nI did not write {FILE}."),
        )
    };
    let fields = s::ToolCallUpdateFields::new().status(status);
    let done = s::SessionUpdate::ToolCallUpdate(s::ToolCallUpdate::new("write-1", fields));
    update(client, session, done).await?;
    say(client, session, end).await
}

/// Sends one `session/update`; resolves once it is queued for the client.
async fn update(
    client: &AgentSideConnection,
    session: &s::SessionId,
    update: s::SessionUpdate,
) -> Result<(), RpcError> {
    let notification = s::SessionNotification::new(session.clone(), update);
    client.session_update(notification).await
}

/// Streams `text` as a chunk of the agent's message.
async fn say(
    client: &AgentSideConnection,
    session: &s::SessionId,
    text: String,
) -> Result<(), RpcError> {
    let chunk = s::ContentChunk::new(text.into());
    update(client, session, s::SessionUpdate::AgentMessageChunk(chunk)).await
}
