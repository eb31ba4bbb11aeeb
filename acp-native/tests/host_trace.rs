//! The tracing layer: every RPC logs its id, method, truncated params, duration and outcome.

mod rpc_support;

use std::sync::{Arc, Mutex};

use acp_native::layers::{TraceLayer, RPC_TARGET};
use acp_native::{transport, RpcRequest};
use rpc_support::*;
use serde_json::json;
use tower::{Layer, Service, ServiceExt};

/// A minimal subscriber recording the fields of `acp::rpc` events as `name=value` lines.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!("{}={} ", field.name(), value));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        if e.metadata().target() == RPC_TARGET {
            let mut f = Fields(format!("{} ", e.metadata().level()));
            e.record(&mut f);
            self.0.lock().unwrap().push(f.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn every_rpc_is_traced_with_outcome_and_duration() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    // agent_service() has TraceLayer outermost; trace the outgoing side too.
    let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
    let _agent = start_agent(ar, aw);
    let client = start_client(cr, cw, Arc::default());
    let mut out = TraceLayer::new()
        .max_params(40)
        .layer(client.handle().client());

    let long = "x".repeat(500);
    let req =
        RpcRequest::with_params("initialize", &json!({"protocolVersion": 1, "pad": long})).unwrap();
    out.ready().await.unwrap().call(req).await.unwrap();
    let e = out
        .ready()
        .await
        .unwrap()
        .call(RpcRequest::new("no/such", None))
        .await
        .unwrap_err();
    assert_eq!(e.remote().unwrap().code, -32601);
    drop(client);

    let lines = capture.0.lock().unwrap().clone();
    let find = |needle: &[&str]| {
        lines
            .iter()
            .find(|l| needle.iter().all(|n| l.contains(n)))
            .unwrap_or_else(|| panic!("no event with {needle:?} in:\n{}", lines.join("\n")))
            .clone()
    };
    // Incoming, on the agent: start with id, method and truncated params; done with duration.
    let start = find(&[
        "direction=in-request",
        "id=0",
        "method=initialize",
        "rpc start",
    ]);
    assert!(start.contains("… (530 bytes)"), "params truncated: {start}");
    assert!(
        !start.contains(&"x".repeat(300)),
        "at most 256 characters: {start}"
    );
    let out_start = find(&["direction=out-request", "method=initialize", "rpc start"]);
    assert!(
        !out_start.contains(&"x".repeat(40)),
        "max_params(40): {out_start}"
    );
    find(&[
        "direction=in-request",
        "method=initialize",
        "outcome=ok",
        "duration_ms=",
    ]);
    let failed = find(&["direction=in-request", "method=no/such", "outcome=error"]);
    assert!(failed.starts_with("INFO"), "failures at INFO: {failed}");
    assert!(failed.contains("-32601"), "{failed}");
    // Outgoing, on the client.
    find(&[
        "direction=out-request",
        "method=initialize",
        "outcome=ok",
        "duration_ms=",
    ]);
    find(&["direction=out-request", "method=no/such", "outcome=error"]);
}
