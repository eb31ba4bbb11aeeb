//! The agent's view of a connection: every client method as a typed call, and terminals.

use std::time::Duration;

use acp_core::typed::{self, Method};
use acp_core::{ErrorObject, RawValue, Role};
use agent_client_protocol_schema::v1 as s;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::driver::{self, ConnectionHandle, DriverConfig, Incoming, RpcError};

/// A connection to a client, like the TypeScript SDK's `AgentSideConnection`. Cheap to clone;
/// [`with_timeout`](Self::with_timeout) gives a clone whose calls have a deadline.
#[derive(Debug, Clone)]
pub struct AgentSideConnection {
    handle: ConnectionHandle,
    timeout: Option<Duration>,
}

impl AgentSideConnection {
    /// Drives a connection over `reader`/`writer`; `service` (usually a [`crate::Router`]
    /// behind [`crate::layers::LifecycleLayer`]) answers the client. `config.core.role` must be
    /// [`Role::Agent`].
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
            Role::Agent,
            "AgentSideConnection needs an agent config"
        );
        Self::from_handle(driver::spawn(reader, writer, service, config))
    }

    /// Like [`connect`](Self::connect), building the service from the connection (the TS SDK's
    /// `new AgentSideConnection((conn) => agent, stream)`).
    pub fn connect_with<R, W, S, F>(reader: R, writer: W, config: DriverConfig, make: F) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        F: FnOnce(AgentSideConnection) -> S,
    {
        assert_eq!(
            config.core.role,
            Role::Agent,
            "AgentSideConnection needs an agent config"
        );
        Self::from_handle(driver::spawn_with(reader, writer, config, |h| {
            make(Self::from_handle(h))
        }))
    }

    /// Wraps an existing agent-role handle.
    pub fn from_handle(handle: ConnectionHandle) -> Self {
        AgentSideConnection {
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

    /// A clone whose calls fail with a timeout after `d`.
    pub fn with_timeout(&self, d: Duration) -> Self {
        AgentSideConnection {
            handle: self.handle.clone(),
            timeout: Some(d),
        }
    }

    /// A clone without a per-call timeout.
    pub fn without_timeout(&self) -> Self {
        AgentSideConnection {
            handle: self.handle.clone(),
            timeout: None,
        }
    }

    /// What the client advertised in `initialize`.
    pub fn client_capabilities(&self) -> acp_core::acp::ClientCapabilities {
        self.handle.client_capabilities()
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

    /// `session/update`: streams progress of a prompt turn. Resolves once queued for writing.
    pub async fn session_update(&self, params: s::SessionNotification) -> Result<(), RpcError> {
        self.handle
            .notify_typed::<typed::SessionUpdate>(&params)
            .await
    }

    /// `session/request_permission`: asks the user. The client answers `cancelled` when the
    /// turn is cancelled.
    pub async fn request_permission(
        &self,
        params: s::RequestPermissionRequest,
    ) -> Result<s::RequestPermissionResponse, RpcError> {
        self.call_owned::<typed::RequestPermission>(params).await
    }

    /// `fs/read_text_file` (needs the client's `fs.readTextFile` capability).
    pub async fn read_text_file(
        &self,
        params: s::ReadTextFileRequest,
    ) -> Result<s::ReadTextFileResponse, RpcError> {
        self.call_owned::<typed::ReadTextFile>(params).await
    }

    /// `fs/write_text_file` (needs `fs.writeTextFile`).
    pub async fn write_text_file(
        &self,
        params: s::WriteTextFileRequest,
    ) -> Result<s::WriteTextFileResponse, RpcError> {
        self.call_owned::<typed::WriteTextFile>(params).await
    }

    /// `terminal/create` (needs `terminal`): returns a handle that releases the terminal when
    /// dropped (if not released explicitly).
    pub async fn create_terminal(
        &self,
        params: s::CreateTerminalRequest,
    ) -> Result<TerminalHandle, RpcError> {
        let session_id = params.session_id.clone();
        let r = self.call_owned::<typed::CreateTerminal>(params).await?;
        Ok(TerminalHandle {
            id: r.terminal_id,
            session_id,
            conn: self.clone(),
            released: false,
        })
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

    /// Closes the connection with `reason` ([`ConnectionHandle::close_with_reason`]): answers
    /// handlers already gave are sent, the client's other pending requests are answered -32603
    /// "connection closing", our pending calls fail with `Closed { reason }`, and the transport is
    /// flushed and shut. Returns at once; [`closed`](Self::closed) resolves when it is done.
    pub fn close(&self, reason: impl Into<String>) {
        self.handle.close_with_reason(reason)
    }
}

/// A terminal running on the client. Release it with [`release`](Self::release); if dropped
/// unreleased, a `terminal/release` is sent in the background (when the connection is open and
/// the drop happens inside a tokio runtime; otherwise nothing is sent).
#[derive(Debug)]
pub struct TerminalHandle {
    id: s::TerminalId,
    session_id: s::SessionId,
    conn: AgentSideConnection,
    released: bool,
}

impl TerminalHandle {
    /// The terminal id (embed it in tool calls as `{"type":"terminal","terminalId":...}`).
    pub fn id(&self) -> &s::TerminalId {
        &self.id
    }

    /// The session the terminal belongs to (every `terminal/*` call names it).
    pub fn session_id(&self) -> &s::SessionId {
        &self.session_id
    }

    /// `terminal/output`: the output so far and the exit status if it exited.
    pub async fn current_output(&self) -> Result<s::TerminalOutputResponse, RpcError> {
        let p = s::TerminalOutputRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.call::<typed::TerminalOutput>(&p).await
    }

    /// `terminal/wait_for_exit`.
    pub async fn wait_for_exit(&self) -> Result<s::WaitForTerminalExitResponse, RpcError> {
        let p = s::WaitForTerminalExitRequest::new(self.session_id.clone(), self.id.clone());
        self.conn
            .without_timeout()
            .call::<typed::WaitForTerminalExit>(&p)
            .await
    }

    /// `terminal/kill`: stops the command, keeps the terminal (its output stays readable).
    pub async fn kill(&self) -> Result<s::KillTerminalResponse, RpcError> {
        let p = s::KillTerminalRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.call::<typed::KillTerminal>(&p).await
    }

    /// `terminal/release`: kills it if running and frees it.
    pub async fn release(mut self) -> Result<s::ReleaseTerminalResponse, RpcError> {
        self.released = true;
        let p = s::ReleaseTerminalRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.call::<typed::ReleaseTerminal>(&p).await
    }
}

impl Drop for TerminalHandle {
    fn drop(&mut self) {
        if self.released || self.conn.is_closed() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let conn = self.conn.clone();
        let p = s::ReleaseTerminalRequest::new(self.session_id.clone(), self.id.clone());
        rt.spawn(async move {
            if let Err(e) = conn.call::<typed::ReleaseTerminal>(&p).await {
                tracing::debug!("releasing a dropped terminal failed: {e}");
            }
        });
    }
}
