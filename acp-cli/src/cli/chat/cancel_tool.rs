//! `/cancel-tool [ID]`: cancels one tool call of the running turn with ACP v2's
//! `tool_call/cancel` (feature `unstable_protocol_v2`); the turn goes on.
//!
//! Typed during a turn it is done at once (as `/queue` is: it is about the turn, not a prompt
//! for the next one). With no ID it names the one tool call that is running, or lists the
//! running ones with their titles. Whether a tool call may be cancelled is the engine's
//! decision (acp-core's table of the tool calls that advertise `capabilities.cancel` now):
//! a request for one that does not (unknown, final, or not cancellable) is refused before it
//! is sent, and that refusal is what the user reads. The request is sent from its own task,
//! bounded by the request timeout, so the turn keeps showing what the agent sends meanwhile
//! (the tool call's end, `cancelled`, comes as an update).

use acp_client::display::escape_line;

use super::Chat;

/// How to use `/cancel-tool`.
pub(super) const USAGE: &str = "usage: /cancel-tool [ID] (during a turn: cancels that tool call; \
     with no ID, the one running)";

/// Said when the agent speaks ACP v1.
pub(super) const V1: &str =
    "the agent speaks ACP v1: only the whole turn can be cancelled (Ctrl-C)";

/// `/cancel-tool [ARG]` typed as the whole line: its argument (trimmed).
pub(super) fn arg_of(line: &str) -> Option<&str> {
    let text = line.trim();
    let rest = text.strip_prefix("/cancel-tool")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

impl Chat {
    /// `/cancel-tool [ID]`; `running`: typed during a turn.
    pub(super) fn cancel_tool(&mut self, arg: &str, running: bool) {
        #[cfg(feature = "unstable_protocol_v2")]
        let v2 = self.ui.is_v2();
        #[cfg(not(feature = "unstable_protocol_v2"))]
        let v2 = false;
        if !v2 {
            self.ui.warn(V1);
            return;
        }
        if arg.split_whitespace().count() > 1 {
            self.ui.warn(USAGE);
            return;
        }
        if !running {
            self.ui
                .notice("no turn is running: there is no tool call to cancel");
            return;
        }
        let tools = self.ui.running_tools();
        let id = if arg.is_empty() {
            match tools.as_slice() {
                [] => {
                    self.ui
                        .notice("nothing to cancel: no tool call of this turn is running");
                    return;
                }
                [(id, _)] => id.clone(),
                many => {
                    self.ui.notice(&format!(
                        "{} tool calls are running: /cancel-tool ID cancels one (if the agent lets it be cancelled):",
                        many.len()
                    ));
                    for (id, title) in many {
                        self.ui.notice(&escape_line(&format!("  {id}  {title}")));
                    }
                    return;
                }
            }
        } else {
            arg.to_string()
        };
        self.send_tool_cancel(id, tools);
    }

    #[cfg(feature = "unstable_protocol_v2")]
    fn send_tool_cancel(&mut self, id: String, tools: Vec<(String, String)>) {
        let title = tools
            .iter()
            .find(|(t, _)| *t == id)
            .map(|(_, title)| title.clone());
        let params = serde_json::json!({"sessionId": self.session.id.0, "toolCallId": id});
        let params = match acp_native::driver::to_raw(&params) {
            Ok(p) => p,
            Err(e) => return self.ui.warn(&format!("/cancel-tool: {e}")),
        };
        let handle = self.link.conn.without_timeout().handle().clone();
        let timeout = Some(self.timeouts.request);
        let ui = self.ui.clone();
        let named = escape_line(&match &title {
            Some(t) => format!("{id} ({t})"),
            None => id.clone(),
        });
        tokio::spawn(async move {
            match handle
                .request("tool_call/cancel", Some(params), timeout)
                .await
            {
                Ok(_) => ui.notice(&format!(
                    "the agent accepted cancelling tool call {named} (the turn goes on)"
                )),
                Err(e) => {
                    let running: Vec<String> = tools.iter().map(|(t, _)| t.clone()).collect();
                    let hint = if running.is_empty() {
                        "no tool call is running".to_string()
                    } else {
                        format!("running: {}", running.join(", "))
                    };
                    ui.warn(&format!(
                        "/cancel-tool {named}: not cancelled: {e} ({hint})"
                    ));
                }
            }
        });
    }

    #[cfg(not(feature = "unstable_protocol_v2"))]
    fn send_tool_cancel(&mut self, _id: String, _tools: Vec<(String, String)>) {
        self.ui.warn(V1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_whole_command_is_recognised() {
        assert_eq!(arg_of("/cancel-tool"), Some(""));
        assert_eq!(arg_of("  /cancel-tool  t3 "), Some("t3"));
        assert_eq!(arg_of("/cancel-tools"), None);
        assert_eq!(arg_of("please /cancel-tool"), None);
        assert_eq!(arg_of("/cancel"), None);
    }
}
