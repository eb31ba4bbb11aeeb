//! ACP over a WebSocket: the upgrade, then frames pumped between the socket and the agent's
//! streams, the client pinged when silent.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::Role as WsRole;
use tokio_tungstenite::WebSocketStream;

use super::super::admission::Ticket;
use super::super::auth::Credential;
use super::super::wire;
use super::agents::{oversize_agent_line, start_agent, stop_agent, AgentLink};
use super::connection::new_connection_id;
use super::responses::{empty, header_str, text, Body};
use super::{ServerEvent, ServerState};
use crate::process::AgentProcess;
use crate::transport;
use crate::transport::ws_limits::PingFlood;

/// The WebSocket reader's initial buffer. tungstenite zero-fills its whole read buffer before
/// each read, so its default (128 KiB) is resident memory of every idle socket; the buffer
/// still grows to hold a larger frame.
const WS_READ_BUFFER: usize = 4 << 10;
/// One read of an agent's output for a WebSocket (lines longer than this still go whole).
const WS_AGENT_READ_CHUNK: usize = 8 << 10;

/// Answers a WebSocket handshake that passed the checks and was admitted: 400 without
/// version 13 or a key, 503 or 502 when no agent can start (see
/// [`start_agent`]), else 101, and a task that takes the upgraded socket. The socket keeps
/// `ticket` (its place among the sockets that showed the token) until the connection ends;
/// a refusal is said through `on_event`.
pub(super) fn handle_upgrade<B>(
    shared: &Arc<ServerState>,
    peer: SocketAddr,
    credential: Credential,
    ticket: Arc<Ticket>,
    req: Request<B>,
) -> Response<Body> {
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    let headers = req.headers();
    if header_str(headers, header::SEC_WEBSOCKET_VERSION.as_str()) != Some("13") {
        shared.event(ServerEvent::Refused {
            peer,
            status: 400,
            reason: "WebSocket version 13 required".into(),
        });
        let mut r = text(StatusCode::BAD_REQUEST, "WebSocket version 13 required");
        r.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return r;
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        shared.event(ServerEvent::Refused {
            peer,
            status: 400,
            reason: "Sec-WebSocket-Key header required".into(),
        });
        return text(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key header required");
    };
    let accept = derive_accept_key(key.as_bytes());
    let (slot, link) = match start_agent(shared, peer) {
        Ok(started) => started,
        Err(refused) => return *refused,
    };
    let connection_id = new_connection_id();
    let mut r = empty(StatusCode::SWITCHING_PROTOCOLS);
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Ok(v) = HeaderValue::from_str(&connection_id) {
        h.insert(wire::HEADER_CONNECTION_ID, v);
    }
    if let Credential::Protocol(p) = credential {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    let max_message = shared.config.max_body_bytes;
    let shared2 = shared.clone();
    let upgrade = hyper::upgrade::on(req);
    shared.tasks.spawn(async move {
        let shared = shared2;
        let pid = link.process.as_ref().map(AgentProcess::pid);
        let upgraded = match upgrade.await {
            Ok(u) => u,
            Err(e) => {
                stop_agent(link.writer, link.process).await;
                drop(slot);
                drop(ticket);
                shared.event(ServerEvent::Refused {
                    peer,
                    status: 0,
                    reason: format!("WebSocket upgrade failed: {e}"),
                });
                return;
            }
        };
        let config = transport::ws_config(max_message).read_buffer_size(WS_READ_BUFFER);
        let socket = transport::WsSocket::server(TokioIo::new(upgraded));
        let ws = WebSocketStream::from_raw_socket(socket, WsRole::Server, Some(config)).await;
        let pongs = transport::ws_limits::OwedPongs::of(&ws);
        shared.event(ServerEvent::Opened {
            peer,
            connection_id: connection_id.clone(),
            transport: "websocket",
            pid,
        });
        // Frames are pumped straight between the socket and the agent's streams (no
        // intermediate byte pipe: every buffer here is resident memory of an idle connection).
        let (mut to_client, from_client) = futures::StreamExt::split(ws);
        let AgentLink {
            reader: agent_out,
            writer: agent_in,
            process,
        } = link;
        let max_line = shared.config.max_agent_message_bytes;
        // A process's output is its stdout.
        let ended = match process {
            Some(_) => "the agent closed its stdout",
            None => "the agent closed its output",
        };
        let heard = Heard::new();
        let ping = shared.config.ws_ping_interval;
        let mut up = Box::pin(ws_to_agent(from_client, agent_in, &heard, pongs));
        let mut down = Box::pin(agent_to_ws(
            agent_out,
            &mut to_client,
            max_line,
            &heard,
            ping,
            ended,
        ));
        let (reason, agent_in, down_ended, flooded) = tokio::select! {
            (w, flood) = &mut up => match flood {
                Some(flood) => (flood.to_string(), Some(w), false, true),
                None => ("the client closed the connection".to_string(), Some(w), false, false),
            },
            why = &mut down => (why, None, true, false),
            _ = shared.stop.cancelled() => {
                ("the server is stopping".to_string(), None, false, false)
            }
        };
        drop(up);
        let mut down = if flooded {
            // Nothing more is read from (or written for) a client flooding pings: a close
            // frame saying why, if it takes it, then the socket goes.
            drop(down);
            transport::ws_limits::close_after_ping_flood(&mut to_client).await;
            drop(to_client);
            None
        } else {
            Some(down)
        };
        // The agent's input closes (if not already): its cue to exit.
        let report = match agent_in {
            Some(w) => stop_agent(w, process).await,
            None => stop_agent(Box::new(tokio::io::sink()), process).await,
        };
        // What the agent still wrote goes out while the socket lasts.
        if let (Some(down), false) = (&mut down, down_ended) {
            let _ = tokio::time::timeout(Duration::from_secs(1), down).await;
        }
        // The connection's slot first, then the socket's place: a socket admitted in its place
        // finds the slot free.
        drop(slot);
        drop(ticket);
        let reason = match report {
            Some(r) => format!("{reason}; {r}"),
            None => reason.to_string(),
        };
        shared.event(ServerEvent::Closed {
            peer,
            connection_id,
            reason,
        });
    });
    r
}

/// When a WebSocket's client was last heard from (any frame, pongs included).
struct Heard {
    pub(super) start: tokio::time::Instant,
    millis: std::sync::atomic::AtomicU64,
}

impl Heard {
    fn new() -> Heard {
        Heard {
            start: tokio::time::Instant::now(),
            millis: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn now(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.millis.store(ms, Ordering::Relaxed);
    }

    fn quiet(&self) -> Duration {
        let last = Duration::from_millis(self.millis.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// Client to agent: each text (or binary, read as UTF-8) message becomes a line of the agent's
/// input, until the client closes or fails, or sends pings faster than it reads their pongs
/// (more than [`transport::MAX_OWED_PONGS`] owed: the [`PingFlood`] is returned, and nothing
/// more is read); gives the agent's input back.
async fn ws_to_agent<S>(
    mut from_client: futures::stream::SplitStream<WebSocketStream<transport::WsSocket<S>>>,
    mut agent_in: Box<dyn AsyncWrite + Send + Unpin>,
    heard: &Heard,
    mut pongs: transport::ws_limits::OwedPongs,
) -> (Box<dyn AsyncWrite + Send + Unpin>, Option<PingFlood>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    while let Some(msg) = from_client.next().await {
        heard.now();
        let text = match msg {
            Ok(Message::Text(t)) => t.as_str().to_owned(),
            Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Message::Close(_)) => break,
            // tungstenite has queued its pong.
            Ok(Message::Ping(_)) => match pongs.ping() {
                Ok(()) => continue,
                Err(flood) => return (agent_in, Some(flood)),
            },
            Ok(_) => continue, // pong/raw frames
            Err(e) => {
                tracing::debug!("websocket read failed: {e}");
                break;
            }
        };
        let mut line = crate::transport::ws_pump::frame_to_lines(text);
        line.push(b'\n');
        if agent_in.write_all(&line).await.is_err() || agent_in.flush().await.is_err() {
            break;
        }
    }
    (agent_in, None)
}

/// Agent to client: each line the agent writes becomes one text message; the agent's EOF
/// sends a close frame (and returns `ended`). A line over `max_line` is dropped; if it was a response, the client
/// gets an error for its id in its place (as on the SSE streams). A client silent for `ping`
/// is pinged; one silent for twice that is gone. Returns why it ended.
async fn agent_to_ws<S>(
    mut agent_out: Box<dyn AsyncRead + Send + Unpin>,
    to_client: &mut futures::stream::SplitSink<
        WebSocketStream<S>,
        tokio_tungstenite::tungstenite::Message,
    >,
    max_line: usize,
    heard: &Heard,
    ping: Duration,
    ended: &'static str,
) -> String
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use acp_core::framing::{is_blank, Decoder, Frame};
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut decoder = Decoder::new(max_line);
    // Read into spare capacity (never zero-filled: an idle socket holds only what was read).
    let mut buf = Vec::with_capacity(WS_AGENT_READ_CHUNK);
    let mut frames: Vec<Message> = Vec::new();
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + ping / 2, ping / 2);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        buf.clear();
        // (`read_buf` is cancel-safe: what a read took is in `buf`.)
        let read = tokio::select! {
            n = agent_out.read_buf(&mut buf) => Some(n.unwrap_or(0)),
            _ = tick.tick() => None,
        };
        let Some(n) = read else {
            let quiet = heard.quiet();
            if quiet >= 2 * ping {
                return format!(
                    "the client was silent for {quiet:?} and did not answer pings (gone)"
                );
            }
            if quiet >= ping {
                if let Err(e) = to_client.send(Message::Ping(Bytes::new())).await {
                    return format!("the client is gone (a ping failed: {e})");
                }
            }
            continue;
        };
        let mut sink = |f: Frame<'_>| match f {
            Frame::Line(line) if !is_blank(line) => {
                frames.push(Message::text(String::from_utf8_lossy(line).into_owned()));
            }
            Frame::Line(_) => {}
            Frame::Oversize { limit, prefix } => {
                if let Some(msg) = oversize_agent_line(limit, prefix) {
                    frames.push(Message::text(msg));
                }
            }
        };
        if n == 0 {
            decoder.finish(&mut sink);
        } else {
            decoder.decode(&buf[..n], &mut sink);
        }
        for m in frames.drain(..) {
            if let Err(e) = to_client.send(m).await {
                tracing::debug!("websocket write failed: {e}");
                return format!("the client is gone (a write failed: {e})");
            }
        }
        if n == 0 {
            break;
        }
    }
    let _ = to_client.send(Message::Close(None)).await;
    let _ = to_client.close().await;
    ended.into()
}
