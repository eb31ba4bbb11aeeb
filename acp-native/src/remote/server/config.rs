//! The server's settings.

use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls;

use super::super::{admission, wire};
use super::ServerEvent;

/// The server's settings. [`RemoteServerConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct RemoteServerConfig {
    /// What clients must present (see [`crate::remote::auth`]).
    pub token: String,
    /// Browser origins allowed besides local pages (`*`: any).
    pub allowed_origins: Vec<String>,
    /// Host names (the `Host` header, `name` for any port or `name:port`) accepted besides
    /// `localhost` and IP addresses (`*`: any); others are answered 421 (see
    /// [`crate::remote::auth::host_allowed`]). A server reached by a name (behind a proxy, a DNS
    /// name of its own) needs that name here.
    pub allowed_hosts: Vec<String>,
    /// ACP connections (agents) at once; more are answered 503. Default 64.
    pub max_connections: usize,
    /// Sockets at once that showed the token (each SSE stream holds one); more are answered
    /// 503 and closed. Default 4 × `max_connections` + 16.
    pub max_sockets: usize,
    /// Sockets at once that have not shown the token yet (TLS handshake, first request head
    /// still coming, `GET /health`, refused requests). They hold none of `max_sockets`; a new
    /// one over this budget closes the oldest. Default 128.
    pub max_unauthenticated: usize,
    /// The same budget per peer address (an IPv4 address, an IPv6 /64): a new socket over it
    /// closes its peer's oldest unauthenticated one. Default 32. Behind a proxy every client
    /// has the proxy's address.
    pub max_unauthenticated_per_peer: usize,
    /// The largest POST body (and WebSocket message from a client). Default 16 MiB, the
    /// official server's.
    pub max_body_bytes: usize,
    /// The largest message an agent may write; longer ones are dropped (a response among
    /// them is answered with an error). Default 64 MiB (acp-core's limit).
    pub max_agent_message_bytes: usize,
    /// Bytes queued for one HTTP connection's SSE streams while its client does not read
    /// them; beyond, the connection is closed. Default 64 MiB.
    pub max_backlog_bytes: usize,
    /// A TLS handshake and each request head must arrive within this. Default 10 s.
    pub handshake_timeout: Duration,
    /// How long an agent has to answer `initialize`. Default 60 s.
    pub initialize_timeout: Duration,
    /// An HTTP connection with no SSE stream open and no request for this long is closed
    /// (its agent stopped). Default 5 minutes.
    pub idle_timeout: Duration,
    /// A WebSocket that has been silent this long is pinged; one silent for twice this long
    /// (no message, no pong: the client is gone, e.g. a half-open TCP connection) is closed
    /// and its agent stopped. A live client answers pings by itself, so an idle but live
    /// WebSocket stays open, as an SSE connection with a stream open does. Default 30 s.
    pub ws_ping_interval: Duration,
    /// TLS (`https://`, `wss://`), e.g. from [`super::tls_config_from_pem`]; plain text without.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Told about connections opened, closed and refused (e.g. to log them).
    pub on_event: Option<Arc<dyn Fn(ServerEvent) + Send + Sync>>,
}

impl RemoteServerConfig {
    /// The defaults, with `token` (use [`crate::remote::auth::generate_token`] for a fresh one).
    pub fn new(token: impl Into<String>) -> Self {
        let max_connections = 64;
        RemoteServerConfig {
            token: token.into(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections,
            max_sockets: 4 * max_connections + 16,
            max_unauthenticated: admission::MAX_UNAUTHENTICATED,
            max_unauthenticated_per_peer: admission::MAX_UNAUTHENTICATED_PER_PEER,
            max_body_bytes: wire::MAX_POST_BODY_BYTES,
            max_agent_message_bytes: acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES,
            max_backlog_bytes: 64 << 20,
            handshake_timeout: Duration::from_secs(10),
            initialize_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
            ws_ping_interval: Duration::from_secs(30),
            tls: None,
            on_event: None,
        }
    }
}

impl std::fmt::Debug for RemoteServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServerConfig")
            .field("token", &"<secret>")
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_connections", &self.max_connections)
            .field("max_sockets", &self.max_sockets)
            .field("max_unauthenticated", &self.max_unauthenticated)
            .field(
                "max_unauthenticated_per_peer",
                &self.max_unauthenticated_per_peer,
            )
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_backlog_bytes", &self.max_backlog_bytes)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("ws_ping_interval", &self.ws_ping_interval)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}
