//! Questions on stderr: a permission request (the agent's, or one acp asks about a command or
//! a write), drawn from acp-client's question model ([`acp_client::question`]): the change
//! first (each diff's first lines, coloured when stderr is a terminal and `NO_COLOR` is unset),
//! then the question itself — its title, further lines and numbered options — and the prompt,
//! so the question is always what is on screen last. A long diff ends with "… N more lines";
//! `d` at the prompt shows the whole diff and asks again. Then a re-ask after an invalid answer,
//! and the outcome line. Every string of the model is already one escaped line; the agent's
//! text cannot start a line or fake a question.

use acp_client::display::ensure_line;
use acp_client::question::{self, Diff, Question};
use agent_client_protocol_schema::v1 as s;

use super::screen::{styled, Screen};
use super::Ui;

impl Ui {
    /// The question of the agent's `session/request_permission`, completed by what the
    /// conversation knows of its tool call (a request often carries only a title: the diff
    /// came with the earlier `tool_call`).
    pub fn permission_question(&self, request: &s::RequestPermissionRequest) -> Question {
        let params = serde_json::to_value(request).unwrap_or_default();
        let st = self.lock();
        let known = st
            .thread
            .tool(&request.tool_call.tool_call_id.0)
            .and_then(|(_, call)| serde_json::to_value(call).ok());
        question::permission(&params, known.as_ref())
    }

    /// The title of the agent's `session/request_permission` (what [`Ui::permission_question`]
    /// would title it), without building its diffs.
    pub fn permission_title(&self, request: &s::RequestPermissionRequest) -> String {
        let call = &request.tool_call;
        let params = serde_json::json!({"toolCall": {
            "toolCallId": call.tool_call_id.0, "title": call.fields.title, "kind": call.fields.kind,
        }});
        let st = self.lock();
        let known = st
            .thread
            .tool(&call.tool_call_id.0)
            .map(|(_, t)| serde_json::json!({"title": t.title, "kind": t.kind}));
        question::permission(&params, known.as_ref()).title
    }

    /// Shows a question: its diffs (their first lines), then its title, further lines and
    /// numbered options, and the prompt.
    pub fn permission_dialog(&self, q: &Question) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        // The user is being asked: no spinner over the question (restarted after the answer).
        screen.spinner_stop();
        for d in &q.diffs {
            diff_head(screen, d);
            for l in &d.lines[..d.shown] {
                diff_line(screen, l);
            }
            if d.hidden > 0 {
                let more = format!("    … {} more lines (d: the whole diff)", d.hidden);
                let line = styled(screen.color_err, "2", &more);
                screen.err_line(&line);
            }
        }
        ask(screen, q);
    }

    /// `d` at a question: every line of its diffs that the question kept, then the question
    /// again.
    pub fn whole_diff(&self, q: &Question) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        for d in &q.diffs {
            diff_head(screen, d);
            for l in &d.lines {
                diff_line(screen, l);
            }
            let past = d.hidden - (d.lines.len() - d.shown);
            if past > 0 {
                let more = format!(
                    "    … {past} more lines not kept (a question keeps {} lines)",
                    question::MAX_LINES
                );
                let line = styled(screen.color_err, "2", &more);
                screen.err_line(&line);
            }
        }
        ask(screen, q);
    }

    /// Diffs outside a question (`/diff`): each kept line, then how many were not kept.
    pub fn show_diffs(&self, diffs: &[Diff]) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        for d in diffs {
            diff_head(screen, d);
            for l in &d.lines {
                diff_line(screen, l);
            }
            let past = d.hidden - (d.lines.len() - d.shown);
            if past > 0 {
                let more = format!("    … {past} more lines not shown");
                let line = styled(screen.color_err, "2", &more);
                screen.err_line(&line);
            }
        }
    }

    /// Ends the line of an unanswered question (at end of input).
    pub fn end_input_line(&self) {
        self.lock().screen.err_raw("\n");
    }

    /// Asks again after an invalid answer (`answer` escaped).
    pub fn permission_reask(&self, q: &Question, answer: &str) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        let d = if q.hidden_lines() > 0 {
            " (or d for the whole diff)"
        } else {
            ""
        };
        screen.err_line(&format!(
            "  `{}` is not an option: type a number from 1 to {}{d}",
            answer.trim(),
            q.options.len()
        ));
        prompt(screen, q);
    }

    /// Reports the outcome of a question (answered automatically or by the user); `title`
    /// as the question's.
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

    /// A write the agent made (acp-client's `wrote PATH (+N -M)`), dimmed on stderr.
    pub fn wrote(&self, line: &str) {
        let mut st = self.lock();
        let line = styled(st.screen.color_err, "2", &ensure_line(line));
        st.screen.err_line(&line);
    }
}

/// `  diff PATH (+N -M)`.
fn diff_head(screen: &mut Screen, d: &Diff) {
    let head = format!("  diff {} ({})", d.path, d.summary);
    let line = styled(screen.color_err, "1", &head);
    screen.err_line(&line);
}

/// One line of a diff (already escaped), coloured by its first character.
fn diff_line(screen: &mut Screen, l: &str) {
    let code = match l.chars().next() {
        Some('+') => "32",
        Some('-') => "31",
        Some('@') => "36",
        Some('\\') => "2",
        _ => "",
    };
    let text = format!("    {l}");
    let line = if code.is_empty() {
        text
    } else {
        styled(screen.color_err, code, &text)
    };
    screen.err_line(&line);
}

/// The question's title, further lines, numbered options and prompt.
fn ask(screen: &mut Screen, q: &Question) {
    let head = styled(
        screen.color_err,
        "1;33",
        &format!("? Permission requested: {}", ensure_line(&q.title)),
    );
    screen.err_line(&head);
    for line in &q.detail {
        let line = format!("  {}", ensure_line(line));
        screen.err_line(&line);
    }
    for o in &q.options {
        let line = format!(
            "  {}) {}  {}",
            o.number,
            ensure_line(&o.name),
            styled(
                screen.color_err,
                "2",
                &format!("[{}]", ensure_line(o.kind.name()))
            )
        );
        screen.err_line(&line);
    }
    prompt(screen, q);
}

/// `choose 1-N: ` (`, d for the whole diff` when some of it is not shown), as a prompt.
fn prompt(screen: &mut Screen, q: &Question) {
    let d = if q.hidden_lines() > 0 {
        ", d for the whole diff"
    } else {
        ""
    };
    let text = format!("choose 1-{}{d}: ", q.options.len());
    let p = styled(screen.color_err, "1", &text);
    screen.show_prompt(p);
}
