//! `RemoteServer`: any ACP agent served to remote clients, one agent per connection, secured
//! by default. Two modes ([`ServerMode`]): HTTP + SSE and WebSocket on `/acp`, with the wire
//! behaviour of the official `agent-client-protocol-http` 5 server ([`super::wire`] describes
//! it; `acp serve --http`), or a WebSocket only, on any path (`acp serve --ws`, the browser
//! client's transport).
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
//! only their envelope (`acp_core::jsonrpc::Envelope`: method, id, `sessionId`) to pick the
//! SSE stream.
//!
//! Secure by default:
//! * every request but `GET /health` must carry the token ([`super::auth::authorize`]: 401
//!   otherwise), name this server in its `Host` (421: DNS rebinding) and, from a browser page,
//!   come from an allowed origin (403);
//! * a socket takes one of `max_sockets` (with [`ServerMode::WebSocketOnly`], of
//!   `max_connections`) only once a request on it showed the token, and holds it while it is
//!   open (an SSE stream, a WebSocket); until then it is one of a small budget of
//!   unauthenticated sockets (`max_unauthenticated`, `max_unauthenticated_per_peer`), the
//!   oldest closed when a new one would go over ([`super::admission`]), so sockets that never
//!   authenticate cannot keep clients out;
//! * an agent starts only once a request that creates a connection was authorised (and within
//!   [`RemoteServerConfig::max_connections`]: 503 beyond);
//! * limits: request heads and TLS handshakes within `handshake_timeout`; POST bodies up to
//!   `max_body_bytes` (413); at most `max_backlog_bytes` queued for a client that does not read
//!   its streams (the connection is closed beyond, rather than growing without bound);
//!   `max_sockets` open sockets (503 beyond); an HTTP connection with no stream open and no
//!   request for `idle_timeout` is closed; a silent WebSocket is pinged every
//!   `ws_ping_interval` and closed when its client answers nothing for twice that, and one
//!   that pings faster than it reads the pongs is closed (`transport::ws_limits`);
//! * TLS with [`tls_config_from_pem`]; `TCP_NODELAY` on every socket.
//!
//! Memory per open SSE stream is kept small: a socket's first request head is read here, and a
//! plain `GET` (a stream, usually the only request its socket carries) is answered here, its
//! events written chunked straight to the socket, so an open stream holds its socket, its
//! lease and a task of under a kilobyte, not a hyper connection with its buffers. Anything
//! else, and whatever a socket carries after such an answer, is served by hyper.
//!
//! # How the files fit
//!
//! A socket's way through them, then what they share:
//!
//! * `sockets.rs` — the accept loop ([`RemoteServer::serve`], [`RemoteServer::serve_socket`]):
//!   each socket's admission ticket, its TLS handshake, its first request, then hyper for the
//!   rest; a raw 503 for a socket over the limit; what is said about sockets that never showed
//!   the token.
//! * `head.rs` — the socket's first request head, read here (`httparse`): a plain `GET`
//!   becomes a request for `dispatch`, anything else goes to hyper with the bytes already read
//!   (`Rewind`).
//! * `chunked.rs` — the answer to such a first `GET`, written without hyper: its head, a sized
//!   body whole, an SSE stream chunked event by event.
//! * `dispatch.rs` — one request, whoever parsed it: `/health`, the path, a CORS preflight,
//!   the Host, Origin and token checks (`remote::auth`), the socket's admission, then the
//!   handler of its method; in [`ServerMode::WebSocketOnly`], a handshake on any path and 426
//!   for anything else.
//! * `http.rs` — the HTTP + SSE handlers: `POST` (a message for the agent; `initialize` starts
//!   a connection), `GET` (an SSE stream), `DELETE`.
//! * `connection.rs` — one HTTP + SSE connection (`HttpConn`): its agent's input and output,
//!   the routing of each agent message, its subscribers (each a `Lease` on one stream), its
//!   idle timeout and its end.
//! * `routes.rs` — where a message goes: the connection's stream or a session's, the sessions
//!   opened and closed by answers, the session a message names.
//! * `mailbox.rs` — one SSE stream's queue of events (`Mailbox`); `connection.rs` holds the
//!   `Lease` of the one client reading it; `body.rs` the response body that reads it (`SseBody`).
//! * `websocket.rs` — ACP over a WebSocket (both modes): the upgrade, the frames pumped
//!   between the socket and the agent, pings, and why the connection ended.
//! * `agents.rs` — the agent of a connection: [`AgentFactory`] and its makers, a new
//!   connection's slot and agent (503 or 502 when there is none), stopping it.
//! * `responses.rs` — building answers: bodies, text answers, CORS headers, refusals.
//! * `config.rs` ([`RemoteServerConfig`], [`ServerMode`]), `events.rs` ([`ServerEvent`], what
//!   the owner is told), `tls.rs` ([`tls_config_from_pem`]); this file: [`RemoteServer`] and
//!   the state its tasks share.

mod agents;
mod body;
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
    shared: Arc<ServerState>,
}

/// What the server's tasks share.
struct ServerState {
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
    /// A server of `agent` (one agent per connection) with `config`; nothing is served until
    /// [`serve`](Self::serve) (or [`serve_socket`](Self::serve_socket)).
    pub fn new(agent: Arc<dyn AgentFactory>, config: RemoteServerConfig) -> Self {
        RemoteServer {
            shared: Arc::new(ServerState {
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
