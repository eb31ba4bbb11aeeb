//! The client side of the remote transports: an agent served over HTTP + SSE
//! (`http(s)://host/acp`) or WebSocket (`ws(s)://host/acp`), as the official
//! `agent-client-protocol-http` 5 crate's `HttpClient` speaks to it, bridged to the NDJSON byte
//! stream the driver reads, so a [`ClientSideConnection`] over it is the same as over stdio.
//!
//! What the HTTP + SSE bridge does with each line the driver writes (the rules are acp-core's
//! [`acp_core::http_sse`], re-exported as [`super::wire`]):
//!
//! * the first must be an `initialize` request: it is `POST`ed; the answer's body is the
//!   initialize response (passed to the driver) and its [`HEADER_CONNECTION_ID`] names the
//!   connection; then the connection's SSE stream is opened (`GET`, `Accept:
//!   text/event-stream`) before anything else is sent;
//! * each later message is `POST`ed with the connection id (and [`HEADER_SESSION_ID`] when it
//!   names a session), answered `202`. Before the first message naming a session, that
//!   session's SSE stream is opened; a successful `session/new` / `session/fork` answer opens
//!   the new session's stream at once. Requests and notifications are posted one after the
//!   other, in order; responses (our answers to the agent's requests) on a second lane, so an
//!   answer is never stuck behind a request that waits for it;
//! * every SSE event's data is one message, passed to the driver as one line;
//! * when the driver closes its end, the connection is ended with `DELETE`.
//!
//! Over WebSocket, each message is one text frame (the crate's one frame pump, which the
//! library's [`crate::transport::ws_bridge`] runs too).
//!
//! Every request, and the WebSocket handshake, carries `Authorization: Bearer TOKEN` when a
//! token is given. TLS (`https`, `wss`) is rustls with the ring provider, trusting the
//! system's roots, webpki's, and an optional extra CA file (a self-signed development server).
//! A token (given, or in the URL's `?token=`) is not sent in clear (`http`, `ws`) to a host
//! that is not this machine's loopback (`localhost`, 127.0.0.0/8, `[::1]`) unless
//! [`ClientOptions::allow_insecure`] says so: such a URL is refused before anything is sent.
//!
//! Failures are [`RemoteError`]s that say what happened (refused, TLS, HTTP 401/403/404/5xx,
//! a lost stream); once connected, the failure that ends the transport becomes the
//! connection's close reason, so pending calls fail with it ([`RemoteLink::failure`] keeps it).
//! Memory is bounded: every queue between the network and the driver is bounded (a slow driver
//! slows the reading of the streams), and a line the driver writes over the size limit
//! ([`ClientOptions::max_message_bytes`]) is not sent (logged). An SSE event from the server
//! over it is skipped without being held (the [`SseDecoder`] keeps its first bytes, counts
//! the rest and drops it) and the streams go on, as acp-core skips an oversize line on stdio
//! (`acp_core::sniff` reads its id from the first bytes): a response to one of our requests
//! becomes an error response for its id, so that call fails at once naming the limit; a
//! request from the agent is answered with acp-core's oversize error for its id; a
//! notification is dropped; each is logged (`warn`). A WebSocket message over the limit ends
//! the transport with a failure that says so: tungstenite reads a message whole and cannot
//! skip one (after it, every read fails the same way).
//!
//! Files: `options.rs` ([`ClientOptions`]), `error.rs` ([`RemoteError`]), `endpoint.rs`
//! ([`Endpoint`]), `dialer.rs` (TCP and TLS, the token's rule, [`tls_config`]), `link.rs`
//! ([`RemoteLink`]: the failure that ends the transport), `websocket.rs` (the handshake and the
//! frame pump's client side), `http.rs` (the HTTP + SSE bridge: its two POST lanes, `DELETE`),
//! `lane.rs` (requests over a kept-alive connection), `streams.rs` (the SSE streams).

mod dialer;
mod endpoint;
mod error;
mod http;
mod lane;
mod link;
mod options;
mod streams;
mod websocket;

use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use tokio::io::{AsyncRead, AsyncWrite};
use tower::Service;

pub use dialer::tls_config;
pub use endpoint::Endpoint;
pub use error::RemoteError;
pub use link::RemoteLink;
pub use options::ClientOptions;

use super::wire;
use crate::driver::{DriverConfig, Incoming as DriverIncoming};
use crate::transport::DuplexHalves;
use crate::ClientSideConnection;
use dialer::Dialer;
use link::LinkShared;

#[cfg(doc)]
use acp_core::http_sse::SseDecoder;
#[cfg(doc)]
use wire::{HEADER_CONNECTION_ID, HEADER_SESSION_ID};

/// Bytes buffered between the bridge and the driver, per direction.
const BRIDGE_BUFFER: usize = 256 << 10;
/// Messages queued from the SSE streams to the driver, and from the driver to each POST lane.
const QUEUE: usize = 32;
/// After the driver closed its end, how long the queued POSTs and the `DELETE` may take.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// Opens a transport to the agent at `url`: the NDJSON halves for the driver (or
/// [`ClientSideConnection::connect`]) and the link. For WebSocket, the handshake is done
/// here; for HTTP, the server is reached (TCP, TLS) here and the connection is made by the
/// driver's `initialize`.
pub async fn open(
    url: &str,
    options: &ClientOptions,
) -> Result<(DuplexHalves, RemoteLink), RemoteError> {
    let endpoint = Endpoint::parse(url)?;
    let dialer = Arc::new(Dialer::new(endpoint.clone(), options)?);
    let link = RemoteLink {
        shared: LinkShared::new(endpoint.to_string()),
    };
    let halves = if endpoint.is_websocket() {
        websocket::open(&dialer, options, link.shared.clone()).await?
    } else {
        http::open(dialer, link.shared.clone(), options.max_message_bytes).await?
    };
    Ok((halves, link))
}

/// [`open`], then a [`ClientSideConnection`] over it whose close reason is the transport's
/// failure.
pub async fn connect<S>(
    url: &str,
    options: &ClientOptions,
    service: S,
    config: DriverConfig,
) -> Result<(ClientSideConnection, RemoteLink), RemoteError>
where
    S: Service<DriverIncoming, Response = Box<RawValue>, Error = ErrorObject>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    connect_with(url, options, service, config, |r, w| (r, w)).await
}

/// [`connect`], with the transport's halves passed through `wrap` first (a tap that logs
/// every message, as `acp chat --log-rpc` does). `config.eof_grace` is raised to 3 s
/// if lower: the transport's failure is handed to the connection just before the EOF that
/// follows it, and must not lose that race to a generic reason.
pub async fn connect_with<S, R, W>(
    url: &str,
    options: &ClientOptions,
    service: S,
    mut config: DriverConfig,
    wrap: impl FnOnce(
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) -> (R, W),
) -> Result<(ClientSideConnection, RemoteLink), RemoteError>
where
    S: Service<DriverIncoming, Response = Box<RawValue>, Error = ErrorObject>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    assert_eq!(
        config.core.role,
        Role::Client,
        "remote::client::connect needs a client config"
    );
    if config.eof_grace < CLOSE_GRACE {
        config.eof_grace = CLOSE_GRACE;
    }
    let ((reader, writer), link) = open(url, options).await?;
    let (reader, writer) = wrap(reader, writer);
    let conn = ClientSideConnection::connect(reader, writer, service, config);
    link.attach(conn.handle());
    Ok((conn, link))
}

impl ClientSideConnection {
    /// Connects to a remote agent at `url` (`http(s)://…/acp` or `ws(s)://…/acp`): see
    /// [`crate::remote::client`].
    pub async fn connect_url<S>(
        url: &str,
        options: &ClientOptions,
        service: S,
        config: DriverConfig,
    ) -> Result<(ClientSideConnection, RemoteLink), RemoteError>
    where
        S: Service<DriverIncoming, Response = Box<RawValue>, Error = ErrorObject>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        connect(url, options, service, config).await
    }
}
