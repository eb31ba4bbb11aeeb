//! The session's status in one line, from stable ACP as the thread keeps it: the agent
//! (`agentInfo`), the mode, the model (the `model` config option), the context the agent last
//! reported (`usage_update`: tokens used of the window, its cost) and the title
//! (`session_info_update`). Shown on stderr between turns (when the chat is interactive, or
//! whenever the agent reported its context) and by `/status`; with feature `unstable`, the
//! turn's own token usage and `session/status` are shown beside it, as before.

use acp_client::display::escape_line;
use acp_client::thread::Thread;

use super::Ui;

/// The status line of `thread`, opened with `agent` (already in words, escaped).
pub(super) fn line(agent: &str, thread: &Thread) -> String {
    let mut parts = vec![if agent.is_empty() {
        "the agent".to_string()
    } else {
        agent.to_string()
    }];
    if let Some(mode) = &thread.current_mode {
        let name = thread
            .modes
            .iter()
            .find(|m| &m.id == mode)
            .map_or(mode.as_str(), |m| m.name.as_str());
        parts.push(format!("mode: {}", escape_line(name)));
    }
    if let Some(model) = model(thread) {
        parts.push(format!("model: {}", escape_line(&model)));
    }
    if let Some(u) = &thread.usage {
        let percent = u
            .used
            .saturating_mul(100)
            .checked_div(u.size)
            .map(|p| format!(" ({p}%)"))
            .unwrap_or_default();
        let cost = u
            .cost
            .as_ref()
            .map(|c| format!(", {:.4} {}", c.amount, escape_line(&c.currency)))
            .unwrap_or_default();
        parts.push(format!(
            "context: {} of {} tokens{percent}{cost}",
            u.used, u.size
        ));
    }
    if let Some(title) = &thread.title {
        parts.push(format!("title: {}", escape_line(title)));
    }
    format!("[{}]", parts.join(" · "))
}

/// The session's model: the current value of its `model` config option (by id or category),
/// named as the option names it.
fn model(thread: &Thread) -> Option<String> {
    let raw = thread.config_options.as_ref()?;
    let options: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    let option = options
        .as_array()?
        .iter()
        .find(|o| o["id"] == "model" || o["configId"] == "model" || o["category"] == "model")?;
    let current = option["currentValue"].as_str()?;
    let name = option["options"]
        .as_array()
        .and_then(|values| values.iter().find(|v| v["value"] == current))
        .and_then(|v| v["name"].as_str())
        .unwrap_or(current);
    Some(name.to_string())
}

impl Ui {
    /// Shows the status line on stderr (`/status`).
    pub fn show_status(&self) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let text = line(st.thread.0.agent(), &st.thread);
        st.screen.status_line(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_the_session_reported_in_one_line() {
        let mut thread = Thread::default();
        assert_eq!(line("", &thread), "[the agent]");
        let updates = [
            r#"{"sessionUpdate":"current_mode_update","currentModeId":"ask"}"#,
            r#"{"sessionUpdate":"usage_update","used":1300,"size":200000,"cost":{"amount":0.0123,"currency":"USD"}}"#,
            r#"{"sessionUpdate":"session_info_update","title":"Fix \u001b[2Jit"}"#,
            r#"{"sessionUpdate":"config_option_update","configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"f","options":[{"value":"f","name":"Fast"},{"value":"s","name":"Slow"}]}]}"#,
        ];
        for u in updates {
            let params = format!(r#"{{"sessionId":"s","update":{u}}}"#);
            thread.apply_json(&params).unwrap();
        }
        assert_eq!(
            line("Demo 1.0", &thread),
            "[Demo 1.0 · mode: ask · model: Fast · context: 1300 of 200000 tokens (0%), 0.0123 USD · title: Fix \\e[2Jit]"
        );
    }
}
