//! `acp demo-agent` over ACP v2 (feature `unstable_protocol_v2`): a client that asks for v2
//! gets it, and a prompt turn, a permission question, a cancel and `session/resume` with a
//! replay complete, checked by acp-core's client engine (any v2 rule the agent breaks is a
//! protocol error, which fails the test) and folded into acp-client's `Thread` as a face
//! shows them. A v1 client still gets the v1 agent from the same build.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use acp_client::thread::{Block, Entry, Thread, Turn};
use acp_core::{Config, Connection, Event, RequestOptions, Role, TurnState};
use serde_json::{json, Value};

/// A hang guard only: every wait is for an event; this bounds a broken agent's hang.
const HANG: Duration = Duration::from_secs(120);

struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    conn: Connection<()>,
    /// Where the updates go (`None`: not folded).
    thread: Thread,
    /// Answers seen, by request id.
    answers: Vec<(u64, Result<Value, String>)>,
    /// Update kinds seen, in order.
    kinds: Vec<String>,
    /// What to do with a permission question: `Some(option)` selects it, `None` cancels the
    /// turn instead.
    permission: Option<&'static str>,
    session: String,
}

impl Client {
    fn start() -> Client {
        Client::start_with(&[])
    }

    /// `acp demo-agent ARGS`.
    fn start_with(args: &[&std::ffi::OsStr]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_acp"))
            .arg("demo-agent")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("acp demo-agent starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
            conn: Connection::new(Config::new(Role::Client)),
            thread: Thread::default(),
            answers: Vec::new(),
            kinds: Vec::new(),
            permission: Some("allow"),
            session: String::new(),
        }
    }

    fn flush(&mut self) {
        while let Some(bytes) = self.conn.poll_transmit() {
            self.stdin.write_all(&bytes).unwrap();
        }
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self
            .conn
            .send_request(method, Some(&params), RequestOptions::with_data(()), 0)
            .unwrap();
        self.flush();
        id
    }

    /// Reads one line from the agent and handles what it caused.
    fn step(&mut self) {
        let line = self
            .lines
            .recv_timeout(HANG)
            .expect("the agent answers (or it hung)");
        self.conn.handle_bytes(format!("{line}\n").as_bytes(), 0);
        while let Some(ev) = self.conn.poll_event() {
            match ev {
                Event::Response { id, result, .. } => {
                    let r = result
                        .map(|r| serde_json::from_str(r.get()).unwrap())
                        .map_err(|e| e.to_string());
                    self.answers.push((id, r));
                }
                Event::Notification { method, params } => {
                    assert_eq!(method, "session/update");
                    let params = params.unwrap();
                    let v: Value = serde_json::from_str(params.get()).unwrap();
                    self.kinds
                        .push(v["update"]["sessionUpdate"].as_str().unwrap().to_string());
                    self.thread.apply_v2_json(params.get()).unwrap();
                }
                Event::Request { token, method, .. } => {
                    assert_eq!(method, "session/request_permission");
                    match self.permission {
                        Some(option) => self
                            .conn
                            .respond(
                                token,
                                &json!({"outcome": {"outcome": "selected", "optionId": option}}),
                            )
                            .unwrap(),
                        // The engine answers the question `cancelled` with the cancel.
                        None => self
                            .conn
                            .notify("session/cancel", Some(&json!({"sessionId": self.session})))
                            .unwrap(),
                    }
                }
                // The permission question answered `cancelled` by the cancel.
                Event::AutoAnswered { .. } => {}
                Event::ProtocolError(e) => panic!("the agent broke a rule: {e}"),
                other => panic!("unexpected event {other:?}"),
            }
        }
        self.flush();
    }

    fn answer(&mut self, id: u64) -> Result<Value, String> {
        loop {
            if let Some(i) = self.answers.iter().position(|(n, _)| *n == id) {
                return self.answers.remove(i).1;
            }
            self.step();
        }
    }

    /// A prompt turn until the engine and the thread both say it ended; the stop reason.
    fn turn(&mut self, text: &str) -> String {
        self.turn_raw(text).expect("a stop reason")
    }

    /// [`Client::turn`], the stop reason as the thread kept it (`None`: the agent gave none).
    fn turn_raw(&mut self, text: &str) -> Option<String> {
        self.thread.begin_turn(vec![Block::text(text)]);
        let id = self.request(
            "session/prompt",
            json!({"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}),
        );
        let ack = self.answer(id).expect("the prompt is accepted");
        self.thread.v2_prompt_accepted(&ack.to_string());
        self.until_idle();
        self.thread.last_stop.clone()
    }

    fn until_idle(&mut self) {
        while self.conn.turn_state(&self.session) != TurnState::Idle
            || self.thread.turn != Turn::Idle
        {
            self.step();
        }
    }

    /// `initialize` with v2 and a new session; its `session/new` answer.
    fn open(&mut self) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
        );
        assert_eq!(self.answer(init).unwrap()["protocolVersion"], 2);
        let new = self.request("session/new", json!({"cwd": "/tmp"}));
        let answer = self.answer(new).unwrap();
        self.session = answer["sessionId"].as_str().unwrap().to_string();
        answer
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The thread's entries as (kind, text or tool status).
fn shown(t: &Thread) -> Vec<(String, String)> {
    t.entries
        .iter()
        .map(|e| match e {
            Entry::User { content, .. } => ("user".into(), text(content)),
            Entry::Agent { content, .. } => ("agent".into(), text(content)),
            Entry::Thought { content, .. } => ("thought".into(), text(content)),
            Entry::Tool(c) => ("tool".into(), c.status.clone()),
            Entry::Notice { text, .. } => ("notice".into(), text.clone()),
        })
        .collect()
}

fn text(content: &[Block]) -> String {
    content.iter().filter_map(|b| b.text.clone()).collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn a_v2_client_gets_turns_permission_cancel_and_a_replayed_resume() {
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    );
    let answer = c.answer(init).unwrap();
    assert_eq!(answer["protocolVersion"], 2);
    assert_eq!(c.conn.protocol_version(), 2);
    let new = c.request("session/new", json!({"cwd": "/tmp"}));
    c.session = c.answer(new).unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // A turn with a permission question, allowed.
    assert_eq!(c.turn("hello"), "end_turn");
    assert_eq!(
        shown(&c.thread),
        [
            pair("user", "hello"),
            pair("tool", "completed"),
            pair("agent", "You said: hello. The write was allowed."),
        ]
    );

    // A turn cancelled while its permission question waits.
    c.permission = None;
    assert_eq!(c.turn("again"), "cancelled");
    assert_eq!(
        shown(&c.thread)[3..],
        [pair("user", "again"), pair("tool", "cancelled")]
    );

    // The session resumed with a replay into an empty thread: the conversation again.
    let live: Vec<_> = shown(&c.thread)
        .into_iter()
        .filter(|(k, _)| k != "tool")
        .collect();
    c.thread = Thread::default();
    c.kinds.clear();
    let resume = c.request(
        "session/resume",
        json!({"sessionId": c.session, "cwd": "/tmp", "replayFrom": {"type": "start"}}),
    );
    c.answer(resume).unwrap();
    assert_eq!(shown(&c.thread), live);
    let complete = c.kinds.iter().position(|k| k == "replay_complete");
    assert_eq!(
        complete,
        Some(c.kinds.len() - 2),
        "replay_complete, then the state: {:?}",
        c.kinds
    );

    // An unsupported cursor is refused.
    let bad = c.request(
        "session/resume",
        json!({"sessionId": c.session, "cwd": "/tmp", "replayFrom": {"type": "_later"}}),
    );
    assert!(c
        .answer(bad)
        .unwrap_err()
        .contains("unsupported replayFrom"));
    // What v2 removed is refused by the agent's engine.
    let load = c.conn.send_request(
        "session/load",
        Some(&json!({"sessionId": c.session, "cwd": "/tmp"})),
        RequestOptions::with_data(()),
        0,
    );
    assert!(load.is_err(), "our engine refuses it first");
}

#[test]
fn a_v1_client_gets_the_v1_agent_from_the_same_build() {
    let mut c = Client::start();
    // A version that is no protocol version is refused, not taken as an offer of v2.
    let bad = c.request("initialize", json!({"protocolVersion": 100000}));
    assert!(c.answer(bad).unwrap_err().contains("-32602"));
    let init = c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let answer = c.answer(init).unwrap();
    assert_eq!(answer["protocolVersion"], 1);
    assert!(answer.get("agentCapabilities").is_some(), "{answer}");
    assert_eq!(c.conn.protocol_version(), 1);
    let new = c.request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    let session = c.answer(new).unwrap();
    assert!(session["sessionId"].is_string(), "{session}");
}

#[test]
fn a_retried_prompt_with_its_idempotency_key_inserts_nothing() {
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    );
    c.answer(init).unwrap();
    let new = c.request("session/new", json!({"cwd": "/tmp"}));
    c.session = c.answer(new).unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let prompt = |session: &str, text: &str, key: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}], "idempotencyKey": key});
    let session = c.session.clone();
    let first = c.request("session/prompt", prompt(&session, "once", "key-1"));
    let original = c.answer(first).unwrap()["messageId"].clone();
    while c.conn.turn_state(&session) != TurnState::Idle {
        c.step();
    }
    // The client retries (say the answer was lost): the same key, the original message, and
    // the session's state (idle) ends the wait for that turn.
    let retry = c.request("session/prompt", prompt(&session, "once", "key-1"));
    assert_eq!(c.answer(retry).unwrap()["messageId"], original);
    while c.conn.turn_state(&session) != TurnState::Idle {
        c.step();
    }
    // A new key is a new submission: a second turn.
    let second = c.request("session/prompt", prompt(&session, "twice", "key-2"));
    assert_ne!(c.answer(second).unwrap()["messageId"], original);
    while c.conn.turn_state(&session) != TurnState::Idle {
        c.step();
    }
    // The replay holds the two prompts, not three.
    c.kinds.clear();
    c.thread = Thread::default();
    let resume = c.request(
        "session/resume",
        json!({"sessionId": session, "cwd": "/tmp", "replayFrom": {"type": "start"}}),
    );
    c.answer(resume).unwrap();
    let users: Vec<_> = shown(&c.thread)
        .into_iter()
        .filter(|(k, _)| k == "user")
        .collect();
    assert_eq!(users, [pair("user", "once"), pair("user", "twice")]);
}

/// A retried key is recognized by another agent process too (`--state-dir`), once the client
/// resumed the session there: v2 asks a key be recognized as long as its message is retained,
/// across restarts.
#[test]
fn an_idempotency_key_survives_the_agent_s_restart() {
    let dir = std::env::temp_dir().join(format!("acp-v2-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = [std::ffi::OsStr::new("--state-dir"), dir.as_os_str()];
    let init =
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}});
    let prompt = |session: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": "once"}], "idempotencyKey": "key-r"});
    let (session, original) = {
        let mut c = Client::start_with(&args);
        let i = c.request("initialize", init.clone());
        c.answer(i).unwrap();
        let new = c.request("session/new", json!({"cwd": "/tmp"}));
        c.session = c.answer(new).unwrap()["sessionId"]
            .as_str()
            .unwrap()
            .to_string();
        let first = c.request("session/prompt", prompt(&c.session.clone()));
        let original = c.answer(first).unwrap()["messageId"].clone();
        let session = c.session.clone();
        while c.conn.turn_state(&session) != TurnState::Idle {
            c.step();
        }
        (session, original)
    }; // the agent process ends here
    let mut c = Client::start_with(&args);
    let i = c.request("initialize", init);
    c.answer(i).unwrap();
    c.session = session.clone();
    let resume = c.request(
        "session/resume",
        json!({"sessionId": session, "cwd": "/tmp", "replayFrom": {"type": "start"}}),
    );
    c.answer(resume).unwrap();
    let retry = c.request("session/prompt", prompt(&session));
    assert_eq!(c.answer(retry).unwrap()["messageId"], original);
    while c.conn.turn_state(&session) != TurnState::Idle {
        c.step();
    }
    let users = shown(&c.thread)
        .into_iter()
        .filter(|(k, _)| k == "user")
        .count();
    assert_eq!(
        users,
        1,
        "the retry inserted nothing: {:?}",
        shown(&c.thread)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The session's `permissions` option as an answer (`session/new`, `resume`, `set`) lists it.
fn permissions(answer: &Value) -> &str {
    let options = answer["configOptions"].as_array().expect("configOptions");
    let o = options
        .iter()
        .find(|o| o["configId"] == "permissions")
        .expect("the permissions option");
    // The schema crate reads it as v2's config option.
    serde_json::from_value::<agent_client_protocol_schema::v2::SessionConfigOption>(o.clone())
        .unwrap();
    o["currentValue"].as_str().unwrap()
}

#[test]
fn a_v2_config_option_is_advertised_set_kept_and_acted_on() {
    let dir = std::env::temp_dir().join(format!("acp-demo-v2-config-{}", std::process::id()));
    let state = ["--state-dir".as_ref(), dir.as_os_str()];
    let mut c = Client::start_with(&state);
    let new = c.open();
    assert_eq!(permissions(&new), "ask");
    let set = |c: &mut Client, p: Value| {
        let mut p = p;
        p["sessionId"] = json!(c.session);
        let id = c.request("session/set_config_option", p);
        c.answer(id)
    };
    // Bad ids, value types and values are -32602 and change nothing.
    for (p, why) in [
        (
            json!({"configId": "speed", "type": "id", "value": "fast"}),
            "unknown configId speed",
        ),
        (
            json!({"configId": "permissions", "type": "boolean", "value": true}),
            "takes a value of type id",
        ),
        (
            json!({"configId": "permissions", "type": "id", "value": "always"}),
            "permissions is ask or allow",
        ),
    ] {
        let err = set(&mut c, p).unwrap_err();
        assert!(err.contains(why) && err.contains("-32602"), "{err}");
    }
    // Still asks: a question comes, and is allowed.
    assert_eq!(c.turn("first"), "end_turn");
    assert_eq!(shown(&c.thread)[1], pair("tool", "completed"));
    // Set to allow: answered with the full set; the next write is not asked (a question would
    // be cancelled by this client, and the turn would end cancelled).
    let answer = set(
        &mut c,
        json!({"configId": "permissions", "type": "id", "value": "allow"}),
    )
    .unwrap();
    assert_eq!(permissions(&answer), "allow");
    c.permission = None;
    assert_eq!(c.turn("second"), "end_turn");
    assert_eq!(
        shown(&c.thread)[3..],
        [
            pair("user", "second"),
            pair("tool", "completed"),
            pair(
                "agent",
                "You said: second. The write was allowed (permissions: allow)."
            ),
        ]
    );
    drop(c);
    // Kept with the session: another agent process resumes it with the option as set.
    let mut c = Client::start_with(&state);
    let init = c.request(
        "initialize",
        json!({"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}),
    );
    c.answer(init).unwrap();
    let session = shown_session(&dir);
    let resume = c.request(
        "session/resume",
        json!({"sessionId": session, "cwd": "/tmp"}),
    );
    assert_eq!(permissions(&c.answer(resume).unwrap()), "allow");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The one session saved in the state directory `dir`.
fn shown_session(dir: &std::path::Path) -> String {
    let mut ids = Vec::new();
    for entry in walk(dir) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if let Some(id) = v["sessionId"].as_str() {
                ids.push(id.to_string());
            }
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_cancellable_tool_call_cancelled_alone_ends_cancelled_and_the_turn_goes_on() {
    let mut c = Client::start();
    c.open();
    c.thread.begin_turn(vec![Block::text("#long-task")]);
    let id = c.request(
        "session/prompt",
        json!({"sessionId": c.session, "prompt": [{"type": "text", "text": "#long-task"}]}),
    );
    c.answer(id).expect("accepted");
    // The tool call runs, advertising capabilities.cancel: acp-core lets the cancel go out.
    while !shown(&c.thread).contains(&pair("tool", "in_progress")) {
        c.step();
    }
    let tool = c
        .thread
        .entries
        .iter()
        .find_map(|e| match e {
            Entry::Tool(t) => Some(t.tool_call_id.clone()),
            _ => None,
        })
        .unwrap();
    let cancel = c.request(
        "tool_call/cancel",
        json!({"sessionId": c.session, "toolCallId": tool}),
    );
    assert_eq!(c.answer(cancel).unwrap(), json!({}));
    c.until_idle();
    assert_eq!(c.thread.last_stop.as_deref(), Some("end_turn"));
    assert_eq!(
        shown(&c.thread),
        [
            pair("user", "#long-task"),
            pair("tool", "cancelled"),
            pair(
                "agent",
                "The long task was cancelled; the turn goes on without it."
            ),
        ]
    );
    // Final now: our engine no longer lets a cancel for it go out.
    let again = c.conn.send_request(
        "tool_call/cancel",
        Some(&json!({"sessionId": c.session, "toolCallId": tool})),
        RequestOptions::with_data(()),
        0,
    );
    assert!(
        matches!(again, Err(acp_core::Error::ProtocolVersionRule(_))),
        "{again:?}"
    );

    // A session/cancel during the long task cancels it too, and the turn ends cancelled.
    c.thread.begin_turn(vec![Block::text("#long-task again")]);
    let id = c.request(
        "session/prompt",
        json!({"sessionId": c.session, "prompt": [{"type": "text", "text": "#long-task again"}]}),
    );
    c.answer(id).expect("accepted");
    while !shown(&c.thread).contains(&pair("tool", "in_progress")) {
        c.step();
    }
    c.conn
        .notify("session/cancel", Some(&json!({"sessionId": c.session})))
        .unwrap();
    c.flush();
    c.until_idle();
    assert_eq!(c.thread.last_stop.as_deref(), Some("cancelled"));
    assert_eq!(shown(&c.thread)[4], pair("tool", "cancelled"));
}

#[test]
fn a_turn_may_end_without_a_stop_reason_or_with_an_error() {
    let mut c = Client::start();
    c.open();
    assert_eq!(c.turn("first"), "end_turn");
    // Idle without a stop reason: the turn is over, with no reason (not the last one's).
    assert_eq!(c.turn_raw("#no-reason"), None);
    assert_eq!(
        shown(&c.thread).last().unwrap(),
        &pair("agent", "Done; I give no stop reason.")
    );
    // v2's error stop reason, with the agent's message.
    assert_eq!(c.turn("#error").as_str(), "error");
    assert_eq!(
        shown(&c.thread).last().unwrap(),
        &pair(
            "notice",
            "the turn failed: the demo agent failed on purpose (#error)"
        )
    );
}
