//! The response body of an SSE stream: its events as they come (read from the stream's
//! mailbox through the client's lease), a keep-alive comment when idle.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use super::super::wire;
use super::connection::Lease;

/// An SSE response body: the stream's events as they come, a keep-alive comment when idle.
pub(super) struct SseBody {
    pub(super) lease: Lease,
    pub(super) keepalive: Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.lease.mailbox.poll_take(cx) {
            Poll::Ready(Some(b)) => {
                let next = tokio::time::Instant::now() + wire::SSE_KEEPALIVE_INTERVAL;
                self.keepalive.as_mut().reset(next);
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.keepalive.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let next = tokio::time::Instant::now() + wire::SSE_KEEPALIVE_INTERVAL;
                    self.keepalive.as_mut().reset(next);
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                        wire::SSE_KEEPALIVE.as_bytes(),
                    )))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
