//! Serving any agent over HTTP + SSE and WebSocket, with the wire behaviour of the official
//! `agent-client-protocol-http` 5 server ([`super::wire`] describes it), secured by default.
//!
//! ```no_run
//! # async fn f() -> std::io::Result<()> {
//! use acp_native::process::AgentCommand;
//! use acp_native::remote::server::{command_agent, RemoteServer, RemoteServerConfig};
//! let token = acp_native::remote::auth::generate_token()?;
//! let server = RemoteServer::new(
//!     command_agent(AgentCommand::new("acp").arg("demo-agent")),
//!     RemoteServerConfig::new(token),
//! );
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8765").await?;
//! server.serve(listener).await; // until `server.stop()`
//! # Ok(()) }
//! ```
//!
//! Each ACP connection (an `initialize` POST, or a WebSocket) gets its own agent from an
//! [`AgentFactory`]: a spawned command ([`command_agent`]) or an in-process agent written with
//! this crate ([`router_agent`], [`in_process_agent`]). The agent speaks NDJSON over a pair of
//! byte streams, as over stdio; the server copies messages between it and the client, reading
//! only their envelope (method, id, `sessionId`) to pick the SSE stream.
//!
//! Secure by default:
//! * every request but `GET /health` must carry the token ([`super::auth::authorize`]: 401
//!   otherwise), name this server in its `Host` (421: DNS rebinding) and, from a browser page,
//!   come from an allowed origin (403);
//! * a socket takes one of `max_sockets` only once a request on it showed the token; until
//!   then it is one of a small budget of unauthenticated sockets (`max_unauthenticated`,
//!   `max_unauthenticated_per_peer`), the oldest closed when a new one would go over
//!   ([`super::admission`]), so sockets that never authenticate cannot keep clients out;
//! * an agent starts only once a request that creates a connection was authorised (and within
//!   [`RemoteServerConfig::max_connections`]: 503 beyond);
//! * limits: request heads and TLS handshakes within `handshake_timeout`; POST bodies up to
//!   `max_body_bytes` (413); at most `max_backlog_bytes` queued for a client that does not read
//!   its streams (the connection is closed beyond, rather than growing without bound);
//!   `max_sockets` open sockets (503 beyond); an HTTP connection with no stream open and no
//!   request for `idle_timeout` is closed; a silent WebSocket is pinged every
//!   `ws_ping_interval` and closed when its client answers nothing for twice that;
//! * TLS with [`tls_config_from_pem`]; `TCP_NODELAY` on every socket.
//!
//! Memory per open SSE stream is kept small: a socket's first request head is read here, and a
//! plain `GET` (a stream, usually the only request its socket carries) is answered here, its
//! events written chunked straight to the socket, so an open stream holds its socket, its
//! lease and a task of under a kilobyte, not a hyper connection with its buffers. Anything
//! else, and whatever a socket carries after such an answer, is served by hyper.

mod agents;
mod chunked;
mod config;
mod connection;
mod dispatch;
mod events;
mod head;
mod http;
mod mailbox;
mod responses;
mod routes;
mod sockets;
mod tls;
mod websocket;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::Admission;
use connection::HttpConn;
use sockets::MAX_REFUSALS_IN_FLIGHT;

pub use agents::{command_agent, in_process_agent, router_agent, AgentFactory, AgentLink};
pub use config::{RemoteServerConfig, ServerMode};
pub use events::ServerEvent;
pub use tls::{tls_config_from_pem, TlsServerConfig};

/// A server of one agent factory. Cheap to clone (shared state).
#[derive(Clone)]
pub struct RemoteServer {
    shared: Arc<Shared>,
}

struct Shared {
    agent: Arc<dyn AgentFactory>,
    config: RemoteServerConfig,
    /// HTTP + SSE connections by id.
    connections: Mutex<HashMap<String, Arc<HttpConn>>>,
    /// ACP connections (agents), HTTP or WebSocket.
    slots: Arc<Semaphore>,
    /// Sockets: `max_sockets` for those that showed the token (`max_connections` for
    /// [`ServerMode::WebSocketOnly`]), a budget for the others.
    sockets: Admission,
    refusals: Arc<Semaphore>,
    stop: CancellationToken,
    /// Every task that holds an agent, so [`RemoteServer::serve`] returns after they stopped.
    tasks: TaskTracker,
}

impl RemoteServer {
    pub fn new(agent: Arc<dyn AgentFactory>, config: RemoteServerConfig) -> Self {
        RemoteServer {
            shared: Arc::new(Shared {
                agent,
                slots: Arc::new(Semaphore::new(config.max_connections)),
                sockets: Admission::new(
                    config.socket_limit().0,
                    config.max_unauthenticated,
                    config.max_unauthenticated_per_peer,
                ),
                refusals: Arc::new(Semaphore::new(MAX_REFUSALS_IN_FLIGHT)),
                config,
                connections: Mutex::new(HashMap::new()),
                stop: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &RemoteServerConfig {
        &self.shared.config
    }

    /// ACP connections (agents) open now.
    pub fn open_connections(&self) -> usize {
        self.shared.config.max_connections - self.shared.slots.available_permits()
    }

    /// Makes [`serve`](Self::serve) stop: no more sockets accepted, every connection closed and
    /// its agent stopped.
    pub fn stop(&self) {
        self.shared.stop.cancel();
    }
}
