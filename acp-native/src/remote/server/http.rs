//! HTTP + SSE requests: `POST` (a message for the agent; `initialize` starts a connection),
//! `GET` (an SSE stream) and `DELETE` (the connection's end).

use std::net::SocketAddr;
use std::sync::Arc;

use acp_core::jsonrpc::Envelope;
use acp_core::Id;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::sync::oneshot;

use super::super::wire::{self, Route};
use super::agents::start_agent;
use super::body::SseBody;
use super::connection::{new_connection_id, HttpConn, Unavailable};
use super::responses::{empty, full, header_str, text, Body};
use super::routes::InitAnswer;
use super::routes::{session_of, Effect};
use super::{ServerEvent, ServerState};
use crate::process::AgentProcess;

/// A JSON-RPC error answer with id `null` (for a batch, as the official server answers).
fn batch_rejection() -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": "Invalid Request: JSON-RPC batches are not supported"},
    });
    full(
        StatusCode::BAD_REQUEST,
        wire::JSON_MIME_TYPE,
        body.to_string(),
    )
}

/// `POST`: one message for the agent, its session header applied and its answer's route
/// recorded (202); `initialize` starts a connection; batches are refused.
pub(super) async fn handle_post<B>(
    shared: &Arc<ServerState>,
    peer: SocketAddr,
    req: Request<B>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let headers = req.headers();
    if !header_str(headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|ct| ct.starts_with(wire::JSON_MIME_TYPE))
    {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let connection_id = header_str(headers, wire::HEADER_CONNECTION_ID).map(str::to_string);
    let session_header = header_str(headers, wire::HEADER_SESSION_ID).map(str::to_string);
    let limit = shared.config.max_body_bytes;
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("POST body too large: the limit is {limit} bytes (acp serve --max-body)"),
        )
    };
    if header_str(headers, header::CONTENT_LENGTH.as_str())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
    {
        shared.event(ServerEvent::Refused {
            peer,
            status: 413,
            reason: "POST body too large".into(),
        });
        return too_large();
    }
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.is::<http_body_util::LengthLimitError>() {
                shared.event(ServerEvent::Refused {
                    peer,
                    status: 413,
                    reason: "POST body too large".into(),
                });
                return too_large();
            }
            return text(
                StatusCode::BAD_REQUEST,
                format!("cannot read the body: {e}"),
            );
        }
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return text(
            StatusCode::BAD_REQUEST,
            "Invalid JSON-RPC: the body is not UTF-8",
        );
    };
    // One line for the agent: raw newlines in JSON can only be whitespace.
    let mut line = body.trim().replace(['\n', '\r'], " ");
    if line.starts_with('[') {
        return batch_rejection();
    }
    let envelope = Envelope::parse(&line).ok();
    if let Some(env) = &envelope {
        if env.method().as_deref() == Some("initialize") {
            if let Some(id) = env.id() {
                return initialize(shared, peer, id, line).await;
            }
        }
    }
    let Some(connection_id) = connection_id else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared
        .connections
        .lock()
        .unwrap()
        .get(&connection_id)
        .cloned()
    else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    conn.touch();
    // Malformed JSON goes to the agent as it is (it answers with a parse error); messages get
    // their session header applied and their response's route recorded.
    let mut pending = None;
    if let Some(env) = envelope {
        if let Some(method) = env.method() {
            let method = method.into_owned();
            let mut session = session_of(&env);
            let id = env.id();
            if let Some(header_session) = &session_header {
                let scoped = !(method.starts_with("$/")
                    || wire::is_connection_scoped(
                        &method,
                        env.params()
                            .and_then(|p| serde_json::from_str(p.get()).ok())
                            .as_ref(),
                    ));
                if scoped {
                    match apply_session_header(&line, header_session) {
                        Ok(Some(rewritten)) => {
                            line = rewritten;
                            session = Some(header_session.clone());
                        }
                        Ok(None) => session = Some(header_session.clone()),
                        Err(e) => return text(StatusCode::BAD_REQUEST, e),
                    }
                }
            }
            let route = match session {
                Some(s) => Route::Session(s),
                None if wire::method_requires_session_header(&method) => {
                    return text(StatusCode::BAD_REQUEST, "Acp-Session-Id header required");
                }
                None => Route::Connection,
            };
            if let Some(id) = id {
                pending = Some((id, route, Effect::of(&method)));
            }
        }
    }
    if let Some((id, route, effect)) = pending {
        conn.routes
            .lock()
            .unwrap()
            .pending
            .entry(id)
            .or_default()
            .push_back((route, effect));
    }
    match conn.send_line(line).await {
        Ok(()) => empty(StatusCode::ACCEPTED),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// Puts the `Acp-Session-Id` header's session into a message's params: `None` when they
/// already name it; an error when they name another or are not an object.
fn apply_session_header(line: &str, session: &str) -> Result<Option<String>, &'static str> {
    let mut value: serde_json::Value =
        serde_json::from_str(line).map_err(|_| "Invalid JSON-RPC")?;
    let Some(obj) = value.as_object_mut() else {
        return Err("Invalid JSON-RPC");
    };
    let params = obj
        .entry("params")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    let Some(params) = params.as_object_mut() else {
        return Err("Acp-Session-Id header requires object params");
    };
    match params.get("sessionId") {
        Some(serde_json::Value::String(s)) if s == session => Ok(None),
        Some(serde_json::Value::String(_)) => {
            Err("Acp-Session-Id header does not match params.sessionId")
        }
        Some(_) => Err("params.sessionId must be a string"),
        None => {
            params.insert(
                "sessionId".into(),
                serde_json::Value::String(session.to_string()),
            );
            Ok(Some(value.to_string()))
        }
    }
}

/// `initialize`: a new connection and its agent, answered with the agent's answer and the
/// connection's id (or why there is none: 502, 503, 504).
pub(super) async fn initialize(
    shared: &Arc<ServerState>,
    peer: SocketAddr,
    id: Id,
    line: String,
) -> Response<Body> {
    let (slot, link) = match start_agent(shared, peer) {
        Ok(started) => started,
        Err(refused) => return *refused,
    };
    let connection_id = new_connection_id();
    let pid = link.process.as_ref().map(AgentProcess::pid);
    let (init_tx, init_rx) = oneshot::channel();
    let conn = HttpConn::start(
        shared,
        connection_id.clone(),
        peer,
        link,
        slot,
        (id, init_tx),
    );
    if let Err(e) = conn.send_line(line).await {
        conn.close(shared, "the agent did not take initialize");
        return text(
            StatusCode::BAD_GATEWAY,
            format!("the agent did not take initialize: {e}"),
        );
    }
    enum Answer {
        Got(InitAnswer),
        Ended,
        Late,
    }
    let mut init_rx = init_rx;
    let answer = tokio::select! {
        biased;
        a = tokio::time::timeout(shared.config.initialize_timeout, &mut init_rx) => match a {
            Ok(Ok(r)) => Answer::Got(r),
            Ok(Err(_)) => Answer::Ended,
            Err(_) => Answer::Late,
        },
        _ = conn.closed.cancelled() => match init_rx.try_recv() {
            Ok(r) => Answer::Got(r),
            Err(_) => Answer::Ended,
        },
    };
    let response = match answer {
        Answer::Got(r) => r,
        Answer::Ended => {
            let why = conn
                .close_reason()
                .unwrap_or_else(|| "the agent closed".into());
            conn.close(shared, "the agent ended before answering initialize");
            return text(
                StatusCode::BAD_GATEWAY,
                format!("the agent ended before answering initialize: {why}"),
            );
        }
        Answer::Late => {
            conn.close(shared, "no initialize answer in time");
            return text(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the agent did not answer initialize within {:?}",
                    shared.config.initialize_timeout
                ),
            );
        }
    };
    if response.is_error {
        // A refused initialize creates no connection.
        conn.close(shared, "the agent refused initialize");
        return full(StatusCode::OK, wire::JSON_MIME_TYPE, response.line);
    }
    shared
        .connections
        .lock()
        .unwrap()
        .insert(connection_id.clone(), conn.clone());
    // A close that raced the insert (the agent exited at once) must not leave it registered.
    if conn.closed.is_cancelled() {
        shared.connections.lock().unwrap().remove(&connection_id);
    }
    shared.event(ServerEvent::Opened {
        peer,
        connection_id: connection_id.clone(),
        transport: "http",
        pid,
    });
    let mut r = full(StatusCode::OK, wire::JSON_MIME_TYPE, response.line);
    if let Ok(v) = HeaderValue::from_str(&connection_id) {
        r.headers_mut().insert(wire::HEADER_CONNECTION_ID, v);
    }
    r
}

/// `GET`: the connection's SSE stream, or a session's (`Acp-Session-Id`).
pub(super) fn handle_get(shared: &Arc<ServerState>, headers: &HeaderMap) -> Response<Body> {
    if !header_str(headers, header::ACCEPT.as_str())
        .is_some_and(|a| a.contains(wire::EVENT_STREAM_MIME_TYPE))
    {
        return text(
            StatusCode::NOT_ACCEPTABLE,
            "client must accept text/event-stream",
        );
    }
    let Some(connection_id) = header_str(headers, wire::HEADER_CONNECTION_ID) else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared
        .connections
        .lock()
        .unwrap()
        .get(connection_id)
        .cloned()
    else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    let session = header_str(headers, wire::HEADER_SESSION_ID).map(str::to_string);
    let lease = match conn.subscribe(session.as_deref()) {
        Ok(l) => l,
        Err(Unavailable::Busy) => {
            return text(
                StatusCode::CONFLICT,
                "outbound stream already has a subscriber",
            )
        }
        Err(Unavailable::Unknown) => return text(StatusCode::NOT_FOUND, "unknown Acp-Session-Id"),
    };
    conn.touch();
    let body = SseBody {
        lease,
        keepalive: Box::pin(tokio::time::sleep(wire::SSE_KEEPALIVE_INTERVAL)),
    };
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(wire::EVENT_STREAM_MIME_TYPE),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(connection_id) {
        h.insert(wire::HEADER_CONNECTION_ID, v);
    }
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(&s).ok()) {
        h.insert(wire::HEADER_SESSION_ID, v);
    }
    r
}

/// `DELETE`: the client ends the connection (its agent is stopped).
pub(super) fn handle_delete(shared: &Arc<ServerState>, headers: &HeaderMap) -> Response<Body> {
    let Some(connection_id) = header_str(headers, wire::HEADER_CONNECTION_ID) else {
        return text(StatusCode::BAD_REQUEST, "Acp-Connection-Id header required");
    };
    let Some(conn) = shared.connections.lock().unwrap().remove(connection_id) else {
        return text(
            StatusCode::NOT_FOUND,
            "unknown Acp-Connection-Id (the connection ended, or never was)",
        );
    };
    conn.close(shared, "the client closed the connection (DELETE)");
    empty(StatusCode::ACCEPTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_header_goes_into_params() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[]}}"#;
        let out = apply_session_header(line, "s1").unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["params"]["sessionId"], "s1");
        let same =
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1"}}"#;
        assert_eq!(apply_session_header(same, "s1"), Ok(None));
        assert_eq!(
            apply_session_header(same, "s2"),
            Err("Acp-Session-Id header does not match params.sessionId")
        );
        let none = r#"{"jsonrpc":"2.0","id":1,"method":"session/cancel"}"#;
        let out = apply_session_header(none, "s1").unwrap().unwrap();
        assert!(out.contains(r#""sessionId":"s1""#), "{out}");
        let array = r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#;
        assert!(apply_session_header(array, "s1").is_err());
    }
}
