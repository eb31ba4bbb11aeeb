//! What the engine itself knows about ACP, without the typed schema: method names, which methods
//! may not be batched, which capability gates which client method, protocol version
//! negotiation, and the few fields it reads (session ids, capabilities).

use serde::Deserialize;

/// The ACP protocol version this engine speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// Methods the agent handles (sent by the client).
pub mod agent {
    pub const INITIALIZE: &str = "initialize";
    pub const AUTHENTICATE: &str = "authenticate";
    pub const LOGOUT: &str = "logout";
    pub const SESSION_NEW: &str = "session/new";
    pub const SESSION_LOAD: &str = "session/load";
    pub const SESSION_RESUME: &str = "session/resume";
    pub const SESSION_LIST: &str = "session/list";
    pub const SESSION_CLOSE: &str = "session/close";
    pub const SESSION_DELETE: &str = "session/delete";
    pub const SESSION_PROMPT: &str = "session/prompt";
    pub const SESSION_SET_MODE: &str = "session/set_mode";
    pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
    /// A notification.
    pub const SESSION_CANCEL: &str = "session/cancel";
}

/// Methods the client handles (sent by the agent).
pub mod client {
    pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
    /// A notification.
    pub const SESSION_UPDATE: &str = "session/update";
    pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
    pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
    pub const TERMINAL_CREATE: &str = "terminal/create";
    pub const TERMINAL_OUTPUT: &str = "terminal/output";
    pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
    pub const TERMINAL_KILL: &str = "terminal/kill";
    pub const TERMINAL_RELEASE: &str = "terminal/release";
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// A notification.
    pub const ELICITATION_COMPLETE: &str = "elicitation/complete";
}

/// `$/cancel_request`: either side asks the other to cancel one of its requests.
pub const CANCEL_REQUEST: &str = "$/cancel_request";

/// Messages that change which later messages are valid; never sent inside a batch (seed 002).
/// With the feature `unstable`, `unstable::NOT_BATCHABLE` adds the draft ones.
pub const NOT_BATCHABLE: &[&str] = &[
    agent::INITIALIZE,
    agent::AUTHENTICATE,
    agent::SESSION_NEW,
    agent::SESSION_LOAD,
    agent::SESSION_PROMPT,
];

/// Extension methods and notifications start with `_`.
pub fn is_extension(method: &str) -> bool {
    method.starts_with('_')
}

/// An extension method's name as sent: `method` with a leading `_` added if it lacks one
/// (`"myapp/ping"` -> `"_myapp/ping"`, `"_myapp/ping"` unchanged), so that [`is_extension`]
/// holds for it.
///
/// ```
/// use acp_core::acp::{ext_name, is_extension};
/// assert_eq!(ext_name("myapp/ping"), "_myapp/ping");
/// assert_eq!(ext_name("_myapp/ping"), "_myapp/ping");
/// assert!(is_extension(&ext_name("myapp/ping")));
/// ```
pub fn ext_name(method: &str) -> String {
    if is_extension(method) {
        method.to_owned()
    } else {
        format!("_{method}")
    }
}

/// Which side a connection plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The editor: sends `initialize`, `session/prompt`...; handles `fs/*`, `terminal/*`,
    /// `session/request_permission`.
    Client,
    /// The agent.
    Agent,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Agent => "agent",
        }
    }
}

/// The capability a client must advertise before an agent may call `method`, if any.
pub fn required_client_capability(method: &str) -> Option<&'static str> {
    match method {
        client::FS_READ_TEXT_FILE => Some("fs.readTextFile"),
        client::FS_WRITE_TEXT_FILE => Some("fs.writeTextFile"),
        client::TERMINAL_CREATE
        | client::TERMINAL_OUTPUT
        | client::TERMINAL_WAIT_FOR_EXIT
        | client::TERMINAL_KILL
        | client::TERMINAL_RELEASE => Some("terminal"),
        _ => None,
    }
}

/// The client capabilities the engine acts on (read from `initialize` params; all else is
/// ignored here and left to the application).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
    pub terminal: bool,
}

impl ClientCapabilities {
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "fs.readTextFile" => self.read_text_file,
            "fs.writeTextFile" => self.write_text_file,
            "terminal" => self.terminal,
            _ => true,
        }
    }

    /// Reads `clientCapabilities` from `initialize` params; anything malformed counts as absent.
    pub fn from_initialize_params(params: Option<&str>) -> Self {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            #[serde(default)]
            client_capabilities: Option<Caps>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Caps {
            #[serde(default)]
            fs: Option<Fs>,
            #[serde(default)]
            terminal: Option<bool>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Fs {
            #[serde(default)]
            read_text_file: Option<bool>,
            #[serde(default)]
            write_text_file: Option<bool>,
        }
        let caps = params
            .and_then(|p| serde_json::from_str::<Params>(p).ok())
            .and_then(|p| p.client_capabilities)
            .unwrap_or_default();
        let fs = caps.fs.unwrap_or_default();
        ClientCapabilities {
            read_text_file: fs.read_text_file.unwrap_or(false),
            write_text_file: fs.write_text_file.unwrap_or(false),
            terminal: caps.terminal.unwrap_or(false),
        }
    }
}

/// The protocol version an agent answers with: the client's if supported, else the latest the
/// agent supports (the spec's negotiation rule).
pub fn negotiate_protocol_version(requested: u16) -> u16 {
    if requested == PROTOCOL_VERSION {
        requested
    } else {
        PROTOCOL_VERSION
    }
}

/// Reads `sessionId` from params without decoding the rest.
pub fn session_id_of(params: Option<&str>) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct P {
        session_id: String,
    }
    params
        .and_then(|p| serde_json::from_str::<P>(p).ok())
        .map(|p| p.session_id)
}

/// Reads `protocolVersion` from an `initialize` result.
pub(crate) fn protocol_version_of(result: &str) -> Option<serde_json::Value> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct R {
        protocol_version: serde_json::Value,
    }
    serde_json::from_str::<R>(result)
        .ok()
        .map(|r| r.protocol_version)
}

/// The result that answers a `session/request_permission` the user never decided on.
pub const PERMISSION_CANCELLED_RESULT: &str = r#"{"outcome":{"outcome":"cancelled"}}"#;

/// Where a session's prompt turn stands (client side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    Idle,
    /// A `session/prompt` is in flight.
    Prompting,
    /// `session/cancel` was sent; the prompt's response (stop reason `cancelled`) is awaited.
    /// Late `session/update`s are still accepted.
    Cancelling,
}
