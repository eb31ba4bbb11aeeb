//! The output queue: bytes the engine produced and the transport has not taken yet.

use std::collections::VecDeque;

use acp_core::Connection;
use tokio::sync::OwnedSemaphorePermit;

/// Output below this size is appended to the previous unwritten buffer (one write for many
/// small messages); larger output is queued as its own buffer (never copied).
const COALESCE: usize = 64 << 10;
/// A written buffer up to this capacity is kept for the next output; larger ones are freed.
const RETAIN: usize = 256 << 10;

/// Bytes the engine produced and the transport has not taken yet.
#[derive(Default)]
pub(super) struct Output {
    pub(super) bufs: VecDeque<Vec<u8>>,
    /// Bytes of `bufs[0]` already written.
    pub(super) pos: usize,
    /// Unwritten bytes in all of `bufs`.
    pub(super) len: usize,
    /// An empty buffer to swap with the engine's output buffer (no copy).
    pub(super) spare: Vec<u8>,
    /// Bytes ever queued / written (offsets for `held`).
    pub(super) queued_total: u64,
    pub(super) written_total: u64,
    /// Reservations of the answer budget, each given back once `written_total` reaches its
    /// offset (the end of its answer).
    pub(super) held: VecDeque<(u64, OwnedSemaphorePermit)>,
}

impl Output {
    /// Takes what the engine has to send.
    pub(super) fn take_from(&mut self, conn: &mut Connection<u64>) {
        if !conn.poll_transmit_into(&mut self.spare) {
            return;
        }
        let fresh = std::mem::take(&mut self.spare);
        self.len += fresh.len();
        self.queued_total += fresh.len() as u64;
        match self.bufs.back_mut() {
            Some(back) if fresh.len() < COALESCE && back.len() < COALESCE => {
                back.extend_from_slice(&fresh);
                self.recycle(fresh);
            }
            _ => self.bufs.push_back(fresh),
        }
    }

    fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.spare.capacity() < buf.capacity() && buf.capacity() <= RETAIN {
            buf.clear();
            self.spare = buf;
        }
    }

    /// Holds `reserved` until everything queued so far is written.
    pub(super) fn hold_until_written(&mut self, reserved: OwnedSemaphorePermit) {
        if self.len > 0 {
            self.held.push_back((self.queued_total, reserved));
        }
    }

    /// `n` more bytes of the first buffer were written.
    pub(super) fn advance(&mut self, n: usize) {
        self.pos += n;
        self.len -= n;
        self.written_total += n as u64;
        while self
            .held
            .front()
            .is_some_and(|(end, _)| *end <= self.written_total)
        {
            self.held.pop_front();
        }
        if self.bufs.front().is_some_and(|b| self.pos >= b.len()) {
            self.pos = 0;
            let done = self.bufs.pop_front().expect("checked");
            self.recycle(done);
        }
    }

    pub(super) fn clear(&mut self) {
        self.bufs.clear();
        self.pos = 0;
        self.len = 0;
        self.written_total = self.queued_total;
        self.held.clear();
    }
}

pub(super) fn write_zero() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::WriteZero,
        "failed to write whole buffer",
    )
}
