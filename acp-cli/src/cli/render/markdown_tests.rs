//! The streaming markdown renderer: every construct, wrapping across chunk splits, the agent's
//! escape sequences, and its work bounded by the text's length.

use super::*;

/// `chunks` rendered one after the other at `width`, then the message's end.
fn render(chunks: &[&str], width: usize, color: bool) -> String {
    let mut md = Markdown::new(width, color);
    let mut out = String::new();
    for c in chunks {
        md.push(c, &mut out);
    }
    md.finish(&mut out);
    out
}

fn plain(text: &str, width: usize) -> String {
    render(&[text], width, false)
}

/// `s` without acp's own style sequences (`ESC [ digits m`).
fn unstyled(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .expect("a whole sequence");
        assert_eq!(&after[end..end + 1], "m", "only SGR sequences: {s:?}");
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

const SAMPLE: &str = "# Title\n\nSome **bold** and *italic* text with `code` and a [link](https://x.test/a) \
in a paragraph that is long enough to wrap.\n\n- first item that also wraps around the edge\n  - nested\n\
1. one\n2. two\n\n> quoted words\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|--:|\n| x | 10 |\n\n---\nend\n";

#[test]
fn every_construct_plain() {
    assert_eq!(
        plain(SAMPLE, 30),
        "Title\n\
         \n\
         Some bold and italic text with\n\
         code and a link\n\
         (https://x.test/a) in a\n\
         paragraph that is long enough\n\
         to wrap.\n\
         \n\
         • first item that also wraps\n  around the edge\n\
         \x20 ◦ nested\n\
         1. one\n\
         2. two\n\
         \n\
         │ quoted words\n\
         \n\
         \x20 fn main() {}\n\
         \n\
         a │  b\n\
         ──┼───\n\
         x │ 10\n\
         \n\
         ──────────────────────────────\n\
         end\n"
    );
}

#[test]
fn styles_in_color() {
    let out = render(&[SAMPLE], 30, true);
    assert!(out.contains("\x1b[1;4mTitle"), "h1: {out:?}");
    assert!(out.contains("\x1b[1mbold"), "strong: {out:?}");
    assert!(out.contains("\x1b[3mitalic"), "emphasis: {out:?}");
    assert!(out.contains("\x1b[36mcode"), "code span: {out:?}");
    assert!(out.contains("\x1b[4mlink"), "link: {out:?}");
    assert!(
        out.contains("\x1b[2m(https://x.test/a)"),
        "address: {out:?}"
    );
    assert!(out.contains("\x1b[34mfn"), "highlighted code: {out:?}");
    // The same text as without colour, once the styles are taken out.
    assert_eq!(unstyled(&out), plain(SAMPLE, 30));
}

#[test]
fn every_chunk_split_renders_the_same() {
    let whole = render(&[SAMPLE], 30, true);
    for at in 0..=SAMPLE.len() {
        if !SAMPLE.is_char_boundary(at) {
            continue;
        }
        let split = render(&[&SAMPLE[..at], &SAMPLE[at..]], 30, true);
        assert_eq!(split, whole, "split at {at}");
    }
    let chars: Vec<String> = SAMPLE.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(render(&refs, 30, true), whole, "a character per chunk");
}

#[test]
fn words_are_never_broken_and_lines_fit() {
    let text = "The quick brown fox jumps over the lazy dog, again and again, until the \
                paragraph is several lines long at this width.";
    for width in [12, 20, 33] {
        // Chunks that cut words: three characters each.
        let chunks: Vec<String> = text
            .chars()
            .collect::<Vec<_>>()
            .chunks(3)
            .map(|c| c.iter().collect())
            .collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let out = render(&refs, width, false);
        let words: Vec<&str> = text.split(' ').collect();
        for line in out.lines() {
            assert!(line.chars().count() <= width, "{width}: {line:?}");
            for w in line.split(' ') {
                assert!(words.contains(&w), "{width}: broken word {w:?} in {out:?}");
            }
        }
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), words);
    }
}

#[test]
fn a_word_longer_than_the_line_is_cut() {
    assert_eq!(plain("ab cdefghijklmn", 8), "ab\ncdefghij\nklmn\n");
}

#[test]
fn emphasis_rules() {
    assert_eq!(
        plain("2 * 3 * 4 and snake_case_name", 80),
        "2 * 3 * 4 and snake_case_name\n"
    );
    assert_eq!(plain("\\*not\\* ~~gone~~", 80), "*not* gone\n");
    let out = render(&["**bold words** then"], 80, true);
    assert!(out.contains("\x1b[1mbold words\x1b[0m then"), "{out:?}");
    // An unclosed `**` ends with its paragraph.
    let out = render(&["**open\n\nnext"], 80, true);
    assert!(out.ends_with("\x1b[0m\n\nnext\n"), "{out:?}");
}

#[test]
fn links_images_and_brackets() {
    assert_eq!(
        plain("see [the docs](https://d.test) now", 80),
        "see the docs (https://d.test) now\n"
    );
    assert_eq!(
        plain("[https://a.test](https://a.test).", 80),
        "https://a.test.\n"
    );
    assert_eq!(plain("![a cat](cat.png)", 80), "[image: a cat]\n");
    assert_eq!(
        plain("- [ ] todo and [x] done", 80),
        "• [ ] todo and [x] done\n"
    );
    assert_eq!(plain("a [b](c d) e", 80), "a [b](c d) e\n");
    assert_eq!(plain("arr[i] = 1", 80), "arr[i] = 1\n");
}

#[test]
fn headings_end_their_line_and_line_breaks_are_kept() {
    assert_eq!(
        plain("## Two\ntext\nmore text", 80),
        "Two\ntext\nmore text\n"
    );
    // Under a list item's indent.
    assert_eq!(
        plain("- item\n  more of it\nnext", 80),
        "• item\n  more of it\n  next\n"
    );
    let out = render(&["### Three\n"], 80, true);
    assert_eq!(out, "\x1b[0m\x1b[1;3mThree\x1b[0m\n");
}

#[test]
fn code_blocks_keep_their_lines_and_spaces() {
    assert_eq!(
        plain("```\n  a  b\n\n~~~ not a fence end\n```\nafter", 80),
        "  \x20 a  b\n  \n  ~~~ not a fence end\nafter\n"
    );
    // An unknown language: plain. A block left open at the end is shown.
    let out = render(&["```nolang\nx = 1\n"], 80, true);
    assert_eq!(out, "  x = 1\n");
}

#[test]
fn a_table_too_wide_is_a_row_per_line() {
    let t = "| column one | column two |\n|---|---|\n| aaaa | bbbb |\n";
    assert_eq!(plain(t, 16), "column one │\n  column two\naaaa │ bbbb\n");
    // Not a table (no delimiter row): as written.
    assert_eq!(plain("| a | b |\n", 80), "| a | b |\n");
}

#[test]
fn agent_escape_sequences_are_shown_not_written() {
    let nasty = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\u{9b}31m\r";
    let text = format!(
        "# H{nasty}\n\npara {nasty} **b{nasty}**\n\n```rust\nlet x = \"{nasty}\";\n```\n\n\
         [t{nasty}](https://u{nasty})\n\n| a{nasty} | b&#27;[2J&#x9b;1m |\n|---|---|\n| c | d{nasty} |\n\n> q{nasty}\n\n- i{nasty}\n"
    );
    for color in [false, true] {
        let out = render(&[&text], 60, color);
        let bare = unstyled(&out);
        assert!(
            !bare.contains(['\x1b', '\x07', '\u{9b}', '\r']),
            "{color}: {bare:?}"
        );
        // Shown: ESC as ␛, other controls as �.
        assert!(bare.matches('\u{241b}').count() >= 16, "{bare:?}");
    }
}

#[test]
fn work_is_linear_in_the_text() {
    // Every construct, a large message, in chunks of 7 bytes.
    let mut big = String::new();
    while big.len() < 2 << 20 {
        big.push_str(SAMPLE);
    }
    // Hostile shapes: brackets that never close, markers, a word with no end, a huge code
    // line, a table past its bounds.
    big.push_str(&"[".repeat(300_000));
    big.push(' ');
    big.push_str(&"*_~`".repeat(100_000));
    big.push_str("\n\n");
    big.push_str(&"x".repeat(500_000));
    big.push_str("\n\n```rust\n");
    big.push_str(&"let a = 1; ".repeat(50_000));
    big.push_str("\n```\n\n");
    for i in 0..5_000 {
        big.push_str(&format!("| {i} | {} |\n", "r".repeat(300)));
        if i == 0 {
            big.push_str("|---|---|\n");
        }
    }
    let mut md = Markdown::new(80, true);
    let mut out = String::new();
    let bytes = big.as_bytes();
    let mut at = 0;
    let mut max_held = 0;
    while at < bytes.len() {
        let mut end = (at + 7).min(bytes.len());
        while !big.is_char_boundary(end) {
            end += 1;
        }
        md.push(&big[at..end], &mut out);
        assert!(md.held() <= HELD_BUDGET, "{} held at {at}", md.held());
        max_held = max_held.max(md.held());
        at = end;
        // What is written is taken as it comes (the screen does).
        out.clear();
    }
    md.finish(&mut out);
    let work = md.work();
    let len = big.len() as u64;
    assert!(work >= len, "every byte is looked at: {work} < {len}");
    assert!(work <= 8 * len, "linear: {work} work for {len} bytes");
    // The bounds were reached (the test feeds what fills them), never passed.
    assert!(max_held >= table::MAX_BYTES - 64, "{max_held}");
    // A table past its bounds is shown as written, not kept.
    assert!(md.table.is_none());
}
