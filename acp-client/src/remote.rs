//! Whether a token may be sent to a remote agent: never in clear across a network. A bearer
//! token (the `Authorization` header, or `?token=` in the URL) sent over `http://` or `ws://`
//! to a host that is not this machine can be read, and used, by anyone on the way. Faces refuse
//! it unless the user allowed it knowingly; loopback hosts (`localhost`, `127.0.0.0/8`, `::1`)
//! never leave the machine. `tests/client/remote.json` is the case table.

/// Whether `host` (as in a URL: brackets around an IPv6 address allowed) names this machine
/// without a name lookup: `localhost`, a `127.x.y.z` address, `::1` (also IPv4-mapped).
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// The refusal, or `Ok`, for sending a token to `scheme://authority` (`host` its host part):
/// refused for a scheme without TLS (`http`, `ws`) to a host that is not loopback, unless
/// `allow_insecure`. `how_to_allow` names the face's switch (`--allow-insecure`, a setting).
pub fn check_token_transport(
    scheme: &str,
    authority: &str,
    host: &str,
    allow_insecure: bool,
    how_to_allow: &str,
) -> Result<(), String> {
    let scheme = scheme.trim_end_matches(':').to_ascii_lowercase();
    let encrypted = matches!(scheme.as_str(), "https" | "wss");
    if encrypted || allow_insecure || is_loopback_host(host) {
        return Ok(());
    }
    Err(format!(
        "{scheme}://{} is not encrypted and {} is not this machine: the token would cross the \
         network in clear, for anyone on the way to read and use. Use https:// or wss:// (a \
         server with --tls-cert, or a TLS proxy or an ssh tunnel in front), or allow it \
         knowingly with {how_to_allow}",
        crate::display::escape_line(authority),
        crate::display::escape_line(host),
    ))
}
