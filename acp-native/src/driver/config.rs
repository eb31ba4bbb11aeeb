//! [`DriverConfig`]: the settings of one driven connection.

use std::time::Duration;

use acp_core::{Config, Millis, Role};

#[cfg(doc)] // (for links in the docs)
use super::{reserve_answer_bytes, AnswerBudgetError, ConnectionHandle};

/// Settings of one driven connection.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// The engine's settings (role, timeouts, limits).
    pub core: Config,
    /// Bytes queued for the transport and not yet written above which local commands wait.
    /// 1 MiB.
    pub write_high_water: usize,
    /// Above this many unwritten bytes the driver also stops reading (bounds what a peer that
    /// floods us without reading our answers can make us buffer). 16 MiB.
    pub read_pause_bytes: usize,
    /// Notifications queued for the in-order notification handler before reading pauses. 1024.
    pub notification_buffer: usize,
    /// Bytes (of params) of the notifications queued for the in-order notification handler
    /// above which reading pauses too: the count alone lets 1024 large notifications pile up
    /// behind a slow handler. 64 MiB (one notification larger than that is still taken).
    pub notification_bytes: usize,
    /// Local commands queued for the driver (beyond that, senders wait). 64.
    pub command_buffer: usize,
    /// Size of one transport read. 64 KiB.
    pub read_chunk: usize,
    /// On the transport's EOF, how long to wait for [`ConnectionHandle::close_with_reason`]
    /// before closing with a generic reason. Zero (close at once).
    pub eof_grace: Duration,
    /// On the transport's EOF (the peer closed its end, a half-close), how long the requests
    /// already received may still be answered before the connection closes: it closes as soon
    /// as the last one is answered, or at this deadline (the rest then get the engine's
    /// "connection closing" treatment). Calls the handlers make to the peer meanwhile cannot be
    /// answered any more and wait until the close. An agent: 5 s (so that `printf request |
    /// agent` answers); a client: zero (an agent that closed its stdout is gone).
    pub answer_on_eof: Duration,
    /// Bytes of answers to the peer's requests that handlers may hold reservations for at once
    /// ([`reserve_answer_bytes`]): reserved before a large answer is built, given back once it
    /// is written to the transport. 64 MiB.
    pub answer_budget: usize,
    /// A waiting reservation of the answer budget fails ([`AnswerBudgetError`]) once output
    /// has been unwritten with no progress of the writer for this long (the peer does not
    /// read). 10 s.
    pub answer_stall: Duration,
}

impl DriverConfig {
    /// The defaults for `role` (each field's doc gives its value), around [`Config::new`]`(role)`.
    pub fn new(role: Role) -> Self {
        DriverConfig::with_core(Config::new(role))
    }

    /// The defaults around the engine settings `core`; [`answer_on_eof`](Self::answer_on_eof)
    /// follows `core.role`.
    pub fn with_core(core: Config) -> Self {
        let answer_on_eof = match core.role {
            Role::Agent => Duration::from_secs(5),
            Role::Client => Duration::ZERO,
        };
        DriverConfig {
            answer_on_eof,
            core,
            write_high_water: 1 << 20,
            read_pause_bytes: 16 << 20,
            notification_buffer: 1024,
            notification_bytes: 64 << 20,
            command_buffer: 64,
            read_chunk: 64 << 10,
            eof_grace: Duration::ZERO,
            answer_budget: 64 << 20,
            answer_stall: Duration::from_secs(10),
        }
    }

    /// Sets the deadline for outgoing requests that set none.
    pub fn default_request_timeout(mut self, d: Duration) -> Self {
        self.core.default_request_timeout = Some(duration_ms(d));
        self
    }

    /// See [`DriverConfig::eof_grace`].
    pub fn eof_grace(mut self, d: Duration) -> Self {
        self.eof_grace = d;
        self
    }

    /// See [`DriverConfig::answer_on_eof`].
    pub fn answer_on_eof(mut self, d: Duration) -> Self {
        self.answer_on_eof = d;
        self
    }

    /// See [`DriverConfig::write_high_water`].
    pub fn write_high_water(mut self, bytes: usize) -> Self {
        self.write_high_water = bytes;
        self
    }

    /// See [`DriverConfig::notification_buffer`] (at least 1).
    pub fn notification_buffer(mut self, n: usize) -> Self {
        self.notification_buffer = n.max(1);
        self
    }

    /// See [`DriverConfig::notification_bytes`].
    pub fn notification_bytes(mut self, bytes: usize) -> Self {
        self.notification_bytes = bytes;
        self
    }

    /// See [`DriverConfig::answer_budget`] (at least 1 byte).
    pub fn answer_budget(mut self, bytes: usize) -> Self {
        self.answer_budget = bytes.max(1);
        self
    }

    /// See [`DriverConfig::answer_stall`].
    pub fn answer_stall(mut self, d: Duration) -> Self {
        self.answer_stall = d;
        self
    }
}

/// Milliseconds of a duration, rounded up (a deadline of 0.5 ms is not "now").
pub(crate) fn duration_ms(d: Duration) -> Millis {
    let ms = d.as_millis();
    let ms = if Duration::from_millis(ms as u64) < d {
        ms + 1
    } else {
        ms
    };
    ms.min(u128::from(u64::MAX)) as Millis
}
