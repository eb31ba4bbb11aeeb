//! Interactive `acp chat` in a real terminal (tmux): type a prompt, answer the permission
//! dialog (after an invalid answer), see the answer; cancel a turn with Ctrl-C; the line
//! editor (Tab completion, `\` continuation, Up for history, the history file); quit with
//! Ctrl-D and exit 0; the answer's markdown rendered and wrapped to the terminal's width, and
//! the status line (between turns and `/status`); a burst of lines at the prompt sent one per
//! turn, none of them taken as a question's answer.
//!
//! tmux is installed with apt-get when missing; the test is skipped, with the reason printed,
//! only when it cannot be installed.

mod cli_support;
#[path = "cli_support/tmux.rs"]
mod tmux;

use cli_support::TempDir;
use tmux::{ensure_tmux, start_chat_with, ChatTerm, Tmux};

/// `acp chat` with the demo agent in a new tmux session `chat` (the shell says acp's exit
/// status when it ends).
fn start_chat(tag: &str, dir: &TempDir) -> Tmux {
    start_chat_sized(tag, dir, 150)
}

/// [`start_chat`] in a terminal `width` columns wide (the agent streams slowly: 150 ms between
/// pieces, so a turn can be cancelled while it streams; state in `dir/state`).
fn start_chat_sized(tag: &str, dir: &TempDir, width: usize) -> Tmux {
    start_chat_with(
        tag,
        dir.path(),
        ChatTerm {
            args: "",
            width,
            delay_ms: 150,
            agent: None,
            state: "state",
        },
    )
}

#[test]
fn ctrl_d_at_a_question_refuses_that_question_only() {
    if let Err(why) = ensure_tmux() {
        println!(
            "SKIPPED ctrl_d_at_a_question_refuses_that_question_only: tmux is unavailable: {why}"
        );
        return;
    }
    let dir = TempDir::new("tmux-ctrl-d");
    let tmux = start_chat("ctrl-d", &dir);
    tmux.wait_for("type a prompt");
    tmux.keys(&["hello", "Enter"]);
    tmux.wait_for("Permission requested: run `ls`");
    // Ctrl-D refuses the command (the agent's reject option); the turn goes on to the write.
    tmux.keys(&["C-d"]);
    tmux.wait_for("Do not run it (Ctrl-D)");
    tmux.wait_for("Permission requested: Write");
    tmux.keys(&["C-d"]);
    tmux.wait_for("OK, I did not write acp-demo.txt");
    assert!(!tmux.pane().contains("[turn ended: cancelled]"));
    assert!(!dir.join("acp-demo.txt").exists());
    // The chat is still there: another prompt is answered; Ctrl-D at the prompt quits.
    tmux.wait("the next prompt", |s| {
        s.trim_end().lines().last() == Some(">")
    });
    tmux.keys(&["/echo still here", "Enter"]);
    tmux.wait_for("\nstill here");
    tmux.wait("the prompt after /echo", |s| s.trim_end().ends_with('>'));
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn a_burst_of_lines_at_the_prompt_is_sent_line_by_line() {
    if let Err(why) = ensure_tmux() {
        println!("SKIPPED a_burst_of_lines_at_the_prompt_is_sent_line_by_line: tmux is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("tmux-burst");
    let tmux = start_chat("burst", &dir);
    tmux.wait_for("type a prompt");
    // Three lines in one send-keys (one write to the terminal, as a paste without bracketed
    // paste or fast typing): the first is sent; the other two are the next prompts, in order.
    // The first asks two questions: the lines typed ahead are prompts, never their answers.
    tmux.keys(&[
        "hello",
        "Enter",
        "/echo burst-two",
        "Enter",
        "/echo burst-three",
        "Enter",
    ]);
    tmux.wait_for("Permission requested: run `ls`");
    tmux.keys(&["2", "Enter"]);
    tmux.wait_for("Permission requested: Write");
    tmux.keys(&["2", "Enter"]);
    tmux.wait("both typed-ahead prompts answered, in order", |s| {
        match (s.find("\nburst-two\n"), s.find("\nburst-three\n")) {
            (Some(two), Some(three)) => two < three && s.trim_end().ends_with('>'),
            _ => false,
        }
    });
    assert!(!dir.join("acp-demo.txt").exists());
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn a_notice_between_turns_is_printed_above_the_input_line() {
    if let Err(why) = ensure_tmux() {
        println!("SKIPPED a_notice_between_turns_is_printed_above_the_input_line: tmux is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("tmux-notice");
    let tmux = start_chat("notice", &dir);
    tmux.wait_for("type a prompt");
    // `#later`: the demo agent renames the session a second after the turn.
    tmux.keys(&["/echo #later", "Enter"]);
    // The turn's answer, then the prompt after it (not the prompt before the turn).
    tmux.wait("the prompt after the turn", |s| {
        s.contains("\n#later\n") && s.trim_end().lines().last() == Some(">")
    });
    tmux.keys(&["typing"]);
    // The notice is on a line of its own; the input line, with what was typed, stays last
    // (waited for: the line editor prints the notice, then draws the input line again).
    tmux.wait("the title above the input line", |s| {
        s.contains("[title: renamed later (#later)]")
            && s.trim_end().lines().last() == Some("> typing")
    });
    let screen = tmux.pane();
    assert!(!screen.contains("> [title"), "{screen}");
    assert!(!screen.contains("typing[title"), "{screen}");
    tmux.keys(&["C-u", "C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn markdown_answers_are_rendered_and_wrapped_and_the_status_is_shown() {
    if let Err(why) = ensure_tmux() {
        println!("SKIPPED markdown_answers_are_rendered_and_wrapped_and_the_status_is_shown: tmux is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("tmux-markdown");
    let tmux = start_chat_sized("markdown", &dir, 60);
    tmux.wait_for("type a prompt");
    // `#markdown`: the demo agent's answer ends with a markdown sample, sent in pieces of 5
    // characters (words cut across pieces); `#usage`: it reports the context used.
    tmux.keys(&["show #markdown #usage", "Enter"]);
    tmux.wait_for("Permission requested: run `ls`");
    tmux.keys(&["C-d"]);
    tmux.wait_for("Permission requested: Write");
    tmux.keys(&["C-d"]);
    tmux.wait("the next prompt", |s| {
        s.trim_end().lines().last() == Some(">")
    });
    let screen = tmux.pane();
    let start = screen.find("Markdown sample").expect(&screen);
    let end = screen.find("The end.").expect(&screen);
    let answer = &screen[start..end];
    // Rendered: no markdown syntax left, the constructs drawn.
    for (what, shown) in [
        (
            "emphasis, code, link",
            "Some bold, italic and inline code, a link",
        ),
        ("the link's address", "(https://example.com/acp)"),
        (
            "a list",
            "• first item\n• second item with code\n  ◦ a nested item",
        ),
        ("an ordered list", "1. one\n2. two"),
        ("a quote", "│ a quoted line"),
        (
            "code, indented, as written",
            "  fn main() {\n      println!(\"hello\");\n  }",
        ),
        (
            "a table",
            "name  │ value\n──────┼──────\nalpha │     1\nbeta  │    22",
        ),
    ] {
        assert!(answer.contains(shown), "{what}: {shown:?} in\n{screen}");
    }
    assert!(
        !answer.contains("**") && !answer.contains("##") && !answer.contains("```"),
        "{screen}"
    );
    // Wrapped at word boundaries by acp (lines it ended: the capture joins the terminal's own
    // wraps), within the 60 columns, no word cut, although the words came cut in pieces.
    let paragraph: Vec<&str> = answer
        .lines()
        .skip_while(|l| !l.starts_with("Some bold"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(paragraph.len() >= 3, "wrapped: {paragraph:?}\n{screen}");
    assert!(
        paragraph.iter().all(|l| l.chars().count() <= 60),
        "{paragraph:?}"
    );
    let words = "Some bold, italic and inline code, a link (https://example.com/acp) and enough \
                 words in one paragraph that a narrow terminal has to wrap them at word \
                 boundaries.";
    assert_eq!(paragraph.join(" "), words, "{screen}");
    // Styled: bold, a highlighted code line.
    let coloured = tmux.pane_coloured();
    let bold = coloured
        .lines()
        .find(|l| l.contains("italic"))
        .expect(&coloured);
    assert!(bold.contains("\x1b[1mbold"), "{bold:?}");
    let code = coloured
        .lines()
        .find(|l| l.contains("println!"))
        .expect(&coloured);
    assert!(code.contains("\x1b["), "highlighted: {code:?}");

    // The status line between turns: the agent, the context it reported; `/status` again.
    let used = 1000 + "show #markdown #usage".len();
    let status = format!("context: {used} of 200000 tokens (0%)");
    assert_eq!(screen.matches(&status).count(), 1, "{screen}");
    let line = screen.lines().find(|l| l.contains(&status)).unwrap();
    assert!(line.starts_with("[acp demo agent"), "{line}");
    tmux.keys(&["/status", "Enter"]);
    tmux.wait(&status, |s| s.matches(&status).count() == 2);
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}

#[test]
fn interactive_chat_in_a_terminal() {
    if let Err(why) = ensure_tmux() {
        println!("SKIPPED interactive_chat_in_a_terminal: tmux is unavailable: {why}");
        return;
    }
    let dir = TempDir::new("tmux");
    let tmux = start_chat("terminal", &dir);

    tmux.wait_for("type a prompt");
    tmux.keys(&["hello from tmux", "Enter"]);
    tmux.wait_for("choose 1-2:");
    assert!(tmux.pane().contains("You said: \"hello from tmux\""));
    // The first question is the demo agent's `ls` terminal, the second its file write.
    assert!(tmux.pane().contains("Permission requested: run `ls`"));
    tmux.keys(&["5", "Enter"]);
    tmux.wait_for("`5` is not an option");
    tmux.keys(&["1", "Enter"]);
    tmux.wait_for("Permission requested: Write");
    // The write's question shows the change first (acp-client's diff of the tool call), its
    // added lines in green on a terminal.
    let screen = tmux.pane();
    let diff = screen
        .find("    +The acp demo agent was asked:")
        .expect(&screen);
    assert!(
        screen[..diff].contains("acp-demo.txt (new file, +3 -0)")
            && screen[..diff].contains("    @@ -0,0 +1,3 @@")
            && diff < screen.rfind("Permission requested: Write").unwrap(),
        "the diff, then the question:\n{screen}"
    );
    let coloured = tmux.pane_coloured();
    let added = coloured
        .lines()
        .find(|l| l.contains("+The acp demo agent was asked:"))
        .expect(&coloured);
    assert!(added.contains("\x1b[32m"), "green: {added:?}");
    tmux.keys(&["1", "Enter"]);
    tmux.wait_for("I wrote acp-demo.txt");
    let written = std::fs::read_to_string(dir.join("acp-demo.txt")).expect("file written");
    assert!(written.contains("hello from tmux"));

    // A second turn, cancelled with Ctrl-C while it streams (typed once the prompt is back: on a
    // loaded machine the turn's end can come well after its last line).
    tmux.wait("the next prompt", |s| {
        s.trim_end().lines().last() == Some(">")
    });
    tmux.keys(&["second turn", "Enter"]);
    tmux.wait_for("You said: \"second");
    tmux.keys(&["C-c"]);
    tmux.wait_for("[turn ended: cancelled]");

    tmux.wait("the input prompt after the cancelled turn", |s| {
        s.trim_end().ends_with('>')
    });

    // The line editor: Tab completes a slash command.
    tmux.keys(&["/he", "Tab"]);
    tmux.wait_for("> /help");
    tmux.keys(&["Enter"]);
    tmux.wait_for("acp's commands:");

    // A line ending in `\` continues: one prompt of two lines.
    tmux.keys(&["one\\", "Enter"]);
    tmux.keys(&["two #max-tokens", "Enter"]);
    tmux.wait_for("I run out of tokens");
    let screen = tmux.pane();
    assert!(
        screen.contains("You said: \"one\ntwo #max-tokens\""),
        "one two-line prompt, without the backslash:\n{screen}"
    );
    assert!(
        !screen.contains("\"one\\"),
        "the backslash was sent:\n{screen}"
    );

    // Up recalls the last prompt (history): sent again, a second identical answer.
    tmux.wait("the input prompt after the two-line turn", |s| {
        s.trim_end().ends_with('>')
    });
    tmux.keys(&["Up", "Enter"]);
    tmux.wait("the recalled prompt's answer", |s| {
        s.matches("two #max-tokens\". I am").count() == 2
    });

    // The history file keeps prompts, not answers to questions, readable by the user only.
    let history_file = dir.join("state").join("acp").join("history");
    let history = std::fs::read_to_string(&history_file).expect("history file");
    assert!(history.contains("hello from tmux"), "{history}");
    assert!(history.contains("second turn"), "{history}");
    assert!(
        !history.lines().any(|l| l.trim() == "5" || l.trim() == "1"),
        "answers to questions are not history: {history}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&history_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "history readable by others: {mode:o}");

    // Ctrl-C at the prompt (the line editor sees it, not a signal) warns; Ctrl-D then quits
    // with exit code 0.
    tmux.wait("the input prompt after the recalled turn", |s| {
        s.trim_end().ends_with('>')
    });
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl-C again or Ctrl-D to quit");
    tmux.keys(&["C-d"]);
    tmux.wait_for("acp exited with 0");
}
