//! What the server tells its owner ([`super::RemoteServerConfig::on_event`]).

use std::net::SocketAddr;

use super::ServerState;

/// What happened, for [`super::RemoteServerConfig::on_event`].
#[derive(Debug, Clone)]
pub enum ServerEvent {
    /// A request was refused (401, 403, 413, 426, 502, 503, …) or a socket failed its
    /// handshake or was closed before a request showed the token.
    Refused {
        /// The socket's peer.
        peer: SocketAddr,
        /// The HTTP status of the refusal; 0 when no answer was written (a TLS handshake or a
        /// first request that failed or never came, a socket closed to make room).
        status: u16,
        /// Why, in words; a client's header in it is quoted escaped and cut
        /// ([`crate::remote::auth::quote`]).
        reason: String,
    },
    /// An ACP connection started, with its agent.
    Opened {
        /// The peer of the socket that opened it (the `initialize` POST's, or the WebSocket's).
        peer: SocketAddr,
        /// The connection's id (`Acp-Connection-Id`).
        connection_id: String,
        /// `"http"` (HTTP + SSE) or `"websocket"`.
        transport: &'static str,
        /// The agent's process id, for a spawned agent.
        pid: Option<u32>,
    },
    /// An ACP connection ended (its agent stopped).
    Closed {
        /// The peer of the socket that opened it (as in [`ServerEvent::Opened`]).
        peer: SocketAddr,
        /// The connection's id.
        connection_id: String,
        /// Why it ended, then the agent's exit report when it is a process ("the client
        /// closed the connection; exited with code 0").
        reason: String,
    },
}

impl ServerState {
    /// Tells the owner (`on_event`), if it listens.
    pub(super) fn event(&self, e: ServerEvent) {
        if let Some(f) = &self.config.on_event {
            f(e);
        }
    }
}
