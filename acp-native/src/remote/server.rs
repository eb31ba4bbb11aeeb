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

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use acp_core::{ErrorObject, Id, RawValue, Role};
use bytes::Bytes;
use http_body::Frame;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, Limited};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::rustls;
use tokio_tungstenite::tungstenite::protocol::Role as WsRole;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

use super::admission::{self, Admission, NotAdmitted, Ticket};
use super::auth::{self, Credential, Refusal};
use super::wire::{self, Route};
use crate::driver::{DriverConfig, Incoming};
use crate::process::{AgentCommand, AgentProcess};
use crate::transport::ws_limits::PingFlood;
use crate::transport::{self, DuplexHalves};
use crate::AgentSideConnection;

/// rustls's server configuration (the type of [`RemoteServerConfig::tls`]).
pub use tokio_rustls::rustls::ServerConfig as TlsServerConfig;

/// How long an agent gets to exit after its input closed, before `SIGTERM`, then `SIGKILL`.
const AGENT_STOP_GRACE: Duration = Duration::from_millis(1500);
/// Bytes buffered per direction between the server and an in-process agent.
const IN_PROCESS_BUFFER: usize = 64 << 10;
/// The WebSocket reader's initial buffer. tungstenite zero-fills its whole read buffer before
/// each read, so its default (128 KiB) is resident memory of every idle socket; the buffer
/// still grows to hold a larger frame.
const WS_READ_BUFFER: usize = 4 << 10;
/// One read of an agent's output for a WebSocket (lines longer than this still go whole).
const WS_AGENT_READ_CHUNK: usize = 8 << 10;
/// At most this much of a backlog goes out in one SSE write.
const SSE_WRITE_CHUNK: usize = 64 << 10;
/// Refusals (503) being written at once; beyond that an excess socket is just closed.
const MAX_REFUSALS_IN_FLIGHT: usize = 32;
/// How long a refused socket is kept to deliver its 503.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

/// The server's settings. [`RemoteServerConfig::new`] gives the defaults.
#[derive(Clone)]
pub struct RemoteServerConfig {
    /// What clients must present (see [`super::auth`]).
    pub token: String,
    /// Browser origins allowed besides local pages (`*`: any).
    pub allowed_origins: Vec<String>,
    /// Host names (the `Host` header, `name` for any port or `name:port`) accepted besides
    /// `localhost` and IP addresses (`*`: any); others are answered 421 (see
    /// [`super::auth::host_allowed`]). A server reached by a name (behind a proxy, a DNS
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
    /// TLS (`https://`, `wss://`), e.g. from [`tls_config_from_pem`]; plain text without.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Told about connections opened, closed and refused (e.g. to log them).
    pub on_event: Option<Arc<dyn Fn(ServerEvent) + Send + Sync>>,
}

impl RemoteServerConfig {
    /// The defaults, with `token` (use [`super::auth::generate_token`] for a fresh one).
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

/// What happened, for [`RemoteServerConfig::on_event`].
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

/// The agent's end of one connection: the agent reads client messages (NDJSON) from
/// `writer`'s other end and writes its own to `reader`'s.
pub struct AgentLink {
    /// What the agent writes (its stdout).
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// What the agent reads (its stdin); closing it is the agent's cue to stop.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// A spawned agent's process: stopped (input closed, `SIGTERM`, `SIGKILL`, bounded) when
    /// the connection ends.
    pub process: Option<AgentProcess>,
}

/// Makes the agent of each new connection. Called only once the request creating the
/// connection passed authentication and the connection limit.
pub trait AgentFactory: Send + Sync + 'static {
    /// Starts one agent; an error becomes a 502 answer with its text.
    fn start(&self) -> Result<AgentLink, String>;
}

struct CommandAgent(AgentCommand);

impl AgentFactory for CommandAgent {
    fn start(&self) -> Result<AgentLink, String> {
        let mut process =
            AgentProcess::spawn(&self.0).map_err(|e| format!("cannot start the agent: {e}"))?;
        let writer = process.take_stdin().expect("a new process has stdin");
        let reader = process.take_stdout().expect("a new process has stdout");
        Ok(AgentLink {
            reader: Box::new(reader),
            writer: Box::new(writer),
            process: Some(process),
        })
    }
}

/// One process of `cmd` per connection.
pub fn command_agent(cmd: AgentCommand) -> Arc<dyn AgentFactory> {
    Arc::new(CommandAgent(cmd))
}

struct InProcessAgent<F>(F);

impl<F> AgentFactory for InProcessAgent<F>
where
    F: Fn(DuplexHalves) + Send + Sync + 'static,
{
    fn start(&self) -> Result<AgentLink, String> {
        let (ours, theirs) = transport::duplex(IN_PROCESS_BUFFER);
        (self.0)(theirs);
        Ok(AgentLink {
            reader: Box::new(ours.0),
            writer: Box::new(ours.1),
            process: None,
        })
    }
}

/// An in-process agent per connection: `start` gets the agent's ends of an in-memory pair
/// (read client messages from the first, write to the second) and must drive them (spawn a
/// task, e.g. [`AgentSideConnection::connect`]). Called inside the runtime.
pub fn in_process_agent(
    start: impl Fn(DuplexHalves) + Send + Sync + 'static,
) -> Arc<dyn AgentFactory> {
    Arc::new(InProcessAgent(start))
}

/// An in-process agent written with this crate: per connection, `make` builds the service
/// (usually a [`crate::Router`] behind [`crate::layers::LifecycleLayer`]) from the agent's
/// [`AgentSideConnection`], as [`AgentSideConnection::connect_with`] does. `config.core.role`
/// must be [`Role::Agent`].
pub fn router_agent<S, F>(config: DriverConfig, make: F) -> Arc<dyn AgentFactory>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
    F: Fn(AgentSideConnection) -> S + Send + Sync + 'static,
{
    assert_eq!(
        config.core.role,
        Role::Agent,
        "router_agent needs an agent config"
    );
    in_process_agent(move |(reader, writer)| {
        let _ = AgentSideConnection::connect_with(reader, writer, config.clone(), &make);
    })
}

/// A rustls server configuration (ring provider, TLS 1.2 and 1.3, ALPN `http/1.1`) from PEM
/// files: a certificate chain and its private key.
pub fn tls_config_from_pem(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificate {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS: the certificate and key do not go together: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

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
    /// Sockets: `max_sockets` for those that showed the token, a budget for the others.
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
                    config.max_sockets,
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

    /// Accepts sockets from `listener` until [`stop`](Self::stop), then stops every agent
    /// (bounded: their input closed, `SIGTERM`, `SIGKILL`) and returns.
    pub async fn serve(&self, listener: TcpListener) {
        let shared = &self.shared;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shared.stop.cancelled() => break,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    // Admission (`max_sockets`, the unauthenticated budget) is the socket's.
                    match shared.sockets.arrive(peer.ip()) {
                        Ok((ticket, _)) => {
                            let server = self.clone();
                            tokio::spawn(async move {
                                server.serve_with_ticket(stream, peer, ticket).await;
                            });
                        }
                        Err(admission::Full) => self.refuse_full(stream, peer),
                    }
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    // E.g. out of file descriptors: do not spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(listener);
        let open: Vec<Arc<HttpConn>> = shared
            .connections
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect();
        for conn in open {
            conn.close(shared, "the server is stopping");
        }
        shared.tasks.close();
        let _ = tokio::time::timeout(
            3 * AGENT_STOP_GRACE + Duration::from_secs(2),
            shared.tasks.wait(),
        )
        .await;
    }

    /// Serves one accepted socket (TLS first when configured), under the same admission as
    /// [`serve`](Self::serve)'s sockets: 503 when `max_sockets` sockets that showed the token
    /// are open, else a place among the unauthenticated ones until a request shows it.
    pub async fn serve_socket(&self, stream: TcpStream, peer: SocketAddr) {
        match self.shared.sockets.arrive(peer.ip()) {
            Ok((ticket, _)) => Box::pin(self.serve_with_ticket(stream, peer, ticket)).await,
            Err(admission::Full) => self.refuse_full(stream, peer),
        }
    }

    /// A socket over `max_sockets`: said, and answered 503 (bounded).
    fn refuse_full(&self, stream: TcpStream, peer: SocketAddr) {
        let shared = &self.shared;
        shared.event(ServerEvent::Refused {
            peer,
            status: 503,
            reason: format!("{} sockets open (max_sockets)", shared.config.max_sockets),
        });
        if let Ok(permit) = shared.refusals.clone().try_acquire_owned() {
            tokio::spawn(refuse_busy(stream, permit));
        }
    }

    /// Serves a socket that has its ticket. While it has not shown the token (its TLS
    /// handshake, its first request head, hyper's requests after a refusal or `/health`), each
    /// wait also ends when the ticket is evicted ([`Self::evicted`]); a request that shows it
    /// admits it ([`handle`]), and an SSE stream only follows such a request.
    async fn serve_with_ticket(&self, stream: TcpStream, peer: SocketAddr, ticket: Ticket) {
        let _ = stream.set_nodelay(true);
        let ticket = Arc::new(ticket);
        match self.shared.config.tls.clone() {
            // Boxed: a plain socket's task does not carry the handshake's or a TLS stream's size.
            Some(tls) => Box::pin(self.serve_tls(stream, peer, tls, ticket)).await,
            None => self.serve_io(stream, peer, false, ticket).await,
        }
    }

    /// Said when a socket that has not shown the token is closed to make room for a newer one.
    fn evicted(&self, peer: SocketAddr) {
        let config = &self.shared.config;
        self.shared.event(ServerEvent::Refused {
            peer,
            status: 0,
            reason: format!(
                "closed without a request showing the token, to make room for a newer socket \
                 (at most {} such sockets, {} per address)",
                config.max_unauthenticated, config.max_unauthenticated_per_peer
            ),
        });
    }

    async fn serve_tls(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        ticket: Arc<Ticket>,
    ) {
        let shared = &self.shared;
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let accepted = tokio::select! {
            r = tokio::time::timeout(shared.config.handshake_timeout, acceptor.accept(stream)) => r,
            _ = shared.stop.cancelled() => return,
            _ = ticket.evicted() => return self.evicted(peer),
        };
        match accepted {
            Ok(Ok(tls)) => self.serve_io(tls, peer, true, ticket).await,
            Ok(Err(e)) => shared.event(ServerEvent::Refused {
                peer,
                status: 0,
                reason: format!("TLS handshake failed: {e}"),
            }),
            Err(_) => shared.event(ServerEvent::Refused {
                peer,
                status: 0,
                reason: format!(
                    "no TLS handshake within {:?}",
                    shared.config.handshake_timeout
                ),
            }),
        }
    }

    /// Serves the HTTP/1.1 requests of one socket. The first request's head is read here: when
    /// it is a plain `GET` (an SSE stream, usually the only request its socket ever carries),
    /// its answer is written here too, so an open stream holds only its socket, its lease and a
    /// small task rather than a hyper connection's buffers (~20 KiB); whatever the socket
    /// carries next, or first when it is anything else, is hyper's.
    async fn serve_io<I>(&self, mut io: I, peer: SocketAddr, tls: bool, ticket: Arc<Ticket>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = &self.shared;
        // Boxed, as hyper's part below: the head's buffer, the timer and the handler are not
        // part of the task of a stream that stays open for hours.
        let prefix = match Box::pin(self.first_request(&mut io, peer, tls, &ticket)).await {
            First::Close => {
                let _ = io.shutdown().await;
                return;
            }
            First::Hyper(prefix) => prefix,
            First::Stream(body, close) => match stream_body(&mut io, body, &shared.stop).await {
                Ok(true) if !close => Bytes::new(),
                _ => {
                    let _ = io.shutdown().await;
                    return;
                }
            },
        };
        // Boxed: a socket served above does not carry hyper's connection state in its task.
        Box::pin(self.serve_hyper(Rewind { prefix, io }, peer, tls, ticket)).await
    }

    /// Reads the socket's first request head; a plain `GET` is answered here (a sized answer
    /// whole, a stream's head), anything else is left to hyper.
    async fn first_request<I>(
        &self,
        io: &mut I,
        peer: SocketAddr,
        tls: bool,
        ticket: &Arc<Ticket>,
    ) -> First
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = &self.shared;
        let head = tokio::select! {
            r = tokio::time::timeout(shared.config.handshake_timeout, read_first_head(io)) => r,
            _ = shared.stop.cancelled() => return First::Close,
            _ = ticket.evicted() => {
                self.evicted(peer);
                return First::Close;
            }
        };
        match head {
            // No complete head in time, or the peer left: hyper would close it too.
            Err(_) | Ok(FirstHead::Gone) => First::Close,
            Ok(FirstHead::Other(prefix)) => First::Hyper(prefix),
            Ok(FirstHead::Get(req, close)) => {
                let resp = handle(shared.clone(), peer, tls, ticket.clone(), req).await;
                match write_head(io, resp, close).await {
                    Ok(Some(body)) => First::Stream(body, close),
                    Ok(None) if !close => First::Hyper(Bytes::new()),
                    _ => First::Close,
                }
            }
        }
    }

    async fn serve_hyper<I>(&self, io: I, peer: SocketAddr, tls: bool, ticket: Arc<Ticket>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        let evicted = ticket.clone();
        let svc = hyper::service::service_fn(move |req| {
            let (shared, ticket) = (shared.clone(), ticket.clone());
            async move { Ok::<_, Infallible>(handle(shared, peer, tls, ticket, req).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.shared.config.handshake_timeout)
            .serve_connection(TokioIo::new(io), svc)
            .with_upgrades();
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, "HTTP connection ended: {e}");
                }
            }
            _ = self.shared.stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
            }
            // (Never once a request showed the token.)
            _ = evicted.evicted() => self.evicted(peer),
        }
    }
}

impl Shared {
    fn event(&self, e: ServerEvent) {
        if let Some(f) = &self.config.on_event {
            f(e);
        }
    }
}

/// A first request head larger than this is left to hyper (which applies its own limits).
const FIRST_HEAD_LIMIT: usize = 8 << 10;
/// Headers parsed in a first request head (more: left to hyper).
const FIRST_HEAD_HEADERS: usize = 48;

/// What the first bytes of a socket are.
enum FirstHead {
    /// A complete `GET` head (not a WebSocket upgrade) and nothing after it, as a request;
    /// `true` when the client asked to close the socket after the answer.
    Get(Request<http_body_util::Empty<Bytes>>, bool),
    /// Anything else: the bytes read so far, for hyper.
    Other(Bytes),
    /// The peer closed the socket (or it failed) before a complete head.
    Gone,
}

/// Reads until the first request head is complete (or is not a plain `GET`, or is too large).
async fn read_first_head<I: AsyncRead + Unpin>(io: &mut I) -> FirstHead {
    let mut buf = Vec::with_capacity(1024);
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(buf.len());
        }
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return FirstHead::Gone,
            Ok(_) => {}
        }
        let mut headers = [httparse::EMPTY_HEADER; FIRST_HEAD_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Partial) if buf.len() < FIRST_HEAD_LIMIT => continue,
            Ok(httparse::Status::Complete(n)) if n == buf.len() => {
                return match plain_get(&parsed) {
                    Some(got) => FirstHead::Get(got.0, got.1),
                    None => FirstHead::Other(buf.into()),
                }
            }
            _ => return FirstHead::Other(buf.into()),
        }
    }
}

/// The request of a complete head when it is an HTTP/1.1 `GET` that is not an upgrade.
fn plain_get(
    parsed: &httparse::Request<'_, '_>,
) -> Option<(Request<http_body_util::Empty<Bytes>>, bool)> {
    if parsed.method != Some("GET") || parsed.version != Some(1) {
        return None;
    }
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(parsed.path?)
        .version(hyper::Version::HTTP_11);
    let mut close = false;
    for h in parsed.headers.iter() {
        let name = header::HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(h.value).ok()?;
        if name == header::UPGRADE
            || name == header::CONTENT_LENGTH
            || name == header::TRANSFER_ENCODING
            || name == header::EXPECT
        {
            return None;
        }
        if name == header::CONNECTION {
            close |= has_token(value.to_str().ok()?, "close");
        }
        req = req.header(name, value);
    }
    Some((req.body(http_body_util::Empty::new()).ok()?, close))
}

/// What comes after a socket's first request head.
enum First {
    /// An SSE stream (its head written): its body, and whether the client asked to close after.
    Stream(Body, bool),
    /// hyper serves the socket from here, the bytes already read first.
    Hyper(Bytes),
    /// The socket is done.
    Close,
}

/// Writes an answer's head on a socket without hyper, and the body too when its size is known
/// (`Ok(None)`); a body of unknown size (an SSE stream) is returned, to be sent chunked.
async fn write_head<I>(
    io: &mut I,
    resp: Response<Body>,
    close: bool,
) -> std::io::Result<Option<Body>>
where
    I: AsyncWrite + Unpin,
{
    use std::fmt::Write as _;
    let (parts, mut body) = resp.into_parts();
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_str(),
        parts.status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &parts.headers {
        if let Ok(v) = value.to_str() {
            let _ = write!(head, "{name}: {v}\r\n");
        }
    }
    drop(parts);
    let _ = write!(
        head,
        "date: {}\r\n",
        httpdate::fmt_http_date(std::time::SystemTime::now())
    );
    if close {
        head.push_str("connection: close\r\n");
    }
    // (No answer to a `GET` here is a 204 or a 304, which could not carry a length.)
    let Some(n) = http_body::Body::size_hint(&body).exact() else {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        io.write_all(head.as_bytes()).await?;
        io.flush().await?;
        return Ok(Some(body));
    };
    let _ = write!(head, "content-length: {n}\r\n\r\n");
    let mut out = head.into_bytes();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap_or_else(|e| match e {}).into_data() {
            out.extend_from_slice(&data);
        }
    }
    io.write_all(&out).await?;
    io.flush().await?;
    Ok(None)
}

/// Sends a stream's body chunked, each event as it comes, until the stream ends (`Ok(true)`:
/// the socket can carry another request), the client leaves or the server stops. A client
/// sends nothing on a stream's socket while it is open: a read that returns is the client
/// leaving (or misbehaving), and ends the stream either way.
async fn stream_body<I>(
    io: &mut I,
    mut body: Body,
    stop: &CancellationToken,
) -> std::io::Result<bool>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    enum Next {
        Data(Bytes),
        End,
        Leave,
    }
    let mut stopped = std::pin::pin!(stop.cancelled());
    let mut probe = [0u8; 16];
    loop {
        let next = std::future::poll_fn(|cx| {
            if stopped.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Next::Leave);
            }
            let mut read = tokio::io::ReadBuf::new(&mut probe);
            if Pin::new(&mut *io).poll_read(cx, &mut read).is_ready() {
                return Poll::Ready(Next::Leave);
            }
            // (Frames that carry no bytes are skipped.)
            loop {
                match http_body::Body::poll_frame(Pin::new(&mut body), cx) {
                    Poll::Ready(Some(frame)) => {
                        if let Ok(data) = frame.unwrap_or_else(|e| match e {}).into_data() {
                            if !data.is_empty() {
                                return Poll::Ready(Next::Data(data));
                            }
                        }
                    }
                    Poll::Ready(None) => return Poll::Ready(Next::End),
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await;
        match next {
            Next::Data(data) => {
                let mut chunk = Vec::with_capacity(data.len() + 12);
                let _ = std::io::Write::write_fmt(&mut chunk, format_args!("{:x}\r\n", data.len()));
                chunk.extend_from_slice(&data);
                chunk.extend_from_slice(b"\r\n");
                drop(data);
                io.write_all(&chunk).await?;
                io.flush().await?;
            }
            Next::End => {
                io.write_all(b"0\r\n\r\n").await?;
                io.flush().await?;
                return Ok(true);
            }
            Next::Leave => return Ok(false),
        }
    }
}

/// A socket whose first bytes were already read: they are read again first.
struct Rewind<I> {
    prefix: Bytes,
    io: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            let head = self.prefix.split_to(n);
            buf.put_slice(&head);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", body.into())
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *r.status_mut() = status;
    r
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A browser page's origin, when it is allowed (CORS headers go on every answer to it).
fn cors(resp: &mut Response<Body>, origin: Option<&HeaderValue>) {
    if let Some(origin) = origin {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        h.insert(header::VARY, HeaderValue::from_static("origin"));
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("acp-connection-id, acp-session-id"),
        );
    }
}

/// A refused request's answer (said through `on_event`).
fn refused(shared: &Shared, peer: SocketAddr, refusal: Refusal) -> Response<Body> {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
    shared.event(ServerEvent::Refused {
        peer,
        status: refusal.status(),
        reason: refusal.message(),
    });
    let mut r = text(status, refusal.message());
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

async fn handle<B>(
    shared: Arc<Shared>,
    peer: SocketAddr,
    tls: bool,
    ticket: Arc<Ticket>,
    req: Request<B>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = req.uri().path();
    if path == wire::HEALTH_PATH && req.method() == Method::GET {
        return text(StatusCode::OK, "ok");
    }
    if path != wire::ENDPOINT_PATH {
        return text(
            StatusCode::NOT_FOUND,
            format!("not found: the ACP endpoint is {}", wire::ENDPOINT_PATH),
        );
    }
    let origin = req.headers().get(header::ORIGIN).cloned();
    // A browser's CORS preflight carries no credentials: answered from the origin alone (and
    // the Host, as everything else).
    if req.method() == Method::OPTIONS {
        if let Err(refusal) =
            auth::check_host(req.headers(), req.uri(), &shared.config.allowed_hosts)
        {
            return refused(&shared, peer, refusal);
        }
        let allowed = origin
            .as_ref()
            .and_then(|o| o.to_str().ok())
            .is_some_and(|o| auth::origin_allowed(o, &shared.config.allowed_origins));
        if !allowed {
            return text(
                StatusCode::FORBIDDEN,
                "origin not allowed (acp serve --allow-origin)",
            );
        }
        let mut r = empty(StatusCode::NO_CONTENT);
        cors(&mut r, origin.as_ref());
        let h = r.headers_mut();
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "authorization, content-type, accept, acp-connection-id, acp-session-id",
            ),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        return r;
    }
    let credential = match auth::authorize(
        req.headers(),
        req.uri(),
        &shared.config.token,
        &shared.config.allowed_origins,
        &shared.config.allowed_hosts,
    ) {
        Ok(c) => c,
        Err(refusal) => return refused(&shared, peer, refusal),
    };
    // The socket showed the token: it takes one of `max_sockets` (once).
    if let Err(why) = ticket.admit() {
        let reason = match why {
            NotAdmitted::Full => format!(
                "{} sockets open (max_sockets); try again later",
                shared.config.max_sockets
            ),
            NotAdmitted::Evicted => "the socket is being closed; try again".to_string(),
        };
        shared.event(ServerEvent::Refused {
            peer,
            status: 503,
            reason: reason.clone(),
        });
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many connections: {reason}"),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    }
    let mut resp = match *req.method() {
        Method::POST => handle_post(&shared, peer, req).await,
        Method::GET if is_websocket_upgrade(req.headers()) => {
            handle_upgrade(&shared, peer, credential, req)
        }
        Method::GET => handle_get(&shared, req.headers()),
        Method::DELETE => handle_delete(&shared, req.headers()),
        _ => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
            );
            r
        }
    };
    let _ = tls;
    cors(&mut resp, origin.as_ref());
    resp
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let upgrade = header_str(headers, header::UPGRADE.as_str())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let connection = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| has_token(v, "upgrade"));
    upgrade && connection
}

/// Whether a comma-separated header value (`Connection: keep-alive, Upgrade`) holds `token`.
fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// The top level of a JSON-RPC message, borrowed from its text.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

impl Envelope<'_> {
    fn id(&self) -> Option<Id> {
        self.id
            .and_then(|raw| serde_json::from_str::<Id>(raw.get()).ok())
            .filter(|id| *id != Id::Null)
    }

    /// The session a request or notification is about (see [`wire::session_id_of`]).
    fn session_id(&self) -> Option<String> {
        let method = self.method.as_deref()?;
        let params = self.params?;
        if method.starts_with("$/") {
            return None;
        }
        if method == "proxy/successor" {
            let value: serde_json::Value = serde_json::from_str(params.get()).ok()?;
            return wire::session_id_of(method, Some(&value)).map(str::to_string);
        }
        session_id_field(params.get())
    }
}

/// `sessionId` of a JSON object's text, when it is a string.
fn session_id_field(object: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct WithSession<'a> {
        #[serde(rename = "sessionId", borrow, default)]
        session_id: Option<&'a RawValue>,
    }
    let w: WithSession<'_> = serde_json::from_str(object).ok()?;
    serde_json::from_str::<String>(w.session_id?.get()).ok()
}

/// A JSON-RPC error answer with id `null` (for a batch, as the official server answers).
fn batch_rejection() -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": "Invalid Request: JSON-RPC batches are not supported"},
    });
    full(
        StatusCode::BAD_REQUEST,
        wire::JSON_MIME_TYPE,
        body.to_string(),
    )
}

async fn handle_post<B>(shared: &Arc<Shared>, peer: SocketAddr, req: Request<B>) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let headers = req.headers();
    if !header_str(headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|ct| ct.starts_with(wire::JSON_MIME_TYPE))
    {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let connection_id = header_str(headers, wire::HEADER_CONNECTION_ID).map(str::to_string);
    let session_header = header_str(headers, wire::HEADER_SESSION_ID).map(str::to_string);
    let limit = shared.config.max_body_bytes;
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("POST body too large: the limit is {limit} bytes (acp serve --max-body)"),
        )
    };
    if header_str(headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
    {
        shared.event(ServerEvent::Refused {
            peer,
            status: 413,
            reason: "POST body too large".into(),
        });
        return too_large();
    }
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.is::<http_body_util::LengthLimitError>() {
                shared.event(ServerEvent::Refused {
                    peer,
                    status: 413,
                    reason: "POST body too large".into(),
                });
                return too_large();
            }
            return text(
                StatusCode::BAD_REQUEST,
                format!("cannot read the body: {e}"),
            );
        }
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return text(
            StatusCode::BAD_REQUEST,
            "Invalid JSON-RPC: the body is not UTF-8",
        );
    };
    // One line for the agent: raw newlines in JSON can only be whitespace.
    let mut line = body.trim().replace(['\n', '\r'], " ");
    if line.starts_with('[') {
        return batch_rejection();
    }
    let envelope: Option<Envelope<'_>> = serde_json::from_str(&line).ok();
    if let Some(env) = &envelope {
        if env.method.as_deref() == Some("initialize") {
            if let Some(id) = env.id() {
                return initialize(shared, peer, id, line).await;
            }
        }
    }
    let Some(connection_id) = connection_id else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared
        .connections
        .lock()
        .unwrap()
        .get(&connection_id)
        .cloned()
    else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    conn.touch();
    // Malformed JSON goes to the agent as it is (it answers with a parse error); messages get
    // their session header applied and their response's route recorded.
    let mut pending = None;
    if let Some(env) = envelope {
        if let Some(method) = env.method.as_deref() {
            let method = method.to_string();
            let mut session = env.session_id();
            let id = env.id();
            if let Some(header_session) = &session_header {
                let scoped = !(method.starts_with("$/")
                    || wire::is_connection_scoped(
                        &method,
                        env.params
                            .and_then(|p| serde_json::from_str(p.get()).ok())
                            .as_ref(),
                    ));
                if scoped {
                    match apply_session_header(&line, header_session) {
                        Ok(Some(rewritten)) => {
                            line = rewritten;
                            session = Some(header_session.clone());
                        }
                        Ok(None) => session = Some(header_session.clone()),
                        Err(e) => return text(StatusCode::BAD_REQUEST, e),
                    }
                }
            }
            let route = match session {
                Some(s) => Route::Session(s),
                None if wire::method_requires_session_header(&method) => {
                    return text(StatusCode::BAD_REQUEST, "Acp-Session-Id header required");
                }
                None => Route::Connection,
            };
            if let Some(id) = id {
                pending = Some((id, route, Effect::of(&method)));
            }
        }
    }
    if let Some((id, route, effect)) = pending {
        conn.routes
            .lock()
            .unwrap()
            .pending
            .entry(id)
            .or_default()
            .push_back((route, effect));
    }
    match conn.send_line(line).await {
        Ok(()) => empty(StatusCode::ACCEPTED),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// Puts the `Acp-Session-Id` header's session into a message's params: `None` when they
/// already name it; an error when they name another or are not an object.
fn apply_session_header(line: &str, session: &str) -> Result<Option<String>, &'static str> {
    let mut value: serde_json::Value =
        serde_json::from_str(line).map_err(|_| "Invalid JSON-RPC")?;
    let Some(obj) = value.as_object_mut() else {
        return Err("Invalid JSON-RPC");
    };
    let params = obj
        .entry("params")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    let Some(params) = params.as_object_mut() else {
        return Err("Acp-Session-Id header requires object params");
    };
    match params.get("sessionId") {
        Some(serde_json::Value::String(s)) if s == session => Ok(None),
        Some(serde_json::Value::String(_)) => {
            Err("Acp-Session-Id header does not match params.sessionId")
        }
        Some(_) => Err("params.sessionId must be a string"),
        None => {
            params.insert(
                "sessionId".into(),
                serde_json::Value::String(session.to_string()),
            );
            Ok(Some(value.to_string()))
        }
    }
}

/// A fresh connection id: 128 random bits in the UUID v4 text form the official server uses.
fn new_connection_id() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        // Never reached on Linux; ids must still be unique.
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed) as u128 ^ (std::process::id() as u128) << 64;
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A connection slot and a started agent for a new connection, or the answer refusing it: 503
/// (with `Retry-After`) beyond `max_connections`, 502 when the agent cannot start.
fn start_agent(
    shared: &Arc<Shared>,
    peer: SocketAddr,
) -> Result<(OwnedSemaphorePermit, AgentLink), Box<Response<Body>>> {
    let Ok(slot) = shared.slots.clone().try_acquire_owned() else {
        let reason = format!(
            "{} connections open (max_connections); try again later",
            shared.config.max_connections
        );
        shared.event(ServerEvent::Refused {
            peer,
            status: 503,
            reason: reason.clone(),
        });
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many connections: {reason}"),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return Err(Box::new(r));
    };
    let link = match shared.agent.start() {
        Ok(l) => l,
        Err(e) => {
            shared.event(ServerEvent::Refused {
                peer,
                status: 502,
                reason: e.clone(),
            });
            return Err(Box::new(text(StatusCode::BAD_GATEWAY, e)));
        }
    };
    Ok((slot, link))
}

async fn initialize(
    shared: &Arc<Shared>,
    peer: SocketAddr,
    id: Id,
    line: String,
) -> Response<Body> {
    let (slot, link) = match start_agent(shared, peer) {
        Ok(started) => started,
        Err(refused) => return *refused,
    };
    let connection_id = new_connection_id();
    let pid = link.process.as_ref().map(AgentProcess::pid);
    let (init_tx, init_rx) = oneshot::channel();
    let conn = HttpConn::start(shared, connection_id.clone(), link, slot, (id, init_tx));
    if let Err(e) = conn.send_line(line).await {
        conn.close(shared, "the agent did not take initialize");
        return text(
            StatusCode::BAD_GATEWAY,
            format!("the agent did not take initialize: {e}"),
        );
    }
    enum Answer {
        Got(InitAnswer),
        Ended,
        Late,
    }
    let mut init_rx = init_rx;
    let answer = tokio::select! {
        biased;
        a = tokio::time::timeout(shared.config.initialize_timeout, &mut init_rx) => match a {
            Ok(Ok(r)) => Answer::Got(r),
            Ok(Err(_)) => Answer::Ended,
            Err(_) => Answer::Late,
        },
        _ = conn.closed.cancelled() => match init_rx.try_recv() {
            Ok(r) => Answer::Got(r),
            Err(_) => Answer::Ended,
        },
    };
    let response = match answer {
        Answer::Got(r) => r,
        Answer::Ended => {
            let why = conn
                .close_reason()
                .unwrap_or_else(|| "the agent closed".into());
            conn.close(shared, "the agent ended before answering initialize");
            return text(
                StatusCode::BAD_GATEWAY,
                format!("the agent ended before answering initialize: {why}"),
            );
        }
        Answer::Late => {
            conn.close(shared, "no initialize answer in time");
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the agent did not answer initialize within {:?}",
                    shared.config.initialize_timeout
                ),
            );
        }
    };
    if response.is_error {
        // A refused initialize creates no connection.
        conn.close(shared, "the agent refused initialize");
        return full(StatusCode::OK, wire::JSON_MIME_TYPE, response.line);
    }
    shared
        .connections
        .lock()
        .unwrap()
        .insert(connection_id.clone(), conn.clone());
    // A close that raced the insert (the agent exited at once) must not leave it registered.
    if conn.closed.is_cancelled() {
        shared.connections.lock().unwrap().remove(&connection_id);
    }
    shared.event(ServerEvent::Opened {
        peer,
        connection_id: connection_id.clone(),
        transport: "http",
        pid,
    });
    let mut r = full(StatusCode::OK, wire::JSON_MIME_TYPE, response.line);
    if let Ok(v) = HeaderValue::from_str(&connection_id) {
        r.headers_mut().insert(wire::HEADER_CONNECTION_ID, v);
    }
    r
}

fn handle_get(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<Body> {
    if !header_str(headers, header::ACCEPT.as_str())
        .is_some_and(|a| a.contains(wire::EVENT_STREAM_MIME_TYPE))
    {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "client must accept text/event-stream",
        );
    }
    let Some(connection_id) = header_str(headers, wire::HEADER_CONNECTION_ID) else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared
        .connections
        .lock()
        .unwrap()
        .get(connection_id)
        .cloned()
    else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    let session = header_str(headers, wire::HEADER_SESSION_ID).map(str::to_string);
    let lease = match conn.subscribe(session.as_deref()) {
        Ok(l) => l,
        Err(Unavailable::Busy) => {
            return text(
                StatusCode::CONFLICT,
                "outbound stream already has a subscriber",
            )
        }
        Err(Unavailable::Unknown) => return text(StatusCode::NOT_FOUND, "unknown Acp-Session-Id"),
    };
    conn.touch();
    let body = SseBody {
        lease,
        keepalive: Box::pin(tokio::time::sleep(wire::SSE_KEEPALIVE_INTERVAL)),
    };
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(wire::EVENT_STREAM_MIME_TYPE),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(connection_id) {
        h.insert(wire::HEADER_CONNECTION_ID, v);
    }
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(&s).ok()) {
        h.insert(wire::HEADER_SESSION_ID, v);
    }
    r
}

fn handle_delete(shared: &Arc<Shared>, headers: &HeaderMap) -> Response<Body> {
    let Some(connection_id) = header_str(headers, wire::HEADER_CONNECTION_ID) else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared.connections.lock().unwrap().remove(connection_id) else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    conn.close(shared, "the client closed the connection (DELETE)");
    empty(StatusCode::ACCEPTED)
}

fn handle_upgrade<B>(
    shared: &Arc<Shared>,
    peer: SocketAddr,
    credential: Credential,
    req: Request<B>,
) -> Response<Body> {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let headers = req.headers();
    if header_str(headers, header::SEC_WEBSOCKET_VERSION.as_str()) != Some("13") {
        let mut r = text(StatusCode::BAD_REQUEST, "WebSocket version 13 required");
        r.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return r;
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return text(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key header required");
    };
    let accept = derive_accept_key(key.as_bytes());
    let (slot, link) = match start_agent(shared, peer) {
        Ok(started) => started,
        Err(refused) => return *refused,
    };
    let connection_id = new_connection_id();
    let mut r = empty(StatusCode::SWITCHING_PROTOCOLS);
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Ok(v) = HeaderValue::from_str(&connection_id) {
        h.insert(wire::HEADER_CONNECTION_ID, v);
    }
    if let Credential::Protocol(p) = credential {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    let max_message = shared.config.max_body_bytes;
    let shared2 = shared.clone();
    let upgrade = hyper::upgrade::on(req);
    shared.tasks.spawn(async move {
        let shared = shared2;
        let pid = link.process.as_ref().map(AgentProcess::pid);
        let upgraded = match upgrade.await {
            Ok(u) => u,
            Err(e) => {
                stop_agent(link.writer, link.process).await;
                drop(slot);
                shared.event(ServerEvent::Refused {
                    peer,
                    status: 0,
                    reason: format!("WebSocket upgrade failed: {e}"),
                });
                return;
            }
        };
        let config = transport::ws_config(max_message).read_buffer_size(WS_READ_BUFFER);
        let socket = transport::WsSocket::server(TokioIo::new(upgraded));
        let ws = WebSocketStream::from_raw_socket(socket, WsRole::Server, Some(config)).await;
        let pongs = transport::ws_limits::OwedPongs::of(&ws);
        shared.event(ServerEvent::Opened {
            peer,
            connection_id: connection_id.clone(),
            transport: "websocket",
            pid,
        });
        // Frames are pumped straight between the socket and the agent's streams (no
        // intermediate byte pipe: every buffer here is resident memory of an idle connection).
        let (mut to_client, from_client) = futures::StreamExt::split(ws);
        let AgentLink {
            reader: agent_out,
            writer: agent_in,
            process,
        } = link;
        let max_line = shared.config.max_agent_message_bytes;
        let heard = Heard::new();
        let ping = shared.config.ws_ping_interval;
        let mut up = Box::pin(ws_to_agent(from_client, agent_in, &heard, pongs));
        let mut down = Box::pin(agent_to_ws(
            agent_out,
            &mut to_client,
            max_line,
            &heard,
            ping,
        ));
        let (reason, agent_in, down_ended, flooded) = tokio::select! {
            (w, flood) = &mut up => match flood {
                Some(flood) => (flood.to_string(), Some(w), false, true),
                None => ("the client closed the connection".to_string(), Some(w), false, false),
            },
            why = &mut down => (why, None, true, false),
            _ = shared.stop.cancelled() => {
                ("the server is stopping".to_string(), None, false, false)
            }
        };
        drop(up);
        let mut down = if flooded {
            // Nothing more is read from (or written for) a client flooding pings: a close
            // frame saying why, if it takes it, then the socket goes.
            drop(down);
            transport::ws_limits::close_after_ping_flood(&mut to_client).await;
            drop(to_client);
            None
        } else {
            Some(down)
        };
        // The agent's input closes (if not already): its cue to exit.
        let report = match agent_in {
            Some(w) => stop_agent(w, process).await,
            None => stop_agent(Box::new(tokio::io::sink()), process).await,
        };
        // What the agent still wrote goes out while the socket lasts.
        if let (Some(down), false) = (&mut down, down_ended) {
            let _ = tokio::time::timeout(Duration::from_secs(1), down).await;
        }
        drop(slot);
        let reason = match report {
            Some(r) => format!("{reason}; {r}"),
            None => reason.to_string(),
        };
        shared.event(ServerEvent::Closed {
            connection_id,
            reason,
        });
    });
    r
}

/// One WebSocket message as NDJSON for the agent (as `transport::ws_bridge` does): a message
/// spanning several lines (pretty-printed JSON, whose newlines can only be whitespace) becomes
/// one line; text that is not one JSON value but several lines (NDJSON forwarded unsplit) is
/// passed on line by line.
fn ws_text_to_lines(text: String) -> Vec<u8> {
    if !text.contains(['\n', '\r']) || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err()
    {
        return text.into_bytes();
    }
    text.replace(['\n', '\r'], " ").into_bytes()
}

/// When a WebSocket's client was last heard from (any frame, pongs included).
struct Heard {
    start: tokio::time::Instant,
    millis: std::sync::atomic::AtomicU64,
}

impl Heard {
    fn new() -> Heard {
        Heard {
            start: tokio::time::Instant::now(),
            millis: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn now(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.millis.store(ms, Ordering::Relaxed);
    }

    fn quiet(&self) -> Duration {
        let last = Duration::from_millis(self.millis.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// Client to agent: each text (or binary, read as UTF-8) message becomes a line of the agent's
/// input, until the client closes or fails, or sends pings faster than it reads their pongs
/// (more than [`transport::MAX_OWED_PONGS`] owed: the [`PingFlood`] is returned, and nothing
/// more is read); gives the agent's input back.
async fn ws_to_agent<S>(
    mut from_client: futures::stream::SplitStream<WebSocketStream<transport::WsSocket<S>>>,
    mut agent_in: Box<dyn AsyncWrite + Send + Unpin>,
    heard: &Heard,
    mut pongs: transport::ws_limits::OwedPongs,
) -> (Box<dyn AsyncWrite + Send + Unpin>, Option<PingFlood>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    while let Some(msg) = from_client.next().await {
        heard.now();
        let text = match msg {
            Ok(Message::Text(t)) => t.as_str().to_owned(),
            Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Message::Close(_)) => break,
            // tungstenite has queued its pong.
            Ok(Message::Ping(_)) => match pongs.ping() {
                Ok(()) => continue,
                Err(flood) => return (agent_in, Some(flood)),
            },
            Ok(_) => continue, // pong/raw frames
            Err(e) => {
                tracing::debug!("websocket read failed: {e}");
                break;
            }
        };
        let mut line = ws_text_to_lines(text);
        line.push(b'\n');
        if agent_in.write_all(&line).await.is_err() || agent_in.flush().await.is_err() {
            break;
        }
    }
    (agent_in, None)
}

/// Agent to client: each line the agent writes becomes one text message; the agent's EOF
/// sends a close frame. A line over `max_line` is dropped; if it was a response, the client
/// gets an error for its id in its place (as on the SSE streams). A client silent for `ping`
/// is pinged; one silent for twice that is gone. Returns why it ended.
async fn agent_to_ws<S>(
    mut agent_out: Box<dyn AsyncRead + Send + Unpin>,
    to_client: &mut futures::stream::SplitSink<
        WebSocketStream<S>,
        tokio_tungstenite::tungstenite::Message,
    >,
    max_line: usize,
    heard: &Heard,
    ping: Duration,
) -> String
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use acp_core::framing::{is_blank, Decoder, Frame};
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut decoder = Decoder::new(max_line);
    // Read into spare capacity (never zero-filled: an idle socket holds only what was read).
    let mut buf = Vec::with_capacity(WS_AGENT_READ_CHUNK);
    let mut frames: Vec<Message> = Vec::new();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + ping / 2, ping / 2);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        buf.clear();
        // (`read_buf` is cancel-safe: what a read took is in `buf`.)
        let read = tokio::select! {
            n = agent_out.read_buf(&mut buf) => Some(n.unwrap_or(0)),
            _ = tick.tick() => None,
        };
        let Some(n) = read else {
            let quiet = heard.quiet();
            if quiet >= 2 * ping {
                return format!(
                    "the client was silent for {quiet:?} and did not answer pings (gone)"
                );
            }
            if quiet >= ping {
                if let Err(e) = to_client.send(Message::Ping(Bytes::new())).await {
                    return format!("the client is gone (a ping failed: {e})");
                }
            }
            continue;
        };
        let mut sink = |f: Frame<'_>| match f {
            Frame::Line(line) if !is_blank(line) => {
                frames.push(Message::text(String::from_utf8_lossy(line).into_owned()));
            }
            Frame::Line(_) => {}
            Frame::Oversize { limit, prefix } => {
                if let Some(msg) = oversize_agent_line(limit, prefix) {
                    frames.push(Message::text(msg));
                }
            }
        };
        if n == 0 {
            decoder.finish(&mut sink);
        } else {
            decoder.decode(&buf[..n], &mut sink);
        }
        for m in frames.drain(..) {
            if let Err(e) = to_client.send(m).await {
                tracing::debug!("websocket write failed: {e}");
                return format!("the client is gone (a write failed: {e})");
            }
        }
        if n == 0 {
            break;
        }
    }
    let _ = to_client.send(Message::Close(None)).await;
    let _ = to_client.close().await;
    "the agent closed its output".into()
}

/// An agent line over `max_agent_message_bytes`, seen from its first bytes: dropped (logged);
/// for a response, the error for its id that goes to the client in its place.
fn oversize_agent_line(limit: usize, prefix: &[u8]) -> Option<String> {
    tracing::warn!(limit, "an agent message over the limit was dropped");
    let sniffed = acp_core::sniff::sniff(prefix);
    transport::oversize_response_stand_in(&sniffed, limit, "the server's")
}

/// Closes the agent's input and stops its process, if any (bounded); the exit report.
async fn stop_agent(
    mut writer: Box<dyn AsyncWrite + Send + Unpin>,
    process: Option<AgentProcess>,
) -> Option<String> {
    let _ = tokio::time::timeout(Duration::from_millis(200), writer.shutdown()).await;
    drop(writer);
    let mut process = process?;
    let outcome = process.shutdown(AGENT_STOP_GRACE).await;
    Some(outcome.report.to_string())
}

/// Answers a socket over `max_sockets` with 503, bounded in time.
async fn refuse_busy(stream: TcpStream, _permit: OwnedSemaphorePermit) {
    answer_busy(
        stream,
        "too many connections (max_sockets); try again later\n",
    )
    .await;
}

/// Answers a raw socket with `503 Service Unavailable` and `body` (`Retry-After: 5`), then
/// reads until the client closes (so closing does not reset the connection before it read the
/// answer), all within 2 s. For servers over their connection limit (`acp serve --ws` too).
pub async fn answer_busy(mut stream: TcpStream, body: &str) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so closing does not reset the connection
        // before it has read the answer.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// One HTTP + SSE connection.

/// What a successful or failed `initialize` answered.
struct InitAnswer {
    line: String,
    is_error: bool,
}

/// What a response does to the connection's known sessions when it succeeds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Effect {
    None,
    Opens,
    Closes,
}

impl Effect {
    fn of(method: &str) -> Effect {
        if wire::is_session_opening_method(method) {
            Effect::Opens
        } else if wire::is_session_closing_method(method) {
            Effect::Closes
        } else {
            Effect::None
        }
    }
}

struct SessionStream {
    mailbox: Arc<Mailbox>,
    /// The agent has named this session on the connection.
    confirmed: bool,
}

struct Routes {
    connection: Arc<Mailbox>,
    sessions: HashMap<String, SessionStream>,
    /// Requests from the client not answered yet: where their response goes.
    pending: HashMap<Id, VecDeque<(Route, Effect)>>,
    /// The initialize request, until its answer.
    init: Option<(Id, oneshot::Sender<InitAnswer>)>,
}

enum Unavailable {
    Busy,
    Unknown,
}

struct HttpConn {
    id: String,
    writer: tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>,
    process: tokio::sync::Mutex<Option<AgentProcess>>,
    routes: Mutex<Routes>,
    closed: CancellationToken,
    close_reason: Mutex<Option<String>>,
    /// Bytes queued in this connection's mailboxes.
    backlog: Arc<AtomicUsize>,
    /// SSE streams open.
    readers: AtomicUsize,
    last_active: Mutex<tokio::time::Instant>,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl HttpConn {
    fn start(
        shared: &Arc<Shared>,
        id: String,
        link: AgentLink,
        slot: OwnedSemaphorePermit,
        init: (Id, oneshot::Sender<InitAnswer>),
    ) -> Arc<HttpConn> {
        let backlog = Arc::new(AtomicUsize::new(0));
        let conn = Arc::new(HttpConn {
            id,
            writer: tokio::sync::Mutex::new(Some(link.writer)),
            process: tokio::sync::Mutex::new(link.process),
            routes: Mutex::new(Routes {
                connection: Arc::new(Mailbox::new(backlog.clone())),
                sessions: HashMap::new(),
                pending: HashMap::new(),
                init: Some(init),
            }),
            closed: CancellationToken::new(),
            close_reason: Mutex::new(None),
            backlog,
            readers: AtomicUsize::new(0),
            last_active: Mutex::new(tokio::time::Instant::now()),
            slot: Mutex::new(Some(slot)),
        });
        // The agent's output, routed to the streams until it ends.
        let (c, s) = (conn.clone(), shared.clone());
        let mut reader = link.reader;
        shared.tasks.spawn(async move {
            let why = tokio::select! {
                why = c.read_agent(&mut reader, &s) => why,
                _ = c.closed.cancelled() => return,
            };
            c.close(&s, &why);
        });
        // Idle connections end.
        let (c, s) = (conn.clone(), shared.clone());
        let idle = shared.config.idle_timeout;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(idle / 4 + Duration::from_millis(1)) => {}
                    _ = c.closed.cancelled() => return,
                }
                let quiet = c.last_active.lock().unwrap().elapsed();
                if c.readers.load(Ordering::Relaxed) == 0 && quiet >= idle {
                    c.close(
                        &s,
                        &format!("idle: no request and no open stream for {quiet:?}"),
                    );
                    return;
                }
            }
        });
        conn
    }

    fn touch(&self) {
        *self.last_active.lock().unwrap() = tokio::time::Instant::now();
    }

    fn close_reason(&self) -> Option<String> {
        self.close_reason.lock().unwrap().clone()
    }

    /// Writes one message to the agent.
    async fn send_line(&self, mut line: String) -> Result<(), String> {
        line.push('\n');
        let mut w = self.writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err("the connection is closed".into());
        };
        w.write_all(line.as_bytes())
            .await
            .map_err(|e| format!("the agent's input is closed: {e}"))?;
        w.flush()
            .await
            .map_err(|e| format!("the agent's input is closed: {e}"))
    }

    /// Reads the agent's messages and routes each; returns why the output ended.
    async fn read_agent(
        &self,
        reader: &mut (dyn AsyncRead + Send + Unpin),
        shared: &Arc<Shared>,
    ) -> String {
        use acp_core::framing::{is_blank, Decoder, Frame};
        let mut decoder = Decoder::new(shared.config.max_agent_message_bytes);
        // Read into spare capacity (never zero-filled: an idle connection holds only what was
        // read).
        let mut buf = Vec::with_capacity(16 << 10);
        let mut overflow = None;
        loop {
            buf.clear();
            let n = match reader.read_buf(&mut buf).await {
                Ok(n) => n,
                Err(e) => return format!("reading the agent failed: {e}"),
            };
            let mut sink = |f: Frame<'_>| {
                if overflow.is_some() {
                    return;
                }
                match f {
                    Frame::Line(line) if !is_blank(line) => {
                        if let Err(e) = self.route(line, shared) {
                            overflow = Some(e);
                        }
                    }
                    Frame::Line(_) => {}
                    Frame::Oversize { limit, prefix } => {
                        if let Some(msg) = oversize_agent_line(limit, prefix) {
                            if let Err(e) = self.route(msg.as_bytes(), shared) {
                                overflow = Some(e);
                            }
                        }
                    }
                }
            };
            if n == 0 {
                decoder.finish(&mut sink);
            } else {
                decoder.decode(&buf[..n], &mut sink);
            }
            if let Some(e) = overflow {
                return e;
            }
            if n == 0 {
                let report = match self.process.lock().await.as_ref() {
                    Some(p) => match tokio::time::timeout(Duration::from_secs(2), p.wait()).await {
                        Ok(r) => format!("the agent exited: {r}"),
                        Err(_) => "the agent closed its output".into(),
                    },
                    None => "the agent closed its output".into(),
                };
                return report;
            }
        }
    }

    /// Puts one agent message on its stream (or answers initialize).
    fn route(&self, line: &[u8], shared: &Arc<Shared>) -> Result<(), String> {
        let text = String::from_utf8_lossy(line);
        let envelope: Option<Envelope<'_>> = serde_json::from_str(&text).ok();
        let mut routes = self.routes.lock().unwrap();
        let target = match &envelope {
            None => routes.connection.clone(),
            Some(env) if env.method.is_some() => match env.session_id() {
                Some(session) => routes.confirm(&session, &self.backlog),
                None => routes.connection.clone(),
            },
            Some(env) => {
                let id = env.id();
                if let (Some(id), Some((init_id, _))) = (&id, &routes.init) {
                    if id == init_id {
                        let (_, tx) = routes.init.take().unwrap();
                        let is_error = env.result.is_none();
                        let _ = tx.send(InitAnswer {
                            line: text.into_owned(),
                            is_error,
                        });
                        return Ok(());
                    }
                }
                let pending = id.and_then(|id| {
                    let queue = routes.pending.get_mut(&id)?;
                    let p = queue.pop_front();
                    if queue.is_empty() {
                        routes.pending.remove(&id);
                    }
                    p
                });
                match pending {
                    Some((route, effect)) => routes
                        .response_target(route, effect, env.result)
                        .unwrap_or_else(|| routes.connection.clone()),
                    None => routes.connection.clone(),
                }
            }
        };
        drop(routes);
        let event = wire::sse_event(&text.replace('\r', " "));
        let queued = self.backlog.fetch_add(event.len(), Ordering::Relaxed) + event.len();
        if queued > shared.config.max_backlog_bytes {
            self.backlog.fetch_sub(event.len(), Ordering::Relaxed);
            return Err(format!(
                "the client did not read its event streams: more than {} bytes queued \
                 (max_backlog_bytes)",
                shared.config.max_backlog_bytes
            ));
        }
        target.push(Bytes::from(event));
        Ok(())
    }

    fn subscribe(self: &Arc<Self>, session: Option<&str>) -> Result<Lease, Unavailable> {
        let mut routes = self.routes.lock().unwrap();
        let mailbox = match session {
            None => routes.connection.clone(),
            Some(s) => match routes.sessions.get(s) {
                Some(stream) => stream.mailbox.clone(),
                None => {
                    let unconfirmed = routes.sessions.values().filter(|s| !s.confirmed).count();
                    if unconfirmed >= wire::MAX_UNCONFIRMED_SESSION_STREAMS {
                        return Err(Unavailable::Unknown);
                    }
                    let mailbox = Arc::new(Mailbox::new(self.backlog.clone()));
                    routes.sessions.insert(
                        s.to_string(),
                        SessionStream {
                            mailbox: mailbox.clone(),
                            confirmed: false,
                        },
                    );
                    mailbox
                }
            },
        };
        if !mailbox.lease() {
            return Err(Unavailable::Busy);
        }
        self.readers.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            conn: self.clone(),
            mailbox,
            session: session.map(str::to_string),
        })
    }

    /// Ends the connection: unregistered, its streams end (after what is queued), its agent is
    /// stopped in the background (bounded).
    fn close(self: &Arc<Self>, shared: &Arc<Shared>, reason: &str) {
        if self.closed.is_cancelled() {
            return;
        }
        *self.close_reason.lock().unwrap() = Some(reason.to_string());
        self.closed.cancel();
        {
            let mut map = shared.connections.lock().unwrap();
            if map.get(&self.id).is_some_and(|c| Arc::ptr_eq(c, self)) {
                map.remove(&self.id);
            }
        }
        {
            let mut routes = self.routes.lock().unwrap();
            routes.connection.close();
            for s in routes.sessions.values() {
                s.mailbox.close();
            }
            routes.init = None;
        }
        let (c, s, reason) = (self.clone(), shared.clone(), reason.to_string());
        shared.tasks.spawn(async move {
            let writer = c.writer.lock().await.take();
            let process = c.process.lock().await.take();
            let report = stop_agent(
                writer.unwrap_or_else(|| Box::new(tokio::io::sink())),
                process,
            )
            .await;
            c.slot.lock().unwrap().take();
            let reason = match report {
                Some(r) if !reason.contains("exited") => format!("{reason}; {r}"),
                _ => reason,
            };
            s.event(ServerEvent::Closed {
                connection_id: c.id.clone(),
                reason,
            });
        });
    }
}

impl Routes {
    /// Marks a session as known, creating its stream if needed.
    fn confirm(&mut self, session: &str, backlog: &Arc<AtomicUsize>) -> Arc<Mailbox> {
        let stream = self
            .sessions
            .entry(session.to_string())
            .or_insert_with(|| SessionStream {
                mailbox: Arc::new(Mailbox::new(backlog.clone())),
                confirmed: false,
            });
        stream.confirmed = true;
        stream.mailbox.clone()
    }

    /// Updates the known sessions for a response and picks its stream (`None`: the
    /// connection's), as the official server does.
    fn response_target(
        &mut self,
        route: Route,
        effect: Effect,
        result: Option<&RawValue>,
    ) -> Option<Arc<Mailbox>> {
        if effect == Effect::Opens {
            if let Some(session) = result.and_then(|r| session_id_field(r.get())) {
                let backlog = self.connection.backlog.clone();
                self.confirm(&session, &backlog);
            }
        }
        let Route::Session(session) = route else {
            return None;
        };
        let mut target = self.sessions.get(&session).map(|s| s.mailbox.clone());
        if result.is_some() {
            match effect {
                Effect::Closes => {
                    // A response queued on a removed stream would be lost: unless someone is
                    // reading the session's stream, it goes on the connection's.
                    if target.as_ref().is_some_and(|m| !m.is_leased()) {
                        target = None;
                    }
                    self.sessions.remove(&session);
                }
                Effect::None | Effect::Opens => {
                    let backlog = self.connection.backlog.clone();
                    self.confirm(&session, &backlog);
                }
            }
        }
        target
    }
}

/// A queue of SSE events for one stream, read by at most one client at a time.
struct Mailbox {
    state: Mutex<MailboxState>,
    backlog: Arc<AtomicUsize>,
}

#[derive(Default)]
struct MailboxState {
    queue: VecDeque<Bytes>,
    leased: bool,
    closed: bool,
    waker: Option<Waker>,
}

impl Mailbox {
    fn new(backlog: Arc<AtomicUsize>) -> Mailbox {
        Mailbox {
            state: Mutex::new(MailboxState::default()),
            backlog,
        }
    }

    fn push(&self, event: Bytes) {
        let mut s = self.state.lock().unwrap();
        s.queue.push_back(event);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    fn close(&self) {
        let mut s = self.state.lock().unwrap();
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    fn lease(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        !std::mem::replace(&mut s.leased, true)
    }

    fn is_leased(&self) -> bool {
        self.state.lock().unwrap().leased
    }

    /// The queued events (up to [`SSE_WRITE_CHUNK`] bytes at once), `None` once closed and
    /// drained.
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut s = self.state.lock().unwrap();
        let Some(first) = s.queue.pop_front() else {
            if s.closed {
                return Poll::Ready(None);
            }
            s.waker = Some(cx.waker().clone());
            return Poll::Pending;
        };
        let out = if s
            .queue
            .front()
            .is_some_and(|b| first.len() + b.len() <= SSE_WRITE_CHUNK)
        {
            let mut buf = bytes::BytesMut::from(&first[..]);
            while let Some(next) = s.queue.front() {
                if buf.len() + next.len() > SSE_WRITE_CHUNK {
                    break;
                }
                let next = s.queue.pop_front().unwrap();
                buf.extend_from_slice(&next);
            }
            buf.freeze()
        } else {
            first
        };
        drop(s);
        self.backlog.fetch_sub(out.len(), Ordering::Relaxed);
        Poll::Ready(Some(out))
    }
}

/// One client reading one stream.
struct Lease {
    conn: Arc<HttpConn>,
    mailbox: Arc<Mailbox>,
    session: Option<String>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut s = self.mailbox.state.lock().unwrap();
            s.leased = false;
            s.waker = None;
        }
        self.conn.readers.fetch_sub(1, Ordering::Relaxed);
        self.conn.touch();
        // A stream for a session the agent never named exists only while a client holds it.
        if let Some(session) = &self.session {
            let mut routes = self.conn.routes.lock().unwrap();
            if routes
                .sessions
                .get(session)
                .is_some_and(|s| !s.confirmed && Arc::ptr_eq(&s.mailbox, &self.mailbox))
            {
                routes.sessions.remove(session);
            }
        }
    }
}

/// An SSE response body: the stream's events as they come, a keep-alive comment when idle.
struct SseBody {
    lease: Lease,
    keepalive: Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.lease.mailbox.poll_take(cx) {
            Poll::Ready(Some(b)) => {
                let next = tokio::time::Instant::now() + wire::SSE_KEEPALIVE_INTERVAL;
                self.keepalive.as_mut().reset(next);
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.keepalive.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let next = tokio::time::Instant::now() + wire::SSE_KEEPALIVE_INTERVAL;
                    self.keepalive.as_mut().reset(next);
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                        wire::SSE_KEEPALIVE.as_bytes(),
                    )))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_ids_look_like_uuids_and_differ() {
        let a = new_connection_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_ne!(a, new_connection_id());
    }

    #[test]
    fn the_session_header_goes_into_params() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[]}}"#;
        let out = apply_session_header(line, "s1").unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["params"]["sessionId"], "s1");
        let same =
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}"#;
        assert_eq!(apply_session_header(same, "s1"), Ok(None));
        assert_eq!(
            apply_session_header(same, "s2"),
            Err("Acp-Session-Id header does not match params.sessionId")
        );
        let none = r#"{"jsonrpc":"2.0","id":1,"method":"session/cancel"}"#;
        let out = apply_session_header(none, "s1").unwrap().unwrap();
        assert!(out.contains(r#""sessionId":"s1""#), "{out}");
        let array = r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#;
        assert!(apply_session_header(array, "s1").is_err());
    }

    #[test]
    fn responses_follow_their_requests_route() {
        let backlog = Arc::new(AtomicUsize::new(0));
        let mut routes = Routes {
            connection: Arc::new(Mailbox::new(backlog.clone())),
            sessions: HashMap::new(),
            pending: HashMap::new(),
            init: None,
        };
        let created = RawValue::from_string(r#"{"sessionId":"new-1"}"#.into()).unwrap();
        // session/new: to the connection's stream, and the session becomes known.
        assert!(routes
            .response_target(Route::Connection, Effect::Opens, Some(&created))
            .is_none());
        assert!(routes.sessions["new-1"].confirmed);
        // A prompt's answer goes on the session's stream.
        let ok = RawValue::from_string("{}".into()).unwrap();
        let t = routes.response_target(Route::Session("new-1".into()), Effect::None, Some(&ok));
        assert!(t.is_some_and(|m| Arc::ptr_eq(&m, &routes.sessions["new-1"].mailbox)));
        // An error for an unknown session: the connection's stream, nothing allocated.
        assert!(routes
            .response_target(Route::Session("made-up".into()), Effect::None, None)
            .is_none());
        assert!(!routes.sessions.contains_key("made-up"));
        // A close forgets the session; unread, its answer goes on the connection's stream.
        assert!(routes
            .response_target(Route::Session("new-1".into()), Effect::Closes, Some(&ok))
            .is_none());
        assert!(routes.sessions.is_empty());
    }
}
#[cfg(test)]
mod task_size {
    use super::*;

    /// Each open SSE stream is one task of `serve_socket`'s future, for as long as the stream is
    /// open: it must stay small (the handshake, the head's parsing, the handler and hyper are
    /// boxed away from it). 10,000 streams at 1 KiB are 10 MiB.
    #[tokio::test]
    async fn a_socket_s_task_stays_under_a_kilobyte() {
        let server = RemoteServer::new(in_process_agent(|_| {}), RemoteServerConfig::new("t"));
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (socket, peer) = l.accept().await.unwrap();
        let task = server.serve_socket(socket, peer);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1024, "serve_socket's future is {size} bytes");
        drop(task);
        // What `serve` spawns per socket.
        let _client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (socket, peer) = l.accept().await.unwrap();
        let (ticket, _) = server.shared.sockets.arrive(peer.ip()).unwrap();
        let task = server.serve_with_ticket(socket, peer, ticket);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1024, "serve_with_ticket's future is {size} bytes");
        let mut io = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let stop = CancellationToken::new();
        let stream = stream_body(&mut io, empty(StatusCode::OK).into_body(), &stop);
        let size = std::mem::size_of_val(&stream);
        assert!(size <= 512, "stream_body's future is {size} bytes");
    }
}
