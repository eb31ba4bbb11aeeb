//! One request: `/health`, the endpoint's path, a CORS preflight, the Host, Origin and token
//! checks, the socket's admission, then the handler of its method; in
//! [`ServerMode::WebSocketOnly`], the same checks for a WebSocket handshake on any path.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::super::admission::{NotAdmitted, Ticket};
use super::super::auth;
use super::super::wire;
use super::http::{handle_delete, handle_get, handle_post};
use super::responses::{cors, empty, is_websocket_upgrade, refused, text, Body};
use super::websocket::handle_upgrade;
use super::{ServerEvent, ServerMode, ServerState};

/// Answers one request of a socket (`ticket`: the socket's place, admitted once a request shows
/// the token).
pub(super) async fn handle<B>(
    shared: Arc<ServerState>,
    peer: SocketAddr,
    tls: bool,
    ticket: Arc<Ticket>,
    req: Request<B>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if shared.config.mode == ServerMode::WebSocketOnly {
        return handle_websocket_only(&shared, peer, ticket, req);
    }
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
    if let Err(refusal) = admit(&shared, peer, &ticket) {
        return *refusal;
    }
    let mut resp = match *req.method() {
        Method::POST => handle_post(&shared, peer, req).await,
        Method::GET if is_websocket_upgrade(req.headers()) => {
            handle_upgrade(&shared, peer, credential, ticket, req)
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

/// A request of [`ServerMode::WebSocketOnly`]: a WebSocket handshake on any path, with the
/// checks of one on `/acp` in the same order (Host, Origin, token, admission); anything else is
/// answered 426. Every answer but the upgrade closes its socket.
fn handle_websocket_only<B>(
    shared: &Arc<ServerState>,
    peer: SocketAddr,
    ticket: Arc<Ticket>,
    req: Request<B>,
) -> Response<Body> {
    let mut resp = if req.method() != Method::GET || !is_websocket_upgrade(req.headers()) {
        let reason = "not a WebSocket handshake: this server speaks WebSocket only";
        shared.event(ServerEvent::Refused {
            peer,
            status: 426,
            reason: reason.into(),
        });
        let mut r = text(StatusCode::UPGRADE_REQUIRED, reason);
        r.headers_mut()
            .insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        r
    } else {
        match auth::authorize(
            req.headers(),
            req.uri(),
            &shared.config.token,
            &shared.config.allowed_origins,
            &shared.config.allowed_hosts,
        ) {
            Err(refusal) => refused(shared, peer, refusal),
            Ok(credential) => match admit(shared, peer, &ticket) {
                Err(refusal) => *refusal,
                Ok(()) => handle_upgrade(shared, peer, credential, ticket, req),
            },
        }
    };
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// The socket showed the token: it takes one of `max_sockets` (once), or the answer refusing
/// it (503).
fn admit(
    shared: &ServerState,
    peer: SocketAddr,
    ticket: &Ticket,
) -> Result<(), Box<Response<Body>>> {
    let why = match ticket.admit() {
        Ok(()) => return Ok(()),
        Err(why) => why,
    };
    let reason = match why {
        NotAdmitted::Full => {
            let (max, what, name) = shared.config.socket_limit();
            format!("{max} {what} open ({name}); try again later")
        }
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
    Err(Box::new(r))
}
