use super::*;

fn lines(old: Option<&str>, new: &str) -> Vec<String> {
    let old = old.map_or(Before::Missing, Before::Text);
    diff("/f", old, new, &mut Budget::question()).lines
}

#[test]
fn a_change_has_hunks_with_three_lines_of_context() {
    let text = |f: &dyn Fn(usize) -> Option<String>| -> String {
        (1..=20).filter_map(f).map(|l| l + "\n").collect()
    };
    let old = text(&|i| Some(format!("{i}")));
    let new = text(&|i| match i {
        5 => Some("five".into()),
        18 => None,
        i => Some(format!("{i}")),
    });
    assert_eq!(
        lines(Some(&old), &new),
        [
            "@@ -2,7 +2,7 @@",
            " 2",
            " 3",
            " 4",
            "-5",
            "+five",
            " 6",
            " 7",
            " 8",
            "@@ -15,6 +15,5 @@",
            " 15",
            " 16",
            " 17",
            "-18",
            " 19",
            " 20",
        ]
    );
    // Changes six lines apart share a hunk.
    let new = text(&|i| match i {
        5 => Some("five".into()),
        12 => Some("twelve".into()),
        i => Some(format!("{i}")),
    });
    let l = lines(Some(&old), &new);
    assert_eq!(l.iter().filter(|l| l.starts_with("@@")).count(), 1, "{l:?}");
    assert_eq!(l[0], "@@ -2,14 +2,14 @@");
}

#[test]
fn new_files_edges_and_the_last_line_without_a_line_feed() {
    assert_eq!(
        lines(None, "a\nb"),
        [
            "@@ -0,0 +1,2 @@",
            "+a",
            "+b",
            "\\ No newline at end of file"
        ]
    );
    assert_eq!(lines(Some(""), "a\n"), ["@@ -0,0 +1 @@", "+a"]);
    assert_eq!(lines(Some("a\n"), ""), ["@@ -1 +0,0 @@", "-a"]);
    assert_eq!(
        lines(Some("a\nb"), "a\nb\n"),
        [
            "@@ -1,2 +1,2 @@",
            " a",
            "-b",
            "\\ No newline at end of file",
            "+b"
        ]
    );
    assert!(lines(Some("same\n"), "same\n").is_empty());
    let d = diff("/f", Before::Text("x\n"), "x\n", &mut Budget::question());
    assert_eq!(d.summary, "no changes");
    assert_eq!(
        lines(Some("a\nb\nc\n"), "x\na\nb\nc\n"),
        ["@@ -1,3 +1,4 @@", "+x", " a", " b", " c"]
    );
}

#[test]
fn the_script_is_the_shortest_one() {
    let old = "a\nb\nc\na\nb\nb\na\n";
    let new = "c\nb\na\nb\na\nc\n";
    let d = diff("/f", Before::Text(old), new, &mut Budget::question());
    // Myers' example: 5 edits.
    assert_eq!(d.added + d.removed, 5, "{:?}", d.lines);
    // Applying the diff's lines to the old text gives the new one.
    let kept: String = d
        .lines
        .iter()
        .filter(|l| l.starts_with(' ') || l.starts_with('+'))
        .map(|l| format!("{}\n", &l[1..]))
        .collect();
    assert_eq!(kept, new);
}

#[test]
fn hostile_lines_are_escaped_and_clipped() {
    let l = lines(Some("ok\n"), "ok\n\x1b[2J\rfake\u{202e}\n");
    assert_eq!(l[2], "+\\e[2J\\rfake\\u202e");
    let long = "x".repeat(100_000);
    let l = lines(None, &long);
    assert_eq!(l[1], format!("+{}… (+99800 characters)", "x".repeat(200)));
}

#[test]
fn too_large_a_middle_is_shown_whole_and_the_lines_stay_within_the_budget() {
    // 20,001 different lines on each side: past MAX_ALIGN_LINES.
    let old: String = (0..20_001).map(|i| format!("old {i}\n")).collect();
    let new: String = (0..20_001).map(|i| format!("new {i}\n")).collect();
    let mut budget = Budget::question();
    let d = diff("/f", Before::Text(&old), &new, &mut budget);
    assert!(d.whole);
    assert_eq!((d.added, d.removed), (20_001, 20_001));
    assert_eq!(d.lines.len(), MAX_LINES);
    assert_eq!(d.shown, SHOWN_LINES);
    assert_eq!(d.hidden, 1 + 40_002 - SHOWN_LINES);
    assert_eq!(d.lines[1], "-old 0");
    // Nothing is left for a second diff but its counts.
    let d = diff("/g", Before::Missing, "a\n", &mut budget);
    assert_eq!((d.lines.len(), d.shown, d.hidden, d.added), (0, 0, 2, 1));
}

#[test]
fn the_alignment_gives_up_within_its_bounds() {
    // 2,000 lines, every other one changed: more than MAX_EDITS edits.
    let a: Vec<u64> = (0..2000).collect();
    let b: Vec<u64> = (0..2000)
        .map(|i| if i % 2 == 0 { i } else { i + 10_000 })
        .collect();
    assert!(myers(&a, &b, MAX_EDITS, MAX_WORK).is_none());
    assert!(myers(&a, &b, 2000, MAX_WORK).is_some());
    // The work bound alone: a long snake on every diagonal.
    let a = vec![7u64; 5000];
    let mut b = vec![7u64; 5000];
    b.push(8);
    assert!(myers(&a, &b, MAX_EDITS, 1000).is_none());
    assert!(myers(&a, &b, MAX_EDITS, MAX_WORK).is_some());
}

/// Applies a unified diff's lines to `old` (plain ASCII lines, no escapes).
fn patch(old: &str, diff: &[String]) -> String {
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0; // next old line
    let mut last: Option<char> = None;
    for l in diff {
        if let Some(h) = l.strip_prefix("@@ -") {
            let start = h
                .split([',', ' '])
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap();
            let len_one = !h.split(' ').next().unwrap().contains(',');
            let start = if len_one || !h.starts_with(&format!("{start},0")) {
                start.saturating_sub(1)
            } else {
                start
            };
            while at < start {
                out.push_str(old[at]);
                at += 1;
            }
            continue;
        }
        if l.starts_with('\\') {
            // The previous line had no line feed: take it back off.
            if matches!(last, Some(' ' | '+')) && out.ends_with('\n') {
                out.pop();
            }
            continue;
        }
        let (mark, text) = l.split_at(1);
        let mark = mark.chars().next().unwrap();
        match mark {
            ' ' => {
                out.push_str(text);
                out.push('\n');
                at += 1;
            }
            '-' => at += 1,
            '+' => {
                out.push_str(text);
                out.push('\n');
            }
            _ => unreachable!("{l}"),
        }
        last = Some(mark);
    }
    while at < old.len() {
        out.push_str(old[at]);
        at += 1;
    }
    out
}

fn lcs(a: &[&str], b: &[&str]) -> usize {
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    t[0][0]
}

#[test]
fn random_diffs_are_exact_and_minimal() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _ in 0..2000 {
        let mut text = || -> String {
            let n = next(12);
            let mut t: String = (0..n)
                .map(|_| format!("{}\n", ["a", "b", "c", "d"][next(4) as usize]))
                .collect();
            if next(5) == 0 {
                t.push('z');
            }
            t
        };
        let (old, new) = (text(), text());
        let d = diff("/f", Before::Text(&old), &new, &mut Budget::question());
        assert!(!d.whole);
        assert_eq!(
            patch(&old, &d.lines),
            new,
            "{old:?} -> {new:?}: {:?}",
            d.lines
        );
        let (a, b): (Vec<&str>, Vec<&str>) = (
            old.split_inclusive('\n').collect(),
            new.split_inclusive('\n').collect(),
        );
        assert_eq!(
            d.added + d.removed,
            a.len() + b.len() - 2 * lcs(&a, &b),
            "{old:?} -> {new:?}"
        );
        assert_eq!(d.hidden + d.shown, d.lines.len());
    }
}

#[test]
fn lines_with_one_hash_are_compared_by_text() {
    let (a, b) = (["x\n", "same\n"], ["y\n", "same\n"]);
    // A collision: every line hashes alike. The script calls x and y equal; the check
    // refuses it, and the middle is shown whole.
    assert_eq!(checked(&a, &b, &[1, 2], &[1, 2]), None);
    assert!(checked(&a, &b, &[1, 2], &[3, 2]).is_some());
}
