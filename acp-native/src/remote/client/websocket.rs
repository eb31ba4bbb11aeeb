//! The WebSocket transport (`ws://`, `wss://`): the handshake (with the token), then the
//! crate's one frame pump ([`crate::transport::ws_pump`]) between the socket and the driver,
//! one text frame per message each way. The reason the socket ended (a close frame's code and
//! reason, an error, a message over the limit) becomes the transport's failure; a line the
//! driver writes over the limit is not sent (logged).

use std::sync::Arc;

use hyper::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::WebSocketStream;

use super::dialer::{Dialer, Io};
use super::error::body_excerpt;
use super::link::{drain_driver, LinkShared};
use super::{ClientOptions, RemoteError, BRIDGE_BUFFER};
use crate::transport::ws_pump::{self, PumpSide, ReadEnd};
use crate::transport::{DuplexHalves, WsSocket};

/// Opens the WebSocket (TCP, TLS, the handshake, within the dialer's timeout) and starts its
/// pump: the NDJSON halves for the driver.
pub(super) async fn open(
    dialer: &Dialer,
    options: &ClientOptions,
    link: Arc<LinkShared>,
) -> Result<DuplexHalves, RemoteError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let endpoint = &dialer.endpoint;
    let addr = endpoint.authority();
    let work = async {
        let io = dialer.dial().await?;
        let scheme = if endpoint.is_tls() { "wss" } else { "ws" };
        let mut request = format!("{scheme}://{addr}{}", endpoint.path)
            .into_client_request()
            .map_err(|e| RemoteError::Url(format!("{endpoint}: {e}")))?;
        if let Some(auth) = &dialer.authorization {
            request.headers_mut().insert(AUTHORIZATION, auth.clone());
        }
        let config = crate::transport::ws_config(options.max_message_bytes);
        let socket = WsSocket::client(io);
        let (ws, _response) =
            tokio_tungstenite::client_async_with_config(request, socket, Some(config))
                .await
                .map_err(|e| match e {
                    WsError::Http(response) => RemoteError::Http {
                        during: "the WebSocket handshake".into(),
                        status: response.status().as_u16(),
                        body: body_excerpt(response.body().as_deref().unwrap_or_default()),
                    },
                    WsError::Io(e) => {
                        RemoteError::Lost(format!("during the WebSocket handshake: {e}"))
                    }
                    other => {
                        RemoteError::Protocol(format!("the WebSocket handshake failed: {other}"))
                    }
                })?;
        Ok(ws)
    };
    let ws = match tokio::time::timeout(dialer.timeout, work).await {
        Ok(r) => r?,
        Err(_) => return Err(RemoteError::Timeout { addr }),
    };
    let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
    tokio::spawn(run(ws, ours, link, options.max_message_bytes));
    Ok(tokio::io::split(theirs))
}

/// Pumps frames until the transport ends (see [`crate::transport::ws_pump`]): a server that
/// sends pings faster than it reads their pongs is closed once it owes
/// [`crate::transport::MAX_OWED_PONGS`], the failure saying so. Then the driver's input is shut
/// (it closes with the failure as its reason) and what it still writes is drained.
async fn run(
    ws: WebSocketStream<WsSocket<Io>>,
    ours: tokio::io::DuplexStream,
    link: Arc<LinkShared>,
    max_message_bytes: usize,
) {
    let (mut from_driver, mut to_driver) = tokio::io::split(ours);
    let side = ClientSide { link: link.clone() };
    ws_pump::pump(
        ws,
        &mut from_driver,
        &mut to_driver,
        max_message_bytes,
        &link.stop,
        &side,
    )
    .await;
    link.stop.cancel();
    drain_driver(from_driver).await;
}

/// The client's side of the frame pump: every end is the transport's failure, in words.
struct ClientSide {
    link: Arc<LinkShared>,
}

impl PumpSide for ClientSide {
    fn read_ended(&self, end: ReadEnd) {
        let reason = match end {
            ReadEnd::Closed(Some(f)) if !f.reason.is_empty() => format!(
                "the server closed the WebSocket ({}: {})",
                u16::from(f.code),
                body_excerpt(f.reason.as_bytes())
            ),
            ReadEnd::Closed(Some(f)) => {
                format!("the server closed the WebSocket ({})", u16::from(f.code))
            }
            ReadEnd::Closed(None) => "the server closed the WebSocket".to_string(),
            ReadEnd::PingFlood(flood) => flood.to_string(),
            // tungstenite cannot skip a message over its limit (every later read fails the
            // same way), so the connection ends, saying so.
            ReadEnd::Failed(WsError::Capacity(CapacityError::MessageTooLong {
                size,
                max_size,
            })) => {
                format!(
                    "the server sent a WebSocket message of {size} bytes, over the {max_size}-byte limit (a WebSocket message over the limit cannot be skipped)"
                )
            }
            ReadEnd::Failed(e) => format!("the WebSocket failed: {e}"),
            ReadEnd::Ended => "the server closed the connection".to_string(),
            ReadEnd::LinesClosed => "the connection closed".to_string(),
        };
        self.link.fail(reason);
    }

    fn send_failed(&self, error: WsError) {
        self.link
            .fail(format!("sending to the server failed: {error}"));
    }

    fn lines_ended(&self) {
        // The driver closed its end: a normal close.
        self.link.mark_closing();
    }

    fn oversize(&self, limit: usize, _prefix: &[u8]) -> Option<String> {
        tracing::warn!(limit, "a message over the limit was not sent to the server");
        None
    }
}
