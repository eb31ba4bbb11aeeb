//! The server's settings.

use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls;

use super::super::{admission, wire};
use super::ServerEvent;

/// What a [`RemoteServer`](super::RemoteServer) speaks on its sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerMode {
    /// ACP on [`wire::ENDPOINT_PATH`] (`/acp`) as the official `agent-client-protocol-http`
    /// transport serves it: HTTP + SSE (`POST`, the `GET` streams, `DELETE`) and WebSocket,
    /// plus `GET /health` (`acp serve --http`). The default.
    #[default]
    HttpAndWebSocket,
    /// WebSocket only, on any path: one agent per WebSocket, one JSON-RPC message per text
    /// frame (`acp serve --ws`, the browser client's transport). The handshake passes the
    /// same Host, Origin and token checks, admission, handshake timeout, pings and pong limit
    /// as a WebSocket on `/acp`, and its connection ends with the same reasons. What differs:
    /// any other request is answered 426 (`Upgrade Required`), and every answer but the
    /// upgrade closes its socket (one handshake per socket, as a browser makes it); a
    /// WebSocket holds its socket's place for as long as it is open, so the sockets that
    /// showed the token are bounded by [`RemoteServerConfig::max_connections`] (not
    /// [`RemoteServerConfig::max_sockets`]); the HTTP settings (`max_backlog_bytes`,
    /// `idle_timeout`, `initialize_timeout`) are not used.
    WebSocketOnly,
}

/// The server's settings. [`RemoteServerConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct RemoteServerConfig {
    /// What the server speaks: HTTP + SSE and WebSocket on `/acp` (the default), or WebSocket
    /// only.
    pub mode: ServerMode,
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
    /// Sockets at once that showed the token (each SSE stream and WebSocket holds one); more
    /// are answered 503 and closed. Default 4 × `max_connections` + 16. Not used by
    /// [`ServerMode::WebSocketOnly`], whose sockets are its connections.
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
    /// official server's. (`acp serve --ws` sets 64 MiB, acp-core's message limit.)
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
            mode: ServerMode::default(),
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

    /// The limit on sockets that showed the token: its value and its name, as refusals say it
    /// ("N sockets open (max_sockets)").
    pub(super) fn socket_limit(&self) -> (usize, &'static str, &'static str) {
        match self.mode {
            ServerMode::HttpAndWebSocket => (self.max_sockets, "sockets", "max_sockets"),
            ServerMode::WebSocketOnly => (self.max_connections, "connections", "max_connections"),
        }
    }

    /// What a client shows the token with, as refusals say it: a request, or in
    /// [`ServerMode::WebSocketOnly`] its handshake.
    pub(super) fn showing(&self) -> &'static str {
        match self.mode {
            ServerMode::HttpAndWebSocket => "a request",
            ServerMode::WebSocketOnly => "a handshake",
        }
    }
}

impl std::fmt::Debug for RemoteServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServerConfig")
            .field("mode", &self.mode)
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
