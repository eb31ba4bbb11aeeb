//! The raw JSON-RPC peer of `conformance_v1.rs`: `acp demo-agent` as a child process, its
//! stdout read line by line on a thread, every message kept in order.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// How long a silent agent may take before the test fails rather than hangs (a watchdog, not
/// a timing assertion: every wait here ends on an event long before it).
pub const WATCHDOG: Duration = Duration::from_secs(120);

/// The agent process and a raw JSON-RPC peer over its stdio.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every message read so far, in order.
    pub seen: Vec<Value>,
    /// How many of `seen` have been handed out by [`Peer::next`].
    pub taken: usize,
    /// Responses read while waiting for another one.
    stash: Vec<Value>,
    pub next_id: u64,
}

impl Peer {
    pub fn start(args: &[&str]) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_acp"))
            .arg("demo-agent")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("acp demo-agent starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Peer {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            taken: 0,
            stash: Vec::new(),
            next_id: 0,
        }
    }

    /// Writes `text` (one or more lines) in one write.
    pub fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, msg: &Value) {
        self.write(&format!("{msg}\n"));
    }

    pub fn request_line(&mut self, method: &str, params: Value) -> (u64, String) {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (id, format!("{line}\n"))
    }

    /// Sends a request; returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let (id, line) = self.request_line(method, params);
        self.write(&line);
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message from the agent (the watchdog fails the test if none comes).
    pub fn next(&mut self) -> Value {
        if self.taken == self.seen.len() {
            let line = self
                .lines
                .recv_timeout(WATCHDOG)
                .expect("the agent closed stdout or went silent");
            let msg: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the agent wrote a line that is not JSON ({e}): {line}")
            });
            assert_eq!(
                msg["jsonrpc"], "2.0",
                "every message is JSON-RPC 2.0: {msg}"
            );
            self.seen.push(msg);
        }
        self.taken += 1;
        self.seen[self.taken - 1].clone()
    }

    /// Reads until the response to `id`; returns it. Responses to other ids read meanwhile
    /// are kept for their own `response` call (answers may come in any order).
    pub fn response(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        if let Some(i) = self.stash.iter().position(|m| m["id"] == id) {
            return self.stash.remove(i);
        }
        loop {
            let msg = self.next();
            if is_response(&msg) && msg["id"] == id {
                return msg;
            }
            if is_response(&msg) {
                self.stash.push(msg);
                continue;
            }
            assert!(
                !is_agent_request(&msg),
                "unexpected agent request while waiting for {id}: {msg}"
            );
        }
    }

    /// The next response, whatever its id (notifications read meanwhile are skipped: they stay
    /// in `seen`).
    pub fn next_response(&mut self) -> Value {
        loop {
            let msg = self.next();
            if is_response(&msg) {
                return msg;
            }
            assert!(!is_agent_request(&msg), "unexpected agent request: {msg}");
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// Reads until the agent sends a request with `method`; returns it.
    pub fn agent_request(&mut self, method: &str) -> Value {
        loop {
            let msg = self.next();
            if is_agent_request(&msg) && msg["method"] == method {
                return msg;
            }
            assert!(!is_response(&msg), "unexpected response: {msg}");
        }
    }

    pub fn initialize(&mut self, client_capabilities: Value) -> Value {
        let answer = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": client_capabilities}),
        );
        assert!(
            answer.get("result").is_some(),
            "initialize failed: {answer}"
        );
        answer["result"].clone()
    }

    /// A started agent, initialized with `client_capabilities`, and a session in a fresh
    /// directory (`tag`) holding `files` (name, content): the peer, the directory, the session.
    pub fn with_session(
        client_capabilities: Value,
        tag: &str,
        files: &[(&str, &str)],
    ) -> (Peer, PathBuf, String) {
        let mut peer = Peer::start(&[]);
        peer.initialize(client_capabilities);
        let cwd = temp_dir(tag);
        for (name, content) in files {
            std::fs::write(cwd.join(name), content).unwrap();
        }
        let session = peer.new_session(&cwd);
        (peer, cwd, session)
    }

    /// Sends `session/prompt` of one text block; returns its id.
    pub fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request("session/prompt", prompt_params(session, text))
    }

    /// A whole turn of one text block: its answer, which must end `end_turn`.
    pub fn turn_ends(&mut self, session: &str, text: &str) -> Value {
        let answer = self.call("session/prompt", prompt_params(session, text));
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        answer
    }

    pub fn new_session(&mut self, cwd: &Path) -> String {
        let answer = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {answer}"))
            .to_string()
    }

    /// Closes stdin, reads stdout to its end and waits for the process to exit (no time limit
    /// but the watchdog on each read: the agent must end because stdin closed). Returns every
    /// message not yet handed out.
    pub fn close_and_drain(&mut self) -> Vec<Value> {
        drop(self.stdin.take());
        loop {
            match self.lines.recv_timeout(WATCHDOG) {
                Ok(line) => self.seen.push(
                    serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
                ),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("the agent kept stdout open after stdin closed")
                }
            }
        }
        let status = self.child.wait().expect("wait for the agent");
        assert!(status.success(), "the agent exited with {status}");
        let rest = self.seen[self.taken..].to_vec();
        self.taken = self.seen.len();
        rest
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_response(msg: &Value) -> bool {
    msg.get("method").is_none()
}

pub fn is_agent_request(msg: &Value) -> bool {
    msg.get("method").is_some() && msg.get("id").is_some()
}

pub fn error_code(msg: &Value) -> i64 {
    msg["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error response, got {msg}"))
}

/// A fresh directory for a session's cwd.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "acp-conformance-{tag}-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The updates for `session` among `msgs`, but its `available_commands_update`: the demo
/// agent sends that one from its own task right after `session/new`, so it may come at any
/// point of what follows.
pub fn updates_of<'a>(msgs: &'a [Value], session: &str) -> Vec<&'a Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == session)
        .filter(|m| m["params"]["update"]["sessionUpdate"] != "available_commands_update")
        .collect()
}

/// The params of a `session/prompt` of one text block.
pub fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// The params of `session/load` or `session/resume` of `session` in `cwd`.
pub fn session_params(session: &str, cwd: &Path) -> Value {
    json!({"sessionId": session, "cwd": cwd, "mcpServers": []})
}

/// The `session/cancel` notification of `session`, as a line to write.
pub fn cancel_line(session: &str) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    )
}

/// The text of the `agent_message_chunk` updates among `updates`, joined.
pub fn message_text(updates: &[&Value]) -> String {
    updates
        .iter()
        .filter(|u| u["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect()
}
