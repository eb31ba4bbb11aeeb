//! Drawing the conversation on stdout: what each update changed in the thread (acp-client's
//! `Thread::apply_json` says which entry), drawn from the thread. [`Drawn`] remembers what was
//! drawn (each tool call's title, status and content, the plan, the status lines), so a
//! repeated or partial update draws only what changed. Every agent string is escaped here.

use std::collections::BTreeMap;
use std::sync::Arc;

use acp_client::display::{escape_line, escape_text};
use acp_client::question::Before;
use acp_client::thread::{Applied, Block as Content, Entry, Thread, ToolCall, ToolContent};

use super::screen::{styled, Block, Screen};

/// Looks up the final output of a terminal by id (see [`Ui::set_terminal_output`]).
///
/// [`Ui::set_terminal_output`]: super::Ui::set_terminal_output
pub type TerminalOutput = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Longest tool output shown inline, in lines.
const MAX_CONTENT_LINES: usize = 12;
/// Tool calls whose drawing is remembered (to draw only what changes); the oldest are forgotten.
const MAX_TOOLS: usize = 1024;

/// What was drawn of the thread.
pub(super) struct Drawn {
    /// What was drawn of each tool call (the newest [`MAX_TOOLS`]), by entry number.
    shown_tools: BTreeMap<u64, Shown>,
    last_plan: Option<Vec<(String, String)>>,
    /// Status lines last shown on stderr (shown again only when they change).
    last_commands: Option<String>,
    pub(super) last_title: Option<String>,
    /// Where the output of terminals embedded in tool calls is found.
    pub(super) terminal_output: Option<TerminalOutput>,
}

/// What was drawn of a tool call.
struct Shown {
    title: String,
    status: String,
    /// A signature of the content drawn (it is drawn again when it changes).
    content: Vec<(u8, usize, String)>,
}

impl Drawn {
    pub(super) fn new() -> Drawn {
        Drawn {
            shown_tools: BTreeMap::new(),
            last_plan: None,
            last_commands: None,
            last_title: None,
            terminal_output: None,
        }
    }

    /// Draws what `applied` changed in `thread`.
    pub(super) fn render(&mut self, applied: Applied, thread: &Thread, screen: &mut Screen) {
        match applied {
            Applied::Chunk {
                entry,
                started,
                block,
            } => {
                let kind = match thread.entry(entry) {
                    Some(Entry::Thought { .. }) => Block::Thought,
                    Some(Entry::User { .. }) => Block::User,
                    _ => Block::Message,
                };
                if started && screen.block == kind {
                    // A new message of the same kind: on a line of its own.
                    screen.end_block();
                }
                let text = match thread.entry(entry) {
                    // ACP v2's whole-message upsert (a replay's message): the message as it
                    // is now (its chunks stream as v1's do).
                    Some(
                        Entry::User { content, .. }
                        | Entry::Agent { content, .. }
                        | Entry::Thought { content, .. },
                    ) if started && block.kind == "text" && block.text.as_deref() == Some("") => {
                        std::borrow::Cow::Owned(
                            content.iter().map(content_text).collect::<String>(),
                        )
                    }
                    _ => content_text(&block),
                };
                // Escaped by the screen (the markdown renderer escapes before it reads).
                screen.stream(kind, &text);
            }
            Applied::Tool { entry, started } => self.tool(entry, started, thread, screen),
            Applied::Plan => self.plan(thread, screen),
            Applied::Mode => {
                if let Some(mode) = thread.current_mode.clone() {
                    screen.status_line(&format!("[mode: {mode}]"));
                }
            }
            Applied::Commands => {
                let mut names: Vec<String> = thread
                    .commands
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect();
                if thread.commands_more > 0 {
                    names.push(format!("(+{})", thread.commands_more));
                }
                let line = format!("[commands: {}]", names.join(" "));
                if self.last_commands.as_ref() != Some(&line) {
                    screen.status_line(&line);
                    self.last_commands = Some(line);
                }
            }
            Applied::Info => {
                if thread.title != self.last_title {
                    self.last_title = thread.title.clone();
                    if let Some(t) = self.last_title.clone() {
                        screen.status_line(&format!("[title: {}]", escape_line(&t)));
                    }
                }
            }
            // Shown at the end of the turn (usage) or not at all (config options: acp chat
            // has no control for them yet).
            Applied::Usage | Applied::ConfigOptions => {}
            // ACP v2's turn state and end of replay: the session engine's (the turn's end and
            // the session's opening are shown from it), not the conversation's.
            Applied::Ignored { kind } if kind == "state_update" || kind == "replay_complete" => {}
            Applied::Ignored { kind } => {
                screen.status_line(&format!("[session update: {}]", escape_line(&kind)));
            }
        }
    }

    fn plan(&mut self, thread: &Thread, screen: &mut Screen) {
        let mut entries: Vec<(String, String)> = thread
            .plan
            .iter()
            .map(|e| (escape_text(&e.content).into_owned(), e.status.clone()))
            .collect();
        if thread.plan_more > 0 {
            let more = format!("… {} more steps", thread.plan_more);
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
                    let head = styled(screen.color_out, "1", "Plan:");
                    let line = format!("{head} {} {content}", mark(status, screen.color_out));
                    screen.block_line(&line);
                }
            }
        } else {
            let head = styled(screen.color_out, "1", "Plan:");
            screen.block_line(&head);
            for (content, status) in &entries {
                let line = format!("  {} {content}", mark(status, screen.color_out));
                screen.out_raw(&format!("{line}\n"));
            }
        }
        self.last_plan = Some(entries);
    }

    /// Draws what changed of tool call `entry` since it was last drawn.
    fn tool(&mut self, entry: u64, started: bool, thread: &Thread, screen: &mut Screen) {
        let Some(Entry::Tool(call)) = thread.entry(entry) else {
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
                    styled(screen.color_out, "36", "⚙"),
                    styled(screen.color_out, "1", &title),
                    status_text(screen.color_out, &call.status)
                );
                screen.block_line(&line);
            }
            Some(b) if b.status != call.status || b.title != title => {
                let line = format!(
                    "  ↳ {title} · {}",
                    status_text(screen.color_out, &call.status)
                );
                screen.block_line(&line);
            }
            Some(_) => {}
        }
        let content_changed = before.as_ref().is_none_or(|b| b.content != signature);
        if content_changed || started {
            tool_contents(screen, &call);
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
                text_lines(screen, &output);
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
}

/// A tool call's status, coloured by what it means.
fn status_text(color_out: bool, status: &str) -> String {
    let code = match status {
        "completed" => "32",
        "failed" => "31",
        "in_progress" => "33",
        _ => "2",
    };
    styled(color_out, code, &escape_text(status))
}

fn tool_contents(screen: &mut Screen, call: &ToolCall) {
    for c in &call.content {
        tool_content(screen, c);
    }
    if call.content_more > 0 {
        let more = format!("    [+{} more content items]", call.content_more);
        let line = styled(screen.color_out, "2", &more);
        screen.block_line(&line);
    }
}

/// Indented tool output, at most [`MAX_CONTENT_LINES`] (the last ones for long output).
fn text_lines(screen: &mut Screen, text: &str) {
    let text = escape_text(text);
    let lines: Vec<&str> = text.lines().collect();
    screen.newline();
    let bar = styled(screen.color_out, "2", "│");
    let skip = lines.len().saturating_sub(MAX_CONTENT_LINES);
    if skip > 0 {
        let more = format!("… {skip} earlier lines");
        screen.out_raw(&format!(
            "    {bar} {}\n",
            styled(screen.color_out, "2", &more)
        ));
    }
    for l in &lines[skip..] {
        screen.out_raw(&format!("    {bar} {l}\n"));
    }
}

fn tool_content(screen: &mut Screen, c: &ToolContent) {
    match c {
        ToolContent::Content { content } => {
            let text = content_text(content);
            let text = escape_text(&text);
            let lines: Vec<&str> = text.lines().collect();
            screen.newline();
            let bar = styled(screen.color_out, "2", "│");
            for l in lines.iter().take(MAX_CONTENT_LINES) {
                screen.out_raw(&format!("    {bar} {l}\n"));
            }
            if lines.len() > MAX_CONTENT_LINES {
                let more = format!("… {} more lines", lines.len() - MAX_CONTENT_LINES);
                screen.out_raw(&format!(
                    "    {bar} {}\n",
                    styled(screen.color_out, "2", &more)
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
            let line = styled(screen.color_out, "35", &line);
            screen.block_line(&line);
        }
        ToolContent::Terminal { terminal_id } => {
            let line = format!("    [terminal {}]", escape_text(terminal_id));
            let line = styled(screen.color_out, "2", &line);
            screen.block_line(&line);
        }
        ToolContent::Unknown => {
            let line = styled(screen.color_out, "2", "    [content]");
            screen.block_line(&line);
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
pub(super) fn content_text(block: &Content) -> std::borrow::Cow<'_, str> {
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

/// A change in one line (acp-client's `question::summary`, the rule of the permission
/// question's diff): `+2 -1`, `new file, +3`, `no changes`….
pub(super) fn diff_summary(old: Option<&str>, new: &str) -> String {
    let before = old.map_or(Before::Missing, Before::Text);
    acp_client::question::summary(before, new)
}
