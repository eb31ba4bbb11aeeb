//! How to reach a remote agent: [`ClientOptions`].

use std::path::PathBuf;
use std::time::Duration;

#[cfg(doc)]
use super::RemoteError;

/// How to reach a remote agent.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Sent as `Authorization: Bearer TOKEN` on every request and on the WebSocket handshake.
    pub token: Option<String>,
    /// A PEM file of extra certificates to trust (a development server's self-signed one).
    pub ca_file: Option<PathBuf>,
    /// Longest wait for TCP, TLS and the WebSocket handshake (each attempt).
    pub connect_timeout: Duration,
    /// Largest message accepted from the server (an SSE event, a WebSocket message).
    pub max_message_bytes: usize,
    /// Send the token over `http://` or `ws://` to a host that is not loopback (refused
    /// otherwise, [`RemoteError::Options`]): anyone on the way can read it, and use it.
    pub allow_insecure: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            token: None,
            ca_file: None,
            connect_timeout: Duration::from_secs(10),
            max_message_bytes: acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES,
            allow_insecure: false,
        }
    }
}

impl ClientOptions {
    /// Sets [`ClientOptions::token`].
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Sets [`ClientOptions::ca_file`].
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Sets [`ClientOptions::allow_insecure`].
    pub fn allow_insecure(mut self, allow: bool) -> Self {
        self.allow_insecure = allow;
        self
    }
}
