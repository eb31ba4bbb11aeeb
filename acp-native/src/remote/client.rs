//! The client side of the remote transports: an agent served over HTTP + SSE
//! (`http(s)://host/acp`) or WebSocket (`ws(s)://host/acp`), as the official
//! `agent-client-protocol-http` 5 crate's `HttpClient` speaks to it, bridged to the NDJSON byte
//! stream the driver reads, so a [`ClientSideConnection`] over it is the same as over stdio.
//!
//! What the HTTP + SSE bridge does with each line the driver writes (see [`super::wire`]):
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
//! Over WebSocket, each message is one text frame (the library's [`crate::transport::ws_bridge`]).
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

use std::collections::HashSet;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::rustls;
use tokio_util::sync::CancellationToken;
use tower::Service;

use super::wire::{
    self, SseDecoder, SseItem, EVENT_STREAM_MIME_TYPE, HEADER_CONNECTION_ID, HEADER_SESSION_ID,
    JSON_MIME_TYPE,
};
use crate::driver::{ConnectionHandle, DriverConfig, Incoming as DriverIncoming};
use crate::transport::DuplexHalves;
use crate::ClientSideConnection;

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
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    pub fn allow_insecure(mut self, allow: bool) -> Self {
        self.allow_insecure = allow;
        self
    }
}

/// Why a remote connection could not be made, or ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// The URL is not one this client speaks.
    Url(String),
    /// The option values are unusable (a token with characters a header cannot carry, an
    /// unreadable CA file).
    Options(String),
    /// Nothing listens at the address.
    Refused { addr: String },
    /// TCP could not connect (name resolution, unreachable network...).
    Connect { addr: String, message: String },
    /// Connecting (TCP, TLS, WebSocket handshake) took longer than the limit.
    Timeout { addr: String },
    /// The TLS handshake failed (an untrusted or mismatched certificate...).
    Tls { host: String, message: String },
    /// The server answered with an error status.
    Http {
        /// Which request: "initialize", "the WebSocket handshake", "a message"...
        during: String,
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// The server broke the transport's rules (a missing header, a non-JSON answer...).
    Protocol(String),
    /// An established connection was lost.
    Lost(String),
}

impl RemoteError {
    /// The HTTP status, for [`RemoteError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            RemoteError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server refused the credentials (401) or the client (403): retrying cannot help.
    pub fn is_refusal(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteError::Url(m) | RemoteError::Options(m) | RemoteError::Protocol(m) => {
                f.write_str(m)
            }
            RemoteError::Refused { addr } => {
                write!(f, "connection refused by {addr} (is the server running?)")
            }
            RemoteError::Connect { addr, message } => {
                write!(f, "cannot connect to {addr}: {message}")
            }
            RemoteError::Timeout { addr } => write!(f, "connecting to {addr} timed out"),
            RemoteError::Tls { host, message } => {
                write!(f, "TLS with {host} failed: {message}")
            }
            RemoteError::Http {
                during,
                status,
                body,
            } => {
                let reason = StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                write!(
                    f,
                    "the server answered {during} with HTTP {status} {reason}"
                )?;
                let what = match status {
                    401 => Some("the token is missing or wrong"),
                    403 => Some("the server refuses this client (its Origin, address or token)"),
                    404 if during == "initialize" || during == "the WebSocket handshake" => {
                        Some("no ACP endpoint at this URL (the usual path is /acp)")
                    }
                    404 => Some("the server no longer knows this connection"),
                    500..=599 => Some("the server failed"),
                    _ => None,
                };
                if let Some(what) = what {
                    write!(f, ": {what}")?;
                }
                if !body.is_empty() {
                    write!(f, " ({body})")?;
                }
                Ok(())
            }
            RemoteError::Lost(m) => write!(f, "the connection was lost: {m}"),
        }
    }
}

impl std::error::Error for RemoteError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
    Ws,
    Wss,
}

/// A parsed remote URL.
#[derive(Debug, Clone)]
pub struct Endpoint {
    scheme: Scheme,
    /// The host as written (IPv6 in brackets).
    host: String,
    port: u16,
    /// Path and query; `/acp` when the URL has no path.
    path: String,
}

impl Endpoint {
    /// Parses `http(s)://host[:port][/path]` or `ws(s)://…`. Without a path (or `/`), the
    /// path is `/acp`, the official transport's endpoint.
    pub fn parse(url: &str) -> Result<Endpoint, RemoteError> {
        let bad = |why: &str| RemoteError::Url(format!("`{url}` is not a remote agent URL: {why}"));
        let uri: hyper::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
        let scheme = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
            Some("http") => Scheme::Http,
            Some("https") => Scheme::Https,
            Some("ws") => Scheme::Ws,
            Some("wss") => Scheme::Wss,
            Some(other) => {
                return Err(bad(&format!(
                    "scheme `{other}` (use http, https, ws or wss)"
                )))
            }
            None => return Err(bad("no scheme (use http://, https://, ws:// or wss://)")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad(
                "credentials in the URL (give the token with the token option)",
            ));
        }
        let host = authority.host().to_string();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let tls = matches!(scheme, Scheme::Https | Scheme::Wss);
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path = match uri.path_and_query().map(|p| p.as_str()) {
            None | Some("") | Some("/") => wire::ENDPOINT_PATH.to_string(),
            Some(p) => p.to_string(),
        };
        Ok(Endpoint {
            scheme,
            host,
            port,
            path,
        })
    }

    pub fn is_websocket(&self) -> bool {
        matches!(self.scheme, Scheme::Ws | Scheme::Wss)
    }

    pub fn is_tls(&self) -> bool {
        matches!(self.scheme, Scheme::Https | Scheme::Wss)
    }

    /// `host:port` (the Host header; IPv6 in brackets).
    fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The host without IPv6 brackets (for DNS and TLS names).
    fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// Whether the host is this machine's loopback: `localhost`, 127.0.0.0/8 or `[::1]` (no
    /// name is resolved: a name is loopback only if it is `localhost`).
    pub fn is_loopback(&self) -> bool {
        let host = self.bare_host();
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.to_canonical().is_loopback())
    }

    /// Whether the URL carries a token in its query (`?token=`, as `acp serve` prints it).
    fn has_query_token(&self) -> bool {
        self.path.split_once('?').is_some_and(|(_, query)| {
            query
                .split('&')
                .any(|pair| pair.split('=').next() == Some(wire::TOKEN_QUERY_PARAM))
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Ws => "ws",
            Scheme::Wss => "wss",
        };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

/// TCP (and TLS) to the server.
struct Dialer {
    endpoint: Endpoint,
    tls: Option<tokio_rustls::TlsConnector>,
    timeout: Duration,
    authorization: Option<HeaderValue>,
}

impl Dialer {
    fn new(endpoint: Endpoint, options: &ClientOptions) -> Result<Dialer, RemoteError> {
        let authorization = match &options.token {
            Some(token) => {
                let token = token.trim();
                if token.is_empty() {
                    return Err(RemoteError::Options("the token is empty".into()));
                }
                let value = HeaderValue::from_str(&wire::bearer(token)).map_err(|_| {
                    RemoteError::Options(
                        "the token holds characters an HTTP header cannot carry".into(),
                    )
                })?;
                Some(value)
            }
            None => None,
        };
        let token = authorization.is_some() || endpoint.has_query_token();
        if token && !endpoint.is_tls() && !endpoint.is_loopback() && !options.allow_insecure {
            let scheme = if endpoint.is_websocket() {
                "ws"
            } else {
                "http"
            };
            return Err(RemoteError::Options(format!(
                "{scheme}://{} is not encrypted and {} is not this machine: the token would \
                 cross the network in clear, for anyone on the way to read and use. Use \
                 https:// or wss:// (a server with --tls-cert, or a TLS proxy or an ssh tunnel \
                 in front), or allow it knowingly with --allow-insecure \
                 (ClientOptions::allow_insecure)",
                endpoint.authority(),
                endpoint.host
            )));
        }
        let tls = if endpoint.is_tls() {
            // WebSocket upgrades are HTTP/1.1 too.
            Some(tokio_rustls::TlsConnector::from(tls_config(options)?))
        } else {
            None
        };
        Ok(Dialer {
            endpoint,
            tls,
            timeout: options.connect_timeout,
            authorization,
        })
    }

    async fn dial(&self) -> Result<Io, RemoteError> {
        let addr = self.endpoint.authority();
        let work = async {
            let tcp = TcpStream::connect((self.endpoint.bare_host(), self.endpoint.port))
                .await
                .map_err(|e| match e.kind() {
                    io::ErrorKind::ConnectionRefused => RemoteError::Refused { addr: addr.clone() },
                    _ => RemoteError::Connect {
                        addr: addr.clone(),
                        message: e.to_string(),
                    },
                })?;
            // One small message per write: never wait on Nagle.
            let _ = tcp.set_nodelay(true);
            let Some(tls) = &self.tls else {
                return Ok(Io::Plain(tcp));
            };
            let host = self.endpoint.bare_host().to_string();
            let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| {
                RemoteError::Tls {
                    host: host.clone(),
                    message: format!("not a valid TLS server name: {e}"),
                }
            })?;
            let stream = tls.connect(name, tcp).await.map_err(|e| RemoteError::Tls {
                host: host.clone(),
                message: tls_message(&e),
            })?;
            Ok(Io::Tls(Box::new(stream)))
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(RemoteError::Timeout { addr }),
        }
    }
}

/// "invalid peer certificate: UnknownIssuer (…)" with a hint for the common case.
fn tls_message(e: &io::Error) -> String {
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .map(|r| r.to_string())
        .unwrap_or_else(|| e.to_string());
    if inner.contains("UnknownIssuer") || inner.contains("unknown issuer") {
        format!("{inner} (a self-signed server? trust its certificate with a CA file)")
    } else {
        inner
    }
}

/// rustls with the ring provider; the system's roots, webpki's, and `options.ca_file`; ALPN
/// `http/1.1`. Also what `acp agents` fetches the public registry with.
pub fn tls_config(options: &ClientOptions) -> Result<Arc<rustls::ClientConfig>, RemoteError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = &options.ca_file {
        let pem = std::fs::read(path).map_err(|e| {
            RemoteError::Options(format!("cannot read the CA file {}: {e}", path.display()))
        })?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| {
                RemoteError::Options(format!("the CA file {}: {e}", path.display()))
            })?;
            roots.add(cert).map_err(|e| {
                RemoteError::Options(format!("the CA file {}: {e}", path.display()))
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(RemoteError::Options(format!(
                "the CA file {} holds no PEM certificate",
                path.display()
            )));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| RemoteError::Options(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP or TLS stream.
enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What the transport and its [`RemoteLink`]s share.
#[derive(Debug)]
struct LinkShared {
    url: String,
    failure: Mutex<Option<String>>,
    /// The connection over this transport, closed with the failure as its reason.
    handle: OnceLock<ConnectionHandle>,
    /// Cancelled when the transport ends (failure or close).
    stop: CancellationToken,
    /// Closed by us: what follows is not a failure.
    closing: std::sync::atomic::AtomicBool,
    connection_id: Mutex<Option<String>>,
}

impl LinkShared {
    fn new(url: String) -> Arc<LinkShared> {
        Arc::new(LinkShared {
            url,
            failure: Mutex::new(None),
            handle: OnceLock::new(),
            stop: CancellationToken::new(),
            closing: Default::default(),
            connection_id: Mutex::new(None),
        })
    }

    /// Records why the transport ended (the first reason wins) and stops it; the connection
    /// closes with that reason once the driver has read what came before.
    fn fail(&self, reason: String) {
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            self.stop.cancel();
            return;
        }
        {
            let mut failure = self.failure.lock().unwrap();
            if failure.is_none() {
                tracing::debug!(url = %self.url, "remote transport failed: {reason}");
                if let Some(h) = self.handle.get() {
                    h.close_at_eof_with_reason(reason.clone());
                }
                *failure = Some(reason);
            }
        }
        self.stop.cancel();
    }
}

/// The transport of a connection to a remote agent: why it ended, its server-side id. Cheap
/// to clone.
#[derive(Debug, Clone)]
pub struct RemoteLink {
    shared: Arc<LinkShared>,
}

impl RemoteLink {
    /// The URL connected to.
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// Why the transport ended, once it failed (the server closed it, a stream ended, an
    /// answer was an error status...).
    pub fn failure(&self) -> Option<String> {
        self.shared.failure.lock().unwrap().clone()
    }

    /// The server's id of the connection (HTTP + SSE, once initialized).
    pub fn connection_id(&self) -> Option<String> {
        self.shared.connection_id.lock().unwrap().clone()
    }

    /// Resolves once the transport ended.
    pub async fn ended(&self) {
        self.shared.stop.cancelled().await
    }

    /// Ends the transport without a failure (the connection's own `close` does this too:
    /// for HTTP, the server is sent `DELETE`).
    pub fn close(&self) {
        self.shared
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = self.shared.handle.get() {
            h.close_with_reason("the client closed the connection");
        }
    }

    /// Ties the connection over this transport to it: its close reason is the failure.
    fn attach(&self, handle: &ConnectionHandle) {
        let _ = self.shared.handle.set(handle.clone());
        if let Some(reason) = self.failure() {
            handle.close_with_reason(reason);
        }
    }
}

/// Bytes buffered between the bridge and the driver, per direction.
const BRIDGE_BUFFER: usize = 256 << 10;
/// Messages queued from the SSE streams to the driver, and from the driver to each POST lane.
const QUEUE: usize = 32;
/// How much of an error answer's body is kept for the message.
const ERROR_BODY_BYTES: usize = 512;
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
    if endpoint.is_websocket() {
        let halves = open_ws(&dialer, options, link.shared.clone()).await?;
        return Ok((halves, link));
    }
    // Reach the server now, so a refused connection or a TLS failure is reported here.
    let first = handshake(dialer.dial().await?).await?;
    let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
    let http = Arc::new(HttpBridge {
        dialer,
        link: link.shared.clone(),
        max_message_bytes: options.max_message_bytes,
        sessions: Mutex::new(HashSet::new()),
        opening: Mutex::new(Vec::new()),
        answers: OnceLock::new(),
    });
    tokio::spawn(http.run(ours, first));
    Ok((tokio::io::split(theirs), link))
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

// ---------------------------------------------------------------------------------------------
// WebSocket

async fn open_ws(
    dialer: &Dialer,
    options: &ClientOptions,
    link: Arc<LinkShared>,
) -> Result<DuplexHalves, RemoteError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Error as WsError;
    let endpoint = &dialer.endpoint;
    let addr = endpoint.authority();
    let work = async {
        let io = dialer.dial().await?;
        let scheme = if endpoint.is_tls() { "wss" } else { "ws" };
        let mut request = format!("{scheme}://{addr}{}", endpoint.path)
            .into_client_request()
            .map_err(|e| RemoteError::Url(format!("{endpoint}: {e}")))?;
        if let Some(auth) = &dialer.authorization {
            request.headers_mut().insert(AUTHORIZATION, auth.clone());
        }
        let config = crate::transport::ws_config(options.max_message_bytes);
        let socket = crate::transport::WsSocket::client(io);
        let (ws, _response) =
            tokio_tungstenite::client_async_with_config(request, socket, Some(config))
                .await
                .map_err(|e| match e {
                    WsError::Http(response) => RemoteError::Http {
                        during: "the WebSocket handshake".into(),
                        status: response.status().as_u16(),
                        body: body_excerpt(response.body().as_deref().unwrap_or_default()),
                    },
                    WsError::Io(e) => {
                        RemoteError::Lost(format!("during the WebSocket handshake: {e}"))
                    }
                    other => {
                        RemoteError::Protocol(format!("the WebSocket handshake failed: {other}"))
                    }
                })?;
        Ok(ws)
    };
    let ws = match tokio::time::timeout(dialer.timeout, work).await {
        Ok(r) => r?,
        Err(_) => return Err(RemoteError::Timeout { addr }),
    };
    let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
    tokio::spawn(ws_pump(ws, ours, link, options.max_message_bytes));
    Ok(tokio::io::split(theirs))
}

/// One text frame per message each way (a frame holding several lines, or pretty-printed
/// JSON, is split or joined as [`crate::transport::ws_bridge`] does). The reason the socket
/// ended (a close frame's code and reason, an error) becomes the failure. A server that sends
/// pings faster than it reads their pongs is closed once it owes
/// [`crate::transport::MAX_OWED_PONGS`] ([`crate::transport::ws_limits`]), the failure saying
/// so.
async fn ws_pump(
    ws: tokio_tungstenite::WebSocketStream<crate::transport::WsSocket<Io>>,
    ours: tokio::io::DuplexStream,
    link: Arc<LinkShared>,
    max_message_bytes: usize,
) {
    use acp_core::framing::{is_blank, Decoder, Frame};
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::error::CapacityError;
    use tokio_tungstenite::tungstenite::{Error as WsError, Message};
    let (mut from_driver_half, mut to_driver_half) = tokio::io::split(ours);
    let (from_driver, to_driver) = (&mut from_driver_half, &mut to_driver_half);
    let mut pongs = crate::transport::ws_limits::OwedPongs::of(&ws);
    let (mut sink, mut stream) = ws.split();
    let flooded = std::sync::atomic::AtomicBool::new(false);
    let reader_flooded = &flooded;
    let writer_sink = &mut sink;
    let reader_link = link.clone();
    let reader = async move {
        let reason = loop {
            let text = match stream.next().await {
                Some(Ok(Message::Text(t))) => t.as_str().to_owned(),
                Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                Some(Ok(Message::Close(frame))) => {
                    break match frame {
                        Some(f) if !f.reason.is_empty() => format!(
                            "the server closed the WebSocket ({}: {})",
                            u16::from(f.code),
                            body_excerpt(f.reason.as_bytes())
                        ),
                        Some(f) => {
                            format!("the server closed the WebSocket ({})", u16::from(f.code))
                        }
                        None => "the server closed the WebSocket".to_string(),
                    };
                }
                // tungstenite has queued its pong.
                Some(Ok(Message::Ping(_))) => match pongs.ping() {
                    Ok(()) => continue,
                    Err(flood) => {
                        reader_flooded.store(true, std::sync::atomic::Ordering::SeqCst);
                        break flood.to_string();
                    }
                },
                Some(Ok(_)) => continue,
                // tungstenite cannot skip a message over its limit (every later read fails
                // the same way), so the connection ends, saying so.
                Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    break format!(
                        "the server sent a WebSocket message of {size} bytes, over the {max_size}-byte limit (a WebSocket message over the limit cannot be skipped)"
                    );
                }
                Some(Err(e)) => break format!("the WebSocket failed: {e}"),
                None => break "the server closed the connection".to_string(),
            };
            let mut line = if text.contains(['\n', '\r'])
                && serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok()
            {
                text.replace(['\n', '\r'], " ").into_bytes()
            } else {
                text.into_bytes()
            };
            line.push(b'\n');
            if to_driver.write_all(&line).await.is_err() {
                break "the connection closed".to_string();
            }
        };
        reader_link.fail(reason);
        let _ = to_driver.shutdown().await;
    };
    let writer_link = link.clone();
    let writer = async move {
        let mut decoder = Decoder::new(max_message_bytes);
        let mut buf = vec![0u8; 64 << 10];
        let mut frames: Vec<Message> = Vec::new();
        loop {
            let n = from_driver.read(&mut buf).await.unwrap_or(0);
            let mut on_frame = |f: Frame<'_>| match f {
                Frame::Line(line) if !is_blank(line) => {
                    frames.push(Message::text(String::from_utf8_lossy(line).into_owned()));
                }
                Frame::Line(_) => {}
                Frame::Oversize { limit, .. } => {
                    tracing::warn!(limit, "a message over the limit was not sent to the server");
                }
            };
            if n == 0 {
                decoder.finish(&mut on_frame);
            } else {
                decoder.decode(&buf[..n], &mut on_frame);
            }
            for m in frames.drain(..) {
                if let Err(e) = writer_sink.send(m).await {
                    writer_link.fail(format!("sending to the server failed: {e}"));
                    return;
                }
            }
            if n == 0 {
                break;
            }
        }
        // The driver closed its end: a normal close.
        writer_link
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = writer_sink.send(Message::Close(None)).await;
        let _ = writer_sink.close().await;
    };
    let stop = link.stop.clone();
    tokio::select! {
        _ = async { tokio::join!(reader, writer) } => {}
        _ = stop.cancelled() => {}
    }
    link.stop.cancel();
    let _ = to_driver_half.shutdown().await;
    if flooded.load(std::sync::atomic::Ordering::SeqCst) {
        // Nothing more is read from a server flooding pings: a close frame saying why, if it
        // takes it, then the socket goes.
        crate::transport::ws_limits::close_after_ping_flood(&mut sink).await;
    }
    drop(sink);
    drain_driver(from_driver_half).await;
}

/// Once the transport ended and the driver's input was shut (it sees EOF and closes with the
/// failure as its reason): reads and drops what the driver still writes until it closes
/// (bounded). Dropping its pipe instead would fail a write of the driver's in flight, whose
/// error ("broken pipe") would become the close reason in place of the failure.
async fn drain_driver(mut from_driver: tokio::io::ReadHalf<tokio::io::DuplexStream>) {
    let mut sink = tokio::io::sink();
    let drain = tokio::io::copy(&mut from_driver, &mut sink);
    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
}

// ---------------------------------------------------------------------------------------------
// HTTP + SSE

type Body = Full<Bytes>;

/// An HTTP/1.1 connection.
async fn handshake(io: Io) -> Result<SendRequest<Body>, RemoteError> {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| RemoteError::Protocol(format!("HTTP handshake failed: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("remote HTTP connection ended: {e}");
        }
    });
    Ok(sender)
}

/// A lane of requests sent one at a time over a kept-alive connection, redialled when the
/// server closed it.
struct Lane {
    dialer: Arc<Dialer>,
    sender: Option<SendRequest<Body>>,
}

impl Lane {
    async fn send(
        &mut self,
        mut request: Request<Body>,
    ) -> Result<Response<Incoming>, RemoteError> {
        if let Some(sender) = self.sender.as_mut() {
            if sender.ready().await.is_ok() {
                match sender.try_send_request(request).await {
                    Ok(response) => return Ok(response),
                    Err(mut e) => match e.take_message() {
                        // Not sent: the connection was closed under it; try a fresh one.
                        Some(r) => request = r,
                        None => {
                            self.sender = None;
                            return Err(RemoteError::Lost(format!(
                                "sending to the server failed: {}",
                                e.into_error()
                            )));
                        }
                    },
                }
            }
        }
        self.sender = None;
        let mut sender = handshake(self.dialer.dial().await?).await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| RemoteError::Lost(format!("sending to the server failed: {e}")))?;
        self.sender = Some(sender);
        Ok(response)
    }
}

/// The start of a body, as one printable line.
fn body_excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_BYTES)]);
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line = line.trim().to_string();
    if body.len() > ERROR_BODY_BYTES {
        line.push('…');
    }
    line
}

/// Reads a whole (small) body, at most `limit` bytes.
async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, RemoteError> {
    Limited::new(body, limit)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| {
            RemoteError::Lost(format!(
                "reading an answer failed (at most {limit} bytes are read): {e}"
            ))
        })
}

/// An error status as a [`RemoteError`] (with the start of the body).
async fn status_error(during: &str, response: Response<Incoming>) -> RemoteError {
    let status = response.status().as_u16();
    let body = tokio::time::timeout(
        Duration::from_secs(2),
        read_body(response.into_body(), 64 << 10),
    )
    .await
    .ok()
    .and_then(Result::ok)
    .map(|b| body_excerpt(&b))
    .unwrap_or_default();
    RemoteError::Http {
        during: during.to_string(),
        status,
        body,
    }
}

/// One message the driver wrote, with what routing needs.
struct Outgoing {
    line: Bytes,
    method: Option<String>,
    /// A request's id (as JSON text), for `session/new` / `session/fork`.
    id: Option<String>,
    session: Option<String>,
}

impl Outgoing {
    fn parse(line: &[u8]) -> Outgoing {
        let value: Option<serde_json::Value> = serde_json::from_slice(line).ok();
        let method = value
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(|m| m.as_str())
            .map(str::to_string);
        let id = value
            .as_ref()
            .and_then(|v| v.get("id"))
            .filter(|id| !id.is_null())
            .map(|id| id.to_string());
        let session = method.as_deref().and_then(|m| {
            wire::session_id_of(m, value.as_ref().and_then(|v| v.get("params"))).map(str::to_string)
        });
        Outgoing {
            line: Bytes::copy_from_slice(line),
            method,
            id,
            session,
        }
    }

    /// A response (ours, to the agent's request): posted on its own lane.
    fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }
}

struct HttpBridge {
    dialer: Arc<Dialer>,
    link: Arc<LinkShared>,
    max_message_bytes: usize,
    /// Sessions whose SSE stream is open (or opening).
    sessions: Mutex<HashSet<String>>,
    /// Ids of our pending `session/new` / `session/fork` requests: their answer names a
    /// session whose stream is opened at once.
    opening: Mutex<Vec<String>>,
    /// The lane of our answers to the agent's requests (weak: it ends when the driver closes
    /// its end), for the errors answering requests over the limit.
    answers: OnceLock<mpsc::WeakSender<Outgoing>>,
}

impl HttpBridge {
    fn request(
        &self,
        method: Method,
        accept: &str,
        session: Option<&str>,
        body: Option<Bytes>,
    ) -> Result<Request<Body>, RemoteError> {
        let endpoint = &self.dialer.endpoint;
        let mut builder = Request::builder()
            .method(method)
            .uri(endpoint.path.as_str())
            .header(HOST, endpoint.authority())
            .header(ACCEPT, accept)
            .header(USER_AGENT, concat!("acp-rs/", env!("CARGO_PKG_VERSION")));
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, JSON_MIME_TYPE);
        }
        if let Some(auth) = &self.dialer.authorization {
            builder = builder.header(AUTHORIZATION, auth.clone());
        }
        if let Some(id) = self.link.connection_id.lock().unwrap().as_deref() {
            builder = builder.header(HEADER_CONNECTION_ID, id);
        }
        if let Some(session) = session {
            builder = builder.header(HEADER_SESSION_ID, session);
        }
        builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| RemoteError::Protocol(format!("cannot build the request: {e}")))
    }

    async fn run(self: Arc<Self>, ours: tokio::io::DuplexStream, first: SendRequest<Body>) {
        let (mut from_driver, to_driver) = tokio::io::split(ours);
        let (line_tx, line_rx) = mpsc::channel::<Bytes>(QUEUE);
        let writer = tokio::spawn(write_to_driver(line_rx, to_driver, self.link.stop.clone()));
        let stop = self.link.stop.clone();
        let result = tokio::select! {
            r = self.clone().pump(&mut from_driver, first, line_tx) => r,
            _ = stop.cancelled() => Ok(()),
        };
        if let Err(e) = result {
            self.link.fail(e.to_string());
        }
        // Closed by the driver, or failed: stop the streams and the writer (the driver sees
        // EOF and closes with the failure as its reason).
        self.link.stop.cancel();
        let _ = writer.await;
        drain_driver(from_driver).await;
    }

    /// Reads the driver's lines and posts them; returns when the driver closed its end.
    async fn pump(
        self: Arc<Self>,
        from_driver: &mut tokio::io::ReadHalf<tokio::io::DuplexStream>,
        first: SendRequest<Body>,
        to_driver: mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        use acp_core::framing::{is_blank, Decoder, Frame};
        let mut decoder = Decoder::new(self.max_message_bytes);
        let mut buf = vec![0u8; 64 << 10];
        let mut lines: Vec<Bytes> = Vec::new();
        let mut ordered = Lane {
            dialer: self.dialer.clone(),
            sender: Some(first),
        };
        let mut initialized = false;
        let (ordered_tx, ordered_rx) = mpsc::channel::<Outgoing>(QUEUE);
        let mut ordered_rx = Some(ordered_rx);
        let (answers_tx, answers_rx) = mpsc::channel::<Outgoing>(QUEUE);
        let _ = self.answers.set(answers_tx.downgrade());
        let answers = tokio::spawn(self.clone().answer_lane(answers_rx));
        let mut ordered_task = None;
        loop {
            let n = from_driver.read(&mut buf).await.unwrap_or(0);
            let mut sink = |f: Frame<'_>| match f {
                Frame::Line(line) if !is_blank(line) => lines.push(Bytes::copy_from_slice(line)),
                Frame::Line(_) => {}
                Frame::Oversize { limit, .. } => {
                    tracing::warn!(limit, "a message over the limit was not sent to the server");
                }
            };
            if n == 0 {
                decoder.finish(&mut sink);
            } else {
                decoder.decode(&buf[..n], &mut sink);
            }
            for line in lines.drain(..) {
                let out = Outgoing::parse(&line);
                if !initialized {
                    if out.method.as_deref() != Some("initialize") || out.id.is_none() {
                        return Err(RemoteError::Protocol(
                            "the first message over HTTP must be the `initialize` request".into(),
                        ));
                    }
                    self.initialize(&mut ordered, out, &to_driver).await?;
                    initialized = true;
                    // The ordered lane goes on beside this loop, on the same connection.
                    let lane = Lane {
                        dialer: self.dialer.clone(),
                        sender: ordered.sender.take(),
                    };
                    ordered_task = Some(tokio::spawn(self.clone().ordered_lane(
                        lane,
                        ordered_rx.take().expect("once"),
                        to_driver.clone(),
                    )));
                    continue;
                }
                let target = if out.is_response() {
                    &answers_tx
                } else {
                    &ordered_tx
                };
                if target.send(out).await.is_err() {
                    // A lane stopped: it failed (the failure is recorded).
                    return Ok(());
                }
            }
            if n == 0 {
                break;
            }
        }
        // The driver closed its end: let the queued messages go, then end the connection.
        drop(ordered_tx);
        drop(answers_tx);
        let drained = async {
            if let Some(t) = ordered_task {
                let _ = t.await;
            }
            let _ = answers.await;
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, drained).await;
        self.link
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if self.link.connection_id.lock().unwrap().is_some() {
            if let Ok(request) = self.request(Method::DELETE, JSON_MIME_TYPE, None, None) {
                let mut lane = Lane {
                    dialer: self.dialer.clone(),
                    sender: None,
                };
                let _ = tokio::time::timeout(CLOSE_GRACE, lane.send(request)).await;
            }
        }
        Ok(())
    }

    /// POSTs `initialize`: its answer is the response; then the connection's SSE stream.
    async fn initialize(
        self: &Arc<Self>,
        lane: &mut Lane,
        out: Outgoing,
        to_driver: &mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        let request = self.request(Method::POST, JSON_MIME_TYPE, None, Some(out.line))?;
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error("initialize", response).await);
        }
        let connection_id = response
            .headers()
            .get(HEADER_CONNECTION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = read_body(response.into_body(), self.max_message_bytes).await?;
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            RemoteError::Protocol(format!(
                "the initialize answer is not JSON ({e}): {}",
                body_excerpt(&body)
            ))
        })?;
        let failed = value.get("error").is_some();
        let mut line = serde_json::to_vec(&value).unwrap_or_default();
        line.push(b'\n');
        if failed {
            // No connection: the driver gets the error, then the transport ends.
            let _ = to_driver.send(Bytes::from(line)).await;
            return Err(RemoteError::Protocol(format!(
                "the agent refused `initialize`: {}",
                value["error"]
            )));
        }
        let Some(connection_id) = connection_id else {
            return Err(RemoteError::Protocol(format!(
                "the server's initialize answer has no {HEADER_CONNECTION_ID} header (is this an ACP HTTP endpoint?)"
            )));
        };
        *self.link.connection_id.lock().unwrap() = Some(connection_id);
        let _ = to_driver.send(Bytes::from(line)).await;
        self.open_stream(None, to_driver.clone()).await
    }

    /// Requests and notifications, in order: each session's stream is opened before the
    /// first message naming it.
    async fn ordered_lane(
        self: Arc<Self>,
        mut lane: Lane,
        mut rx: mpsc::Receiver<Outgoing>,
        to_driver: mpsc::Sender<Bytes>,
    ) {
        while let Some(out) = rx.recv().await {
            if let Some(session) = &out.session {
                let new = self.sessions.lock().unwrap().insert(session.clone());
                if new {
                    if let Err(e) = self
                        .open_stream(Some(session.clone()), to_driver.clone())
                        .await
                    {
                        self.link.fail(e.to_string());
                        return;
                    }
                }
            }
            if let (Some(m), Some(id)) = (&out.method, &out.id) {
                if wire::is_session_opening_method(m) {
                    self.opening.lock().unwrap().push(id.clone());
                }
            }
            let during = match &out.method {
                Some(m) => format!("`{m}`"),
                None => "a message".to_string(),
            };
            if let Err(e) = self.post(&mut lane, out, &during).await {
                self.link.fail(e.to_string());
                return;
            }
        }
    }

    /// Our answers to the agent's requests.
    async fn answer_lane(self: Arc<Self>, mut rx: mpsc::Receiver<Outgoing>) {
        let mut lane = Lane {
            dialer: self.dialer.clone(),
            sender: None,
        };
        while let Some(out) = rx.recv().await {
            if let Err(e) = self.post(&mut lane, out, "an answer").await {
                self.link.fail(e.to_string());
                return;
            }
        }
    }

    async fn post(&self, lane: &mut Lane, out: Outgoing, during: &str) -> Result<(), RemoteError> {
        let request = self.request(
            Method::POST,
            JSON_MIME_TYPE,
            out.session.as_deref(),
            Some(out.line),
        )?;
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error(during, response).await);
        }
        // Drain the (empty) body so the connection can be reused.
        let _ = read_body(response.into_body(), 64 << 10).await;
        Ok(())
    }

    /// Opens the connection's (`None`) or a session's SSE stream and returns once the server
    /// accepted it; its events then flow to the driver until the transport stops. A stream
    /// that ends, ends the transport.
    async fn open_stream(
        self: &Arc<Self>,
        session: Option<String>,
        to_driver: mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        let during = match &session {
            Some(s) => format!("the stream of session {s}"),
            None => "the connection's stream".to_string(),
        };
        let request = self.request(
            Method::GET,
            EVENT_STREAM_MIME_TYPE,
            session.as_deref(),
            None,
        )?;
        let mut lane = Lane {
            dialer: self.dialer.clone(),
            sender: None,
        };
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error(&during, response).await);
        }
        let this = self.clone();
        tokio::spawn(async move {
            let stop = this.link.stop.clone();
            let reason = tokio::select! {
                r = this.read_stream(response.into_body(), &to_driver) => r,
                _ = stop.cancelled() => return,
            };
            drop(lane);
            this.link.fail(format!("{during} ended: {reason}"));
        });
        Ok(())
    }

    /// Passes a stream's events to the driver; returns why it ended.
    async fn read_stream(
        self: &Arc<Self>,
        mut body: Incoming,
        to_driver: &mpsc::Sender<Bytes>,
    ) -> String {
        let mut decoder = SseDecoder::new(self.max_message_bytes);
        let mut items = Vec::new();
        loop {
            let frame = match body.frame().await {
                None => return "the server closed it".into(),
                Some(Err(e)) => return format!("reading it failed: {e}"),
                Some(Ok(frame)) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            decoder.feed(&data, &mut |item| items.push(item));
            for item in items.drain(..) {
                let text = match item {
                    SseItem::Data(text) => text,
                    SseItem::Oversize { prefix, size } => {
                        match self.skip_oversize(&prefix, size).await {
                            Some(stand_in) => stand_in,
                            None => continue,
                        }
                    }
                };
                if text.trim().is_empty() {
                    continue;
                }
                self.note_answer(&text, to_driver);
                let mut line = text.replace(['\n', '\r'], " ").into_bytes();
                line.push(b'\n');
                if to_driver.send(Bytes::from(line)).await.is_err() {
                    return "the connection closed".into();
                }
            }
        }
    }

    /// An SSE event whose data was over the limit was skipped (the [`SseDecoder`] gives its
    /// first bytes and size), as acp-core skips an oversize line on stdio: a response to one
    /// of our requests is replaced by an error response for its id, returned to be passed to
    /// the driver, so that call fails at once saying why; a request from the agent is
    /// answered with acp-core's oversize error for its id; anything else (a notification) is
    /// only logged (stdio would answer it with an error for id `null`, which a server has
    /// nowhere to route).
    async fn skip_oversize(&self, prefix: &[u8], size: usize) -> Option<String> {
        let limit = self.max_message_bytes;
        let sniffed = acp_core::sniff::sniff(prefix);
        if let Some(stand_in) =
            crate::transport::oversize_response_stand_in(&sniffed, limit, "the client's")
        {
            tracing::warn!(id = ?sniffed.id, size, limit, url = %self.link.url, "a response from the server over the limit was skipped: its call fails");
            return Some(stand_in);
        }
        if let Some(id) = sniffed.request_id() {
            tracing::warn!(%id, size, limit, url = %self.link.url, "a request from the server over the limit was skipped and answered with an error");
            let error = acp_core::sniff::oversize_error(limit);
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error});
            let lane = self.answers.get().and_then(mpsc::WeakSender::upgrade);
            if let Some(lane) = lane {
                let _ = lane
                    .send(Outgoing::parse(answer.to_string().as_bytes()))
                    .await;
            }
            return None;
        }
        tracing::warn!(size, limit, url = %self.link.url, "a message from the server over the limit was skipped");
        None
    }

    /// An answer to our `session/new` / `session/fork` opens the new session's stream.
    fn note_answer(self: &Arc<Self>, text: &str, to_driver: &mpsc::Sender<Bytes>) {
        if self.opening.lock().unwrap().is_empty() {
            return;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        if value.get("method").is_some() {
            return;
        }
        let Some(id) = value.get("id").map(|id| id.to_string()) else {
            return;
        };
        {
            let mut opening = self.opening.lock().unwrap();
            let Some(at) = opening.iter().position(|o| *o == id) else {
                return;
            };
            opening.swap_remove(at);
        }
        let Some(session) = value
            .get("result")
            .and_then(|r| r.get("sessionId"))
            .and_then(|s| s.as_str())
        else {
            return;
        };
        if !self.sessions.lock().unwrap().insert(session.to_string()) {
            return;
        }
        // Not awaited: events wait in the server's mailbox until the stream is read. (Boxed:
        // the stream's reader is inside this future's type.)
        let this = self.clone();
        let (session, to_driver) = (session.to_string(), to_driver.clone());
        let open: Pin<Box<dyn std::future::Future<Output = ()> + Send>> = Box::pin(async move {
            if let Err(e) = this.open_stream(Some(session), to_driver).await {
                this.link.fail(e.to_string());
            }
        });
        tokio::spawn(open);
    }
}

/// Writes the streams' messages to the driver, in the order they are queued.
async fn write_to_driver(
    mut rx: mpsc::Receiver<Bytes>,
    mut to_driver: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    stop: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            biased;
            line = rx.recv() => line,
            _ = stop.cancelled() => None,
        };
        let Some(line) = line else { break };
        if to_driver.write_all(&line).await.is_err() {
            break;
        }
    }
    // What was already queued still reaches the driver (the answer before a failure...).
    while let Ok(line) = rx.try_recv() {
        if to_driver.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = to_driver.shutdown().await;
}
