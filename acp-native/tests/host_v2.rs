//! The driver with ACP v2 negotiated (feature `unstable_protocol_v2`): the version
//! `initialize` settled is published before its answer is handed over, so the caller that
//! gets a v2 answer reads `protocol_version() == 2` at once (it could read 1 while the driver
//! had not published it yet: the supervisor then took a v2 agent for a v1 one).

use acp_core::Role;
use acp_native::{transport, AgentSideConnection, ClientSideConnection, DriverConfig, Router};
use serde_json::json;

fn raw(v: serde_json::Value) -> Box<acp_native::RawValue> {
    serde_json::value::to_raw_value(&v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settled_version_is_read_with_the_initialize_answer() {
    // Many connections: the caller runs on another worker than the driver that answers.
    for _ in 0..200 {
        let ((cr, cw), (ar, aw)) = transport::duplex(64 << 10);
        let agent = Router::new().route_raw("initialize", |_p, _cx| async {
            Ok(raw(
                json!({"protocolVersion": 2, "info": {"name": "a"}, "capabilities": {}}),
            ))
        });
        let _agent = AgentSideConnection::connect(ar, aw, agent, DriverConfig::new(Role::Agent));
        let client =
            ClientSideConnection::connect(cr, cw, Router::new(), DriverConfig::new(Role::Client));
        assert_eq!(client.handle().protocol_version(), 1);
        let offer = json!({"protocolVersion": 2, "clientCapabilities": {},
                           "info": {"name": "c"}, "capabilities": {}});
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            client
                .handle()
                .request("initialize", Some(raw(offer)), None),
        )
        .await
        .expect("initialize answered (hang guard)")
        .unwrap();
        assert!(
            answer.get().contains("\"protocolVersion\":2"),
            "{}",
            answer.get()
        );
        assert_eq!(client.handle().protocol_version(), 2);
    }
}
