//! Unstable ACP (feature `unstable`): the draft methods and session updates of the official
//! schema crate's `unstable` umbrella, and the capability each one needs. Their capabilities
//! are read into [`crate::acp::ClientCapabilities`] and [`crate::acp::AgentCapabilities`]
//! (the fields marked "feature `unstable`"), beside the stable ones.
//!
//! The rules, for both roles (with [`crate::Config::enforce_capabilities`], on by default):
//!
//! - a client sends `session/fork`, `session/archive`, `session/unarchive`, `session/status`,
//!   `session/set_title`, `session/options`, `auth/status` and `providers/*` only after the
//!   agent's `initialize` result advertised the matching capability
//!   ([`required_agent_capability`]); an agent that receives one of them without having
//!   advertised it answers -32601 (done by the engine);
//! - a client sends non-empty initial `configOptions` in `session/new`, `load`, `resume` or
//!   `fork` ([`CONFIG_OPTIONS_METHODS`]) only when the agent advertised
//!   `sessionCapabilities.options` (an empty list or `null` is the same as none); a
//!   `systemPrompt` in `session/fork` follows the stable rule of the other session methods
//!   ([`crate::acp::capabilities`]);
//! - an agent sends `auth/status_update` only when it advertised `auth.status` itself, and
//!   `session/update`s of the kinds `prompt_suggestions_update` (client capability
//!   `session.promptSuggestions`; a suggestion holding an `image`, `audio` or `resource`
//!   block also needs its `image`, `audio` or `embeddedContext`) and `cursor_update`
//!   (`session.cursors`) only when the client advertised them; a client that receives one it
//!   did not allow reports it ([`crate::PeerErrorKind::CapabilityNotAdvertised`]) and drops
//!   it;
//! - `proxy/initialize` (a conductor's `initialize`) and `session/fork` (which creates a session,
//!   like `session/new`) are never batched.
//!
//! Local refusals are [`crate::Error::CapabilityNotAdvertised`], as for `fs/*` and `terminal/*`.
//! `mcp/message` (MCP over ACP) and `proxy/successor` need no capability of their own: they
//! address an ACP MCP server declared in `session/new`, or a proxy chain a conductor set up.
//!
//! Not checked by the engine, as they depend on what a session said rather than on
//! `initialize`: a `cursorId` in `session/fork` names a cursor the agent announced on that
//! session with `capabilities.fork` (the agent answers -32602 otherwise), and a client's
//! methods on a subagent's session are those its `subagent_update` permitted.
//!
//! The schema crate's `unstable_agent_skills` (in the umbrella) adds nothing to protocol
//! version 1: its types exist only in the draft protocol version 2.

use serde::Deserialize;

/// `session/fork`: a new session from an existing one's context (`sessionCapabilities.fork`).
pub const SESSION_FORK: &str = "session/fork";
/// `session/archive`: hide a session from the default `session/list`
/// (`sessionCapabilities.archive`).
pub const SESSION_ARCHIVE: &str = "session/archive";
/// `session/unarchive`: undo `session/archive` (`sessionCapabilities.archive`).
pub const SESSION_UNARCHIVE: &str = "session/unarchive";
/// `session/status`: whether the agent has a session in memory (`sessionCapabilities.status`).
pub const SESSION_STATUS: &str = "session/status";
/// `session/set_title`: the client names a session (`sessionCapabilities.title`).
pub const SESSION_SET_TITLE: &str = "session/set_title";
/// `session/options`: the config options a session would start with, without creating one
/// (`sessionCapabilities.options`).
pub const SESSION_OPTIONS: &str = "session/options";
/// `auth/status`: the agent's authentication state (`auth.status`).
pub const AUTH_STATUS: &str = "auth/status";
/// `providers/list`: the agent's LLM providers (`providers`).
pub const PROVIDERS_LIST: &str = "providers/list";
/// `providers/set`: replace the configuration of one of the agent's LLM providers
/// (`providers`).
pub const PROVIDERS_SET: &str = "providers/set";
/// `providers/disable`: turn one of the agent's LLM providers off (`providers`).
pub const PROVIDERS_DISABLE: &str = "providers/disable";
/// MCP over ACP: a request or notification in either direction.
pub const MCP_MESSAGE: &str = "mcp/message";
/// Proxy chains: a conductor's `initialize` to a proxy.
pub const PROXY_INITIALIZE: &str = "proxy/initialize";
/// Proxy chains: a message forwarded to or from a proxy's successor.
pub const PROXY_SUCCESSOR: &str = "proxy/successor";
/// A notification from the agent: its authentication state changed (the agent's `auth.status`).
pub const AUTH_STATUS_UPDATE: &str = "auth/status_update";

/// The `session/update` kind that replaces the session's prompt suggestions (client capability
/// `session.promptSuggestions`).
pub const PROMPT_SUGGESTIONS_UPDATE: &str = "prompt_suggestions_update";
/// The `session/update` kind that announces a session cursor or changes its capabilities
/// (client capability `session.cursors`).
pub const CURSOR_UPDATE: &str = "cursor_update";

/// Unstable methods never sent inside a batch (they change which later messages are valid).
pub const NOT_BATCHABLE: &[&str] = &[PROXY_INITIALIZE, SESSION_FORK];

/// Session methods that may carry initial `configOptions` (agent capability
/// `sessionCapabilities.options`).
pub const CONFIG_OPTIONS_METHODS: &[&str] = &[
    crate::acp::agent::SESSION_NEW,
    crate::acp::agent::SESSION_LOAD,
    crate::acp::agent::SESSION_RESUME,
    SESSION_FORK,
];

/// The agent capability a client needs before sending `method` (a path in `agentCapabilities`).
pub fn required_agent_capability(method: &str) -> Option<&'static str> {
    match method {
        SESSION_FORK => Some("sessionCapabilities.fork"),
        SESSION_ARCHIVE | SESSION_UNARCHIVE => Some("sessionCapabilities.archive"),
        SESSION_STATUS => Some("sessionCapabilities.status"),
        SESSION_SET_TITLE => Some("sessionCapabilities.title"),
        SESSION_OPTIONS => Some("sessionCapabilities.options"),
        AUTH_STATUS | AUTH_STATUS_UPDATE => Some("auth.status"),
        PROVIDERS_LIST | PROVIDERS_SET | PROVIDERS_DISABLE => Some("providers"),
        _ => None,
    }
}

/// The client capability a `prompt_suggestions_update` (its `update` member, JSON text) needs
/// for its suggestions beyond `session.promptSuggestions` (which allows `text` and
/// `resource_link` blocks), if `client` lacks it.
pub(crate) fn missing_for_suggestions(
    client: &crate::acp::ClientCapabilities,
    update: &str,
) -> Option<&'static str> {
    #[derive(Deserialize)]
    struct U {
        #[serde(default)]
        suggestions: Vec<Suggestion>,
    }
    #[derive(Deserialize)]
    struct Suggestion {
        #[serde(default)]
        prompt: Vec<Block>,
    }
    #[derive(Deserialize)]
    struct Block {
        #[serde(rename = "type", default)]
        kind: String,
    }
    let u: U = serde_json::from_str(update).ok()?;
    u.suggestions.iter().flat_map(|s| &s.prompt).find_map(|b| {
        let (cap, allowed) = match b.kind.as_str() {
            "image" => (
                "session.promptSuggestions.image",
                client.prompt_suggestions_image,
            ),
            "audio" => (
                "session.promptSuggestions.audio",
                client.prompt_suggestions_audio,
            ),
            "resource" => (
                "session.promptSuggestions.embeddedContext",
                client.prompt_suggestions_embedded_context,
            ),
            _ => return None,
        };
        (!allowed).then_some(cap)
    })
}

/// Whether a whole request message we wrote carries non-empty `params.configOptions`.
pub(crate) fn sends_config_options(message: &[u8]) -> bool {
    use crate::acp::capabilities::{has_unicode_escape, positions};
    if positions(message, b"configOptions", 6).next().is_none() && !has_unicode_escape(message) {
        return false;
    }
    let Some(options) = std::str::from_utf8(message)
        .ok()
        .and_then(|m| crate::acp::capabilities::path(m, &["params", "configOptions"]))
    else {
        return false;
    };
    serde_json::from_str::<Vec<serde::de::IgnoredAny>>(options.get()).is_ok_and(|o| !o.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::{Advertised, AgentCapabilities, ClientCapabilities};

    #[test]
    fn draft_capabilities_are_read_leniently() {
        let caps = AgentCapabilities::from_initialize_result(
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"fork":{},"status":null,"title":{"x":1},"options":{}},"auth":{"status":{}},"mcpCapabilities":{"acp":"yes"},"providers":{}}}"#,
        );
        assert_eq!(
            caps,
            AgentCapabilities {
                session_fork: true,
                session_title: true,
                session_options: true,
                auth_status: true,
                providers: true,
                ..AgentCapabilities::default()
            }
        );
        // A malformed part counts as absent without hiding the rest.
        let caps = AgentCapabilities::from_initialize_result(
            r#"{"agentCapabilities":{"sessionCapabilities":7,"auth":{"status":{}}}}"#,
        );
        assert!(caps.auth_status && !caps.session_fork);
        let c = ClientCapabilities::from_initialize_params(Some(
            r#"{"protocolVersion":1,"clientCapabilities":{"session":{"promptSuggestions":{"image":{},"audio":null},"cursors":{}}}}"#,
        ));
        assert!(c.prompt_suggestions && c.prompt_suggestions_image && c.cursors);
        assert!(!c.prompt_suggestions_audio && !c.prompt_suggestions_embedded_context);
        let a = Advertised {
            client: c,
            agent: AgentCapabilities {
                auth_status: true,
                ..AgentCapabilities::default()
            },
        };
        assert_eq!(Advertised::from_bits(a.to_bits()), a);
    }

    #[test]
    fn suggestions_need_the_block_types_capabilities() {
        let p = |blocks: &str| {
            format!(
                r#"{{"sessionId":"s","update":{{"sessionUpdate":"prompt_suggestions_update","suggestions":[{{"prompt":[{{"type":"text","text":"a"}}]}},{{"prompt":{blocks}}}]}}}}"#
            )
        };
        let text = p(r#"[{"type":"resource_link","uri":"file:///a","name":"a"}]"#);
        let image = p(r#"[{"type":"image","data":"","mimeType":"image/png"}]"#);
        let resource = p(r#"[{"type":"resource","resource":{"uri":"file:///a","text":""}}]"#);
        let mut c = ClientCapabilities::default();
        let missing = |c: &ClientCapabilities, params: &str| {
            Advertised {
                client: *c,
                agent: AgentCapabilities::default(),
            }
            .missing_for_notification(
                crate::Role::Agent,
                "session/update",
                Some(params),
            )
        };
        assert_eq!(missing(&c, &text), Some("session.promptSuggestions"));
        c.prompt_suggestions = true;
        assert_eq!(missing(&c, &text), None);
        assert_eq!(missing(&c, &image), Some("session.promptSuggestions.image"));
        assert_eq!(
            missing(&c, &resource),
            Some("session.promptSuggestions.embeddedContext")
        );
        c.prompt_suggestions_image = true;
        assert_eq!(missing(&c, &image), None);
    }

    #[test]
    fn config_options_are_found_when_not_empty() {
        let msg = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"session/new","params":{{"cwd":"/w","mcpServers":[],"configOptions":{v}}}}}"#
            )
        };
        assert!(sends_config_options(
            msg(r#"[{"configId":"model","value":"fast"}]"#).as_bytes()
        ));
        assert!(!sends_config_options(msg("[]").as_bytes()));
        assert!(!sends_config_options(msg("null").as_bytes()));
    }
}
