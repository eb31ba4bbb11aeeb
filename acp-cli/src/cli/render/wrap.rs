//! Word wrapping for a terminal, while the text streams in: whole words are placed on the
//! line (a word that does not fit starts the next one, under the block's hanging indent), a
//! word longer than a line is cut at the line's end. Words arrive already styled (ANSI SGR
//! sequences of acp's own, never the agent's: its text is escaped before it gets here), with
//! their display width; what is written is appended to a `String` the caller gives to stdout.
//!
//! The work is linear: each character placed is looked at a constant number of times
//! ([`Wrap::work`] counts them, for the tests).

use unicode_width::UnicodeWidthChar;

/// The reset of every style (before a line break, so an indent is never styled).
pub(super) const RESET: &str = "\x1b[0m";

/// Lays words out on lines of `width` columns.
pub(super) struct Wrap {
    /// Columns per line (re-read by the caller, e.g. when the terminal is resized).
    pub(super) width: usize,
    /// The column the cursor is at.
    pub(super) col: usize,
    /// What starts each continuation line (a list item's hanging indent, a quote's bar).
    indent: String,
    indent_width: usize,
    /// The column the line's text starts at (after its bullet or indent).
    line_start: usize,
    /// The style to restore after a line break (the SGR sequence of the open spans), or "".
    pub(super) style: String,
    /// Styles may be written (a terminal, `NO_COLOR` unset).
    color: bool,
    /// Characters looked at so far (the tests bound it by the text's length).
    pub(super) work: u64,
}

impl Wrap {
    pub(super) fn new(width: usize, color: bool) -> Wrap {
        Wrap {
            width: width.max(8),
            col: 0,
            indent: String::new(),
            indent_width: 0,
            line_start: 0,
            style: String::new(),
            color,
            work: 0,
        }
    }

    /// Starts a new line of output with `first` (already styled, `first_width` columns), and
    /// `indent` for its continuation lines.
    pub(super) fn start_line(
        &mut self,
        out: &mut String,
        first: &str,
        first_width: usize,
        indent: &str,
    ) {
        if self.col > 0 {
            self.break_line(out, false);
        }
        out.push_str(first);
        self.col = first_width;
        self.indent = indent.to_string();
        self.indent_width = str_width(indent);
        self.line_start = self.col;
    }

    /// Ends the line (the cursor goes to column 0, no indent written).
    pub(super) fn end_line(&mut self, out: &mut String) {
        if self.color && !self.style.is_empty() {
            out.push_str(RESET);
        }
        out.push('\n');
        self.col = 0;
        self.line_start = 0;
    }

    /// A line break inside the block: the next line starts with the indent.
    pub(super) fn break_line(&mut self, out: &mut String, indent: bool) {
        self.end_line(out);
        if indent {
            out.push_str(&self.indent);
            self.col = self.indent_width;
            self.line_start = self.col;
            if self.color {
                out.push_str(&self.style);
            }
        }
    }

    /// Places a word (`text`, styled, `width` columns), after a space unless it is the line's
    /// first or `glued` to the word before (a word cut because it was too long).
    pub(super) fn word(&mut self, out: &mut String, text: &str, width: usize, glued: bool) {
        let space = usize::from(self.col > self.line_start && !glued);
        if self.col > self.line_start && self.col + space + width > self.width {
            self.break_line(out, true);
        } else if space == 1 {
            out.push(' ');
            self.col += 1;
        }
        if self.col + width <= self.width {
            out.push_str(text);
            self.col += width;
            self.work += text.len() as u64;
            return;
        }
        // Longer than the room left on a line: cut where the line ends (acp's own style
        // sequences are copied whole, never cut).
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(seq) = sgr_prefix(rest) {
                out.push_str(seq);
                rest = &rest[seq.len()..];
                self.work += seq.len() as u64;
                continue;
            }
            let Some(c) = rest.chars().next() else { break };
            let w = c.width().unwrap_or(0);
            if self.col + w > self.width && self.col > self.line_start {
                self.break_line(out, true);
            }
            out.push(c);
            self.col += w;
            rest = &rest[c.len_utf8()..];
            self.work += c.len_utf8() as u64;
        }
    }
}

/// An SGR sequence of acp's own (`ESC [ digits/; m`) at the start of `s`.
fn sgr_prefix(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("\x1b[")?;
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    (rest.as_bytes()[end] == b'm').then(|| &s[..end + 3])
}

/// Display width of `s` (acp's own SGR sequences take none).
pub(super) fn str_width(s: &str) -> usize {
    let mut w = 0;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(seq) = sgr_prefix(rest) {
            rest = &rest[seq.len()..];
            continue;
        }
        w += c.width().unwrap_or(0);
        rest = &rest[c.len_utf8()..];
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lay(width: usize, words: &[&str]) -> String {
        let mut w = Wrap::new(width, false);
        let mut out = String::new();
        for word in words {
            w.word(&mut out, word, str_width(word), false);
        }
        out
    }

    #[test]
    fn words_wrap_whole() {
        assert_eq!(
            lay(10, &["aaaa", "bbbb", "cc", "dddddd"]),
            "aaaa bbbb\ncc dddddd"
        );
        // Exactly full.
        assert_eq!(lay(9, &["aaaa", "bbbb", "c"]), "aaaa bbbb\nc");
    }

    #[test]
    fn a_long_word_is_cut_at_the_line_end() {
        assert_eq!(lay(8, &["ab", "cdefghijklmnop"]), "ab\ncdefghij\nklmnop");
    }

    #[test]
    fn continuation_lines_take_the_indent() {
        let mut w = Wrap::new(10, false);
        let mut out = String::new();
        w.start_line(&mut out, "• ", 2, "  ");
        for word in ["one", "two", "three"] {
            w.word(&mut out, word, str_width(word), false);
        }
        assert_eq!(out, "• one two\n  three");
    }

    #[test]
    fn style_sequences_take_no_width_and_are_never_cut() {
        assert_eq!(str_width("\x1b[1mbold\x1b[0m"), 4);
        let mut w = Wrap::new(8, true);
        let mut out = String::new();
        w.word(&mut out, "\x1b[1mabcdefghij\x1b[0m", 10, false);
        assert_eq!(out, "\x1b[1mabcdefgh\nij\x1b[0m");
    }
}
