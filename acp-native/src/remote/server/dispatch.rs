//! One request: `/health`, the endpoint's path, a CORS preflight, the Host, Origin and token
//! checks, the socket's admission, then the handler of its method.

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
use super::{ServerEvent, Shared};

pub(super) async fn handle<B>(
    shared: Arc<Shared>,
    peer: SocketAddr,
    tls: bool,
    ticket: Arc<Ticket>,
    req: Request<B>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
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
    // The socket showed the token: it takes one of `max_sockets` (once).
    if let Err(why) = ticket.admit() {
        let reason = match why {
            NotAdmitted::Full => format!(
                "{} sockets open (max_sockets); try again later",
                shared.config.max_sockets
            ),
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
        return r;
    }
    let mut resp = match *req.method() {
        Method::POST => handle_post(&shared, peer, req).await,
        Method::GET if is_websocket_upgrade(req.headers()) => {
            handle_upgrade(&shared, peer, credential, req)
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
