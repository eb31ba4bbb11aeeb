//! The messages every contestant sends, built with the schema crate's types: `crate::schema`
//! is acp-core's (`agent-client-protocol-schema` as the workspace pins it) here, and the
//! official SDK's own in `tests/rust-sdk`, which compiles this same file (`#[path]`), so both
//! sides put the same bytes on the wire.

use crate::common::*;
use crate::schema::v1 as s;
use crate::schema::ProtocolVersion;

/// The notification the agent streams (a fresh value each time, as an agent would build it).
pub fn chunk_notification() -> s::SessionNotification {
    s::SessionNotification::new(
        SESSION_ID,
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(s::ContentBlock::Text(
            s::TextContent::new(CHUNK_TEXT),
        ))),
    )
}

/// What the client checks on every decoded notification.
pub fn check_chunk(n: &s::SessionNotification) -> bool {
    matches!(&n.update, s::SessionUpdate::AgentMessageChunk(c)
        if matches!(&c.content, s::ContentBlock::Text(t) if t.text.len() == CHUNK_TEXT.len()))
}

pub fn new_session_request() -> s::NewSessionRequest {
    s::NewSessionRequest::new(CWD)
}

pub fn new_session_response() -> s::NewSessionResponse {
    s::NewSessionResponse::new(SESSION_ID)
}

pub fn initialize_request() -> s::InitializeRequest {
    s::InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        s::ClientCapabilities::new().fs(s::FileSystemCapabilities::new().write_text_file(true)),
    )
}

pub fn initialize_response() -> s::InitializeResponse {
    s::InitializeResponse::new(ProtocolVersion::V1)
}

/// The trigger the client sends: the agent then streams / writes (see `Scenario`).
pub fn prompt_request() -> s::PromptRequest {
    s::PromptRequest::new(
        SESSION_ID,
        vec![s::ContentBlock::Text(s::TextContent::new("go"))],
    )
}

pub fn prompt_response() -> s::PromptResponse {
    s::PromptResponse::new(s::StopReason::EndTurn)
}

pub fn write_request(content: String) -> s::WriteTextFileRequest {
    s::WriteTextFileRequest::new(SESSION_ID, WRITE_PATH, content)
}
