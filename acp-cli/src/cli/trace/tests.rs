//! `acp trace`'s index, queries and server checks. The vectors of `trace-viewer/test/vectors/`
//! (NAME.trace, NAME.json) are replayed here and by `trace-viewer/test/model.test.mjs`, so the
//! Rust and JavaScript models give the same answers; `TRACE_VECTORS_WRITE=1` rewrites the
//! expected answers from this implementation (review the diff).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::detail::message_of;
use super::index::{flags, Index, MAX_ROWS, NONE};
use super::line::Kind;
use super::query::{self, Filter};
use super::server::Server;
use super::state::Shared;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../trace-viewer/test/vectors")
}

fn index_of(bytes: &[u8], options: &Value) -> Index {
    let max_line = options["maxLine"]
        .as_u64()
        .map_or(super::index::MAX_LINE, |n| n as usize);
    let max_rows = options["maxRows"].as_u64().map_or(1 << 20, |n| n as usize);
    let mut index = Index::new(max_line, max_rows);
    index.feed(bytes);
    index
}

fn filter_of(v: &Value) -> Filter {
    Filter {
        method: v["method"].as_str().map(str::to_string),
        session: v["session"].as_str().map(str::to_string),
        turn: v["turn"].as_u64().map(|t| t as u32),
        errors: v["errors"].as_bool().unwrap_or(false),
        min_ms: v["minMs"].as_f64(),
        q: v["q"].as_str().map(str::to_string),
        group: v["group"].as_bool().unwrap_or(false),
    }
}

/// Rows matching `q` in `bytes` (what `Shared::search` finds in the file).
fn found(index: &Index, bytes: &[u8], q: &str) -> query::Bits {
    let mut bits = query::Bits::default();
    let needle = q.to_ascii_lowercase();
    for (n, row) in index.rows.iter().enumerate() {
        let line = &bytes[row.offset as usize..(row.offset + row.len as u64) as usize];
        if line
            .to_ascii_lowercase()
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            bits.set(n);
        }
    }
    bits
}

fn line_of<'a>(bytes: &'a [u8], index: &Index, n: usize) -> std::borrow::Cow<'a, str> {
    let row = &index.rows[n];
    String::from_utf8_lossy(&bytes[row.offset as usize..(row.offset + row.len as u64) as usize])
}

/// Everything a vector checks, computed from `bytes`.
fn answers(bytes: &[u8], spec: &Value) -> Value {
    let options = &spec["options"];
    let index = index_of(bytes, options);
    let status = json!({
        "fed": index.fed(),
        "readTo": index.read_to,
        "lines": index.lines,
        "rows": index.rows.len(),
        "turns": index.turns.len(),
        "malformed": index.malformed,
        "firstMalformed": index.first_malformed,
        "incomplete": index.incomplete().map(|(offset, bytes)| json!({"offset": offset, "bytes": bytes})),
        "capped": index.capped.map(|c| json!({"line": c.line, "offset": c.offset, "maxRows": index.max_rows()})),
        "lanes": index.lane_order().iter().map(|&l| index.lanes[l as usize].clone()).collect::<Vec<_>>(),
        "methods": index.methods.all().map(|(_, m)| m).collect::<Vec<_>>(),
        "sessions": index.sessions.all().map(|(_, m)| m).collect::<Vec<_>>(),
    });
    let rows: Vec<Value> = (0..index.rows.len())
        .map(|n| {
            let row = &index.rows[n];
            let preview = (!row.has(flags::CUT))
                .then(|| query::line_preview(&line_of(bytes, &index, n), row.entry))
                .flatten();
            query::row_json(&index, n as u32, 1, preview)
        })
        .collect();
    let messages: Vec<Value> = (0..index.rows.len())
        .filter(|&n| !index.rows[n].has(flags::CUT))
        .map(|n| {
            let line = line_of(bytes, &index, n);
            let m = message_of(&line, index.rows[n].entry);
            json!({"n": n, "json": m.json, "text": m.text})
        })
        .collect();
    let queries: Vec<Value> = spec["queries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            let f = filter_of(&q["filter"]);
            let bits = f.q.as_deref().map(|s| found(&index, bytes, s));
            let items = query::select(&index, &f, bits.as_ref());
            json!({"filter": q["filter"], "items": items.iter().map(|i| json!([i.row, i.count])).collect::<Vec<_>>()})
        })
        .collect();
    let locate: Vec<Value> = spec["locate"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let f = filter_of(&l["filter"]);
            let items = query::select(&index, &f, None);
            let n = l["n"].as_u64().unwrap_or(0) as u32;
            json!({"filter": l["filter"], "n": n, "index": query::locate(&items, n)})
        })
        .collect();
    let turns: Vec<Value> = index
        .sessions
        .all()
        .map(|(_, s)| json!({"session": s, "turns": query::turns(&index, s, 10_000)["turns"]}))
        .collect();
    json!({
        "options": spec["options"],
        "status": status,
        "turns": turns,
        "rows": rows,
        "summary": query::summary(&index),
        "queries": queries,
        "locate": locate,
        "messages": messages,
    })
}

/// Compares JSON with numbers equal within 1e-9 (float noise of either side).
fn same(a: &Value, b: &Value, at: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            if (x - y).abs() <= 1e-9 {
                Ok(())
            } else {
                Err(format!("{at}: {x} != {y}"))
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Err(format!("{at}: {} items != {}", x.len(), y.len()));
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                same(p, q, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                same(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{at}.{k}"),
                )?;
            }
            Ok(())
        }
        _ if a == b => Ok(()),
        _ => Err(format!("{at}: {a} != {b}")),
    }
}

#[test]
fn the_vectors_give_their_answers() {
    let write = std::env::var_os("TRACE_VECTORS_WRITE").is_some();
    let mut seen = 0;
    for entry in std::fs::read_dir(vectors_dir()).expect("the vectors") {
        let path = entry.expect("a vector").path();
        if path.extension().and_then(|e| e.to_str()) != Some("trace") {
            continue;
        }
        seen += 1;
        let bytes = std::fs::read(&path).expect("the trace");
        let json_path = path.with_extension("json");
        let spec: Value = serde_json::from_slice(&std::fs::read(&json_path).expect("its answers"))
            .expect("answers are JSON");
        let got = answers(&bytes, &spec);
        if write {
            let text = serde_json::to_string_pretty(&got).expect("JSON") + "\n";
            std::fs::write(&json_path, text).expect("written");
            continue;
        }
        if let Err(e) = same(&got, &spec, &path.display().to_string()) {
            panic!("{e}");
        }
    }
    assert!(
        seen >= 3,
        "the vectors were not found in {}",
        vectors_dir().display()
    );
}

/// Rows as a comparable list, for the split feeds.
fn shape(index: &Index) -> Vec<String> {
    index.rows.iter().map(|r| format!("{r:?}")).collect()
}

#[test]
fn bytes_fed_in_any_pieces_give_the_same_index() {
    for name in ["formats", "cut", "capped", "v2-midway"] {
        let path = vectors_dir().join(format!("{name}.trace"));
        let bytes = std::fs::read(&path).expect("the trace");
        let spec: Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
        let whole = index_of(&bytes, &spec["options"]);
        for split in 0..=bytes.len() {
            let mut index = index_of(&[], &spec["options"]);
            index.feed(&bytes[..split]);
            if index.capped.is_none() {
                assert_eq!(index.fed(), split as u64, "{name} fed at {split}");
            }
            index.feed(&bytes[split..]);
            assert_eq!(shape(&index), shape(&whole), "{name} split at {split}");
            assert_eq!(
                index.incomplete(),
                whole.incomplete(),
                "{name} split at {split}"
            );
        }
    }
}

#[test]
fn requests_pair_with_their_answers_and_turns_hold_their_messages() {
    let bytes = std::fs::read(vectors_dir().join("formats.trace")).unwrap();
    let index = index_of(&bytes, &Value::Null);
    let method = |n: usize| index.methods.get(index.rows[n].method);
    // initialize (row 0) is answered by row 1, 1.5 ms later.
    assert_eq!(index.rows[0].pair, 1);
    assert_eq!(index.duration(0), Some(1.5));
    assert_eq!(method(1), Some("initialize"));
    // session/new's answer names the session it made.
    assert_eq!(index.sessions.get(index.rows[3].session), Some("s-1"));
    // The agent's request id 0 (a permission) pairs with the client's answer id 0, not
    // with initialize's: ids pair per direction.
    assert_eq!(method(7), Some("session/request_permission"));
    assert_eq!(index.rows[7].pair, 8);
    assert_eq!(index.duration(8), Some(7.0));
    // fs/read_text_file answered with an error: both rows flagged, the error code kept.
    assert!(index.rows[9].has(flags::ERROR) && index.rows[10].has(flags::ERROR));
    assert_eq!(index.subs.get(index.rows[10].sub), Some("-32002"));
    // Turn 1 (rows 4..=12) ends with end_turn; turn 2 is cancelled.
    assert_eq!(index.turns[0].n, 1);
    assert_eq!((index.turns[0].start, index.turns[0].end), (4, 12));
    assert_eq!(index.subs.get(index.turns[0].stop), Some("end_turn"));
    for n in 5..=12 {
        assert_eq!(index.rows[n].turn, 0, "row {n}");
    }
    assert_eq!(index.turns[1].n, 2);
    assert_eq!(index.subs.get(index.turns[1].stop), Some("cancelled"));
    for n in [15, 16, 17] {
        assert!(
            index.rows[n].has(flags::CANCEL),
            "row {n} is a cancellation"
        );
    }
    // The third prompt is never answered.
    assert_eq!(index.turns[2].end, NONE);
    assert_eq!(index.rows[21].pair, NONE);
    // An answer to no request stays alone; invalid and malformed lines are errors.
    assert_eq!(index.rows[20].pair, NONE);
    assert_eq!(index.rows[18].kind(), Kind::Invalid);
    assert_eq!(index.rows[22].kind(), Kind::Malformed);
    assert_eq!(index.malformed, 2);
}

#[test]
fn a_line_longer_than_the_limit_is_read_from_its_start_in_bounded_memory() {
    let mut index = Index::new(1024, MAX_ROWS);
    let head = br#"{"tMs":5,"dir":"recv","kind":"request","id":3,"method":"fs/write_text_file","msg":{"jsonrpc":"2.0","id":3,"method":"fs/write_text_file","params":{"content":""#;
    index.feed(head);
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..16 {
        index.feed(&chunk);
        assert!(
            index.tail_capacity() <= 64 << 10,
            "the incomplete line's buffer stays bounded"
        );
    }
    index.feed(b"\"}}}\n");
    assert_eq!(index.rows.len(), 1);
    let row = index.rows[0];
    assert!(row.has(flags::CUT));
    assert_eq!(row.kind(), Kind::Request);
    assert_eq!(index.methods.get(row.method), Some("fs/write_text_file"));
    assert_eq!(row.len as usize, head.len() + (16 << 20) + 4);
}

#[test]
fn the_row_limit_stops_reading_and_says_where() {
    let bytes = std::fs::read(vectors_dir().join("capped.trace")).unwrap();
    let index = index_of(&bytes, &json!({"maxRows": 5}));
    assert_eq!(index.rows.len(), 3);
    let stop = index.capped.expect("capped");
    assert_eq!(stop.line, 5);
    assert_eq!(index.read_to, stop.offset);
}

fn shared_with(text: &str) -> (tempdir::Dir, std::sync::Arc<Shared>) {
    let dir = tempdir::Dir::new();
    let path = dir.path.join("t.ndjson");
    std::fs::write(&path, text).unwrap();
    let shared = Shared::open(path, Index::default()).unwrap();
    while shared.step().unwrap() {}
    (dir, shared)
}

mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new() -> Dir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let path =
                std::env::temp_dir().join(format!("acp-trace-test-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[test]
fn a_growing_file_is_followed_and_a_replaced_one_read_again() {
    let first = r#"{"tMs":1,"dir":"send","kind":"request","id":1,"method":"session/new","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}}"#;
    let (dir, shared) = shared_with(&format!("{first}\n{{\"tMs\":2,\"dir\":\"recv\""));
    {
        let s = shared.read();
        assert_eq!(s.index.rows.len(), 1);
        assert!(s.index.incomplete().is_some(), "the half line waits");
    }
    let path = dir.path.join("t.ndjson");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    use std::io::Write;
    write!(f, r#","kind":"response","id":1,"msg":{{"jsonrpc":"2.0","id":1,"result":{{"sessionId":"x"}}}}}}"#).unwrap();
    writeln!(f).unwrap();
    while shared.step().unwrap() {}
    {
        let s = shared.read();
        assert_eq!(s.index.rows.len(), 2);
        assert_eq!(s.index.duration(0), Some(1.0));
        assert_eq!(s.generation, 0);
    }
    // Shorter than what was read: read again from the start.
    std::fs::write(&path, format!("{first}\n")).unwrap();
    while shared.step().unwrap() {}
    let s = shared.read();
    assert_eq!(s.generation, 1);
    assert_eq!(s.index.rows.len(), 1);
    assert!(s.restarted.is_some());
}

#[test]
fn search_finds_text_in_lines_without_holding_them() {
    let bytes = std::fs::read(vectors_dir().join("formats.trace")).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let (_dir, shared) = shared_with(&text);
    let bits = shared.search("resource NOT found").unwrap();
    let index = index_of(&bytes, &Value::Null);
    let expected = found(&index, &bytes, "resource not found");
    for n in 0..index.rows.len() {
        assert_eq!(bits.get(n), expected.get(n), "row {n}");
    }
    assert!(bits.get(10));
    // A line longer than a read block is searched in overlapping pieces.
    let long = format!(
        "{{\"tMs\":1,\"dir\":\"recv\",\"kind\":\"notification\",\"method\":\"m\",\"msg\":{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{{\"t\":\"{}NEEDLE\"}}}}}}\n",
        "a".repeat(super::search::BLOCK - 3)
    );
    let (_dir, shared) = shared_with(&long);
    assert!(shared.search("needle").unwrap().get(0));
}

fn request(
    host: &str,
    origin: Option<&str>,
    site: Option<&str>,
    auth: Option<&str>,
) -> hyper::Request<()> {
    let mut b = hyper::Request::builder()
        .uri("/api/status")
        .header("host", host);
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    if let Some(s) = site {
        b = b.header("sec-fetch-site", s);
    }
    if let Some(a) = auth {
        b = b.header("authorization", a);
    }
    b.body(()).unwrap()
}

#[test]
fn only_this_servers_own_page_with_the_token_may_use_the_api() {
    let (_dir, shared) = shared_with("");
    let server = Server {
        shared,
        token: "t".repeat(64),
        port: 4321,
    };
    let bearer = format!("Bearer {}", "t".repeat(64));
    let ok = |h, o, s, a| {
        server
            .check(&request(h, o, s, a), true)
            .map_err(|e| e.0.as_u16())
    };
    assert_eq!(ok("127.0.0.1:4321", None, None, Some(&bearer)), Ok(()));
    assert_eq!(
        ok(
            "localhost:4321",
            Some("http://localhost:4321"),
            Some("same-origin"),
            Some(&bearer)
        ),
        Ok(())
    );
    // DNS rebinding: another name, or this server's address on another port.
    assert_eq!(ok("evil.example:4321", None, None, Some(&bearer)), Err(421));
    assert_eq!(ok("127.0.0.1:80", None, None, Some(&bearer)), Err(421));
    // Another page, even a local one.
    assert_eq!(
        ok(
            "127.0.0.1:4321",
            Some("http://localhost:3000"),
            None,
            Some(&bearer)
        ),
        Err(403)
    );
    assert_eq!(
        ok("127.0.0.1:4321", Some("null"), None, Some(&bearer)),
        Err(403)
    );
    assert_eq!(
        ok("127.0.0.1:4321", None, Some("cross-site"), Some(&bearer)),
        Err(403)
    );
    assert_eq!(
        ok("127.0.0.1:4321", None, Some("same-site"), Some(&bearer)),
        Err(403)
    );
    // The token.
    assert_eq!(ok("127.0.0.1:4321", None, None, None), Err(401));
    assert_eq!(
        ok("127.0.0.1:4321", None, None, Some("Bearer nope")),
        Err(401)
    );
    // The page itself needs no token, but the same Host and Origin rules.
    assert_eq!(
        server.check(&request("127.0.0.1:4321", None, Some("none"), None), false),
        Ok(())
    );
    assert!(server
        .check(&request("evil.example:4321", None, None, None), false)
        .is_err());
}

#[test]
fn the_api_answers_pages_messages_and_bad_requests() {
    let bytes = std::fs::read(vectors_dir().join("formats.trace")).unwrap();
    let (_dir, shared) = shared_with(&String::from_utf8(bytes).unwrap());
    let server = Server {
        shared,
        token: "t".repeat(64),
        port: 1,
    };
    let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let page = server
        .api(
            "/api/rows",
            &q(&[("from", "4"), ("count", "3"), ("group", "1")]),
        )
        .unwrap();
    assert_eq!(page["items"][0]["method"], "session/prompt");
    assert_eq!(page["items"][1]["count"], 2, "two chunks grouped");
    assert_eq!(page["items"][1]["preview"], "Hi");
    let m = server.api("/api/message", &q(&[("n", "18")])).unwrap();
    assert_eq!(m["json"], false);
    assert_eq!(m["text"], "hello, I am not JSON <script>alert(1)</script>");
    let m = server.api("/api/message", &q(&[("n", "0")])).unwrap();
    assert_eq!(m["pair"]["n"], 1);
    assert!(m["text"].as_str().unwrap().starts_with("{\"jsonrpc\""));
    let bad = server
        .api("/api/rows", &q(&[("minMs", "soon")]))
        .unwrap_err();
    assert_eq!(bad.0.as_u16(), 400);
    assert!(bad.1.contains("minMs"), "{}", bad.1);
    assert_eq!(
        server
            .api("/api/message", &q(&[("n", "9999")]))
            .unwrap_err()
            .0
            .as_u16(),
        404
    );
    let at = server
        .api("/api/locate", &q(&[("n", "6"), ("group", "1")]))
        .unwrap();
    assert_eq!(at["index"], 5);
}

#[test]
fn filters_are_read_from_the_query() {
    let f = Filter::from_pairs(
        [
            ("method", "a/b"),
            ("errors", "1"),
            ("minMs", "2.5"),
            ("q", ""),
            ("group", "0"),
            ("turn", "3"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string())),
    )
    .unwrap();
    assert_eq!(f.method.as_deref(), Some("a/b"));
    assert!(f.errors && !f.group);
    assert_eq!(f.min_ms, Some(2.5));
    assert_eq!(f.q, None, "an empty search is none");
    assert_eq!(f.turn, Some(3));
    assert!(Filter::from_pairs([("turn", "x".to_string())].into_iter()).is_err());
}

/// The turns of a trace given as the extension's lines: (stop reason, the line that ended it).
fn turns_of(lines: &[&str]) -> Vec<(Option<String>, Option<u32>)> {
    let mut index = Index::new(super::index::MAX_LINE, 1 << 20);
    index.feed((lines.join("\n") + "\n").as_bytes());
    index
        .turns
        .iter()
        .map(|t| {
            (
                index.subs.get(t.stop).map(str::to_string),
                index.rows.get(t.end as usize).map(|r| r.line),
            )
        })
        .collect()
}

#[test]
fn a_v2_turn_ends_at_its_idle_state_update_on_its_connection_only() {
    let init = |v: u32| {
        [
            r#"→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#
                .to_string(),
            format!(r#"← {{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":{v}}}}}"#),
        ]
    };
    let prompt = r#"→ {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#;
    let ack = r#"← {"jsonrpc":"2.0","id":1,"result":{"messageId":"u1"}}"#;
    let idle = r#"← {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#;

    // v2 settled by initialize: the acknowledgement leaves the turn open, the idle ends it.
    let [a, b] = init(2);
    assert_eq!(
        turns_of(&[&a, &b, prompt, ack, idle]),
        [(Some("end_turn".into()), Some(5))]
    );
    assert_eq!(turns_of(&[&a, &b, prompt, ack]), [(None, None)]);

    // v1 settled by initialize: a state_update (v1 has none) ends nothing; the answer does.
    let [a, b] = init(1);
    assert_eq!(turns_of(&[&a, &b, prompt, idle]), [(None, None)]);
    assert_eq!(
        turns_of(&[&a, &b, prompt, ack]),
        [(None, Some(4))],
        "v1: the answer ends the turn, without a stop reason"
    );

    // The agent restarted (a new initialize): the new connection's idle (a resume's replayed
    // state) does not end the turn the old connection left open.
    let [a, b] = init(2);
    assert_eq!(
        turns_of(&[&a, &b, prompt, ack, &a, &b, idle]),
        [(None, None)]
    );

    // The idle must come back the prompt's way: the client's own state_update ends nothing.
    let sent_idle = idle.replacen('←', "→", 1);
    assert_eq!(turns_of(&[&a, &b, prompt, &sent_idle]), [(None, None)]);
}

#[test]
fn v2_turns_waiting_for_their_idle_are_bounded() {
    // A hostile trace: prompts never ended, in 30,000 sessions on each of three connections
    // (the conductor's lanes): 90,000 (lanes, session) keys, more than are waited for.
    let mut index = Index::new(super::index::MAX_LINE, 1 << 20);
    let mut text = String::new();
    for from in ["Client", "Proxy(0)", "Proxy(1)"] {
        for i in 0..30_000 {
            text.push_str(&format!(
                r#"{{"type":"request","ts":0,"from":"{from}","to":"Agent","id":{i},"method":"session/prompt","params":{{"sessionId":"s{i}","prompt":[]}}}}"#
            ));
            text.push('\n');
        }
    }
    index.feed(text.as_bytes());
    assert_eq!(index.turns.len(), 90_000);
    assert_eq!(index.awaiting(), super::index::MAX_PENDING);
}
