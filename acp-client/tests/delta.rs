//! A view that starts empty and applies every `Thread::take_delta` (entries set whole, the text
//! `appended` added to its block, entries before `firstEntry` dropped) holds the thread's
//! entries: on every row of `tests/client/thread.json`, with a delta taken after every step,
//! every other step or only at the end, and with a byte limit small enough to drop and trim.
//! A message streamed chunk by chunk comes as its new text only.

use std::collections::BTreeMap;

use acp_client::thread::{Block, Limits, Thread};
use serde_json::Value;

fn cases(file: &str) -> Vec<Value> {
    let path = format!("{}/../tests/client/{file}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).unwrap();
    v["cases"].as_array().expect("cases").clone()
}

/// The entries a view holds, by number.
#[derive(Default)]
struct View(BTreeMap<u64, Value>);

impl View {
    fn apply(&mut self, t: &mut Thread) {
        let delta: Value =
            serde_json::from_str(&serde_json::to_string(&t.take_delta()).unwrap()).unwrap();
        let first = delta["firstEntry"].as_u64().unwrap();
        self.0.retain(|n, _| *n >= first);
        for e in delta["entries"].as_array().unwrap() {
            self.0.insert(e[0].as_u64().unwrap(), e[1].clone());
        }
        for a in delta
            .get("appended")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (n, b, text) = (
                a[0].as_u64().unwrap(),
                a[1].as_u64().unwrap(),
                a[2].as_str().unwrap(),
            );
            let entry = self
                .0
                .get_mut(&n)
                .expect("appended to an entry the view has");
            let block = &mut entry["content"][b as usize];
            assert_eq!(block["type"], "text");
            let old = block["text"].as_str().unwrap_or("").to_string();
            block["text"] = Value::String(old + text);
        }
    }

    fn check(&self, t: &Thread, what: &str) {
        let saved: Value = serde_json::from_str(&t.to_json()).unwrap();
        let first = saved["droppedEntries"].as_u64().unwrap_or(0);
        let want: BTreeMap<u64, Value> = saved["entries"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, e)| (first + i as u64, e.clone()))
            .collect();
        assert_eq!(self.0, want, "{what}");
    }
}

fn step(t: &mut Thread, step: &Value) {
    if let Some(u) = step.get("update") {
        let _ = t.apply_json(&u.to_string());
    } else if let Some(p) = step.get("beginTurn") {
        t.begin_turn(serde_json::from_value::<Vec<Block>>(p.clone()).unwrap());
    } else if let Some(r) = step.get("endTurn") {
        t.end_turn(r.as_str().unwrap());
    } else if let Some(m) = step.get("failTurn") {
        t.fail_turn(m.as_str().unwrap());
    }
}

#[test]
fn a_view_rebuilt_from_deltas_holds_the_threads_entries() {
    for case in cases("thread.json") {
        let name = case["name"].as_str().unwrap();
        for max_bytes in [Limits::default().max_bytes, 64] {
            for every in [1, 2, usize::MAX] {
                let mut t = Thread::new(Limits { max_bytes });
                let mut view = View::default();
                let steps = case["steps"].as_array().expect("steps");
                for (i, s) in steps.iter().enumerate() {
                    step(&mut t, s);
                    if (i + 1) % every.min(steps.len()) == 0 {
                        view.apply(&mut t);
                        view.check(
                            &t,
                            &format!(
                                "{name} (limit {max_bytes}, a delta every {every} steps) after {s}"
                            ),
                        );
                    }
                }
                view.apply(&mut t);
                view.check(
                    &t,
                    &format!("{name} (limit {max_bytes}, a delta every {every} steps)"),
                );
            }
        }
    }
}

fn chunk(kind: &str, text: &str) -> String {
    serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": kind,
        "content": {"type": "text", "text": text}}})
    .to_string()
}

#[test]
fn a_streamed_message_comes_as_its_new_text() {
    let mut t = Thread::default();
    let mut view = View::default();
    t.begin_turn(vec![Block::text("go")]);
    t.apply_json(&chunk("agent_message_chunk", "Hel")).unwrap();
    view.apply(&mut t);
    for w in ["lo", ", ", "world"] {
        t.apply_json(&chunk("agent_message_chunk", w)).unwrap();
    }
    let d = serde_json::to_string(&t.take_delta()).unwrap();
    assert_eq!(
        d,
        r#"{"entries":[],"appended":[[1,0,"lo, world"]],"firstEntry":0}"#
    );
    // A thought starts another entry: sent whole; the message that grew before it, only its text.
    t.apply_json(&chunk("agent_message_chunk", "!")).unwrap();
    t.apply_json(&chunk("agent_thought_chunk", "hm")).unwrap();
    let d = serde_json::to_string(&t.take_delta()).unwrap();
    assert_eq!(
        d,
        r#"{"entries":[[2,{"type":"thought","content":[{"type":"text","text":"hm"}]}]],"appended":[[1,0,"!"]],"firstEntry":0}"#
    );
    // A thought the view has grows: only its new text.
    let mut t = Thread::default();
    t.apply_json(&chunk("agent_message_chunk", "a")).unwrap();
    t.apply_json(&chunk("agent_thought_chunk", "b")).unwrap();
    t.take_delta();
    let mut view = View::default();
    view.0.insert(
        0,
        serde_json::json!({"type": "agent", "content": [{"type": "text", "text": "a"}]}),
    );
    view.0.insert(
        1,
        serde_json::json!({"type": "thought", "content": [{"type": "text", "text": "b"}]}),
    );
    let thought = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"c"}}}"#;
    t.apply_json(thought).unwrap();
    let d = serde_json::to_string(&t.take_delta()).unwrap();
    assert_eq!(d, r#"{"entries":[],"appended":[[1,0,"c"]],"firstEntry":0}"#);
    view.0.get_mut(&1).unwrap()["content"][0]["text"] = "bc".into();
    view.check(&t, "appended to the thought");
}
