//! A private tmux server driving `acp chat` in a real terminal, for the interactive tests
//! (`cli_chat_files.rs`, `cli_interactive.rs`). Waiting is bounded polling
//! of the screen for what must appear; nothing sleeps to synchronise.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::cli_support::{acp, EVENTUALLY};

pub fn tmux_works() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes tmux available; `Err` says why it cannot be.
pub fn ensure_tmux() -> Result<(), String> {
    if tmux_works() {
        return Ok(());
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "tmux"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let first = install();
    if !tmux_works() {
        let _ = Command::new("apt-get").args(["update", "-q"]).output();
        let second = install();
        if !tmux_works() {
            return Err(format!(
                "`apt-get install tmux` failed: {:?} / {:?}",
                first.map(|o| String::from_utf8_lossy(&o.stderr).into_owned()),
                second.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            ));
        }
    }
    Ok(())
}

/// A private tmux server (its own socket), killed on drop.
pub struct Tmux {
    pub socket: String,
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .expect("run tmux")
    }

    pub fn pane(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-t", "chat", "-S", "-1000"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its colours (`capture-pane -e`: SGR escape sequences kept).
    pub fn pane_coloured(&self) -> String {
        let out = self.run(&[
            "capture-pane",
            "-p",
            "-e",
            "-J",
            "-t",
            "chat",
            "-S",
            "-1000",
        ]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "chat"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(out.status.success(), "send-keys failed: {out:?}");
    }

    /// Polls the screen until `pred` holds (bounded; panics with the screen).
    pub fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + EVENTUALLY;
        loop {
            let screen = self.pane();
            if pred(&screen) {
                return;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for(&self, needle: &str) {
        self.wait(&format!("{needle:?}"), |s| s.contains(needle));
    }

    /// Waits until each of `needles` is on the screen after the one before it.
    pub fn wait_in_order(&self, what: &str, needles: &[&str]) {
        self.wait(what, |s| {
            let mut at = 0;
            needles.iter().all(|n| match s[at..].find(n) {
                Some(i) => {
                    at += i + n.len();
                    true
                }
                None => false,
            })
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// How [`start_chat_with`] starts `acp chat`.
pub struct ChatTerm<'a> {
    /// `acp chat`'s options.
    pub args: &'a str,
    /// The terminal's width, in columns.
    pub width: usize,
    /// The demo agent's `--delay-ms` (between the pieces it streams).
    pub delay_ms: u64,
    /// Another agent's command line (shell words, quoted as needed) instead of the demo agent.
    pub agent: Option<&'a str>,
    /// The state directory (`XDG_STATE_HOME`: history, session records), in the chat's
    /// directory.
    pub state: &'a str,
}

/// `acp chat ARGS` with the demo agent in `dir`, in a new tmux session `chat` (the shell says
/// acp's exit status when it ends): 150 columns, the agent's delay 50 ms, state in `.state`.
pub fn start_chat(tag: &str, dir: &Path, args: &str) -> Tmux {
    start_chat_with(
        tag,
        dir,
        ChatTerm {
            args,
            width: 150,
            delay_ms: 50,
            agent: None,
            state: ".state",
        },
    )
}

/// [`start_chat`] as `term` says.
pub fn start_chat_with(tag: &str, dir: &Path, term: ChatTerm<'_>) -> Tmux {
    let tmux = Tmux {
        socket: format!("acp-cli-test-{tag}-{}", std::process::id()),
    };
    let agent = match term.agent {
        Some(command) => command.to_string(),
        None => format!("'{}' demo-agent --delay-ms {}", acp(), term.delay_ms),
    };
    let command = format!(
        "cd '{}' && XDG_STATE_HOME='{}' '{}' chat {} -- {agent}; echo \"acp exited with $?\"",
        dir.display(),
        dir.join(term.state).display(),
        acp(),
        term.args,
    );
    let width = term.width.to_string();
    let out = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "chat",
        "-x",
        &width,
        "-y",
        "50",
        &command,
    ]);
    assert!(out.status.success(), "tmux new-session failed: {out:?}");
    let out = tmux.run(&["set-option", "-t", "chat", "remain-on-exit", "on"]);
    assert!(out.status.success(), "{out:?}");
    tmux
}

impl Tmux {
    /// Waits for the input prompt (`>` alone on the last line).
    pub fn wait_prompt(&self) {
        self.wait("the input prompt", |s| {
            s.trim_end().lines().last() == Some(">")
        });
    }
}
