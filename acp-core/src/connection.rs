//! The sans-IO connection: one state machine per peer, for either role.
//!
//! Inputs are `handle_*` calls (bytes from the peer, the peer's end of stream, the passing of
//! time); commands (`send_request`, `notify`, `respond`, `cancel`, `close`) queue messages;
//! outputs are drained with `poll_transmit` (bytes for the peer), `poll_event` (what the
//! application must know or do) and `poll_timeout` (the next deadline).
//!
//! **Drain rule:** after any call that mutates the connection, drain `poll_transmit` and
//! `poll_event` until they return `None`, then arm a timer for `poll_timeout`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::acp::{self, Advertised, AgentCapabilities, ClientCapabilities, Role, TurnState};
use crate::error::{CallError, Error, PeerError, PeerErrorKind};
use crate::framing::{is_blank, Decoder, Frame, DEFAULT_MAX_MESSAGE_BYTES};
use crate::jsonrpc::{
    nests_deeper_than, write_error_response, write_json, write_json_str, write_result_response,
    Classified, Envelope, ErrorCode, ErrorObject, Id, MAX_NESTING,
};

#[cfg(feature = "unstable_protocol_v2")]
mod v2;

/// Milliseconds on a clock of the caller's choosing (monotonic). The engine never reads a clock.
pub type Millis = u64;

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

/// Why the engine answered an incoming request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoAnswerReason {
    /// Its deadline passed.
    Timeout,
    /// The client sent `session/cancel` for its session (permission requests only).
    SessionCancelled,
    /// The connection closed.
    Closed,
}

impl AutoAnswerReason {
    /// A stable name: `timeout`, `sessionCancelled` or `closed` (the `reason` of the event's
    /// JSON shape).
    pub fn name(self) -> &'static str {
        match self {
            AutoAnswerReason::Timeout => "timeout",
            AutoAnswerReason::SessionCancelled => "sessionCancelled",
            AutoAnswerReason::Closed => "closed",
        }
    }
}

/// What the application must know or do.
#[derive(Debug)]
pub enum Event<T> {
    /// The peer sent a request: answer it exactly once with [`Connection::respond`] (or
    /// [`Connection::respond_error`]) using `token`.
    Request {
        /// The engine's handle of the request, unique within the connection and never reused
        /// (the peer's ids may repeat or be `null`).
        token: u64,
        /// The id the peer gave it, which the answer echoes.
        id: Id,
        /// The method name, as sent.
        method: String,
        /// The params as the peer wrote them (an object or an array); `None` when absent or
        /// `null`.
        params: Option<Box<RawValue>>,
    },
    /// The peer sent a notification (handle in order; never answered). `$/cancel_request` is
    /// not one of them: it becomes [`Event::CancelRequested`].
    Notification {
        /// The method name, as sent.
        method: String,
        /// The params as the peer wrote them (an object or an array); `None` when absent or
        /// `null`.
        params: Option<Box<RawValue>>,
    },
    /// An outgoing request completed: with a result, or with why not. Every request the
    /// connection sent completes exactly once, at the latest when the connection closes.
    Response {
        /// The id [`Connection::send_request`] (or [`Connection::send_batch`]) returned.
        id: u64,
        /// The request's method.
        method: String,
        /// The caller data of its [`RequestOptions`].
        data: T,
        /// The peer's `result`, as it wrote it, or why there is none.
        result: Result<Box<RawValue>, CallError>,
    },
    /// The engine answered an incoming request itself; a later `respond` gets
    /// [`Error::AlreadyAnswered`]. UIs should close whatever they showed for it. After
    /// [`Connection::handle_eof`] nothing is sent (the peer is gone): the request is only
    /// forgotten.
    AutoAnswered {
        /// The token of the [`Event::Request`] that was answered.
        token: u64,
        /// Its method.
        method: String,
        /// Why the engine answered it.
        reason: AutoAnswerReason,
    },
    /// The peer asked (`$/cancel_request`) to cancel this incoming request. Stop work and
    /// answer it (typically with -32800 Request cancelled). The engine does not answer it
    /// for you; a cancellation of an id that is not pending is ignored.
    CancelRequested {
        /// The token of the pending [`Event::Request`] (one event per pending request with
        /// the cancelled id).
        token: u64,
    },
    /// The peer misbehaved. Informational: the engine already answered where the protocol
    /// says so, and the stream goes on.
    ProtocolError(PeerError),
    /// The connection is closed (emitted once, last).
    Closed {
        /// The reason given to [`Connection::close`], or `"the peer closed the connection"`
        /// after [`Connection::handle_eof`].
        reason: String,
    },
}

#[derive(Debug)]
struct Outgoing<T> {
    method: String,
    data: T,
    deadline: Option<Millis>,
    timeout: Option<Millis>,
    /// `session/prompt`: the session whose turn this is.
    prompt_session: Option<String>,
}

#[derive(Debug)]
struct Incoming {
    id: Id,
    method: String,
    deadline: Option<Millis>,
    batch: Option<u64>,
    /// For `session/request_permission`: its session.
    session_id: Option<String>,
}

#[derive(Debug, Default)]
struct BatchReply {
    /// Requests of the batch not answered yet.
    remaining: usize,
    /// Serialized responses, comma-separated.
    body: Vec<u8>,
    count: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKey {
    Outgoing(u64),
    Incoming(u64),
}

/// How many recently completed outgoing ids are remembered to tell late from unknown responses.
const RECENT_IDS: usize = 4096;

/// The protocol engine for one connection. `T` is caller data carried by each outgoing request.
#[derive(Debug)]
pub struct Connection<T = ()> {
    config: Config,
    decoder: Decoder,
    out: Vec<u8>,
    events: VecDeque<Event<T>>,
    next_id: u64,
    next_token: u64,
    next_batch: u64,
    outgoing: HashMap<u64, Outgoing<T>>,
    incoming: HashMap<u64, Incoming>,
    batches: HashMap<u64, BatchReply>,
    /// Request ids of the batches we sent of which no request has been answered yet, oldest
    /// first. A peer that refuses a batch as a whole answers it with a single Invalid Request
    /// error with `id: null` (JSON-RPC 2.0, section 6); that error completes the oldest one.
    unanswered_batches: VecDeque<Vec<u64>>,
    timers: BinaryHeap<Reverse<(Millis, TimerKey)>>,
    recent: VecDeque<u64>,
    recent_set: HashSet<u64>,
    closed: Option<String>,
    advertised: Advertised,
    agent_initialize_result: Option<Box<RawValue>>,
    turns: HashMap<String, TurnState>,
    #[cfg(feature = "unstable_protocol_v2")]
    v2: v2::V2State,
}

impl<T> Connection<T> {
    /// A fresh connection: nothing sent, nothing pending. Its requests are numbered from 0.
    pub fn new(config: Config) -> Self {
        Connection {
            decoder: Decoder::new(config.max_message_bytes),
            config,
            out: Vec::new(),
            events: VecDeque::new(),
            next_id: 0,
            next_token: 0,
            next_batch: 0,
            outgoing: HashMap::new(),
            incoming: HashMap::new(),
            batches: HashMap::new(),
            unanswered_batches: VecDeque::new(),
            timers: BinaryHeap::new(),
            recent: VecDeque::new(),
            recent_set: HashSet::new(),
            closed: None,
            advertised: Advertised::default(),
            agent_initialize_result: None,
            turns: HashMap::new(),
            #[cfg(feature = "unstable_protocol_v2")]
            v2: v2::V2State::default(),
        }
    }

    /// The protocol version `initialize` settled on: 1, or 2 (ACP v2, only with the feature
    /// `unstable_protocol_v2`, when both sides offered it; see `acp_core::v2`). 1 before
    /// `initialize` completes.
    pub fn protocol_version(&self) -> u16 {
        if self.is_v2() {
            2
        } else {
            acp::PROTOCOL_VERSION
        }
    }

    #[cfg(not(feature = "unstable_protocol_v2"))]
    fn is_v2(&self) -> bool {
        false
    }

    // ----- getters -----

    /// The side this connection plays ([`Config::role`]).
    pub fn role(&self) -> Role {
        self.config.role
    }

    /// The settings the connection was created with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether the connection closed ([`Connection::close`], [`Connection::handle_eof`]).
    /// A closed connection ignores its inputs and refuses commands with
    /// [`Error::ConnectionClosed`].
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// Outgoing requests awaiting completion.
    pub fn pending_outgoing(&self) -> usize {
        self.outgoing.len()
    }

    /// Incoming requests awaiting an answer.
    pub fn pending_incoming(&self) -> usize {
        self.incoming.len()
    }

    /// The method of a pending incoming request; `None` once it is answered.
    pub fn incoming_method(&self, token: u64) -> Option<&str> {
        self.incoming.get(&token).map(|i| i.method.as_str())
    }

    /// The peer's id of a pending incoming request; `None` once it is answered.
    pub fn incoming_id(&self, token: u64) -> Option<&Id> {
        self.incoming.get(&token).map(|i| &i.id)
    }

    /// What the client advertised in `initialize`: received by an agent, sent by a client
    /// (all false before it).
    pub fn client_capabilities(&self) -> ClientCapabilities {
        self.advertised.client
    }

    /// What the agent advertised in its `initialize` result: received by a client (once it
    /// came with the protocol version this engine speaks), sent by an agent (all false before
    /// it).
    pub fn agent_capabilities(&self) -> AgentCapabilities {
        self.advertised.agent
    }

    /// Both sides' capabilities, as exchanged in `initialize`.
    pub fn advertised(&self) -> Advertised {
        self.advertised
    }

    /// Client side: the agent's `initialize` result, once it arrived with the protocol
    /// version this engine speaks (`None` on an agent connection).
    pub fn agent_initialize_result(&self) -> Option<&RawValue> {
        self.agent_initialize_result.as_deref()
    }

    /// Client side: where a session's prompt turn stands ([`TurnState::Idle`] for a session
    /// the connection has no turn of, and always on an agent connection).
    pub fn turn_state(&self, session_id: &str) -> TurnState {
        self.turns
            .get(session_id)
            .copied()
            .unwrap_or(TurnState::Idle)
    }

    // ----- outputs -----

    /// Bytes to write to the peer (complete NDJSON lines), if any: everything queued so far,
    /// in order.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        if self.out.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.out))
        }
    }

    /// Appends the bytes to write to `buf` instead of allocating; returns whether any were.
    pub fn poll_transmit_into(&mut self, buf: &mut Vec<u8>) -> bool {
        if self.out.is_empty() {
            return false;
        }
        if buf.is_empty() {
            std::mem::swap(buf, &mut self.out);
        } else {
            buf.append(&mut self.out);
        }
        true
    }

    /// The next event, oldest first; `None` when there is none left. [`Event::Closed`] is the
    /// last event a connection gives.
    pub fn poll_event(&mut self) -> Option<Event<T>> {
        self.events.pop_front()
    }

    /// The next deadline (absolute, on the clock of the `now` arguments), if any pending
    /// request has one: call [`Connection::handle_timeout`] when it comes. Deadlines of
    /// requests that completed early are not reported (hence `&mut self`: they are dropped
    /// here).
    pub fn poll_timeout(&mut self) -> Option<Millis> {
        while let Some(Reverse((at, key))) = self.timers.peek().copied() {
            if self.timer_is_live(at, key) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    /// Arms a deadline. Deadlines of requests that completed early stay in the heap until
    /// they pass; when they outnumber the pending requests, the heap is rebuilt from the live
    /// ones, so its size stays proportional to what is pending (amortized O(1) per push).
    fn push_timer(&mut self, at: Millis, key: TimerKey) {
        let pending = self.outgoing.len() + self.incoming.len();
        if self.timers.len() >= 64 && self.timers.len() > 2 * pending {
            let timers = std::mem::take(&mut self.timers);
            self.timers = timers
                .into_iter()
                .filter(|Reverse((at, key))| self.timer_is_live(*at, *key))
                .collect();
        }
        self.timers.push(Reverse((at, key)));
    }

    fn timer_is_live(&self, at: Millis, key: TimerKey) -> bool {
        match key {
            TimerKey::Outgoing(id) => self
                .outgoing
                .get(&id)
                .is_some_and(|o| o.deadline == Some(at)),
            TimerKey::Incoming(t) => self
                .incoming
                .get(&t)
                .is_some_and(|i| i.deadline == Some(at)),
        }
    }

    // ----- inputs -----

    /// Feeds bytes received from the peer (any chunking: lines may be split anywhere). Every
    /// complete line is handled at once: its events are queued and any answer the engine owes
    /// (errors for malformed messages, refusals) is queued for `poll_transmit`. `now` starts
    /// the deadlines of incoming requests. Ignored once the connection is closed.
    pub fn handle_bytes(&mut self, bytes: &[u8], now: Millis) {
        if self.closed.is_some() {
            return;
        }
        let mut decoder = std::mem::replace(&mut self.decoder, Decoder::new(1));
        decoder.decode(bytes, &mut |frame| self.handle_frame(frame, now));
        self.decoder = decoder;
    }

    /// The peer closed its side: a final unterminated line is processed, then the connection
    /// closes. Pending outgoing requests complete with [`CallError::Closed`], pending incoming
    /// ones are reported as [`Event::AutoAnswered`] (reason `closed`) without an answer, and
    /// bytes not yet taken with `poll_transmit` are discarded: there is no one to send them
    /// to. Ignored once the connection is closed.
    pub fn handle_eof(&mut self, now: Millis) {
        if self.closed.is_some() {
            return;
        }
        let mut decoder = std::mem::replace(&mut self.decoder, Decoder::new(1));
        decoder.finish(&mut |frame| self.handle_frame(frame, now));
        self.decoder = decoder;
        self.shut_down("the peer closed the connection".into(), false);
    }

    /// Fires every deadline at or before `now`: an outgoing request completes with
    /// [`CallError::TimedOut`] and the peer is sent `$/cancel_request`; an incoming one is
    /// answered by the engine ([`Event::AutoAnswered`], reason `timeout`: a permission request
    /// with `cancelled`, others with -32603). Calling it early or twice is harmless.
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some(Reverse((at, key))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            if !self.timer_is_live(at, key) {
                continue;
            }
            match key {
                TimerKey::Outgoing(id) => {
                    let after_ms = self.outgoing[&id].timeout.unwrap_or(0);
                    self.abandon_outgoing(id, CallError::TimedOut { after_ms });
                }
                TimerKey::Incoming(token) => {
                    self.auto_answer(token, AutoAnswerReason::Timeout);
                }
            }
        }
    }

    // ----- commands -----

    /// Sends a request; returns its id. `params` is any serializable value (a typed struct,
    /// a `serde_json::Value`, a `RawValue`) that serializes to an object or array, or `None`.
    /// `now` starts its deadline ([`RequestOptions::timeout`]). The request completes exactly
    /// once, as an [`Event::Response`] carrying `opts.data`.
    ///
    /// Ids are the connection's own, counting up from 0. On a client connection a
    /// `session/prompt` starts the session's turn ([`Connection::turn_state`]).
    ///
    /// # Errors
    ///
    /// Nothing is sent and no id is used when the connection is closed
    /// ([`Error::ConnectionClosed`]), `method` is empty ([`Error::InvalidMethod`]), `params`
    /// fails to serialize or is not an object or array ([`Error::InvalidParams`]), an agent
    /// calls a client method whose capability was not advertised or a client sends a
    /// `systemPrompt` the agent did not advertise ([`Error::CapabilityNotAdvertised`], with
    /// [`Config::enforce_capabilities`]; see [`acp::capabilities`], and with the feature
    /// `unstable` the draft methods' rules too), or a client sends a `session/prompt`
    /// while that session's turn is not idle ([`Error::PromptInFlight`]).
    pub fn send_request<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
        opts: RequestOptions<T>,
        now: Millis,
    ) -> Result<u64, Error> {
        self.check_can_send(method)?;
        let id = self.next_id;
        let start = self.out.len();
        self.write_request(Some(id), method, params)?;
        if let Err(err) = self.check_sent(method, start) {
            self.out.truncate(start);
            return Err(err);
        }
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_sent_request(id, method, start);
        if self.config.role == Role::Client && method == acp::agent::INITIALIZE {
            let params = acp::capabilities::member_of_message(&self.out[start..], false);
            self.advertised.client = ClientCapabilities::from_initialize_params(params.as_deref());
        }
        let prompt_session =
            if self.config.role == Role::Client && method == acp::agent::SESSION_PROMPT {
                let line = &self.out[start..];
                let session = request_params_session(line);
                if let Some(s) = &session {
                    if self.turn_state(s) != TurnState::Idle {
                        self.out.truncate(start);
                        return Err(Error::PromptInFlight {
                            session_id: s.clone(),
                        });
                    }
                    self.turns.insert(s.clone(), TurnState::Prompting);
                }
                session
            } else {
                None
            };
        self.out.push(b'\n');
        self.next_id += 1;
        let timeout = opts.timeout.or(self.config.default_request_timeout);
        let deadline = timeout.map(|t| now.saturating_add(t));
        if let Some(at) = deadline {
            self.push_timer(at, TimerKey::Outgoing(id));
        }
        self.outgoing.insert(
            id,
            Outgoing {
                method: method.to_owned(),
                data: opts.data,
                deadline,
                timeout,
                prompt_session,
            },
        );
        Ok(id)
    }

    /// Sends several requests and notifications as one JSON-RPC batch. Returns, per entry,
    /// the request id (`None` for notifications). Methods in [`acp::NOT_BATCHABLE`] are refused.
    /// A peer that refuses the batch as a whole (one -32600 error with `id: null`, as the
    /// official SDKs do) completes each of its requests with that error
    /// ([`CallError::Remote`]).
    ///
    /// Each entry is checked as [`Connection::send_request`] and [`Connection::notify`] check
    /// it, and a client's `session/cancel` entry does what `notify` does once the batch is
    /// written (the turn becomes `Cancelling`, pending permission requests of that session are
    /// answered `cancelled`).
    ///
    /// # Errors
    ///
    /// The whole batch is refused, nothing sent, when the connection is closed, `entries` is
    /// empty ([`Error::InvalidParams`]), an entry's method may not be batched
    /// ([`Error::NotAllowedInBatch`]), or an entry fails the checks of `send_request`.
    pub fn send_batch(
        &mut self,
        entries: Vec<BatchEntry<T>>,
        now: Millis,
    ) -> Result<Vec<Option<u64>>, Error> {
        if self.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        if entries.is_empty() {
            return Err(Error::InvalidParams(
                "a batch needs at least one entry".into(),
            ));
        }
        for e in &entries {
            if !self.batchable(&e.method) {
                return Err(Error::NotAllowedInBatch(e.method.clone()));
            }
            self.check_can_send(&e.method)?;
        }
        let start = self.out.len();
        self.out.push(b'[');
        let mut ids = Vec::with_capacity(entries.len());
        let mut cancelled = Vec::new();
        #[cfg(feature = "unstable_protocol_v2")]
        let mut sent_notifications = Vec::new();
        let mut next_id = self.next_id;
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let id = e.request.as_ref().map(|_| {
                next_id += 1;
                next_id - 1
            });
            let entry_start = self.out.len();
            if let Err(err) = self.write_request(id, &e.method, e.params.as_deref()) {
                self.out.truncate(start);
                return Err(err);
            }
            if let Err(err) = self.check_sent(&e.method, entry_start) {
                self.out.truncate(start);
                return Err(err);
            }
            #[cfg(feature = "unstable_protocol_v2")]
            if e.request.is_none() {
                sent_notifications.push((i, entry_start));
            }
            if self.config.role == Role::Client && e.method == acp::agent::SESSION_CANCEL {
                if let Some(session) = request_params_session(&self.out[entry_start..]) {
                    cancelled.push(session);
                }
            }
            ids.push(id);
        }
        self.out.extend_from_slice(b"]\n");
        self.next_id = next_id;
        #[cfg(feature = "unstable_protocol_v2")]
        for (i, entry_start) in sent_notifications {
            self.v2_sent(&entries[i].method, entry_start);
        }
        for session in cancelled {
            self.cancel_sent(&session);
        }
        // Batches whose requests all completed otherwise (deadline, cancel) are forgotten, so
        // a peer that never answers batches cannot make this grow.
        let outgoing = &self.outgoing;
        self.unanswered_batches
            .retain(|b| b.iter().any(|id| outgoing.contains_key(id)));
        let requests: Vec<u64> = ids.iter().flatten().copied().collect();
        if !requests.is_empty() {
            self.unanswered_batches.push_back(requests);
        }
        for (e, id) in entries.into_iter().zip(&ids) {
            if let (Some(opts), Some(id)) = (e.request, id) {
                let timeout = opts.timeout.or(self.config.default_request_timeout);
                let deadline = timeout.map(|t| now.saturating_add(t));
                if let Some(at) = deadline {
                    self.push_timer(at, TimerKey::Outgoing(*id));
                }
                self.outgoing.insert(
                    *id,
                    Outgoing {
                        method: e.method,
                        data: opts.data,
                        deadline,
                        timeout,
                        prompt_session: None,
                    },
                );
            }
        }
        Ok(ids)
    }

    /// Sends a notification. On the client side, `session/cancel` also answers every pending
    /// `session/request_permission` of that session with `cancelled`, as the spec requires
    /// ([`Event::AutoAnswered`], reason `sessionCancelled`), and moves a prompting turn to
    /// [`TurnState::Cancelling`].
    ///
    /// # Errors
    ///
    /// As [`Connection::send_request`] (but for [`Error::PromptInFlight`]); nothing is sent.
    pub fn notify<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error> {
        self.check_can_send(method)?;
        let start = self.out.len();
        self.write_request(None, method, params)?;
        if let Err(err) = self.check_sent(method, start) {
            self.out.truncate(start);
            return Err(err);
        }
        let cancelled_session =
            if self.config.role == Role::Client && method == acp::agent::SESSION_CANCEL {
                request_params_session(&self.out[start..])
            } else {
                None
            };
        self.out.push(b'\n');
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_sent(method, start);
        if let Some(session) = cancelled_session {
            self.cancel_sent(&session);
        }
        Ok(())
    }

    /// What a client's `session/cancel` for `session` does once written (alone or in a
    /// batch): a prompting turn becomes [`TurnState::Cancelling`] and every pending
    /// `session/request_permission` of that session is answered `cancelled`.
    fn cancel_sent(&mut self, session: &str) {
        if self.turn_state(session) == TurnState::Prompting {
            self.turns.insert(session.to_owned(), TurnState::Cancelling);
        }
        let mut tokens: Vec<u64> = self
            .incoming
            .iter()
            .filter(|(_, i)| {
                i.method == acp::client::SESSION_REQUEST_PERMISSION
                    && i.session_id.as_deref() == Some(session)
            })
            .map(|(t, _)| *t)
            .collect();
        tokens.sort_unstable();
        for t in tokens {
            self.auto_answer(t, AutoAnswerReason::SessionCancelled);
        }
    }

    /// Answers an incoming request with a result (any value serializing to JSON). The answer
    /// to a request that came in a batch is held until every request of the batch is
    /// answered, then sent as one array.
    ///
    /// # Errors
    ///
    /// [`Error::ConnectionClosed`]; [`Error::AlreadyAnswered`] for a token answered before (by
    /// the application or the engine); [`Error::UnknownToken`] for a token never issued;
    /// [`Error::InvalidParams`] when `result` fails to serialize, in which case nothing is
    /// sent and the request stays pending, to be answered again.
    pub fn respond<R: Serialize + ?Sized>(&mut self, token: u64, result: &R) -> Result<(), Error> {
        if self.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        if !self.incoming.contains_key(&token) {
            return Err(self.unknown_token(token));
        }
        let invalid = |e: serde_json::Error| Error::InvalidParams(e.to_string());
        let inc = &self.incoming[&token];
        match inc.batch {
            None => {
                // Alone: written straight into the output (a large result is not built aside
                // and copied, which held it twice).
                let start = self.out.len();
                write_result_response(&mut self.out, &inc.id, result).map_err(invalid)?;
                #[cfg(feature = "unstable_protocol_v2")]
                {
                    let method = inc.method.clone();
                    if let Err(e) = self.v2_check_answer(token, &method, start) {
                        self.out.truncate(start);
                        return Err(e);
                    }
                }
                let inc = &self.incoming[&token];
                if self.config.role == Role::Agent && inc.method == acp::agent::INITIALIZE {
                    self.advertised.agent =
                        acp::capabilities::member_of_message(&self.out[start..], true)
                            .map(|r| AgentCapabilities::from_initialize_result(&r))
                            .unwrap_or_default();
                }
                self.out.push(b'\n');
            }
            Some(b) => {
                let mut msg = Vec::with_capacity(64);
                write_result_response(&mut msg, &inc.id, result).map_err(invalid)?;
                self.emit_response(Some(b), msg);
            }
        }
        self.incoming.remove(&token);
        Ok(())
    }

    /// Answers an incoming request with an error (batched answers are held as for
    /// [`Connection::respond`]).
    ///
    /// # Errors
    ///
    /// [`Error::ConnectionClosed`], [`Error::AlreadyAnswered`], [`Error::UnknownToken`], as
    /// for `respond`.
    pub fn respond_error(&mut self, token: u64, error: ErrorObject) -> Result<(), Error> {
        if self.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        let Some(inc) = self.incoming.remove(&token) else {
            return Err(self.unknown_token(token));
        };
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_forget_incoming(token);
        let mut msg = Vec::new();
        write_error_response(&mut msg, &inc.id, &error);
        self.emit_response(inc.batch, msg);
        Ok(())
    }

    /// Cancels an outgoing request: it completes with [`CallError::Cancelled`] and the peer
    /// is sent `$/cancel_request`. A response arriving later is reported as late and dropped.
    ///
    /// # Errors
    ///
    /// [`Error::ConnectionClosed`]; [`Error::UnknownRequest`] when no request with this id is
    /// pending (never sent, or already completed).
    pub fn cancel(&mut self, id: u64) -> Result<(), Error> {
        if self.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        if !self.outgoing.contains_key(&id) {
            return Err(Error::UnknownRequest(id));
        }
        self.abandon_outgoing(id, CallError::Cancelled);
        Ok(())
    }

    /// Closes the connection: pending incoming requests are answered (permission requests with
    /// `cancelled`, others with an error), pending outgoing requests complete with
    /// [`CallError::Closed`], and [`Event::Closed`] is emitted. Drain `poll_transmit` once more
    /// to flush the answers. Closing a closed connection does nothing.
    pub fn close(&mut self, reason: &str) {
        if self.closed.is_some() {
            return;
        }
        self.shut_down(reason.to_owned(), true);
    }

    // ----- internals -----

    fn check_can_send(&self, method: &str) -> Result<(), Error> {
        if self.closed.is_some() {
            return Err(Error::ConnectionClosed);
        }
        if method.is_empty() {
            return Err(Error::InvalidMethod(method.to_owned()));
        }
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_check_method(method)?;
        // v1's capability rules read v1's capability objects; v2 connections have their own.
        if self.is_v2() {
            #[cfg(feature = "unstable_protocol_v2")]
            self.v2_check_can_send(method)?;
            return Ok(());
        }
        if self.config.role == Role::Agent && self.config.enforce_capabilities {
            if let Some(cap) = acp::required_client_capability(method) {
                if !self.advertised.client.allows(cap) {
                    return Err(Error::CapabilityNotAdvertised {
                        method: method.to_owned(),
                        capability: cap,
                    });
                }
            }
        }
        #[cfg(feature = "unstable")]
        if self.config.enforce_capabilities {
            use crate::unstable::{required_agent_capability, AUTH_STATUS_UPDATE};
            // A client's request needs the agent's capability; the agent's own
            // `auth/status_update` needs what it advertised itself.
            let gated = match self.config.role {
                Role::Client => method != AUTH_STATUS_UPDATE,
                Role::Agent => method == AUTH_STATUS_UPDATE,
            };
            if let (true, Some(cap)) = (gated, required_agent_capability(method)) {
                if !self.advertised.agent.allows(cap) {
                    return Err(Error::CapabilityNotAdvertised {
                        method: method.to_owned(),
                        capability: cap,
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks a message just written at `out[start..]` against what its params need: an
    /// agent's `session/update` of a kind the client did not advertise, a client's
    /// `systemPrompt` (and with the feature `unstable`, initial `configOptions`) the agent did
    /// not advertise.
    fn check_sent(&self, method: &str, start: usize) -> Result<(), Error> {
        #[cfg(feature = "unstable_protocol_v2")]
        if self.is_v2() {
            return self.v2_check_sent(method, start);
        }
        if !self.config.enforce_capabilities {
            return Ok(());
        }
        let message = &self.out[start..];
        let missing = match self.config.role {
            Role::Agent if method == acp::client::SESSION_UPDATE => {
                acp::capabilities::missing_for_update_message(&self.advertised.client, message)
            }
            Role::Client if acp::SYSTEM_PROMPT_METHODS.contains(&method) => {
                let missing =
                    acp::capabilities::missing_for_system_prompt(&self.advertised.agent, message);
                #[cfg(feature = "unstable")]
                let missing = missing.or_else(|| {
                    (crate::unstable::CONFIG_OPTIONS_METHODS.contains(&method)
                        && !self.advertised.agent.session_options
                        && crate::unstable::sends_config_options(message))
                    .then_some("sessionCapabilities.options")
                });
                missing
            }
            _ => None,
        };
        match missing {
            Some(capability) => Err(Error::CapabilityNotAdvertised {
                method: method.to_owned(),
                capability,
            }),
            None => Ok(()),
        }
    }

    /// Writes a request or notification object (no newline) to `out`.
    fn write_request<P: Serialize + ?Sized>(
        &mut self,
        id: Option<u64>,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error> {
        let start = self.out.len();
        self.out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",");
        if let Some(id) = id {
            self.out.extend_from_slice(b"\"id\":");
            self.out
                .extend_from_slice(itoa_u64(id, &mut [0u8; 20]).as_bytes());
            self.out.push(b',');
        }
        self.out.extend_from_slice(b"\"method\":");
        write_json_str(&mut self.out, method);
        if let Some(p) = params {
            self.out.extend_from_slice(b",\"params\":");
            let pstart = self.out.len();
            if let Err(e) = write_json(&mut self.out, p) {
                self.out.truncate(start);
                return Err(Error::InvalidParams(e.to_string()));
            }
            match self.out.get(pstart) {
                Some(b'{') | Some(b'[') => {}
                _ => {
                    self.out.truncate(start);
                    return Err(Error::InvalidParams(
                        "params must serialize to a JSON object or array".into(),
                    ));
                }
            }
        }
        self.out.push(b'}');
        Ok(())
    }

    fn unknown_token(&self, token: u64) -> Error {
        // Tokens are issued in order and forgotten once answered.
        if token < self.next_token {
            Error::AlreadyAnswered(token)
        } else {
            Error::UnknownToken(token)
        }
    }

    /// Queues one serialized response (no newline): alone, or into its batch's reply.
    fn emit_response(&mut self, batch: Option<u64>, msg: Vec<u8>) {
        match batch {
            None => {
                self.out.extend_from_slice(&msg);
                self.out.push(b'\n');
            }
            Some(b) => {
                let reply = self
                    .batches
                    .get_mut(&b)
                    .expect("batch of a pending request");
                if reply.count > 0 {
                    reply.body.push(b',');
                }
                reply.body.extend_from_slice(&msg);
                reply.count += 1;
                reply.remaining -= 1;
                if reply.remaining == 0 {
                    self.finish_batch(b);
                }
            }
        }
    }

    fn finish_batch(&mut self, b: u64) {
        let reply = self.batches.remove(&b).expect("batch exists");
        // Never an empty array: an all-notification batch gets nothing at all.
        if reply.count > 0 {
            self.out.push(b'[');
            self.out.extend_from_slice(&reply.body);
            self.out.extend_from_slice(b"]\n");
        }
    }

    fn record_recent(&mut self, id: u64) {
        if self.recent.len() == RECENT_IDS {
            if let Some(old) = self.recent.pop_front() {
                self.recent_set.remove(&old);
            }
        }
        self.recent.push_back(id);
        self.recent_set.insert(id);
    }

    /// Completes an outgoing request locally (timeout, cancel) and tells the peer.
    fn abandon_outgoing(&mut self, id: u64, why: CallError) {
        let Some(o) = self.outgoing.remove(&id) else {
            return;
        };
        self.out.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":",
        );
        self.out
            .extend_from_slice(itoa_u64(id, &mut [0u8; 20]).as_bytes());
        self.out.extend_from_slice(b"}}\n");
        self.complete(id, o, Err(why));
    }

    fn complete(&mut self, id: u64, o: Outgoing<T>, result: Result<Box<RawValue>, CallError>) {
        self.record_recent(id);
        // In v2 the prompt's answer only acknowledges it: an idle state_update ends the turn.
        if let Some(s) = o
            .prompt_session
            .as_ref()
            .filter(|_| !(self.is_v2() && result.is_ok()))
        {
            self.turns.remove(s);
        }
        self.events.push_back(Event::Response {
            id,
            method: o.method,
            data: o.data,
            result,
        });
    }

    fn auto_answer(&mut self, token: u64, reason: AutoAnswerReason) {
        let Some(inc) = self.incoming.remove(&token) else {
            return;
        };
        let mut msg = Vec::new();
        if inc.method == acp::client::SESSION_REQUEST_PERMISSION {
            let raw: &RawValue =
                serde_json::from_str(acp::PERMISSION_CANCELLED_RESULT).expect("valid JSON");
            write_result_response(&mut msg, &inc.id, raw).expect("raw values serialize");
        } else {
            let error = match reason {
                AutoAnswerReason::Timeout => {
                    ErrorObject::new(ErrorCode::InternalError, "request was not answered in time")
                        .with_data(serde_json::json!({ "reason": "timeout" }))
                }
                AutoAnswerReason::SessionCancelled => {
                    ErrorObject::from_code(ErrorCode::RequestCancelled)
                }
                AutoAnswerReason::Closed => {
                    ErrorObject::new(ErrorCode::InternalError, "connection closing")
                        .with_data(serde_json::json!({ "reason": "closed" }))
                }
            };
            write_error_response(&mut msg, &inc.id, &error);
        }
        self.emit_response(inc.batch, msg);
        self.events.push_back(Event::AutoAnswered {
            token,
            method: inc.method,
            reason,
        });
    }

    fn shut_down(&mut self, reason: String, answer_incoming: bool) {
        let mut tokens: Vec<u64> = self.incoming.keys().copied().collect();
        tokens.sort_unstable();
        for t in tokens {
            if answer_incoming {
                self.auto_answer(t, AutoAnswerReason::Closed);
            } else if let Some(inc) = self.incoming.remove(&t) {
                self.events.push_back(Event::AutoAnswered {
                    token: t,
                    method: inc.method,
                    reason: AutoAnswerReason::Closed,
                });
            }
        }
        if !answer_incoming {
            self.out.clear();
        }
        self.batches.clear();
        self.unanswered_batches.clear();
        let mut ids: Vec<u64> = self.outgoing.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let o = self.outgoing.remove(&id).expect("listed");
            self.complete(
                id,
                o,
                Err(CallError::Closed {
                    reason: reason.clone(),
                }),
            );
        }
        self.timers.clear();
        self.turns.clear();
        self.closed = Some(reason.clone());
        self.events.push_back(Event::Closed { reason });
    }

    fn protocol_error(&mut self, kind: PeerErrorKind, message: String) {
        self.events
            .push_back(Event::ProtocolError(PeerError { kind, message }));
    }

    fn handle_frame(&mut self, frame: Frame<'_>, now: Millis) {
        match frame {
            Frame::Oversize { limit, prefix } => self.handle_oversize(limit, prefix),
            Frame::Line(line) => {
                if is_blank(line) {
                    return;
                }
                self.handle_line(line, now);
            }
        }
    }

    /// A line over the limit was skipped. When its first bytes show it was a request, the
    /// error echoes its id so the sender's request completes; when it was a response to one of
    /// ours, that request completes with an error instead of waiting for its deadline.
    fn handle_oversize(&mut self, limit: usize, prefix: &[u8]) {
        let error = crate::sniff::oversize_error(limit);
        let message = error.message.clone();
        let sniffed = crate::sniff::sniff(prefix);
        let pending = sniffed
            .response_id()
            .and_then(Id::as_u64)
            .and_then(|n| self.outgoing.remove(&n).map(|o| (n, o)));
        if let Some((n, o)) = pending {
            self.complete(
                n,
                o,
                Err(CallError::InvalidResponse {
                    reason: message.clone(),
                }),
            );
        } else {
            let id = sniffed.request_id().cloned().unwrap_or(Id::Null);
            let mut msg = Vec::new();
            write_error_response(&mut msg, &id, &error);
            self.emit_response(None, msg);
        }
        self.protocol_error(PeerErrorKind::Oversize, message);
    }

    fn handle_line(&mut self, line: &[u8], now: Millis) {
        if nests_deeper_than(line, MAX_NESTING) {
            let details = format!("nesting deeper than {MAX_NESTING} levels");
            let mut msg = Vec::new();
            write_error_response(
                &mut msg,
                &Id::Null,
                &ErrorObject::from_code(ErrorCode::ParseError)
                    .with_data(serde_json::json!({ "details": details })),
            );
            self.emit_response(None, msg);
            self.protocol_error(PeerErrorKind::ParseError, details);
            return;
        }
        let first = line
            .iter()
            .copied()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .unwrap_or(b' ');
        if first == b'[' {
            self.handle_batch(line, now);
            return;
        }
        // UTF-8 is checked once for the whole line, so serde reads it as `str` and does not
        // re-check every string and raw value; invalid UTF-8 is left to serde for its message.
        let parsed = match std::str::from_utf8(line) {
            Ok(text) => {
                if let Some(plain) = Classified::plain_notification(text) {
                    self.handle_message(plain, None, now);
                    return;
                }
                serde_json::from_str::<Envelope<'_>>(text)
            }
            Err(_) => serde_json::from_slice::<Envelope<'_>>(line),
        };
        match parsed {
            Ok(env) => {
                let classified = env.classify();
                self.handle_message(classified, None, now);
            }
            Err(e) => self.reject_unparsable(e, None),
        }
    }

    /// Answers a line that did not parse: -32700 for bad JSON, -32600 for valid JSON of the
    /// wrong shape.
    fn reject_unparsable(&mut self, e: serde_json::Error, batch: Option<u64>) {
        let details = describe_json_error(&e);
        let (code, kind) = if e.is_data() {
            (ErrorCode::InvalidRequest, PeerErrorKind::InvalidRequest)
        } else {
            (ErrorCode::ParseError, PeerErrorKind::ParseError)
        };
        let mut msg = Vec::new();
        write_error_response(
            &mut msg,
            &Id::Null,
            &ErrorObject::from_code(code).with_data(serde_json::json!({ "details": details })),
        );
        self.emit_response_unbatched(batch, msg);
        self.protocol_error(kind, details);
    }

    /// Like `emit_response`, for error entries that are not tracked requests: a batch entry is
    /// appended to the batch's reply without counting as a pending request.
    fn emit_response_unbatched(&mut self, batch: Option<u64>, msg: Vec<u8>) {
        match batch {
            None => {
                self.out.extend_from_slice(&msg);
                self.out.push(b'\n');
            }
            Some(b) => {
                let reply = self.batches.get_mut(&b).expect("batch being read");
                if reply.count > 0 {
                    reply.body.push(b',');
                }
                reply.body.extend_from_slice(&msg);
                reply.count += 1;
            }
        }
    }

    fn handle_batch(&mut self, line: &[u8], now: Millis) {
        /// The entries of a batch, at most `cap` of them kept; the others are counted and
        /// skipped unbuilt (a refused batch costs no more than its line).
        struct CappedEntries {
            cap: usize,
        }
        impl<'de> serde::de::DeserializeSeed<'de> for CappedEntries {
            type Value = (Vec<&'de RawValue>, usize);
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(self)
            }
        }
        impl<'de> serde::de::Visitor<'de> for CappedEntries {
            type Value = (Vec<&'de RawValue>, usize);
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                let mut total = 0;
                while total < self.cap {
                    match seq.next_element::<&'de RawValue>()? {
                        Some(e) => entries.push(e),
                        None => return Ok((entries, total)),
                    }
                    total += 1;
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    total += 1;
                }
                Ok((entries, total))
            }
        }

        let seed = CappedEntries {
            cap: self.config.max_batch_entries,
        };
        let parsed = match std::str::from_utf8(line) {
            Ok(text) => {
                let mut de = serde_json::Deserializer::from_str(text);
                serde::de::DeserializeSeed::deserialize(seed, &mut de)
                    .and_then(|v| de.end().map(|()| v))
            }
            Err(_) => {
                let mut de = serde_json::Deserializer::from_slice(line);
                serde::de::DeserializeSeed::deserialize(seed, &mut de)
                    .and_then(|v| de.end().map(|()| v))
            }
        };
        let (entries, total) = match parsed {
            Ok(v) => v,
            Err(e) => {
                // Invalid JSON: a single Parse error (rule 1).
                self.reject_unparsable(e, None);
                return;
            }
        };
        let too_many;
        if entries.is_empty()
            || total > self.config.max_batch_entries
            || self.config.batch_policy == BatchPolicy::RejectAll
        {
            let message = if entries.is_empty() {
                "empty batch"
            } else if total > self.config.max_batch_entries {
                too_many = format!(
                    "a batch of {total} entries is over the limit of {}",
                    self.config.max_batch_entries
                );
                &too_many
            } else {
                "batches are not accepted"
            };
            let mut msg = Vec::new();
            write_error_response(
                &mut msg,
                &Id::Null,
                &ErrorObject::new(ErrorCode::InvalidRequest, message),
            );
            self.emit_response(None, msg);
            self.protocol_error(PeerErrorKind::InvalidRequest, message.into());
            return;
        }
        let b = self.next_batch;
        self.next_batch += 1;
        // `remaining` starts at 1, a guard so the reply cannot complete while entries are
        // still being read (a request answered synchronously by the engine, say).
        self.batches.insert(
            b,
            BatchReply {
                remaining: 1,
                ..Default::default()
            },
        );
        for entry in entries {
            // serde reads a struct from an array too (positionally): `["2.0",1,"m"]` would
            // pass for a request, so only objects are let through.
            let parsed = if entry.get().starts_with('{') {
                serde_json::from_str::<Envelope<'_>>(entry.get())
                    .map_err(|e| describe_json_error(&e))
            } else {
                Err(NOT_AN_OBJECT.to_owned())
            };
            match parsed {
                Ok(env) => self.handle_message(env.classify(), Some(b), now),
                Err(details) => {
                    // An entry that is not an object: its own Invalid Request (id null).
                    let mut msg = Vec::new();
                    write_error_response(
                        &mut msg,
                        &Id::Null,
                        &ErrorObject::from_code(ErrorCode::InvalidRequest)
                            .with_data(serde_json::json!({ "details": details })),
                    );
                    self.emit_response_unbatched(Some(b), msg);
                    self.protocol_error(PeerErrorKind::InvalidRequest, details);
                }
            }
        }
        let reply = self.batches.get_mut(&b).expect("batch being read");
        reply.remaining -= 1;
        if reply.remaining == 0 {
            self.finish_batch(b);
        }
    }

    fn handle_message(&mut self, msg: Classified<'_>, batch: Option<u64>, now: Millis) {
        match msg {
            Classified::Request { id, method, params } => {
                self.handle_request(id, method, params, batch, now)
            }
            Classified::Notification { method, params } => self.handle_notification(method, params),
            Classified::Response { id, outcome } => {
                self.handle_response(id, outcome, batch.is_none())
            }
            Classified::BadResponse { id, reason } => {
                match id
                    .as_u64()
                    .and_then(|n| self.outgoing.remove(&n).map(|o| (n, o)))
                {
                    Some((n, o)) => {
                        self.protocol_error(
                            PeerErrorKind::InvalidRequest,
                            format!("invalid response to request {n}: {reason}"),
                        );
                        self.complete(n, o, Err(CallError::InvalidResponse { reason }));
                    }
                    None => {
                        let mut out = Vec::new();
                        write_error_response(
                            &mut out,
                            &Id::Null,
                            &ErrorObject::new(ErrorCode::InvalidRequest, reason.clone()),
                        );
                        self.emit_response_unbatched(batch, out);
                        self.protocol_error(PeerErrorKind::InvalidRequest, reason);
                    }
                }
            }
            Classified::Invalid { id, reason } => {
                // Alone, the id is echoed when it could be read, so the sender's request
                // completes; inside a batch, seed 002 asks for `id: null`.
                let id = if batch.is_some() { Id::Null } else { id };
                let mut out = Vec::new();
                write_error_response(
                    &mut out,
                    &id,
                    &ErrorObject::new(ErrorCode::InvalidRequest, reason.clone()),
                );
                self.emit_response_unbatched(batch, out);
                self.protocol_error(PeerErrorKind::InvalidRequest, reason);
            }
        }
    }

    fn handle_request(
        &mut self,
        id: Id,
        method: String,
        params: Option<&RawValue>,
        batch: Option<u64>,
        now: Millis,
    ) {
        if batch.is_some() && !self.batchable(&method) {
            // Seed 002: these change which later messages are valid, so a batch holding them
            // is ambiguous. That entry alone is refused (with its id, so the peer can match
            // it); the rest of the batch is processed.
            let message = format!("{method} must be sent on its own, not inside a batch");
            let mut out = Vec::new();
            write_error_response(
                &mut out,
                &id,
                &ErrorObject::new(ErrorCode::InvalidRequest, message.clone()),
            );
            self.emit_response_unbatched(batch, out);
            self.protocol_error(PeerErrorKind::NotAllowedInBatch, message);
            return;
        }
        #[cfg(feature = "unstable_protocol_v2")]
        if self.v2_refuse_request(&id, &method, params, batch) {
            return;
        }
        #[cfg(feature = "unstable")]
        if self.config.role == Role::Agent && self.config.enforce_capabilities && !self.is_v2() {
            if let Some(cap) = crate::unstable::required_agent_capability(&method) {
                if !self.advertised.agent.allows(cap) {
                    // Not advertised: the method does not exist for this client.
                    let message = format!("{method} needs the agent capability {cap}, which this agent did not advertise");
                    let mut out = Vec::new();
                    write_error_response(
                        &mut out,
                        &id,
                        &ErrorObject::new(ErrorCode::MethodNotFound, message.clone()),
                    );
                    self.emit_response_unbatched(batch, out);
                    self.protocol_error(PeerErrorKind::CapabilityNotAdvertised, message);
                    return;
                }
            }
        }
        if self.incoming.len() >= self.config.max_incoming_in_flight {
            let message = format!(
                "too many requests in flight (at most {})",
                self.config.max_incoming_in_flight
            );
            let mut out = Vec::new();
            write_error_response(
                &mut out,
                &id,
                &ErrorObject::new(ErrorCode::InternalError, message.clone()),
            );
            self.emit_response_unbatched(batch, out);
            self.protocol_error(PeerErrorKind::TooManyRequests, message);
            return;
        }
        let token = self.next_token;
        self.next_token += 1;
        let is_permission = method == acp::client::SESSION_REQUEST_PERMISSION;
        let session_id = if is_permission {
            acp::session_id_of(params.map(RawValue::get))
        } else {
            None
        };
        if self.config.role == Role::Agent && method == acp::agent::INITIALIZE {
            self.advertised.client =
                ClientCapabilities::from_initialize_params(params.map(RawValue::get));
        }
        let timeout = if is_permission {
            self.config
                .permission_timeout
                .or(self.config.incoming_request_timeout)
        } else {
            self.config.incoming_request_timeout
        };
        let deadline = timeout.map(|t| now.saturating_add(t));
        if let Some(at) = deadline {
            self.push_timer(at, TimerKey::Incoming(token));
        }
        if let Some(b) = batch {
            self.batches
                .get_mut(&b)
                .expect("batch being read")
                .remaining += 1;
        }
        self.incoming.insert(
            token,
            Incoming {
                id: id.clone(),
                method: method.clone(),
                deadline,
                batch,
                session_id,
            },
        );
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_received_request(token, &method, params.map(RawValue::get));
        self.events.push_back(Event::Request {
            token,
            id,
            method,
            params: params.map(ToOwned::to_owned),
        });
    }

    fn handle_notification(&mut self, method: String, params: Option<&RawValue>) {
        if method == acp::CANCEL_REQUEST {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct P {
                request_id: Id,
            }
            if let Some(p) = params.and_then(|p| serde_json::from_str::<P>(p.get()).ok()) {
                let mut hits: Vec<u64> = self
                    .incoming
                    .iter()
                    .filter(|(_, i)| i.id == p.request_id)
                    .map(|(t, _)| *t)
                    .collect();
                hits.sort_unstable();
                for token in hits {
                    self.events.push_back(Event::CancelRequested { token });
                }
            }
            // Unknown or malformed cancellations are ignored, as the spec asks.
            return;
        }
        #[cfg(feature = "unstable_protocol_v2")]
        if self.is_v2()
            && self.config.role == Role::Client
            && method == acp::client::SESSION_UPDATE
            && !self.v2_received_update(params)
        {
            return;
        }
        if self.config.role == Role::Client && self.config.enforce_capabilities && !self.is_v2() {
            let missing = if method == acp::client::SESSION_UPDATE {
                params.and_then(|p| {
                    acp::capabilities::missing_for_update(
                        &self.advertised.client,
                        p.get().as_bytes(),
                    )
                    .map(|cap| ("client", cap))
                })
            } else {
                #[cfg(feature = "unstable")]
                let missing = (method == crate::unstable::AUTH_STATUS_UPDATE
                    && !self.advertised.agent.auth_status)
                    .then_some(("agent", "auth.status"));
                #[cfg(not(feature = "unstable"))]
                let missing = None;
                missing
            };
            if let Some((side, cap)) = missing {
                let dropped = acp::capabilities::client_drops(cap);
                let what = if dropped {
                    "dropped"
                } else {
                    "delivered anyway"
                };
                self.protocol_error(
                    PeerErrorKind::CapabilityNotAdvertised,
                    format!("{method} needs the {side} capability {cap}, which was not advertised; {what}"),
                );
                if dropped {
                    return;
                }
            }
        }
        self.events.push_back(Event::Notification {
            method,
            params: params.map(ToOwned::to_owned),
        });
    }

    /// `alone`: the response is a line of its own (not an entry of a batch reply).
    fn handle_response(&mut self, id: Id, outcome: Result<&RawValue, ErrorObject>, alone: bool) {
        let pending = id
            .as_u64()
            .and_then(|n| self.outgoing.remove(&n).map(|o| (n, o)));
        let Some((n, o)) = pending else {
            if id == Id::Null && alone && !self.unanswered_batches.is_empty() {
                if let Err(e) = &outcome {
                    if e.code == ErrorCode::InvalidRequest.code() {
                        // The peer refused our oldest unanswered batch as a whole: nothing in
                        // it was processed, so each of its requests fails with that error now
                        // rather than at its deadline.
                        let ids = self.unanswered_batches.pop_front().expect("non-empty");
                        for n in ids {
                            if let Some(o) = self.outgoing.remove(&n) {
                                self.complete(n, o, Err(CallError::Remote(e.clone())));
                            }
                        }
                        return;
                    }
                }
            }
            if id == Id::Null {
                let message = match &outcome {
                    Err(e) => format!("peer reported an error: {e}"),
                    Ok(r) => format!("peer sent a result with id null: {}", r.get()),
                };
                self.protocol_error(PeerErrorKind::ErrorWithoutId, message);
            } else if id.as_u64().is_some_and(|n| self.recent_set.contains(&n)) {
                self.protocol_error(
                    PeerErrorKind::LateResponse,
                    format!("response for request {id} which already completed; dropped"),
                );
            } else {
                self.protocol_error(
                    PeerErrorKind::UnknownResponseId,
                    format!("response with unknown id {id}; dropped"),
                );
            }
            return;
        };
        if !self.unanswered_batches.is_empty() {
            // An answer to one of a batch's requests: the peer took that batch.
            self.unanswered_batches.retain(|b| !b.contains(&n));
        }
        let result = match outcome {
            Ok(raw) => {
                if self.config.role == Role::Client && o.method == acp::agent::INITIALIZE {
                    match acp::protocol_version_of(raw.get()) {
                        Some(v) if self.accepts_protocol_version(&v) => {
                            self.advertised.agent =
                                AgentCapabilities::from_initialize_result(raw.get());
                            self.agent_initialize_result = Some(raw.to_owned());
                            Ok(raw.to_owned())
                        }
                        Some(v) => Err(CallError::UnsupportedProtocolVersion { version: v }),
                        None => Err(CallError::InvalidResponse {
                            reason: "initialize result lacks protocolVersion".into(),
                        }),
                    }
                } else {
                    Ok(raw.to_owned())
                }
            }
            Err(e) => Err(CallError::Remote(e)),
        };
        #[cfg(feature = "unstable_protocol_v2")]
        self.v2_received_response(n, &o, &result);
        self.complete(n, o, result);
    }

    /// Whether a client takes the protocol version of the agent's `initialize` result (1; and
    /// with the feature `unstable_protocol_v2`, 2 when it asked for it).
    fn accepts_protocol_version(&mut self, version: &serde_json::Value) -> bool {
        #[cfg(feature = "unstable_protocol_v2")]
        return self.v2_accepts_version(version);
        #[cfg(not(feature = "unstable_protocol_v2"))]
        return version.as_u64() == Some(u64::from(acp::PROTOCOL_VERSION));
    }
}

/// One entry of an outgoing batch ([`Connection::send_batch`]).
#[derive(Debug)]
pub struct BatchEntry<T> {
    /// The method name; not one of [`acp::NOT_BATCHABLE`].
    pub method: String,
    /// The params as JSON text: an object or an array, or `None`.
    pub params: Option<Box<RawValue>>,
    /// `Some` for a request (its options), `None` for a notification.
    pub request: Option<RequestOptions<T>>,
}

/// Why a batch entry that is not a JSON object is refused.
const NOT_AN_OBJECT: &str = "a batch entry must be a JSON-RPC message object";

impl<T> Connection<T> {
    /// Whether `method` may travel inside a batch on this connection: [`is_batchable`], and on
    /// a v2 connection not one of v2's lifecycle messages (`v2::capabilities::NOT_BATCHABLE`).
    fn batchable(&self, method: &str) -> bool {
        #[cfg(feature = "unstable_protocol_v2")]
        if self.is_v2() && crate::v2::capabilities::NOT_BATCHABLE.contains(&method) {
            return false;
        }
        is_batchable(method)
    }
}

/// Whether `method` may travel inside a batch: not one of [`acp::NOT_BATCHABLE`] (nor, with
/// the feature `unstable`, of `unstable::NOT_BATCHABLE`).
fn is_batchable(method: &str) -> bool {
    #[cfg(feature = "unstable")]
    if crate::unstable::NOT_BATCHABLE.contains(&method) {
        return false;
    }
    !acp::NOT_BATCHABLE.contains(&method)
}

/// serde's message, in the protocol's words.
fn describe_json_error(e: &serde_json::Error) -> String {
    e.to_string()
        .replace("struct Envelope", "a JSON-RPC message object")
}

/// Reads `params.sessionId` from a serialized request object.
fn request_params_session(line: &[u8]) -> Option<String> {
    let env: Envelope<'_> = serde_json::from_slice(line).ok()?;
    acp::session_id_of(env.params.map(RawValue::get))
}

fn itoa_u64(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).expect("digits are ASCII")
}

impl<T> Event<T> {
    /// The event as a JSON object in the language-neutral shape shared by the conformance
    /// vectors and the wasm build (`type`, then the fields; see `acp-wasm/API.md`). Caller
    /// data is not included. It is [`Event::write_json`]'s text, parsed: one definition of the
    /// shape, pinned field by field by the vectors in `tests/vectors/`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json_string()).expect("Event::write_json writes valid JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A result that cannot be serialized is refused without a byte of it in the output, and
    /// the request can still be answered.
    #[test]
    fn a_result_that_fails_to_serialize_leaves_nothing_behind() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::{Error as _, SerializeMap};
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("partial", "output")?;
                Err(S::Error::custom("no JSON form"))
            }
        }
        let mut agent: Connection = Connection::new(Config::new(Role::Agent));
        agent.handle_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x/y\"}\n", 0);
        let Some(Event::Request { token, .. }) = agent.poll_event() else {
            panic!("request expected")
        };
        assert!(matches!(
            agent.respond(token, &Fails),
            Err(Error::InvalidParams(m)) if m.contains("no JSON form")
        ));
        assert!(agent.poll_transmit().is_none(), "nothing half-written");
        agent.respond(token, &json!({"ok": true})).unwrap();
        assert_eq!(
            agent.poll_transmit().unwrap(),
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n"
        );
    }

    /// Requests answered long before their deadlines do not pile up in the timer heap.
    #[test]
    fn stale_deadlines_do_not_accumulate() {
        let mut client: Connection = Connection::new(Config::new(Role::Client));
        let mut agent_cfg = Config::new(Role::Agent);
        agent_cfg.incoming_request_timeout = Some(60_000);
        let mut agent: Connection = Connection::new(agent_cfg);
        for i in 0..10_000u64 {
            let opts = RequestOptions::default().timeout(60_000);
            client
                .send_request("x/ping", Some(&json!({})), opts, i)
                .unwrap();
            agent.handle_bytes(&client.poll_transmit().unwrap(), i);
            let Some(Event::Request { token, .. }) = agent.poll_event() else {
                panic!("request expected")
            };
            agent.respond(token, &json!({})).unwrap();
            client.handle_bytes(&agent.poll_transmit().unwrap(), i);
            assert!(matches!(client.poll_event(), Some(Event::Response { .. })));
            assert!(
                client.timers.len() <= 130,
                "client heap {}",
                client.timers.len()
            );
            assert!(
                agent.timers.len() <= 130,
                "agent heap {}",
                agent.timers.len()
            );
        }
        assert_eq!(client.poll_timeout(), None);
        assert_eq!(agent.poll_timeout(), None);
    }
}
