//! Building answers: bodies, plain-text and empty answers, CORS headers, refusals (said
//! through `on_event`), and header helpers.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};

use super::super::auth::Refusal;
use super::{ServerEvent, ServerState};

/// The body of every answer.
pub(super) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// An answer with `body` of `content_type`.
pub(super) fn full(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A plain-text answer.
pub(super) fn text(status: StatusCode, body: impl Into<String>) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", body.into())
}

/// An answer without a body.
pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *r.status_mut() = status;
    r
}

/// A header as text, when it is.
pub(super) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A browser page's origin, when it is allowed (CORS headers go on every answer to it).
pub(super) fn cors(resp: &mut Response<Body>, origin: Option<&HeaderValue>) {
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
pub(super) fn refused(shared: &ServerState, peer: SocketAddr, refusal: Refusal) -> Response<Body> {
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

/// `Upgrade: websocket` with `Connection: upgrade`.
pub(super) fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let upgrade = header_str(headers, header::UPGRADE.as_str())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let connection = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| has_token(v, "upgrade"));
    upgrade && connection
}

/// Whether an answer's headers say its socket closes after it (`Connection: close`).
pub(super) fn closes(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| has_token(v, "close"))
}

/// Whether a comma-separated header value (`Connection: keep-alive, Upgrade`) holds `token`.
pub(super) fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}
