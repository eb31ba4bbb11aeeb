//! An SSE stream's queue of events (`Mailbox`), read by at most one client at a time (its
//! `Lease`, connection.rs; the response body, body.rs).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

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
    /// The client reading it is gone: another may take it.
    pub(super) fn release(&self) {
        let mut s = self.state.lock().unwrap();
        s.leased = false;
        s.waker = None;
    }

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
    pub(super) fn poll_take(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
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
