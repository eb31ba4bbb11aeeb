//! ACP v2 (draft) in `acp chat` (feature `unstable_protocol_v2`): what differs on the wire,
//! the rest being acp-client's session engine (which folds v2's updates, takes a replay in
//! v2's order and ends a turn on an idle `state_update`).
//!
//! * `initialize` offers 2 (`acp_native::supervisor::v2::offer`, the supervisor's): the v1
//!   request with v2's `info` and `capabilities` beside it, so a v1 agent reads what it knows
//!   and answers 1 (the chat then is v1 in every respect), a v2 agent answers 2;
//! * a session is reopened with `session/resume` and `replayFrom: {"type": "start"}`
//!   (`acp_native::supervisor::v2::replay_params`, the engine's
//!   [`Open::Replay`](acp_client::session::Open::Replay));
//! * a `session/prompt` answer only acknowledges: the turn goes on until the engine says it
//!   ended (`turn.rs`: `Answered::Accepted`);
//! * a `session/request_permission` has a `title` and no `toolCall`: it is shown as a v1
//!   question about a tool call of that title (acp-client's `question::v2::as_v1`, which the
//!   extension calls through acp-wasm too);
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

#[cfg(test)]
mod tests {
    use super::*;

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
