//! Syntax highlighting of code blocks, a line at a time: syntect's parser (its default
//! syntaxes, loaded on the first code block that names a language it knows, so starting `acp`
//! costs nothing) and the scopes it finds mapped to the terminal's own colours (no theme: the
//! user's palette decides what `green` looks like). Each line is parsed once, in order, with the
//! state the line before left: a code block costs what its text costs.
//!
//! Lines longer than [`MAX_LINE`] are not highlighted (shown plain): a hostile agent's single
//! huge line cannot make the parser's work grow past a line's bound.

use std::sync::OnceLock;

use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxSet};

/// Longest line highlighted, in bytes.
pub(super) const MAX_LINE: usize = 4096;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Colours by scope, the first whose scope is a prefix of the innermost matching one.
fn palette() -> &'static [(Scope, &'static str)] {
    static PALETTE: OnceLock<Vec<(Scope, &'static str)>> = OnceLock::new();
    PALETTE.get_or_init(|| {
        [
            ("comment", "2;3"),
            ("string", "32"),
            ("constant.character.escape", "36"),
            ("constant", "35"),
            ("keyword", "34"),
            ("storage", "34"),
            ("entity.name.function", "33"),
            ("support.function", "33"),
            ("entity.name", "36"),
            ("support.type", "36"),
            ("support.class", "36"),
            ("variable.parameter", "3"),
            ("markup.heading", "1"),
            ("markup.inserted", "32"),
            ("markup.deleted", "31"),
        ]
        .iter()
        .filter_map(|(s, code)| Scope::new(s).ok().map(|s| (s, *code)))
        .collect()
    })
}

/// A code block being highlighted: the parser's state between its lines.
pub(super) struct Highlighter {
    parse: ParseState,
    stack: ScopeStack,
    /// A line was too long or the parser failed: the rest of the block is plain.
    failed: bool,
}

impl Highlighter {
    /// A highlighter for code in `lang` (a fence's info string: `rust`, `py`, `sh`…), if
    /// syntect knows it.
    pub(super) fn new(lang: &str) -> Option<Highlighter> {
        if lang.is_empty() {
            return None;
        }
        let set = syntaxes();
        let syntax = set.find_syntax_by_token(lang)?;
        Some(Highlighter {
            parse: ParseState::new(syntax),
            stack: ScopeStack::new(),
            failed: false,
        })
    }

    /// `line` (escaped text, without its `\n`) styled with SGR sequences; appended to `out`.
    pub(super) fn line(&mut self, line: &str, out: &mut String) {
        if self.failed || line.len() > MAX_LINE {
            // The parser's state no longer matches the text: plain from here on.
            self.failed = true;
            out.push_str(line);
            return;
        }
        let with_newline = format!("{line}\n");
        let ops = match self.parse.parse_line(&with_newline, syntaxes()) {
            Ok(ops) => ops,
            Err(_) => {
                self.failed = true;
                out.push_str(line);
                return;
            }
        };
        let mut at = 0;
        for (pos, op) in ops {
            let pos = pos.min(line.len());
            if pos > at {
                self.segment(&line[at..pos], out);
                at = pos;
            }
            if self.stack.apply(&op).is_err() {
                self.failed = true;
            }
        }
        if at < line.len() {
            self.segment(&line[at..], out);
        }
    }

    fn segment(&self, text: &str, out: &mut String) {
        match self.colour() {
            Some(code) => {
                out.push_str("\x1b[");
                out.push_str(code);
                out.push('m');
                out.push_str(text);
                out.push_str(super::wrap::RESET);
            }
            None => out.push_str(text),
        }
    }

    /// The colour of the innermost scope the palette names.
    fn colour(&self) -> Option<&'static str> {
        let palette = palette();
        self.stack.as_slice().iter().rev().find_map(|scope| {
            palette
                .iter()
                .find(|(p, _)| p.is_prefix_of(*scope))
                .map(|(_, code)| *code)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_by_scope() {
        let mut h = Highlighter::new("rust").expect("rust is a default syntax");
        let mut out = String::new();
        h.line("fn main() { let s = \"hi\"; } // done", &mut out);
        assert!(out.contains("\x1b[34mfn\x1b[0m"), "{out:?}");
        assert!(out.contains("\x1b[32m"), "a string: {out:?}");
        assert!(out.contains("\x1b[2;3m"), "a comment: {out:?}");
        // The text is all there, in order.
        let plain = out
            .split('\x1b')
            .map(|p| p.split_once('m').map_or(p, |(_, t)| t))
            .collect::<String>();
        assert_eq!(plain, "fn main() { let s = \"hi\"; } // done");
    }

    #[test]
    fn unknown_languages_and_huge_lines_are_plain() {
        assert!(Highlighter::new("no-such-language").is_none());
        assert!(Highlighter::new("").is_none());
        let mut h = Highlighter::new("py").unwrap();
        let long = "x".repeat(MAX_LINE + 1);
        let mut out = String::new();
        h.line(&long, &mut out);
        assert_eq!(out, long);
    }
}
