//! wasm-bindgen-test tests of the wrapper, run under node by wasm-bindgen-test-runner
//! (scripts/test-wasm.sh sets CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER).
#![cfg(target_arch = "wasm32")]

use acp_wasm::AcpConnection;
use js_sys::{Reflect, JSON};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn json(text: &str) -> JsValue {
    JSON::parse(text).expect("test JSON")
}

fn stringify(v: &JsValue) -> String {
    JSON::stringify(v).unwrap().as_string().unwrap()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn error_name(e: &JsValue) -> String {
    let err = e.dyn_ref::<js_sys::Error>().expect("a JS Error");
    String::from(err.name())
}

fn client() -> AcpConnection {
    AcpConnection::new("client".into(), JsValue::UNDEFINED).unwrap()
}

fn agent() -> AcpConnection {
    AcpConnection::new("agent".into(), JsValue::UNDEFINED).unwrap()
}

#[wasm_bindgen_test]
fn round_trip_through_js_values() {
    let mut c = client();
    let mut a = agent();
    let id = c
        .send_request(
            "session/new".into(),
            json(r#"{"cwd":"/tmp","mcpServers":[]}"#),
            0.0,
            None,
        )
        .unwrap();
    assert_eq!(id, 0.0);
    let wire = c.poll_transmit().expect("a request line").to_vec();
    assert_eq!(
        String::from_utf8(wire.clone()).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}\n"
    );
    a.feed(js_sys::Uint8Array::from(&wire[..]).into(), 1.0)
        .unwrap();
    let ev = a.poll_event().unwrap();
    assert_eq!(get(&ev, "type"), "request");
    assert_eq!(get(&ev, "method"), "session/new");
    assert_eq!(
        stringify(&get(&ev, "params")),
        r#"{"cwd":"/tmp","mcpServers":[]}"#
    );
    assert!(a.poll_event().unwrap().is_undefined());
    let token = get(&ev, "token").as_f64().unwrap();
    a.respond(token, json(r#"{"sessionId":"s1"}"#)).unwrap();
    c.feed_string(a.poll_transmit_string().unwrap().into(), 2.0)
        .unwrap();
    let done = c.poll_event().unwrap();
    assert_eq!(
        stringify(&done),
        r#"{"type":"response","requestId":0,"method":"session/new","result":{"sessionId":"s1"}}"#
    );
    assert_eq!(c.pending_outgoing(), 0.0);
}

#[wasm_bindgen_test]
fn errors_are_named_after_the_core_error_kind() {
    let mut c = client();
    let e = c.respond(3.0, JsValue::NULL).unwrap_err();
    assert_eq!(error_name(&e), "UnknownToken");
    let e = c.cancel_request(9.0, 0.0).unwrap_err();
    assert_eq!(error_name(&e), "UnknownRequest");
    let e = c
        .send_request("".into(), JsValue::UNDEFINED, 0.0, None)
        .unwrap_err();
    assert_eq!(error_name(&e), "InvalidMethod");
    let e = c
        .send_request("a/b".into(), JsValue::from_str("x"), 0.0, None)
        .unwrap_err();
    assert_eq!(error_name(&e), "InvalidParams");
    c.close(JsValue::UNDEFINED).unwrap();
    let e = c.notify("a/b".into(), JsValue::UNDEFINED).unwrap_err();
    assert_eq!(error_name(&e), "ConnectionClosed");
    assert!(get(&e, "message").as_string().unwrap().contains("closed"));
    let e = AcpConnection::new("server".into(), JsValue::UNDEFINED)
        .err()
        .unwrap();
    assert!(e.is_instance_of::<js_sys::TypeError>());
}

#[wasm_bindgen_test]
fn options_reach_the_core_config() {
    let mut c = AcpConnection::new(
        "client".into(),
        json(r#"{"requestTimeoutMs":40,"batchPolicy":"rejectAll"}"#),
    )
    .unwrap();
    c.send_request("a/b".into(), JsValue::UNDEFINED, 10.0, None)
        .unwrap();
    assert_eq!(c.poll_timeout(), Some(50.0));
    c.handle_timeout(50.0).unwrap();
    let ev = c.poll_event().unwrap();
    assert_eq!(get(&ev, "kind"), "timeout");
    assert!(c
        .poll_transmit_string()
        .unwrap()
        .contains("$/cancel_request"));
    // rejectAll: any array gets one Invalid Request.
    c.feed_string("[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n".into(), 60.0)
        .unwrap();
    let out = c.poll_transmit_string().unwrap();
    assert!(
        out.contains("-32600") && out.contains("\"id\":null"),
        "{out}"
    );
    assert!(c.poll_transmit_string().is_none());
    let ev = c.poll_event().unwrap();
    assert_eq!(get(&ev, "type"), "protocolError");
    assert_eq!(get(&ev, "kind"), "invalidRequest");
    let bad = AcpConnection::new("client".into(), json(r#"{"requestTimeout":40}"#))
        .err()
        .unwrap();
    assert!(bad.is_instance_of::<js_sys::TypeError>());
}

#[wasm_bindgen_test]
fn events_for_every_outcome_kind() {
    let mut c = AcpConnection::new("client".into(), JsValue::UNDEFINED).unwrap();
    c.send_request("a/b".into(), JsValue::UNDEFINED, 0.0, Some(5.0))
        .unwrap();
    c.send_request("c/d".into(), JsValue::UNDEFINED, 0.0, None)
        .unwrap();
    c.poll_transmit().unwrap();
    c.handle_timeout(5.0).unwrap();
    c.cancel_request(1.0, 5.0).unwrap();
    let kinds: Vec<String> = std::iter::from_fn(|| {
        let e = c.poll_event().unwrap();
        (!e.is_undefined()).then(|| get(&e, "kind").as_string().unwrap())
    })
    .collect();
    assert_eq!(kinds, ["timeout", "cancelled"]);
}
