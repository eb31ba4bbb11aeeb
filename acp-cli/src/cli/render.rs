//! Terminal rendering for `acp chat`: session updates, permission dialogs, the spinner.
//!
//! Updates are folded into the shared conversation model (`acp_client::thread`: the same one
//! the extension and the browser client use), and what each update changed is drawn from it.
//! stdout carries the conversation only (agent text, thoughts, plans, tool calls), or with
//! `--json` one JSON line per session update; stderr carries everything else (the input and
//! permission prompts, notices, status lines such as the mode, commands and title, warnings,
//! errors, the spinner). Every write goes through [`Ui`],
//! which knows whether the cursor is at the start of a line, so blocks never start mid-line and
//! the spinner only draws (on stderr, only when it is a terminal) on an empty line.
//!
//! Every agent-supplied text shown (the conversation, tool output, warnings, errors, an
//! agent's stderr) goes through one escaper, acp-client's [`escape_text`]: `\n` and `\t`
//! kept, ESC as `␛`, other controls as `�`, bidi overrides and the other invisible characters
//! escaped (`\u202e`). No escape sequence is interpreted: no cursor moves, title or clipboard
//! changes, no line overwritten with `\r`, no text reordered.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::display::{ensure_line, escape_line, escape_text};
use acp_client::thread::{Applied, Block as Content, Entry, Limits, Thread, ToolCall, ToolContent};
use acp_core::RawValue;
use agent_client_protocol_schema::v1 as s;

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
    /// The screen's cursor is at the start of a line (stdout and stderr drawn together).
    at_line_start: bool,
    /// stdout is a terminal, shown with stderr on one screen: a line on stderr first ends the
    /// conversation's open line there. Otherwise (stdout piped or in a file) stderr's lines
    /// never break stdout's: the conversation stays as the agent sent it.
    shared_screen: bool,
    /// stdout's own last line is unfinished.
    out_line_open: bool,
    block: Block,
    /// The conversation, folded from the updates.
    thread: Thread,
    /// What was drawn of each tool call (the newest [`MAX_TOOLS`]), by entry number.
    shown_tools: BTreeMap<u64, Shown>,
    last_plan: Option<Vec<(String, String)>>,
    /// Status lines last shown on stderr (shown again only when they change).
    last_commands: Option<String>,
    last_title: Option<String>,
    /// The `session/prompt` result of the turn ending (feature `unstable`: its token usage is
    /// folded into the thread and shown at [`Ui::turn_end`]).
    #[cfg(feature = "unstable")]
    prompt_result: Option<String>,
    last_output: Instant,
    terminal_output: Option<TerminalOutput>,
    /// A line editor reads the input (a terminal): prompts are kept here for it to show
    /// instead of being written to stderr.
    line_editor: bool,
    prompt: Option<String>,
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
    User,
}

/// What was drawn of a tool call.
struct Shown {
    title: String,
    status: String,
    /// A signature of the content drawn (it is drawn again when it changes).
    content: Vec<(u8, usize, String)>,
}

/// Looks up the final output of a terminal by id (see [`Ui::set_terminal_output`]).
pub type TerminalOutput = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Longest tool output shown inline, in lines.
const MAX_CONTENT_LINES: usize = 12;
/// Tool calls whose drawing is remembered (to draw only what changes); the oldest are forgotten.
const MAX_TOOLS: usize = 1024;
/// Bytes of conversation the renderer's thread keeps (older entries are dropped).
const THREAD_BYTES: usize = 8 << 20;

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
                shared_screen: std::io::stdout().is_terminal(),
                out_line_open: false,
                block: Block::None,
                thread: Thread::new(Limits {
                    max_bytes: THREAD_BYTES,
                }),
                shown_tools: BTreeMap::new(),
                last_plan: None,
                last_commands: None,
                last_title: None,
                #[cfg(feature = "unstable")]
                prompt_result: None,
                last_output: Instant::now(),
                terminal_output: None,
                line_editor: false,
                prompt: None,
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
        let line = styled(st.color_err, "2", &escape_text(text));
        st.err_line(&line);
    }

    /// A warning on stderr (escaped: it often quotes the agent).
    pub fn warn(&self, text: &str) {
        let mut st = self.lock();
        let text = escape_text(text);
        let line = styled(st.color_err, "33", &format!("acp: warning: {text}"));
        st.err_line(&line);
    }

    /// An error on stderr (escaped: it often quotes the agent or its stderr).
    pub fn error(&self, text: &str) {
        let mut st = self.lock();
        let text = escape_text(text);
        let line = styled(st.color_err, "31", &format!("acp: {text}"));
        st.err_line(&line);
    }

    /// The input prompt (`> ` on stderr), for interactive use.
    pub fn input_prompt(&self) {
        let mut st = self.lock();
        st.newline();
        st.block = Block::None;
        let p = styled(st.color_err, "1;36", "> ");
        st.show_prompt(p);
    }

    /// Prompts go to the line editor (see [`Ui::take_prompt`]) instead of stderr.
    pub fn use_line_editor(&self) {
        self.lock().line_editor = true;
    }

    /// The prompt the line editor should show for the next input, if one was asked for.
    pub fn take_prompt(&self) -> Option<String> {
        self.lock().prompt.take()
    }

    /// The end of a turn: a newline after streamed text; the JSON line with `--json`.
    pub fn turn_end(&self, session_id: &str, stop_reason: &str) {
        let mut st = self.lock();
        // With the turn's result (feature `unstable`), the thread folds its token usage too.
        #[cfg(feature = "unstable")]
        let usage = match st.prompt_result.take() {
            Some(r) if st.thread.end_turn_json(&r).is_ok() => st.thread.turn_usage.clone(),
            _ => {
                st.thread.end_turn(stop_reason);
                None
            }
        };
        #[cfg(not(feature = "unstable"))]
        st.thread.end_turn(stop_reason);
        st.clear_spinner();
        st.spinner = None;
        if st.json {
            #[cfg_attr(not(feature = "unstable"), allow(unused_mut))]
            let mut line =
                serde_json::json!({ "sessionId": session_id, "stopReason": stop_reason });
            #[cfg(feature = "unstable")]
            if let Some(u) = &usage {
                line["usage"] = serde_json::to_value(u).unwrap_or_default();
            }
            st.out_raw(&format!("{line}\n"));
            st.at_line_start = true;
        } else {
            st.newline();
            st.block = Block::None;
            if stop_reason != "end_turn" {
                let line = styled(st.color_err, "2", &format!("[turn ended: {stop_reason}]"));
                st.err_line(&line);
            }
            // The context the agent last reported, once per turn, on stderr.
            if let Some(u) = &st.thread.usage {
                let cost = u
                    .cost
                    .as_ref()
                    .map(|c| format!(", {:.4} {}", c.amount, c.currency))
                    .unwrap_or_default();
                let line = format!("[context: {} of {} tokens{cost}]", u.used, u.size);
                st.status_line(&line);
            }
            // The turn's own token usage (feature `unstable`), when the agent reported it.
            #[cfg(feature = "unstable")]
            if let Some(u) = &usage {
                st.status_line(&turn_usage_line(u));
            }
        }
    }

    /// The `session/prompt` result of the turn about to end ([`Ui::turn_end`]); feature
    /// `unstable` (its draft `usage`).
    #[cfg(feature = "unstable")]
    pub fn prompt_result(&self, result: &impl serde::Serialize) {
        self.lock().prompt_result = serde_json::to_string(result).ok();
    }

    /// What `session/status` said (feature `unstable`): kept in the thread, shown on stderr.
    #[cfg(feature = "unstable")]
    pub fn session_status(&self, status: &str) {
        let mut st = self.lock();
        st.thread.set_session_status(status);
        st.status_line(&format!("[session status: {}]", escape_line(status)));
    }

    /// A title set with `session/set_title` (feature `unstable`): kept, shown once.
    #[cfg(feature = "unstable")]
    pub fn title_set(&self, title: &str) {
        let mut st = self.lock();
        st.thread.set_title(title);
        if st.last_title.as_deref() != Some(title) {
            st.last_title = Some(title.to_string());
            st.status_line(&format!("[title: {}]", escape_line(title)));
        }
    }

    /// The conversation so far for its record: its title and the thread's saved form.
    pub fn thread_record(&self) -> (String, String) {
        let st = self.lock();
        (super::sessions::title_of(&st.thread), st.thread.to_json())
    }

    /// The session's modes and config options as the agent answered them (`session/new`,
    /// `load`, `resume`), into the thread (later updates change them there).
    pub fn session_started(
        &self,
        session_id: &str,
        modes: Option<&s::SessionModeState>,
        config_options: Option<&Vec<s::SessionConfigOption>>,
    ) {
        let list = modes
            .map(|m| {
                m.available_modes
                    .iter()
                    .map(|m| acp_client::thread::Mode {
                        id: m.id.0.to_string(),
                        name: m.name.clone(),
                        description: m.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let current = modes.map(|m| m.current_mode_id.0.to_string());
        let config = config_options
            .and_then(|c| serde_json::value::to_raw_value(c).ok())
            .map(acp_client::thread::RawJson);
        self.lock()
            .thread
            .set_session(session_id, list, current, config);
    }

    /// The session's modes: the current one and (id, name) of each.
    pub fn modes(&self) -> (Option<String>, Vec<(String, String)>) {
        let st = self.lock();
        let list = st
            .thread
            .modes
            .iter()
            .map(|m| (m.id.clone(), m.name.clone()))
            .collect();
        (st.thread.current_mode.clone(), list)
    }

    /// The session's config options (the agent's JSON), if it has any.
    pub fn config_options(&self) -> Option<serde_json::Value> {
        let st = self.lock();
        let raw = st.thread.config_options.as_ref()?;
        serde_json::from_str(raw.get()).ok()
    }

    /// The agent's commands: (name, description, input hint).
    pub fn commands(&self) -> Vec<(String, String, Option<String>)> {
        self.lock()
            .thread
            .commands
            .iter()
            .map(|c| (c.name.clone(), c.description.clone(), c.hint.clone()))
            .collect()
    }

    /// Continues from a saved conversation (`--resume`).
    pub fn set_thread(&self, thread: Thread) {
        self.lock().thread = thread;
    }

    /// A prompt turn starts: the prompt joins the thread (what the agent says next is a new
    /// message, on a line of its own, even after a replayed one).
    pub fn begin_turn(&self, prompt: &str) {
        let mut st = self.lock();
        st.thread
            .begin_turn(vec![acp_client::thread::Block::text(prompt)]);
        st.newline();
        st.block = Block::None;
    }

    /// Renders one `session/update` (its raw params): folded into the thread, then what it
    /// changed is drawn. In the human view every string the agent sent goes through
    /// [`escape_text`] first (no escape sequence reaches the terminal).
    pub fn session_update(&self, params: Option<&RawValue>) {
        let mut st = self.lock();
        st.last_output = Instant::now();
        let raw = params.map_or("null", RawValue::get);
        // Only what is shown is read; the rest of the message is skipped without being built,
        // so a large update costs no more than its text (acp-client's thread).
        let applied = st.thread.apply_json(raw);
        if st.json {
            st.clear_spinner();
            // The params as received (valid JSON, checked by the engine), on one line.
            st.out_raw(&one_line(raw));
            st.out_raw("\n");
            return;
        }
        match applied {
            Ok(applied) => st.render(applied),
            Err(_) => st.status_line("[session update: unreadable, skipped]"),
        }
    }

    /// How the replay of a `session/load` sent now is taken (acp-client's
    /// `Thread::replay_view`): shown while nothing of the conversation is, else folded unshown.
    pub fn replay_view(&self) -> acp_client::thread::ReplayView {
        self.lock().thread.replay_view()
    }

    /// Folds one replayed `session/update` without showing it, in either view (a session
    /// reloaded after a crash or a dropped connection: acp-client's
    /// `Thread::apply_replayed_json` keeps the session's state and adds no conversation).
    pub fn fold_replayed(&self, params: Option<&RawValue>) {
        let raw = params.map_or("null", RawValue::get);
        if let Err(e) = self.lock().thread.apply_replayed_json(raw) {
            tracing::debug!("a replayed update not shown: {e}");
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
        Ok(serde_json::Value::String(s)) => s,
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
            self.out_line_open = last != '\n';
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
        let open = if self.shared_screen {
            !self.at_line_start
        } else {
            self.out_line_open
        };
        if open {
            self.out_raw("\n");
        }
    }

    fn err_line(&mut self, line: &str) {
        if self.shared_screen {
            self.newline();
        }
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
        self.show_prompt(q);
    }

    /// Writes a prompt, or keeps it for the line editor to show.
    fn show_prompt(&mut self, prompt: String) {
        if self.line_editor {
            self.clear_spinner();
            self.prompt = Some(prompt);
        } else {
            self.err_raw(&prompt);
        }
        // The user's Enter ends the line.
        self.at_line_start = true;
    }

    fn tool_title(&self, call: &s::ToolCallUpdate) -> String {
        let known = self.thread.tool(&call.tool_call_id.0).map(|(_, t)| t);
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

    /// A dim status line on stderr (never part of the conversation on stdout).
    fn status_line(&mut self, text: &str) {
        let line = styled(self.color_err, "2", &escape_text(text));
        self.err_line(&line);
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
            if block == Block::User {
                let mark = styled(self.color_out, "1", "> ");
                self.out_raw(&mark);
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

    fn render(&mut self, applied: Applied) {
        match applied {
            Applied::Chunk {
                entry,
                started,
                block,
            } => {
                let kind = match self.thread.entry(entry) {
                    Some(Entry::Thought { .. }) => Block::Thought,
                    Some(Entry::User { .. }) => Block::User,
                    _ => Block::Message,
                };
                if started && self.block == kind {
                    // A new message of the same kind: on a line of its own.
                    self.newline();
                    self.block = Block::None;
                }
                let text = content_text(&block);
                self.stream(kind, &escape_text(&text));
            }
            Applied::Tool { entry, started } => self.tool(entry, started),
            Applied::Plan => self.plan(),
            Applied::Mode => {
                if let Some(mode) = self.thread.current_mode.clone() {
                    self.status_line(&format!("[mode: {mode}]"));
                }
            }
            Applied::Commands => {
                let mut names: Vec<String> = self
                    .thread
                    .commands
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect();
                if self.thread.commands_more > 0 {
                    names.push(format!("(+{})", self.thread.commands_more));
                }
                let line = format!("[commands: {}]", names.join(" "));
                if self.last_commands.as_ref() != Some(&line) {
                    self.status_line(&line);
                    self.last_commands = Some(line);
                }
            }
            Applied::Info => {
                if self.thread.title != self.last_title {
                    self.last_title = self.thread.title.clone();
                    if let Some(t) = self.last_title.clone() {
                        self.status_line(&format!("[title: {}]", escape_line(&t)));
                    }
                }
            }
            // Shown at the end of the turn (usage) or not at all (config options: acp chat
            // has no control for them yet).
            Applied::Usage | Applied::ConfigOptions => {}
            Applied::Ignored { kind } => {
                self.status_line(&format!("[session update: {}]", escape_line(&kind)));
            }
        }
    }

    fn plan(&mut self) {
        let mut entries: Vec<(String, String)> = self
            .thread
            .plan
            .iter()
            .map(|e| (escape_text(&e.content).into_owned(), e.status.clone()))
            .collect();
        if self.thread.plan_more > 0 {
            let more = format!("… {} more steps", self.thread.plan_more);
            entries.push((more, String::new()));
        }
        if self.last_plan.as_ref() == Some(&entries) {
            return;
        }
        let mark = |status: &str, color: bool| {
            let (mark, code) = match status {
                "completed" => ("[x]", "32"),
                "in_progress" => ("[~]", "33"),
                "cancelled" | "failed" => ("[-]", "2"),
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
        styled(self.color_out, code, &escape_text(status))
    }

    /// Draws what changed of tool call `entry` since it was last drawn.
    fn tool(&mut self, entry: u64, started: bool) {
        let Some(Entry::Tool(call)) = self.thread.entry(entry) else {
            return;
        };
        let call = call.clone();
        let title = escape_text(&call.title).into_owned();
        let signature = content_signature(&call);
        let before = self.shown_tools.remove(&entry);
        match &before {
            None => {
                let kind_part = if call.kind == "other" {
                    String::new()
                } else {
                    format!(" ({})", escape_text(&call.kind))
                };
                let line = format!(
                    "{} {}{kind_part} · {}",
                    styled(self.color_out, "36", "⚙"),
                    styled(self.color_out, "1", &title),
                    self.status_text(&call.status)
                );
                self.block_line(&line);
            }
            Some(b) if b.status != call.status || b.title != title => {
                let line = format!("  ↳ {title} · {}", self.status_text(&call.status));
                self.block_line(&line);
            }
            Some(_) => {}
        }
        let content_changed = before.as_ref().is_none_or(|b| b.content != signature);
        if content_changed || started {
            self.tool_contents(&call);
        }
        // A finished call that only embedded a terminal: show what the terminal printed.
        let finished_now = before.as_ref().is_some_and(|b| b.status != call.status)
            && (call.status == "completed" || call.status == "failed");
        let has_text = call
            .content
            .iter()
            .any(|c| matches!(c, ToolContent::Content { .. }));
        if let (true, false, Some(terminal)) = (finished_now, has_text, terminal_of(&call)) {
            let output = self.terminal_output.as_ref().and_then(|f| f(&terminal));
            if let Some(output) = output.filter(|o| !o.trim().is_empty()) {
                self.text_lines(&output);
            }
        }
        self.shown_tools.insert(
            entry,
            Shown {
                title,
                status: call.status.clone(),
                content: signature,
            },
        );
        while self.shown_tools.len() > MAX_TOOLS {
            self.shown_tools.pop_first();
        }
    }

    fn tool_contents(&mut self, call: &ToolCall) {
        for c in &call.content {
            self.tool_content(c);
        }
        if call.content_more > 0 {
            let more = format!("    [+{} more content items]", call.content_more);
            let line = styled(self.color_out, "2", &more);
            self.block_line(&line);
        }
    }

    /// Indented tool output, at most [`MAX_CONTENT_LINES`] (the last ones for long output).
    fn text_lines(&mut self, text: &str) {
        let text = escape_text(text);
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

    fn tool_content(&mut self, c: &ToolContent) {
        match c {
            ToolContent::Content { content } => {
                let text = content_text(content);
                let text = escape_text(&text);
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
            ToolContent::Diff {
                path,
                old_text,
                new_text,
            } => {
                let summary = diff_summary(old_text.as_deref(), new_text);
                let line = format!("    diff {}: {summary}", escape_text(path));
                let line = styled(self.color_out, "35", &line);
                self.block_line(&line);
            }
            ToolContent::Terminal { terminal_id } => {
                let line = format!("    [terminal {}]", escape_text(terminal_id));
                let line = styled(self.color_out, "2", &line);
                self.block_line(&line);
            }
            ToolContent::Unknown => {
                let line = styled(self.color_out, "2", "    [content]");
                self.block_line(&line);
            }
        }
    }
}

/// What a tool call's content is, cheaply: kind, size and path or id per item.
fn content_signature(call: &ToolCall) -> Vec<(u8, usize, String)> {
    call.content
        .iter()
        .map(|c| match c {
            ToolContent::Content { content } => (
                0,
                content.text.as_ref().map_or(0, String::len),
                content.kind.clone(),
            ),
            ToolContent::Diff { path, new_text, .. } => (1, new_text.len(), path.clone()),
            ToolContent::Terminal { terminal_id } => (2, 0, terminal_id.clone()),
            ToolContent::Unknown => (3, 0, String::new()),
        })
        .collect()
}

/// The id of the first terminal embedded in a tool call's content.
fn terminal_of(call: &ToolCall) -> Option<String> {
    call.content.iter().find_map(|c| match c {
        ToolContent::Terminal { terminal_id } => Some(terminal_id.clone()),
        _ => None,
    })
}

/// A content block as text: its text, or `[kind detail]` (`[image image/png]`,
/// `[resource_link file:///x]`…). Not escaped.
pub fn content_text(block: &Content) -> std::borrow::Cow<'_, str> {
    if block.kind == "text" {
        return block.text.as_deref().unwrap_or("").into();
    }
    let detail = block
        .uri
        .as_ref()
        .or_else(|| block.resource.as_ref().map(|r| &r.uri))
        .or(block.mime_type.as_ref())
        .map(|d| format!(" {d}"))
        .unwrap_or_default();
    format!("[{}{detail}]", block.kind).into()
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
/// escaped as it is read ([`view::Clean`]), arrays cut ([`view::Capped`]). Everything
/// else (unknown members, `_meta`, raw tool input, data it does not show) is skipped by the
/// parser without being built, and tagged unions are read in two steps (the tag, then the
/// variant's fields, from the same borrowed text) rather than buffered: memory follows what is
/// shown, not the size of the message.
/// The status line of a turn's token usage (feature `unstable`).
#[cfg(feature = "unstable")]
fn turn_usage_line(u: &acp_client::thread::TurnUsage) -> String {
    let mut extra = Vec::new();
    if let Some(n) = u.thought_tokens {
        extra.push(format!("{n} thought"));
    }
    if let Some(n) = u.cached_read_tokens {
        extra.push(format!("{n} cache read"));
    }
    if let Some(n) = u.cached_write_tokens {
        extra.push(format!("{n} cache write"));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!("; {}", extra.join(", "))
    };
    format!(
        "[turn: {} tokens ({} in, {} out{extra})]",
        u.total_tokens, u.input_tokens, u.output_tokens
    )
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
        let content = |json: &str| serde_json::from_str::<Content>(json).unwrap();
        let link = content(r#"{"type":"resource_link","uri":"file:///x","name":"x"}"#);
        assert_eq!(content_text(&link), "[resource_link file:///x]");
        let image = content(r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#);
        assert_eq!(content_text(&image), "[image image/png]");
        let resource = content(r#"{"type":"resource","resource":{"uri":"u","text":"t"}}"#);
        assert_eq!(content_text(&resource), "[resource u]");
        assert_eq!(
            content_text(&content(r#"{"type":"text","text":"hi"}"#)),
            "hi"
        );
        assert_eq!(one_line("{\"a\" :\t[1,\r\n2]}"), "{\"a\" :[1,2]}");
    }
}

#[cfg(test)]
mod escape_tests {
    use super::*;

    #[test]
    fn escape_sequences_from_the_agent_are_shown_not_interpreted() {
        assert_eq!(escape_text("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            escape_text("\x1b]52;c;cHduZWQ=\x07\x1b[2Jhi\r\u{9b}31m"),
            "\u{241b}]52;c;cHduZWQ=\u{fffd}\u{241b}[2Jhi\u{fffd}\u{fffd}31m"
        );
    }

    #[test]
    fn bidi_overrides_and_invisible_characters_are_shown_escaped() {
        // `txt.exe` shown as `exe.txt`: passed unescaped before.
        assert_eq!(escape_text("a\u{202e}txt.exe"), "a\\u202etxt.exe");
        assert_eq!(
            escape_text("\u{2066}x\u{2069}\u{200e}\u{200b}"),
            "\\u2066x\\u2069\\u200e\\u200b"
        );
    }
}
