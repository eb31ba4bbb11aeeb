//! The chat's prompt queue: acp-client's [`PromptQueue`] (the VS Code extension's too, through
//! acp-wasm), so `acp chat` decides as the extension does; here its words and the `/queue`
//! command.
//!
//! A prompt typed during a turn waits (at most [`MAX_QUEUED`](acp_client::queue::MAX_QUEUED) prompts,
//! [`MAX_QUEUED_BYTES`](acp_client::queue::MAX_QUEUED_BYTES) in all: past that the queue's own
//! refusal is shown and the line is not queued). A turn that ends normally sends the next one;
//! a turn cancelled (Ctrl-C) or failed holds them: nothing is sent nor dropped until the user
//! says so at the prompt: Enter on an empty line (or `/queue send`) sends them (the first now,
//! the others one per turn), a new prompt sends the first held one and waits behind the others
//! (order is kept), `/queue`
//! lists them, `/queue drop N`, `/queue edit N TEXT` and `/queue clear` change them.
//!
//! `/queue` typed during a turn is done at once (it is about the queue, not a prompt for the
//! agent); every other line typed then is a prompt for later. Files attached with `/attach`
//! go with the next prompt sent; when a new prompt waits behind held ones, its files wait
//! with it (the queue's data: their names and paths).

use acp_client::display::escape_line;
use acp_client::queue::{AfterTurn, PromptQueue, Queued, Refused, Submitted, TurnEnd};

use super::attach::Attached;
use super::Chat;
use crate::cli::render::Ui;

/// How to use `/queue`.
const USAGE: &str = "usage: /queue [send | drop N | edit N TEXT | clear]";

/// The queue with the words `acp chat` says about it.
pub(super) struct Queue {
    q: PromptQueue,
    ui: Ui,
}

/// `/queue send` (the command that sends the next held prompt, as Enter does).
pub(super) fn is_send(text: &str) -> bool {
    let mut words = text.split_whitespace();
    words.next() == Some("/queue") && words.next() == Some("send") && words.next().is_none()
}

fn them(n: usize) -> &'static str {
    if n == 1 {
        "it"
    } else {
        "them"
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Queue {
    pub(super) fn new(ui: Ui) -> Queue {
        Queue {
            q: PromptQueue::new(),
            ui,
        }
    }

    /// How many prompts wait.
    pub(super) fn len(&self) -> usize {
        self.q.len()
    }

    /// A line typed during a turn: `/queue …` is done now; another line is queued (empty lines
    /// are not prompts), or refused when the queue is full.
    pub(super) fn typed(&mut self, line: String) {
        let text = line.trim();
        if text == "/queue" || text.starts_with("/queue ") {
            let arg = text["/queue".len()..].trim();
            self.command(arg, true);
            return;
        }
        let shown = escape_line(text);
        match self.q.submit(&line, "", true) {
            Ok(_) => self.ui.notice(&format!(
                "queued: {shown} (sent when the turn ends; {} waiting: /queue lists them)",
                self.q.len()
            )),
            Err(Refused::Empty) => {}
            Err(refused) => self.ui.warn(&format!("{refused}: {shown}")),
        }
    }

    /// The turn ended (`end`): the prompt to send next, if the queue says so; a held queue is
    /// said, with what the user can do.
    pub(super) fn after_turn(&mut self, end: TurnEnd) -> Option<Queued> {
        match self.q.turn_ended(end) {
            AfterTurn::Send { prompt } => Some(prompt),
            AfterTurn::Held { waiting, .. } => {
                let why = match end {
                    TurnEnd::Failed => "the turn failed",
                    _ => "the turn was cancelled",
                };
                self.ui.notice(&format!(
                    "{waiting} queued prompt{} held ({why}): Enter sends {} (one per turn), \
                     /queue lists {}, /queue clear drops {}",
                    plural(waiting),
                    them(waiting),
                    them(waiting),
                    them(waiting)
                ));
                None
            }
            AfterTurn::Idle => None,
        }
    }

    /// A queued slash command ran instead of a turn: the queue goes on as after a turn.
    pub(super) fn after_command(&mut self) -> Option<Queued> {
        if self.q.is_held() {
            return None;
        }
        self.after_turn(TurnEnd::Done)
    }

    /// Enter on an empty line (`/queue send` when `asked`): the next held prompt, to send now.
    pub(super) fn send_held(&mut self, asked: bool) -> Option<Queued> {
        let next = self.q.send_held();
        if next.is_none() && asked {
            self.ui.notice("nothing is queued");
        }
        next
    }

    /// A prompt typed at the input prompt (`attached`: the files `/attach` named for it): what
    /// to send now (the queue's rule 5: behind held prompts it waits, with its files, and the
    /// first of them goes). `Err`: the queue refused it (the user was told).
    pub(super) fn at_prompt(
        &mut self,
        text: &str,
        attached: &mut Vec<Attached>,
    ) -> Result<Queued, Refused> {
        let held = self.q.is_held();
        let data = if held && !attached.is_empty() {
            let files: Vec<(&str, &std::path::Path)> = attached
                .iter()
                .map(|a| (a.named.as_str(), a.path.as_path()))
                .collect();
            serde_json::to_string(&files).unwrap_or_default()
        } else {
            String::new()
        };
        match self.q.submit(text, &data, false) {
            Ok(Submitted::Send { prompt }) => {
                if held {
                    attached.clear();
                    self.ui.notice(&format!(
                        "sending the first held prompt: {} (yours waits behind it: {} queued)",
                        escape_line(prompt.text.trim()),
                        self.q.len()
                    ));
                }
                Ok(prompt)
            }
            // Rules 1 and 5: a prompt submitted while nothing runs is never left waiting alone.
            Ok(Submitted::Queued { .. }) => unreachable!("submitted while no turn runs"),
            Err(refused) => {
                self.ui
                    .warn(&format!("{refused}: {}", escape_line(text.trim())));
                Err(refused)
            }
        }
    }

    /// The files that wait with a queued prompt (see [`Queue::at_prompt`]).
    pub(super) fn files(prompt: &Queued) -> Vec<Attached> {
        if prompt.data.is_empty() {
            return Vec::new();
        }
        let files: Vec<(String, std::path::PathBuf)> =
            serde_json::from_str(&prompt.data).unwrap_or_default();
        files
            .into_iter()
            .map(|(named, path)| Attached { named, path })
            .collect()
    }

    /// `/queue [send | drop N | edit N TEXT | clear]` (`running`: typed during a turn); `send`
    /// is the chat loop's (it sends), said here only during a turn.
    pub(super) fn command(&mut self, arg: &str, running: bool) {
        let (sub, rest) = arg
            .split_once(char::is_whitespace)
            .map_or((arg, ""), |(s, r)| (s, r.trim()));
        match sub {
            "" => self.list(running),
            "send" if running => self
                .ui
                .notice("a turn is running: the queue goes on when it ends"),
            "clear" => {
                let n = self.q.clear();
                if n == 0 {
                    self.ui.notice("nothing is queued");
                } else {
                    self.ui
                        .notice(&format!("dropped {n} queued prompt{}", plural(n)));
                }
            }
            "drop" | "edit" => {
                let (number, text) = rest
                    .split_once(char::is_whitespace)
                    .map_or((rest, ""), |(n, t)| (n, t.trim()));
                let Some(id) = self.id_at(sub, number) else {
                    return;
                };
                if sub == "drop" {
                    match self.q.remove(id) {
                        Ok(item) => self.ui.notice(&format!(
                            "dropped queued prompt {number}: {}",
                            escape_line(item.text.trim())
                        )),
                        Err(refused) => self.ui.warn(&format!("/queue drop: {refused}")),
                    }
                } else if text.is_empty() {
                    self.ui.warn(USAGE);
                } else {
                    match self.q.edit(id, text) {
                        Ok(()) => self.ui.notice(&format!(
                            "queued prompt {number} now says: {}",
                            escape_line(text)
                        )),
                        Err(refused) => self.ui.warn(&format!("/queue edit: {refused}")),
                    }
                }
            }
            _ => self.ui.warn(USAGE),
        }
    }

    /// The id of the queued prompt numbered `number` (from 1, as `/queue` lists them); `None`
    /// when there is none (the user is told).
    fn id_at(&self, sub: &str, number: &str) -> Option<u64> {
        let n = self.q.len();
        let at = match number.parse::<usize>() {
            Ok(i) if (1..=n).contains(&i) => i - 1,
            _ if number.is_empty() => {
                self.ui.warn(USAGE);
                return None;
            }
            _ if n == 0 => {
                self.ui.warn(&format!("/queue {sub}: nothing is queued"));
                return None;
            }
            _ => {
                self.ui.warn(&format!(
                    "/queue {sub}: no queued prompt {} (1 to {n}; /queue lists them)",
                    escape_line(number)
                ));
                return None;
            }
        };
        self.q.items().nth(at).map(|item| item.id)
    }

    fn list(&self, running: bool) {
        let n = self.q.len();
        if n == 0 {
            self.ui
                .notice("nothing is queued (a prompt typed during a turn waits here)");
            return;
        }
        let state = if self.q.is_held() {
            "held: Enter sends them"
        } else if running {
            "sent one by one when the turn ends"
        } else {
            "sent one per turn"
        };
        self.ui.notice(&format!(
            "{n} queued prompt{} ({state}; /queue drop N, /queue edit N TEXT, /queue clear):",
            plural(n)
        ));
        for (i, item) in self.q.items().enumerate() {
            let files = Queue::files(item);
            let files = if files.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = files.iter().map(|f| escape_line(&f.named)).collect();
                format!(" (with {})", names.join(", "))
            };
            self.ui.notice(&format!(
                "  {}. {}{files}",
                i + 1,
                escape_line(item.text.trim())
            ));
        }
    }

    /// The chat ends: the prompts that were not sent are said.
    pub(super) fn report_unsent(&self) {
        let n = self.q.len();
        if n > 0 {
            self.ui.notice(&format!(
                "{n} queued prompt{} not sent (the chat ended)",
                plural(n)
            ));
        }
    }
}

impl Chat {
    /// A prompt typed at the input prompt: the text to send now (the queue may send a held one
    /// first, with its files); `None` when the queue refused it.
    pub(super) fn submit_typed(&mut self, text: &str) -> Option<String> {
        let prompt = self.stdin.queue.at_prompt(text, &mut self.attached).ok()?;
        self.carry_files(&prompt);
        Some(prompt.text)
    }

    /// A queued prompt is sent: the files that waited with it are attached again.
    pub(super) fn carry_files(&mut self, prompt: &Queued) {
        for file in Queue::files(prompt) {
            if !self.attached.contains(&file) {
                self.attached.push(file);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_send_is_recognised_only_as_the_whole_command() {
        assert!(is_send("/queue send"));
        assert!(is_send("  /queue   send "));
        assert!(!is_send("/queue"));
        assert!(!is_send("/queue send now"));
        assert!(!is_send("/queued send"));
    }

    #[test]
    fn files_waiting_with_a_prompt_round_trip_through_its_data() {
        let ui = Ui::new(true);
        let mut q = Queue::new(ui);
        q.typed("first".into());
        assert_eq!(q.after_turn(TurnEnd::Cancelled), None);
        let mut attached = vec![Attached {
            named: "notes.txt".into(),
            path: "/w/notes.txt".into(),
        }];
        let sent = q.at_prompt("second", &mut attached).unwrap();
        assert_eq!(sent.text, "first");
        assert!(Queue::files(&sent).is_empty());
        assert!(attached.is_empty(), "the files wait with their prompt");
        let next = q.after_turn(TurnEnd::Done).expect("the second goes on");
        assert_eq!(next.text, "second");
        assert_eq!(
            Queue::files(&next),
            [Attached {
                named: "notes.txt".into(),
                path: "/w/notes.txt".into(),
            }]
        );
        assert_eq!(q.len(), 0);
    }
}
