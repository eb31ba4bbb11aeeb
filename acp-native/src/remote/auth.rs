//! Who may use a remote endpoint: a bearer token on every request, and browser pages only from
//! allowed origins. Shared by [`super::server`] and `acp serve --ws`.
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
/// or a local page (localhost, 127.0.0.1, [::1], any port).
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

/// Why a request was refused, with the HTTP status to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 403: a browser page from an origin not allowed.
    Origin(String),
    /// 401: no token, or a wrong one.
    Token,
}

impl Refusal {
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Origin(_) => 403,
            Refusal::Token => 401,
        }
    }

    /// The answer's text: what to do about it.
    pub fn message(&self) -> String {
        match self {
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

/// The checks every request passes, in order: Origin (a browser page: 403 unless allowed),
/// then the token (401). On success, how the token came.
pub fn authorize(
    headers: &HeaderMap,
    uri: &Uri,
    token: &str,
    allowed_origins: &[String],
) -> Result<Credential, Refusal> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origin, allowed_origins) {
            return Err(Refusal::Origin(origin.to_string()));
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
