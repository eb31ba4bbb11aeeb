//! What the server tells its owner ([`super::RemoteServerConfig::on_event`]).

use std::net::SocketAddr;

use super::Shared;

/// What happened, for [`super::RemoteServerConfig::on_event`].
#[derive(Debug, Clone)]
pub enum ServerEvent {
    /// A request was refused (401, 403, 413, 502, 503, …) or a socket failed its handshake.
    Refused {
        peer: SocketAddr,
        status: u16,
        reason: String,
    },
    /// An ACP connection started, with its agent.
    Opened {
        peer: SocketAddr,
        connection_id: String,
        /// `"http"` (HTTP + SSE) or `"websocket"`.
        transport: &'static str,
        /// The agent's process id, for a spawned agent.
        pid: Option<u32>,
    },
    /// An ACP connection ended (its agent stopped).
    Closed {
        connection_id: String,
        reason: String,
    },
}

impl Shared {
    pub(super) fn event(&self, e: ServerEvent) {
        if let Some(f) = &self.config.on_event {
            f(e);
        }
    }
}
