//! The SSE streams of a connection: a mailbox per stream, the lease of the one client reading
//! it, and the response body that reads it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::Frame;

use super::super::wire;
use super::connection::HttpConn;

/// At most this much of a backlog goes out in one SSE write.
const SSE_WRITE_CHUNK: usize = 64 << 10;

/// A queue of SSE events for one stream, read by at most one client at a time.
pub(super) struct Mailbox {
    state: Mutex<MailboxState>,
    pub(super) backlog: Arc<AtomicUsize>,
}

#[derive(Default)]
struct MailboxState {
    pub(super) queue: VecDeque<Bytes>,
    leased: bool,
    pub(super) closed: bool,
    waker: Option<Waker>,
}

impl Mailbox {
    /// An empty mailbox counting its bytes in its connection's `backlog`.
    pub(super) fn new(backlog: Arc<AtomicUsize>) -> Mailbox {
        Mailbox {
            state: Mutex::new(MailboxState::default()),
            backlog,
        }
    }

    /// Queues one event (its bytes already counted in the backlog).
    pub(super) fn push(&self, event: Bytes) {
        let mut s = self.state.lock().unwrap();
        s.queue.push_back(event);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// No more events: the reader ends after what is queued.
    pub(super) fn close(&self) {
        let mut s = self.state.lock().unwrap();
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// Takes the one reader's place; false when a reader has it.
    pub(super) fn lease(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        !std::mem::replace(&mut s.leased, true)
    }

    /// Whether a client reads this stream now.
    pub(super) fn is_leased(&self) -> bool {
        self.state.lock().unwrap().leased
    }

    /// The queued events (up to [`SSE_WRITE_CHUNK`] bytes at once), `None` once closed and
    /// drained.
    fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut s = self.state.lock().unwrap();
        let Some(first) = s.queue.pop_front() else {
            if s.closed {
                return Poll::Ready(None);
            }
            s.waker = Some(cx.waker().clone());
            return Poll::Pending;
        };
        let out = if s
            .queue
            .front()
            .is_some_and(|b| first.len() + b.len() <= SSE_WRITE_CHUNK)
        {
            let mut buf = bytes::BytesMut::from(&first[..]);
            while let Some(next) = s.queue.front() {
                if buf.len() + next.len() > SSE_WRITE_CHUNK {
                    break;
                }
                let next = s.queue.pop_front().unwrap();
                buf.extend_from_slice(&next);
            }
            buf.freeze()
        } else {
            first
        };
        drop(s);
        self.backlog.fetch_sub(out.len(), Ordering::Relaxed);
        Poll::Ready(Some(out))
    }
}

/// One client reading one stream.
pub(super) struct Lease {
    pub(super) conn: Arc<HttpConn>,
    pub(super) mailbox: Arc<Mailbox>,
    pub(super) session: Option<String>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut s = self.mailbox.state.lock().unwrap();
            s.leased = false;
            s.waker = None;
        }
        self.conn.readers.fetch_sub(1, Ordering::Relaxed);
        self.conn.touch();
        // A stream for a session the agent never named exists only while a client holds it.
        if let Some(session) = &self.session {
            let mut routes = self.conn.routes.lock().unwrap();
            if routes
                .sessions
                .get(session)
                .is_some_and(|s| !s.confirmed && Arc::ptr_eq(&s.mailbox, &self.mailbox))
            {
                routes.sessions.remove(session);
            }
        }
    }
}

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
