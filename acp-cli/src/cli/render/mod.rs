//! Terminal rendering for `acp chat`: session updates, permission dialogs, the spinner.
//!
//! Updates are folded into the shared conversation model (`acp_client::thread`: the same one
//! the extension and the browser client use), and what each update changed is drawn from it.
//! stdout carries the conversation only (agent text, thoughts, plans, tool calls), or with
//! `--json` one JSON line per session update; stderr carries everything else (the input and
//! permission prompts, notices, status lines such as the mode, commands and title, warnings,
//! errors, the spinner). Every write goes through [`Ui`], whose screen knows whether the
//! cursor is at the start of a line, so blocks never start mid-line and the spinner only draws
//! (on stderr, only when it is a terminal) on an empty line.
//!
//! Every agent-supplied text shown (the conversation, tool output, warnings, errors, an
//! agent's stderr) goes through one escaper, acp-client's [`escape_text`]: `\n` and `\t`
//! kept, ESC as `␛`, other controls as `�`, bidi overrides and the other invisible characters
//! escaped (`\u202e`). No escape sequence is interpreted: no cursor moves, title or clipboard
//! changes, no line overwritten with `\r`, no text reordered.
//!
//! The conversation is acp-client's session engine ([`acp_client::session::Session`]), which
//! owns the thread: every update goes through it once (`Session::update`: shown, folded into
//! a replay not shown again, held before the session's id is known, or not this session's),
//! and what it says of the session (opened, lost, restarted…) is shown in its words.
//!
//! The files: here, [`Ui`] (the shared handle: notices, the prompt, a turn's updates and its
//! end); `screen.rs` the two streams, the cursor, the spinner and prompts; `conversation.rs`
//! drawing what each update changed (text, tool calls, the plan, status lines);
//! `questions.rs` permission questions; `session.rs` the session engine carried out (its
//! open, reopen and restart steps, its notices) and the session's state kept in the thread
//! (modes, config options, commands, the record's title).

mod conversation;
mod highlight;
mod markdown;
mod questions;
mod screen;
mod session;
mod status;
mod table;
mod wrap;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::display::escape_text;
use acp_client::session::Routed;
use acp_core::RawValue;

use conversation::Drawn;
use screen::{styled, Screen};
use session::Conversation;

pub use conversation::TerminalOutput;

/// The shared terminal writer. Cheap to clone.
#[derive(Clone)]
pub struct Ui {
    state: Arc<Mutex<State>>,
}

struct State {
    json: bool,
    /// stdout and stderr, and where the cursor is.
    screen: Screen,
    /// The conversation: acp-client's session engine, which owns the thread the updates are
    /// folded into (it reads as that thread: [`Conversation`]).
    thread: Conversation,
    /// What was drawn of it.
    drawn: Drawn,
    /// The `session/prompt` result of the turn ending (feature `unstable`: its token usage is
    /// folded into the thread and shown at [`Ui::turn_end`]).
    #[cfg(feature = "unstable")]
    prompt_result: Option<String>,
}

/// Bytes of conversation the renderer's thread keeps (older entries are dropped).
const THREAD_BYTES: usize = 8 << 20;

impl Ui {
    /// A writer for the real stdout/stderr. `json`: session updates as JSON lines.
    pub fn new(json: bool) -> Ui {
        let ui = Ui {
            state: Arc::new(Mutex::new(State {
                json,
                screen: Screen::new(json),
                thread: Conversation::new(),
                drawn: Drawn::new(),
                #[cfg(feature = "unstable")]
                prompt_result: None,
            })),
        };
        if ui.lock().screen.spinner_allowed() {
            let weak = Arc::downgrade(&ui.state);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .screen
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
        self.lock().drawn.terminal_output = Some(lookup);
    }

    /// Shows the spinner with `label` (when stderr is a terminal) until output arrives or
    /// [`Ui::spinner_stop`].
    pub fn spinner_start(&self, label: &str) {
        self.lock().screen.spinner_start(label);
    }

    pub fn spinner_stop(&self) {
        self.lock().screen.spinner_stop();
    }

    /// Writes the conversation given to stdout so far (`acp chat` calls it once it has taken
    /// the updates waiting: they are written in one go).
    pub fn flush(&self) {
        self.lock().screen.flush();
    }

    /// A notice on stderr (dimmed).
    pub fn notice(&self, text: &str) {
        let mut st = self.lock();
        let line = styled(st.screen.color_err, "2", &escape_text(text));
        st.screen.err_line(&line);
    }

    /// A warning on stderr (escaped: it often quotes the agent).
    pub fn warn(&self, text: &str) {
        let mut st = self.lock();
        let text = escape_text(text);
        let line = styled(st.screen.color_err, "33", &format!("acp: warning: {text}"));
        st.screen.err_line(&line);
    }

    /// An error on stderr (escaped: it often quotes the agent or its stderr).
    pub fn error(&self, text: &str) {
        let mut st = self.lock();
        let text = escape_text(text);
        let line = styled(st.screen.color_err, "31", &format!("acp: {text}"));
        st.screen.err_line(&line);
    }

    /// The input prompt (`> ` on stderr), for interactive use.
    pub fn input_prompt(&self) {
        let mut st = self.lock();
        let screen = &mut st.screen;
        screen.end_block();
        let p = styled(screen.color_err, "1;36", "> ");
        screen.show_prompt(p);
    }

    /// Prompts go to the line editor (see [`Ui::take_prompt`]) instead of stderr.
    pub fn use_line_editor(&self) {
        self.lock().screen.use_line_editor();
    }

    /// The line editor's external printer: while `editing` is set (a line is being read), what
    /// is written goes through it, above the input line.
    pub fn use_printer(
        &self,
        printer: screen::Printer,
        editing: Arc<std::sync::atomic::AtomicBool>,
    ) {
        self.lock().screen.set_printer(printer, editing);
    }

    /// The prompt the line editor should show for the next input, if one was asked for.
    pub fn take_prompt(&self) -> Option<String> {
        self.lock().screen.take_prompt()
    }

    /// A prompt turn starts: the prompt, and `files` (how its attachments are recorded), join
    /// the thread (what the agent says next is a new message, on a line of its own, even after
    /// a replayed one).
    pub fn begin_turn(&self, prompt: &str, files: Vec<acp_client::thread::Block>) {
        let mut st = self.lock();
        let mut blocks = vec![acp_client::thread::Block::text(prompt)];
        blocks.extend(files);
        st.thread.begin_turn(blocks);
        st.screen.end_block();
    }

    /// Renders one `session/update` (its raw params), as the session engine routes it
    /// (`Session::update`, the one read of the update): shown (folded into the thread, then
    /// what it changed is drawn), folded unshown (a replay of the conversation on screen),
    /// held until the session's id is known (drawn when it opens), or not this session's. In
    /// the human view every string the agent sent goes through [`escape_text`] first (no
    /// escape sequence reaches the terminal); with `--json` the params are written as
    /// received, those of the session in wire order.
    pub fn session_update(&self, params: Option<&RawValue>) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let raw = params.map_or("null", RawValue::get);
        // Only what is shown is read; the rest of the message is skipped without being built,
        // so a large update costs no more than its text (acp-client's thread).
        let routed = st.thread.0.update(raw);
        if st.json {
            if matches!(routed, Ok(Routed::Shown { .. } | Routed::Held) | Err(_)) {
                st.screen.clear_spinner();
                // The params as received (valid JSON, checked by the engine), on one line.
                st.screen.out_raw(&one_line(raw));
                st.screen.out_raw("\n");
            }
            return;
        }
        match routed {
            Ok(Routed::Shown { applied }) => st.drawn.render(applied, &st.thread, &mut st.screen),
            Ok(Routed::Folded | Routed::Held | Routed::Ignored) => {}
            Err(_) => st
                .screen
                .status_line("[session update: unreadable, skipped]"),
        }
    }

    /// The end of a turn: a newline after streamed text; the JSON line with `--json`.
    /// `stop_reason` empty: a v2 agent ended the turn without one (`"stopReason": null`,
    /// shown as such).
    pub fn turn_end(&self, session_id: &str, stop_reason: &str) {
        let mut guard = self.lock();
        let st = &mut *guard;
        // v2: the session engine ended the thread's turn from the agent's idle `state_update`
        // (its stop reason, or none); it is not ended a second time here.
        #[cfg(feature = "unstable_protocol_v2")]
        let ended = st.thread.0.is_v2();
        #[cfg(not(feature = "unstable_protocol_v2"))]
        let ended = false;
        // With the turn's result (feature `unstable`), the thread folds its token usage too.
        #[cfg(feature = "unstable")]
        let usage = match st.prompt_result.take() {
            _ if ended => None,
            Some(r) if st.thread.end_turn_json(&r).is_ok() => st.thread.turn_usage.clone(),
            _ => {
                st.thread.end_turn(stop_reason);
                None
            }
        };
        #[cfg(not(feature = "unstable"))]
        if !ended {
            st.thread.end_turn(stop_reason);
        }
        st.screen.spinner_stop();
        if st.json {
            let reason = Some(stop_reason).filter(|r| !r.is_empty());
            #[cfg_attr(not(feature = "unstable"), allow(unused_mut))]
            let mut line = serde_json::json!({ "sessionId": session_id, "stopReason": reason });
            #[cfg(feature = "unstable")]
            if let Some(u) = &usage {
                line["usage"] = serde_json::to_value(u).unwrap_or_default();
            }
            st.screen.out_raw(&format!("{line}\n"));
            st.screen.at_line_start = true;
        } else {
            st.screen.end_block();
            if stop_reason != "end_turn" {
                let text = if stop_reason.is_empty() {
                    "[turn ended: the agent gave no stop reason]".to_string()
                } else {
                    format!("[turn ended: {stop_reason}]")
                };
                let line = styled(st.screen.color_err, "2", &text);
                st.screen.err_line(&line);
            }
            // The status line, once per turn, on stderr: between the turns of an interactive
            // chat, and whenever the agent reported its context.
            if st.screen.interactive() || st.thread.usage.is_some() {
                let line = status::line(st.thread.0.agent(), &st.thread);
                st.screen.status_line(&line);
            }
            // The turn's own token usage (feature `unstable`), when the agent reported it.
            #[cfg(feature = "unstable")]
            if let Some(u) = &usage {
                st.screen.status_line(&turn_usage_line(u));
            }
        }
        st.screen.flush();
    }

    /// The `session/prompt` result of the turn about to end ([`Ui::turn_end`]); feature
    /// `unstable` (its draft `usage`).
    #[cfg(feature = "unstable")]
    pub fn prompt_result(&self, result: &impl serde::Serialize) {
        self.lock().prompt_result = serde_json::to_string(result).ok();
    }
}

/// The wire name of a serde enum value (`allow_once`, `in_progress`, `end_turn`...).
pub fn wire_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

/// One line of JSON text: `raw` (valid JSON) with its line breaks and tabs removed. They can
/// only be whitespace between tokens (JSON strings cannot hold them raw), so the value is the
/// same; nothing else is rewritten (no copy when there are none).
fn one_line(raw: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr3(b'\n', b'\r', b'\t', raw.as_bytes()).is_some() {
        raw.replace(['\n', '\r', '\t'], "").into()
    } else {
        raw.into()
    }
}

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
    use super::conversation::{content_text, diff_summary};
    use super::one_line;
    use acp_client::thread::Block as Content;

    #[test]
    fn diff_summaries() {
        assert_eq!(diff_summary(None, "a\nb\n"), "new file, +2 -0");
        assert_eq!(diff_summary(Some("a\nb\nc"), "a\nB\nc\nd"), "+3 -2");
        assert_eq!(diff_summary(Some("a"), "a"), "no changes");
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
    use acp_client::display::escape_text;

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
