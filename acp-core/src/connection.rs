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

mod commands;
mod config;
mod event;
mod incoming;
#[cfg(feature = "unstable_protocol_v2")]
mod v2;

pub use commands::BatchEntry;
pub use config::{BatchPolicy, Config, RequestOptions};
pub use event::{AutoAnswerReason, Event};

/// Milliseconds on a clock of the caller's choosing (monotonic). The engine never reads a clock.
pub type Millis = u64;

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
}

impl<T> Connection<T> {
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
