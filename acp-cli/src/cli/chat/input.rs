//! What the user types: a line editor on a terminal (rustyline: editing keys, history,
//! completion of slash commands, multi-line input), plain lines otherwise.
//!
//! The terminal is read on a thread that reads one line per request, so it is in raw mode only
//! while a prompt is shown: while a turn streams, Ctrl-C is a signal as usual; at a prompt,
//! the editor sees it and reports [`Input::Interrupt`]. Piped input is read ahead line by line.
//!
//! Multi-line input: a line ending in `\` continues on the next one (the `\` is dropped), and
//! Alt-Enter or Ctrl-J insert a newline; pasted text keeps its newlines (bracketed paste).
//!
//! A burst of lines typed (or pasted without bracketed paste) at the prompt: the first is sent,
//! each further line is kept and becomes the next prompt, one per turn in order, as if typed
//! after each turn (a user who typed them meant them as prompts, not as answers). The line
//! editor keeps what it read past the first line for its next read (rustyline's
//! `buffer-redux`); answers to questions are read by a second editor, so those prompt lines
//! never answer a question.
//! History: prompts (never answers to questions) are kept in `$XDG_STATE_HOME/acp/history`
//! (`~/.local/state/acp/history`), the newest [`HISTORY_SIZE`], readable by the user only.

use std::borrow::Cow;
use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Behavior, Cmd, CompletionType, Config, Editor, EventHandler, Helper, KeyCode, KeyEvent,
    Modifiers,
};
use tokio::sync::mpsc;

use super::queue::Queue;
use super::typeahead::TypeAhead;
use crate::cli::render::Ui;

/// Prompts kept in the history file.
pub(super) const HISTORY_SIZE: usize = 1000;

/// acp's own slash commands, completed with the agent's.
pub(super) const OWN_COMMANDS: &[&str] = &[
    "help",
    "attach",
    "diff",
    "undo",
    "mode",
    "config",
    "model",
    "sessions",
    "cancel",
    "cancel-tool",
    "quit",
    "exit",
    "status",
    "queue",
    #[cfg(feature = "unstable")]
    "title",
];

/// One thing the user typed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Input {
    Line(String),
    /// Ctrl-C at a prompt (a signal otherwise).
    Interrupt,
    /// Ctrl-D on an empty line at a prompt, or the end of piped input.
    Eof,
    /// Ctrl-D at a question: that question is refused, the input stays open.
    Dismiss,
}

/// What the terminal gave during a turn.
pub(super) enum DuringTurn {
    /// The answer to the open question.
    Answer(Input),
    /// A line typed while no question was open: a prompt for later.
    Typed(String),
}

/// What is being asked: prompts enter the history, answers to questions do not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    Prompt,
    Answer,
}

pub(super) struct Stdin {
    pub(super) is_terminal: bool,
    reader: Option<Reader>,
    ui: Ui,
    /// The session's directory: `@path` completes from it.
    cwd: PathBuf,
    /// Lines typed during a turn ([`TypeAhead`]), while it reads.
    typeahead: Option<TypeAhead>,
    /// The terminal could not be read during a turn: no more attempts.
    typeahead_failed: bool,
    /// Prompts typed during a turn, sent one by one when it ends (acp-client's queue).
    pub(super) queue: Queue,
}

enum Reader {
    /// Piped input, read ahead on a thread.
    Lines(mpsc::UnboundedReceiver<String>),
    /// The line editor's thread: one request, one answer; `pending` while a request is out
    /// (a `select!` may drop the waiting future; the answer still comes to the next call).
    Editor {
        requests: std::sync::mpsc::Sender<(String, Ask)>,
        answers: mpsc::UnboundedReceiver<Input>,
        pending: bool,
    },
}

impl Stdin {
    pub(super) fn new(ui: Ui, cwd: PathBuf) -> Stdin {
        use std::io::IsTerminal;
        let is_terminal = std::io::stdin().is_terminal();
        if is_terminal {
            ui.use_line_editor();
        }
        Stdin {
            is_terminal,
            reader: None,
            queue: Queue::new(ui.clone()),
            ui,
            cwd,
            typeahead: None,
            typeahead_failed: false,
        }
    }

    /// During a turn: the answer to the open question (`question_open`), else a line typed
    /// meanwhile.
    pub(super) async fn during_turn(&mut self, question_open: bool) -> DuringTurn {
        if question_open {
            DuringTurn::Answer(self.next(Ask::Answer).await)
        } else {
            DuringTurn::Typed(self.typed().await)
        }
    }

    /// A line typed on the terminal while a turn runs (never ready when stdin is not a
    /// terminal: piped lines wait in their reader). Cancel-safe: the reading thread keeps
    /// what it read.
    pub(super) async fn typed(&mut self) -> String {
        // The line editor still reads a question's answer (the question was withdrawn while
        // it waited): the terminal is its own until it answers.
        let editing = matches!(self.reader, Some(Reader::Editor { pending: true, .. }));
        if !self.is_terminal || self.typeahead_failed || editing {
            return std::future::pending().await;
        }
        if self.typeahead.is_none() {
            match TypeAhead::start() {
                Ok(t) => self.typeahead = Some(t),
                Err(e) => {
                    self.typeahead_failed = true;
                    // Windows: not there yet (said in docs/reliability.md), not a failure.
                    if e.kind() != std::io::ErrorKind::Unsupported {
                        self.ui
                            .warn(&format!("cannot read what is typed during a turn: {e}"));
                    }
                    return std::future::pending().await;
                }
            }
        }
        match self.typeahead.as_mut().expect("started").next().await {
            Some(line) => line,
            None => {
                // The terminal hung up or failed: the thread ended.
                self.typeahead_failed = true;
                std::future::pending().await
            }
        }
    }

    /// Stops reading the terminal for the turn; the lines it read are queued.
    pub(super) fn stop_typing(&mut self) {
        if let Some(t) = self.typeahead.take() {
            for line in t.stop() {
                self.enqueue(line);
            }
        }
    }

    /// A line typed during a turn: queued (or a `/queue` command, done now).
    pub(super) fn enqueue(&mut self, line: String) {
        self.queue.typed(line);
    }

    /// The next input; `ask` says whether it is a prompt or an answer to a question.
    pub(super) async fn next(&mut self, ask: Ask) -> Input {
        // The line editor reads the terminal now: lines read during the turn are queued.
        self.stop_typing();
        let is_terminal = self.is_terminal;
        let ui = self.ui.clone();
        let cwd = self.cwd.clone();
        let reader = self.reader.get_or_insert_with(|| {
            if is_terminal {
                match start_editor(ui.clone(), cwd) {
                    Ok(reader) => return reader,
                    Err(e) => ui.warn(&format!("no line editor ({e}); reading plain lines")),
                }
            }
            read_lines()
        });
        match reader {
            Reader::Lines(rx) => rx.recv().await.map_or(Input::Eof, Input::Line),
            Reader::Editor {
                requests,
                answers,
                pending,
            } => {
                if !*pending {
                    let prompt = self.ui.take_prompt().unwrap_or_default();
                    if requests.send((prompt, ask)).is_err() {
                        return Input::Eof;
                    }
                    *pending = true;
                }
                let input = answers.recv().await.unwrap_or(Input::Eof);
                *pending = false;
                input
            }
        }
    }
}

fn read_lines() -> Reader {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Reader::Lines(rx)
}

/// Where prompts are remembered.
fn history_path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(crate::os_compat::home()?).join(".local/state"),
    };
    Some(base.join("acp").join("history"))
}

fn start_editor(ui: Ui, cwd: PathBuf) -> rustyline::Result<Reader> {
    let helper_ui = ui.clone();
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .bracketed_paste(true)
        // The terminal, even when stdout is redirected: the conversation stays alone there.
        .behavior(Behavior::PreferTerm)
        .build();
    let mut editor: Editor<ChatHelper, FileHistory> = Editor::with_config(config.clone())?;
    // Answers: an editor of their own, whose read-ahead is its own (lines typed ahead as
    // prompts stay with the prompts' editor) and without history.
    let mut answer_editor: Editor<(), FileHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(ChatHelper { ui: helper_ui, cwd }));
    for key in [
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        KeyEvent::ctrl('J'),
    ] {
        editor.bind_sequence(key, EventHandler::Simple(Cmd::Newline));
    }
    let history = history_path();
    if let Some(path) = &history {
        // A missing or unreadable history is not an error: it starts empty.
        let _ = editor.load_history(path);
    }
    // Notices that come while a line is edited are printed above it, not onto it (by the
    // editor reading then).
    let editing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answering = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        use rustyline::ExternalPrinter;
        let mut printer = editor.create_external_printer()?;
        let mut answer_printer = answer_editor.create_external_printer()?;
        let answering = answering.clone();
        ui.use_printer(
            Box::new(move |text| {
                let _ = if answering.load(std::sync::atomic::Ordering::SeqCst) {
                    answer_printer.print(text)
                } else {
                    printer.print(text)
                };
            }),
            editing.clone(),
        );
    }
    let (requests, requests_rx) = std::sync::mpsc::channel::<(String, Ask)>();
    let (answers_tx, answers) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        while let Ok((prompt, ask)) = requests_rx.recv() {
            let answer = ask == Ask::Answer;
            answering.store(answer, std::sync::atomic::Ordering::SeqCst);
            editing.store(true, std::sync::atomic::Ordering::SeqCst);
            let read = if answer {
                answer_editor.readline(&prompt)
            } else {
                editor.readline(&prompt)
            };
            editing.store(false, std::sync::atomic::Ordering::SeqCst);
            let input = match read {
                Ok(line) => {
                    let line = join_continued(&line);
                    if ask == Ask::Prompt && !line.trim().is_empty() {
                        remember(&mut editor, history.as_deref(), &line);
                    }
                    Input::Line(line)
                }
                Err(ReadlineError::Interrupted) => Input::Interrupt,
                // At a question, Ctrl-D refuses that question only; the chat goes on.
                Err(ReadlineError::Eof) if ask == Ask::Answer => Input::Dismiss,
                Err(ReadlineError::Eof) => Input::Eof,
                Err(_) => Input::Eof,
            };
            let end = input == Input::Eof;
            if answers_tx.send(input).is_err() || end {
                break;
            }
        }
    });
    Ok(Reader::Editor {
        requests,
        answers,
        pending: false,
    })
}

/// Adds a prompt to the history and to its file (created readable by the user only).
fn remember(
    editor: &mut Editor<ChatHelper, FileHistory>,
    path: Option<&std::path::Path>,
    line: &str,
) {
    if !matches!(editor.add_history_entry(line), Ok(true)) {
        return;
    }
    let Some(path) = path else { return };
    if let Some(dir) = path.parent() {
        // acp's state directory: private, like the history and the session records in it.
        use crate::os_compat::DirBuilderExt;
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    if !path.exists() {
        use crate::os_compat::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    let _ = editor.append_history(path);
}

/// Lines ending in `\` continue on the next line: the `\` is dropped, the newline kept.
pub(super) fn join_continued(text: &str) -> String {
    text.split('\n')
        .map(|l| l.strip_suffix('\\').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Completion of slash commands (acp's and the agent's) and `@path` mentions, and multi-line
/// continuation.
struct ChatHelper {
    ui: Ui,
    cwd: PathBuf,
}

/// Entries of one directory a `@path` completion lists at most.
const MENTION_CANDIDATES: usize = 500;

/// Completions of `@word` (`word`: the path typed so far, relative to `cwd`): the entries of
/// its directory whose names start with its last part, a directory with a `/` after it (to go
/// on), a file with a space. Hidden entries only when the part starts with a dot. Sorted, at
/// most [`MENTION_CANDIDATES`]; paths that leave `cwd` (`..`, absolute) complete nothing.
pub(super) fn mention_candidates(cwd: &std::path::Path, word: &str) -> Vec<Pair> {
    let (dir, part) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    if dir.starts_with('/') || dir.split('/').any(|c| c == "..") {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(cwd.join(dir)) else {
        return Vec::new();
    };
    let mut pairs: Vec<Pair> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(part) || (name.starts_with('.') && !part.starts_with('.')) {
                return None;
            }
            if name.contains(char::is_whitespace) {
                // A mention ends at whitespace: such a name cannot be mentioned.
                return None;
            }
            let is_dir = e.file_type().ok()?.is_dir()
                || (e.file_type().ok()?.is_symlink() && e.path().is_dir());
            Some(Pair {
                display: if is_dir {
                    format!("{name}/")
                } else {
                    name.clone()
                },
                replacement: format!("@{dir}{name}{}", if is_dir { "/" } else { " " }),
            })
        })
        .take(MENTION_CANDIDATES)
        .collect();
    pairs.sort_by(|a, b| a.replacement.cmp(&b.replacement));
    pairs
}

impl ChatHelper {
    fn candidates(&self, word: &str) -> Vec<Pair> {
        let mut names: Vec<(String, String)> = OWN_COMMANDS
            .iter()
            .map(|c| (c.to_string(), String::new()))
            .collect();
        for (name, description, _) in self.ui.commands() {
            // The agent's command named like one of acp's is `/agent-NAME`.
            let name = if OWN_COMMANDS.contains(&name.as_str()) {
                format!("agent-{name}")
            } else {
                name
            };
            names.push((name, description));
        }
        let mut pairs: Vec<Pair> = names
            .into_iter()
            .filter(|(name, _)| name.starts_with(word))
            .map(|(name, description)| Pair {
                display: if description.is_empty() {
                    format!("/{name}")
                } else {
                    format!(
                        "/{name}  {}",
                        acp_client::display::escape_line(&description)
                    )
                },
                replacement: format!("/{name} "),
            })
            .collect();
        pairs.sort_by(|a, b| a.replacement.cmp(&b.replacement));
        pairs.dedup_by(|a, b| a.replacement == b.replacement);
        pairs
    }
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        // `@path`: the word before the cursor.
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        if let Some(word) = head[start..].strip_prefix('@') {
            return Ok((start, mention_candidates(&self.cwd, word)));
        }
        // The command name: `/` at the start of the input, up to the cursor.
        match head.strip_prefix('/') {
            Some(word) if !word.contains(char::is_whitespace) => Ok((0, self.candidates(word))),
            _ => Ok((pos, Vec::new())),
        }
    }
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_lines_join_without_their_backslash() {
        assert_eq!(join_continued("one\\\ntwo\\\nthree"), "one\ntwo\nthree");
        assert_eq!(join_continued("no continuation"), "no continuation");
        // Only a final backslash continues a line.
        assert_eq!(join_continued("a \\n b"), "a \\n b");
    }

    #[test]
    fn mentions_complete_from_the_session_directory() {
        let dir = std::env::temp_dir().join(format!("acp-mention-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::write(dir.join("src/main.rs"), "").unwrap();
        std::fs::write(dir.join("src/.hidden"), "").unwrap();
        std::fs::write(dir.join("readme.md"), "").unwrap();
        let got = |w: &str| -> Vec<String> {
            mention_candidates(&dir, w)
                .into_iter()
                .map(|p| p.replacement)
                .collect()
        };
        assert_eq!(got("sr"), ["@src/"]);
        assert_eq!(got("src/"), ["@src/deep/", "@src/main.rs "]);
        assert_eq!(got("src/."), ["@src/.hidden "]);
        assert_eq!(got("r"), ["@readme.md "]);
        assert!(got("../").is_empty());
        assert!(got("/etc/").is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
