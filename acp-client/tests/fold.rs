//! The fold without what it did (`Thread::fold_read`, `Session::fold_update`: what a view that
//! draws from deltas calls, acp-wasm's connection folding updates inside wasm) keeps the same
//! conversation as the fold that reports each update (`Thread::apply_json`,
//! `Session::update`), on every row of `tests/client/thread.json` and
//! `tests/client/session.json`.

use std::time::Duration;

use acp_client::restart::RestartPolicy;
use acp_client::session::{Intent, Routed, Session};
use acp_client::thread::{Block, Limits, ReadUpdate, Thread};
use serde_json::Value;

fn cases(file: &str) -> Vec<Value> {
    let path = format!("{}/../tests/client/{file}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).unwrap();
    v["cases"].as_array().expect("cases").clone()
}

#[test]
fn thread_rows_fold_to_the_same_thread_and_deltas() {
    for case in cases("thread.json") {
        let name = &case["name"];
        let (mut told, mut quiet) = (
            Thread::new(Limits::default()),
            Thread::new(Limits::default()),
        );
        for step in case["steps"].as_array().expect("steps") {
            if let Some(u) = step.get("update") {
                let text = u.to_string();
                let a = told.apply_json(&text).is_ok();
                let b = ReadUpdate::read(&text).map(|r| quiet.fold_read(r)).is_ok();
                assert_eq!(a, b, "{name}: the same updates are unreadable");
            } else if let Some(p) = step.get("beginTurn") {
                let blocks: Vec<Block> = serde_json::from_value(p.clone()).unwrap();
                told.begin_turn(blocks.clone());
                quiet.begin_turn(blocks);
            } else if let Some(r) = step.get("endTurn") {
                told.end_turn(r.as_str().unwrap());
                quiet.end_turn(r.as_str().unwrap());
            } else if let Some(m) = step.get("failTurn") {
                told.fail_turn(m.as_str().unwrap());
                quiet.fail_turn(m.as_str().unwrap());
            }
            let (d1, d2) = (
                serde_json::to_string(&told.take_delta()).unwrap(),
                serde_json::to_string(&quiet.take_delta()).unwrap(),
            );
            assert_eq!(d1, d2, "{name}: the same delta after {step}");
        }
        assert_eq!(told.to_json(), quiet.to_json(), "{name}");
    }
}

#[test]
fn session_rows_fold_to_the_same_conversation() {
    for case in cases("session.json") {
        let name = &case["name"];
        let intent: Intent = serde_json::from_value(case["intent"].clone()).unwrap();
        let policy: RestartPolicy = match case.get("policy") {
            Some(p) if !p.is_null() => serde_json::from_value(p.clone()).unwrap(),
            _ => RestartPolicy::default(),
        };
        let make = || Session::new(intent.clone(), "/p", Limits::default(), policy.clone());
        let (Ok(mut told), Ok(mut quiet)) = (make(), make()) else {
            continue; // refused: nothing is folded
        };
        for step in case["steps"].as_array().expect("steps") {
            let (kind, input) = step.as_object().and_then(|o| o.iter().next()).unwrap();
            let text = input.to_string();
            match kind.as_str() {
                "initialized" => {
                    assert_eq!(told.initialized(&text), quiet.initialized(&text), "{name}");
                }
                "update" => {
                    let routed = told.update(&text);
                    let folded = quiet.fold_update(&text);
                    // Taken (shown, folded, held) or not (ignored), alike.
                    assert_eq!(
                        routed.map(|r| !matches!(r, Routed::Ignored)).ok(),
                        folded.ok(),
                        "{name}"
                    );
                }
                "opened" => assert_eq!(told.opened(&text), quiet.opened(&text), "{name}"),
                "openFailed" => {
                    let (code, message) = (
                        input["code"].as_i64().unwrap(),
                        input["message"].as_str().unwrap(),
                    );
                    assert_eq!(
                        told.open_failed(code, message),
                        quiet.open_failed(code, message),
                        "{name}"
                    );
                }
                "agentEnded" => {
                    let now = Duration::from_millis(input["atMs"].as_u64().unwrap());
                    let why = input["why"].as_str().unwrap();
                    assert_eq!(
                        told.agent_ended(now, why),
                        quiet.agent_ended(now, why),
                        "{name}"
                    );
                }
                "beginTurn" => {
                    let prompt = vec![Block::text(input.as_str().unwrap())];
                    told.thread_mut().begin_turn(prompt.clone());
                    quiet.thread_mut().begin_turn(prompt);
                }
                "endTurn" => {
                    told.thread_mut().end_turn(input.as_str().unwrap());
                    quiet.thread_mut().end_turn(input.as_str().unwrap());
                }
                other => panic!("unknown step {other}"),
            }
            let (d1, d2) = (
                serde_json::to_string(&told.thread_mut().take_delta()).unwrap(),
                serde_json::to_string(&quiet.thread_mut().take_delta()).unwrap(),
            );
            assert_eq!(d1, d2, "{name}: the same delta after {step}");
        }
        assert_eq!(told.thread().to_json(), quiet.thread().to_json(), "{name}");
        assert_eq!(told.session_id(), quiet.session_id(), "{name}");
        assert_eq!(told.is_open(), quiet.is_open(), "{name}");
        assert_eq!(told.title(), quiet.title(), "{name}");
    }
}
