//! ACP v2 (draft) in `acp chat` (feature `unstable_protocol_v2`): what differs on the wire,
//! the rest being acp-client's session engine (which folds v2's updates, takes a replay in
//! v2's order and ends a turn on an idle `state_update`).
//!
//! * `initialize` offers 2 ([`offer`]): the v1 request with v2's `info` and `capabilities`
//!   beside it, so a v1 agent reads what it knows and answers 1 (the chat then is v1 in every
//!   respect), a v2 agent answers 2;
//! * a session is reopened with `session/resume` and `replayFrom: {"type": "start"}`
//!   ([`replay_params`], the engine's [`Open::Replay`](acp_client::session::Open::Replay));
//! * a `session/prompt` answer only acknowledges: the turn goes on until the engine says it
//!   ended (`turn.rs`: `Answered::Accepted`);
//! * a `session/request_permission` has a `title` and no `toolCall`: it is shown as a v1
//!   question about a tool call of that title ([`permission_as_v1`]);
//! * config options (v2 has no modes) carry `configId` (`/config` reads either id) and are set
//!   with a typed value ([`set_config_params`]: `type: "id"`, or `boolean` for a boolean
//!   option); the answer's full set replaces the session's ([`Chat::set_config_v2`]).

use acp_client::display::escape_line;
use acp_core::RawValue;
use serde_json::{json, Value};

use super::Chat;

/// v2's `session/set_config_option` params: `option` (the session's, when it has that id) of
/// type `boolean` takes `true`/`false` as `{"type": "boolean"}`; any other takes the value as
/// an id (`{"type": "id"}`, which v2 requires for id-based options).
///
/// # Errors
///
/// A boolean option given another word than `true`/`false`.
pub(super) fn set_config_params(
    session_id: &str,
    id: &str,
    value: &str,
    option: Option<&Value>,
) -> Result<Value, String> {
    let typed = if option.is_some_and(|o| o["type"] == "boolean") {
        let b: bool = value
            .parse()
            .map_err(|_| format!("{id} is a boolean option: give true or false"))?;
        json!({"type": "boolean", "value": b})
    } else {
        json!({"type": "id", "value": value})
    };
    let mut p = json!({"sessionId": session_id, "configId": id});
    p.as_object_mut()
        .expect("an object")
        .extend(typed.as_object().expect("an object").clone());
    Ok(p)
}

impl Chat {
    /// `/config ID VALUE` with a v2 agent: `session/set_config_option`, and the full set it
    /// answers replaces the session's options (what `/config` and the status line show).
    pub(super) async fn set_config_v2(&mut self, id: &str, value: &str, option: Option<&Value>) {
        let params = match set_config_params(&self.session.id.0, id, value, option)
            .and_then(|p| acp_native::driver::to_raw(&p).map_err(|e| e.to_string()))
        {
            Ok(p) => p,
            Err(why) => return self.ui.warn(&escape_line(&why)),
        };
        let conn = self.link.conn.with_timeout(self.timeouts.request);
        let timeout = Some(self.timeouts.request);
        let call = conn
            .handle()
            .request("session/set_config_option", Some(params), timeout);
        match self.wait("session/set_config_option", call).await {
            Ok(answer) => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Answer {
                    config_options: Box<RawValue>,
                }
                match serde_json::from_str::<Answer>(answer.get()) {
                    Ok(a) if a.config_options.get().starts_with('[') => {
                        self.ui.config_options_set(a.config_options);
                        self.ui.notice(&escape_line(&format!("{id} = {value}")));
                    }
                    _ => self.ui.warn(
                        "the agent's session/set_config_option answer has no configOptions list",
                    ),
                }
            }
            Err(o) => self.ui.warn(o.message.as_deref().unwrap_or("failed")),
        }
    }
}

/// A v2 `session/request_permission`'s params as v1's request: v2 asks with a `title` (and
/// optionally a `subject` naming a tool call) instead of v1's `toolCall`; the question shown
/// is about a tool call of that title (the subject's id when it names one, so the
/// conversation's tool call completes it). `None`: not a v2 question (no `title`).
pub(super) fn permission_as_v1(params: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(params).ok()?;
    let o = v.as_object_mut()?;
    if o.contains_key("toolCall") {
        return None;
    }
    let title = o.get("title")?.as_str()?.to_string();
    let id = o
        .get("subject")
        .and_then(|s| s.get("toolCallId"))
        .and_then(Value::as_str)
        .unwrap_or("permission")
        .to_string();
    o.insert("toolCall".into(), json!({"toolCallId": id, "title": title}));
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1 as s;

    #[test]
    fn a_v2_question_becomes_a_v1_question_about_its_title() {
        let v2 = r#"{"sessionId":"s","title":"Write x?","options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}"#;
        let v1: s::RequestPermissionRequest =
            serde_json::from_str(&permission_as_v1(v2).unwrap()).unwrap();
        assert_eq!(v1.tool_call.fields.title.as_deref(), Some("Write x?"));
        assert_eq!(&*v1.tool_call.tool_call_id.0, "permission");
        let subject = r#"{"sessionId":"s","title":"Run?","subject":{"type":"tool_call","toolCallId":"t7"},"options":[]}"#;
        let v1: s::RequestPermissionRequest =
            serde_json::from_str(&permission_as_v1(subject).unwrap()).unwrap();
        assert_eq!(&*v1.tool_call.tool_call_id.0, "t7");
        // A v1 request, and one without a title, are left alone.
        assert!(permission_as_v1(
            r#"{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}"#
        )
        .is_none());
        assert!(permission_as_v1(r#"{"sessionId":"s","options":[]}"#).is_none());
        assert!(permission_as_v1("not json").is_none());
    }

    #[test]
    fn config_values_are_typed_as_v2_asks() {
        let select = json!({"configId": "m", "type": "select"});
        assert_eq!(
            set_config_params("s", "m", "fast", Some(&select)).unwrap(),
            json!({"sessionId": "s", "configId": "m", "type": "id", "value": "fast"})
        );
        assert_eq!(
            set_config_params("s", "x", "v", None).unwrap(),
            json!({"sessionId": "s", "configId": "x", "type": "id", "value": "v"})
        );
        let toggle = json!({"configId": "t", "type": "boolean"});
        assert_eq!(
            set_config_params("s", "t", "true", Some(&toggle)).unwrap(),
            json!({"sessionId": "s", "configId": "t", "type": "boolean", "value": true})
        );
        assert_eq!(
            set_config_params("s", "t", "yes", Some(&toggle)).unwrap_err(),
            "t is a boolean option: give true or false"
        );
        // Both shapes parse as the schema crate's v2 request.
        for p in [
            set_config_params("s", "m", "fast", Some(&select)).unwrap(),
            set_config_params("s", "t", "false", Some(&toggle)).unwrap(),
        ] {
            let r: agent_client_protocol_schema::v2::SetSessionConfigOptionRequest =
                serde_json::from_value(p.clone()).unwrap();
            assert_eq!(&*r.config_id.0, p["configId"].as_str().unwrap());
        }
    }
}
