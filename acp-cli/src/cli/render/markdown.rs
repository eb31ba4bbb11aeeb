//! The agent's answers rendered for a terminal, while they stream: markdown read a line at a
//! time and a word at a time, so what arrives is shown at once (a word when the space after it
//! comes: a word split across chunks is never broken), wrapped at word boundaries to the
//! terminal's width, styled by what is open (emphasis, code, links) without parsing the message
//! again for each chunk.
//!
//! - A line's kind is known from its start (held until its first word is complete; a fence or
//!   a table row until the line is): a heading (bold, no `#`), a list item (`•`, hanging
//!   indent), a quote (`│ `), a rule, a code fence, a table row, or text (a paragraph; a line
//!   break in it is kept, as chat views keep it, under the paragraph's indent).
//! - Code blocks stream a line at a time, highlighted ([`super::highlight`]).
//! - Tables are kept until they end (the columns' widths need every row), then parsed by
//!   pulldown-cmark and drawn aligned ([`super::table`]).
//! - Inline: `**strong**`, `*emphasis*`, `~~strike~~`, `` `code` ``, `[text](url)` (text
//!   underlined, then the address), `![alt](url)`, `\` escapes.
//!
//! Everything the agent sends goes through acp-client's `escape_text` first (no escape
//! sequence of the agent's reaches the terminal: the only ones written are acp's styles).
//! Buffers are bounded ([`MAX_HEAD`], [`MAX_WORD`], [`MAX_LINK`], the table's and a code line's
//! own bounds), and each character is handled a constant number of times ([`Markdown::work`]).

use acp_client::display::escape_text;
use unicode_width::UnicodeWidthChar;

use super::highlight::{self, Highlighter};
use super::table;
use super::wrap::{str_width, Wrap, RESET};

/// Longest line start held before its kind is decided (a fence or table row longer than this
/// is shown as text).
pub(super) const MAX_HEAD: usize = 4096;
/// Longest word held (a longer one is placed in pieces, each cut at the line's end).
pub(super) const MAX_WORD: usize = 1024;
/// Longest link source held (`[text](url)`); a longer one is shown as written.
pub(super) const MAX_LINK: usize = 2048;

/// The most the renderer holds of a message at once (each buffer's bound, with room for the
/// last character added): what a hostile agent can make it keep.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) const HELD_BUDGET: usize =
    MAX_HEAD + MAX_WORD + MAX_LINK + highlight::MAX_LINE + table::MAX_BYTES + 5 * 4;

/// What the current line is, once its start is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Its start is held until its kind is known.
    Head,
    /// Text: words stream.
    Text,
    /// A line of a code block, held until it ends (highlighting needs it whole), or once
    /// longer than a highlighted line, written as it comes (`true`).
    Code(bool),
}

/// The block the lines before made (what the next line continues or follows).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    Nothing,
    Paragraph,
    Heading,
    Other,
}

/// A link being read: where in `[text](url)` it is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LinkAt {
    Text,
    Close,
    Url,
}

/// The streaming renderer of one message at a time.
pub(super) struct Markdown {
    wrap: Wrap,
    color: bool,
    line: Line,
    head: String,
    word: String,
    /// The next word joins the one before without a space (a word cut at [`MAX_WORD`]).
    glue: bool,
    prev: Prev,
    /// A blank line came after the block before (one is shown before the next).
    blank: bool,
    /// The open code block: its fence (character, length) and highlighter.
    fence: Option<(char, usize, Option<Highlighter>)>,
    code: String,
    /// The open table's source lines, or `None`; `Some` past its bounds: shown as written.
    table: Option<String>,
    table_rows: usize,
    /// The style of the line (a heading's), before the inline ones.
    base: &'static str,
    bold: bool,
    italic: bool,
    strike: bool,
    underline: bool,
    /// The open code span's backtick count (0: none).
    code_span: usize,
    /// A link's source being read, where in it, whether it is an image, and whether it
    /// started inside a word.
    link: Option<(String, LinkAt, bool, bool)>,
    /// Characters handled (the tests bound it by the text's length).
    work: u64,
}

impl Markdown {
    pub(super) fn new(width: usize, color: bool) -> Markdown {
        Markdown {
            wrap: Wrap::new(width, color),
            color,
            line: Line::Head,
            head: String::new(),
            word: String::new(),
            glue: false,
            prev: Prev::Nothing,
            blank: false,
            fence: None,
            code: String::new(),
            table: None,
            table_rows: 0,
            base: "",
            bold: false,
            italic: false,
            strike: false,
            underline: false,
            code_span: 0,
            link: None,
            work: 0,
        }
    }

    /// Work done so far: characters handled, by every step.
    pub(super) fn work(&self) -> u64 {
        self.work + self.wrap.work
    }

    /// Bytes of the message held now (what is not shown yet): at most [`HELD_BUDGET`].
    #[cfg(test)]
    fn held(&self) -> usize {
        self.head.len()
            + self.word.len()
            + self.code.len()
            + self.table.as_ref().map_or(0, String::len)
            + self.link.as_ref().map_or(0, |l| l.0.len())
    }

    /// The terminal's width, for what is placed from now on.
    pub(super) fn set_width(&mut self, width: usize) {
        self.wrap.width = width.max(8);
    }

    /// The cursor was moved to a new line by something else (a status line on stderr).
    pub(super) fn line_broken(&mut self) {
        self.wrap.col = 0;
    }

    /// Renders the next chunk of the message (the agent's text, escaped here) into `out`.
    pub(super) fn push(&mut self, text: &str, out: &mut String) {
        let text = escape_text(text);
        for c in text.chars() {
            self.work += 1;
            self.char(c, out);
        }
    }

    /// The message ended: what is held is shown, the last line ended, every style closed.
    pub(super) fn finish(&mut self, out: &mut String) {
        match self.line {
            Line::Head if !self.head.is_empty() => {
                let head = std::mem::take(&mut self.head);
                self.classify(&head, true, out);
                self.end_of_line(out);
            }
            Line::Text => {
                self.flush_word(out);
                self.end_of_line(out);
            }
            Line::Code(_) if !self.code.is_empty() => self.code_line(out),
            _ => {}
        }
        self.flush_link(out);
        self.end_table(out);
        self.close_styles(out);
        if self.wrap.col > 0 {
            self.wrap.end_line(out);
        }
        let (width, work) = (self.wrap.width, self.work());
        *self = Markdown::new(width, self.color);
        self.work = work;
    }

    fn char(&mut self, c: char, out: &mut String) {
        match self.line {
            Line::Head => {
                if c == '\n' {
                    let head = std::mem::take(&mut self.head);
                    self.classify(&head, true, out);
                    self.end_of_line(out);
                    return;
                }
                self.head.push(c);
                if head_decided(&self.head) || self.head.len() > MAX_HEAD {
                    let head = std::mem::take(&mut self.head);
                    self.classify(&head, false, out);
                }
            }
            Line::Text => match c {
                '\n' => {
                    self.flush_word(out);
                    self.end_of_line(out);
                }
                ' ' | '\t' => self.flush_word(out),
                _ => {
                    self.word.push(c);
                    if self.word.len() >= MAX_WORD {
                        self.flush_word(out);
                        self.glue = true;
                    }
                }
            },
            Line::Code(overflow) => {
                if c == '\n' {
                    if overflow {
                        out.push('\n');
                        self.wrap.col = 0;
                        self.line = Line::Code(false);
                    } else {
                        self.code_line(out);
                    }
                } else if overflow {
                    out.push(c);
                } else {
                    self.code.push(c);
                    if self.code.len() > highlight::MAX_LINE {
                        // Too long to highlight: written as it comes, the block plain after.
                        out.push_str("  ");
                        out.push_str(&self.code);
                        self.work += self.code.len() as u64;
                        self.code.clear();
                        if let Some((_, _, hl)) = &mut self.fence {
                            *hl = None;
                        }
                        self.line = Line::Code(true);
                    }
                }
            }
        }
    }

    /// The line's start (`complete`: the whole line) says what it is; the rest streams.
    fn classify(&mut self, head: &str, complete: bool, out: &mut String) {
        self.work += head.len() as u64;
        let trimmed = head.trim_start_matches([' ', '\t']);
        let indent = head.len() - trimmed.len();
        if complete && trimmed.trim().is_empty() {
            self.end_table(out);
            if self.prev != Prev::Nothing {
                self.blank = true;
            }
            self.line = Line::Head;
            return;
        }
        let table_row = complete && trimmed.starts_with('|');
        if !table_row {
            self.end_table(out);
        }
        if table_row {
            self.table_row(head, out);
            return;
        }
        if let (true, Some((ch, len))) = (complete, fence_of(trimmed)) {
            let lang = trimmed[len..].split_whitespace().next().unwrap_or("");
            let hl = if self.color {
                Highlighter::new(lang.trim_start_matches('{').trim_start_matches('.'))
            } else {
                None
            };
            self.open_block(Prev::Other, out);
            self.fence = Some((ch, len, hl));
            self.line = Line::Code(false);
            return;
        }
        if complete && is_rule(trimmed) {
            self.open_block(Prev::Other, out);
            let rule = "─".repeat(self.wrap.width.min(60));
            out.push_str(&self.style_str("2", &rule));
            self.wrap.end_line(out);
            self.line = Line::Head;
            return;
        }
        let (marker, rest) = trimmed.split_once([' ', '\t']).unwrap_or((trimmed, ""));
        let hashes = marker.len();
        if (1..=6).contains(&hashes) && marker.bytes().all(|b| b == b'#') {
            self.open_block(Prev::Heading, out);
            self.base = match hashes {
                1 => "1;4",
                2 => "1",
                _ => "1;3",
            };
            self.wrap.start_line(out, "", 0, "");
            self.restyle(out);
            return self.text(rest, out);
        }
        let bullet = matches!(marker, "-" | "*" | "+");
        let number = marker.len() > 1
            && marker.len() <= 10
            && marker[..marker.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_digit())
            && marker.ends_with(['.', ')']);
        if (bullet || number) && (!rest.is_empty() || !complete) {
            let level = indent / 2;
            self.open_block(Prev::Paragraph, out);
            let pad = " ".repeat(indent);
            let first = if bullet {
                let dot = ["•", "◦", "▪"][level % 3];
                format!("{pad}{} ", self.style_str("36", dot))
            } else {
                format!("{pad}{} ", self.style_str("36", marker))
            };
            let width = str_width(&first);
            self.wrap.start_line(out, &first, width, &" ".repeat(width));
            return self.text(rest, out);
        }
        if let Some(quoted) = trimmed.strip_prefix('>') {
            self.open_block(Prev::Paragraph, out);
            let bar = format!("{} ", self.style_str("2", "│"));
            self.wrap.start_line(out, &bar, 2, &bar);
            return self.text(quoted.strip_prefix(' ').unwrap_or(quoted), out);
        }
        // Text: the paragraph before goes on, on a line of its own (a line break the agent
        // wrote is kept, as chat views keep it; markdown would join the lines), under the
        // same indent; or a new paragraph starts.
        if self.prev != Prev::Paragraph || self.blank {
            self.open_block(Prev::Paragraph, out);
            self.wrap.start_line(out, "", 0, "");
        } else if self.wrap.col > 0 {
            self.flush_link(out);
            self.wrap.break_line(out, true);
        }
        self.text(trimmed, out)
    }

    /// The rest of a line, once its kind is known: text, streamed word by word.
    fn text(&mut self, rest: &str, out: &mut String) {
        self.line = Line::Text;
        for c in rest.chars() {
            self.char(c, out);
        }
    }

    /// A new block starts: the line before is ended, a blank line shown if one came.
    fn open_block(&mut self, kind: Prev, out: &mut String) {
        self.flush_link(out);
        self.close_styles(out);
        if self.wrap.col > 0 {
            self.wrap.end_line(out);
        }
        if self.blank && self.prev != Prev::Nothing {
            out.push('\n');
        }
        self.blank = false;
        self.prev = kind;
    }

    /// A source line ended.
    fn end_of_line(&mut self, out: &mut String) {
        if self.line == Line::Text {
            self.flush_word(out);
            self.flush_link(out);
        }
        if self.prev == Prev::Heading {
            self.close_styles(out);
            if self.wrap.col > 0 {
                self.wrap.end_line(out);
            }
            self.prev = Prev::Other;
        }
        if self.fence.is_none() {
            self.line = Line::Head;
        }
    }

    /// Every style closed (at a block's end: an unclosed `**` ends with its paragraph).
    fn close_styles(&mut self, out: &mut String) {
        let styled = !self.wrap.style.is_empty();
        self.base = "";
        self.bold = false;
        self.italic = false;
        self.strike = false;
        self.underline = false;
        self.code_span = 0;
        self.wrap.style.clear();
        if styled && self.color {
            out.push_str(RESET);
        }
    }

    /// The SGR sequence of what is open now ("" for none).
    fn sgr(&self) -> String {
        let mut codes: Vec<&str> = Vec::new();
        if !self.base.is_empty() {
            codes.push(self.base);
        }
        if self.code_span > 0 {
            codes.push("36");
        }
        if self.bold {
            codes.push("1");
        }
        if self.italic {
            codes.push("3");
        }
        if self.strike {
            codes.push("9");
        }
        if self.underline {
            codes.push("4");
        }
        if codes.is_empty() {
            String::new()
        } else {
            format!("\x1b[{}m", codes.join(";"))
        }
    }

    /// Writes the change of style (a reset, then what is open) into `out`.
    fn restyle(&mut self, out: &mut String) {
        let now = self.sgr();
        if self.color && now != self.wrap.style {
            out.push_str(RESET);
            out.push_str(&now);
        }
        self.wrap.style = now;
    }

    fn style_str(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    /// The word held is complete: styled and placed.
    fn flush_word(&mut self, out: &mut String) {
        if self.word.is_empty() {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let glued = std::mem::take(&mut self.glue);
        if self.link.is_some() {
            return self.link_more(&word, out);
        }
        self.word(&word, glued, out);
    }

    /// Styles `word` (no whitespace in it) and places it.
    fn word(&mut self, word: &str, glued: bool, out: &mut String) {
        let chars: Vec<char> = word.chars().collect();
        self.work += chars.len() as u64;
        let mut text = String::new();
        // A style changed since the last word (a link's underline) takes effect here, after
        // the space before the word.
        self.restyle(&mut text);
        let mut width = 0;
        let literal = |text: &mut String, width: &mut usize, c: char| {
            text.push(c);
            *width += c.width().unwrap_or(0);
        };
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let run = chars[i..].iter().take_while(|&&d| d == c).count();
            if self.code_span > 0 {
                if c == '`' && run == self.code_span {
                    self.code_span = 0;
                    self.restyle(&mut text);
                } else {
                    for _ in 0..run {
                        literal(&mut text, &mut width, c);
                    }
                }
                i += run;
                continue;
            }
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + run).copied();
            match c {
                '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => {
                    literal(&mut text, &mut width, chars[i + 1]);
                    i += 2;
                    continue;
                }
                '`' => {
                    self.code_span = run;
                    self.restyle(&mut text);
                }
                '[' | '!' if c == '[' || next == Some('[') => {
                    // A link (or an image) from here: held until it is known to be one.
                    let start = if c == '!' { i + 1 } else { i };
                    let image = c == '!';
                    if i > 0 {
                        // What came before it in the word is placed now.
                        self.place(&text, width, glued, out);
                    }
                    self.link = Some((String::from("["), LinkAt::Text, image, i > 0 || glued));
                    let rest: String = chars[start + 1..].iter().collect();
                    return self.link_scan(&rest, out);
                }
                '*' | '_' | '~' if run <= 3 => {
                    let opens = next.is_some_and(|n| !n.is_whitespace());
                    let closes = prev.is_some();
                    let intraword = c == '_'
                        && prev.is_some_and(char::is_alphanumeric)
                        && next.is_some_and(char::is_alphanumeric);
                    let toggled = !intraword && self.toggle(c, run, opens, closes);
                    if toggled {
                        self.restyle(&mut text);
                    } else {
                        for _ in 0..run {
                            literal(&mut text, &mut width, c);
                        }
                    }
                }
                _ => {
                    for _ in 0..run {
                        literal(&mut text, &mut width, c);
                    }
                }
            }
            i += run;
        }
        self.place(&text, width, glued, out);
    }

    /// Opens or closes the emphasis a run of `c` marks; false when it is literal text.
    fn toggle(&mut self, c: char, run: usize, opens: bool, closes: bool) -> bool {
        let can = |open: bool| (open && closes) || (!open && opens);
        match (c, run) {
            ('~', 2) if can(self.strike) => self.strike = !self.strike,
            ('~', _) => return false,
            (_, 1) if can(self.italic) => self.italic = !self.italic,
            (_, 2) if can(self.bold) => self.bold = !self.bold,
            (_, 3) if can(self.bold) && can(self.italic) => {
                self.bold = !self.bold;
                self.italic = !self.italic;
            }
            _ => return false,
        }
        true
    }

    /// Places styled text of `width` columns.
    fn place(&mut self, text: &str, width: usize, glued: bool, out: &mut String) {
        if width == 0 {
            // Only style changes: no space for them.
            out.push_str(text);
            return;
        }
        self.wrap.word(out, text, width, glued);
    }

    /// More of a link's source (a word after a space).
    fn link_more(&mut self, word: &str, out: &mut String) {
        if let Some((source, at, _, _)) = &mut self.link {
            if *at != LinkAt::Text {
                // `](` then a space, or `]` then a space: not a link.
                return self.link_failed(Some(word), out);
            }
            source.push(' ');
        }
        self.link_scan(word, out);
    }

    /// Reads `more` of a link's source: the link is placed once it is whole, or what was
    /// held placed as written once it cannot be one.
    fn link_scan(&mut self, more: &str, out: &mut String) {
        let mut rest_at = None;
        let mut failed = false;
        let mut failed_at = more.len();
        if let Some((source, at, _, _)) = &mut self.link {
            for (i, c) in more.char_indices() {
                self.work += 1;
                source.push(c);
                match (*at, c) {
                    (LinkAt::Text, ']') => *at = LinkAt::Close,
                    (LinkAt::Close, '(') => *at = LinkAt::Url,
                    (LinkAt::Close, _) => {
                        failed = true;
                        failed_at = i + c.len_utf8();
                        break;
                    }
                    (LinkAt::Url, ')') => {
                        rest_at = Some(i + 1);
                        break;
                    }
                    _ => {}
                }
            }
            if source.len() > MAX_LINK || (*at == LinkAt::Close && rest_at.is_none()) {
                // Too long, or `]` ended a word (a space after it).
                failed = failed || source.len() > MAX_LINK || more.ends_with(']');
            }
        }
        if failed {
            // Shown as written, then the rest of the word read as text again.
            self.link_failed(None, out);
            if failed_at < more.len() {
                self.word(&more[failed_at..], true, out);
            }
            return;
        }
        let Some(at) = rest_at else { return };
        let Some((source, _, image, glued)) = self.link.take() else {
            return;
        };
        let (label, url) = source[1..source.len() - 1]
            .split_once("](")
            .unwrap_or(("", ""));
        if image {
            let alt = format!("[image: {label}]");
            let alt = self.style_str("2", &alt);
            self.place(&alt, str_width(&alt), glued, out);
        } else {
            self.underline = true;
            for (n, w) in label.split(' ').filter(|w| !w.is_empty()).enumerate() {
                self.word(w, glued && n == 0, out);
            }
            self.underline = false;
            // Closed now (the space after the link is not underlined); what stays open is
            // written again before the next word.
            if self.color && !self.wrap.style.is_empty() {
                out.push_str(RESET);
            }
            self.wrap.style.clear();
            if !url.is_empty() && url != label {
                let shown = self.style_str("2", &format!("({url})"));
                self.place(&shown, str_width(&shown), false, out);
            }
        }
        let rest = &more[at..];
        if !rest.is_empty() {
            self.word(rest, true, out);
        }
    }

    /// The source held is not a link: placed as written (no styles read in it), then `word`.
    fn link_failed(&mut self, word: Option<&str>, out: &mut String) {
        let Some((source, _, image, glued)) = self.link.take() else {
            return;
        };
        let mut first = true;
        if image {
            self.place("!", 1, glued, out);
        }
        for w in source.split(' ').chain(word) {
            if !w.is_empty() {
                self.work += w.len() as u64;
                let glue = first && (glued || image);
                self.place(w, str_width(w), glue, out);
                first = false;
            }
        }
    }

    /// A link left open at the end of a line or block: shown as written.
    fn flush_link(&mut self, out: &mut String) {
        if self.link.is_some() {
            self.link_failed(None, out);
        }
    }

    /// A code block's line is complete: the closing fence, or a line shown (highlighted).
    fn code_line(&mut self, out: &mut String) {
        let line = std::mem::take(&mut self.code);
        self.work += line.len() as u64;
        let Some((ch, len, hl)) = &mut self.fence else {
            return;
        };
        let t = line.trim();
        if t.len() >= *len && t.chars().all(|c| c == *ch) {
            self.fence = None;
            self.prev = Prev::Other;
            self.line = Line::Head;
            return;
        }
        out.push_str("  ");
        match hl {
            Some(h) => h.line(&line, out),
            None => out.push_str(&line),
        }
        out.push('\n');
        self.wrap.col = 0;
    }

    /// A table row (a whole line): kept until the table ends.
    fn table_row(&mut self, line: &str, out: &mut String) {
        if self.table.is_none() {
            self.open_block(Prev::Other, out);
            self.table = Some(String::new());
            self.table_rows = 0;
        }
        self.line = Line::Head;
        let over = self.table_rows >= table::MAX_ROWS;
        let Some(source) = &mut self.table else {
            return;
        };
        if over || source.len() + line.len() > table::MAX_BYTES {
            // Past the bounds: what was kept, and each row from now on, shown as written.
            if !source.is_empty() {
                out.push_str(source);
                source.clear();
            }
            self.table_rows = table::MAX_ROWS;
            out.push_str(line);
            out.push('\n');
            return;
        }
        source.push_str(line);
        source.push('\n');
        self.table_rows += 1;
    }

    /// The open table ended: drawn.
    fn end_table(&mut self, out: &mut String) {
        let Some(source) = self.table.take() else {
            return;
        };
        if source.is_empty() {
            return;
        }
        self.work += source.len() as u64;
        let parsed = table::parse(&source, self.color);
        if let Some(drawn) = parsed
            .as_ref()
            .and_then(|t| t.draw(self.wrap.width, self.color))
        {
            self.work += drawn.len() as u64;
            out.push_str(&drawn);
            return;
        }
        // Too wide (a row per line, its cells separated), or not a table (as text).
        let rows: Vec<String> = match parsed {
            Some(t) => t.rows.iter().map(|r| r.join(" │ ")).collect(),
            None => source.lines().map(str::to_string).collect(),
        };
        for row in rows {
            self.wrap.start_line(out, "", 0, "  ");
            for w in row.split(' ').filter(|w| !w.is_empty()) {
                self.place(w, str_width(w), false, out);
            }
        }
        self.wrap.end_line(out);
    }
}

/// Whether a line's start says what the line is: its first word is complete (a space after
/// it), unless it may be a fence or a table row (the whole line is needed).
fn head_decided(head: &str) -> bool {
    let t = head.trim_start_matches([' ', '\t']);
    if t.is_empty() || t.starts_with("``") || t.starts_with("~~") || t.starts_with('|') {
        return false;
    }
    // A rule (`- - -`, `* * *`) needs the whole line too.
    if t.starts_with(['-', '*', '_']) && t.chars().all(|c| matches!(c, '-' | '*' | '_' | ' ')) {
        return false;
    }
    t.ends_with([' ', '\t'])
}

/// A code fence's character and length (``` or ~~~, three or more).
fn fence_of(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    (len >= 3 && !(ch == '`' && line[len..].contains('`'))).then_some((ch, len))
}

/// A thematic break: three or more of one of `-`, `*`, `_` (spaces between allowed).
fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && t.chars()
            .next()
            .is_some_and(|f| matches!(f, '-' | '*' | '_') && t.chars().all(|c| c == f))
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
