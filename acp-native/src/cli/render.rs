//! Terminal rendering for `acp chat`: session updates, permission dialogs, the spinner.
//!
//! stdout carries the conversation (agent text, thoughts, plans, tool calls), or with
//! `--json` one JSON line per session update; stderr carries everything else (the input and
//! permission prompts, notices, warnings, errors, the spinner). Every write goes through [`Ui`],
//! which knows whether the cursor is at the start of a line, so blocks never start mid-line and
//! the spinner only draws (on stderr, only when it is a terminal) on an empty line.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::display::{ensure_line, escape_line};
use acp_core::RawValue;
use agent_client_protocol_schema::v1 as s;
use serde_json::Value;

/// The shared terminal writer. Cheap to clone.
#[derive(Clone)]
pub struct Ui {
    state: Arc<Mutex<State>>,
}

struct State {
    json: bool,
    /// ANSI styling on stdout / stderr.
    color_out: bool,
    color_err: bool,
    /// stderr is a terminal: the spinner may draw.
    spinner_allowed: bool,
    spinner: Option<Spinner>,
    at_line_start: bool,
    block: Block,
    tools: HashMap<String, Tool>,
    last_plan: Option<Vec<(String, String)>>,
    last_output: Instant,
    terminal_output: Option<TerminalOutput>,
}

struct Spinner {
    label: String,
    frame: usize,
    drawn: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Message,
    Thought,
}

struct Tool {
    title: String,
    kind: String,
    status: String,
    /// A terminal embedded in the tool call: its final output is shown when the call ends
    /// (unless the agent sent text output itself).
    terminal: Option<String>,
}

/// Looks up the final output of a terminal by id (see [`Ui::set_terminal_output`]).
pub type TerminalOutput = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Longest tool output shown inline, in lines.
const MAX_CONTENT_LINES: usize = 12;

fn styled(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

impl Ui {
    /// A writer for the real stdout/stderr. `json`: session updates as JSON lines.
    pub fn new(json: bool) -> Ui {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let ui = Ui {
            state: Arc::new(Mutex::new(State {
                json,
                color_out: !no_color && !json && std::io::stdout().is_terminal(),
                color_err: !no_color && std::io::stderr().is_terminal(),
                spinner_allowed: std::io::stderr().is_terminal(),
                spinner: None,
                at_line_start: true,
                block: Block::None,
                tools: HashMap::new(),
                last_plan: None,
                last_output: Instant::now(),
                terminal_output: None,
            })),
        };
        if ui.lock().spinner_allowed {
            let weak = Arc::downgrade(&ui.state);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .draw_spinner();
                }
            });
        }
        ui
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where to find the output of terminals the agent embeds in tool calls.
    pub fn set_terminal_output(&self, lookup: TerminalOutput) {
        self.lock().terminal_output = Some(lookup);
    }

    /// Shows the spinner with `label` (when stderr is a terminal) until output arrives or
    /// [`Ui::spinner_stop`].
    pub fn spinner_start(&self, label: &str) {
        let mut st = self.lock();
        st.spinner = Some(Spinner {
            label: label.to_string(),
            frame: 0,
            drawn: false,
        });
        st.last_output = Instant::now() - Duration::from_secs(1);
    }

    pub fn spinner_stop(&self) {
        let mut st = self.lock();
        st.clear_spinner();
        st.spinner = None;
    }

    /// A notice on stderr (dimmed).
    pub fn notice(&self, text: &str) {
        let mut st = self.lock();
        let line = styled(st.color_err, "2", &sanitize(text));
        st.err_line(&line);
    }

    /// A warning on stderr (sanitized: it often quotes the agent).
    pub fn warn(&self, text: &str) {
        let mut st = self.lock();
        let text = sanitize(text);
        let line = styled(st.color_err, "33", &format!("acp: warning: {text}"));
        st.err_line(&line);
    }

    /// An error on stderr (sanitized: it often quotes the agent or its stderr).
    pub fn error(&self, text: &str) {
        let mut st = self.lock();
        let text = sanitize(text);
        let line = styled(st.color_err, "31", &format!("acp: {text}"));
        st.err_line(&line);
    }

    /// The input prompt (`> ` on stderr), for interactive use.
    pub fn input_prompt(&self) {
        let mut st = self.lock();
        st.newline();
        st.block = Block::None;
        let p = styled(st.color_err, "1;36", "> ");
        st.err_raw(&p);
        // The user's Enter ends the line.
        st.at_line_start = true;
    }

    /// The end of a turn: a newline after streamed text; the JSON line with `--json`.
    pub fn turn_end(&self, session_id: &str, stop_reason: &str) {
        let mut st = self.lock();
        st.clear_spinner();
        st.spinner = None;
        if st.json {
            let line = serde_json::json!({ "sessionId": session_id, "stopReason": stop_reason });
            st.out_raw(&format!("{line}\n"));
            st.at_line_start = true;
        } else {
            st.newline();
            st.block = Block::None;
            if stop_reason != "end_turn" {
                let line = styled(st.color_err, "2", &format!("[turn ended: {stop_reason}]"));
                st.err_line(&line);
            }
        }
    }

    /// Renders one `session/update` (its raw params). In the human view every string the agent
    /// sent goes through [`sanitize`] first (no escape sequence reaches the terminal).
    pub fn session_update(&self, params: Option<&RawValue>) {
        let mut st = self.lock();
        st.last_output = Instant::now();
        let raw = params.map_or("null", RawValue::get);
        if st.json {
            st.clear_spinner();
            // The params are one line already (NDJSON); re-serialize defensively.
            let line = serde_json::from_str::<Value>(raw)
                .map(|v| v.to_string())
                .unwrap_or_else(|_| raw.to_string());
            st.out_raw(&format!("{line}\n"));
            st.at_line_start = true;
            return;
        }
        let clean = serde_json::from_str::<Value>(raw).map(|mut v| {
            sanitize_json(&mut v);
            v
        });
        match clean.and_then(serde_json::from_value::<s::SessionNotification>) {
            Ok(n) => st.render(n.update),
            Err(_) => {
                let kind = serde_json::from_str::<Value>(raw)
                    .ok()
                    .and_then(|v| v["update"]["sessionUpdate"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "malformed".to_string());
                let line = styled(st.color_out, "2", &format!("[session update: {kind}]"));
                st.block_line(&line);
            }
        }
    }

    /// The one-line title of a question about `call` (the agent's title and kind, every
    /// control, bidi and line-breaking character escaped: nothing it sent can start a line).
    pub fn question_title(&self, call: &s::ToolCallUpdate) -> String {
        escape_line(&self.lock().tool_title(call))
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
        // The user is being asked: no spinner over the question (restarted after the answer).
        st.clear_spinner();
        st.spinner = None;
        let head = styled(
            st.color_err,
            "1;33",
            &format!("? Permission requested: {}", ensure_line(title)),
        );
        st.err_line(&head);
        for line in detail {
            let line = format!("  {}", ensure_line(line));
            st.err_line(&line);
        }
        for (i, opt) in options.iter().enumerate() {
            let kind = enum_name(&opt.kind);
            let line = format!(
                "  {}) {}  {}",
                i + 1,
                escape_line(&opt.name),
                styled(st.color_err, "2", &format!("[{kind}]"))
            );
            st.err_line(&line);
        }
        st.permission_ask(options.len());
    }

    /// Ends the line of an unanswered question (at end of input).
    pub fn end_input_line(&self) {
        let mut st = self.lock();
        st.err_raw("\n");
    }

    /// Asks again after an invalid answer.
    pub fn permission_reask(&self, count: usize, answer: &str) {
        let mut st = self.lock();
        st.err_line(&format!(
            "  `{}` is not an option: type a number from 1 to {count}",
            answer.trim()
        ));
        st.permission_ask(count);
    }

    /// Reports the outcome of a question (answered automatically or by the user); `title` as
    /// for [`Ui::permission_dialog`].
    pub fn permission_outcome(&self, title: &str, outcome: &str) {
        let mut st = self.lock();
        let line = styled(
            st.color_err,
            "2",
            &ensure_line(&format!("  permission for {title}: {outcome}")),
        );
        st.err_line(&line);
    }
}

/// The wire name of a serde enum value (`allow_once`, `in_progress`...).
fn enum_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

impl State {
    fn clear_spinner(&mut self) {
        if let Some(sp) = &mut self.spinner {
            if sp.drawn {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(b"\r\x1b[K");
                let _ = err.flush();
                sp.drawn = false;
            }
        }
    }

    fn draw_spinner(&mut self) {
        if !self.spinner_allowed || !self.at_line_start {
            return;
        }
        if self.last_output.elapsed() < Duration::from_millis(300) {
            return;
        }
        let color = self.color_err;
        let Some(sp) = &mut self.spinner else { return };
        sp.frame = (sp.frame + 1) % FRAMES.len();
        let text = styled(color, "36", &format!("{} {}", FRAMES[sp.frame], sp.label));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{text}");
        let _ = err.flush();
        sp.drawn = true;
    }

    fn out_raw(&mut self, text: &str) {
        self.clear_spinner();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
        self.last_output = Instant::now();
    }

    fn err_raw(&mut self, text: &str) {
        self.clear_spinner();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
        self.last_output = Instant::now();
    }

    /// Ends the current line if something is on it.
    fn newline(&mut self) {
        if !self.at_line_start {
            self.out_raw("\n");
        }
    }

    fn err_line(&mut self, line: &str) {
        self.newline();
        self.err_raw(&format!("{line}\n"));
    }

    /// A whole line of conversation on stdout, on a fresh line.
    fn block_line(&mut self, line: &str) {
        self.newline();
        self.block = Block::None;
        self.out_raw(&format!("{line}\n"));
    }

    fn permission_ask(&mut self, count: usize) {
        let q = styled(self.color_err, "1", &format!("choose 1-{count}: "));
        self.err_raw(&q);
        self.at_line_start = true;
    }

    fn tool_title(&self, call: &s::ToolCallUpdate) -> String {
        let known = self.tools.get(&*call.tool_call_id.0);
        let title = call
            .fields
            .title
            .clone()
            .or_else(|| known.map(|t| t.title.clone()))
            .unwrap_or_else(|| format!("tool call {}", call.tool_call_id.0));
        let kind = call
            .fields
            .kind
            .map(|k| enum_name(&k))
            .or_else(|| known.map(|t| t.kind.clone()));
        match kind {
            Some(k) if k != "other" => format!("{title} ({k})"),
            _ => title,
        }
    }

    /// Streams text of a message or thought block.
    fn stream(&mut self, block: Block, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.block != block {
            self.newline();
            if block == Block::Thought && !self.color_out {
                self.out_raw("(thinking) ");
            }
            self.block = block;
        }
        let text = if block == Block::Thought {
            styled(self.color_out, "2;3", text)
        } else {
            text.to_string()
        };
        self.out_raw(&text);
    }

    fn render(&mut self, update: s::SessionUpdate) {
        match update {
            s::SessionUpdate::AgentMessageChunk(c) => {
                self.stream(Block::Message, &content_text(&c.content))
            }
            s::SessionUpdate::AgentThoughtChunk(c) => {
                self.stream(Block::Thought, &content_text(&c.content))
            }
            s::SessionUpdate::UserMessageChunk(c) => {
                let line = styled(
                    self.color_out,
                    "1",
                    &format!("> {}", content_text(&c.content)),
                );
                self.block_line(&line);
            }
            s::SessionUpdate::Plan(plan) => self.plan(&plan),
            s::SessionUpdate::ToolCall(call) => self.tool_call(call),
            s::SessionUpdate::ToolCallUpdate(update) => self.tool_update(update),
            s::SessionUpdate::CurrentModeUpdate(m) => {
                let line = styled(
                    self.color_out,
                    "2",
                    &format!("[mode: {}]", m.current_mode_id),
                );
                self.block_line(&line);
            }
            s::SessionUpdate::AvailableCommandsUpdate(c) => {
                let names: Vec<String> = c
                    .available_commands
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect();
                let line = styled(
                    self.color_out,
                    "2",
                    &format!("[commands: {}]", names.join(" ")),
                );
                self.block_line(&line);
            }
            other => {
                // Metadata updates (session info, usage, config...): one dim line.
                let kind = serde_json::to_value(&other)
                    .ok()
                    .and_then(|v| v["sessionUpdate"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "update".to_string());
                let line = styled(self.color_out, "2", &format!("[{kind}]"));
                self.block_line(&line);
            }
        }
    }

    fn plan(&mut self, plan: &s::Plan) {
        let entries: Vec<(String, String)> = plan
            .entries
            .iter()
            .map(|e| (e.content.clone(), enum_name(&e.status)))
            .collect();
        if self.last_plan.as_ref() == Some(&entries) {
            return;
        }
        let mark = |status: &str, color: bool| {
            let (mark, code) = match status {
                "completed" => ("[x]", "32"),
                "in_progress" => ("[~]", "33"),
                _ => ("[ ]", "0"),
            };
            styled(color, code, mark)
        };
        let same_steps = self.last_plan.as_ref().is_some_and(|last| {
            last.len() == entries.len() && last.iter().zip(&entries).all(|(a, b)| a.0 == b.0)
        });
        if same_steps {
            // Only statuses changed: one line per changed step, not the whole plan again.
            let last = self.last_plan.take().unwrap_or_default();
            for ((content, status), (_, before)) in entries.iter().zip(&last) {
                if status != before {
                    let head = styled(self.color_out, "1", "Plan:");
                    let line = format!("{head} {} {content}", mark(status, self.color_out));
                    self.block_line(&line);
                }
            }
        } else {
            let head = styled(self.color_out, "1", "Plan:");
            self.block_line(&head);
            for (content, status) in &entries {
                let line = format!("  {} {content}", mark(status, self.color_out));
                self.out_raw(&format!("{line}\n"));
            }
        }
        self.last_plan = Some(entries);
    }

    fn status_text(&self, status: &str) -> String {
        let code = match status {
            "completed" => "32",
            "failed" => "31",
            "in_progress" => "33",
            _ => "2",
        };
        styled(self.color_out, code, status)
    }

    fn tool_call(&mut self, call: s::ToolCall) {
        let kind = enum_name(&call.kind);
        let status = enum_name(&call.status);
        let tool = Tool {
            title: call.title.clone(),
            kind: kind.clone(),
            status: status.clone(),
            terminal: terminal_of(&call.content),
        };
        let kind_part = if kind == "other" {
            String::new()
        } else {
            format!(" ({kind})")
        };
        let line = format!(
            "{} {}{kind_part} · {}",
            styled(self.color_out, "36", "⚙"),
            styled(self.color_out, "1", &call.title),
            self.status_text(&status)
        );
        self.block_line(&line);
        self.tools.insert(call.tool_call_id.0.to_string(), tool);
        for c in &call.content {
            self.tool_content(c);
        }
    }

    fn tool_update(&mut self, update: s::ToolCallUpdate) {
        let id = update.tool_call_id.0.to_string();
        let f = update.fields;
        let tool = self.tools.entry(id.clone()).or_insert_with(|| Tool {
            title: format!("tool call {id}"),
            kind: "other".into(),
            status: "pending".into(),
            terminal: None,
        });
        if let Some(t) = f.content.as_deref().and_then(terminal_of) {
            tool.terminal = Some(t);
        }
        if let Some(t) = &f.title {
            tool.title = t.clone();
        }
        if let Some(k) = &f.kind {
            tool.kind = enum_name(k);
        }
        let changed = match &f.status {
            Some(st) => {
                let st = enum_name(st);
                let changed = st != tool.status;
                tool.status = st;
                changed
            }
            None => false,
        };
        let (title, status) = (tool.title.clone(), tool.status.clone());
        let terminal = tool.terminal.clone();
        if changed || f.title.is_some() {
            let line = format!("  ↳ {title} · {}", self.status_text(&status));
            self.block_line(&line);
        }
        let mut has_text = false;
        if let Some(content) = &f.content {
            for c in content {
                has_text |= matches!(c, s::ToolCallContent::Content(_));
                self.tool_content(c);
            }
        }
        // A finished call that only embedded a terminal: show what the terminal printed.
        let finished = changed && (status == "completed" || status == "failed");
        if let (true, false, Some(terminal)) = (finished, has_text, terminal) {
            let output = self.terminal_output.as_ref().and_then(|f| f(&terminal));
            if let Some(output) = output.filter(|o| !o.trim().is_empty()) {
                self.text_lines(&output);
            }
        }
    }

    /// Indented tool output, at most [`MAX_CONTENT_LINES`] (the last ones for long output).
    fn text_lines(&mut self, text: &str) {
        let text = sanitize(text);
        let lines: Vec<&str> = text.lines().collect();
        self.newline();
        let bar = styled(self.color_out, "2", "│");
        let skip = lines.len().saturating_sub(MAX_CONTENT_LINES);
        if skip > 0 {
            let more = format!("… {skip} earlier lines");
            self.out_raw(&format!(
                "    {bar} {}\n",
                styled(self.color_out, "2", &more)
            ));
        }
        for l in &lines[skip..] {
            self.out_raw(&format!("    {bar} {l}\n"));
        }
    }

    fn tool_content(&mut self, c: &s::ToolCallContent) {
        match c {
            s::ToolCallContent::Content(c) => {
                let text = content_text(&c.content);
                let lines: Vec<&str> = text.lines().collect();
                self.newline();
                let bar = styled(self.color_out, "2", "│");
                for l in lines.iter().take(MAX_CONTENT_LINES) {
                    self.out_raw(&format!("    {bar} {l}\n"));
                }
                if lines.len() > MAX_CONTENT_LINES {
                    let more = format!("… {} more lines", lines.len() - MAX_CONTENT_LINES);
                    self.out_raw(&format!(
                        "    {bar} {}\n",
                        styled(self.color_out, "2", &more)
                    ));
                }
            }
            s::ToolCallContent::Diff(d) => {
                let summary = diff_summary(d.old_text.as_deref(), &d.new_text);
                let line = format!("    diff {}: {summary}", d.path.display());
                let line = styled(self.color_out, "35", &line);
                self.block_line(&line);
            }
            s::ToolCallContent::Terminal(t) => {
                let line = styled(
                    self.color_out,
                    "2",
                    &format!("    [terminal {}]", t.terminal_id.0),
                );
                self.block_line(&line);
            }
            _ => {
                let line = styled(self.color_out, "2", "    [content]");
                self.block_line(&line);
            }
        }
    }
}

/// The id of the first terminal embedded in tool call content.
fn terminal_of(content: &[s::ToolCallContent]) -> Option<String> {
    content.iter().find_map(|c| match c {
        s::ToolCallContent::Terminal(t) => Some(t.terminal_id.0.to_string()),
        _ => None,
    })
}

/// A one-line description of a content block: its text, or `[image/png]`, `[link uri]`...
pub fn content_text(block: &s::ContentBlock) -> String {
    match block {
        s::ContentBlock::Text(t) => t.text.clone(),
        other => {
            let v = serde_json::to_value(other).unwrap_or(Value::Null);
            let kind = v["type"].as_str().unwrap_or("content").to_string();
            let detail = v["uri"]
                .as_str()
                .or_else(|| v["resource"]["uri"].as_str())
                .or_else(|| v["mimeType"].as_str())
                .map(|d| format!(" {d}"))
                .unwrap_or_default();
            format!("[{kind}{detail}]")
        }
    }
}

/// `new file, 3 lines` or `+2 -1 lines`: counts of lines only in the new / old text.
pub fn diff_summary(old: Option<&str>, new: &str) -> String {
    let Some(old) = old else {
        return format!("new file, {} line(s)", new.lines().count());
    };
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for l in old.lines() {
        *counts.entry(l).or_default() -= 1;
    }
    for l in new.lines() {
        *counts.entry(l).or_default() += 1;
    }
    let added: i64 = counts.values().filter(|c| **c > 0).sum();
    let removed: i64 = -counts.values().filter(|c| **c < 0).sum::<i64>();
    if added == 0 && removed == 0 {
        "no line changes".to_string()
    } else {
        format!("+{added} -{removed} lines")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_summaries() {
        assert_eq!(diff_summary(None, "a\nb\n"), "new file, 2 line(s)");
        assert_eq!(diff_summary(Some("a\nb\nc"), "a\nB\nc\nd"), "+2 -1 lines");
        assert_eq!(diff_summary(Some("a"), "a"), "no line changes");
    }

    #[test]
    fn non_text_content_is_named() {
        let link: s::ContentBlock =
            serde_json::from_str(r#"{"type":"resource_link","uri":"file:///x","name":"x"}"#)
                .unwrap();
        assert_eq!(content_text(&link), "[resource_link file:///x]");
        assert_eq!(content_text(&"hi".into()), "hi");
    }
}

/// `text` with every control character that a terminal could act on made visible: ESC as `␛`,
/// other C0 controls (but `\n` and `\t`), DEL and C1 controls as `�`. What the agent (or a
/// command it runs) sends is shown, never interpreted: no cursor moves, title or clipboard
/// changes, no line overwritten with `\r`.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let bad =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c {
            '\x1b' => '\u{241b}',
            c if bad(c) => '\u{fffd}',
            c => c,
        })
        .collect::<String>()
        .into()
}

/// [`sanitize`] applied to every string (and object key) in `v`.
pub fn sanitize_json(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = sanitize(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_json),
        Value::Object(map) => {
            let dirty = map
                .keys()
                .any(|k| matches!(sanitize(k), std::borrow::Cow::Owned(_)));
            if dirty {
                let old = std::mem::take(map);
                for (k, mut val) in old {
                    sanitize_json(&mut val);
                    map.insert(sanitize(&k).into_owned(), val);
                }
            } else {
                map.values_mut().for_each(sanitize_json);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod sanitize_tests {
    use super::*;

    #[test]
    fn escape_sequences_from_the_agent_are_shown_not_interpreted() {
        assert_eq!(sanitize("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            sanitize("\x1b]52;c;cHduZWQ=\x07\x1b[2Jhi\r\u{9b}31m"),
            "\u{241b}]52;c;cHduZWQ=\u{fffd}\u{241b}[2Jhi\u{fffd}\u{fffd}31m"
        );
        let mut v = serde_json::json!({"a\x1b": ["\x1b[1m", 1, {"t": "ok\x07"}]});
        sanitize_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a\u{241b}": ["\u{241b}[1m", 1, {"t": "ok\u{fffd}"}]})
        );
    }
}
