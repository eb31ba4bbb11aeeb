//! The terminal as `acp chat` writes it: stdout (the conversation) and stderr (everything
//! else), drawn as one screen. [`Screen`] knows whether the cursor is at the start of a line
//! (stdout and stderr together when stdout is a terminal, stdout alone when it is piped), which
//! block of streamed text is open, the spinner (stderr, a terminal only, on an empty line) and
//! the prompt kept for the line editor. It writes what it is given: escaping is the caller's.
//!
//! stdout is written in batches: what the conversation adds is kept (up to [`OUT_BATCH`])
//! until [`Screen::flush`], which `acp chat` calls once it has taken every update waiting, and
//! before anything goes to stderr, a prompt shows or the chat ends; a flood of small updates
//! is then a few large writes instead of one write per update.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::display::escape_text;

use super::markdown::Markdown;

/// The kind of streamed text open on stdout.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    None,
    Message,
    Thought,
    User,
}

struct Spinner {
    label: String,
    frame: usize,
    drawn: bool,
}

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Bytes of stdout kept before they are written anyway.
const OUT_BATCH: usize = 64 << 10;

/// `text` in ANSI style `code` when `on`.
pub(super) fn styled(on: bool, code: &str, text: &str) -> String {
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// stdout and stderr, and where the cursor is.
pub(super) struct Screen {
    /// ANSI styling on stdout / stderr.
    pub(super) color_out: bool,
    pub(super) color_err: bool,
    /// stderr is a terminal: the spinner may draw.
    spinner_allowed: bool,
    spinner: Option<Spinner>,
    /// The screen's cursor is at the start of a line (stdout and stderr drawn together).
    pub(super) at_line_start: bool,
    /// stdout is a terminal, shown with stderr on one screen: a line on stderr first ends the
    /// conversation's open line there. Otherwise (stdout piped or in a file) stderr's lines
    /// never break stdout's: the conversation stays as the agent sent it.
    shared_screen: bool,
    /// stdout's own last line is unfinished.
    out_line_open: bool,
    /// What stdout is still to be given (see the module docs).
    out: Vec<u8>,
    /// The block of streamed text open on stdout.
    pub(super) block: Block,
    /// When something was last written (the spinner waits 300 ms after output).
    pub(super) last_output: Instant,
    /// A line editor reads the input (a terminal): prompts are kept here for it to show
    /// instead of being written to stderr.
    line_editor: bool,
    prompt: Option<String>,
    /// The line editor's external printer, and whether it is reading a line now: what is
    /// written meanwhile goes through it, above the input line, never onto it.
    printer: Option<(Printer, Arc<AtomicBool>)>,
    /// The agent's messages rendered as markdown, wrapped to the terminal's width: when stdout
    /// is a terminal (and not `--json`). Otherwise they are written as the agent sent them.
    md: Option<Markdown>,
}

/// Prints whole lines above the line being edited (rustyline's external printer).
pub(crate) type Printer = Box<dyn FnMut(String) + Send>;

impl Screen {
    /// The real stdout and stderr. `json`: stdout carries JSON lines (never styled).
    pub(super) fn new(json: bool) -> Screen {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color_out = !no_color && !json && std::io::stdout().is_terminal();
        let rendered = !json && std::io::stdout().is_terminal();
        Screen {
            md: rendered.then(|| Markdown::new(terminal_width(), color_out)),
            color_out,
            color_err: !no_color && std::io::stderr().is_terminal(),
            spinner_allowed: std::io::stderr().is_terminal(),
            spinner: None,
            at_line_start: true,
            shared_screen: std::io::stdout().is_terminal(),
            out_line_open: false,
            out: Vec::with_capacity(OUT_BATCH),
            block: Block::None,
            last_output: Instant::now(),
            line_editor: false,
            prompt: None,
            printer: None,
        }
    }

    /// The line editor's printer, used while `editing` is set (see [`Screen::printer`]).
    pub(super) fn set_printer(&mut self, printer: Printer, editing: Arc<AtomicBool>) {
        self.printer = Some((printer, editing));
    }

    /// The line editor's printer, when a line is being edited now.
    fn editing_printer(&mut self) -> Option<&mut Printer> {
        match &mut self.printer {
            Some((printer, editing)) if editing.load(Ordering::SeqCst) => Some(printer),
            _ => None,
        }
    }

    /// stderr is a terminal: the spinner may draw (its ticker is started).
    pub(super) fn spinner_allowed(&self) -> bool {
        self.spinner_allowed
    }

    /// Shows the spinner with `label` (drawn by [`Screen::draw_spinner`]).
    pub(super) fn spinner_start(&mut self, label: &str) {
        self.spinner = Some(Spinner {
            label: label.to_string(),
            frame: 0,
            drawn: false,
        });
        self.last_output = Instant::now() - Duration::from_secs(1);
    }

    /// Clears the spinner and forgets it.
    pub(super) fn spinner_stop(&mut self) {
        self.clear_spinner();
        self.spinner = None;
    }

    pub(super) fn clear_spinner(&mut self) {
        // (Nothing waits for stdout while it is drawn: it is drawn after a flush, and what
        // comes for stdout clears it first.)
        let drawn = self
            .spinner
            .as_mut()
            .is_some_and(|sp| std::mem::replace(&mut sp.drawn, false));
        if drawn {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[K");
            let _ = err.flush();
        }
    }

    /// The spinner's next frame, on an empty line, 300 ms after the last output.
    pub(super) fn draw_spinner(&mut self) {
        if !self.out.is_empty() {
            // Output waiting is written first (the spinner's tick is a late flush too).
            self.flush();
            return;
        }
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
        sp.drawn = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{text}");
        let _ = err.flush();
    }

    /// Adds to stdout (written by [`Screen::flush`], or once [`OUT_BATCH`] bytes wait).
    pub(super) fn out_raw(&mut self, text: &str) {
        self.clear_spinner();
        self.out.extend_from_slice(text.as_bytes());
        if self.out.len() >= OUT_BATCH {
            self.flush();
        }
        if let Some(&last) = text.as_bytes().last() {
            self.at_line_start = last == b'\n';
            self.out_line_open = last != b'\n';
        }
    }

    /// Writes what stdout was given so far.
    pub(super) fn flush(&mut self) {
        if self.out.is_empty() {
            return;
        }
        if self.shared_screen && self.editing_printer().is_some() {
            let text = String::from_utf8_lossy(&self.out).into_owned();
            if let Some(printer) = self.editing_printer() {
                // Above the input line (the editor ends the text's line and redraws it).
                printer(text);
                self.out.clear();
                self.last_output = Instant::now();
                return;
            }
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&self.out);
        let _ = out.flush();
        self.out.clear();
        self.last_output = Instant::now();
    }

    pub(super) fn err_raw(&mut self, text: &str) {
        self.clear_spinner();
        // In order with the conversation (one screen when both are the terminal).
        self.flush();
        if let Some(printer) = self.editing_printer() {
            // A notice while the user types: above the input line, never onto it.
            printer(text.to_string());
            self.last_output = Instant::now();
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
        self.last_output = Instant::now();
    }

    /// Ends the current line if something is on it.
    pub(super) fn newline(&mut self) {
        let open = if self.shared_screen {
            !self.at_line_start
        } else {
            self.out_line_open
        };
        if open {
            self.out_raw("\n");
            if let Some(md) = &mut self.md {
                md.line_broken();
            }
        }
    }

    /// The message being rendered ended: what it held is written, its styles closed.
    fn finish_markdown(&mut self) {
        if let Some(md) = &mut self.md {
            let mut out = String::new();
            md.finish(&mut out);
            if !out.is_empty() {
                self.out_raw(&out);
            }
        }
    }

    /// The open block of streamed text ends: the next starts on a line of its own.
    pub(super) fn end_block(&mut self) {
        self.finish_markdown();
        self.newline();
        self.block = Block::None;
    }

    pub(super) fn err_line(&mut self, line: &str) {
        if self.shared_screen {
            self.newline();
        }
        self.err_raw(&format!("{line}\n"));
    }

    /// A whole line of conversation on stdout, on a fresh line.
    pub(super) fn block_line(&mut self, line: &str) {
        self.finish_markdown();
        self.newline();
        self.block = Block::None;
        self.out_raw(&format!("{line}\n"));
    }

    /// A line editor reads the input: the chat is interactive, on a terminal.
    pub(super) fn interactive(&self) -> bool {
        self.line_editor
    }

    /// Prompts go to the line editor (see [`Screen::take_prompt`]) instead of stderr.
    pub(super) fn use_line_editor(&mut self) {
        self.line_editor = true;
    }

    /// The prompt the line editor should show for the next input, if one was asked for.
    pub(super) fn take_prompt(&mut self) -> Option<String> {
        self.prompt.take()
    }

    /// Writes a prompt, or keeps it for the line editor to show.
    pub(super) fn show_prompt(&mut self, prompt: String) {
        if self.line_editor {
            self.clear_spinner();
            self.flush();
            self.prompt = Some(prompt);
        } else {
            self.err_raw(&prompt);
        }
        // The user's Enter ends the line.
        self.at_line_start = true;
    }

    /// A dim status line on stderr (never part of the conversation on stdout).
    pub(super) fn status_line(&mut self, text: &str) {
        let line = styled(self.color_err, "2", &escape_text(text));
        self.err_line(&line);
    }

    /// Streams text of a message or thought block (the agent's, escaped here).
    pub(super) fn stream(&mut self, block: Block, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.block != block {
            self.finish_markdown();
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
        if let (Block::Message, Some(md)) = (block, &mut self.md) {
            // Re-read for each chunk: a resized terminal is followed at once.
            md.set_width(terminal_width());
            let mut out = String::new();
            md.push(text, &mut out);
            if !out.is_empty() {
                self.out_raw(&out);
            }
            return;
        }
        let text = escape_text(text);
        let text = if block == Block::Thought {
            styled(self.color_out, "2;3", &text)
        } else {
            text.into_owned()
        };
        self.out_raw(&text);
    }
}

/// The terminal's width in columns (stdout's), 80 when it cannot be read.
#[cfg(unix)]
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes a `winsize` into the one given, which outlives the call.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

/// The console's width: `COLUMNS` when set, else 80 (the console's own size is not read on
/// Windows yet).
#[cfg(not(unix))]
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c > 0)
        .unwrap_or(80)
}
