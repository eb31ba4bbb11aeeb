//! A first `GET`'s answer written straight to its socket, without hyper: the head, a body of
//! known size whole, an SSE stream chunked, event by event.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Response;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::responses::{closes, Body};

/// Writes an answer's head on a socket without hyper, and the body too when its size is known
/// (`Ok(None)`); a body of unknown size (an SSE stream) is returned, to be sent chunked. With
/// `close`, the head says `Connection: close`.
pub(super) async fn write_head<I>(
    io: &mut I,
    resp: Response<Body>,
    close: bool,
) -> std::io::Result<Option<Body>>
where
    I: AsyncWrite + Unpin,
{
    use std::fmt::Write as _;
    let (parts, mut body) = resp.into_parts();
    // (A `Connection: close` of the answer's own is written with its headers.)
    let close = close && !closes(&parts.headers);
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_str(),
        parts.status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &parts.headers {
        if let Ok(v) = value.to_str() {
            let _ = write!(head, "{name}: {v}\r\n");
        }
    }
    drop(parts);
    let _ = write!(
        head,
        "date: {}\r\n",
        httpdate::fmt_http_date(std::time::SystemTime::now())
    );
    if close {
        head.push_str("connection: close\r\n");
    }
    // (No answer to a `GET` here is a 204 or a 304, which could not carry a length.)
    let Some(n) = http_body::Body::size_hint(&body).exact() else {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        io.write_all(head.as_bytes()).await?;
        io.flush().await?;
        return Ok(Some(body));
    };
    let _ = write!(head, "content-length: {n}\r\n\r\n");
    let mut out = head.into_bytes();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap_or_else(|e| match e {}).into_data() {
            out.extend_from_slice(&data);
        }
    }
    io.write_all(&out).await?;
    io.flush().await?;
    Ok(None)
}

/// Sends a stream's body chunked, each event as it comes, until the stream ends (`Ok(true)`:
/// the socket can carry another request), the client leaves or the server stops. A client
/// sends nothing on a stream's socket while it is open: a read that returns is the client
/// leaving (or misbehaving), and ends the stream either way.
pub(super) async fn stream_body<I>(
    io: &mut I,
    mut body: Body,
    stop: &CancellationToken,
) -> std::io::Result<bool>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    enum Next {
        Data(Bytes),
        End,
        Leave,
    }
    let mut stopped = std::pin::pin!(stop.cancelled());
    let mut probe = [0u8; 16];
    loop {
        let next = std::future::poll_fn(|cx| {
            if stopped.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Next::Leave);
            }
            let mut read = tokio::io::ReadBuf::new(&mut probe);
            if Pin::new(&mut *io).poll_read(cx, &mut read).is_ready() {
                return Poll::Ready(Next::Leave);
            }
            // (Frames that carry no bytes are skipped.)
            loop {
                match http_body::Body::poll_frame(Pin::new(&mut body), cx) {
                    Poll::Ready(Some(frame)) => {
                        if let Ok(data) = frame.unwrap_or_else(|e| match e {}).into_data() {
                            if !data.is_empty() {
                                return Poll::Ready(Next::Data(data));
                            }
                        }
                    }
                    Poll::Ready(None) => return Poll::Ready(Next::End),
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await;
        match next {
            Next::Data(data) => {
                let mut chunk = Vec::with_capacity(data.len() + 12);
                let _ = std::io::Write::write_fmt(&mut chunk, format_args!("{:x}\r\n", data.len()));
                chunk.extend_from_slice(&data);
                chunk.extend_from_slice(b"\r\n");
                drop(data);
                io.write_all(&chunk).await?;
                io.flush().await?;
            }
            Next::End => {
                io.write_all(b"0\r\n\r\n").await?;
                io.flush().await?;
                return Ok(true);
            }
            Next::Leave => return Ok(false),
        }
    }
}
