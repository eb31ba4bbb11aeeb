//! A remote agent's URL, parsed: [`Endpoint`].

use super::wire;
use super::RemoteError;

/// The URL schemes this client speaks.
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
    pub(super) host: String,
    pub(super) port: u16,
    /// Path and query; `/acp` when the URL has no path.
    pub(super) path: String,
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

    /// `ws://` or `wss://`: one WebSocket, one text frame per message.
    pub fn is_websocket(&self) -> bool {
        matches!(self.scheme, Scheme::Ws | Scheme::Wss)
    }

    /// `https://` or `wss://`.
    pub fn is_tls(&self) -> bool {
        matches!(self.scheme, Scheme::Https | Scheme::Wss)
    }

    /// `host:port` (the Host header; IPv6 in brackets).
    pub(super) fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The host without IPv6 brackets (for DNS and TLS names).
    pub(super) fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// Whether the host is this machine's loopback: `localhost`, 127.0.0.0/8 or `[::1]` (no
    /// name is resolved: a name is loopback only if it is `localhost`).
    pub fn is_loopback(&self) -> bool {
        acp_client::remote::is_loopback_host(&self.host)
    }

    /// Whether the URL carries a token in its query (`?token=`, as `acp serve` prints it).
    pub(super) fn has_query_token(&self) -> bool {
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
