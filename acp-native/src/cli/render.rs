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
    /// The tool calls seen (the newest [`MAX_TOOLS`]), by id.
    tools: HashMap<String, Tool>,
    /// Their ids, oldest first (with ids since replaced: see [`State::remember_tool`]).
    tool_order: std::collections::VecDeque<String>,
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
/// Tool calls remembered (for their titles and terminals); the oldest are forgotten.
const MAX_TOOLS: usize = 1024;
/// Longest tool title remembered, in bytes.
const MAX_TOOL_TITLE: usize = 1024;

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
                tool_order: std::collections::VecDeque::new(),
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
            // The params as received (valid JSON, checked by the engine), on one line.
            st.out_raw(&one_line(raw));
            st.out_raw("\n");
            return;
        }
        // Only what is shown is read (and sanitized as it is read); the rest of the message
        // is skipped without being built, so a large update costs no more than its text.
        match view::read(raw) {
            Ok(update) => st.render(update),
            Err(kind) => {
                let kind = kind.map_or_else(|| "malformed".to_owned(), |k| k.0);
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

    fn render(&mut self, update: view::Update) {
        match update {
            view::Update::MessageChunk(c) => self.stream(Block::Message, &c.content.text()),
            view::Update::ThoughtChunk(c) => self.stream(Block::Thought, &c.content.text()),
            view::Update::UserChunk(c) => {
                let line = styled(self.color_out, "1", &format!("> {}", c.content.text()));
                self.block_line(&line);
            }
            view::Update::Plan(plan) => self.plan(plan),
            view::Update::ToolCall(call) => self.tool_call(call),
            view::Update::ToolCallUpdate(update) => self.tool_update(update),
            view::Update::Mode(m) => {
                let line = styled(
                    self.color_out,
                    "2",
                    &format!("[mode: {}]", m.current_mode_id.0),
                );
                self.block_line(&line);
            }
            view::Update::Commands(c) => {
                let mut names: Vec<String> = c
                    .available_commands
                    .items
                    .iter()
                    .map(|c| format!("/{}", c.name.0))
                    .collect();
                if c.available_commands.skipped > 0 {
                    names.push(format!("(+{})", c.available_commands.skipped));
                }
                let line = styled(
                    self.color_out,
                    "2",
                    &format!("[commands: {}]", names.join(" ")),
                );
                self.block_line(&line);
            }
            view::Update::Other(kind) => {
                // Metadata updates (session info, usage, config...): one dim line.
                let line = styled(self.color_out, "2", &format!("[{}]", kind.0));
                self.block_line(&line);
            }
        }
    }

    fn plan(&mut self, plan: view::Plan) {
        let mut entries: Vec<(String, String)> = plan
            .entries
            .items
            .into_iter()
            .map(|e| (e.content.0, e.status.0))
            .collect();
        if plan.entries.skipped > 0 {
            let more = format!("… {} more steps", plan.entries.skipped);
            entries.push((more, String::new()));
        }
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

    /// Remembers a tool call (its title cut to [`MAX_TOOL_TITLE`]); beyond [`MAX_TOOLS`] the
    /// oldest is forgotten (an agent inventing ids cannot grow this without bound).
    fn remember_tool(&mut self, id: String, mut tool: Tool) {
        if tool.title.len() > MAX_TOOL_TITLE {
            let mut end = MAX_TOOL_TITLE;
            while !tool.title.is_char_boundary(end) {
                end -= 1;
            }
            tool.title.truncate(end);
            tool.title.push('…');
        }
        if self.tools.insert(id.clone(), tool).is_none() {
            self.tool_order.push_back(id);
        }
        while self.tools.len() > MAX_TOOLS {
            match self.tool_order.pop_front() {
                Some(old) => {
                    self.tools.remove(&old);
                }
                None => break,
            }
        }
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

    fn tool_call(&mut self, call: view::ToolCall) {
        let kind = call.kind.map_or_else(|| "other".to_owned(), |k| k.0);
        let status = call.status.map_or_else(|| "pending".to_owned(), |s| s.0);
        let content = call.content.unwrap_or_default();
        let kind_part = if kind == "other" {
            String::new()
        } else {
            format!(" ({kind})")
        };
        let line = format!(
            "{} {}{kind_part} · {}",
            styled(self.color_out, "36", "⚙"),
            styled(self.color_out, "1", &call.title.0),
            self.status_text(&status)
        );
        self.block_line(&line);
        let tool = Tool {
            title: call.title.0,
            kind,
            status,
            terminal: terminal_of(&content.items),
        };
        self.remember_tool(call.tool_call_id.0, tool);
        self.tool_contents(&content);
    }

    fn tool_update(&mut self, update: view::ToolCallUpdate) {
        let id = update.tool_call_id.0;
        let mut tool = self.tools.remove(&id).unwrap_or_else(|| Tool {
            title: format!("tool call {id}"),
            kind: "other".into(),
            status: "pending".into(),
            terminal: None,
        });
        if let Some(t) = update.content.as_ref().and_then(|c| terminal_of(&c.items)) {
            tool.terminal = Some(t);
        }
        let has_title = update.title.is_some();
        if let Some(t) = update.title {
            tool.title = t.0;
        }
        if let Some(k) = update.kind {
            tool.kind = k.0;
        }
        let changed = match update.status {
            Some(st) => {
                let changed = st.0 != tool.status;
                tool.status = st.0;
                changed
            }
            None => false,
        };
        let (title, status) = (tool.title.clone(), tool.status.clone());
        let terminal = tool.terminal.clone();
        self.remember_tool(id, tool);
        if changed || has_title {
            let line = format!("  ↳ {title} · {}", self.status_text(&status));
            self.block_line(&line);
        }
        let mut has_text = false;
        if let Some(content) = &update.content {
            has_text = content
                .items
                .iter()
                .any(|c| matches!(c, view::ToolContent::Content(_)));
            self.tool_contents(content);
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

    fn tool_contents(&mut self, content: &view::Capped<view::ToolContent, MAX_TOOL_CONTENT>) {
        for c in &content.items {
            self.tool_content(c);
        }
        if content.skipped > 0 {
            let more = format!("    [+{} more content items]", content.skipped);
            let line = styled(self.color_out, "2", &more);
            self.block_line(&line);
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

    fn tool_content(&mut self, c: &view::ToolContent) {
        match c {
            view::ToolContent::Content(c) => {
                let text = c.text();
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
            view::ToolContent::Diff {
                path,
                old_text,
                new_text,
            } => {
                let summary = diff_summary(old_text.as_deref(), new_text);
                let line = format!("    diff {}: {summary}", path.0);
                let line = styled(self.color_out, "35", &line);
                self.block_line(&line);
            }
            view::ToolContent::Terminal(id) => {
                let line = styled(self.color_out, "2", &format!("    [terminal {}]", id.0));
                self.block_line(&line);
            }
            view::ToolContent::Other => {
                let line = styled(self.color_out, "2", "    [content]");
                self.block_line(&line);
            }
        }
    }
}

/// The id of the first terminal embedded in tool call content.
fn terminal_of(content: &[view::ToolContent]) -> Option<String> {
    content.iter().find_map(|c| match c {
        view::ToolContent::Terminal(id) => Some(id.0.clone()),
        _ => None,
    })
}

/// One line of JSON text: `raw` (valid JSON) with its line breaks and tabs removed. They can
/// only be whitespace between tokens (JSON strings cannot hold them raw), so the value is the
/// same; nothing else is rewritten (no copy when there are none).
fn one_line(raw: &str) -> std::borrow::Cow<'_, str> {
    if raw.bytes().any(|b| matches!(b, b'\n' | b'\r' | b'\t')) {
        raw.replace(['\n', '\r', '\t'], "").into()
    } else {
        raw.into()
    }
}

/// Tool content items shown per update (the rest are counted).
const MAX_TOOL_CONTENT: usize = 64;

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

/// What the renderer reads of a `session/update`: only the fields it shows, every string
/// [`sanitize`]d as it is read ([`view::Clean`]), arrays cut ([`view::Capped`]). Everything
/// else (unknown members, `_meta`, raw tool input, data it does not show) is skipped by the
/// parser without being built, and tagged unions are read in two steps (the tag, then the
/// variant's fields, from the same borrowed text) rather than buffered: memory follows what is
/// shown, not the size of the message.
mod view {
    use std::borrow::Cow;
    use std::marker::PhantomData;

    use acp_core::RawValue;
    use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
    use serde::Deserialize;

    use super::sanitize;

    /// A string from the agent, sanitized ([`sanitize`]) as it is read.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct Clean(pub String);

    impl<'de> Deserialize<'de> for Clean {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Clean, D::Error> {
            let text = String::deserialize(d)?;
            Ok(Clean(match sanitize(&text) {
                Cow::Borrowed(_) => text,
                Cow::Owned(clean) => clean,
            }))
        }
    }

    /// The first `N` items of an array; the others are skipped (counted, not built).
    #[derive(Debug)]
    pub struct Capped<T, const N: usize> {
        pub items: Vec<T>,
        pub skipped: usize,
    }

    impl<T, const N: usize> Default for Capped<T, N> {
        fn default() -> Self {
            Capped {
                items: Vec::new(),
                skipped: 0,
            }
        }
    }

    impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<T, const N: usize>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
                type Value = Capped<T, N>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an array")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                    let mut out = Capped::default();
                    while out.items.len() < N {
                        match seq.next_element::<T>()? {
                            Some(item) => out.items.push(item),
                            None => return Ok(out),
                        }
                    }
                    while seq.next_element::<IgnoredAny>()?.is_some() {
                        out.skipped += 1;
                    }
                    Ok(out)
                }
            }
            d.deserialize_seq(V::<T, N>(PhantomData))
        }
    }

    /// A session update, as shown.
    pub enum Update {
        MessageChunk(Chunk),
        ThoughtChunk(Chunk),
        UserChunk(Chunk),
        Plan(Plan),
        ToolCall(ToolCall),
        ToolCallUpdate(ToolCallUpdate),
        Mode(Mode),
        Commands(Commands),
        /// A known update shown as its kind only (session info, usage, config...).
        Other(Clean),
    }

    /// Kinds of the schema shown as one `[kind]` line.
    const SHOWN_AS_KIND: &[&str] = &[
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
    ];

    #[derive(Deserialize)]
    struct Notification<'a> {
        #[serde(rename = "sessionId")]
        _session_id: IgnoredAny,
        #[serde(borrow)]
        update: &'a RawValue,
    }

    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "sessionUpdate", borrow)]
        kind: Cow<'a, str>,
    }

    /// Reads a notification's params: its update, or the update's kind (if it could be read)
    /// when it is malformed or unknown.
    pub fn read(params: &str) -> Result<Update, Option<Clean>> {
        let n: Notification = serde_json::from_str(params).map_err(|_| None)?;
        let tag: Tag = serde_json::from_str(n.update.get()).map_err(|_| None)?;
        let raw = n.update.get();
        let kind = || Some(Clean(super::sanitize(&tag.kind).into_owned()));
        fn parse<'a, T: Deserialize<'a>>(raw: &'a str) -> Result<T, ()> {
            serde_json::from_str(raw).map_err(|_| ())
        }
        let update = match &*tag.kind {
            "agent_message_chunk" => parse(raw).map(Update::MessageChunk),
            "agent_thought_chunk" => parse(raw).map(Update::ThoughtChunk),
            "user_message_chunk" => parse(raw).map(Update::UserChunk),
            "plan" => parse(raw).map(Update::Plan),
            "tool_call" => parse(raw).map(Update::ToolCall),
            "tool_call_update" => parse(raw).map(Update::ToolCallUpdate),
            "current_mode_update" => parse(raw).map(Update::Mode),
            "available_commands_update" => parse(raw).map(Update::Commands),
            k if SHOWN_AS_KIND.contains(&k) => Ok(Update::Other(Clean(k.to_owned()))),
            _ => Err(()),
        };
        update.map_err(|()| kind())
    }

    #[derive(Deserialize)]
    pub struct Chunk {
        pub content: Content,
    }

    /// A content block: its text, or what it is (`[image/png]`, `[resource_link uri]`...).
    #[derive(Deserialize)]
    pub struct Content {
        #[serde(rename = "type")]
        kind: Clean,
        #[serde(default)]
        text: Option<Clean>,
        #[serde(default)]
        uri: Option<Clean>,
        #[serde(default, rename = "mimeType")]
        mime_type: Option<Clean>,
        #[serde(default)]
        resource: Option<Resource>,
    }

    #[derive(Deserialize)]
    struct Resource {
        #[serde(default)]
        uri: Option<Clean>,
    }

    impl Content {
        /// Its text, or `[kind detail]` for other blocks.
        pub fn text(&self) -> Cow<'_, str> {
            if self.kind.0 == "text" {
                return Cow::Borrowed(self.text.as_ref().map_or("", |t| &t.0));
            }
            let detail = self
                .uri
                .as_ref()
                .or_else(|| self.resource.as_ref().and_then(|r| r.uri.as_ref()))
                .or(self.mime_type.as_ref())
                .map(|d| format!(" {}", d.0))
                .unwrap_or_default();
            Cow::Owned(format!("[{}{detail}]", self.kind.0))
        }
    }

    #[derive(Deserialize)]
    pub struct Plan {
        pub entries: Capped<PlanEntry, 256>,
    }

    #[derive(Deserialize)]
    pub struct PlanEntry {
        pub content: Clean,
        pub status: Clean,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ToolCall {
        pub tool_call_id: Clean,
        pub title: Clean,
        #[serde(default)]
        pub kind: Option<Clean>,
        #[serde(default)]
        pub status: Option<Clean>,
        #[serde(default)]
        pub content: Option<Capped<ToolContent, { super::MAX_TOOL_CONTENT }>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ToolCallUpdate {
        pub tool_call_id: Clean,
        #[serde(default)]
        pub title: Option<Clean>,
        #[serde(default)]
        pub kind: Option<Clean>,
        #[serde(default)]
        pub status: Option<Clean>,
        #[serde(default)]
        pub content: Option<Capped<ToolContent, { super::MAX_TOOL_CONTENT }>>,
    }

    /// One item of a tool call's content.
    pub enum ToolContent {
        Content(Content),
        Diff {
            path: Clean,
            /// Not shown (only counted in lines): not sanitized.
            old_text: Option<String>,
            new_text: String,
        },
        Terminal(Clean),
        Other,
    }

    impl<'de> Deserialize<'de> for ToolContent {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ToolContent, D::Error> {
            use serde::de::Error;
            #[derive(Deserialize)]
            struct Item<'a> {
                #[serde(rename = "type", borrow)]
                kind: Cow<'a, str>,
            }
            #[derive(Deserialize)]
            struct Wrapped {
                content: Content,
            }
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Diff {
                path: Clean,
                #[serde(default)]
                old_text: Option<String>,
                new_text: String,
            }
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Terminal {
                terminal_id: Clean,
            }
            let raw = <&RawValue>::deserialize(d)?;
            let item: Item = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
            let parsed = match &*item.kind {
                "content" => serde_json::from_str::<Wrapped>(raw.get())
                    .map(|w| ToolContent::Content(w.content)),
                "diff" => serde_json::from_str::<Diff>(raw.get()).map(|d| ToolContent::Diff {
                    path: d.path,
                    old_text: d.old_text,
                    new_text: d.new_text,
                }),
                "terminal" => serde_json::from_str::<Terminal>(raw.get())
                    .map(|t| ToolContent::Terminal(t.terminal_id)),
                _ => Ok(ToolContent::Other),
            };
            parsed.map_err(D::Error::custom)
        }
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Mode {
        pub current_mode_id: Clean,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Commands {
        pub available_commands: Capped<Command, 256>,
    }

    #[derive(Deserialize)]
    pub struct Command {
        pub name: Clean,
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
        let content = |json: &str| serde_json::from_str::<view::Content>(json).unwrap();
        let link = content(r#"{"type":"resource_link","uri":"file:///x","name":"x"}"#);
        assert_eq!(link.text(), "[resource_link file:///x]");
        let image = content(r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#);
        assert_eq!(image.text(), "[image image/png]");
        let resource = content(r#"{"type":"resource","resource":{"uri":"u","text":"t"}}"#);
        assert_eq!(resource.text(), "[resource u]");
        assert_eq!(content(r#"{"type":"text","text":"hi"}"#).text(), "hi");
    }

    /// Members the renderer does not show are skipped, wherever they are (beside the update,
    /// inside it, inside content): they are not needed to read it, and arrays are cut.
    #[test]
    fn updates_are_read_without_what_is_not_shown() {
        let junk = vec!["0"; 10_000].join(",");
        let chunk = format!(
            r#"{{"sessionId":"s","junk":[{junk}],"update":{{"junk":[{junk}],"sessionUpdate":"agent_message_chunk","content":{{"junk":[{junk}],"type":"text","text":"x\u001b[2J"}}}}}}"#
        );
        match view::read(&chunk) {
            Ok(view::Update::MessageChunk(c)) => assert_eq!(c.content.text(), "x\u{241b}[2J"),
            _ => panic!("not read as a message chunk"),
        }
        let items = vec![r#"{"type":"terminal","terminalId":"t"}"#; 1000].join(",");
        let call = format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"c","title":"T","rawInput":{{"a":[{junk}]}},"content":[{items}]}}}}"#
        );
        match view::read(&call) {
            Ok(view::Update::ToolCall(c)) => {
                let content = c.content.unwrap();
                assert_eq!(content.items.len(), MAX_TOOL_CONTENT);
                assert_eq!(content.skipped, 1000 - MAX_TOOL_CONTENT);
            }
            _ => panic!("not read as a tool call"),
        }
        // Unknown or malformed: the kind (sanitized) if it could be read.
        let unknown = r#"{"sessionId":"s","update":{"sessionUpdate":"new\u001b[31m"}}"#;
        assert_eq!(
            view::read(unknown).err(),
            Some(Some(view::Clean("new\u{241b}[31m".into())))
        );
        let malformed = r#"{"sessionId":"s","update":{"sessionUpdate":"plan"}}"#;
        assert_eq!(
            view::read(malformed).err(),
            Some(Some(view::Clean("plan".into())))
        );
        assert_eq!(view::read(r#"{"update":{}}"#).err(), Some(None));
        assert_eq!(one_line("{\"a\" :\t[1,\r\n2]}"), "{\"a\" :[1,2]}");
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
        // Strings of an update are sanitized as they are read.
        let title: view::Clean = serde_json::from_str(r#""\u001b[1mok\u0007""#).unwrap();
        assert_eq!(title.0, "\u{241b}[1mok\u{fffd}");
    }
}
