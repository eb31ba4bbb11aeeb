//! A socket's first request head, read by the server itself (`httparse`): a plain `GET` is
//! answered without hyper; anything else goes to hyper with the bytes already read
//! ([`Rewind`]).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::responses::has_token;

/// A first request head larger than this is left to hyper (which applies its own limits).
const FIRST_HEAD_LIMIT: usize = 8 << 10;
/// Headers parsed in a first request head (more: left to hyper).
const FIRST_HEAD_HEADERS: usize = 48;

/// What the first bytes of a socket are.
pub(super) enum FirstHead {
    /// A complete `GET` head (not a WebSocket upgrade) and nothing after it, as a request;
    /// `true` when the client asked to close the socket after the answer.
    Get(Request<http_body_util::Empty<Bytes>>, bool),
    /// Anything else: the bytes read so far, for hyper.
    Other(Bytes),
    /// The peer closed the socket (or it failed) before a complete head.
    Gone,
}

/// Reads until the first request head is complete (or is not a plain `GET`, or is too large).
pub(super) async fn read_first_head<I: AsyncRead + Unpin>(io: &mut I) -> FirstHead {
    let mut buf = Vec::with_capacity(1024);
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(buf.len());
        }
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return FirstHead::Gone,
            Ok(_) => {}
        }
        let mut headers = [httparse::EMPTY_HEADER; FIRST_HEAD_HEADERS];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Partial) if buf.len() < FIRST_HEAD_LIMIT => continue,
            Ok(httparse::Status::Complete(n)) if n == buf.len() => {
                return match plain_get(&parsed) {
                    Some(got) => FirstHead::Get(got.0, got.1),
                    None => FirstHead::Other(buf.into()),
                }
            }
            _ => return FirstHead::Other(buf.into()),
        }
    }
}

/// The request of a complete head when it is an HTTP/1.1 `GET` that is not an upgrade.
fn plain_get(
    parsed: &httparse::Request<'_, '_>,
) -> Option<(Request<http_body_util::Empty<Bytes>>, bool)> {
    if parsed.method != Some("GET") || parsed.version != Some(1) {
        return None;
    }
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(parsed.path?)
        .version(hyper::Version::HTTP_11);
    let mut close = false;
    for h in parsed.headers.iter() {
        let name = header::HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(h.value).ok()?;
        if name == header::UPGRADE
            || name == header::CONTENT_LENGTH
            || name == header::TRANSFER_ENCODING
            || name == header::EXPECT
        {
            return None;
        }
        if name == header::CONNECTION {
            close |= has_token(value.to_str().ok()?, "close");
        }
        req = req.header(name, value);
    }
    Some((req.body(http_body_util::Empty::new()).ok()?, close))
}

/// A socket whose first bytes were already read: they are read again first.
pub(super) struct Rewind<I> {
    pub(super) prefix: Bytes,
    pub(super) io: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            let head = self.prefix.split_to(n);
            buf.put_slice(&head);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
