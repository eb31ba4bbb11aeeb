//! The client's (editor's) view of a connection: every agent method as a typed call.

use std::time::Duration;

use acp_core::typed::{self, Method};
use acp_core::{ErrorObject, RawValue, Role};
use agent_client_protocol_schema::v1 as s;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::driver::{self, ConnectionHandle, DriverConfig, Incoming, RpcError};

/// A connection to an agent, like the TypeScript SDK's `ClientSideConnection`. Cheap to clone;
/// [`with_timeout`](Self::with_timeout) gives a clone whose calls have a deadline.
#[derive(Debug, Clone)]
pub struct ClientSideConnection {
    handle: ConnectionHandle,
    timeout: Option<Duration>,
}

macro_rules! calls {
    ($($(#[$doc:meta])* $name:ident => $m:ty;)*) => {$(
        $(#[$doc])*
        pub async fn $name(
            &self,
            params: <$m as Method>::Params,
        ) -> Result<<$m as Method>::Result, RpcError> {
            self.call_owned::<$m>(params).await
        }
    )*};
}

impl ClientSideConnection {
    /// Drives a connection over `reader`/`writer`; `service` (usually a [`crate::Router`])
    /// answers the agent's requests (`fs/*`, `terminal/*`, `session/request_permission`) and
    /// notifications (`session/update`). `config.core.role` must be [`Role::Client`].
    pub fn connect<R, W, S>(reader: R, writer: W, service: S, config: DriverConfig) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        assert_eq!(
            config.core.role,
            Role::Client,
            "ClientSideConnection needs a client config"
        );
        Self::from_handle(driver::spawn(reader, writer, service, config))
    }

    /// Like [`connect`](Self::connect), building the service from the connection.
    pub fn connect_with<R, W, S, F>(reader: R, writer: W, config: DriverConfig, make: F) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        F: FnOnce(ClientSideConnection) -> S,
    {
        assert_eq!(
            config.core.role,
            Role::Client,
            "ClientSideConnection needs a client config"
        );
        Self::from_handle(driver::spawn_with(reader, writer, config, |h| {
            make(Self::from_handle(h))
        }))
    }

    /// Wraps an existing client-role handle.
    pub fn from_handle(handle: ConnectionHandle) -> Self {
        ClientSideConnection {
            handle,
            timeout: None,
        }
    }

    /// The handle underneath: untyped requests and notifications,
    /// [`ConnectionHandle::notifications_handled`], [`ConnectionHandle::flushed`], the close
    /// reason.
    pub fn handle(&self) -> &ConnectionHandle {
        &self.handle
    }

    /// A clone whose calls fail with a timeout after `d` (the agent is sent
    /// `$/cancel_request`).
    pub fn with_timeout(&self, d: Duration) -> Self {
        ClientSideConnection {
            handle: self.handle.clone(),
            timeout: Some(d),
        }
    }

    /// A clone without a per-call timeout.
    pub fn without_timeout(&self) -> Self {
        ClientSideConnection {
            handle: self.handle.clone(),
            timeout: None,
        }
    }

    /// `initialize`, with its answer as the agent sent it too: the typed form drops what the
    /// schema does not know (an `env_var` auth method's type and variables, for one), which a
    /// client's choices may need (acp-client's `auth::methods_of`).
    pub async fn initialize_with_raw(
        &self,
        request: s::InitializeRequest,
    ) -> Result<(s::InitializeResponse, Box<RawValue>), RpcError> {
        let name = <typed::Initialize as Method>::NAME;
        let params = crate::driver::to_raw(&request)?;
        drop(request);
        let raw = self
            .handle
            .request(name, Some(params), self.timeout)
            .await?;
        let typed = crate::driver::decode(name, &raw)?;
        Ok((typed, raw))
    }

    /// Any typed request.
    pub async fn call<M: Method>(&self, params: &M::Params) -> Result<M::Result, RpcError> {
        self.handle.request_typed::<M>(params, self.timeout).await
    }

    /// Any typed request, params by value (not held while the answer is awaited).
    pub async fn call_owned<M: Method>(&self, params: M::Params) -> Result<M::Result, RpcError> {
        self.handle
            .request_typed_owned::<M>(params, self.timeout)
            .await
    }

    calls! {
        /// `initialize`: the protocol version and both sides' capabilities; the first call. Fails
        /// with `Call(CallError::UnsupportedProtocolVersion { .. })` when the agent answers a
        /// protocol version other than this engine's, and `Call(CallError::InvalidResponse { .. })`
        /// when it names none. [`initialize_with_raw`](Self::initialize_with_raw) also gives the
        /// answer as sent.
        initialize => typed::Initialize;
        /// `authenticate` with one of the agent's `authMethods` (acp-client's `auth::choose` picks
        /// one).
        authenticate => typed::Authenticate;
        /// `logout`: ends the authenticated state (agents that advertise
        /// `agentCapabilities.auth.logout`).
        logout => typed::Logout;
        /// `session/new`: a session in `cwd` (an absolute path) with the MCP servers given; the
        /// answer carries its id, its modes and config options.
        new_session => typed::NewSession;
        /// `session/load` (agents that advertise `loadSession`): the agent replays the conversation
        /// as `session/update`s, all received before this returns (await
        /// `handle().notifications_handled()` to be sure they were handled).
        load_session => typed::LoadSession;
        /// `session/resume` (`sessionCapabilities.resume`): reopens a session without replaying it.
        resume_session => typed::ResumeSession;
        /// `session/list` (`sessionCapabilities.list`): the agent's sessions, a page at a time
        /// (`cursor`).
        list_sessions => typed::ListSessions;
        /// `session/close` (`sessionCapabilities.close`): the agent frees the session.
        close_session => typed::CloseSession;
        /// `session/delete` (`sessionCapabilities.delete`).
        delete_session => typed::DeleteSession;
        /// Runs a prompt turn. Only one per session at a time (a second is refused locally
        /// with `RpcError::Refused(Error::PromptInFlight)`). To stop a turn, call
        /// [`cancel`](Self::cancel) and keep awaiting this (the agent ends the turn with stop
        /// reason `cancelled`); dropping the future instead sends `$/cancel_request` and
        /// forgets the turn. When this returns, the turn's `session/update`s have all been
        /// through the notification handler (wire order: the driver's docs, "Order").
        prompt => typed::Prompt;
        /// `session/set_mode`: switches the session to one of the modes it offers.
        set_session_mode => typed::SetSessionMode;
        /// `session/set_config_option`: sets one of the session's config options; the answer holds
        /// them all as they now stand.
        set_session_config_option => typed::SetSessionConfigOption;
    }

    /// `session/cancel`: asks the agent to stop the session's prompt turn; also answers our own
    /// pending permission prompts for that session with `cancelled`.
    pub async fn cancel(&self, params: s::CancelNotification) -> Result<(), RpcError> {
        self.handle.notify_typed::<typed::Cancel>(&params).await
    }

    /// An extension request (`method` gets a leading `_` if it lacks one).
    pub async fn ext_method(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, RpcError> {
        self.handle.ext_method(method, params, self.timeout).await
    }

    /// An extension notification (`method` gets a leading `_` if it lacks one).
    pub async fn ext_notification(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<(), RpcError> {
        self.handle.ext_notification(method, params).await
    }

    /// Resolves with the reason once the connection closed.
    pub async fn closed(&self) -> String {
        self.handle.closed().await
    }

    /// Whether the connection has closed; calls then fail at once with
    /// `Call(CallError::Closed { reason })`.
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Cancelled when the connection closes.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.handle.cancellation_token()
    }

    /// Closes the connection (pending calls fail with `Closed { reason }`).
    pub fn close(&self, reason: impl Into<String>) {
        self.handle.close_with_reason(reason)
    }
}

/// The draft (unstable) agent methods (feature `unstable`): each is refused locally
/// (`RpcError::Refused(Error::CapabilityNotAdvertised)`) unless the agent's `initialize`
/// answer advertised its capability (`acp_core::unstable`).
#[cfg(feature = "unstable")]
impl ClientSideConnection {
    calls! {
        /// `session/fork` (`sessionCapabilities.fork`).
        fork_session => typed::unstable::ForkSession;
        /// `session/archive` (`sessionCapabilities.archive`).
        archive_session => typed::unstable::ArchiveSession;
        /// `session/unarchive` (`sessionCapabilities.archive`).
        unarchive_session => typed::unstable::UnarchiveSession;
        /// `session/status` (`sessionCapabilities.status`).
        session_status => typed::unstable::SessionStatus;
        /// `session/set_title` (`sessionCapabilities.title`).
        set_session_title => typed::unstable::SetSessionTitle;
        /// `session/options`: the config options a session would start with
        /// (`sessionCapabilities.options`).
        session_options => typed::unstable::SessionOptions;
        /// `auth/status` (`auth.status`).
        auth_status => typed::unstable::AuthStatus;
        /// `providers/list` (`providers`).
        list_providers => typed::unstable::ListProviders;
        /// `providers/set` (`providers`).
        set_provider => typed::unstable::SetProvider;
        /// `providers/disable` (`providers`).
        disable_provider => typed::unstable::DisableProvider;
    }
}
