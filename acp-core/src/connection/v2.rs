//! The connection's ACP v2 rules (feature `unstable_protocol_v2`; what they are: [`crate::v2`]):
//! version negotiation in `initialize`, the removed methods, checked updates, the turn ended by
//! an idle `state_update`, the replay order of `session/resume`, and v2's capability rules
//! ([`v2::capabilities`]: read from `initialize`, held both ways with
//! [`Config::enforce_capabilities`](crate::Config::enforce_capabilities); a prompt's
//! idempotency key is checked always).
//!
//! Memory: the replays under way are one entry per `session/resume` with `replayFrom` still in
//! flight (our outgoing requests, or the peer's requests, at most
//! [`Config::max_incoming_in_flight`](crate::Config::max_incoming_in_flight)); entries of
//! requests that completed are dropped whenever a new one is added.

use serde_json::value::RawValue;

use super::{Connection, Outgoing};
use crate::acp::{self, capabilities::member, Role, TurnState};
use crate::error::{CallError, Error, PeerErrorKind};
use crate::jsonrpc::{write_error_response, ErrorCode, ErrorObject, Id};
use crate::v2;
use crate::v2::cancel::{self, Cancellable, Refusal};
use crate::v2::capabilities::{self as caps, AgentCapabilities, ClientCapabilities};

/// Where a connection stands with v2.
#[derive(Debug, Default)]
pub(super) struct V2State {
    /// The negotiated version: 2 once `initialize` settled on v2, else v1's rules apply.
    version: u16,
    /// Client: the version our `initialize` asked for. Agent: the version the client asked for.
    offered: u16,
    /// `session/resume` requests with `replayFrom` in flight (client: by outgoing id; agent: by
    /// incoming token).
    replays: Vec<Replay>,
    /// What the agent advertised in its v2 `initialize` result (sent or received).
    agent: AgentCapabilities,
    /// What the client advertised in its v2 `initialize` params (sent or received).
    client: ClientCapabilities,
    /// The tool calls and terminals that advertise `capabilities.cancel` now (from the
    /// updates sent or received; bounded, [`v2::cancel`]).
    cancellable: Cancellable,
}

#[derive(Debug)]
struct Replay {
    key: u64,
    session: String,
    complete: bool,
}

/// Whether a message written at `out[start..]` is a request (it has an `id`).
fn has_id(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
    }
    serde_json::from_slice::<Head<'_>>(message).is_ok_and(|h| h.id.is_some())
}

/// The session a `session/close` or `session/delete` (params as JSON text) ends.
fn ended_session(method: &str, params: Option<&str>) -> Option<String> {
    matches!(method, "session/close" | "session/delete")
        .then(|| acp::session_id_of(params))
        .flatten()
}

fn version_of(json: Option<&str>) -> u16 {
    json.and_then(|j| member(j, "protocolVersion"))
        .and_then(|v| v.get().parse::<u16>().ok())
        .unwrap_or(0)
}

impl<T> Connection<T> {
    /// Whether ACP v2 was negotiated on this connection.
    pub(super) fn is_v2(&self) -> bool {
        self.v2.version == v2::PROTOCOL_VERSION
    }

    /// A local call of a method v2 removed, on a v2 connection.
    pub(super) fn v2_check_method(&self, method: &str) -> Result<(), Error> {
        match v2::removed_method(method) {
            Some(why) if self.is_v2() => Err(Error::ProtocolVersionRule(why)),
            _ => Ok(()),
        }
    }

    /// A local call on a v2 connection: a client's call of a method surface the agent did not
    /// advertise ([`caps::required_agent_capability`]).
    pub(super) fn v2_check_can_send(&self, method: &str) -> Result<(), Error> {
        if self.config.role != Role::Client || !self.config.enforce_capabilities {
            return Ok(());
        }
        match caps::required_agent_capability(method) {
            Some(cap) if !self.v2.agent.allows(cap) => Err(Error::CapabilityNotAdvertised {
                method: method.to_owned(),
                capability: cap,
            }),
            _ => Ok(()),
        }
    }

    /// Checks a message we just wrote at `out[start..]`: a client's params against the agent's
    /// capabilities and its prompt's idempotency key; an agent's `elicitation/create` mode; an
    /// agent's `session/update` (and its `replay_complete` needs a replay under way).
    pub(super) fn v2_check_sent(&self, method: &str, start: usize) -> Result<(), Error> {
        let enforce = self.config.enforce_capabilities;
        let params =
            || acp::capabilities::member_of_message(&self.out[start..], false).unwrap_or_default();
        let refuse = |cap: &'static str| Error::CapabilityNotAdvertised {
            method: method.to_owned(),
            capability: cap,
        };
        if cancel::is_cancel_method(method) {
            let from_agent = self.config.role == Role::Agent;
            if let Some(why) = cancel::misuse(method, from_agent, has_id(&self.out[start..])) {
                return Err(Error::ProtocolVersionRule(why));
            }
            if !enforce {
                return Ok(());
            }
            return match self.v2.cancellable.check(method, &params()) {
                Ok(()) => Ok(()),
                Err(Refusal::Malformed(why)) => Err(Error::InvalidParams(why)),
                Err(Refusal::NotCancellable(why)) => Err(Error::ProtocolVersionRule(why)),
            };
        }
        match self.config.role {
            Role::Client if !caps::reads_params(method) => return Ok(()),
            Role::Client => {
                let params = params();
                if method == acp::agent::SESSION_PROMPT {
                    caps::check_idempotency_key(&params).map_err(Error::InvalidParams)?;
                }
                if enforce {
                    if let Some(cap) = caps::missing_for_params(&self.v2.agent, method, &params) {
                        return Err(refuse(cap));
                    }
                }
                return Ok(());
            }
            Role::Agent if method == acp::client::ELICITATION_CREATE && enforce => {
                return match self.v2.client.missing_for_elicitation(&params()) {
                    Some(cap) => Err(refuse(cap)),
                    None => Ok(()),
                };
            }
            Role::Agent if method != acp::client::SESSION_UPDATE => return Ok(()),
            Role::Agent => {}
        }
        let params =
            acp::capabilities::member_of_message(&self.out[start..], false).unwrap_or_default();
        let update = v2::check_update(&params, true).map_err(Error::ProtocolVersionRule)?;
        if update.kind == v2::REPLAY_COMPLETE
            && !self
                .v2
                .replays
                .iter()
                .any(|r| r.session == update.session_id && !r.complete)
        {
            return Err(Error::ProtocolVersionRule(format!(
                "replay_complete for session {} answers no session/resume with replayFrom",
                update.session_id
            )));
        }
        Ok(())
    }

    /// After an agent's `session/update` at `out[start..]` went out: a `replay_complete` ends
    /// the oldest replay under way for its session; a tool call or terminal may become
    /// cancellable or stop being so.
    pub(super) fn v2_sent(&mut self, method: &str, start: usize) {
        if !self.is_v2() || self.config.role != Role::Agent || method != acp::client::SESSION_UPDATE
        {
            return;
        }
        let Some(params) = acp::capabilities::member_of_message(&self.out[start..], false) else {
            return;
        };
        if let Ok(update) = v2::check_update(&params, true) {
            if update.kind == v2::REPLAY_COMPLETE {
                self.mark_replayed(&update.session_id);
            }
            self.v2.cancellable.observe(&params);
        }
    }

    fn mark_replayed(&mut self, session: &str) -> bool {
        match self
            .v2
            .replays
            .iter_mut()
            .find(|r| r.session == session && !r.complete)
        {
            Some(r) => {
                r.complete = true;
                true
            }
            None => false,
        }
    }

    /// After our request `id` at `out[start..]` was written: the version a client's
    /// `initialize` asks for; a v2 client's `session/resume` with `replayFrom`.
    pub(super) fn v2_sent_request(&mut self, id: u64, method: &str, start: usize) {
        if self.config.role != Role::Client {
            return;
        }
        if method == acp::agent::INITIALIZE {
            let params = acp::capabilities::member_of_message(&self.out[start..], false);
            self.v2.offered = version_of(params.as_deref());
            self.v2.client =
                ClientCapabilities::from_initialize_params(&params.unwrap_or_default());
        } else if self.is_v2() && matches!(method, "session/close" | "session/delete") {
            let params = acp::capabilities::member_of_message(&self.out[start..], false);
            if let Some(session) = ended_session(method, params.as_deref()) {
                self.v2.cancellable.forget_session(&session);
            }
        } else if self.is_v2() && method == acp::agent::SESSION_RESUME {
            let params = acp::capabilities::member_of_message(&self.out[start..], false);
            if let Some(p) = params.filter(|p| v2::asks_replay(p)) {
                if let Some(session) = acp::session_id_of(Some(&p)) {
                    let outgoing = &self.outgoing;
                    self.v2.replays.retain(|r| outgoing.contains_key(&r.key));
                    self.v2.replays.push(Replay {
                        key: id,
                        session,
                        complete: false,
                    });
                }
            }
        }
    }

    /// A peer's request on a v2 connection that breaks v2's rules, answered with an error and
    /// reported: a method v2 removed (-32601); with capabilities enforced, a method surface the
    /// agent did not advertise (-32601), params that need a capability it did not advertise
    /// (-32602), an `elicitation/create` mode the client did not advertise (-32602); a
    /// malformed idempotency key (-32602, always: v2 says agents MUST reject it). Returns
    /// whether it was refused.
    pub(super) fn v2_refuse_request(
        &mut self,
        id: &Id,
        method: &str,
        params: Option<&RawValue>,
        batch: Option<u64>,
    ) -> bool {
        if !self.is_v2() {
            return false;
        }
        let params = params.map_or("", RawValue::get);
        let enforce = self.config.enforce_capabilities;
        let not_advertised = |side: &str, cap: &str| {
            format!("{method} needs the {side} capability {cap}, which was not advertised")
        };
        let refusal = if let Some(message) = v2::removed_method(method) {
            Some((
                ErrorCode::MethodNotFound,
                PeerErrorKind::ProtocolVersionRule,
                message,
            ))
        } else {
            match self.config.role {
                Role::Agent => {
                    let surface = caps::required_agent_capability(method)
                        .filter(|cap| enforce && !self.v2.agent.allows(cap));
                    let content = || {
                        caps::missing_for_params(&self.v2.agent, method, params).filter(|_| enforce)
                    };
                    if let Some(cap) = surface {
                        Some((
                            ErrorCode::MethodNotFound,
                            PeerErrorKind::CapabilityNotAdvertised,
                            not_advertised("agent", cap),
                        ))
                    } else if let Some(cap) = content() {
                        Some((
                            ErrorCode::InvalidParams,
                            PeerErrorKind::CapabilityNotAdvertised,
                            not_advertised("agent", cap),
                        ))
                    } else if method == acp::agent::SESSION_PROMPT {
                        caps::check_idempotency_key(params).err().map(|why| {
                            (
                                ErrorCode::InvalidParams,
                                PeerErrorKind::ProtocolVersionRule,
                                why,
                            )
                        })
                    } else if cancel::is_cancel_method(method) && enforce {
                        match self.v2.cancellable.check(method, params) {
                            Ok(()) => None,
                            Err(Refusal::Malformed(why)) => {
                                Some((ErrorCode::InvalidParams, PeerErrorKind::InvalidRequest, why))
                            }
                            Err(Refusal::NotCancellable(why)) => Some((
                                ErrorCode::InvalidParams,
                                PeerErrorKind::CapabilityNotAdvertised,
                                why,
                            )),
                        }
                    } else {
                        None
                    }
                }
                Role::Client if cancel::is_cancel_method(method) => {
                    cancel::misuse(method, true, true).map(|why| {
                        (
                            ErrorCode::MethodNotFound,
                            PeerErrorKind::ProtocolVersionRule,
                            why,
                        )
                    })
                }
                Role::Client if method == acp::client::ELICITATION_CREATE && enforce => {
                    self.v2.client.missing_for_elicitation(params).map(|cap| {
                        (
                            ErrorCode::InvalidParams,
                            PeerErrorKind::CapabilityNotAdvertised,
                            not_advertised("client", cap),
                        )
                    })
                }
                Role::Client => None,
            }
        };
        let Some((code, kind, message)) = refusal else {
            return false;
        };
        let mut out = Vec::new();
        write_error_response(&mut out, id, &ErrorObject::new(code, message.clone()));
        self.emit_response_unbatched(batch, out);
        self.protocol_error(kind, message);
        true
    }

    /// A peer's request the agent accepted as `token`: the version the client asked for; a
    /// `session/resume` with `replayFrom`.
    pub(super) fn v2_received_request(&mut self, token: u64, method: &str, params: Option<&str>) {
        if self.config.role != Role::Agent {
            return;
        }
        if method == acp::agent::INITIALIZE {
            self.v2.offered = version_of(params);
            self.v2.client = ClientCapabilities::from_initialize_params(params.unwrap_or(""));
        } else if let Some(session) = ended_session(method, params).filter(|_| self.is_v2()) {
            self.v2.cancellable.forget_session(&session);
        } else if self.is_v2() && method == acp::agent::SESSION_RESUME {
            if let Some(p) = params.filter(|p| v2::asks_replay(p)) {
                if let Some(session) = acp::session_id_of(Some(p)) {
                    let incoming = &self.incoming;
                    self.v2.replays.retain(|r| incoming.contains_key(&r.key));
                    self.v2.replays.push(Replay {
                        key: token,
                        session,
                        complete: false,
                    });
                }
            }
        }
    }

    /// Checks an agent's answer to `token` written at `out[start..]`: the version of its
    /// `initialize` answer (v2 only when the client asked for it; settles the version), a v2
    /// `session/prompt` answer's `messageId`, a `session/resume` answered before its
    /// `replay_complete`.
    pub(super) fn v2_check_answer(
        &mut self,
        token: u64,
        method: &str,
        start: usize,
    ) -> Result<(), Error> {
        if self.config.role != Role::Agent {
            return Ok(());
        }
        if method == acp::agent::INITIALIZE {
            let result = acp::capabilities::member_of_message(&self.out[start..], true);
            let answered = version_of(result.as_deref());
            if answered == v2::PROTOCOL_VERSION {
                if self.v2.offered < v2::PROTOCOL_VERSION {
                    return Err(Error::ProtocolVersionRule(format!(
                        "the client asked for protocol version {}: answer it (or 1), not 2",
                        self.v2.offered
                    )));
                }
                let result = result.unwrap_or_default();
                if let Some(cap) = self
                    .v2
                    .client
                    .missing_for_initialize_result(&result)
                    .filter(|_| self.config.enforce_capabilities)
                {
                    return Err(Error::CapabilityNotAdvertised {
                        method: acp::agent::INITIALIZE.to_owned(),
                        capability: cap,
                    });
                }
                self.v2.agent = AgentCapabilities::from_initialize_result(&result);
                self.v2.version = v2::PROTOCOL_VERSION;
            } else {
                self.v2.version = 0;
            }
            return Ok(());
        }
        if !self.is_v2() {
            return Ok(());
        }
        if method == acp::agent::SESSION_PROMPT {
            let result =
                acp::capabilities::member_of_message(&self.out[start..], true).unwrap_or_default();
            let has_id = member(&result, "messageId").is_some_and(|v| v.get().starts_with('"'));
            if !has_id {
                return Err(Error::ProtocolVersionRule(
                    "a v2 session/prompt answer acknowledges the prompt with its messageId (a string); the turn ends with an idle state_update".into(),
                ));
            }
        }
        if let Some(i) = self.v2.replays.iter().position(|r| r.key == token) {
            if !self.v2.replays[i].complete {
                return Err(Error::ProtocolVersionRule(format!(
                    "send replay_complete for session {} before answering its session/resume",
                    self.v2.replays[i].session
                )));
            }
            self.v2.replays.remove(i);
        }
        Ok(())
    }

    /// An incoming request answered otherwise (an error): its replay, if any, is over.
    pub(super) fn v2_forget_incoming(&mut self, token: u64) {
        if self.config.role == Role::Agent {
            self.v2.replays.retain(|r| r.key != token);
        }
    }

    /// A `session/update` received by a v2 client: checked (a bad one is reported and
    /// dropped: returns false), its state drives the session's turn, its `replay_complete`
    /// ends a replay under way.
    pub(super) fn v2_received_update(&mut self, params: Option<&RawValue>) -> bool {
        let checked = v2::check_update(params.map_or("", RawValue::get), false);
        let update = match checked {
            Ok(u) => u,
            Err(why) => {
                self.protocol_error(
                    PeerErrorKind::ProtocolVersionRule,
                    format!("{why}; dropped"),
                );
                return false;
            }
        };
        if update.kind == v2::REPLAY_COMPLETE && !self.mark_replayed(&update.session_id) {
            self.protocol_error(
                PeerErrorKind::ProtocolVersionRule,
                format!(
                    "replay_complete for session {} answers no session/resume with replayFrom; dropped",
                    update.session_id
                ),
            );
            return false;
        }
        if let Some(p) = params {
            self.v2.cancellable.observe(p.get());
        }
        match update.state.as_deref() {
            Some("idle") => {
                self.turns.remove(&update.session_id);
            }
            Some(_) => {
                self.turns
                    .entry(update.session_id)
                    .or_insert(TurnState::Prompting);
            }
            None => {}
        }
        true
    }

    /// A peer's notification of a per-item cancellation on a v2 connection: not a cancellation
    /// (a request from the client is), reported and dropped. Returns whether it was dropped.
    pub(super) fn v2_refuse_notification(&mut self, method: &str) -> bool {
        if !self.is_v2() {
            return false;
        }
        let from_agent = self.config.role == Role::Client;
        match cancel::misuse(method, from_agent, false) {
            Some(why) => {
                self.protocol_error(
                    PeerErrorKind::ProtocolVersionRule,
                    format!("{why}; dropped"),
                );
                true
            }
            None => false,
        }
    }

    /// The agent's `initialize` result `raw` reports `version` and we asked for
    /// `self.v2.offered`: whether a client accepts it (v1 always; v2 only when asked for),
    /// settling the connection's version.
    pub(super) fn v2_accepts_version(&mut self, version: &serde_json::Value) -> bool {
        match version.as_u64() {
            Some(1) => {
                self.v2.version = 0;
                true
            }
            Some(2) if self.v2.offered >= v2::PROTOCOL_VERSION => {
                self.v2.version = v2::PROTOCOL_VERSION;
                true
            }
            _ => false,
        }
    }

    /// A response to our request `o` (id `n`) on a v2 client: the agent's capabilities from a
    /// v2 `initialize` result (a `terminal` auth method offered to a client without
    /// `auth.terminal` is reported); a `session/resume` answered before its `replay_complete`
    /// is reported (the replay was truncated).
    pub(super) fn v2_received_response(
        &mut self,
        n: u64,
        o: &Outgoing<T>,
        result: &Result<Box<RawValue>, CallError>,
    ) {
        if let (true, Ok(raw)) = (o.method == acp::agent::INITIALIZE && self.is_v2(), result) {
            self.v2.agent = AgentCapabilities::from_initialize_result(raw.get());
            let missing = self.v2.client.missing_for_initialize_result(raw.get());
            if let Some(cap) = missing.filter(|_| self.config.enforce_capabilities) {
                self.protocol_error(
                    PeerErrorKind::CapabilityNotAdvertised,
                    format!("initialize offers an auth method that needs the client capability {cap}, which was not advertised"),
                );
            }
        }
        let Some(i) = self.v2.replays.iter().position(|r| r.key == n) else {
            return;
        };
        let replay = self.v2.replays.remove(i);
        if result.is_ok() && !replay.complete && o.method == acp::agent::SESSION_RESUME {
            self.protocol_error(
                PeerErrorKind::ProtocolVersionRule,
                format!(
                    "session/resume of session {} answered before its replay_complete: the replay is truncated",
                    replay.session
                ),
            );
        }
    }
}
