//! What every WebSocket of this crate holds to, in one place: the library's [`super::ws_connect`],
//! [`super::ws_accept`] and [`super::ws_bridge`], `RemoteServer`'s WebSockets (`acp serve
//! --http`'s `/acp`, `acp serve --ws`) and the remote client's `ws(s)://` (`acp chat
//! --connect`) all take their configuration from [`ws_config`], run over a [`WsSocket`] and
//! apply one rule to the pings they read (`OwedPongs`).
//!
//! **Why.** tungstenite answers pings itself: reading a ping queues its pong, which the next
//! read or flush writes. A peer that sends pings and never reads leaves every pong in
//! tungstenite's write buffer once the socket takes no more, and that buffer has no limit by
//! default: a ping flood cost the other side memory as fast as the peer could send (over
//! 1 GiB in 6 s, issue 19). tungstenite's own limit (`max_write_buffer_size`) is no answer:
//! a pong that does not fit is dropped without a word (the flood goes on, unreported, costing
//! CPU), and the same limit refuses our own messages larger than it
//! (`Error::WriteBufferFull`), while an agent's message may be 64 MiB.
//!
//! **The rule.** A pong is owed from the ping that asked for it until the WebSocket's write
//! side has been flushed completely: tungstenite flushes the socket only once everything it
//! had queued was written, and [`WsSocket`] counts those flushes. At most [`MAX_OWED_PONGS`]
//! may be owed; the next ping ends the connection: reading stops, a close frame (1008, policy
//! violation) with [`PING_FLOOD_CLOSE_REASON`] is sent if the peer takes it within
//! [`CLOSE_GRACE`], the server logs the reason (`PingFlood`'s text) and a client's
//! connection closes with it. A peer that reads our answers as fast as it asks for them owes
//! nothing for long, however often it pings; one that pings faster than it reads is closed.
//!
//! **The bound.** A WebSocket's write side then holds at most our frames up to
//! [`WS_WRITE_BUFFER_BYTES`] plus the one that crossed it (the sink then takes nothing more
//! until its buffer was written: one message of ours at most, within its size limit), and the
//! owed pongs: at most 1025 of at most 131 bytes (125 of payload, a masked header), 131 KiB.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::SplitSink;
use futures::SinkExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Pongs a peer may owe (see the module's docs); one more ping closes its connection.
pub const MAX_OWED_PONGS: usize = 1024;

/// Bytes of small frames tungstenite gathers before writing them to the socket (its default,
/// named here because the write side's bound counts it).
pub const WS_WRITE_BUFFER_BYTES: usize = 128 << 10;

/// How long the close frame of a flooded connection may take to go out (the peer does not
/// read, so usually it cannot) before the socket is dropped.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The close frame's reason when a connection is closed for owing too many pongs (a close
/// frame's reason is at most 123 bytes).
pub const PING_FLOOD_CLOSE_REASON: &str = "pings sent faster than their pongs are read";

/// The configuration of every WebSocket here: messages and frames up to `max_message_bytes`
/// (larger ones end the connection: tungstenite reads a message whole), tungstenite's write
/// buffer of [`WS_WRITE_BUFFER_BYTES`] and no `max_write_buffer_size` (see the module's docs:
/// `OwedPongs` bounds what a peer can make us queue).
pub fn ws_config(max_message_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes))
        .write_buffer_size(WS_WRITE_BUFFER_BYTES)
}

/// The socket under a WebSocket (a TCP stream, a TLS stream, an HTTP upgrade...): passes
/// everything through and counts the completed flushes, which `OwedPongs` needs. Build every
/// WebSocket on one: `WebSocketStream<WsSocket<S>>` is what [`super::ws_bridge`] takes.
#[derive(Debug)]
pub struct WsSocket<S> {
    io: S,
    /// Completed flushes (`poll_flush` answered `Ready(Ok)`).
    flushes: Arc<AtomicU64>,
    /// The other end's name in reasons: "client" on a server's socket, "server" on a client's.
    peer: &'static str,
}

impl<S> WsSocket<S> {
    /// The socket of a WebSocket we accept (we are the server).
    pub fn server(io: S) -> WsSocket<S> {
        WsSocket::new(io, Role::Server)
    }

    /// The socket of a WebSocket we open (we are the client).
    pub fn client(io: S) -> WsSocket<S> {
        WsSocket::new(io, Role::Client)
    }

    fn new(io: S, we_are: Role) -> WsSocket<S> {
        WsSocket {
            io,
            flushes: Arc::default(),
            peer: match we_are {
                Role::Server => "client",
                Role::Client => "server",
            },
        }
    }

    /// The socket it wraps.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The socket it wraps (writing to it directly bypasses the WebSocket's framing).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WsSocket<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WsSocket<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        if let Poll::Ready(Ok(())) = r {
            this.flushes.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The pongs a WebSocket's peer owes (see the module's docs), kept by whoever reads it: call
/// [`ping`](Self::ping) for every ping read.
#[derive(Debug)]
pub(crate) struct OwedPongs {
    flushes: Arc<AtomicU64>,
    /// `flushes` when the last ping was read.
    seen: u64,
    owed: usize,
    peer: &'static str,
}

impl OwedPongs {
    /// For the WebSocket `ws` (take it before splitting it).
    pub(crate) fn of<S>(ws: &WebSocketStream<WsSocket<S>>) -> OwedPongs
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let socket = ws.get_ref();
        OwedPongs {
            flushes: socket.flushes.clone(),
            seen: socket.flushes.load(Ordering::Relaxed),
            owed: 0,
            peer: socket.peer,
        }
    }

    /// A ping was read (tungstenite has queued its pong). `Err` once more than
    /// [`MAX_OWED_PONGS`] are owed: stop reading and close the connection.
    pub(crate) fn ping(&mut self) -> Result<(), PingFlood> {
        let flushes = self.flushes.load(Ordering::Relaxed);
        if flushes != self.seen {
            // Everything queued before this ping was written: nothing is owed but its pong.
            self.seen = flushes;
            self.owed = 0;
        }
        self.owed += 1;
        if self.owed > MAX_OWED_PONGS {
            return Err(PingFlood { peer: self.peer });
        }
        Ok(())
    }
}

/// Why a connection was closed for owing too many pongs; its text is the reason logged or
/// given to the connection ("the server sent pings faster than it reads our answers …").
#[derive(Debug, Clone)]
pub(crate) struct PingFlood {
    peer: &'static str,
}

impl fmt::Display for PingFlood {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} sent pings faster than it reads our answers (over {MAX_OWED_PONGS} pongs \
             owed); the WebSocket was closed",
            self.peer
        )
    }
}

/// After a [`PingFlood`]: a close frame (1008, [`PING_FLOOD_CLOSE_REASON`]) for the peer, if it
/// takes it within [`CLOSE_GRACE`]. The caller then drops the socket.
pub(crate) async fn close_after_ping_flood<S>(sink: &mut SplitSink<WebSocketStream<S>, Message>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let frame = CloseFrame {
        code: CloseCode::Policy,
        reason: Utf8Bytes::from_static(PING_FLOOD_CLOSE_REASON),
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, sink.send(Message::Close(Some(frame)))).await;
}
