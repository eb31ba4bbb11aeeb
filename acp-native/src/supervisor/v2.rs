//! ACP v2 (draft, feature `unstable_protocol_v2`) on the wire of a supervised agent, when
//! [`SupervisorConfig::offer_v2`](super::SupervisorConfig) asks for it: the `initialize` offer
//! (each start negotiates again: a v1 agent answers 1 and is supervised as before) and the
//! re-attachment of a session after a restart, `session/resume` with `replayFrom: {"type":
//! "start"}` (acp-client's [`reopen_v2`](acp_client::session::reopen_v2): v2 has no
//! `session/load`; the replay goes to the host's service, keyed upserts it folds into what it
//! holds, then `replay_complete`, before the answer, as acp-core checks). `acp chat` builds
//! its v2 offer and replay with the same two functions.

use acp_core::RawValue;
use agent_client_protocol_schema::v1 as s;
use serde_json::json;

use crate::RpcError;

/// The `initialize` params offering v2: `request` (v1's, which every agent reads) with
/// `protocolVersion: 2` and v2's `info` and `capabilities` beside it (`capabilities` empty:
/// v2 has no client file system or terminals).
pub fn offer(request: &s::InitializeRequest) -> Result<Box<RawValue>, RpcError> {
    let mut v = serde_json::to_value(request).map_err(|e| RpcError::Other(e.to_string()))?;
    v["protocolVersion"] = json!(acp_core::v2::PROTOCOL_VERSION);
    v["info"] =
        serde_json::to_value(&request.client_info).map_err(|e| RpcError::Other(e.to_string()))?;
    v["capabilities"] = json!({});
    crate::driver::to_raw(&v)
}

/// `session/resume` of `id` in `cwd` with the MCP servers, replaying from the start.
pub fn replay_params(
    id: &s::SessionId,
    cwd: &std::path::Path,
    mcp: &[s::McpServer],
) -> Result<Box<RawValue>, RpcError> {
    let request = s::ResumeSessionRequest::new(id.clone(), cwd).mcp_servers(mcp.to_vec());
    let mut v = serde_json::to_value(&request).map_err(|e| RpcError::Other(e.to_string()))?;
    v["replayFrom"] = json!({"type": "start"});
    crate::driver::to_raw(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_asks_for_2_in_both_shapes_and_the_resume_replays_from_the_start() {
        let request = s::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_info(s::Implementation::new("host", "1"));
        let v: serde_json::Value = serde_json::from_str(offer(&request).unwrap().get()).unwrap();
        assert_eq!(v["protocolVersion"], 2);
        assert_eq!(v["info"]["name"], "host");
        assert_eq!(v["clientInfo"]["name"], "host");
        assert!(v["capabilities"].is_object());
        let p = replay_params(&"s1".to_string().into(), "/p".as_ref(), &[]).unwrap();
        let v: serde_json::Value = serde_json::from_str(p.get()).unwrap();
        assert_eq!(v["replayFrom"]["type"], "start");
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["cwd"], "/p");
    }
}
