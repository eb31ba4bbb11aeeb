//! Questions on stderr: a permission request (the agent's, or one acp asks about a command or
//! a write), its numbered options, a re-ask after an invalid answer, and the outcome line.
//! Titles are one line each: every control, bidi and line-breaking character of what the
//! agent sent is escaped, so nothing it sent can start a line or fake a question.

use acp_client::display::{ensure_line, escape_line};
use acp_client::thread::Thread;
use agent_client_protocol_schema::v1 as s;

use super::screen::{styled, Screen};
use super::{wire_name, Ui};

impl Ui {
    /// The one-line title of a question about `call` (the agent's title and kind, every
    /// control, bidi and line-breaking character escaped: nothing it sent can start a line).
    pub fn question_title(&self, call: &s::ToolCallUpdate) -> String {
        escape_line(&tool_title(&self.lock().thread, call))
    }

    /// Shows a question and its numbered options (on stderr): `title` and `detail` are one
    /// line each, already escaped ([`Ui::question_title`], acp-client's question texts); the
    /// agent's option names are escaped here.
    pub fn permission_dialog(
        &self,
        title: &str,
        detail: &[String],
        options: &[s::PermissionOption],
    ) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        // The user is being asked: no spinner over the question (restarted after the answer).
        screen.spinner_stop();
        let head = styled(
            screen.color_err,
            "1;33",
            &format!("? Permission requested: {}", ensure_line(title)),
        );
        screen.err_line(&head);
        for line in detail {
            let line = format!("  {}", ensure_line(line));
            screen.err_line(&line);
        }
        for (i, opt) in options.iter().enumerate() {
            let kind = wire_name(&opt.kind);
            let line = format!(
                "  {}) {}  {}",
                i + 1,
                escape_line(&opt.name),
                styled(screen.color_err, "2", &format!("[{kind}]"))
            );
            screen.err_line(&line);
        }
        permission_ask(screen, options.len());
    }

    /// Ends the line of an unanswered question (at end of input).
    pub fn end_input_line(&self) {
        self.lock().screen.err_raw("\n");
    }

    /// Asks again after an invalid answer.
    pub fn permission_reask(&self, count: usize, answer: &str) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        screen.err_line(&format!(
            "  `{}` is not an option: type a number from 1 to {count}",
            answer.trim()
        ));
        permission_ask(screen, count);
    }

    /// Reports the outcome of a question (answered automatically or by the user); `title` as
    /// for [`Ui::permission_dialog`].
    pub fn permission_outcome(&self, title: &str, outcome: &str) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        let line = styled(
            screen.color_err,
            "2",
            &ensure_line(&format!("  permission for {title}: {outcome}")),
        );
        screen.err_line(&line);
    }
}

/// `choose 1-N: `, as a prompt.
fn permission_ask(screen: &mut Screen, count: usize) {
    let q = styled(screen.color_err, "1", &format!("choose 1-{count}: "));
    screen.show_prompt(q);
}

/// A question's title from the tool call it is about: its title (or the one the thread
/// knows), and its kind unless `other`. Not escaped.
fn tool_title(thread: &Thread, call: &s::ToolCallUpdate) -> String {
    let known = thread.tool(&call.tool_call_id.0).map(|(_, t)| t);
    let title = call
        .fields
        .title
        .clone()
        .or_else(|| known.map(|t| t.title.clone()))
        .unwrap_or_else(|| format!("tool call {}", call.tool_call_id.0));
    let kind = call
        .fields
        .kind
        .map(|k| wire_name(&k))
        .or_else(|| known.map(|t| t.kind.clone()));
    match kind {
        Some(k) if k != "other" => format!("{title} ({k})"),
        _ => title,
    }
}
