//! ACP v2's capability rules (feature `unstable_protocol_v2`). v2 reads `capabilities` (not
//! v1's `clientCapabilities`/`agentCapabilities`) and gates whole method surfaces:
//!
//! - the client calls the `session/*` methods only when the agent advertised `session` (even
//!   `{}`: `session/new`, `list`, `resume`, `close`, `prompt`, `cancel`, `set_config_option`
//!   and the `tool_call/cancel` and `terminal/cancel` of its turns), `session/delete` only with
//!   `session.delete` (and the drafts `session/fork`, `archive`/`unarchive`, `status`,
//!   `options`, `set_title` with their `session.*` capability), `providers/*` with
//!   `providers`, `auth/status` with `auth.status`, and `auth/login`/`auth/logout` only when
//!   the agent's `authMethods` is not empty ([`required_agent_capability`]);
//! - a prompt holds `image`, `audio` and `resource` blocks only with `session.prompt.image`,
//!   `.audio`, `.embeddedContext`; `mcpServers` of type `stdio`/`http` only with
//!   `session.mcp.stdio`/`.http`; `additionalDirectories` only with
//!   `session.additionalDirectories` ([`missing_for_params`]);
//! - the agent asks `elicitation/create` in mode `form`/`url` only when the client advertised
//!   `elicitation.form`/`.url` (non-null), and offers `terminal` auth methods only when the
//!   client advertised `auth.terminal` ([`ClientCapabilities::missing_for_elicitation`],
//!   [`ClientCapabilities::missing_for_initialize_result`]);
//! - a prompt's `idempotencyKey`, when present and not `null`, is a string of 1 to 255
//!   characters; an agent rejects any other value with -32602 ([`check_idempotency_key`]);
//! - [`NOT_BATCHABLE`]: the lifecycle messages v2 asks not to batch.
//!
//! A present capability object (even `{}`) counts as advertised; `null`, absent or another
//! type as not. The connection applies these rules with
//! [`Config::enforce_capabilities`](crate::Config::enforce_capabilities), as v1's.

use serde_json::value::RawValue;

use crate::acp::capabilities::{member, path};

/// The lifecycle messages v2 asks senders not to batch ("they can change which later
/// messages are valid"): refused inside a batch on a v2 connection, both ways.
pub const NOT_BATCHABLE: &[&str] = &[
    "initialize",
    "auth/login",
    "session/new",
    "session/resume",
    "session/prompt",
];

/// Methods that carry `mcpServers` and `additionalDirectories`.
const SESSION_SETUP_METHODS: &[&str] = &["session/new", "session/resume", "session/fork"];

/// The longest idempotency key, in characters.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

/// What a v2 agent advertised in its `initialize` result (`capabilities`, `authMethods`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCapabilities {
    /// `session`: the baseline session surface.
    pub session: bool,
    /// `session.delete`.
    pub delete: bool,
    /// `session.fork` (draft).
    pub fork: bool,
    /// `session.archive` (draft): `session/archive` and `session/unarchive`.
    pub archive: bool,
    /// `session.status` (draft).
    pub status: bool,
    /// `session.options` (draft).
    pub options: bool,
    /// `session.title` (draft): `session/set_title`.
    pub title: bool,
    /// `session.prompt.image`.
    pub prompt_image: bool,
    /// `session.prompt.audio`.
    pub prompt_audio: bool,
    /// `session.prompt.embeddedContext`: `resource` blocks.
    pub prompt_embedded_context: bool,
    /// `session.mcp.stdio`.
    pub mcp_stdio: bool,
    /// `session.mcp.http`.
    pub mcp_http: bool,
    /// `session.additionalDirectories`.
    pub additional_directories: bool,
    /// `providers` (draft): `providers/list`, `set`, `disable`.
    pub providers: bool,
    /// `auth.status` (draft): `auth/status`.
    pub auth_status: bool,
    /// `authMethods` holds at least one entry: `auth/login` and `auth/logout` exist.
    pub auth_methods: bool,
}

impl AgentCapabilities {
    /// Reads an agent's v2 `initialize` result (JSON text); all false when it is malformed.
    pub fn from_initialize_result(result: &str) -> Self {
        let caps = member(result, "capabilities").map_or("null", RawValue::get);
        let has = |keys: &[&str]| path(caps, keys).is_some_and(is_object);
        AgentCapabilities {
            session: has(&["session"]),
            delete: has(&["session", "delete"]),
            fork: has(&["session", "fork"]),
            archive: has(&["session", "archive"]),
            status: has(&["session", "status"]),
            options: has(&["session", "options"]),
            title: has(&["session", "title"]),
            prompt_image: has(&["session", "prompt", "image"]),
            prompt_audio: has(&["session", "prompt", "audio"]),
            prompt_embedded_context: has(&["session", "prompt", "embeddedContext"]),
            mcp_stdio: has(&["session", "mcp", "stdio"]),
            mcp_http: has(&["session", "mcp", "http"]),
            additional_directories: has(&["session", "additionalDirectories"]),
            providers: has(&["providers"]),
            auth_status: has(&["auth", "status"]),
            auth_methods: member(result, "authMethods")
                .is_some_and(|v| v.get().starts_with('[') && !is_empty_array(v.get())),
        }
    }

    /// Whether the capability at `path` (as [`required_agent_capability`] and
    /// [`missing_for_params`] name them) was advertised. Unknown paths are not.
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "session" => self.session,
            "session.delete" => self.delete,
            "session.fork" => self.fork,
            "session.archive" => self.archive,
            "session.status" => self.status,
            "session.options" => self.options,
            "session.title" => self.title,
            "session.prompt.image" => self.prompt_image,
            "session.prompt.audio" => self.prompt_audio,
            "session.prompt.embeddedContext" => self.prompt_embedded_context,
            "session.mcp.stdio" => self.mcp_stdio,
            "session.mcp.http" => self.mcp_http,
            "session.additionalDirectories" => self.additional_directories,
            "providers" => self.providers,
            "auth.status" => self.auth_status,
            "authMethods" => self.auth_methods,
            _ => false,
        }
    }
}

/// What a v2 client advertised in its `initialize` params (`capabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `elicitation.form` (non-null): `elicitation/create` in mode `form`.
    pub elicitation_form: bool,
    /// `elicitation.url` (non-null): `elicitation/create` in mode `url`.
    pub elicitation_url: bool,
    /// `auth.terminal`: the agent may offer `terminal` auth methods.
    pub auth_terminal: bool,
}

impl ClientCapabilities {
    /// Reads a client's v2 `initialize` params (JSON text); all false when malformed.
    pub fn from_initialize_params(params: &str) -> Self {
        let caps = member(params, "capabilities").map_or("null", RawValue::get);
        let has = |keys: &[&str]| path(caps, keys).is_some_and(is_object);
        ClientCapabilities {
            elicitation_form: has(&["elicitation", "form"]),
            elicitation_url: has(&["elicitation", "url"]),
            auth_terminal: has(&["auth", "terminal"]),
        }
    }

    /// The capability an `elicitation/create`'s params (JSON text) need that this client did
    /// not advertise: `elicitation.form` or `elicitation.url` for those modes (custom and
    /// future modes are the peers' own business).
    pub fn missing_for_elicitation(&self, params: &str) -> Option<&'static str> {
        match member(params, "mode").map(RawValue::get) {
            Some(r#""form""#) if !self.elicitation_form => Some("elicitation.form"),
            Some(r#""url""#) if !self.elicitation_url => Some("elicitation.url"),
            _ => None,
        }
    }

    /// The capability an agent's `initialize` result (JSON text) needs that this client did
    /// not advertise: `auth.terminal` for an auth method of type `terminal`.
    pub fn missing_for_initialize_result(&self, result: &str) -> Option<&'static str> {
        if self.auth_terminal {
            return None;
        }
        let methods = member(result, "authMethods")?;
        let methods: Vec<&RawValue> = serde_json::from_str(methods.get()).ok()?;
        methods
            .iter()
            .any(|m| member(m.get(), "type").map(RawValue::get) == Some(r#""terminal""#))
            .then_some("auth.terminal")
    }
}

/// The agent capability a client must see before calling `method` on a v2 connection, as a
/// path for [`AgentCapabilities::allows`]; `None` for methods open to every client
/// (`initialize`, extensions, `$/cancel_request`, …).
pub fn required_agent_capability(method: &str) -> Option<&'static str> {
    Some(match method {
        "session/new"
        | "session/list"
        | "session/resume"
        | "session/close"
        | "session/prompt"
        | "session/cancel"
        | "session/set_config_option"
        | "tool_call/cancel"
        | "terminal/cancel" => "session",
        "session/delete" => "session.delete",
        "session/fork" => "session.fork",
        "session/archive" | "session/unarchive" => "session.archive",
        "session/status" => "session.status",
        "session/options" => "session.options",
        "session/set_title" => "session.title",
        "providers/list" | "providers/set" | "providers/disable" => "providers",
        "auth/status" => "auth.status",
        "auth/login" | "auth/logout" => "authMethods",
        _ => return None,
    })
}

/// Whether [`missing_for_params`] (and, for `session/prompt`, [`check_idempotency_key`]) read
/// `method`'s params at all: a sender need not copy the params of other methods to check them.
pub fn reads_params(method: &str) -> bool {
    method == "session/prompt" || SESSION_SETUP_METHODS.contains(&method)
}

/// The capability a client request's params (JSON text) need that `agent` did not advertise:
/// a prompt's `image`/`audio`/`resource` blocks, a session setup's `stdio`/`http` MCP servers
/// or its non-empty `additionalDirectories`.
pub fn missing_for_params(
    agent: &AgentCapabilities,
    method: &str,
    params: &str,
) -> Option<&'static str> {
    let need = |cap: &'static str| (!agent.allows(cap)).then_some(cap);
    if method == "session/prompt" {
        let blocks: Vec<&RawValue> = member(params, "prompt")
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        for block in blocks {
            let cap = match member(block.get(), "type").map(RawValue::get) {
                Some(r#""image""#) => "session.prompt.image",
                Some(r#""audio""#) => "session.prompt.audio",
                Some(r#""resource""#) => "session.prompt.embeddedContext",
                _ => continue,
            };
            if let Some(missing) = need(cap) {
                return Some(missing);
            }
        }
        return None;
    }
    if !SESSION_SETUP_METHODS.contains(&method) {
        return None;
    }
    let servers: Vec<&RawValue> = member(params, "mcpServers")
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    for server in servers {
        let cap = match member(server.get(), "type").map(RawValue::get) {
            Some(r#""stdio""#) => "session.mcp.stdio",
            Some(r#""http""#) => "session.mcp.http",
            _ => continue,
        };
        if let Some(missing) = need(cap) {
            return Some(missing);
        }
    }
    let dirs = member(params, "additionalDirectories").map(RawValue::get);
    if dirs.is_some_and(|d| d.starts_with('[') && !is_empty_array(d)) {
        return need("session.additionalDirectories");
    }
    None
}

/// Checks a `session/prompt`'s `idempotencyKey` (params as JSON text): absent or `null` is no
/// key; otherwise it must be a string of 1 to [`IDEMPOTENCY_KEY_MAX`] characters.
///
/// # Errors
///
/// Why the key is malformed, in words for an error message.
pub fn check_idempotency_key(params: &str) -> Result<(), String> {
    let Some(raw) = member(params, "idempotencyKey") else {
        return Ok(());
    };
    if raw.get() == "null" {
        return Ok(());
    }
    let key: String = serde_json::from_str(raw.get())
        .map_err(|_| "idempotencyKey must be a string (or null)".to_owned())?;
    match key.chars().count() {
        0 => Err("idempotencyKey must not be empty".into()),
        n if n > IDEMPOTENCY_KEY_MAX => Err(format!(
            "idempotencyKey must be at most {IDEMPOTENCY_KEY_MAX} characters (it has {n})"
        )),
        _ => Ok(()),
    }
}

/// A capability object is present: an object, not `null` (anything else counts as absent).
fn is_object(v: &RawValue) -> bool {
    v.get().starts_with('{')
}

fn is_empty_array(json: &str) -> bool {
    serde_json::from_str::<Vec<&RawValue>>(json).is_ok_and(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"{"protocolVersion":2,"capabilities":{"session":{"delete":{},"prompt":{"image":{},"audio":{},"embeddedContext":{}},"mcp":{"stdio":{},"http":{}},"additionalDirectories":{}},"auth":{"status":{}}},"authMethods":[{"methodId":"m","name":"M"}]}"#;

    #[test]
    fn agent_capabilities_are_read_from_the_v2_shape() {
        let full = AgentCapabilities::from_initialize_result(FULL);
        for cap in [
            "session",
            "session.delete",
            "session.prompt.image",
            "session.prompt.audio",
            "session.prompt.embeddedContext",
            "session.mcp.stdio",
            "session.mcp.http",
            "session.additionalDirectories",
            "auth.status",
            "authMethods",
        ] {
            assert!(full.allows(cap), "{cap}");
        }
        assert!(!full.allows("session.fork") && !full.allows("providers"));
        let bare = AgentCapabilities::from_initialize_result(
            r#"{"protocolVersion":2,"capabilities":{"session":{}},"authMethods":[]}"#,
        );
        assert!(bare.session && !bare.auth_methods && !bare.prompt_image);
        // null, absent, malformed: not advertised; v1's shape is not read.
        for result in [
            r#"{"capabilities":{"session":null}}"#,
            r#"{"capabilities":{"session":true}}"#,
            r#"{"agentCapabilities":{"loadSession":true}}"#,
            "[]",
        ] {
            assert_eq!(
                AgentCapabilities::from_initialize_result(result),
                AgentCapabilities::default(),
                "{result}"
            );
        }
    }

    #[test]
    fn methods_need_their_surface() {
        assert_eq!(required_agent_capability("session/prompt"), Some("session"));
        assert_eq!(
            required_agent_capability("session/delete"),
            Some("session.delete")
        );
        assert_eq!(
            required_agent_capability("auth/logout"),
            Some("authMethods")
        );
        for open in [
            "initialize",
            "_x/y",
            "$/cancel_request",
            "elicitation/create",
        ] {
            assert_eq!(required_agent_capability(open), None, "{open}");
        }
    }

    #[test]
    fn params_need_their_capabilities() {
        let bare = AgentCapabilities {
            session: true,
            ..AgentCapabilities::default()
        };
        let full = AgentCapabilities::from_initialize_result(FULL);
        let cases = [
            (
                "session/prompt",
                r#"{"sessionId":"s","prompt":[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///a","name":"a"}]}"#,
                None,
            ),
            (
                "session/prompt",
                r#"{"sessionId":"s","prompt":[{"type":"text","text":"a"},{"type":"image","data":"","mimeType":"image/png"}]}"#,
                Some("session.prompt.image"),
            ),
            (
                "session/prompt",
                r#"{"sessionId":"s","prompt":[{"type":"audio","data":"","mimeType":"audio/wav"}]}"#,
                Some("session.prompt.audio"),
            ),
            (
                "session/prompt",
                r#"{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"file:///a","text":""}}]}"#,
                Some("session.prompt.embeddedContext"),
            ),
            (
                "session/new",
                r#"{"cwd":"/w","mcpServers":[{"type":"stdio","name":"f","command":"/bin/true","args":[],"env":[]}]}"#,
                Some("session.mcp.stdio"),
            ),
            (
                "session/resume",
                r#"{"sessionId":"s","cwd":"/w","mcpServers":[{"type":"http","name":"h","url":"http://x","headers":[]}]}"#,
                Some("session.mcp.http"),
            ),
            (
                "session/new",
                r#"{"cwd":"/w","additionalDirectories":["/x"]}"#,
                Some("session.additionalDirectories"),
            ),
            (
                "session/new",
                r#"{"cwd":"/w","mcpServers":[],"additionalDirectories":[]}"#,
                None,
            ),
            // Other methods' params are not read.
            (
                "session/close",
                r#"{"mcpServers":[{"type":"stdio"}]}"#,
                None,
            ),
        ];
        assert!(!reads_params("session/close") && !reads_params("session/cancel"));
        for (method, params, want) in cases {
            assert!(want.is_none() || reads_params(method), "{method}");
            assert_eq!(missing_for_params(&bare, method, params), want, "{params}");
            assert_eq!(missing_for_params(&full, method, params), None, "{params}");
        }
    }

    #[test]
    fn client_capabilities_gate_elicitation_modes_and_terminal_auth() {
        let none = ClientCapabilities::from_initialize_params(
            r#"{"protocolVersion":2,"capabilities":{"elicitation":{"form":null}}}"#,
        );
        assert_eq!(none, ClientCapabilities::default());
        assert_eq!(
            none.missing_for_elicitation(r#"{"mode":"form","message":"m"}"#),
            Some("elicitation.form")
        );
        assert_eq!(
            none.missing_for_elicitation(r#"{"mode":"url","message":"m"}"#),
            Some("elicitation.url")
        );
        assert_eq!(none.missing_for_elicitation(r#"{"mode":"_mine"}"#), None);
        let result = r#"{"protocolVersion":2,"authMethods":[{"methodId":"a","name":"A"},{"methodId":"t","name":"T","type":"terminal"}]}"#;
        assert_eq!(
            none.missing_for_initialize_result(result),
            Some("auth.terminal")
        );
        let all = ClientCapabilities::from_initialize_params(
            r#"{"capabilities":{"elicitation":{"form":{},"url":{}},"auth":{"terminal":{}}}}"#,
        );
        assert!(all.elicitation_form && all.elicitation_url && all.auth_terminal);
        assert_eq!(all.missing_for_elicitation(r#"{"mode":"url"}"#), None);
        assert_eq!(all.missing_for_initialize_result(result), None);
    }

    #[test]
    fn idempotency_keys_are_one_to_255_characters() {
        let p = |key: &str| format!(r#"{{"sessionId":"s","prompt":[],"idempotencyKey":{key}}}"#);
        assert!(check_idempotency_key(r#"{"sessionId":"s","prompt":[]}"#).is_ok());
        assert!(check_idempotency_key(&p("null")).is_ok());
        assert!(check_idempotency_key(&p(r#""0b6f3c1e-8d2a""#)).is_ok());
        let max = format!("\"{}\"", "é".repeat(IDEMPOTENCY_KEY_MAX));
        assert!(
            check_idempotency_key(&p(&max)).is_ok(),
            "counted in characters"
        );
        let long = format!("\"{}\"", "k".repeat(IDEMPOTENCY_KEY_MAX + 1));
        assert_eq!(
            check_idempotency_key(&p(&long)).unwrap_err(),
            "idempotencyKey must be at most 255 characters (it has 256)"
        );
        assert_eq!(
            check_idempotency_key(&p(r#""""#)).unwrap_err(),
            "idempotencyKey must not be empty"
        );
        assert_eq!(
            check_idempotency_key(&p("7")).unwrap_err(),
            "idempotencyKey must be a string (or null)"
        );
    }
}
