//! The HTTP side of the HTTP + SSE transport: a [`Lane`] sends requests one at a time over a
//! kept-alive HTTP/1.1 connection (hyper), redialled when the server closed it; answers are
//! read within a limit and error statuses become [`RemoteError::Http`] with the start of their
//! body.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use super::dialer::{Dialer, Io};
use super::error::body_excerpt;
use super::RemoteError;

/// A request's body: whole, in memory (a message, or nothing).
pub(super) type Body = Full<Bytes>;

/// An HTTP/1.1 connection.
pub(super) async fn handshake(io: Io) -> Result<SendRequest<Body>, RemoteError> {
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| RemoteError::Protocol(format!("HTTP handshake failed: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("remote HTTP connection ended: {e}");
        }
    });
    Ok(sender)
}

/// A lane of requests sent one at a time over a kept-alive connection, redialled when the
/// server closed it.
pub(super) struct Lane {
    pub(super) dialer: Arc<Dialer>,
    /// The kept-alive connection, once there is one.
    pub(super) sender: Option<SendRequest<Body>>,
}

impl Lane {
    /// A lane that dials its first connection when it sends its first request.
    pub(super) fn new(dialer: Arc<Dialer>) -> Lane {
        Lane {
            dialer,
            sender: None,
        }
    }

    /// Sends `request` and waits for the answer's head; a connection the server closed
    /// under it is replaced by a new one and the request sent there.
    pub(super) async fn send(
        &mut self,
        mut request: Request<Body>,
    ) -> Result<Response<Incoming>, RemoteError> {
        if let Some(sender) = self.sender.as_mut() {
            if sender.ready().await.is_ok() {
                match sender.try_send_request(request).await {
                    Ok(response) => return Ok(response),
                    Err(mut e) => match e.take_message() {
                        // Not sent: the connection was closed under it; try a fresh one.
                        Some(r) => request = r,
                        None => {
                            self.sender = None;
                            return Err(RemoteError::Lost(format!(
                                "sending to the server failed: {}",
                                e.into_error()
                            )));
                        }
                    },
                }
            }
        }
        self.sender = None;
        let mut sender = handshake(self.dialer.dial().await?).await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| RemoteError::Lost(format!("sending to the server failed: {e}")))?;
        self.sender = Some(sender);
        Ok(response)
    }
}

/// Reads a whole (small) body, at most `limit` bytes.
pub(super) async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, RemoteError> {
    Limited::new(body, limit)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| {
            RemoteError::Lost(format!(
                "reading an answer failed (at most {limit} bytes are read): {e}"
            ))
        })
}

/// An error status as a [`RemoteError`] (with the start of the body).
pub(super) async fn status_error(during: &str, response: Response<Incoming>) -> RemoteError {
    let status = response.status().as_u16();
    let body = tokio::time::timeout(
        Duration::from_secs(2),
        read_body(response.into_body(), 64 << 10),
    )
    .await
    .ok()
    .and_then(Result::ok)
    .map(|b| body_excerpt(&b))
    .unwrap_or_default();
    RemoteError::Http {
        during: during.to_string(),
        status,
        body,
    }
}
