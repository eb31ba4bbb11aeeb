//! The HTTP + SSE transport (`http://`, `https://`), bridged to the NDJSON streams the
//! driver reads and writes, as the official `agent-client-protocol-http` client does it (the
//! rules are acp-core's [`acp_core::http_sse`]; see the [module's docs](super)):
//!
//! * the first line must be the `initialize` request: `POST`ed on the ordered lane; its
//!   answer is the response and names the connection; then the connection's SSE stream
//!   ([`super::streams`]);
//! * the later lines the driver writes are read by [`Outgoing`] (no JSON value built) and
//!   posted with the connection id and the session they go with: requests and notifications
//!   in order on one lane (each session's stream opened before the first message naming it),
//!   our answers to the agent's requests on another, so an answer never waits behind a
//!   request that waits for it;
//! * when the driver closes its end, the queued messages go (within a grace), then `DELETE`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use acp_core::http_sse::Outgoing;
use acp_core::Id;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::dialer::Dialer;
use super::error::body_excerpt;
use super::lane::{handshake, read_body, status_error, Body, Lane};
use super::link::{drain_driver, LinkShared};
use super::wire::{HEADER_CONNECTION_ID, HEADER_SESSION_ID, JSON_MIME_TYPE};
use super::{RemoteError, BRIDGE_BUFFER, CLOSE_GRACE, QUEUE};
use crate::transport::DuplexHalves;

/// Reaches the server (TCP, TLS: a refused connection or a TLS failure is reported here) and
/// starts the bridge: the NDJSON halves for the driver. The connection itself is made by the
/// driver's `initialize`.
pub(super) async fn open(
    dialer: Arc<Dialer>,
    link: Arc<LinkShared>,
    max_message_bytes: usize,
) -> Result<DuplexHalves, RemoteError> {
    let first = handshake(dialer.dial().await?).await?;
    let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
    let http = Arc::new(HttpBridge {
        dialer,
        link,
        max_message_bytes,
        sessions: Mutex::new(HashSet::new()),
        opening: Mutex::new(Vec::new()),
        answers: OnceLock::new(),
    });
    tokio::spawn(http.run(ours, first));
    Ok(tokio::io::split(theirs))
}

/// One message the driver wrote, and acp-core's reading of it (method, id, session).
pub(super) struct Posted {
    pub(super) line: Bytes,
    pub(super) out: Outgoing,
}

impl Posted {
    pub(super) fn new(line: &[u8]) -> Posted {
        let out = std::str::from_utf8(line)
            .ok()
            .and_then(Outgoing::read)
            .unwrap_or_default();
        Posted {
            line: Bytes::copy_from_slice(line),
            out,
        }
    }
}

/// One HTTP + SSE transport: what its lanes and streams share.
pub(super) struct HttpBridge {
    pub(super) dialer: Arc<Dialer>,
    pub(super) link: Arc<LinkShared>,
    /// Largest SSE event read (and answer body).
    pub(super) max_message_bytes: usize,
    /// Sessions whose SSE stream is open (or opening).
    pub(super) sessions: Mutex<HashSet<String>>,
    /// Ids of our pending `session/new` / `session/fork` requests: their answer names a
    /// session whose stream is opened at once.
    pub(super) opening: Mutex<Vec<Id>>,
    /// The lane of our answers to the agent's requests (weak: it ends when the driver closes
    /// its end), for the errors answering requests over the limit.
    pub(super) answers: OnceLock<mpsc::WeakSender<Posted>>,
}

impl HttpBridge {
    /// A request to the endpoint with the token, the connection id once there is one, and
    /// the session's header.
    pub(super) fn request(
        &self,
        method: Method,
        accept: &str,
        session: Option<&str>,
        body: Option<Bytes>,
    ) -> Result<Request<Body>, RemoteError> {
        let endpoint = &self.dialer.endpoint;
        let mut builder = Request::builder()
            .method(method)
            .uri(endpoint.path.as_str())
            .header(HOST, endpoint.authority())
            .header(ACCEPT, accept)
            .header(USER_AGENT, concat!("acp-rs/", env!("CARGO_PKG_VERSION")));
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, JSON_MIME_TYPE);
        }
        if let Some(auth) = &self.dialer.authorization {
            builder = builder.header(AUTHORIZATION, auth.clone());
        }
        if let Some(id) = self.link.connection_id.lock().unwrap().as_deref() {
            builder = builder.header(HEADER_CONNECTION_ID, id);
        }
        if let Some(session) = session {
            builder = builder.header(HEADER_SESSION_ID, session);
        }
        builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| RemoteError::Protocol(format!("cannot build the request: {e}")))
    }

    /// Runs the transport until the driver closes its end or it fails.
    async fn run(self: Arc<Self>, ours: tokio::io::DuplexStream, first: SendRequest<Body>) {
        let (mut from_driver, to_driver) = tokio::io::split(ours);
        let (line_tx, line_rx) = mpsc::channel::<Bytes>(QUEUE);
        let writer = tokio::spawn(write_to_driver(line_rx, to_driver, self.link.stop.clone()));
        let stop = self.link.stop.clone();
        let result = tokio::select! {
            r = self.clone().pump(&mut from_driver, first, line_tx) => r,
            _ = stop.cancelled() => Ok(()),
        };
        if let Err(e) = result {
            self.link.fail(e.to_string());
        }
        // Closed by the driver, or failed: stop the streams and the writer (the driver sees
        // EOF and closes with the failure as its reason).
        self.link.stop.cancel();
        let _ = writer.await;
        drain_driver(from_driver).await;
    }

    /// Reads the driver's lines and posts them; returns when the driver closed its end.
    async fn pump(
        self: Arc<Self>,
        from_driver: &mut tokio::io::ReadHalf<tokio::io::DuplexStream>,
        first: SendRequest<Body>,
        to_driver: mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        use acp_core::framing::{is_blank, Decoder, Frame};
        let mut decoder = Decoder::new(self.max_message_bytes);
        let mut buf = vec![0u8; 64 << 10];
        let mut lines: Vec<Bytes> = Vec::new();
        let mut ordered = Lane {
            dialer: self.dialer.clone(),
            sender: Some(first),
        };
        let mut initialized = false;
        let (ordered_tx, ordered_rx) = mpsc::channel::<Posted>(QUEUE);
        let mut ordered_rx = Some(ordered_rx);
        let (answers_tx, answers_rx) = mpsc::channel::<Posted>(QUEUE);
        let _ = self.answers.set(answers_tx.downgrade());
        let answers = tokio::spawn(self.clone().answer_lane(answers_rx));
        let mut ordered_task = None;
        loop {
            let n = from_driver.read(&mut buf).await.unwrap_or(0);
            let mut sink = |f: Frame<'_>| match f {
                Frame::Line(line) if !is_blank(line) => lines.push(Bytes::copy_from_slice(line)),
                Frame::Line(_) => {}
                Frame::Oversize { limit, .. } => {
                    tracing::warn!(limit, "a message over the limit was not sent to the server");
                }
            };
            if n == 0 {
                decoder.finish(&mut sink);
            } else {
                decoder.decode(&buf[..n], &mut sink);
            }
            for line in lines.drain(..) {
                let posted = Posted::new(&line);
                if !initialized {
                    if !posted.out.is_initialize() {
                        return Err(RemoteError::Protocol(
                            "the first message over HTTP must be the `initialize` request".into(),
                        ));
                    }
                    self.initialize(&mut ordered, posted, &to_driver).await?;
                    initialized = true;
                    // The ordered lane goes on beside this loop, on the same connection.
                    let lane = Lane {
                        dialer: self.dialer.clone(),
                        sender: ordered.sender.take(),
                    };
                    ordered_task = Some(tokio::spawn(self.clone().ordered_lane(
                        lane,
                        ordered_rx.take().expect("once"),
                        to_driver.clone(),
                    )));
                    continue;
                }
                let target = if posted.out.is_response() {
                    &answers_tx
                } else {
                    &ordered_tx
                };
                if target.send(posted).await.is_err() {
                    // A lane stopped: it failed (the failure is recorded).
                    return Ok(());
                }
            }
            if n == 0 {
                break;
            }
        }
        // The driver closed its end: let the queued messages go, then end the connection.
        drop(ordered_tx);
        drop(answers_tx);
        let drained = async {
            if let Some(t) = ordered_task {
                let _ = t.await;
            }
            let _ = answers.await;
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, drained).await;
        self.link.mark_closing();
        if self.link.connection_id.lock().unwrap().is_some() {
            if let Ok(request) = self.request(Method::DELETE, JSON_MIME_TYPE, None, None) {
                let mut lane = Lane::new(self.dialer.clone());
                let _ = tokio::time::timeout(CLOSE_GRACE, lane.send(request)).await;
            }
        }
        Ok(())
    }

    /// POSTs `initialize`: its answer is the response; then the connection's SSE stream.
    async fn initialize(
        self: &Arc<Self>,
        lane: &mut Lane,
        posted: Posted,
        to_driver: &mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        let request = self.request(Method::POST, JSON_MIME_TYPE, None, Some(posted.line))?;
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error("initialize", response).await);
        }
        let connection_id = response
            .headers()
            .get(HEADER_CONNECTION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = read_body(response.into_body(), self.max_message_bytes).await?;
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            RemoteError::Protocol(format!(
                "the initialize answer is not JSON ({e}): {}",
                body_excerpt(&body)
            ))
        })?;
        let failed = value.get("error").is_some();
        let mut line = serde_json::to_vec(&value).unwrap_or_default();
        line.push(b'\n');
        if failed {
            // No connection: the driver gets the error, then the transport ends.
            let _ = to_driver.send(Bytes::from(line)).await;
            return Err(RemoteError::Protocol(format!(
                "the agent refused `initialize`: {}",
                value["error"]
            )));
        }
        let Some(connection_id) = connection_id else {
            return Err(RemoteError::Protocol(format!(
                "the server's initialize answer has no {HEADER_CONNECTION_ID} header (is this an ACP HTTP endpoint?)"
            )));
        };
        *self.link.connection_id.lock().unwrap() = Some(connection_id);
        let _ = to_driver.send(Bytes::from(line)).await;
        self.open_stream(None, to_driver.clone()).await
    }

    /// Requests and notifications, in order: each session's stream is opened before the
    /// first message naming it.
    async fn ordered_lane(
        self: Arc<Self>,
        mut lane: Lane,
        mut rx: mpsc::Receiver<Posted>,
        to_driver: mpsc::Sender<Bytes>,
    ) {
        while let Some(posted) = rx.recv().await {
            let out = &posted.out;
            if let Some(session) = &out.session {
                let new = self.sessions.lock().unwrap().insert(session.clone());
                if new {
                    if let Err(e) = self
                        .open_stream(Some(session.clone()), to_driver.clone())
                        .await
                    {
                        self.link.fail(e.to_string());
                        return;
                    }
                }
            }
            if let (true, Some(id)) = (out.opens_session(), &out.id) {
                self.opening.lock().unwrap().push(id.clone());
            }
            let during = match &out.method {
                Some(m) => format!("`{m}`"),
                None => "a message".to_string(),
            };
            if let Err(e) = self.post(&mut lane, posted, &during).await {
                self.link.fail(e.to_string());
                return;
            }
        }
    }

    /// Our answers to the agent's requests.
    async fn answer_lane(self: Arc<Self>, mut rx: mpsc::Receiver<Posted>) {
        let mut lane = Lane::new(self.dialer.clone());
        while let Some(posted) = rx.recv().await {
            if let Err(e) = self.post(&mut lane, posted, "an answer").await {
                self.link.fail(e.to_string());
                return;
            }
        }
    }

    /// POSTs one message with the session it goes with; `202` expected.
    async fn post(&self, lane: &mut Lane, posted: Posted, during: &str) -> Result<(), RemoteError> {
        let request = self.request(
            Method::POST,
            JSON_MIME_TYPE,
            posted.out.session.as_deref(),
            Some(posted.line),
        )?;
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error(during, response).await);
        }
        // Drain the (empty) body so the connection can be reused.
        let _ = read_body(response.into_body(), 64 << 10).await;
        Ok(())
    }
}

/// Writes the streams' messages to the driver, in the order they are queued.
async fn write_to_driver(
    mut rx: mpsc::Receiver<Bytes>,
    mut to_driver: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    stop: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            biased;
            line = rx.recv() => line,
            _ = stop.cancelled() => None,
        };
        let Some(line) = line else { break };
        if to_driver.write_all(&line).await.is_err() {
            break;
        }
    }
    // What was already queued still reaches the driver (the answer before a failure...).
    while let Ok(line) = rx.try_recv() {
        if to_driver.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = to_driver.shutdown().await;
}
