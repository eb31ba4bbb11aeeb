//! The connection's settings: its role, limits, deadlines and batch policy; per-request options.

use super::*;

/// How received JSON-RPC batches (arrays) are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchPolicy {
    /// The JSON-RPC 2.0 batch rules, as seed 002 states them (the default).
    #[default]
    Seed,
    /// Answer any array with one Invalid Request (what the official TypeScript 2.4 and Rust
    /// 5.0 SDKs do).
    RejectAll,
}

/// Connection settings. `Config::new(role)` gives the safe defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which side this connection plays. It decides which ACP rules apply: an agent's calls
    /// are checked against the client's capabilities; a client tracks prompt turns, checks the
    /// agent's `initialize` result and answers permission requests on `session/cancel`.
    pub role: Role,
    /// Largest message accepted, in bytes (one line, without its line ending); larger lines
    /// are skipped and answered ([`PeerErrorKind::Oversize`]). 64 MiB.
    pub max_message_bytes: usize,
    /// How received batches are treated. [`BatchPolicy::Seed`] by default.
    pub batch_policy: BatchPolicy,
    /// Deadline, in milliseconds after it is sent, for every outgoing request that does not
    /// set its own ([`RequestOptions::timeout`]). None by default.
    pub default_request_timeout: Option<Millis>,
    /// Incoming requests not answered within this many milliseconds of their arrival are
    /// answered by the engine (-32603 with `data.reason` `"timeout"`; a permission request
    /// `cancelled`) and reported as [`Event::AutoAnswered`]. None by default.
    pub incoming_request_timeout: Option<Millis>,
    /// Incoming `session/request_permission` not answered within this are answered
    /// `cancelled`. Overrides `incoming_request_timeout` for that method. None by default.
    pub permission_timeout: Option<Millis>,
    /// At most this many incoming requests may await an answer; more are refused (-32603,
    /// [`PeerErrorKind::TooManyRequests`]). 1024.
    pub max_incoming_in_flight: usize,
    /// A received batch with more entries than this is refused as a whole (one Invalid
    /// Request, `id: null`) without reading its entries: each entry can cost an answer and an
    /// event, so a line of a few MB (`[0,0,…]`) would otherwise cost hundreds. 1024.
    pub max_batch_entries: usize,
    /// Both sides hold to the capabilities `initialize` exchanged ([`acp::capabilities`]: an
    /// agent's `fs/*`, `terminal/*` and gated `session/update` kinds, a client's
    /// `systemPrompt`; with the feature `unstable`, the draft methods' rules too,
    /// `acp_core::unstable`).
    pub enforce_capabilities: bool,
}

impl Config {
    /// The defaults for `role`: 64 MiB messages, the seed batch rules, at most 1024 incoming
    /// requests in flight and 1024 entries per batch, capabilities enforced, and no deadlines.
    pub fn new(role: Role) -> Self {
        Config {
            role,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            batch_policy: BatchPolicy::Seed,
            default_request_timeout: None,
            incoming_request_timeout: None,
            permission_timeout: None,
            max_incoming_in_flight: 1024,
            max_batch_entries: 1024,
            enforce_capabilities: true,
        }
    }
}

/// Per-request options of an outgoing request.
#[derive(Debug, Clone)]
pub struct RequestOptions<T> {
    /// Deadline in milliseconds after the request is sent; `None` uses
    /// [`Config::default_request_timeout`]. When it passes, the request completes with
    /// [`CallError::TimedOut`] and the peer is sent `$/cancel_request`.
    pub timeout: Option<Millis>,
    /// The caller's data, handed back in the request's [`Event::Response`].
    pub data: T,
}

impl<T: Default> Default for RequestOptions<T> {
    fn default() -> Self {
        RequestOptions {
            timeout: None,
            data: T::default(),
        }
    }
}

impl<T> RequestOptions<T> {
    /// Options carrying `data`, with the config's default deadline.
    pub fn with_data(data: T) -> Self {
        RequestOptions {
            timeout: None,
            data,
        }
    }

    /// Sets the deadline: `ms` milliseconds after the request is sent.
    pub fn timeout(mut self, ms: Millis) -> Self {
        self.timeout = Some(ms);
        self
    }
}
