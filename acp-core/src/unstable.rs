//! Unstable ACP (feature `unstable`): the draft methods and session updates of the official
//! schema crate's `unstable_*` features, and the capability each one needs.
//!
//! The rules, for both roles (with [`crate::Config::enforce_capabilities`], on by default):
//!
//! - a client sends `session/fork`, `session/archive`, `session/unarchive`, `session/status`,
//!   `session/set_title`, `auth/status` and `providers/*` only after the agent's `initialize`
//!   result advertised the matching capability ([`required_agent_capability`]); an agent that
//!   receives one of them without having advertised it answers -32601 (done by the engine);
//! - an agent sends `auth/status_update` only when it advertised `auth.status` itself, and
//!   `session/update`s of the kinds `plan_update` / `plan_removed` (client capability `plan`)
//!   and `subagent_update` / `session_message` / `session_message_chunk` (client capability
//!   `subagents`) only when the client advertised them ([`required_client_capability_for_update`]);
//!   a client that receives one it did not allow reports it ([`crate::PeerErrorKind::CapabilityNotAdvertised`])
//!   and drops it;
//! - a client sends `systemPrompt` in `session/new`, `load`, `resume` or `fork` only when the
//!   agent advertised `sessionCapabilities.systemPrompt`;
//! - `proxy/initialize` (a conductor's `initialize`) and `session/fork` (which creates a session,
//!   like `session/new`) are never batched.
//!
//! Local refusals are [`crate::Error::CapabilityNotAdvertised`], as for `fs/*` and `terminal/*`.
//! `mcp/message` (MCP over ACP) and `proxy/successor` need no capability of their own: they
//! address an ACP MCP server declared in `session/new`, or a proxy chain a conductor set up.

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

/// Unstable methods never sent inside a batch (they change which later messages are valid).
pub const NOT_BATCHABLE: &[&str] = &[PROXY_INITIALIZE, SESSION_FORK];

/// The agent capability a client needs before sending `method` (a path in `agentCapabilities`).
pub fn required_agent_capability(method: &str) -> Option<&'static str> {
    match method {
        SESSION_FORK => Some("sessionCapabilities.fork"),
        SESSION_ARCHIVE | SESSION_UNARCHIVE => Some("sessionCapabilities.archive"),
        SESSION_STATUS => Some("sessionCapabilities.status"),
        SESSION_SET_TITLE => Some("sessionCapabilities.title"),
        AUTH_STATUS | AUTH_STATUS_UPDATE => Some("auth.status"),
        PROVIDERS_LIST | PROVIDERS_SET | PROVIDERS_DISABLE => Some("providers"),
        _ => None,
    }
}

/// The client capability an agent needs before sending a `session/update` of this kind
/// (`sessionUpdate`).
pub fn required_client_capability_for_update(kind: &str) -> Option<&'static str> {
    match kind {
        "plan_update" | "plan_removed" => Some("plan"),
        "subagent_update" | "session_message" | "session_message_chunk" => Some("subagents"),
        _ => None,
    }
}

/// Substrings one of which a `session/update` needing a client capability contains (a cheap
/// test before its `sessionUpdate` is read).
pub(crate) const GATED_UPDATE_MARKERS: &[&[u8]] = &[
    b"plan_update",
    b"plan_removed",
    b"session_message",
    b"subagent_update",
];

/// What an agent advertised of the unstable features (`agentCapabilities` of its `initialize`
/// result). A capability object that is present (even `{}`) counts as advertised; `null`,
/// absent or malformed as not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCapabilities {
    /// `sessionCapabilities.fork`: `session/fork`.
    pub session_fork: bool,
    /// `sessionCapabilities.archive`: `session/archive` and `session/unarchive`.
    pub session_archive: bool,
    /// `sessionCapabilities.status`: `session/status`.
    pub session_status: bool,
    /// `sessionCapabilities.title`: `session/set_title`.
    pub session_title: bool,
    /// `sessionCapabilities.systemPrompt`: a `systemPrompt` in the
    /// [`SYSTEM_PROMPT_METHODS`].
    pub session_system_prompt: bool,
    /// `auth.status`: the client's `auth/status` and the agent's `auth/status_update`.
    pub auth_status: bool,
    /// `providers`: the `providers/*` methods.
    pub providers: bool,
    /// `mcpCapabilities.acp`: MCP servers of type `acp` in `session/new`.
    pub mcp_acp: bool,
}

/// A capability object: present, not `null`, an object (anything else counts as absent).
type Present = serde_json::Map<String, serde_json::Value>;

fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    // A malformed capability counts as absent (the schema's `DefaultOnError`), without
    // failing the rest.
    Ok(serde_json::Value::deserialize(d)
        .ok()
        .and_then(|v| T::deserialize(v).ok()))
}

impl AgentCapabilities {
    /// Whether `capability` (a path [`required_agent_capability`] returns, or
    /// `sessionCapabilities.systemPrompt`, `mcpCapabilities.acp`) was advertised. A path the
    /// engine does not track is allowed.
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "sessionCapabilities.fork" => self.session_fork,
            "sessionCapabilities.archive" => self.session_archive,
            "sessionCapabilities.status" => self.session_status,
            "sessionCapabilities.title" => self.session_title,
            "sessionCapabilities.systemPrompt" => self.session_system_prompt,
            "auth.status" => self.auth_status,
            "providers" => self.providers,
            "mcpCapabilities.acp" => self.mcp_acp,
            _ => true,
        }
    }

    /// Reads them from an `initialize` result (JSON text).
    pub fn from_initialize_result(result: &str) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct R {
            #[serde(default, deserialize_with = "lenient")]
            agent_capabilities: Option<Caps>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Caps {
            #[serde(default, deserialize_with = "lenient")]
            session_capabilities: Option<Session>,
            #[serde(default, deserialize_with = "lenient")]
            auth: Option<Auth>,
            #[serde(default, deserialize_with = "lenient")]
            providers: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            mcp_capabilities: Option<Mcp>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Session {
            #[serde(default, deserialize_with = "lenient")]
            fork: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            archive: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            status: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            title: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            system_prompt: Option<Present>,
        }
        #[derive(Deserialize, Default)]
        struct Auth {
            #[serde(default, deserialize_with = "lenient")]
            status: Option<Present>,
        }
        #[derive(Deserialize, Default)]
        struct Mcp {
            #[serde(default, deserialize_with = "lenient")]
            acp: Option<bool>,
        }
        let caps = serde_json::from_str::<R>(result)
            .ok()
            .and_then(|r| r.agent_capabilities)
            .unwrap_or_default();
        let s = caps.session_capabilities.unwrap_or_default();
        AgentCapabilities {
            session_fork: s.fork.is_some(),
            session_archive: s.archive.is_some(),
            session_status: s.status.is_some(),
            session_title: s.title.is_some(),
            session_system_prompt: s.system_prompt.is_some(),
            auth_status: caps.auth.is_some_and(|a| a.status.is_some()),
            providers: caps.providers.is_some(),
            mcp_acp: caps.mcp_capabilities.and_then(|m| m.acp).unwrap_or(false),
        }
    }
}

/// What a client advertised of the unstable features (`clientCapabilities` of its
/// `initialize` params), read like [`AgentCapabilities`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `plan`: `plan_update` and `plan_removed` session updates.
    pub plan: bool,
    /// `subagents`: `subagent_update`, `session_message`, `session_message_chunk`.
    pub subagents: bool,
}

impl ClientCapabilities {
    /// Whether `capability` (a name [`required_client_capability_for_update`] returns) was
    /// advertised. A name the engine does not track is allowed.
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "plan" => self.plan,
            "subagents" => self.subagents,
            _ => true,
        }
    }

    /// Reads them from `initialize` params (JSON text).
    pub fn from_initialize_params(params: &str) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct P {
            #[serde(default, deserialize_with = "lenient")]
            client_capabilities: Option<Caps>,
        }
        #[derive(Deserialize, Default)]
        struct Caps {
            #[serde(default, deserialize_with = "lenient")]
            plan: Option<Present>,
            #[serde(default, deserialize_with = "lenient")]
            subagents: Option<Present>,
        }
        let caps = serde_json::from_str::<P>(params)
            .ok()
            .and_then(|p| p.client_capabilities)
            .unwrap_or_default();
        ClientCapabilities {
            plan: caps.plan.is_some(),
            subagents: caps.subagents.is_some(),
        }
    }
}

/// Both sides' unstable capabilities as one connection knows them: the client's from the
/// `initialize` params (received by an agent, sent by a client), the agent's from the
/// `initialize` result (received by a client, sent by an agent). All false before `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advertised {
    /// The client's, from the `initialize` params.
    pub client: ClientCapabilities,
    /// The agent's, from the `initialize` result.
    pub agent: AgentCapabilities,
}

impl Advertised {
    /// The capability a notification `method` (with `params`, JSON text) sent by `role` needs
    /// and that was not advertised, if any: an agent's `auth/status_update` (its own
    /// `auth.status`) and its draft `session/update` kinds (the client's `plan`, `subagents`).
    /// The engine refuses those in `notify`; a host that queues notifications without a round
    /// trip to the engine asks this first.
    pub fn missing_for_notification(
        &self,
        role: crate::Role,
        method: &str,
        params: Option<&str>,
    ) -> Option<&'static str> {
        if role != crate::Role::Agent {
            return None;
        }
        if method == AUTH_STATUS_UPDATE {
            return (!self.agent.auth_status).then_some("auth.status");
        }
        if method == crate::acp::client::SESSION_UPDATE {
            let cap = gated_update_kind(params?.as_bytes())?;
            return (!self.client.allows(cap)).then_some(cap);
        }
        None
    }
}

/// The capability a `session/update`'s kind needs, if any, from its params (JSON text).
/// Params without one of the gated kinds' names anywhere are not parsed.
pub(crate) fn gated_update_kind(params: &[u8]) -> Option<&'static str> {
    if !mentions_gated_kind(params) {
        return None;
    }
    #[derive(Deserialize)]
    struct P {
        update: U,
    }
    let p: P = serde_json::from_slice(params).ok()?;
    required_client_capability_for_update(&p.update.session_update)
}

/// The same for a whole `session/update` message we wrote (`{"jsonrpc":..,"params":{..}}`).
pub(crate) fn gated_update_kind_in_message(message: &[u8]) -> Option<&'static str> {
    if !mentions_gated_kind(message) {
        return None;
    }
    #[derive(Deserialize)]
    struct M {
        params: P,
    }
    #[derive(Deserialize)]
    struct P {
        update: U,
    }
    let m: M = serde_json::from_slice(message).ok()?;
    required_client_capability_for_update(&m.params.update.session_update)
}

/// Session methods that may carry a `systemPrompt` (agent capability
/// `sessionCapabilities.systemPrompt`).
pub const SYSTEM_PROMPT_METHODS: &[&str] = &[
    crate::acp::agent::SESSION_NEW,
    crate::acp::agent::SESSION_LOAD,
    crate::acp::agent::SESSION_RESUME,
    SESSION_FORK,
];

/// Whether a whole request message we wrote carries a non-null `params.systemPrompt`.
pub(crate) fn sends_system_prompt(message: &[u8]) -> bool {
    if memchr::memmem::find(message, b"systemPrompt").is_none() {
        return false;
    }
    #[derive(Deserialize)]
    struct M {
        params: P,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct P {
        #[serde(default)]
        system_prompt: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<M>(message).is_ok_and(|m| m.params.system_prompt.is_some())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct U {
    session_update: String,
}

fn mentions_gated_kind(bytes: &[u8]) -> bool {
    GATED_UPDATE_MARKERS
        .iter()
        .any(|m| memchr::memmem::find(bytes, m).is_some())
}

/// `params` (or `result`) of a whole message we wrote, as JSON text.
pub(crate) fn member_of_message(message: &[u8], result: bool) -> Option<String> {
    #[derive(Deserialize)]
    struct M<'a> {
        #[serde(borrow, default)]
        params: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        result: Option<&'a serde_json::value::RawValue>,
    }
    let m: M<'_> = serde_json::from_slice(message).ok()?;
    let v = if result { m.result } else { m.params };
    v.map(|r| r.get().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_capabilities_are_read_leniently() {
        let caps = AgentCapabilities::from_initialize_result(
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"fork":{},"status":null,"title":{"x":1}},"auth":{"status":{}},"mcpCapabilities":{"acp":"yes"},"providers":{}}}"#,
        );
        assert_eq!(
            caps,
            AgentCapabilities {
                session_fork: true,
                session_title: true,
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
        assert_eq!(
            AgentCapabilities::from_initialize_result("not json"),
            AgentCapabilities::default()
        );
    }

    #[test]
    fn client_capabilities_and_gated_updates() {
        let c = ClientCapabilities::from_initialize_params(
            r#"{"protocolVersion":1,"clientCapabilities":{"plan":{},"subagents":null}}"#,
        );
        assert_eq!(
            c,
            ClientCapabilities {
                plan: true,
                subagents: false
            }
        );
        let p =
            |kind: &str| format!(r#"{{"sessionId":"s","update":{{"sessionUpdate":"{kind}"}}}}"#);
        assert_eq!(gated_update_kind(p("plan_update").as_bytes()), Some("plan"));
        assert_eq!(
            gated_update_kind(p("session_message_chunk").as_bytes()),
            Some("subagents")
        );
        assert_eq!(gated_update_kind(p("plan").as_bytes()), None);
        // The name inside text is not the kind.
        let text = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"plan_update"}}}"#;
        assert_eq!(gated_update_kind(text.as_bytes()), None);
    }
}
