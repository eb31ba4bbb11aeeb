//! The changes of an edit, one by one, for a review that accepts or rejects each of them
//! (the extension's per-hunk review, `tests/client/hunks.json`).
//!
//! A hunk is one changed region (the lines removed and added between two unchanged runs),
//! without context lines, found by the same alignment as the question's diff ([`super::Diff`]:
//! bounded work; a region too large to align is one hunk, exact but not minimal). [`select`]
//! rebuilds a text that takes some hunks from the new text and the others from the old one:
//! accepting a hunk moves it into the review's "before" text, rejecting it takes it out of
//! the file. Lines keep their own line feeds, so the result is byte-exact. Memory: the line
//! slices of both texts (O(lines)) plus the alignment's own bound.

use serde::Serialize;

use super::diff::{align, Op, Run};

/// One changed region of an edit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    /// The first old line it replaces (1-based); for a pure insertion, the line it follows
    /// (0: at the start).
    pub old_start: usize,
    /// Lines removed.
    pub removed: usize,
    /// The first new line it adds (1-based); for a pure removal, the new line it follows.
    pub new_start: usize,
    /// Lines added.
    pub added: usize,
}

/// Every hunk from `old` to `new`, in order; none when the texts are equal.
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    regions(&align(old, new).0)
        .into_iter()
        .map(|r| Hunk {
            old_start: if r.removed == 0 { r.old } else { r.old + 1 },
            removed: r.removed,
            new_start: if r.added == 0 { r.new } else { r.new + 1 },
            added: r.added,
        })
        .collect()
}

/// The text with hunk `i` of [`hunks`]`(old, new)` taken from `new` when `take(i)`, from `old`
/// otherwise (all taken: `new`; none: `old`).
pub fn select(old: &str, new: &str, take: impl Fn(usize) -> bool) -> String {
    let (runs, _) = align(old, new);
    let (a, b) = (lines(old), lines(new));
    let mut out = String::with_capacity(old.len().max(new.len()));
    let mut hunk = 0;
    let mut i = 0;
    while i < runs.len() {
        let r = runs[i];
        if r.op == Op::Equal {
            a[r.old..r.old + r.len].iter().for_each(|l| out.push_str(l));
            i += 1;
            continue;
        }
        // One region: the change runs until the next equal run.
        let mut end = i;
        while end < runs.len() && runs[end].op != Op::Equal {
            end += 1;
        }
        let from_new = take(hunk);
        for c in &runs[i..end] {
            match (c.op, from_new) {
                (Op::Insert, true) => b[c.new..c.new + c.len].iter().for_each(|l| out.push_str(l)),
                (Op::Delete, false) => a[c.old..c.old + c.len].iter().for_each(|l| out.push_str(l)),
                _ => {}
            }
        }
        hunk += 1;
        i = end;
    }
    out
}

struct Region {
    old: usize,
    new: usize,
    removed: usize,
    added: usize,
}

fn regions(runs: &[Run]) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    let mut open = false;
    for r in runs {
        match r.op {
            Op::Equal | Op::Hunk => open = false,
            op => {
                if !open {
                    out.push(Region {
                        old: r.old,
                        new: r.new,
                        removed: 0,
                        added: 0,
                    });
                    open = true;
                }
                let last = out.last_mut().expect("a region was just opened");
                if op == Op::Delete {
                    last.removed += r.len;
                } else {
                    last.added += r.len;
                }
            }
        }
    }
    out
}

/// `text`'s lines, each with its line feed (the last one may have none).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taking_every_hunk_gives_the_new_text_and_none_the_old() {
        let old = "a\nb\nc\nd\ne\nf\ng";
        let new = "a\nB\nc\nd\ne\nF\ng\nh\n";
        assert_eq!(hunks(old, new).len(), 2);
        assert_eq!(select(old, new, |_| true), new);
        assert_eq!(select(old, new, |_| false), old);
        assert_eq!(select(old, new, |i| i == 0), "a\nB\nc\nd\ne\nf\ng");
        assert_eq!(select(old, new, |i| i == 1), "a\nb\nc\nd\ne\nF\ng\nh\n");
    }

    #[test]
    fn a_region_too_large_to_align_is_one_exact_hunk() {
        let old: String = (0..30_000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..30_000).map(|i| format!("{}\n", i * 7)).collect();
        let h = hunks(&old, &new);
        assert!(!h.is_empty());
        assert_eq!(select(&old, &new, |_| true), new);
        assert_eq!(select(&old, &new, |_| false), old);
    }
}
