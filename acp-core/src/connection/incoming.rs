//! What the peer sends: frames and lines, batches, requests, notifications and responses, each
//! checked and turned into events, answers or protocol errors.

use super::*;

/// Why a batch entry that is not a JSON object is refused.
const NOT_AN_OBJECT: &str = "a batch entry must be a JSON-RPC message object";

impl<T> Connection<T> {
    pub(super) fn handle_frame(&mut self, frame: Frame<'_>, now: Millis) {
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
    pub(super) fn handle_oversize(&mut self, limit: usize, prefix: &[u8]) {
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

    pub(super) fn handle_line(&mut self, line: &[u8], now: Millis) {
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
    pub(super) fn reject_unparsable(&mut self, e: serde_json::Error, batch: Option<u64>) {
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
    pub(super) fn emit_response_unbatched(&mut self, batch: Option<u64>, msg: Vec<u8>) {
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

    pub(super) fn handle_batch(&mut self, line: &[u8], now: Millis) {
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

    pub(super) fn handle_message(&mut self, msg: Classified<'_>, batch: Option<u64>, now: Millis) {
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

    pub(super) fn handle_request(
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

    pub(super) fn handle_notification(&mut self, method: String, params: Option<&RawValue>) {
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
        if self.v2_refuse_notification(&method) {
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
    pub(super) fn handle_response(
        &mut self,
        id: Id,
        outcome: Result<&RawValue, ErrorObject>,
        alone: bool,
    ) {
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
    pub(super) fn accepts_protocol_version(&mut self, version: &serde_json::Value) -> bool {
        #[cfg(feature = "unstable_protocol_v2")]
        return self.v2_accepts_version(version);
        #[cfg(not(feature = "unstable_protocol_v2"))]
        return version.as_u64() == Some(u64::from(acp::PROTOCOL_VERSION));
    }
}
