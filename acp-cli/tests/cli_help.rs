//! `acp … --help` teaches (issue 22, item 9): every subcommand's `--help` ends with examples,
//! `-h` is a short summary, a default is printed once, `acp demo-agent --help` lists its
//! triggers, and `acp chat --help` lists the slash commands and the editing keys.

mod cli_support;

use cli_support::{run, TempDir};

const SUBCOMMANDS: &[&str] = &["chat", "agents", "sessions", "login", "demo-agent", "serve"];

fn help(args: &[&str]) -> String {
    let dir = TempDir::new("help");
    let r = run(args, dir.path(), None);
    assert_eq!(r.code(), 0, "{}", r.dump());
    r.stdout
}

#[test]
fn every_subcommand_has_examples_in_long_help_and_a_short_summary_with_h() {
    for sub in SUBCOMMANDS {
        let long = help(&[sub, "--help"]);
        let short = help(&[sub, "-h"]);
        assert!(
            long.contains("Examples:\n  acp "),
            "acp {sub} --help:\n{long}"
        );
        assert!(!short.contains("Examples:"), "acp {sub} -h:\n{short}");
        assert!(
            short.lines().count() < long.lines().count(),
            "acp {sub} -h is no shorter:\n{short}"
        );
        // -h: one line per option, each a phrase (the details are in --help).
        for line in short.lines().filter(|l| l.trim_start().starts_with("--")) {
            assert!(line.len() <= 150, "acp {sub} -h: a long line: {line}");
        }
        // A default said in the text is not printed again by clap.
        assert!(
            !long.contains("[default: 67108864]") && !long.contains("[default: 16777216]"),
            "acp {sub} --help:\n{long}"
        );
    }
    let chat = help(&["chat", "--help"]);
    assert_eq!(chat.matches("64 MiB").count(), 1, "{chat}");
    assert!(!chat.contains("Default 16 [default: 16]"), "{chat}");
}

#[test]
fn chat_help_lists_slash_commands_and_editing_keys_and_the_gemini_flag_of_the_readme() {
    let chat = help(&["chat", "--help"]);
    for needle in [
        "/help",
        "/mode [ID]",
        "/model [VALUE]",
        "/config [ID VALUE]",
        "/sessions",
        "/quit",
        "/agent-NAME",
        "Alt-Enter",
        "Up/Down",
        "Tab completes",
        "Ctrl-D at the prompt quits",
        "npx -y @google/gemini-cli --acp",
    ] {
        assert!(
            chat.contains(needle),
            "no {needle:?} in acp chat --help:\n{chat}"
        );
    }
    assert!(!chat.contains("--experimental-acp"), "{chat}");
    // The README's example is the same.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    assert!(readme.contains("npx -y @google/gemini-cli --acp"));
    assert!(!readme.contains("--experimental-acp"));
}

#[test]
fn demo_agent_help_lists_its_triggers() {
    let demo = help(&["demo-agent", "--help"]);
    for needle in [
        "backticks",
        "acp-demo.txt",
        "#refuse",
        "#max-tokens",
        "#crash",
        "#mcp",
        "#later",
        "/echo TEXT",
        "/help",
    ] {
        assert!(
            demo.contains(needle),
            "no {needle:?} in acp demo-agent --help:\n{demo}"
        );
    }
}
