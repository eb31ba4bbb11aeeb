//! The frame pump: one WebSocket bridged to an NDJSON byte stream, one JSON-RPC message per
//! text frame each way. Every WebSocket of the crate whose other side is a driver runs it: the
//! library's [`super::ws_bridge`] (`acp serve --ws`, [`super::ws_connect`],
//! [`super::ws_accept`]) and the remote client's `ws(s)://` (`remote::client`, feature
//! `remote`); `RemoteServer`'s WebSockets, whose other side is an agent's stdio with a
//! keep-alive of its own, read frames with the same [`frame_to_lines`]. What differs between
//! the pump's users is a [`PumpSide`]: how the end is reported (a reason
//! for the connection, a log line) and what goes out in place of a line over the limit.
//!
//! * **WebSocket to lines.** Each text frame (or binary, read as UTF-8) becomes one line, or
//!   the lines it holds ([`frame_to_lines`]). The first of: a close frame, the stream's end, an
//!   error (a message over the limit is one: tungstenite reads a message whole and cannot skip
//!   it), the lines side refusing more, or a peer owing too many pongs ([`super::ws_limits`])
//!   stops the reading; the side is told why ([`ReadEnd`]), then the lines side is shut (EOF).
//! * **Lines to WebSocket.** Lines are framed by acp-core's decoder, so a writer that never
//!   ends a line cannot make the pump buffer without bound: a line over the limit is skipped
//!   (its first bytes handed to [`PumpSide::oversize`]); blank lines are dropped. The lines
//!   side's EOF sends a close frame ([`PumpSide::lines_ended`] first); a failed send stops
//!   this direction ([`PumpSide::send_failed`]).
//! * **The end.** The pump returns once both directions ended, or at once when its `halt`
//!   token is cancelled (the pump cancels it itself for a ping flood, whose close frame (1008)
//!   then goes out within the grace of [`super::ws_limits::CLOSE_GRACE`]).

use std::sync::atomic::{AtomicBool, Ordering};

use acp_core::framing::{is_blank, Decoder, Frame};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::ws_limits::{self, OwedPongs, PingFlood, WsSocket};

/// Bytes read from the lines side at a time.
const READ_CHUNK: usize = 64 << 10;

/// Why a pump stopped reading its WebSocket.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// The peer sent a close frame (its code and reason, if it gave them).
    Closed(Option<CloseFrame>),
    /// The stream ended without a close frame.
    Ended,
    /// The peer sent pings faster than it reads their pongs: nothing more is read, and the
    /// pump sends a close frame saying so.
    PingFlood(PingFlood),
    /// Reading failed (a message over the limit is `Capacity(MessageTooLong)`).
    Failed(WsError),
    /// The lines side took no more.
    LinesClosed,
}

/// What a pump's user decides: how its end is reported and what replaces a line over the
/// limit. Called from the pump's task, possibly from both directions in turn.
pub(crate) trait PumpSide: Sync {
    /// The pump stopped reading the WebSocket; called before the lines side is shut, so the
    /// reason is known by the time that EOF is read.
    fn read_ended(&self, end: ReadEnd);

    /// Sending a frame failed: this direction sends nothing more.
    fn send_failed(&self, error: WsError);

    /// The lines side ended: a close frame goes out next (a normal close).
    fn lines_ended(&self) {}

    /// A line over the limit was skipped (`prefix`: its first bytes, for
    /// [`acp_core::sniff`]): the text to send in its place, if any.
    fn oversize(&self, limit: usize, prefix: &[u8]) -> Option<String>;
}

/// One WebSocket message as NDJSON. A frame normally holds one message: if it spans several
/// lines (pretty-printed JSON, whose newlines can only be whitespace) they become spaces. A
/// frame that is not one JSON value but several lines (a sender that forwarded NDJSON output
/// unsplit) is passed on line by line, so each message still gets through.
pub(crate) fn frame_to_lines(text: String) -> Vec<u8> {
    if !text.contains(['\n', '\r']) || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err()
    {
        return text.into_bytes();
    }
    text.replace(['\n', '\r'], " ").into_bytes()
}

/// Pumps frames between `ws` (built with [`super::ws_config`] on a [`WsSocket`]) and the
/// lines side (`lines_in`: what the driver writes; `lines_out`: what it reads), lines up to
/// `max_line` bytes, until both directions ended or `halt` is cancelled (see the module's
/// docs). The lines side is shut before it returns; `lines_in` is left to the caller (who may
/// drain what the driver still writes).
pub(crate) async fn pump<S, R, W>(
    ws: WebSocketStream<WsSocket<S>>,
    lines_in: &mut R,
    lines_out: &mut W,
    max_line: usize,
    halt: &CancellationToken,
    side: &dyn PumpSide,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut pongs = OwedPongs::of(&ws);
    let (mut sink, mut stream) = ws.split();
    let flooded = AtomicBool::new(false);
    let writer_sink = &mut sink;
    let reader = async {
        let end = loop {
            let text = match stream.next().await {
                Some(Ok(Message::Text(t))) => t.as_str().to_owned(),
                Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                Some(Ok(Message::Close(frame))) => break ReadEnd::Closed(frame),
                // tungstenite has queued its pong.
                Some(Ok(Message::Ping(_))) => match pongs.ping() {
                    Ok(()) => continue,
                    Err(flood) => {
                        flooded.store(true, Ordering::SeqCst);
                        break ReadEnd::PingFlood(flood);
                    }
                },
                Some(Ok(_)) => continue, // pongs, raw frames
                Some(Err(e)) => break ReadEnd::Failed(e),
                None => break ReadEnd::Ended,
            };
            let mut line = frame_to_lines(text);
            line.push(b'\n');
            if lines_out.write_all(&line).await.is_err() {
                break ReadEnd::LinesClosed;
            }
        };
        side.read_ended(end);
        if flooded.load(Ordering::SeqCst) {
            // Nothing more is read from (or written for) a peer flooding pings.
            halt.cancel();
        }
        let _ = lines_out.shutdown().await;
    };
    let writer = async {
        let mut decoder = Decoder::new(max_line);
        let mut buf = vec![0u8; READ_CHUNK];
        let mut frames: Vec<Message> = Vec::new();
        loop {
            let n = lines_in.read(&mut buf).await.unwrap_or(0);
            let mut on_frame = |f: Frame<'_>| match f {
                Frame::Line(line) if !is_blank(line) => {
                    frames.push(Message::text(String::from_utf8_lossy(line).into_owned()));
                }
                Frame::Line(_) => {}
                Frame::Oversize { limit, prefix } => {
                    frames.extend(side.oversize(limit, prefix).map(Message::text));
                }
            };
            if n == 0 {
                decoder.finish(&mut on_frame);
            } else {
                decoder.decode(&buf[..n], &mut on_frame);
            }
            for m in frames.drain(..) {
                if let Err(e) = writer_sink.send(m).await {
                    side.send_failed(e);
                    return;
                }
            }
            if n == 0 {
                break;
            }
        }
        side.lines_ended();
        let _ = writer_sink.send(Message::Close(None)).await;
        let _ = writer_sink.close().await;
    };
    tokio::select! {
        _ = async { tokio::join!(reader, writer) } => {}
        _ = halt.cancelled() => {}
    }
    let _ = lines_out.shutdown().await;
    if flooded.load(Ordering::SeqCst) {
        // A close frame saying why, if the peer takes it; then the socket goes.
        ws_limits::close_after_ping_flood(&mut sink).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_message_or_the_lines_it_holds() {
        assert_eq!(frame_to_lines(r#"{"a":1}"#.into()), br#"{"a":1}"#);
        // Pretty-printed: one message, its newlines are whitespace.
        assert_eq!(
            frame_to_lines("{\n  \"a\": \"x\\ny\"\r\n}".into()),
            b"{   \"a\": \"x\\ny\"  }"
        );
        // Two NDJSON lines forwarded unsplit: both get through.
        assert_eq!(
            frame_to_lines("{\"id\":0}\n{\"id\":1}\n".into()),
            b"{\"id\":0}\n{\"id\":1}\n"
        );
        // Not JSON at all: passed on, so the engine answers it with a parse error.
        assert_eq!(frame_to_lines("oops\nno".into()), b"oops\nno");
    }
}
