//! Agent stderr reaches `tracing` line by line under target `acp::agent_stderr`.
//!
//! Alone in its own test binary on purpose: `tracing` caches per-callsite interest globally, and
//! a parallel test hitting the same callsite while this one installs its subscriber can leave a
//! stale "disabled" interest behind.

mod host_support;

use std::sync::{Arc, Mutex};

use acp_native::process::{AgentCommand, AgentProcess, STDERR_TRACING_TARGET};
use host_support::EVENTUALLY;
use tokio::time::timeout;

/// A minimal subscriber recording (target, message) of every event. The test runtime is
/// current-thread, so a thread-local default catches the stderr task's events.
struct Recorder(Arc<Mutex<Vec<(String, String)>>>);

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct V(String);
        impl tracing::field::Visit for V {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 = format!("{v:?}");
                }
            }
        }
        let mut v = V(String::new());
        event.record(&mut v);
        self.0
            .lock()
            .unwrap()
            .push((event.metadata().target().to_owned(), v.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(flavor = "current_thread")]
async fn stderr_lines_go_to_tracing() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let _guard = tracing::subscriber::set_default(Recorder(Arc::clone(&events)));
    let p = AgentProcess::spawn(
        &AgentCommand::new("sh").args(["-c", "printf 'one\\ntwo\\r\\nthree' >&2"]),
    )
    .unwrap();
    timeout(EVENTUALLY, p.wait()).await.unwrap();
    let lines: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|(target, _)| target == STDERR_TRACING_TARGET)
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(lines, ["one", "two", "three"]);
}
