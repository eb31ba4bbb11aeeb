//! Reaching the server: TCP, then TLS for `https` / `wss` (rustls with the ring provider), with
//! the token checked before anything is sent ([`Dialer`]); also the TLS configuration `acp
//! agents` fetches the public registry with ([`tls_config`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::header::HeaderValue;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

use super::{wire, ClientOptions, Endpoint, RemoteError};

/// TCP (and TLS) to the server.
pub(super) struct Dialer {
    pub(super) endpoint: Endpoint,
    tls: Option<tokio_rustls::TlsConnector>,
    /// Longest wait for TCP and TLS (and, for WebSocket, its handshake).
    pub(super) timeout: Duration,
    /// `Bearer TOKEN`, sent on every request and on the WebSocket handshake.
    pub(super) authorization: Option<HeaderValue>,
}

impl Dialer {
    /// Checks the options against the endpoint (a token never goes out in clear beyond
    /// loopback unless allowed) and prepares TLS.
    pub(super) fn new(endpoint: Endpoint, options: &ClientOptions) -> Result<Dialer, RemoteError> {
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
        if token {
            let scheme = match (endpoint.is_websocket(), endpoint.is_tls()) {
                (true, true) => "wss",
                (true, false) => "ws",
                (false, true) => "https",
                (false, false) => "http",
            };
            acp_client::remote::check_token_transport(
                scheme,
                &endpoint.authority(),
                &endpoint.host,
                options.allow_insecure,
                "--allow-insecure (ClientOptions::allow_insecure)",
            )
            .map_err(RemoteError::Options)?;
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

    /// A new TCP (and TLS) connection to the server, within the timeout.
    pub(super) async fn dial(&self) -> Result<Io, RemoteError> {
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
pub(super) enum Io {
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
