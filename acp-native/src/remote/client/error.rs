//! Why a remote connection could not be made, or ended: [`RemoteError`], in words that say
//! what to do about it.

use hyper::StatusCode;

/// How much of an error answer's body is kept for the message.
const ERROR_BODY_BYTES: usize = 512;

/// Why a remote connection could not be made, or ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// The URL is not one this client speaks.
    Url(String),
    /// The option values are unusable (a token with characters a header cannot carry, an
    /// unreadable CA file).
    Options(String),
    /// Nothing listens at the address.
    Refused {
        /// `host:port`.
        addr: String,
    },
    /// TCP could not connect (name resolution, unreachable network...).
    Connect {
        /// `host:port`.
        addr: String,
        /// What the system said.
        message: String,
    },
    /// Connecting (TCP, TLS, WebSocket handshake) took longer than the limit.
    Timeout {
        /// `host:port`.
        addr: String,
    },
    /// The TLS handshake failed (an untrusted or mismatched certificate...).
    Tls {
        /// The server's name, as the certificate should hold it.
        host: String,
        /// What rustls said (with a hint for a self-signed certificate).
        message: String,
    },
    /// The server answered with an error status.
    Http {
        /// Which request: "initialize", "the WebSocket handshake", "a message"...
        during: String,
        /// The HTTP status.
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

/// The start of a body, as one printable line (at most [`ERROR_BODY_BYTES`], `…` when cut).
pub(super) fn body_excerpt(body: &[u8]) -> String {
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
