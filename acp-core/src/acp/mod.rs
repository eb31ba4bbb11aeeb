//! What the engine itself knows about ACP, without the typed schema: method names, which methods
//! may not be batched, which capability gates which message ([`capabilities`]), protocol
//! version negotiation, and the few fields it reads (session ids, capabilities).

use serde::Deserialize;

pub mod capabilities;

pub use capabilities::{
    required_client_capability, required_client_capability_for_update, Advertised,
    AgentCapabilities, ClientCapabilities, SYSTEM_PROMPT_METHODS,
};

/// The ACP protocol version this engine speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// Methods the agent handles (sent by the client). Requests unless marked as notifications.
pub mod agent {
    /// `initialize`: the first request, which agrees on the protocol version and exchanges
    /// capabilities. An agent connection reads the client's capabilities from its params; a
    /// client connection checks the result's `protocolVersion` and keeps the result
    /// ([`Connection::agent_initialize_result`](crate::Connection::agent_initialize_result)).
    /// Never batched.
    pub const INITIALIZE: &str = "initialize";
    /// `authenticate`: log in with one of the `authMethods` the agent listed. Never batched.
    pub const AUTHENTICATE: &str = "authenticate";
    /// `logout`: end the current authenticated session.
    pub const LOGOUT: &str = "logout";
    /// `session/new`: create a session; the result holds its `sessionId`. Never batched.
    pub const SESSION_NEW: &str = "session/new";
    /// `session/load`: reopen a saved session; the agent replays its history as
    /// `session/update`s before answering. Never batched.
    pub const SESSION_LOAD: &str = "session/load";
    /// `session/resume`: reopen a session without replaying its history.
    pub const SESSION_RESUME: &str = "session/resume";
    /// `session/list`: the sessions the agent can load or resume.
    pub const SESSION_LIST: &str = "session/list";
    /// `session/close`: the agent stops the session's work and frees what it holds.
    pub const SESSION_CLOSE: &str = "session/close";
    /// `session/delete`: remove a session from what `session/list` returns.
    pub const SESSION_DELETE: &str = "session/delete";
    /// `session/prompt`: one prompt turn; answered with its stop reason when the turn ends. A
    /// client connection tracks it per session ([`TurnState`](super::TurnState)) and refuses
    /// a second one while it is in flight. Never batched.
    pub const SESSION_PROMPT: &str = "session/prompt";
    /// `session/set_mode`: switch the session's mode.
    pub const SESSION_SET_MODE: &str = "session/set_mode";
    /// `session/set_config_option`: set one of the session's config options.
    pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
    /// `session/cancel`, a notification: stop the session's prompt turn. Sent by a client
    /// connection, it also answers the session's pending `session/request_permission`s with
    /// `cancelled` (see [`Connection::notify`](crate::Connection::notify)).
    pub const SESSION_CANCEL: &str = "session/cancel";
}

/// Methods the client handles (sent by the agent). Requests unless marked as notifications.
pub mod client {
    /// `session/request_permission`: ask the user before a tool call runs. When it is not
    /// answered in time, the session is cancelled or the connection closes, the engine answers
    /// it with [`PERMISSION_CANCELLED_RESULT`](super::PERMISSION_CANCELLED_RESULT).
    pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
    /// `session/update`, a notification: streamed progress of a session (message chunks, tool
    /// calls, plans, …).
    pub const SESSION_UPDATE: &str = "session/update";
    /// `fs/read_text_file` (client capability `fs.readTextFile`).
    pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
    /// `fs/write_text_file` (client capability `fs.writeTextFile`).
    pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
    /// `terminal/create`: run a command in a new terminal (client capability `terminal`, as
    /// for every `terminal/*` method).
    pub const TERMINAL_CREATE: &str = "terminal/create";
    /// `terminal/output`: the terminal's output so far and its exit status, if it exited.
    pub const TERMINAL_OUTPUT: &str = "terminal/output";
    /// `terminal/wait_for_exit`: answered when the terminal's command exits.
    pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
    /// `terminal/kill`: kill the terminal's command, keeping the terminal.
    pub const TERMINAL_KILL: &str = "terminal/kill";
    /// `terminal/release`: kill the command if it still runs and free the terminal.
    pub const TERMINAL_RELEASE: &str = "terminal/release";
    /// `elicitation/create`: ask the user for structured input (a form or a URL).
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// `elicitation/complete`, a notification: a URL elicitation finished.
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
    /// `"client"` or `"agent"`: a stable lower-case name (for logs, and the wasm build's
    /// `role` getter).
    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Agent => "agent",
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

/// Where a session's prompt turn stands, as a client connection tracks it
/// ([`Connection::turn_state`](crate::Connection::turn_state)). The turn ends, back to
/// `Idle`, when its `session/prompt` completes in any way (answered, failed, timed out,
/// cancelled locally, or the connection closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// No `session/prompt` of this session is in flight: a new one may be sent. Also what an
    /// agent connection, which does not track turns, always reports.
    Idle,
    /// A `session/prompt` is in flight; another one for the session is refused
    /// ([`Error::PromptInFlight`](crate::Error::PromptInFlight)).
    Prompting,
    /// `session/cancel` was sent; the prompt's response (stop reason `cancelled`) is awaited.
    /// Late `session/update`s are still accepted. A new prompt is still refused until the
    /// response arrives.
    Cancelling,
}
