//! Who may use a remote endpoint: a bearer token on every request, a `Host` that names this
//! server (not a name an attacker's DNS points at it), and browser pages only from allowed
//! origins. Used by [`super::server`] in both its modes (`acp serve --http` and `--ws`).
//!
//! The official transport has no authentication of its own; its client sends
//! `Authorization: Bearer TOKEN` on every POST, SSE GET, DELETE and WebSocket handshake when
//! given it as a default header, so a token in that header keeps us compatible with it.

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::Uri;

use super::wire::{TOKEN_PROTOCOL_PREFIX, TOKEN_QUERY_PARAM};

/// The shortest token accepted from a file or the environment.
pub const MIN_TOKEN_LEN: usize = 16;

/// A fresh random token: 32 bytes from `/dev/urandom`, as 64 hex digits.
pub fn generate_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A token must be long enough to be a secret, and made of characters that travel unchanged
/// in a header, a subprotocol name and a URL. `what` names it in the error.
pub fn check_token(token: &str, what: &str) -> Result<String, String> {
    if token.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if token.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "{what} is too short ({} characters; at least {MIN_TOKEN_LEN})",
            token.len()
        ));
    }
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    {
        return Err(format!(
            "{what} may only contain letters, digits and - . _ ~"
        ));
    }
    Ok(token.to_string())
}

/// Equal, in time independent of where they differ (only the length shows).
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let diff = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0
}

/// How a request presented the right token.
#[derive(Debug, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Bearer TOKEN` or `?token=TOKEN`.
    Plain,
    /// The WebSocket subprotocol `acp.token.TOKEN` (to be echoed in the handshake's answer).
    Protocol(HeaderValue),
}

/// Finds the right token in a request's headers or query, if it is there.
pub fn credential(headers: &HeaderMap, uri: &Uri, token: &str) -> Option<Credential> {
    let token = token.as_bytes();
    // A browser offering the token as a subprotocol needs it echoed, whatever else it sent.
    for value in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        for offered in value.to_str().unwrap_or("").split(',').map(str::trim) {
            if let Some(given) = offered.strip_prefix(TOKEN_PROTOCOL_PREFIX) {
                if same_secret(given.as_bytes(), token) {
                    return HeaderValue::from_str(offered)
                        .ok()
                        .map(Credential::Protocol);
                }
            }
        }
    }
    for value in headers.get_all(header::AUTHORIZATION) {
        let value = value.to_str().unwrap_or("");
        if let Some((scheme, given)) = value.split_once(' ') {
            if scheme.eq_ignore_ascii_case("bearer") && same_secret(given.trim().as_bytes(), token)
            {
                return Some(Credential::Plain);
            }
        }
    }
    let query = uri.query().unwrap_or("");
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .any(|(name, given)| name == TOKEN_QUERY_PARAM && same_secret(given.as_bytes(), token))
        .then_some(Credential::Plain)
}

/// Whether a browser page from `origin` may connect: one listed in `allowed` (`*` for any),
/// or a local page (`localhost`, `127.0.0.1`, `[::1]`, any port).
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']')
            .next()
            .map(|h| format!("[{h}]"))
            .unwrap_or_default()
    } else {
        rest.split([':', '/']).next().unwrap_or("").to_string()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// Whether a request's `Host` (`name` or `name:port`) may be this server's: `localhost`, an IP
/// address (v4, or v6 in brackets; any port), or one listed in `allowed` (`*` for any; a
/// `name` matches any port, a `name:port` that port only).
///
/// This is what stops DNS rebinding: a page of `http://evil.example:8765` whose name the
/// attacker's DNS turns to 127.0.0.1 reaches a loopback server with its own origin (so the
/// Origin rule lets it through) but with `Host: evil.example:8765`. An IP address cannot be
/// rebound, and the port is not checked, so tunnels and port forwards (`ssh -L 9000:…:8765`)
/// keep working.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(host))
    {
        return true;
    }
    let name = if host.starts_with('[') {
        match host.find(']') {
            Some(end) => &host[..=end],
            None => return false,
        }
    } else {
        host.split(':').next().unwrap_or("")
    };
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(name)) {
        return true;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok()
        || name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())
}

/// The most characters of a client's header value quoted in a refusal (the rest is counted).
pub const MAX_QUOTED_CHARS: usize = 100;

/// A header value a client sent, as a refusal may show it: printable ASCII as it is, every
/// other character escaped (`\u{1b}`, `\u{202e}`: no terminal escape, bidi override or line
/// break gets through), at most [`MAX_QUOTED_CHARS`] characters of it.
pub fn quote(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown == MAX_QUOTED_CHARS {
            out.push_str(&format!("… ({} bytes in all)", raw.len()));
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ => out.extend(c.escape_unicode()),
        }
    }
    out
}

/// Why a request was refused, with the HTTP status to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 421: a `Host` that is not one of this server's names (DNS rebinding), quoted.
    Host(String),
    /// 403: a browser page from an origin not allowed, quoted.
    Origin(String),
    /// 401: no token, or a wrong one.
    Token,
}

impl Refusal {
    /// The HTTP status this refusal is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Host(_) => 421,
            Refusal::Origin(_) => 403,
            Refusal::Token => 401,
        }
    }

    /// The answer's text: what to do about it.
    pub fn message(&self) -> String {
        match self {
            Refusal::Host(host) => format!(
                "host {host} is not a name of this server: use localhost or an IP address, \
                 or name it with acp serve --allow-host NAME"
            ),
            Refusal::Origin(origin) => {
                format!("origin {origin} is not allowed (acp serve --allow-origin)")
            }
            Refusal::Token => "missing or wrong token: send `Authorization: Bearer TOKEN`, the \
                 WebSocket subprotocol `acp.token.TOKEN` or ?token=TOKEN (acp serve prints the \
                 token at start)"
                .to_string(),
        }
    }
}

/// The `Host` check alone (see [`host_allowed`]): the header, and the authority of a request
/// in absolute form. A request without a `Host` (HTTP/1.0 programs; browsers always send one)
/// passes.
pub fn check_host(headers: &HeaderMap, uri: &Uri, allowed_hosts: &[String]) -> Result<(), Refusal> {
    for value in headers.get_all(header::HOST) {
        let host = value.to_str().unwrap_or("");
        if !host_allowed(host, allowed_hosts) {
            return Err(Refusal::Host(quote(value.as_bytes())));
        }
    }
    if let Some(authority) = uri.authority() {
        if !host_allowed(authority.as_str(), allowed_hosts) {
            return Err(Refusal::Host(quote(authority.as_str().as_bytes())));
        }
    }
    Ok(())
}

/// The checks every request passes, in order: Host (421 unless one of this server's names,
/// [`host_allowed`]), Origin (a browser page: 403 unless allowed), then the token (401). On
/// success, how the token came.
pub fn authorize(
    headers: &HeaderMap,
    uri: &Uri,
    token: &str,
    allowed_origins: &[String],
    allowed_hosts: &[String],
) -> Result<Credential, Refusal> {
    check_host(headers, uri, allowed_hosts)?;
    if let Some(value) = headers.get(header::ORIGIN) {
        let origin = value.to_str().unwrap_or("");
        if !origin_allowed(origin, allowed_origins) {
            return Err(Refusal::Origin(quote(value.as_bytes())));
        }
    }
    credential(headers, uri, token).ok_or(Refusal::Token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_or_listed_origins_are_allowed() {
        let none: Vec<String> = vec![];
        assert!(origin_allowed("http://localhost:3000", &none));
        assert!(origin_allowed("http://127.0.0.1", &none));
        assert!(origin_allowed("https://[::1]:8080", &none));
        assert!(!origin_allowed("https://evil.example", &none));
        assert!(!origin_allowed("http://localhost.evil.example", &none));
        assert!(!origin_allowed("null", &none));
        let listed = vec!["https://app.example".to_string()];
        assert!(origin_allowed("https://app.example", &listed));
        assert!(origin_allowed("https://anything", &["*".to_string()]));
    }

    #[test]
    fn only_local_names_ip_addresses_or_listed_hosts_are_this_server() {
        let none: Vec<String> = vec![];
        for ok in [
            "localhost",
            "localhost:8765",
            "LOCALHOST:1",
            "localhost.:80",
            "127.0.0.1",
            "127.0.0.1:8765",
            "[::1]:8765",
            "[::1]",
            "10.1.2.3:443",
            "[2001:db8::7]:9",
        ] {
            assert!(host_allowed(ok, &none), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "localhost.evil.example:8765",
            "127.0.0.1.nip.io:8765",
            "[::1",
            "devbox:8765",
            "",
        ] {
            assert!(!host_allowed(bad, &none), "{bad}");
        }
        let listed = vec!["devbox".to_string(), "lb.example:443".to_string()];
        assert!(host_allowed("devbox:8765", &listed));
        assert!(host_allowed("DevBox", &listed));
        assert!(host_allowed("lb.example:443", &listed));
        assert!(!host_allowed("lb.example:80", &listed));
        assert!(host_allowed("anything:1", &["*".to_string()]));
    }

    #[test]
    fn quoted_header_values_are_escaped_and_capped() {
        assert_eq!(quote(b"https://app.example"), "https://app.example");
        assert_eq!(
            quote("a\u{1b}[2J\u{9b}\u{202e}\\".as_bytes()),
            "a\\u{1b}[2J\\u{9b}\\u{202e}\\\\"
        );
        assert_eq!(quote(b"x\xffy"), "x\\u{fffd}y");
        let long = quote(&[b'a'; 5000]);
        assert!(long.starts_with(&"a".repeat(MAX_QUOTED_CHARS)), "{long}");
        assert!(long.ends_with("… (5000 bytes in all)"), "{long}");
        assert!(long.len() < 140, "{long}");
    }

    fn find(h: &[(&str, &str)], uri: &str) -> Option<Credential> {
        let mut headers = HeaderMap::new();
        for (k, v) in h {
            headers.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        credential(&headers, &uri.parse().unwrap(), "0123456789abcdef0123")
    }

    #[test]
    fn the_token_is_found_in_a_header_a_subprotocol_or_the_query() {
        assert_eq!(find(&[], "/"), None);
        assert_eq!(
            find(&[("Authorization", "Bearer 0123456789abcdef0123")], "/"),
            Some(Credential::Plain)
        );
        assert_eq!(
            find(&[("authorization", "bearer  0123456789abcdef0123 ")], "/"),
            Some(Credential::Plain)
        );
        assert_eq!(
            find(&[("Authorization", "Basic 0123456789abcdef0123")], "/"),
            None
        );
        assert_eq!(
            find(&[("Authorization", "Bearer 0123456789abcdef012")], "/"),
            None
        );
        assert_eq!(
            find(
                &[(
                    "Sec-WebSocket-Protocol",
                    "chat, acp.token.0123456789abcdef0123"
                )],
                "/"
            ),
            Some(Credential::Protocol(HeaderValue::from_static(
                "acp.token.0123456789abcdef0123"
            )))
        );
        assert_eq!(
            find(&[("Sec-WebSocket-Protocol", "acp.token.nope")], "/"),
            None
        );
        assert_eq!(
            find(&[], "/acp?a=1&token=0123456789abcdef0123"),
            Some(Credential::Plain)
        );
        assert_eq!(find(&[], "/?token=0123456789abcdef0123x"), None);
        assert_eq!(find(&[], "/?xtoken=0123456789abcdef0123"), None);
    }

    #[test]
    fn secrets_compare_equal_only_when_identical() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"abc"));
    }

    #[test]
    fn tokens_are_checked_and_generated_fresh() {
        let t = generate_token().unwrap();
        assert_eq!(t.len(), 64);
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(t, generate_token().unwrap());
        assert!(check_token("short", "x").is_err());
        assert!(check_token("with space in the middle", "x").is_err());
        assert!(check_token("", "x").is_err());
        assert_eq!(
            check_token("from-the-environment-1", "x").unwrap(),
            "from-the-environment-1"
        );
    }
}
