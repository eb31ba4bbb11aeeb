//! Interactive `acp chat` in a real terminal (tmux), the prompt's files and the turn's writes:
//! `@path` completed with Tab and sent as the agent's capabilities allow, `/attach` (a text
//! file, an image, a path outside the session directory refused), `/diff` and `/undo` of the
//! agent's writes (a created file removed, a changed file put back, refused after a change
//! made outside), and a prompt typed during a turn queued and sent after it (`/queue` lists
//! it), held after Ctrl-C or a failed turn until the user sends (Enter, or a new prompt behind
//! it), edits or drops it, the queue's limit said, and a line half typed when a turn ends found
//! on the input line.
//!
//! The demo agent names what it is sent (`[resource file:///… (N characters)]`, `[image
//! image/png, N bytes]`) and writes `acp-demo.txt` every turn (`--yes` allows it). A turn is
//! held open by a command that reads a FIFO (`` `cat gate` ``) until the test writes to it (a
//! scripted python agent, for the failed turn, reads one itself).
//! tmux is installed with apt-get when missing; a test is skipped, with the reason printed,
//! only when it cannot be installed.

mod cli_support;
#[path = "cli_support/tmux.rs"]
mod tmux;

use std::path::PathBuf;
use std::process::Command;

use cli_support::TempDir;
use tmux::{ensure_tmux, start_chat, start_chat_with, ChatTerm, Tmux};

macro_rules! need_tmux {
    ($name:literal) => {
        if let Err(why) = ensure_tmux() {
            println!("SKIPPED {}: tmux is unavailable: {why}", $name);
            return;
        }
    };
}

#[test]
fn mentions_complete_with_tab_and_attachments_follow_the_agents_capabilities() {
    need_tmux!("mentions_complete_with_tab_and_attachments_follow_the_agents_capabilities");
    let root = TempDir::new("tmux-attach");
    let dir = root.join("work");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello notes\n").unwrap();
    std::fs::write(dir.join("pic.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    std::fs::write(root.join("secret.txt"), "outside\n").unwrap();
    let real = std::fs::canonicalize(&dir).unwrap();
    let tmux = start_chat("attach", &dir, "--yes");
    tmux.wait_for("type a prompt");
    tmux.wait_prompt();

    // Tab completes the mention from the session directory.
    tmux.keys(&["read @no", "Tab"]);
    tmux.wait_for("> read @notes.txt");
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!(
        "[resource file://{}/notes.txt (12 characters)]",
        real.display()
    ));
    tmux.wait_for("I wrote acp-demo.txt");
    tmux.wait_prompt();

    // A mention that names no file (`@someone`, a typo) goes as text, and the user is told.
    tmux.keys(&["about @missing.txt", "Enter"]);
    tmux.wait_for("@missing.txt names no file in the session directory: sent as text");
    tmux.wait_for("You said: \"about @missing.txt\"");
    tmux.wait("the turn's end", |s| {
        s.matches("I wrote acp-demo.txt").count() == 2
    });
    tmux.wait_prompt();

    // /attach: outside the directory refused, a directory refused, an image attached.
    tmux.keys(&["/attach ../secret.txt", "Enter"]);
    tmux.wait_for("../secret.txt is outside the session directory");
    tmux.wait_prompt();
    tmux.keys(&["/attach sub", "Enter"]);
    tmux.wait_for("sub is a directory");
    tmux.wait_prompt();
    tmux.keys(&["/attach pic.png", "Enter"]);
    tmux.wait_for("attached pic.png (sent with your next prompt)");
    tmux.wait_prompt();
    tmux.keys(&["look at this", "Enter"]);
    tmux.wait_for("[image image/png, 12 bytes]");
    tmux.wait_for("I wrote acp-demo.txt in");
    tmux.wait_prompt();
    // Sent once: the next prompt has no attachment.
    tmux.keys(&["/attach", "Enter"]);
    tmux.wait_for("nothing attached");
    assert!(!tmux.pane().contains("outside\n"));
    tmux.wait_prompt();
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn undo_reverts_the_last_turns_writes_and_refuses_after_an_outside_change() {
    need_tmux!("undo_reverts_the_last_turns_writes_and_refuses_after_an_outside_change");
    let dir = TempDir::new("tmux-undo");
    let file = dir.join("acp-demo.txt");
    let tmux = start_chat("undo", dir.path(), "--yes");
    tmux.wait_for("type a prompt");
    tmux.wait_prompt();
    tmux.keys(&["/undo", "Enter"]);
    tmux.wait_for("nothing to undo");
    tmux.wait_prompt();

    // The agent creates the file: /diff shows it, /undo removes it.
    tmux.keys(&["first", "Enter"]);
    tmux.wait_for("I wrote acp-demo.txt");
    tmux.wait_prompt();
    assert!(file.exists());
    tmux.keys(&["/diff", "Enter"]);
    tmux.wait_for("acp-demo.txt (new file, +3 -0)\n    @@ -0,0 +1,3 @@");
    tmux.wait_for("    +The acp demo agent was asked:\n    +\n    +first\n");
    tmux.wait_prompt();
    tmux.keys(&["/undo", "Enter"]);
    tmux.wait_for("acp-demo.txt removed (the agent created it)");
    tmux.wait_prompt();
    assert!(!file.exists());

    // The agent changes an existing file.
    std::fs::write(&file, "original\n").unwrap();
    tmux.keys(&["second", "Enter"]);
    tmux.wait("the second write", |s| {
        s.matches("I wrote acp-demo.txt").count() == 2
    });
    tmux.wait_prompt();
    tmux.keys(&["/diff", "Enter"]);
    tmux.wait_for("    -original");
    tmux.wait_prompt();
    let agents = std::fs::read_to_string(&file).unwrap();
    assert!(agents.contains("second"), "{agents}");

    // Changed since the agent wrote it: refused, the change kept.
    std::fs::write(&file, format!("{agents}mine\n")).unwrap();
    tmux.keys(&["/undo", "Enter"]);
    tmux.wait_for("changed since the agent wrote it: not undone");
    tmux.wait_for("/undo refused; no file was changed");
    tmux.wait_prompt();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{agents}mine\n")
    );

    // As the agent left it again: put back as before the turn.
    std::fs::write(&file, &agents).unwrap();
    tmux.keys(&["/undo", "Enter"]);
    tmux.wait_for("acp-demo.txt restored");
    tmux.wait_prompt();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
    tmux.keys(&["/undo", "Enter"]);
    tmux.wait("nothing left to undo", |s| {
        s.matches("nothing to undo").count() == 2
    });
    tmux.wait_prompt();
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

/// Lets the `cat GATE` the demo agent runs end.
fn open_gate(gate: &std::path::Path) {
    // The reader (cat) has the FIFO open: this open does not block for long.
    std::fs::write(gate, "open\n").unwrap();
}

/// Starts a turn held by `` `cat NAME` ``, NAME a new FIFO in `dir` (one a turn, so a cancelled
/// turn's `cat` cannot take what the next one waits for), and waits until it runs; returns the
/// FIFO ([`open_gate`] ends the turn).
fn hold(tmux: &Tmux, dir: &TempDir, name: &str) -> PathBuf {
    let gate = dir.join(name);
    let made = Command::new("mkfifo").arg(&gate).status().expect("mkfifo");
    assert!(made.success());
    tmux.keys(&[&format!("hold `cat {name}`"), "Enter"]);
    tmux.wait_for(&format!("Run `cat {name}` · in_progress"));
    gate
}

/// Types `lines` during the running turn and waits until the last is queued (`n` waiting).
fn type_ahead(tmux: &Tmux, lines: &[&str], n: usize) {
    let mut keys = Vec::new();
    for line in lines {
        keys.extend([*line, "Enter"]);
    }
    tmux.keys(&keys);
    let last = lines.last().expect("a line");
    tmux.wait_for(&format!(
        "queued: {last} (sent when the turn ends; {n} waiting"
    ));
}

/// Ctrl-C during the turn: it is cancelled and the `n` queued prompts are held (one more such
/// notice than before); returns at the input prompt.
fn cancel_holding(tmux: &Tmux, n: usize) {
    let held = format!(
        "{n} queued prompt{} held (the turn was cancelled)",
        if n == 1 { "" } else { "s" }
    );
    let before = tmux.pane().matches(&held).count();
    tmux.keys(&["C-c"]);
    tmux.wait(&held, |s| s.matches(&held).count() == before + 1);
    tmux.wait_prompt();
}

#[test]
fn a_prompt_typed_during_a_turn_is_queued_and_sent_after_it() {
    need_tmux!("a_prompt_typed_during_a_turn_is_queued_and_sent_after_it");
    let dir = TempDir::new("tmux-queue");
    let tmux = start_chat("queue", dir.path(), "--yes");
    tmux.wait_for("type a prompt");
    tmux.wait_prompt();
    let first = hold(&tmux, &dir, "gate");

    // Typed during the turn: queued, not lost; `/queue` is done at once (not queued).
    type_ahead(&tmux, &["queued one"], 1);
    type_ahead(&tmux, &["queued two"], 2);
    tmux.keys(&["/queue", "Enter"]);
    tmux.wait_for("2 queued prompts (sent one by one when the turn ends;");
    tmux.wait_for("  1. queued one\n  2. queued two\n");
    open_gate(&first);

    // The turn ends as it would have; then the queued prompts are sent, one per turn, in order.
    tmux.wait_in_order(
        "both queued turns answered, in order",
        &[
            "sending the queued prompt: queued one",
            "You said: \"queued one\"",
            "sending the queued prompt: queued two",
            "You said: \"queued two\"",
        ],
    );
    tmux.wait_prompt();
    let screen = tmux.pane();
    assert!(!screen.contains("You said: \"/queue"), "{screen}");

    // A line still being typed when the turn ends is not lost: the line editor has it.
    let half = hold(&tmux, &dir, "half");
    tmux.keys(&["half a line"]);
    tmux.wait_for("half a line");
    open_gate(&half);
    tmux.wait("the half line on the input line", |s| {
        s.trim_end().lines().last() == Some("> half a line")
    });
    tmux.keys(&[" done", "Enter"]);
    tmux.wait_for("You said: \"half a line done\"");
    tmux.wait_prompt();

    // With nothing queued, Ctrl-C cancels the turn as before.
    hold(&tmux, &dir, "cancelled");
    tmux.keys(&["C-c"]);
    tmux.wait_for("cancelling the turn… (press Ctrl-C again to quit)\n");
    tmux.wait_for("[turn ended: cancelled]");
    tmux.wait_prompt();
    assert!(!tmux.pane().contains("queued prompt held"));
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn ctrl_c_holds_the_queue_until_the_user_sends_edits_or_drops_it() {
    need_tmux!("ctrl_c_holds_the_queue_until_the_user_sends_edits_or_drops_it");
    let dir = TempDir::new("tmux-held");
    let tmux = start_chat("held", dir.path(), "--yes");
    tmux.wait_for("type a prompt");
    tmux.wait_prompt();

    // Ctrl-C during a turn with prompts queued: the turn is cancelled, the prompts are held
    // (neither sent nor dropped) and the user is told what to do.
    hold(&tmux, &dir, "one");
    type_ahead(&tmux, &["first held", "second held"], 2);
    cancel_holding(&tmux, 2);
    let screen = tmux.pane();
    for said in [
        "cancelling the turn… (press Ctrl-C again to quit); the 2 queued prompts will be held",
        "[turn ended: cancelled]",
        "2 queued prompts held (the turn was cancelled): Enter sends them (one per turn), \
         /queue lists them, /queue clear drops them",
    ] {
        assert!(screen.contains(said), "{said:?} in\n{screen}");
    }
    assert!(!screen.contains("You said: \"first held"), "{screen}");
    assert!(!screen.contains("sending the queued prompt"), "{screen}");

    // Looked at and changed at the prompt; a number that names nothing is refused.
    for (typed, said) in [
        ("/queue", "2 queued prompts (held: Enter sends them;"),
        (
            "/queue drop 5",
            "/queue drop: no queued prompt 5 (1 to 2; /queue lists them)",
        ),
        (
            "/queue edit 2 second edited",
            "queued prompt 2 now says: second edited",
        ),
    ] {
        tmux.keys(&[typed, "Enter"]);
        tmux.wait_for(said);
        tmux.wait_prompt();
    }

    // Enter on the empty line sends them, one per turn, in order.
    tmux.keys(&["Enter"]);
    tmux.wait_in_order(
        "both held prompts answered, in order",
        &[
            "sending the queued prompt: first held",
            "You said: \"first held\"",
            "You said: \"second edited\"",
        ],
    );
    tmux.wait_prompt();

    // A new prompt while the queue is held: the held one goes first, the new one after it.
    hold(&tmux, &dir, "two");
    type_ahead(&tmux, &["waited"], 1);
    cancel_holding(&tmux, 1);
    tmux.keys(&["fresh", "Enter"]);
    tmux.wait_in_order(
        "the held prompt, then the new one",
        &[
            "sending the first held prompt: waited (yours waits behind it: 1 queued)",
            "You said: \"waited\"",
            "You said: \"fresh\"",
        ],
    );
    tmux.wait_prompt();

    // Over the limit: the queue's own refusal; /queue clear drops what is held.
    hold(&tmux, &dir, "three");
    let lines: Vec<String> = (1..=16).map(|i| format!("p{i}")).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    type_ahead(&tmux, &lines, 16);
    tmux.keys(&["p17", "Enter"]);
    tmux.wait_for("acp: warning: not queued: 16 prompts wait already for the turn to end: p17");
    cancel_holding(&tmux, 16);
    tmux.keys(&["/queue clear", "Enter"]);
    tmux.wait_for("dropped 16 queued prompts");
    tmux.wait_prompt();
    tmux.keys(&["/queue send", "Enter"]);
    tmux.wait_for("nothing is queued");
    tmux.wait_prompt();
    assert!(!tmux.pane().contains("You said: \"p1\""));

    // Quitting with prompts held says they were not sent.
    hold(&tmux, &dir, "four");
    type_ahead(&tmux, &["never sent"], 1);
    cancel_holding(&tmux, 1);
    tmux.keys(&["C-d"]);
    tmux.wait_for("1 queued prompt not sent (the chat ended)");
    tmux.wait_for("acp exited with 0");
}

/// A failed turn holds the queue too: a scripted agent answers the first prompt with an error
/// once the test lets it (a FIFO), a prompt typed meanwhile waits until Enter sends it.
#[test]
fn a_failed_turn_holds_the_queue_too() {
    need_tmux!("a_failed_turn_holds_the_queue_too");
    let dir = TempDir::new("tmux-failed");
    let script = dir.join("agent.py");
    std::fs::write(
        &script,
        cli_support::py_agent(
            r#"
handshake()
m = expect("session/prompt")
update("working on it\n")
open(sys.argv[3]).read()
send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32603, "message": "the model failed"}})
while True:
    m = expect("session/prompt")
    update("got: " + m["params"]["prompt"][0]["text"])
    end(m["id"])
"#,
        ),
    )
    .unwrap();
    let gate = dir.join("gate");
    let made = Command::new("mkfifo").arg(&gate).status().expect("mkfifo");
    assert!(made.success());
    let agent = format!(
        "python3 '{}' s '{}' '{}'",
        script.display(),
        dir.join("agent.log").display(),
        gate.display()
    );
    let tmux = start_chat_with(
        "failed",
        dir.path(),
        ChatTerm {
            args: "",
            width: 150,
            delay_ms: 0,
            agent: Some(&agent),
            state: ".state",
        },
    );
    tmux.wait_for("type a prompt");
    tmux.wait_prompt();
    tmux.keys(&["first", "Enter"]);
    tmux.wait_for("working on it");
    type_ahead(&tmux, &["after the failure"], 1);
    open_gate(&gate);
    tmux.wait_for("the model failed");
    tmux.wait_for(
        "1 queued prompt held (the turn failed): Enter sends it (one per turn), /queue lists it",
    );
    tmux.wait_prompt();
    assert!(!tmux.pane().contains("got: after the failure"));
    tmux.keys(&["Enter"]);
    tmux.wait_in_order(
        "the held prompt sent",
        &[
            "sending the queued prompt: after the failure",
            "got: after the failure",
        ],
    );
    tmux.wait_prompt();
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}
