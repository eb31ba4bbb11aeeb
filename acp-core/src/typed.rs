//! Typed ACP messages (feature `typed`), from the official `agent-client-protocol-schema` crate.
//!
//! Each stable v1 method is a marker type implementing [`Method`] (requests) or
//! [`NotificationMethod`] (notifications), naming its wire name and its params/result types.
//! The engine keeps params raw; these helpers decode them only when a handler asks.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;

pub use agent_client_protocol_schema as schema;
use agent_client_protocol_schema::v1 as s;

use crate::acp::{self, Role};
use crate::connection::{Connection, Millis, RequestOptions};
use crate::error::Error;

/// A request method: its wire name, who handles it, and its params and result types.
pub trait Method {
    /// The method name on the wire (one of the [`crate::acp`] constants).
    const NAME: &'static str;
    /// The side that handles (receives) it. The few methods either side may send
    /// (`$/cancel_request`, `mcp/message`, `proxy/successor`) name one of the two; their
    /// marker types say so.
    const HANDLED_BY: Role;
    /// The schema type of its `params`.
    type Params: Serialize + DeserializeOwned;
    /// The schema type of its `result`.
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its wire name, who handles it, and its params type.
pub trait NotificationMethod {
    /// The method name on the wire (one of the [`crate::acp`] constants).
    const NAME: &'static str;
    /// The side that handles (receives) it, as for [`Method::HANDLED_BY`].
    const HANDLED_BY: Role;
    /// The schema type of its `params`.
    type Params: Serialize + DeserializeOwned;
}

macro_rules! methods {
    ($($(#[$doc:meta])* $ty:ident = $name:expr, $role:ident, $p:ty => $r:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;
        impl Method for $ty {
            const NAME: &'static str = $name;
            const HANDLED_BY: Role = Role::$role;
            type Params = $p;
            type Result = $r;
        }
    )*};
}

macro_rules! notifications {
    ($($(#[$doc:meta])* $ty:ident = $name:expr, $role:ident, $p:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;
        impl NotificationMethod for $ty {
            const NAME: &'static str = $name;
            const HANDLED_BY: Role = Role::$role;
            type Params = $p;
        }
    )*};
}

methods! {
    /// `initialize` ([`acp::agent::INITIALIZE`]).
    Initialize = acp::agent::INITIALIZE, Agent, s::InitializeRequest => s::InitializeResponse;
    /// `authenticate` ([`acp::agent::AUTHENTICATE`]).
    Authenticate = acp::agent::AUTHENTICATE, Agent, s::AuthenticateRequest => s::AuthenticateResponse;
    /// `logout` ([`acp::agent::LOGOUT`]).
    Logout = acp::agent::LOGOUT, Agent, s::LogoutRequest => s::LogoutResponse;
    /// `session/new` ([`acp::agent::SESSION_NEW`]).
    NewSession = acp::agent::SESSION_NEW, Agent, s::NewSessionRequest => s::NewSessionResponse;
    /// `session/load` ([`acp::agent::SESSION_LOAD`]).
    LoadSession = acp::agent::SESSION_LOAD, Agent, s::LoadSessionRequest => s::LoadSessionResponse;
    /// `session/resume` ([`acp::agent::SESSION_RESUME`]).
    ResumeSession = acp::agent::SESSION_RESUME, Agent, s::ResumeSessionRequest => s::ResumeSessionResponse;
    /// `session/list` ([`acp::agent::SESSION_LIST`]).
    ListSessions = acp::agent::SESSION_LIST, Agent, s::ListSessionsRequest => s::ListSessionsResponse;
    /// `session/close` ([`acp::agent::SESSION_CLOSE`]).
    CloseSession = acp::agent::SESSION_CLOSE, Agent, s::CloseSessionRequest => s::CloseSessionResponse;
    /// `session/delete` ([`acp::agent::SESSION_DELETE`]).
    DeleteSession = acp::agent::SESSION_DELETE, Agent, s::DeleteSessionRequest => s::DeleteSessionResponse;
    /// `session/prompt` ([`acp::agent::SESSION_PROMPT`]).
    Prompt = acp::agent::SESSION_PROMPT, Agent, s::PromptRequest => s::PromptResponse;
    /// `session/set_mode` ([`acp::agent::SESSION_SET_MODE`]).
    SetSessionMode = acp::agent::SESSION_SET_MODE, Agent, s::SetSessionModeRequest => s::SetSessionModeResponse;
    /// `session/set_config_option` ([`acp::agent::SESSION_SET_CONFIG_OPTION`]).
    SetSessionConfigOption = acp::agent::SESSION_SET_CONFIG_OPTION, Agent, s::SetSessionConfigOptionRequest => s::SetSessionConfigOptionResponse;

    /// `session/request_permission` ([`acp::client::SESSION_REQUEST_PERMISSION`]).
    RequestPermission = acp::client::SESSION_REQUEST_PERMISSION, Client, s::RequestPermissionRequest => s::RequestPermissionResponse;
    /// `fs/read_text_file` ([`acp::client::FS_READ_TEXT_FILE`]).
    ReadTextFile = acp::client::FS_READ_TEXT_FILE, Client, s::ReadTextFileRequest => s::ReadTextFileResponse;
    /// `fs/write_text_file` ([`acp::client::FS_WRITE_TEXT_FILE`]).
    WriteTextFile = acp::client::FS_WRITE_TEXT_FILE, Client, s::WriteTextFileRequest => s::WriteTextFileResponse;
    /// `terminal/create` ([`acp::client::TERMINAL_CREATE`]).
    CreateTerminal = acp::client::TERMINAL_CREATE, Client, s::CreateTerminalRequest => s::CreateTerminalResponse;
    /// `terminal/output` ([`acp::client::TERMINAL_OUTPUT`]).
    TerminalOutput = acp::client::TERMINAL_OUTPUT, Client, s::TerminalOutputRequest => s::TerminalOutputResponse;
    /// `terminal/wait_for_exit` ([`acp::client::TERMINAL_WAIT_FOR_EXIT`]).
    WaitForTerminalExit = acp::client::TERMINAL_WAIT_FOR_EXIT, Client, s::WaitForTerminalExitRequest => s::WaitForTerminalExitResponse;
    /// `terminal/kill` ([`acp::client::TERMINAL_KILL`]).
    KillTerminal = acp::client::TERMINAL_KILL, Client, s::KillTerminalRequest => s::KillTerminalResponse;
    /// `terminal/release` ([`acp::client::TERMINAL_RELEASE`]).
    ReleaseTerminal = acp::client::TERMINAL_RELEASE, Client, s::ReleaseTerminalRequest => s::ReleaseTerminalResponse;
    /// `elicitation/create` ([`acp::client::ELICITATION_CREATE`]).
    CreateElicitation = acp::client::ELICITATION_CREATE, Client, s::CreateElicitationRequest => s::CreateElicitationResponse;
}

notifications! {
    /// `session/cancel` ([`acp::agent::SESSION_CANCEL`]).
    Cancel = acp::agent::SESSION_CANCEL, Agent, s::CancelNotification;
    /// `session/update` ([`acp::client::SESSION_UPDATE`]).
    SessionUpdate = acp::client::SESSION_UPDATE, Client, s::SessionNotification;
    /// `elicitation/complete` ([`acp::client::ELICITATION_COMPLETE`]).
    CompleteElicitation = acp::client::ELICITATION_COMPLETE, Client, s::CompleteElicitationNotification;
    /// `$/cancel_request` ([`acp::CANCEL_REQUEST`]). Either side may send it; the engine
    /// handles it itself on receipt ([`Event::CancelRequested`](crate::Event::CancelRequested))
    /// and sends it itself when a request of its own times out or is cancelled.
    CancelRequest = acp::CANCEL_REQUEST, Agent, s::CancelRequestNotification;
}

/// Decodes params for `M`, typically those of an [`Event::Request`](crate::Event::Request)
/// (absent params decode as `null`, which most types refuse). On error, answer the request
/// with [`ErrorObject::invalid_params`](crate::ErrorObject::invalid_params).
pub fn decode_params<M: Method>(params: Option<&RawValue>) -> Result<M::Params, serde_json::Error> {
    serde_json::from_str(params.map_or("null", RawValue::get))
}

/// Decodes notification params for `N`, as [`decode_params`] does.
pub fn decode_notification<N: NotificationMethod>(
    params: Option<&RawValue>,
) -> Result<N::Params, serde_json::Error> {
    serde_json::from_str(params.map_or("null", RawValue::get))
}

/// Decodes a result for `M`, typically that of an [`Event::Response`](crate::Event::Response).
pub fn decode_result<M: Method>(result: &RawValue) -> Result<M::Result, serde_json::Error> {
    serde_json::from_str(result.get())
}

impl<T> Connection<T> {
    /// Sends a typed request: [`Connection::send_request`] with `M`'s name.
    pub fn request<M: Method>(
        &mut self,
        params: &M::Params,
        opts: RequestOptions<T>,
        now: Millis,
    ) -> Result<u64, Error> {
        self.send_request(M::NAME, Some(params), opts, now)
    }

    /// Sends a typed notification: [`Connection::notify`] with `N`'s name.
    pub fn notify_typed<N: NotificationMethod>(&mut self, params: &N::Params) -> Result<(), Error> {
        self.notify(N::NAME, Some(params))
    }

    /// Answers an incoming request of method `M` with a typed result: [`Connection::respond`].
    /// The engine does not check that the request's method is `M`'s.
    pub fn respond_typed<M: Method>(
        &mut self,
        token: u64,
        result: &M::Result,
    ) -> Result<(), Error> {
        self.respond(token, result)
    }
}

/// Marker types of the unstable (draft) methods (features `typed` and `unstable`): the schema
/// crate's `unstable_*` types under the same [`Method`] / [`NotificationMethod`] traits. Their
/// capability rules are in [`crate::unstable`]. They may change with any schema release.
#[cfg(feature = "unstable")]
pub mod unstable {
    use super::{s, Method, NotificationMethod, Role};
    use crate::unstable as u;

    methods! {
        /// `session/fork` (agent capability `sessionCapabilities.fork`).
        ForkSession = u::SESSION_FORK, Agent, s::ForkSessionRequest => s::ForkSessionResponse;
        /// `session/archive` (`sessionCapabilities.archive`).
        ArchiveSession = u::SESSION_ARCHIVE, Agent, s::ArchiveSessionRequest => s::ArchiveSessionResponse;
        /// `session/unarchive` (`sessionCapabilities.archive`).
        UnarchiveSession = u::SESSION_UNARCHIVE, Agent, s::UnarchiveSessionRequest => s::UnarchiveSessionResponse;
        /// `session/status` (`sessionCapabilities.status`).
        SessionStatus = u::SESSION_STATUS, Agent, s::SessionStatusRequest => s::SessionStatusResponse;
        /// `session/set_title` (`sessionCapabilities.title`).
        SetSessionTitle = u::SESSION_SET_TITLE, Agent, s::SetSessionTitleRequest => s::SetSessionTitleResponse;
        /// `session/options` (`sessionCapabilities.options`).
        SessionOptions = u::SESSION_OPTIONS, Agent, s::SessionOptionsRequest => s::SessionOptionsResponse;
        /// `auth/status` (`auth.status`).
        AuthStatus = u::AUTH_STATUS, Agent, s::AuthStatusRequest => s::AuthStatusResponse;
        /// `providers/list` (`providers`).
        ListProviders = u::PROVIDERS_LIST, Agent, s::ListProvidersRequest => s::ListProvidersResponse;
        /// `providers/set` (`providers`).
        SetProvider = u::PROVIDERS_SET, Agent, s::SetProviderRequest => s::SetProviderResponse;
        /// `providers/disable` (`providers`).
        DisableProvider = u::PROVIDERS_DISABLE, Agent, s::DisableProviderRequest => s::DisableProviderResponse;
        /// `mcp/message` to the side that declared the ACP MCP server (usually the client;
        /// either side may be the provider).
        McpMessage = u::MCP_MESSAGE, Client, s::MessageMcpRequest => s::MessageMcpResponse;
        /// `proxy/initialize`: a conductor's `initialize` to a proxy.
        InitializeProxy = u::PROXY_INITIALIZE, Agent, s::InitializeProxyRequest => s::InitializeProxyResponse;
        /// `proxy/successor`: a request to or from a proxy's successor (either side sends it).
        ProxySuccessor = u::PROXY_SUCCESSOR, Agent, s::ProxySuccessorRequest => s::ProxySuccessorResponse;
    }

    notifications! {
        /// `mcp/message` from the MCP provider to the consumer, for an active request.
        McpMessageNotification = u::MCP_MESSAGE, Agent, s::MessageMcpNotification;
        /// `proxy/successor` carrying a notification (either side sends it).
        ProxySuccessorNotification = u::PROXY_SUCCESSOR, Agent, s::ProxySuccessorNotification;
        /// `auth/status_update` from an agent that advertised `auth.status`.
        AuthStatusUpdate = u::AUTH_STATUS_UPDATE, Client, s::AuthStatusUpdateNotification;
    }
}
