//! Replays `tests/client/http_routing.json`: which session a message goes with on the HTTP
//! transport (`acp_core::http_sse`), through each of its readings: the client's [`Outgoing`]
//! and [`Answer`] (over an `Envelope`), and the server's [`session_id_of`] /
//! [`route_of_agent_message`] (over a `serde_json::Value`). The VS Code extension replays the
//! same file through the wasm build (`vscode-extension/test/unit/cases.test.ts`), as does
//! acp-wasm's node suite.

use acp_core::http_sse::{route_of_agent_message, session_id_of, Answer, Outgoing, Route};
use serde_json::{json, Value};

/// An id as the table writes it: its JSON text.
fn id_text(id: &acp_core::Id) -> Value {
    Value::String(serde_json::to_string(id).unwrap())
}

#[test]
fn http_routing_cases() {
    let path = format!(
        "{}/../tests/client/http_routing.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let table: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut cases = table["cases"].as_array().expect("a cases array").clone();
    assert!(cases.len() > 20, "{path} has {} cases", cases.len());
    let bless = std::env::var_os("ACP_BLESS").is_some();
    for case in &mut cases {
        let name = case["name"].clone();
        let got = if let Some(line) = case["send"].as_str() {
            let got = match Outgoing::read(line) {
                None => Value::Null,
                Some(out) => json!({
                    "method": out.method,
                    "id": out.id.as_ref().map(id_text),
                    "session": out.session,
                }),
            };
            // The server's reading of the same message gives the same session.
            if let Ok(value) = serde_json::from_str::<Value>(line) {
                if let Some(method) = value.get("method").and_then(Value::as_str) {
                    let params = value.get("params");
                    let session = session_id_of(method, params);
                    assert_eq!(json!(session), got["session"], "{name}: session_id_of");
                    let route = match route_of_agent_message(method, params) {
                        Route::Session(s) => Some(s),
                        Route::Connection => None,
                    };
                    assert_eq!(json!(route), got["session"], "{name}: route");
                }
            }
            got
        } else if let Some(line) = case["receive"].as_str() {
            match Answer::read(line) {
                None => Value::Null,
                Some(answer) => json!({"id": id_text(&answer.id), "session": answer.session}),
            }
        } else {
            panic!("{name}: neither `send` nor `receive`")
        };
        if bless {
            case["expect"] = got;
        } else {
            assert_eq!(
                got, case["expect"],
                "case {name}\n  got:    {got}\n  expect: {}",
                case["expect"]
            );
        }
    }
    if bless {
        let text = serde_json::to_string_pretty(&json!({ "cases": cases })).unwrap();
        std::fs::write(path, text + "\n").unwrap();
    }
}
