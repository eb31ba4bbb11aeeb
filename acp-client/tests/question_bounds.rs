//! The question's bounds against hostile inputs: whatever the agent sends (a 64 MiB file of
//! line feeds, a 60 MB line, two different 10,000-line files), building a question keeps a
//! bounded number of lines and allocates a bounded amount beyond its inputs. Measured with a
//! counting allocator, peak bytes over the call (one test: the counters are global).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_client::question::{self, Before, MAX_LINES, MAX_LINE_CHARS, SHOWN_LINES};
use serde_json::json;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` came from `alloc` above with this `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Peak bytes allocated while `f` runs, beyond what was live before.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    let cost = PEAK.load(Ordering::SeqCst) - base;
    eprintln!("peak: {cost} bytes");
    (out, cost)
}

const MIB: usize = 1 << 20;

#[test]
fn hostile_changes_cost_bounded_memory_and_keep_bounded_lines() {
    // A 64 MiB file of line feeds over a small one: 64 M lines.
    let feeds = "\n".repeat(64 * MIB);
    let (d, cost) = peak(|| question::diff("/w/f", Before::Text("a\nb\n"), &feeds));
    assert!(d.whole, "past the lines aligned: shown whole");
    assert_eq!((d.added, d.removed), (64 * MIB, 2));
    assert_eq!((d.lines.len(), d.shown), (MAX_LINES, SHOWN_LINES));
    assert!(
        cost < 2 * MIB,
        "{cost} bytes for a 64 MiB file of line feeds"
    );
    drop(feeds);

    // One 60 MB line, new and changed: clipped, never copied.
    let line = "\u{1b}".repeat(60_000_000);
    for old in [Before::Missing, Before::Text("x\n")] {
        let (d, cost) = peak(|| question::diff("/w/min.js", old, &line));
        assert!(d
            .lines
            .iter()
            .all(|l| l.chars().count() < MAX_LINE_CHARS + 40));
        assert!(cost < MIB, "{cost} bytes for a 60 MB line");
    }
    // The same line as the agent's request, in a tool call's content and as its input.
    let params = json!({"sessionId": "s", "toolCall": {"toolCallId": "t", "title": line.clone(),
        "rawInput": {"text": line.clone()}}, "options": [{"optionId": "a", "name": line.clone(), "kind": "allow_once"}]});
    let (q, cost) = peak(|| question::permission(&params, None));
    assert!(q.title.chars().count() < 600 && q.detail[0].chars().count() < 400);
    assert!(cost < MIB, "{cost} bytes for a request of 60 MB fields");
    drop((params, line));

    // Two different files of 9,999 lines: the alignment is tried (within MAX_ALIGN_LINES),
    // gives up past MAX_EDITS, and the middle is shown whole.
    let old: String = (0..9_999).map(|i| format!("old line {i}\n")).collect();
    let new: String = (0..9_999).map(|i| format!("new line {i}\n")).collect();
    let (d, cost) = peak(|| question::diff("/w/f", Before::Text(&old), &new));
    assert!(d.whole);
    assert_eq!(d.lines.len(), MAX_LINES);
    assert!(cost < 6 * MIB, "{cost} bytes aligning two 9,999-line files");

    // Every other line changed in 9,999: the alignment's trace at its bound.
    let new: String = (0..9_999)
        .map(|i| {
            if i % 2 == 0 {
                format!("old line {i}\n")
            } else {
                format!("changed {i}\n")
            }
        })
        .collect();
    let (d, cost) = peak(|| question::diff("/w/f", Before::Text(&old), &new));
    assert!(d.whole, "more than MAX_EDITS edits");
    assert!(cost < 6 * MIB, "{cost} bytes at the alignment's bound");
    // A few changes in the same files: aligned, exact.
    let new = old.replace("old line 5000\n", "changed\n");
    let (d, _) = peak(|| question::diff("/w/f", Before::Text(&old), &new));
    assert!(!d.whole);
    assert_eq!((d.added, d.removed, d.lines.len()), (1, 1, 9));
}
