//! ACP v2 interop with the official Rust SDK (5.2.0, its v2 connection types `Client.v2()` and
//! `Agent.v2()`), both directions (feature `unstable_protocol_v2`): the SDK's v2 client against
//! `acp demo-agent`, and `acp chat` against the SDK's v2 agent. The SDK's side is
//! `rust-sdk-peer` (tests/rust-sdk, its own program: the SDK pins another schema crate), given
//! as `ACP_RUST_SDK_PEER`; scripts/interop-rust-sdk.sh builds it and runs this file (it is not
//! part of the plain v2 steps, which have no peer).

mod cli_support;

use std::process::Command;

use cli_support::{acp, run, TempDir};
use serde_json::Value;

fn peer() -> String {
    std::env::var("ACP_RUST_SDK_PEER").unwrap_or_else(|_| {
        panic!(
            "ACP_RUST_SDK_PEER is not set: this test needs the SDK's program; run \
             scripts/interop-rust-sdk.sh (which builds tests/rust-sdk and sets it)"
        )
    })
}

#[test]
fn the_sdks_v2_client_completes_a_turn_and_a_replayed_resume_with_acp_demo_agent() {
    let dir = TempDir::new("sdk-v2-client");
    let out = Command::new(peer())
        .args(["v2-client", "--", acp(), "demo-agent"])
        .current_dir(dir.path())
        .output()
        .expect("rust-sdk-peer runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).expect("one JSON report line");
    assert_eq!(report["protocolVersion"], 2, "{report}");
    assert_eq!(report["stopReason"], "end_turn", "{report}");
    assert_eq!(
        report["said"], "You said: hello. The write was allowed.",
        "{report}"
    );
    assert_eq!(
        report["questions"],
        serde_json::json!(["Write acp-demo.txt?"])
    );
    let kinds: Vec<&str> = report["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kinds.first(), Some(&"user_message"), "{report}");
    assert!(kinds.contains(&"tool_call_update"), "{report}");
    // The replay: the two messages, then replay_complete.
    assert_eq!(
        report["replayed"],
        serde_json::json!(["user_message", "agent_message", "replay_complete"]),
        "{report}"
    );
    // The prompt's acknowledgement carries the echoed user message's id.
    assert!(report["promptMessageId"].is_string(), "{report}");
}

#[test]
fn acp_chat_completes_a_v2_turn_with_the_sdks_v2_agent() {
    let dir = TempDir::new("sdk-v2-agent");
    let peer = peer();
    let r = run(
        &[
            "chat", "--prompt", "over v2", "--yes", "--", &peer, "v2-agent",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(
        r.stdout
            .contains("SDK v2 agent heard: over v2 (allowed: true)"),
        "{}",
        r.dump()
    );
    assert!(r.stderr.contains("Go on?"), "{}", r.dump());
    // --deny: the SDK's agent hears the rejection.
    let r = run(
        &[
            "chat", "--prompt", "again", "--deny", "--", &peer, "v2-agent",
        ],
        dir.path(),
        None,
    );
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("(allowed: false)"), "{}", r.dump());
}
