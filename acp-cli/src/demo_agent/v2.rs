//! The demo agent's ACP v2 (draft, feature `unstable_protocol_v2`): when the client asks for
//! `protocolVersion: 2` in `initialize`, the agent answers 2 and serves v2's session surface on
//! that connection; a v1 client gets the v1 agent unchanged.
//!
//! v2 here is small and scripted like the v1 turn, without the client's file system and
//! terminals (v2 has none): `session/new`; `session/prompt` acknowledged at once with the user
//! message's id, then a turn in notifications — the echoed `user_message`, `running`, a
//! `tool_call_update` and a permission question (`requires_action` while it waits), the answer
//! streamed as `agent_message_chunk`s, and an idle `state_update` with the stop reason;
//! `session/cancel` ends the turn with an idle `cancelled`; a prompt containing `#crash` exits
//! with code 70 once its permission question is answered (mid-turn, for crash handling); a
//! prompt's `idempotencyKey` seen
//! before in the session (a client's retry) is answered with the original message's id and
//! starts nothing (v2: agents that advertise `session` must support the key; acp-core already
//! refused malformed keys); `session/resume` with `replayFrom`
//! replays the session's messages as `user_message`/`agent_message` upserts, then
//! `replay_complete`, the current state, and answers; `session/list` and `session/close`.
//!
//! Memory: a session keeps its messages for the replay, at most [`MAX_MESSAGES`] (the oldest
//! go first), and the idempotency keys of the prompts it keeps, as many (a key is recognized
//! while its message is retained, as v2 asks); sessions live until `session/close` or the end
//! of the process. With `--state-dir` each session is also saved there after each change (the
//! v1 store's files and bounds, its messages in `v2Messages`, its keys in `v2Keys`), so
//! `session/resume` replays it from another process (after a restart, or `acp chat
//! --resume`) and a retried key is recognized there too.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use acp_core::ErrorObject;
use acp_native::{ConnectionHandle, RawValue, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::v2_config::config_options;
use super::DemoAgent;

/// Messages a session keeps for `session/resume`'s replay.
pub const MAX_MESSAGES: usize = 1000;

/// One v2 session.
#[derive(Default)]
pub(super) struct V2Session {
    cwd: String,
    /// `user_message` / `agent_message` upserts, oldest first, for the replay.
    messages: VecDeque<Value>,
    next_message: u64,
    /// Idempotency keys of the prompts taken, with their user message's id, oldest first.
    keys: VecDeque<(String, String)>,
    /// The running turn's cancellation.
    turn: Option<CancellationToken>,
    /// The config option `permissions` is `allow`: writes are not asked first (`v2_config.rs`).
    pub(super) allow_writes: bool,
    /// The running tool calls that advertise `capabilities.cancel`: their cancellation.
    tools: HashMap<String, CancellationToken>,
}

impl V2Session {
    fn remember(&mut self, upsert: Value) {
        if self.messages.len() == MAX_MESSAGES {
            self.messages.pop_front();
        }
        self.messages.push_back(upsert);
    }

    /// The user message a prompt with this idempotency key inserted, if the session keeps it.
    fn retried(&self, key: &str) -> Option<String> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, id)| id.clone())
    }

    fn record_key(&mut self, key: String, message: String) {
        if self.keys.len() == MAX_MESSAGES {
            self.keys.pop_front();
        }
        self.keys.push_back((key, message));
    }

    fn message_id(&mut self, prefix: &str) -> String {
        self.next_message += 1;
        format!("{prefix}{}", self.next_message)
    }
}

pub(super) fn raw(v: Value) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(&v).map_err(ErrorObject::internal)
}

pub(super) fn params(p: Option<Box<RawValue>>) -> Result<Value, ErrorObject> {
    let text = p.as_deref().map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(ErrorObject::invalid_params)
}

pub(super) fn str_param(p: &Value, key: &str) -> Result<String, ErrorObject> {
    p[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ErrorObject::invalid_params(format!("{key} must be a string")))
}

async fn update(peer: &ConnectionHandle, session: &str, update: Value) {
    let p = json!({"sessionId": session, "update": update});
    if let Ok(p) = serde_json::value::to_raw_value(&p) {
        let _ = peer.notify("session/update", Some(p)).await;
    }
}

impl DemoAgent {
    /// The `initialize` answer for a client that asked for v2 (and this connection becomes v2).
    pub(super) fn initialize_v2(&self) -> Result<Box<RawValue>, ErrorObject> {
        self.v2.store(true, Ordering::Relaxed);
        raw(json!({
            "protocolVersion": 2,
            "info": {"name": "acp-demo-agent", "title": "ACP demo agent", "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"session": {}},
        }))
    }

    /// Whether `initialize` settled on v2.
    pub(super) fn is_v2(&self) -> bool {
        self.v2.load(Ordering::Relaxed)
    }

    /// The v2 routes; everything else goes to the v1 router (`initialize`; what v2 removed is
    /// refused by the engine before it gets here).
    pub(super) fn v2_router(self: &Arc<Self>, v1: Router) -> Router {
        let (a, b, c, d, e, f, g, h) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        Router::new()
            .route_raw("session/new", move |p, _cx| {
                let a = a.clone();
                async move { a.v2_new(params(p)?) }
            })
            .route_raw("session/prompt", move |p, cx| {
                let b = b.clone();
                async move { b.v2_prompt(params(p)?, cx.peer) }
            })
            .notification_raw("session/cancel", move |p, _cx| {
                let c = c.clone();
                async move {
                    if let Ok(session) = params(p).and_then(|p| str_param(&p, "sessionId")) {
                        c.v2_cancel(&session);
                    }
                }
            })
            .route_raw("session/resume", move |p, cx| {
                let d = d.clone();
                async move { d.v2_resume(params(p)?, cx.peer).await }
            })
            .route_raw("session/list", move |_p, _cx| {
                let e = e.clone();
                async move { e.v2_list() }
            })
            .route_raw("session/close", move |p, _cx| {
                let f = f.clone();
                async move {
                    let session = str_param(&params(p)?, "sessionId")?;
                    if let Some(s) = f.v2_sessions.lock().unwrap().remove(&session) {
                        if let Some(t) = s.turn {
                            t.cancel();
                        }
                    }
                    raw(json!({}))
                }
            })
            .route_raw("session/set_config_option", move |p, _cx| {
                let g = g.clone();
                async move { g.v2_set_config(params(p)?) }
            })
            .route_raw("tool_call/cancel", move |p, _cx| {
                let h = h.clone();
                async move { h.v2_cancel_tool(params(p)?) }
            })
            .fallback(v1)
    }

    fn v2_new(&self, p: Value) -> Result<Box<RawValue>, ErrorObject> {
        let cwd = str_param(&p, "cwd")?;
        let id = format!("{}-v2-{:08x}", self.id_prefix, super::random_u64() as u32);
        let session = V2Session {
            cwd,
            ..V2Session::default()
        };
        self.v2_sessions.lock().unwrap().insert(id.clone(), session);
        self.v2_save(&id);
        raw(json!({"sessionId": id, "configOptions": config_options(false)}))
    }

    fn v2_list(&self) -> Result<Box<RawValue>, ErrorObject> {
        let sessions = self.v2_sessions.lock().unwrap();
        let mut list: Vec<Value> = sessions
            .iter()
            .map(|(id, s)| json!({"sessionId": id, "cwd": s.cwd}))
            .collect();
        list.sort_by(|a, b| a["sessionId"].as_str().cmp(&b["sessionId"].as_str()));
        raw(json!({"sessions": list}))
    }

    /// `tool_call/cancel` of a running tool call that advertises it (acp-core answered -32602
    /// for the others already; one that just ended is refused here the same way).
    fn v2_cancel_tool(&self, p: Value) -> Result<Box<RawValue>, ErrorObject> {
        let session = str_param(&p, "sessionId")?;
        let tool = str_param(&p, "toolCallId")?;
        let sessions = self.v2_sessions.lock().unwrap();
        let token = sessions
            .get(&session)
            .and_then(|s| s.tools.get(&tool))
            .ok_or_else(|| {
                ErrorObject::invalid_params(format!("tool call {tool} is not running"))
            })?;
        token.cancel();
        raw(json!({}))
    }

    fn v2_cancel(&self, session: &str) {
        if let Some(s) = self.v2_sessions.lock().unwrap().get(session) {
            if let Some(t) = &s.turn {
                t.cancel();
            }
        }
    }

    /// `session/prompt`: accepted at once (the user message's id); the turn runs on its own.
    fn v2_prompt(
        self: &Arc<Self>,
        p: Value,
        peer: ConnectionHandle,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let session = str_param(&p, "sessionId")?;
        let prompt = p["prompt"]
            .as_array()
            .filter(|a| !a.is_empty())
            .cloned()
            .ok_or_else(|| ErrorObject::invalid_params("prompt must be a non-empty array"))?;
        let key = p["idempotencyKey"].as_str().map(str::to_owned);
        let (user_id, token) = {
            let mut sessions = self.v2_sessions.lock().unwrap();
            let s = sessions
                .get_mut(&session)
                .ok_or_else(|| ErrorObject::invalid_params(format!("unknown session {session}")))?;
            // A retry of a prompt already taken: its message, nothing inserted or run again.
            // When its turn is over, the session's state follows (idle), so a client that
            // waits for the turn's end after any prompt is not left waiting.
            if let Some(original) = key.as_deref().and_then(|k| s.retried(k)) {
                if s.turn.is_none() {
                    tokio::spawn(async move {
                        let idle = json!({"sessionUpdate": "state_update", "state": "idle"});
                        update(&peer, &session, idle).await;
                    });
                }
                return raw(json!({ "messageId": original }));
            }
            if s.turn.is_some() {
                return Err(ErrorObject::invalid_params(
                    "a turn is running in this session: cancel it or wait for idle",
                ));
            }
            let id = s.message_id("u");
            if let Some(key) = key {
                s.record_key(key, id.clone());
            }
            let token = CancellationToken::new();
            s.turn = Some(token.clone());
            (id, token)
        };
        let agent = self.clone();
        let id = user_id.clone();
        tokio::spawn(async move { agent.v2_turn(session, id, prompt, token, peer).await });
        raw(json!({"messageId": user_id}))
    }

    async fn v2_turn(
        self: Arc<Self>,
        session: String,
        user_id: String,
        prompt: Vec<Value>,
        cancel: CancellationToken,
        peer: ConnectionHandle,
    ) {
        let echo =
            json!({"sessionUpdate": "user_message", "messageId": user_id, "content": prompt});
        self.v2_remember(&session, echo.clone());
        update(&peer, &session, echo).await;
        update(
            &peer,
            &session,
            json!({"sessionUpdate": "state_update", "state": "running"}),
        )
        .await;
        let text: String = prompt
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let end = if text.contains("#no-reason") {
            self.v2_say(&session, "Done; I give no stop reason.", &peer)
                .await;
            Some(End::Unreported)
        } else if text.contains("#error") {
            Some(End::Error("the demo agent failed on purpose (#error)"))
        } else if text.contains("#long-task") {
            self.v2_long_task(&session, &cancel, &peer).await
        } else {
            self.v2_work(&session, &text, &cancel, &peer).await
        };
        let end = end.unwrap_or(End::Reason("cancelled"));
        if let Some(s) = self.v2_sessions.lock().unwrap().get_mut(&session) {
            s.turn = None;
        }
        update(&peer, &session, end.idle()).await;
    }

    /// The turn's work; `None` when it was cancelled.
    async fn v2_work(
        &self,
        session: &str,
        text: &str,
        cancel: &CancellationToken,
        peer: &ConnectionHandle,
    ) -> Option<End> {
        let tool = self
            .v2_sessions
            .lock()
            .unwrap()
            .get_mut(session)
            .map(|s| s.message_id("t"))?;
        update(peer, session, json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "title": "Write acp-demo.txt", "kind": "edit", "status": "pending"})).await;
        let allow_writes = self
            .v2_sessions
            .lock()
            .unwrap()
            .get(session)
            .is_some_and(|s| s.allow_writes);
        let allowed = allow_writes || self.v2_ask(session, &tool, cancel, peer).await?;
        if text.contains("#crash") {
            // For clients' crash handling (as v1's `#crash`): mid-turn, the prompt
            // acknowledged and the question answered, a line on stderr and exit code 70.
            eprintln!("acp demo-agent: crashing mid-answer as asked (#crash)");
            std::process::exit(70);
        }
        update(
            peer,
            session,
            json!({"sessionUpdate": "state_update", "state": "running"}),
        )
        .await;
        let status = if allowed { "completed" } else { "failed" };
        update(
            peer,
            session,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": status}),
        )
        .await;
        let reply = format!(
            "You said: {text}. The write was {}.",
            if allow_writes {
                "allowed (permissions: allow)"
            } else if allowed {
                "allowed"
            } else {
                "rejected"
            }
        );
        let said = self.v2_say(session, &reply, peer).await;
        if cancel.is_cancelled() || !said {
            return None;
        }
        Some(End::Reason("end_turn"))
    }

    /// The permission question for the write (`requires_action` while it waits): whether it
    /// was allowed; `None` when the turn was cancelled meanwhile (the tool call is then
    /// `cancelled`).
    async fn v2_ask(
        &self,
        session: &str,
        tool: &str,
        cancel: &CancellationToken,
        peer: &ConnectionHandle,
    ) -> Option<bool> {
        update(
            peer,
            session,
            json!({"sessionUpdate": "state_update", "state": "requires_action"}),
        )
        .await;
        let question = json!({
            "sessionId": session,
            "title": "Write acp-demo.txt?",
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        });
        let asked = peer.request(
            "session/request_permission",
            serde_json::value::to_raw_value(&question).ok(),
            None,
        );
        let answer = tokio::select! {
            a = asked => a.ok(),
            () = cancel.cancelled() => None,
        };
        if cancel.is_cancelled() {
            update(peer, session, json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "cancelled"})).await;
            return None;
        }
        Some(
            answer
                .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
                .is_some_and(|v| {
                    v["outcome"]["outcome"] == "selected" && v["outcome"]["optionId"] == "allow"
                }),
        )
    }

    /// `#long-task`: a tool call that runs until the client cancels it with
    /// `tool_call/cancel` (it advertises `capabilities.cancel` while it runs) or the turn is
    /// cancelled; either way it ends `cancelled`. Cancelling the tool call alone does not end
    /// the turn: the agent says so and ends it with `end_turn`.
    async fn v2_long_task(
        &self,
        session: &str,
        cancel: &CancellationToken,
        peer: &ConnectionHandle,
    ) -> Option<End> {
        let token = CancellationToken::new();
        let tool = {
            let mut sessions = self.v2_sessions.lock().unwrap();
            let s = sessions.get_mut(session)?;
            let tool = s.message_id("t");
            s.tools.insert(tool.clone(), token.clone());
            tool
        };
        update(peer, session, json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "title": "Run the long task", "kind": "execute", "status": "in_progress", "capabilities": {"cancel": {}}})).await;
        tokio::select! {
            () = token.cancelled() => {}
            () = cancel.cancelled() => {}
        }
        if let Some(s) = self.v2_sessions.lock().unwrap().get_mut(session) {
            s.tools.remove(&tool);
        }
        update(peer, session, json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "cancelled", "capabilities": null})).await;
        if cancel.is_cancelled() {
            return None;
        }
        self.v2_say(
            session,
            "The long task was cancelled; the turn goes on without it.",
            peer,
        )
        .await;
        Some(End::Reason("end_turn"))
    }

    /// Streams `reply` as a new agent message (kept for the replay); false when the turn was
    /// cancelled before it was all sent.
    async fn v2_say(&self, session: &str, reply: &str, peer: &ConnectionHandle) -> bool {
        let cancel = self
            .v2_sessions
            .lock()
            .unwrap()
            .get(session)
            .and_then(|s| s.turn.clone());
        let agent_id = self
            .v2_sessions
            .lock()
            .unwrap()
            .get_mut(session)
            .map(|s| s.message_id("a"));
        let Some(agent_id) = agent_id else {
            return false;
        };
        let cancelled = || cancel.as_ref().is_some_and(CancellationToken::is_cancelled);
        let words: Vec<&str> = reply.split_inclusive(' ').collect();
        for w in words {
            if cancelled() {
                break;
            }
            update(peer, session, json!({"sessionUpdate": "agent_message_chunk", "messageId": agent_id, "content": {"type": "text", "text": w}})).await;
        }
        self.v2_remember(
            session,
            json!({"sessionUpdate": "agent_message", "messageId": agent_id, "content": [{"type": "text", "text": reply}]}),
        );
        !cancelled()
    }

    fn v2_remember(&self, session: &str, upsert: Value) {
        if let Some(s) = self.v2_sessions.lock().unwrap().get_mut(session) {
            s.remember(upsert);
        }
        self.v2_save(session);
    }

    /// Saves the session to `--state-dir`, if given (best effort, as v1's).
    pub(super) fn v2_save(&self, session: &str) {
        let Some(store) = &self.store else { return };
        let mut saved = {
            let sessions = self.v2_sessions.lock().unwrap();
            let Some(s) = sessions.get(session) else {
                return;
            };
            let mut saved = super::store::Saved::new(session, std::path::Path::new(&s.cwd));
            saved.v2_messages = s.messages.iter().cloned().collect();
            saved.v2_next = Some(s.next_message);
            saved.v2_keys = s.keys.iter().cloned().collect();
            saved.v2_permissions = Some(if s.allow_writes { "allow" } else { "ask" }.into());
            saved.title = s
                .messages
                .iter()
                .find(|m| m["sessionUpdate"] == "user_message")
                .and_then(|m| m["content"][0]["text"].as_str())
                .and_then(super::store::title_from);
            saved
        };
        let _ = store.save(&mut saved);
    }

    /// A session of another process, from `--state-dir` (a v2 one: it has messages or a
    /// message number), taken into this one.
    pub(super) fn v2_restore(&self, session: &str) {
        let Some(saved) = self.store.as_ref().and_then(|s| s.load(session)) else {
            return;
        };
        let Some(next_message) = saved.v2_next else {
            return;
        };
        let mut sessions = self.v2_sessions.lock().unwrap();
        sessions
            .entry(session.to_string())
            .or_insert_with(|| V2Session {
                cwd: saved.cwd.display().to_string(),
                messages: saved
                    .v2_messages
                    .into_iter()
                    .rev()
                    .take(MAX_MESSAGES)
                    .rev()
                    .collect(),
                next_message,
                keys: saved
                    .v2_keys
                    .into_iter()
                    .rev()
                    .take(MAX_MESSAGES)
                    .rev()
                    .collect(),
                turn: None,
                allow_writes: saved.v2_permissions.as_deref() == Some("allow"),
                tools: HashMap::new(),
            });
    }

    /// `session/resume`: with `replayFrom` `start`, the messages, `replay_complete`, the state;
    /// other cursors are refused (-32602), as v2 requires; a session neither in memory nor in
    /// `--state-dir` is -32002, as in v1.
    async fn v2_resume(
        &self,
        p: Value,
        peer: ConnectionHandle,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let session = str_param(&p, "sessionId")?;
        self.v2_restore(&session);
        let (messages, running, allow_writes) = {
            let sessions = self.v2_sessions.lock().unwrap();
            let s = sessions
                .get(&session)
                .ok_or_else(|| super::handlers::unknown_session(&session))?;
            (s.messages.clone(), s.turn.is_some(), s.allow_writes)
        };
        match &p["replayFrom"] {
            Value::Null => {}
            from if from["type"] == "start" => {
                for m in messages {
                    update(&peer, &session, m).await;
                }
                update(&peer, &session, json!({"sessionUpdate": "replay_complete"})).await;
            }
            other => {
                return Err(ErrorObject::invalid_params(format!(
                    "unsupported replayFrom {other}"
                )))
            }
        }
        let state = if running { "running" } else { "idle" };
        update(
            &peer,
            &session,
            json!({"sessionUpdate": "state_update", "state": state}),
        )
        .await;
        raw(json!({"configOptions": config_options(allow_writes)}))
    }
}

/// How a v2 turn's work ended: the idle `state_update`'s stop reason.
enum End {
    /// A standard stop reason.
    Reason(&'static str),
    /// `#no-reason`: idle without a stop reason (v2 makes it a SHOULD).
    Unreported,
    /// `#error`: v2's `error` stop reason with the failure beside it.
    Error(&'static str),
}

impl End {
    fn idle(&self) -> Value {
        match self {
            End::Reason(r) => {
                json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": r})
            }
            End::Unreported => json!({"sessionUpdate": "state_update", "state": "idle"}),
            End::Error(message) => json!({
                "sessionUpdate": "state_update", "state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": message},
            }),
        }
    }
}

/// The sessions of a v2 connection.
pub(super) type V2Sessions = std::sync::Mutex<HashMap<String, V2Session>>;
