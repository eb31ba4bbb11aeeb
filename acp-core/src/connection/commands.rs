//! The connection's commands: requests, batches, notifications, answers, cancel, close; the
//! checks a local message passes before it is queued.

use super::*;

impl<T> Connection<T> {
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
    pub(super) fn cancel_sent(&mut self, session: &str) {
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

    pub(super) fn check_can_send(&self, method: &str) -> Result<(), Error> {
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
    pub(super) fn check_sent(&self, method: &str, start: usize) -> Result<(), Error> {
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
    pub(super) fn write_request<P: Serialize + ?Sized>(
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

impl<T> Connection<T> {
    /// Whether `method` may travel inside a batch on this connection: [`is_batchable`], and on
    /// a v2 connection not one of v2's lifecycle messages (`v2::capabilities::NOT_BATCHABLE`).
    pub(super) fn batchable(&self, method: &str) -> bool {
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
