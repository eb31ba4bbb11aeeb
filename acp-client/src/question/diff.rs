//! The unified diff of a question: `@@` hunks with [`CONTEXT_LINES`] of context, computed in
//! bounded work and memory whatever the texts.
//!
//! How, and what each step costs (n: bytes of both texts):
//! 1. A NUL byte in either text: binary-looking, no lines shown (O(n)).
//! 2. The common first and last lines are skipped without being stored (O(n)).
//! 3. The changed middle is aligned line by line (Myers' shortest edit script over the lines'
//!    hashes, every pair it calls equal then compared by text) when each side of it has at
//!    most [`MAX_ALIGN_LINES`] lines, the script needs at most [`MAX_EDITS`] inserted or
//!    removed lines and the search at most [`MAX_WORK`] steps; memory O(lines + [`MAX_EDITS`]²),
//!    under 5 MiB. Otherwise the middle is shown whole (its old lines removed, then its
//!    new lines added): exact, not minimal, and said so ([`Diff::whole`]).
//! 4. Lines are written by cursors moving forward through the texts (O(n)), each escaped onto
//!    one line and clipped to [`MAX_LINE_CHARS`], and only while the question's budget of
//!    [`MAX_LINES`] lines lasts; the rest is counted, not written.

use serde::Serialize;

use crate::display::escape_line_clipped;

/// Lines of context around each change.
pub const CONTEXT_LINES: usize = 3;
/// Lines of diff (hunk headers included) a question shows before "… N more lines": the rest
/// is a face's "whole diff" (`d` in `acp chat`, Review in the extension).
pub const SHOWN_LINES: usize = 40;
/// Lines of diff a question keeps at most, its diffs together (its "whole diff"): past them,
/// lines are counted ([`Diff::hidden`]) but not kept.
pub const MAX_LINES: usize = 2000;
/// Characters of one diff line shown (escapes included), then `… (+N characters)`.
pub const MAX_LINE_CHARS: usize = 200;
/// Lines on either side of the changed middle that are still aligned line by line.
pub const MAX_ALIGN_LINES: usize = 10_000;
/// Inserted plus removed lines the alignment looks for at most (its memory grows with the
/// square of this: 2 MiB at 1000, 4 MiB while it grows).
pub const MAX_EDITS: usize = 1000;
/// Steps (diagonals visited and lines compared) the alignment takes at most.
pub const MAX_WORK: usize = 10_000_000;

/// A change to one file, as a question shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    /// The file, escaped onto one line.
    pub path: String,
    /// One line: `+3 -1`, `new file, +12 -0`, `no changes`, `binary content, 12 bytes`…
    pub summary: String,
    /// The file does not exist yet.
    pub new_file: bool,
    /// A NUL byte in either text: no lines are shown.
    pub binary: bool,
    /// The changed region was too large to align line by line: it is shown removed, then
    /// added (still exactly the change, not the smallest diff).
    pub whole: bool,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The unified diff: `@@ -1,3 +1,4 @@` headers, then lines starting with ` ` (context),
    /// `-`, `+`, or `\` (`\ No newline at end of file`); each escaped onto one line
    /// ([`escape_line_clipped`]: no control or bidi character, at most [`MAX_LINE_CHARS`]).
    /// At most the question's [`MAX_LINES`].
    pub lines: Vec<String>,
    /// How many of `lines` the question shows (the first ones).
    pub shown: usize,
    /// Lines of the diff the question does not show: the rest of `lines` and those past
    /// [`MAX_LINES`] (counted, not kept). A face says "… N more lines".
    pub hidden: usize,
}

/// What the file holds before the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Before<'a> {
    /// It does not exist.
    Missing,
    /// This text.
    Text(&'a str),
    /// It exists, but its content could not be read as text (binary, too large).
    Unreadable,
}

/// Lines a question may still keep and show, shared by its diffs.
pub(crate) struct Budget {
    pub(crate) keep: usize,
    pub(crate) show: usize,
}

impl Budget {
    pub(crate) fn question() -> Budget {
        Budget {
            keep: MAX_LINES,
            show: SHOWN_LINES,
        }
    }

    /// Counts only (a summary).
    pub(crate) fn none() -> Budget {
        Budget { keep: 0, show: 0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Equal,
    Delete,
    Insert,
    /// A hunk starts (in [`hunks`]' list): `old` and `new` are its starts, `len` unused.
    Hunk,
}

/// `len` lines from line `old` of the old text and `new` of the new one (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub(super) op: Op,
    pub(super) old: usize,
    pub(super) new: usize,
    pub(super) len: usize,
}

/// The diff of `old` to `new` for the file `path` (not escaped yet), taking its lines from
/// `budget`.
pub(crate) fn diff(path: &str, old: Before<'_>, new: &str, budget: &mut Budget) -> Diff {
    let path = escape_line_clipped(path, super::MAX_FIELD_CHARS);
    let new_file = matches!(old, Before::Missing);
    let mut d = Diff {
        path,
        summary: String::new(),
        new_file,
        binary: false,
        whole: false,
        added: 0,
        removed: 0,
        lines: Vec::new(),
        shown: 0,
        hidden: 0,
    };
    let old_text = match old {
        Before::Text(t) => t,
        _ => "",
    };
    let prefix = match old {
        Before::Missing => "new file, ",
        Before::Unreadable => "replaces content that cannot be shown (binary or too large), ",
        Before::Text(_) => "",
    };
    if new.contains('\0') || old_text.contains('\0') {
        d.binary = true;
        d.summary = format!("{prefix}binary content, {} bytes", new.len());
        return d;
    }
    let (runs, whole) = match old {
        Before::Text(t) => align(t, new),
        _ => {
            let n = count_lines(new);
            (
                vec![Run {
                    op: Op::Insert,
                    old: 0,
                    new: 0,
                    len: n,
                }],
                false,
            )
        }
    };
    d.whole = whole;
    for r in &runs {
        match r.op {
            Op::Insert => d.added += r.len,
            Op::Delete => d.removed += r.len,
            _ => {}
        }
    }
    d.summary = if d.added + d.removed == 0 && prefix.is_empty() {
        "no changes".to_string()
    } else {
        let whole = if whole {
            ", the changed region shown whole (too large to align)"
        } else {
            ""
        };
        format!("{prefix}+{} -{}{whole}", d.added, d.removed)
    };
    let hunks = hunks(&runs);
    let old_last = last_line_without_eol(old_text);
    let new_last = last_line_without_eol(new);
    let mut total = 0;
    for r in &hunks {
        total += match r.op {
            Op::Hunk => 1,
            _ => r.len + markers(r, old_last, new_last),
        };
    }
    let mut lines: Vec<String> = Vec::new();
    let mut old_lines = Cursor::new(old_text);
    let mut new_lines = Cursor::new(new);
    'runs: for (at, r) in hunks.iter().enumerate() {
        if lines.len() >= budget.keep {
            break;
        }
        if r.op == Op::Hunk {
            lines.push(header(&hunks[at + 1..]));
            continue;
        }
        for i in 0..r.len {
            let (mark, cursor, index) = match r.op {
                Op::Insert => ('+', &mut new_lines, r.new + i),
                Op::Delete => ('-', &mut old_lines, r.old + i),
                _ => {
                    new_lines.seek(r.new + i + 1);
                    (' ', &mut old_lines, r.old + i)
                }
            };
            let Some((text, eol)) = cursor.at(index) else {
                break;
            };
            if lines.len() >= budget.keep {
                break 'runs;
            }
            let mut shown = String::from(mark);
            shown.push_str(&escape_line_clipped(text, MAX_LINE_CHARS));
            lines.push(shown);
            if !eol {
                if lines.len() >= budget.keep {
                    break 'runs;
                }
                lines.push("\\ No newline at end of file".to_string());
            }
        }
    }
    budget.keep -= lines.len();
    d.shown = lines.len().min(budget.show);
    d.lines = lines;
    budget.show -= d.shown;
    d.hidden = total.saturating_sub(d.shown);
    d
}

/// `\ No newline at end of file` lines a run writes: after the last line of a text that has
/// no line feed (`old_last` / `new_last`: its index).
fn markers(r: &Run, old_last: Option<usize>, new_last: Option<usize>) -> usize {
    let covers =
        |start: usize, last: Option<usize>| last.is_some_and(|l| l >= start && l < start + r.len);
    match r.op {
        Op::Insert => usize::from(covers(r.new, new_last)),
        _ => usize::from(covers(r.old, old_last)),
    }
}

/// The index of the last line when it has no line feed.
fn last_line_without_eol(text: &str) -> Option<usize> {
    ends_open(text).then(|| count_lines(text) - 1)
}

/// The text's last line has no line feed.
fn ends_open(text: &str) -> bool {
    text.as_bytes().last().is_some_and(|&b| b != b'\n')
}

/// `@@ -1,3 +1,4 @@` for the hunk whose runs start `runs` (to the next [`Op::Hunk`]); a count
/// of 1 left out, and with no lines on a side its start is the line before the hunk (as diff
/// and git write it).
fn header(runs: &[Run]) -> String {
    let (mut old_len, mut new_len) = (0, 0);
    for r in runs.iter().take_while(|r| r.op != Op::Hunk) {
        match r.op {
            Op::Delete => old_len += r.len,
            Op::Insert => new_len += r.len,
            _ => {
                old_len += r.len;
                new_len += r.len;
            }
        }
    }
    let mut out = String::from("@@ -");
    side(&mut out, runs[0].old, old_len);
    out.push_str(" +");
    side(&mut out, runs[0].new, new_len);
    out.push_str(" @@");
    out
}

fn side(out: &mut String, start: usize, len: usize) {
    out.push_str(&(start + usize::from(len > 0)).to_string());
    if len != 1 {
        out.push(',');
        out.push_str(&len.to_string());
    }
}

/// Number of lines (a last line without a line feed counts).
fn count_lines(text: &str) -> usize {
    let n = text.bytes().filter(|&b| b == b'\n').count();
    n + usize::from(ends_open(text))
}

/// A text's lines read forward, one at a time.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
    index: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            text,
            at: 0,
            index: 0,
        }
    }

    /// The next line without its line feed, and whether it had one.
    fn next(&mut self) -> Option<(&'a str, bool)> {
        let rest = &self.text[self.at..];
        if rest.is_empty() {
            return None;
        }
        self.index += 1;
        match rest.find('\n') {
            Some(i) => {
                self.at += i + 1;
                Some((&rest[..i], true))
            }
            None => {
                self.at = self.text.len();
                Some((rest, false))
            }
        }
    }

    /// Moves forward to line `index` (never back).
    fn seek(&mut self, index: usize) {
        while self.index < index && self.next().is_some() {}
    }

    fn at(&mut self, index: usize) -> Option<(&'a str, bool)> {
        self.seek(index);
        if self.index == index {
            self.next()
        } else {
            None
        }
    }
}

/// The last line of `text` with its line feed (if any).
fn last_piece(text: &str) -> &str {
    let bytes = text.as_bytes();
    let body = &bytes[..bytes.len() - usize::from(!ends_open(text) && !text.is_empty())];
    match body.iter().rposition(|&b| b == b'\n') {
        Some(i) => &text[i + 1..],
        None => text,
    }
}

/// The runs from `old` to `new`, and whether the changed middle is shown whole.
pub(super) fn align(old: &str, new: &str) -> (Vec<Run>, bool) {
    // Common first lines (compared with their line feeds).
    let (mut po, mut pn, mut prefix) = (0, 0, 0);
    loop {
        let (a, b) = (&old[po..], &new[pn..]);
        let la = a.find('\n').map_or(a.len(), |i| i + 1);
        let lb = b.find('\n').map_or(b.len(), |i| i + 1);
        if la == 0 || lb == 0 || a[..la] != b[..lb] {
            break;
        }
        po += la;
        pn += lb;
        prefix += 1;
    }
    // Common last lines, within what is left.
    let (mut eo, mut en, mut suffix) = (old.len(), new.len(), 0);
    while eo > po && en > pn {
        let (a, b) = (last_piece(&old[po..eo]), last_piece(&new[pn..en]));
        if a != b {
            break;
        }
        eo -= a.len();
        en -= b.len();
        suffix += 1;
    }
    let (mid_old, mid_new) = (&old[po..eo], &new[pn..en]);
    let (a, b) = (count_lines(mid_old), count_lines(mid_new));
    let mut runs = Vec::new();
    let mut push = |r: Run| {
        if r.len == 0 {
            return;
        }
        match runs.last_mut() {
            Some(last) if last_op_joins(last, &r) => last.len += r.len,
            _ => runs.push(r),
        }
    };
    push(Run {
        op: Op::Equal,
        old: 0,
        new: 0,
        len: prefix,
    });
    let aligned = if a <= MAX_ALIGN_LINES && b <= MAX_ALIGN_LINES {
        myers_lines(mid_old, mid_new)
    } else {
        None
    };
    let whole = aligned.is_none();
    match aligned {
        Some(middle) => {
            for r in middle {
                push(Run {
                    old: r.old + prefix,
                    new: r.new + prefix,
                    ..r
                });
            }
        }
        None => {
            push(Run {
                op: Op::Delete,
                old: prefix,
                new: prefix,
                len: a,
            });
            push(Run {
                op: Op::Insert,
                old: prefix + a,
                new: prefix,
                len: b,
            });
        }
    }
    push(Run {
        op: Op::Equal,
        old: prefix + a,
        new: prefix + b,
        len: suffix,
    });
    (runs, whole)
}

/// Runs are made in path order, each starting where the one before ended: two of one kind
/// in a row are one.
fn last_op_joins(last: &Run, next: &Run) -> bool {
    last.op == next.op
}

/// The middle's lines aligned by their hashes (line feeds included), then every pair the
/// script calls equal checked by its text: two different lines with one hash (rare, or
/// crafted) make it give up, and the middle is shown whole (still exact).
fn myers_lines(old: &str, new: &str) -> Option<Vec<Run>> {
    let (a, ha) = pieces(old);
    let (b, hb) = pieces(new);
    checked(&a, &b, &ha, &hb)
}

/// The script over the hashes `ha`, `hb` of lines `a`, `b`, if every pair it calls equal is.
fn checked(a: &[&str], b: &[&str], ha: &[u64], hb: &[u64]) -> Option<Vec<Run>> {
    let runs = myers(ha, hb, MAX_EDITS, MAX_WORK)?;
    let equal = |r: &Run| (0..r.len).all(|i| a[r.old + i] == b[r.new + i]);
    runs.iter()
        .filter(|r| r.op == Op::Equal)
        .all(equal)
        .then_some(runs)
}

/// `text`'s lines (line feeds included) and their FNV-1a hashes.
fn pieces(text: &str) -> (Vec<&str>, Vec<u64>) {
    let mut lines = Vec::new();
    let mut hashes = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let (piece, tail) = rest.split_at(end);
        let hash = piece.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        lines.push(piece);
        hashes.push(hash);
        rest = tail;
    }
    (lines, hashes)
}

/// Myers' shortest edit script from `a` to `b` as runs (0-based indices into `a` and `b`),
/// or `None` when it needs more than `max_edits` inserted plus removed lines or more than
/// `max_work` steps.
fn myers(a: &[u64], b: &[u64], max_edits: usize, max_work: usize) -> Option<Vec<Run>> {
    // The trace keeps x as an i16 (callers pass at most MAX_ALIGN_LINES a side).
    if a.len().max(b.len()) > i16::MAX as usize {
        return None;
    }
    let (n, m) = (a.len() as i32, b.len() as i32);
    let max = (n + m).min(i32::try_from(max_edits).unwrap_or(i32::MAX));
    let offset = max + 1;
    let mut v = vec![0i32; (2 * max + 3) as usize];
    // trace[d² + k + d]: the furthest x on diagonal k after d edits (2d + 1 values for d);
    // x is at most MAX_ALIGN_LINES, which fits.
    let mut trace: Vec<i16> = Vec::new();
    let keep = |trace: &mut Vec<i16>, v: &[i32]| trace.extend(v.iter().map(|&x| x as i16));
    let mut work = 0usize;
    for d in 0..=max {
        let mut k = -d;
        while k <= d {
            let down =
                k == -d || (k != d && v[(offset + k - 1) as usize] < v[(offset + k + 1) as usize]);
            let mut x = if down {
                v[(offset + k + 1) as usize]
            } else {
                v[(offset + k - 1) as usize] + 1
            };
            let mut y = x - k;
            work += 1;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
                work += 1;
            }
            if work > max_work {
                return None;
            }
            v[(offset + k) as usize] = x;
            if x >= n && y >= m {
                keep(
                    &mut trace,
                    &v[(offset - d) as usize..=(offset + d) as usize],
                );
                return Some(backtrack(&trace, d, n, m));
            }
            k += 2;
        }
        keep(
            &mut trace,
            &v[(offset - d) as usize..=(offset + d) as usize],
        );
    }
    None
}

/// The runs of the path the trace found, first to last.
fn backtrack(trace: &[i16], edits: i32, n: i32, m: i32) -> Vec<Run> {
    let mut steps: Vec<Run> = Vec::new();
    let (mut x, mut y) = (n, m);
    let at = |d: i32, k: i32| i32::from(trace[(d * d + k + d) as usize]);
    let mut record = |op: Op, x: i32, y: i32, len: i32| {
        if len > 0 {
            steps.push(Run {
                op,
                old: x as usize,
                new: y as usize,
                len: len as usize,
            });
        }
    };
    for d in (1..=edits).rev() {
        let k = x - y;
        let down = k == -d || (k != d && at(d - 1, k - 1) < at(d - 1, k + 1));
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = at(d - 1, prev_k);
        let prev_y = prev_x - prev_k;
        // The move, then equal lines up to (x, y).
        let (mid_x, mid_y) = if down {
            (prev_x, prev_y + 1)
        } else {
            (prev_x + 1, prev_y)
        };
        record(Op::Equal, mid_x, mid_y, x - mid_x);
        if down {
            record(Op::Insert, prev_x, prev_y, 1);
        } else {
            record(Op::Delete, prev_x, prev_y, 1);
        }
        x = prev_x;
        y = prev_y;
    }
    record(Op::Equal, 0, 0, x);
    steps.reverse();
    // Join neighbouring steps of one kind.
    let mut runs: Vec<Run> = Vec::new();
    for s in steps {
        match runs.last_mut() {
            Some(last) if last_op_joins(last, &s) => last.len += s.len,
            _ => runs.push(s),
        }
    }
    runs
}

/// The runs grouped into hunks, in one list where each hunk starts with an [`Op::Hunk`]:
/// each change with [`CONTEXT_LINES`] of equal lines around it, changes closer than twice
/// that in one hunk.
fn hunks(runs: &[Run]) -> Vec<Run> {
    let c = CONTEXT_LINES;
    let mut out = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        if runs[i].op == Op::Equal {
            i += 1;
            continue;
        }
        let lead = match i.checked_sub(1).map(|p| runs[p]) {
            Some(e) if e.op == Op::Equal => {
                let n = e.len.min(c);
                Run {
                    old: e.old + e.len - n,
                    new: e.new + e.len - n,
                    len: n,
                    ..e
                }
            }
            _ => Run {
                op: Op::Equal,
                len: 0,
                ..runs[i]
            },
        };
        out.push(Run {
            op: Op::Hunk,
            ..lead
        });
        out.push(lead);
        loop {
            out.push(runs[i]);
            i += 1;
            if i == runs.len() {
                break;
            }
            if runs[i].op != Op::Equal {
                continue;
            }
            let e = runs[i];
            if e.len <= 2 * c && i + 1 < runs.len() {
                out.push(e);
                i += 1;
                continue;
            }
            out.push(Run {
                len: e.len.min(c),
                ..e
            });
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
