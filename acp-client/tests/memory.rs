//! What an update costs in memory: junk fields an agent adds (anywhere in the update) are
//! skipped without being built. Measured with a counting allocator, peak bytes over the call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use acp_client::thread::Thread;

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

#[test]
fn junk_in_an_update_costs_no_more_than_a_fraction_of_its_size() {
    // 4 MB of zeros in an array, at every level an agent could put it. As serde_json::Value
    // (or serde's buffered form of an internally tagged enum) each zero costs 32+ bytes.
    let junk = format!("[{}0]", "0,".repeat(2_000_000));
    for params in [
        format!(
            r#"{{"sessionId":"s","junk":{junk},"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"x"}}}}}}"#
        ),
        format!(
            r#"{{"sessionId":"s","update":{{"junk":{junk},"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"x"}}}}}}"#
        ),
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"junk":{junk},"type":"text","text":"x"}}}}}}"#
        ),
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{{"junk":{junk},"type":"content","content":{{"type":"text","text":"x"}}}}]}}}}"#
        ),
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"plan","entries":[{{"junk":{junk},"content":"x","priority":"low","status":"pending"}}]}}}}"#
        ),
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"some_future_kind","junk":{junk}}}}}"#
        ),
    ] {
        let mut t = Thread::default();
        let base = LIVE.load(Ordering::SeqCst);
        PEAK.store(base, Ordering::SeqCst);
        t.apply_json(&params).unwrap();
        let cost = PEAK.load(Ordering::SeqCst) - base;
        assert!(
            cost < params.len() / 4,
            "{cost} bytes at peak for a {}-byte update: {}",
            params.len(),
            &params[..120]
        );
    }
}
