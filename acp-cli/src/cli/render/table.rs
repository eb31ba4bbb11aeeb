//! Markdown tables for a terminal: the rows of a table (kept until it ends: its columns'
//! widths need every row) parsed by pulldown-cmark, drawn with aligned columns and a rule under
//! the header. A table wider than the terminal is drawn a row per line, its cells separated by
//! ` │ ` (wrapped as text is), rather than as columns the terminal would break.
//!
//! The rows kept are bounded ([`MAX_ROWS`], [`MAX_BYTES`]): past that the table is drawn as it
//! was written, line by line.

use acp_client::display::escape_text;
use pulldown_cmark::{Alignment, Event, Options, Parser, Tag, TagEnd};

use super::wrap::str_width;

/// Rows kept for one table.
pub(super) const MAX_ROWS: usize = 256;
/// Bytes kept for one table.
pub(super) const MAX_BYTES: usize = 64 << 10;

/// A parsed table: its cells (styled text) and each column's alignment.
pub(super) struct Table {
    pub(super) rows: Vec<Vec<String>>,
    align: Vec<Alignment>,
}

/// Parses `source` (the table's lines, escaped) as a markdown table; `None` when it is not one
/// (no delimiter row).
pub(super) fn parse(source: &str, color: bool) -> Option<Table> {
    let mut rows = Vec::new();
    let mut align = None;
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    let mut styles: Vec<&'static str> = Vec::new();
    let sgr = |styles: &[&str]| {
        if styles.is_empty() {
            super::wrap::RESET.to_string()
        } else {
            format!("{}\x1b[{}m", super::wrap::RESET, styles.join(";"))
        }
    };
    for event in Parser::new_ext(
        source,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
    ) {
        match event {
            Event::Start(Tag::Table(a)) => align = Some(a),
            Event::End(TagEnd::TableHead) | Event::End(TagEnd::TableRow) => {
                rows.push(std::mem::take(&mut row))
            }
            Event::End(TagEnd::TableCell) => row.push(std::mem::take(&mut cell)),
            Event::Start(tag @ (Tag::Strong | Tag::Emphasis | Tag::Strikethrough)) if color => {
                styles.push(match tag {
                    Tag::Strong => "1",
                    Tag::Emphasis => "3",
                    _ => "9",
                });
                cell.push_str(&sgr(&styles));
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) if color => {
                styles.pop();
                cell.push_str(&sgr(&styles));
            }
            // The parser decodes entities (`&#27;` is an ESC): what it gives is escaped again.
            Event::Code(t) if color => {
                cell.push_str("\x1b[36m");
                cell.push_str(&escape_text(&t));
                cell.push_str(&sgr(&styles));
            }
            Event::Text(t) | Event::Code(t) => cell.push_str(&escape_text(&t)),
            Event::SoftBreak | Event::HardBreak => cell.push(' '),
            Event::Html(t) | Event::InlineHtml(t) => cell.push_str(&escape_text(&t)),
            _ => {}
        }
    }
    let align = align?;
    if color {
        for cell in rows.iter_mut().flatten() {
            if cell.contains('\x1b') {
                cell.push_str(super::wrap::RESET);
            }
        }
    }
    Some(Table { rows, align })
}

impl Table {
    /// Each column's width.
    fn widths(&self) -> Vec<usize> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| str_width(s))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The table drawn as aligned columns, or `None` when it is wider than `width`.
    pub(super) fn draw(&self, width: usize, color: bool) -> Option<String> {
        let widths = self.widths();
        let total = widths.iter().sum::<usize>() + 3 * widths.len().saturating_sub(1);
        if total > width || widths.is_empty() {
            return None;
        }
        let mut out = String::new();
        let bar = if color { "\x1b[2m│\x1b[0m" } else { "│" };
        for (i, row) in self.rows.iter().enumerate() {
            for (c, w) in widths.iter().enumerate() {
                let cell = row.get(c).map_or("", String::as_str);
                let pad = w - str_width(cell);
                let (left, right) = match self.align.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                if c > 0 {
                    out.push(' ');
                    out.push_str(bar);
                    out.push(' ');
                }
                let bold = i == 0 && color;
                out.push_str(&" ".repeat(left));
                if bold {
                    out.push_str("\x1b[1m");
                }
                out.push_str(cell);
                if bold {
                    out.push_str(super::wrap::RESET);
                }
                if c + 1 < widths.len() {
                    out.push_str(&" ".repeat(right));
                }
            }
            out.push('\n');
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let rule = rule.join("─┼─");
                if color {
                    out.push_str(&format!("\x1b[2m{rule}\x1b[0m\n"));
                } else {
                    out.push_str(&rule);
                    out.push('\n');
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_as_the_delimiter_row_says() {
        let t = parse(
            "| name | n | note |\n|:-----|--:|:----:|\n| a | 1 | x |\n| bbb | 22 | yyy |\n",
            false,
        )
        .unwrap();
        assert_eq!(
            t.draw(80, false).unwrap(),
            "name │  n │ note\n\
             ─────┼────┼─────\n\
             a    │  1 │  x\n\
             bbb  │ 22 │ yyy\n"
        );
    }

    #[test]
    fn inline_styles_in_cells_take_no_width() {
        let t = parse("| a | b |\n|---|---|\n| **x** | `y` |\n", true).unwrap();
        let drawn = t.draw(80, true).unwrap();
        assert!(drawn.contains("\x1b[1mx"), "{drawn:?}");
        assert!(drawn.contains("\x1b[36my"), "{drawn:?}");
        assert_eq!(t.widths(), vec![1, 1]);
    }

    #[test]
    fn entities_decoded_by_the_parser_are_escaped() {
        let t = parse("| &#27;[2J | &#x9b;31m `&#7;` |\n|---|---|\n", true).unwrap();
        let drawn = t.draw(80, true).unwrap();
        assert!(drawn.contains("\u{241b}[2J"), "{drawn:?}");
        let bare: String = drawn
            .replace("\x1b[", "")
            .chars()
            .filter(|c| matches!(c, '\x1b' | '\u{9b}' | '\x07'))
            .collect();
        assert!(bare.is_empty(), "{drawn:?}");
    }

    #[test]
    fn not_a_table_or_too_wide() {
        assert!(parse("| a | b |\n| c | d |\n", false).is_none());
        let t = parse("| aaaa | bbbb |\n|---|---|\n", false).unwrap();
        assert!(t.draw(8, false).is_none());
        assert!(t.draw(11, false).is_some());
    }
}
