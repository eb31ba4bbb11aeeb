//! Replays the language-neutral conformance vectors in `tests/vectors/*.transcript` (format:
//! `tests/vectors/README.md`). The wasm build replays the same files with a JS twin of this
//! runner (`acp-wasm/tests/`), so the parsing here stays small and obvious.
//!
//! Every vector is replayed twice: with its feeds as written, and with every feed split into
//! single bytes. Both must pass. Every event is rendered both ways (`Event::to_json` and the
//! text of `Event::write_json`, which the wasm build uses); they must agree.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use acp_core::{BatchPolicy, Config, Connection, ErrorObject, RequestOptions, Role};
use serde_json::{json, Value};

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

/// Replays one transcript. `Err` says where and why it diverged.
fn check(transcript: &str, bytewise: bool) -> Result<(), String> {
    let mut r: Option<Runner> = None;
    for (n, raw_line) in transcript.lines().enumerate() {
        let at = n + 1;
        let line = raw_line.strip_suffix('\r').unwrap_or(raw_line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (tag, arg) = match line.find(' ') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, ""),
        };
        let pending = r.as_ref().map(Runner::pending).unwrap_or_default();
        let fail = |why: String| format!("line {at}: {why}\n  {line}{pending}");
        if tag == "=" {
            if r.is_some() {
                return Err(fail("a second header".into()));
            }
            r = Some(Runner::new(&parse(arg).map_err(fail)?).map_err(fail)?);
            continue;
        }
        let r = r
            .as_mut()
            .ok_or_else(|| fail("no `=` header before".into()))?;
        match tag {
            "<" => {
                let want = parse(arg).map_err(fail)?;
                match r.tx.pop_front() {
                    Some(got) if json_eq(&got, &want) => {}
                    got => return Err(fail(format!("transmitted {}", show(got)))),
                }
            }
            "!" => {
                let want = parse(arg).map_err(fail)?;
                match r.ev.pop_front() {
                    Some(got) if json_eq(&got, &want) => {}
                    got => return Err(fail(format!("event {}", show(got)))),
                }
            }
            _ => {
                r.expect_drained().map_err(fail)?;
                match tag {
                    ">" => r.feed(format!("{arg}\n").as_bytes(), bytewise),
                    ">>" => r.feed(&unescape(arg).map_err(fail)?, bytewise),
                    "@" => {
                        let t: u64 = arg.parse().map_err(|e| fail(format!("time: {e}")))?;
                        if t < r.now {
                            return Err(fail("time goes backwards".into()));
                        }
                        r.now = t;
                        r.conn.handle_timeout(t);
                    }
                    "$" => r.command(&parse(arg).map_err(fail)?).map_err(fail)?,
                    "?" => r.state(&parse(arg).map_err(fail)?).map_err(fail)?,
                    _ => return Err(fail(format!("unknown tag {tag:?}"))),
                }
                r.drain().map_err(fail)?;
            }
        }
    }
    let r = r.ok_or("no `=` header")?;
    r.expect_drained().map_err(|e| format!("at the end: {e}"))
}

struct Runner {
    conn: Connection,
    now: u64,
    /// Transmitted bytes not yet split into lines.
    out: Vec<u8>,
    /// Transmitted lines (parsed) and events (`Event::to_json`) not yet expected.
    tx: VecDeque<Value>,
    ev: VecDeque<Value>,
}

impl Runner {
    fn new(header: &Value) -> Result<Runner, String> {
        let h = header.as_object().ok_or("the header is not an object")?;
        let role = match h.get("role").and_then(Value::as_str) {
            Some("client") => Role::Client,
            Some("agent") => Role::Agent,
            _ => return Err("role must be \"client\" or \"agent\"".into()),
        };
        let mut c = Config::new(role);
        for (k, v) in h {
            let ms = || v.as_u64().ok_or(format!("{k} must be an integer"));
            match k.as_str() {
                "role" => {}
                "maxMessageBytes" => c.max_message_bytes = ms()? as usize,
                "requestTimeoutMs" => c.default_request_timeout = Some(ms()?),
                "incomingTimeoutMs" => c.incoming_request_timeout = Some(ms()?),
                "permissionTimeoutMs" => c.permission_timeout = Some(ms()?),
                "maxIncomingInFlight" => c.max_incoming_in_flight = ms()? as usize,
                "enforceCapabilities" => c.enforce_capabilities = v.as_bool().ok_or(k.clone())?,
                "batchPolicy" => {
                    c.batch_policy = match v.as_str() {
                        Some("seed") => BatchPolicy::Seed,
                        Some("rejectAll") => BatchPolicy::RejectAll,
                        _ => return Err("batchPolicy must be \"seed\" or \"rejectAll\"".into()),
                    }
                }
                other => return Err(format!("unknown header key {other:?}")),
            }
        }
        Ok(Runner {
            conn: Connection::new(c),
            now: 0,
            out: Vec::new(),
            tx: VecDeque::new(),
            ev: VecDeque::new(),
        })
    }

    fn feed(&mut self, bytes: &[u8], bytewise: bool) {
        if bytewise {
            for b in bytes {
                self.conn.handle_bytes(std::slice::from_ref(b), self.now);
            }
        } else {
            self.conn.handle_bytes(bytes, self.now);
        }
    }

    /// Runs one `$` command; `returns` / `throws` in the command are checked.
    fn command(&mut self, c: &Value) -> Result<(), String> {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        let n = |k: &str| {
            c.get(k)
                .and_then(Value::as_u64)
                .ok_or(format!("{k} missing"))
        };
        let params = c.get("params").filter(|p| !p.is_null());
        let outcome: Result<Value, acp_core::Error> = match s("cmd") {
            "sendRequest" => {
                let opts = RequestOptions {
                    timeout: c.get("timeoutMs").and_then(Value::as_u64),
                    data: (),
                };
                self.conn
                    .send_request(s("method"), params, opts, self.now)
                    .map(|id| json!(id))
            }
            "notify" => self.conn.notify(s("method"), params).map(|()| Value::Null),
            "respond" => {
                let result = c.get("result").unwrap_or(&Value::Null);
                self.conn.respond(n("token")?, result).map(|()| Value::Null)
            }
            "respondError" => {
                let e = ErrorObject {
                    code: c
                        .get("code")
                        .and_then(Value::as_i64)
                        .ok_or("code missing")?,
                    message: s("message").to_owned(),
                    data: c.get("data").cloned(),
                };
                self.conn
                    .respond_error(n("token")?, e)
                    .map(|()| Value::Null)
            }
            "cancelRequest" => self.conn.cancel(n("requestId")?).map(|()| Value::Null),
            "close" => {
                self.conn.close(s("reason"));
                Ok(Value::Null)
            }
            "feedEof" => {
                self.conn.handle_eof(self.now);
                Ok(Value::Null)
            }
            other => return Err(format!("unknown command {other:?}")),
        };
        match (outcome, c.get("throws").and_then(Value::as_str)) {
            (Ok(v), None) => match c.get("returns") {
                Some(want) if !json_eq(&v, want) => Err(format!("returned {v}")),
                _ => Ok(()),
            },
            (Ok(v), Some(name)) => Err(format!("returned {v} instead of throwing {name}")),
            (Err(e), Some(name)) if e.name() == name => Ok(()),
            (Err(e), _) => Err(format!("threw {} ({e})", e.name())),
        }
    }

    /// `?` checks getters: `pendingOutgoing`, `pendingIncoming`, `isClosed`, `pollTimeout`.
    fn state(&mut self, want: &Value) -> Result<(), String> {
        let want = want.as_object().ok_or("`?` takes an object")?;
        for (k, v) in want {
            let got = match k.as_str() {
                "pendingOutgoing" => json!(self.conn.pending_outgoing()),
                "pendingIncoming" => json!(self.conn.pending_incoming()),
                "isClosed" => json!(self.conn.is_closed()),
                "pollTimeout" => json!(self.conn.poll_timeout()),
                other => return Err(format!("unknown getter {other:?}")),
            };
            if !json_eq(&got, v) {
                return Err(format!("{k} is {got}"));
            }
        }
        Ok(())
    }

    /// Drains the engine: transmitted bytes are split into lines (each must be JSON and end
    /// with a newline), events are rendered with `Event::to_json`.
    fn drain(&mut self) -> Result<(), String> {
        while let Some(bytes) = self.conn.poll_transmit() {
            self.out.extend_from_slice(&bytes);
        }
        while let Some(i) = self.out.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.out.drain(..=i).collect();
            let v = serde_json::from_slice(&line)
                .map_err(|e| format!("transmitted a line that is not JSON ({e}): {line:?}"))?;
            self.tx.push_back(v);
        }
        if !self.out.is_empty() {
            return Err(format!("transmitted an unterminated line: {:?}", self.out));
        }
        while let Some(e) = self.conn.poll_event() {
            // The text form, what the wasm build hands to JS (`to_json` is the same, parsed).
            let mut text = Vec::new();
            e.write_json(&mut text);
            let v: Value = serde_json::from_slice(&text)
                .map_err(|err| format!("Event::write_json wrote invalid JSON ({err}): {text:?}"))?;
            self.ev.push_back(v);
        }
        Ok(())
    }

    /// What is still queued, for failure messages.
    fn pending(&self) -> String {
        let tx = self.tx.iter().map(|v| format!("\n  queued: < {v}"));
        let ev = self.ev.iter().map(|v| format!("\n  queued: ! {v}"));
        tx.chain(ev).collect()
    }

    fn expect_drained(&self) -> Result<(), String> {
        if let Some(v) = self.tx.front() {
            return Err(format!("unexpected transmission: < {v}"));
        }
        if let Some(v) = self.ev.front() {
            return Err(format!("unexpected event: ! {v}"));
        }
        Ok(())
    }
}

fn parse(s: &str) -> Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("bad JSON in the vector: {e}"))
}

fn show(v: Option<Value>) -> String {
    v.map_or("nothing".into(), |v| v.to_string())
}

/// JSON equality, numbers compared by value (`1` equals `1.0`, as in JavaScript).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// `>>` payloads: the text as UTF-8, with `\n`, `\r`, `\t`, `\\` and `\xHH` escapes.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).map_err(|_| format!("bad \\x{hex}"))?);
            }
            other => return Err(format!("bad escape \\{other:?}")),
        }
    }
    Ok(out)
}

fn vector_files() -> Vec<PathBuf> {
    let dir = vectors_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "transcript"))
        .filter(|p| UNSTABLE || !is_unstable_vector(p))
        .filter(|p| V2 || !is_v2_vector(p))
        .collect();
    files.sort();
    files
}

/// `unstable-*.transcript` vectors need the feature `unstable` (the rules of the draft methods).
const UNSTABLE: bool = cfg!(feature = "unstable");

fn is_unstable_vector(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("unstable-"))
}

/// `v2-*.transcript` vectors need the feature `unstable_protocol_v2` (ACP v2's rules).
const V2: bool = cfg!(feature = "unstable_protocol_v2");

fn is_v2_vector(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("v2-"))
}

#[test]
fn v2_vectors_run_exactly_with_the_feature() {
    let n = vector_files().iter().filter(|p| is_v2_vector(p)).count();
    if V2 {
        assert!(n >= 5, "expected the v2-*.transcript vectors, found {n}");
    } else {
        assert_eq!(n, 0, "v2 vectors replayed without the feature");
    }
}

#[test]
fn unstable_vectors_run_exactly_with_the_feature() {
    let n = vector_files()
        .iter()
        .filter(|p| is_unstable_vector(p))
        .count();
    if UNSTABLE {
        assert!(
            n >= 3,
            "expected the unstable-*.transcript vectors, found {n}"
        );
    } else {
        assert_eq!(n, 0, "unstable vectors replayed without the feature");
    }
}

#[test]
fn every_vector_passes_as_written_and_byte_by_byte() {
    let files = vector_files();
    assert!(
        files.len() >= 20,
        "expected the vectors in {:?}",
        vectors_dir()
    );
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable vector");
        for bytewise in [false, true] {
            if let Err(e) = check(&text, bytewise) {
                let mode = if bytewise {
                    "byte by byte"
                } else {
                    "as written"
                };
                failures.push(format!("{} ({mode}): {e}", f.display()));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

/// The runner itself must be able to fail: each of these wrong vectors is refused.
#[test]
fn the_runner_refuses_wrong_vectors() {
    let ok = "= {\"role\":\"agent\"}\n> {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n! {\"type\":\"notification\",\"method\":\"n\"}\n";
    assert_eq!(check(ok, false), Ok(()));
    let wrong = [
        // an event nobody expected
        "= {\"role\":\"agent\"}\n> {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n",
        // a different event
        "= {\"role\":\"agent\"}\n> {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n! {\"type\":\"notification\",\"method\":\"m\"}\n",
        // a transmission that does not come
        "= {\"role\":\"agent\"}\n< {\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}\n",
        // an extra key
        "= {\"role\":\"agent\"}\n> {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n! {\"type\":\"notification\",\"method\":\"n\",\"params\":null}\n",
        // a command that should have thrown
        "= {\"role\":\"client\"}\n$ {\"cmd\":\"notify\",\"method\":\"x\",\"throws\":\"InvalidMethod\"}\n",
        // a getter with another value
        "= {\"role\":\"client\"}\n? {\"pendingOutgoing\":1}\n",
        // no header
        "> {}\n",
    ];
    for w in wrong {
        assert!(check(w, false).is_err(), "accepted:\n{w}");
    }
}

#[test]
fn json_eq_and_unescape() {
    assert!(json_eq(&json!({"a":[1, 2.0]}), &json!({"a":[1.0, 2]})));
    assert!(!json_eq(&json!({"a":1}), &json!({"a":1, "b":null})));
    assert!(!json_eq(&json!("1"), &json!(1)));
    assert_eq!(unescape(r"a\r\n\xff\\é").unwrap(), b"a\r\n\xff\\\xc3\xa9");
    assert!(unescape(r"\q").is_err());
}
