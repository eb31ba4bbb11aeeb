//! ACP v1 conformance of the agent side: `acp demo-agent` (an [`AgentSideConnection`] with the
//! usual layers and typed routes) driven over stdio by a raw JSON-RPC peer, for what the
//! official conformance kit's v1 suite (agentclientprotocol/acp-tck, not published on any
//! package registry, so these checks are written here) asks of an agent: `initialize` and
//! version negotiation, the session lifecycle, prompt turns, cancellation (a `session/cancel`
//! in the same write as its prompt, one read while the turn, its updates written, waits on the
//! client, one racing the client's failed call, one during a permission question), JSON-RPC
//! hygiene (ids echoed, -32601, -32602, -32700, -32600, `_` extension methods), every
//! capability it advertises, and ending once stdin closes.
//!
//! Nothing here waits on a clock: each race is made deterministic by a point the test controls
//! (a client request the turn waits on), "nothing more arrives" is checked by reading the
//! agent's stdout to its end after closing stdin, and shutdown is a plain wait for the process
//! to exit. The only timeout is a watchdog (a stuck agent fails the test instead of hanging it).
//!
//! [`AgentSideConnection`]: acp_native::AgentSideConnection

mod conformance_support;

use conformance_support::*;
use serde_json::{json, Value};

// --- initialize and version negotiation -------------------------------------------------------

#[test]
fn initialize_answers_the_offered_version_it_speaks_else_its_latest() {
    // Offered 1: the same. Offered a version it does not speak, higher or lower: its latest
    // (1), and the client decides whether to go on.
    for offered in [1u64, 2, 3, 65535, 0] {
        let mut peer = Peer::start(&[]);
        let answer = peer.call(
            "initialize",
            json!({"protocolVersion": offered, "clientCapabilities": {}}),
        );
        assert_eq!(
            answer["result"]["protocolVersion"], 1,
            "offered {offered}: {answer}"
        );
        let caps = &answer["result"]["agentCapabilities"];
        assert!(caps.is_object(), "agentCapabilities: {answer}");
        // authMethods, when present, is a list (empty without --require-auth).
        let methods = &answer["result"]["authMethods"];
        assert!(methods.is_null() || methods == &json!([]), "{answer}");
        // A session works after any of them (the agent speaks v1 whatever was offered).
        let cwd = temp_dir("init");
        peer.new_session(&cwd);
        let rest = peer.close_and_drain();
        assert!(rest.iter().all(|m| !is_response(m)), "{rest:?}");
    }
}

#[test]
fn initialize_with_a_malformed_version_is_invalid_params() {
    let mut peer = Peer::start(&[]);
    for params in [
        json!({"protocolVersion": "1.0.0", "clientCapabilities": {}}),
        json!({"protocolVersion": 100000, "clientCapabilities": {}}),
        json!({"protocolVersion": -1, "clientCapabilities": {}}),
        json!({"clientCapabilities": {}}),
    ] {
        let answer = peer.call("initialize", params.clone());
        assert_eq!(error_code(&answer), -32602, "{params}: {answer}");
    }
    // The connection is still usable: a valid initialize succeeds.
    peer.initialize(json!({}));
    peer.close_and_drain();
}

#[test]
fn sessions_before_initialize_are_refused_with_the_id_echoed() {
    let mut peer = Peer::start(&[]);
    let cwd = temp_dir("early");
    let answer = peer.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert!(answer.get("error").is_some(), "{answer}");
    peer.initialize(json!({}));
    peer.new_session(&cwd);
    peer.close_and_drain();
}

// --- JSON-RPC hygiene ---------------------------------------------------------------------------

#[test]
fn ids_are_echoed_exactly_and_pipelined_requests_all_answered() {
    let mut peer = Peer::start(&[]);
    peer.initialize(json!({}));
    let cwd = temp_dir("ids");
    let ids = [
        json!(0),
        json!("a string id"),
        json!("ünïcödé ☃"),
        json!(9007199254740991u64),
        json!(-7),
        json!(""),
    ];
    // All in one write, answered each with its own id.
    let mut text = String::new();
    for id in &ids {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
                          "params": {"cwd": cwd, "mcpServers": []}});
        text.push_str(&format!("{line}\n"));
    }
    peer.write(&text);
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        let msg = peer.next();
        if is_response(&msg) {
            assert!(msg["result"]["sessionId"].is_string(), "{msg}");
            answered.push(msg["id"].clone());
        }
    }
    for id in &ids {
        assert!(
            answered.contains(id),
            "no answer with id {id}: {answered:?}"
        );
    }
    peer.close_and_drain();
}

#[test]
fn unknown_methods_extensions_and_bad_messages() {
    let mut peer = Peer::start(&[]);
    peer.initialize(json!({}));
    // An unknown request: -32601.
    let answer = peer.call("no/such_method", json!({}));
    assert_eq!(error_code(&answer), -32601, "{answer}");
    // An `_` extension request it does not know still gets an answer: -32601.
    let answer = peer.call("_acp_rs_conformance/unknown", json!({"x": 1}));
    assert_eq!(error_code(&answer), -32601, "{answer}");
    // Unknown notifications, `_` extension or not, are ignored (no answer: checked at the end).
    peer.notify("_acp_rs_conformance/note", json!({"x": 1}));
    peer.notify("no/such_notification", json!({}));
    // Invalid params on a known method: -32602.
    let answer = peer.call("session/new", json!({"cwd": 42, "mcpServers": []}));
    assert_eq!(error_code(&answer), -32602, "{answer}");
    let answer = peer.call(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(error_code(&answer), -32602, "{answer}");
    let cwd = temp_dir("hygiene");
    let session = peer.new_session(&cwd);
    let answer = peer.call("session/prompt", json!({"sessionId": session}));
    assert_eq!(error_code(&answer), -32602, "{answer}");
    let answer = peer.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": "not a list"}),
    );
    assert_eq!(error_code(&answer), -32602, "{answer}");
    // Malformed JSON: -32700 with a null id; the connection goes on.
    peer.write("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \n");
    let parse = peer.next_response();
    assert_eq!(error_code(&parse), -32700, "{parse}");
    assert!(parse["id"].is_null(), "{parse}");
    // A message with an id but neither a method nor a result: -32600. Its id is not echoed:
    // it may be a broken response, and an answer carrying that id could complete one of the
    // peer's own requests.
    peer.send(&json!({"jsonrpc": "2.0", "id": 77, "params": {}}));
    let invalid = peer.next_response();
    assert_eq!(error_code(&invalid), -32600, "{invalid}");
    assert!(invalid["id"].is_null(), "{invalid}");
    // A request whose method is not a string: -32600 (id null when it cannot be trusted, or
    // echoed), never a crash.
    peer.send(&json!({"jsonrpc": "2.0", "id": 78, "method": 5}));
    let invalid = peer.next_response();
    assert_eq!(error_code(&invalid), -32600, "{invalid}");
    assert!(invalid["id"] == 78 || invalid["id"].is_null(), "{invalid}");
    // Still usable.
    peer.new_session(&cwd);
    // Nothing answered the notifications, nor anything else: every response has an id we
    // sent (or null for the parse error).
    let rest = peer.close_and_drain();
    assert!(
        rest.iter().all(|m| !is_response(m)),
        "responses nobody asked for: {rest:?}"
    );
    let ids: Vec<&Value> = peer
        .seen
        .iter()
        .filter(|m| is_response(m))
        .map(|m| &m["id"])
        .collect();
    assert!(
        ids.iter()
            .all(|id| id.is_null() || id.as_u64().is_some_and(|n| n <= peer.next_id || n == 78)),
        "{ids:?}"
    );
}

// --- session lifecycle and prompt turns ---------------------------------------------------------

#[test]
fn a_prompt_turn_then_load_replays_it() {
    let mut peer = Peer::start(&[]);
    let init = peer.initialize(json!({}));
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let cwd = temp_dir("turn");
    let session = peer.new_session(&cwd);
    let id = peer.prompt(&session, "hello there");
    let answer = peer.response(id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let turn = updates_of(&peer.seen, &session);
    let kinds: Vec<&str> = turn
        .iter()
        .map(|u| u["params"]["update"]["sessionUpdate"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"agent_message_chunk"), "{kinds:?}");
    let text = message_text(&turn);
    assert!(text.contains("hello there"), "{text}");

    // An unknown session: -32002 (resource not found) for prompt and load.
    let answer = peer.call("session/prompt", prompt_params("no-such-session", "x"));
    assert_eq!(error_code(&answer), -32002, "{answer}");
    let answer = peer.call("session/load", session_params("no-such-session", &cwd));
    assert_eq!(error_code(&answer), -32002, "{answer}");

    // session/load (advertised): the conversation is replayed before the answer.
    let before = peer.seen.len();
    let load = peer.call("session/load", session_params(&session, &cwd));
    assert!(load["result"].is_object(), "{load}");
    let replay = updates_of(&peer.seen[before..], &session);
    let first = &replay.first().expect("a replay")["params"]["update"];
    assert_eq!(first["sessionUpdate"], "user_message_chunk", "{first}");
    assert_eq!(first["content"]["text"], "hello there");
    let replayed = message_text(&replay);
    assert_eq!(replayed, text, "the replay is the turn's answer");
    // A second turn on the loaded session works.
    peer.turn_ends(&session, "again");
    // Nothing for the session after the last answer.
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &session).is_empty(), "{rest:?}");
}

#[test]
fn advertised_prompt_capabilities_are_accepted() {
    let mut peer = Peer::start(&[]);
    let init = peer.initialize(json!({}));
    let prompt_caps = &init["agentCapabilities"]["promptCapabilities"];
    assert_eq!(prompt_caps["image"], true, "{init}");
    assert_eq!(prompt_caps["embeddedContext"], true, "{init}");
    let cwd = temp_dir("content");
    let session = peer.new_session(&cwd);
    let answer = peer.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "look"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "resource", "resource": {"uri": "file:///tmp/x.txt", "text": "abc"}},
            {"type": "resource_link", "uri": "file:///tmp/y.txt", "name": "y.txt"},
        ]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let text = message_text(&updates_of(&peer.seen, &session));
    for named in [
        "[image image/png",
        "[resource file:///tmp/x.txt (3 characters)]",
        "[resource_link file:///tmp/y.txt]",
    ] {
        assert!(text.contains(named), "{named} not in {text}");
    }
    peer.close_and_drain();
}

#[test]
fn list_and_resume_work_when_advertised() {
    let state = temp_dir("state");
    let mut peer = Peer::start(&["--state-dir", state.to_str().unwrap()]);
    let init = peer.initialize(json!({}));
    let sessions = &init["agentCapabilities"]["sessionCapabilities"];
    assert!(sessions["list"].is_object(), "{init}");
    assert!(sessions["resume"].is_object(), "{init}");
    let cwd = temp_dir("listed");
    let session = peer.new_session(&cwd);
    peer.turn_ends(&session, "remember me");
    peer.close_and_drain();

    // A new process: the session is listed (for its cwd) and resumes without a replay.
    let mut peer = Peer::start(&["--state-dir", state.to_str().unwrap()]);
    peer.initialize(json!({}));
    let list = peer.call("session/list", json!({"cwd": cwd}));
    let listed = list["result"]["sessions"].as_array().expect("sessions");
    assert!(
        listed.iter().any(|s| s["sessionId"] == session.as_str()),
        "{list}"
    );
    let before = peer.seen.len();
    let resume = peer.call("session/resume", session_params(&session, &cwd));
    assert!(resume["result"].is_object(), "{resume}");
    assert!(updates_of(&peer.seen[before..], &session).is_empty());
    let answer = peer.call("session/resume", session_params("no-such-session", &cwd));
    assert_eq!(error_code(&answer), -32002, "{answer}");
    peer.turn_ends(&session, "back");
    peer.close_and_drain();
}

#[test]
fn close_cancels_the_turn_and_frees_the_session() {
    let mut peer = Peer::start(&[]);
    let init = peer.initialize(json!({"fs": {"readTextFile": true}}));
    assert!(
        init["agentCapabilities"]["sessionCapabilities"]["close"].is_object(),
        "{init}"
    );
    let cwd = temp_dir("close");
    std::fs::write(cwd.join("notes.txt"), "x\n").unwrap();
    // An idle session: closed, then unknown to prompt, load and a second close.
    let idle = peer.new_session(&cwd);
    let answer = peer.call("session/close", json!({"sessionId": idle}));
    assert_eq!(answer["result"], json!({}), "{answer}");
    let answer = peer.call("session/prompt", prompt_params(&idle, "x"));
    assert_eq!(error_code(&answer), -32002, "{answer}");
    let answer = peer.call("session/close", json!({"sessionId": idle}));
    assert_eq!(error_code(&answer), -32002, "{answer}");
    let answer = peer.call("session/load", session_params(&idle, &cwd));
    assert_eq!(error_code(&answer), -32002, "{answer}");

    // A session in a turn (waiting on our fs/read_text_file answer): the close is answered,
    // and the turn ends `cancelled` (the spec: close cancels the session's work first).
    let busy = peer.new_session(&cwd);
    let id = peer.prompt(&busy, "read notes.txt");
    let read = peer.agent_request("fs/read_text_file");
    let close = peer.request("session/close", json!({"sessionId": busy}));
    let answer = peer.response(close);
    assert_eq!(answer["result"], json!({}), "{answer}");
    peer.send(&json!({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "x\n"}}));
    let answer = prompt_answer(&mut peer, id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &busy).is_empty(), "{rest:?}");
}

#[test]
fn delete_removes_the_session_from_list_load_and_resume() {
    let state = temp_dir("delete-state");
    let state_arg = state.to_str().unwrap().to_string();
    let mut peer = Peer::start(&["--state-dir", &state_arg]);
    let init = peer.initialize(json!({}));
    assert!(
        init["agentCapabilities"]["sessionCapabilities"]["delete"].is_object(),
        "{init}"
    );
    let cwd = temp_dir("delete");
    let kept = peer.new_session(&cwd);
    let gone = peer.new_session(&cwd);
    for session in [&kept, &gone] {
        peer.turn_ends(session, "/echo hi");
    }
    let answer = peer.call("session/delete", json!({"sessionId": gone}));
    assert_eq!(answer["result"], json!({}), "{answer}");
    let answer = peer.call("session/delete", json!({"sessionId": gone}));
    assert_eq!(error_code(&answer), -32002, "deleted twice: {answer}");
    let listed = |peer: &mut Peer| -> Vec<Value> {
        let list = peer.call("session/list", json!({"cwd": cwd}));
        list["result"]["sessions"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|s| s["sessionId"].clone())
            .collect()
    };
    let ids = listed(&mut peer);
    assert!(
        ids.contains(&json!(kept)) && !ids.contains(&json!(gone)),
        "{ids:?}"
    );
    peer.close_and_drain();

    // Another process: the deleted session is unknown, the other one is still there.
    let mut peer = Peer::start(&["--state-dir", &state_arg]);
    peer.initialize(json!({}));
    let ids = listed(&mut peer);
    assert!(
        ids.contains(&json!(kept)) && !ids.contains(&json!(gone)),
        "{ids:?}"
    );
    for method in ["session/load", "session/resume"] {
        let answer = peer.call(method, session_params(&gone, &cwd));
        assert_eq!(error_code(&answer), -32002, "{method}: {answer}");
    }
    let answer = peer.call("session/resume", session_params(&kept, &cwd));
    assert!(answer["result"].is_object(), "{answer}");
    peer.close_and_drain();
}

// --- cancellation -------------------------------------------------------------------------------

/// The prompt's answer (the watchdog aside, whatever the turn sends in between is collected).
fn prompt_answer(peer: &mut Peer, id: u64) -> Value {
    let answer = peer.response(id);
    assert!(
        answer.get("error").is_none(),
        "a cancelled turn is no error: {answer}"
    );
    answer
}

/// A turn on a fresh session (a client that reads files), waiting on its `fs/read_text_file`
/// of notes.txt (`content`): the peer, the session, the prompt's id and the read request.
fn reading_turn(tag: &str, content: &str) -> (Peer, String, u64, Value) {
    let (mut peer, _cwd, session) = Peer::with_session(
        json!({"fs": {"readTextFile": true}}),
        tag,
        &[("notes.txt", content)],
    );
    let id = peer.prompt(&session, "read notes.txt");
    let read = peer.agent_request("fs/read_text_file");
    (peer, session, id, read)
}

#[test]
fn cancel_sent_with_the_prompt_ends_the_turn_cancelled() {
    // The prompt and the cancel in one write: the cancel is read right behind the prompt,
    // before the turn can have finished: it cannot end without our answer to its
    // fs/read_text_file, which we never send (the agent may have asked it before it read the
    // cancel, or not at all). A cancelled turn does not wait for the client's answer.
    let (mut peer, _cwd, session) = Peer::with_session(
        json!({"fs": {"readTextFile": true}}),
        "cancel-early",
        &[("notes.txt", "x\n")],
    );
    let (id, mut text) = peer.request_line(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "read notes.txt"}]}),
    );
    text.push_str(&cancel_line(&session));
    peer.write(&text);
    let answer = loop {
        let msg = peer.next();
        if is_agent_request(&msg) {
            assert_eq!(msg["method"], "fs/read_text_file", "{msg}");
            continue;
        }
        if is_response(&msg) {
            assert_eq!(msg["id"], id, "{msg}");
            break msg;
        }
    };
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &session).is_empty(), "{rest:?}");
}

#[test]
fn cancel_while_the_turn_waits_on_the_client_ends_it_at_once() {
    // The turn has written its updates and waits on fs/read_text_file; the cancel alone ends
    // it (`cancelled`), before any answer to the read; the late answer is then harmless.
    let (mut peer, session, id, read) = reading_turn("cancel-wait", "x\n");
    peer.notify("session/cancel", json!({"sessionId": session}));
    let answer = prompt_answer(&mut peer, id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    peer.send(&json!({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "x\n"}}));
    // The connection goes on: the next turn on the session ends normally.
    peer.turn_ends(&session, "/echo again");
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &session).is_empty(), "{rest:?}");
}

#[test]
fn cancel_while_the_turn_writes_its_updates_ends_it_cancelled() {
    // The turn has written its plan, thought and answer and waits on fs/read_text_file. The
    // cancel and then the read's answer go out in one write: the agent handles the cancel
    // before the turn sees the answer, so the turn must end `cancelled`, even with no step of
    // its own left (this client cannot write files or run terminals).
    let (mut peer, session, id, read) = reading_turn("cancel-mid", "first line\n");
    let written = updates_of(&peer.seen, &session).len();
    assert!(written >= 3, "the turn wrote updates before reading");
    let mut text = cancel_line(&session);
    text.push_str(&format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "first line\n"}})
    ));
    peer.write(&text);
    let answer = prompt_answer(&mut peer, id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    // No update of the session after the answer.
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &session).is_empty(), "{rest:?}");
}

#[test]
fn cancel_while_the_client_call_fails_is_still_cancelled() {
    // A client that answers its pending calls with an error once it cancelled (as the spec
    // allows): the turn reports `cancelled`, not the error.
    let (mut peer, session, id, read) = reading_turn("cancel-err", "x\n");
    let mut text = cancel_line(&session);
    text.push_str(&format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": read["id"],
               "error": {"code": -32603, "message": "cancelled by the user"}})
    ));
    peer.write(&text);
    let answer = prompt_answer(&mut peer, id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    peer.close_and_drain();
}

#[test]
fn cancel_while_asking_permission_ends_the_turn_cancelled() {
    let (mut peer, cwd, session) = Peer::with_session(
        json!({"fs": {"readTextFile": false, "writeTextFile": true}}),
        "cancel-perm",
        &[],
    );
    let id = peer.prompt(&session, "write it");
    let ask = peer.agent_request("session/request_permission");
    peer.notify("session/cancel", json!({"sessionId": session}));
    // The client answers its pending permission question `cancelled`, as the spec asks.
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                      "result": {"outcome": {"outcome": "cancelled"}}}));
    let answer = prompt_answer(&mut peer, id);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(!cwd.join("acp-demo.txt").exists(), "nothing written");
    // The session takes the next prompt (the cancel was for that turn only).
    peer.turn_ends(&session, "/echo still here");
    let rest = peer.close_and_drain();
    assert!(updates_of(&rest, &session).is_empty(), "{rest:?}");
}

#[test]
fn cancel_with_no_turn_or_an_unknown_session_is_ignored() {
    let (mut peer, _cwd, session) = Peer::with_session(json!({}), "cancel-idle", &[]);
    peer.notify("session/cancel", json!({"sessionId": session}));
    peer.notify("session/cancel", json!({"sessionId": "no-such-session"}));
    peer.notify("session/cancel", json!({"bad": "params"}));
    // A cancel before a turn does not cancel that turn.
    peer.turn_ends(&session, "/echo hi");
    let rest = peer.close_and_drain();
    assert!(rest.iter().all(|m| !is_response(m)), "{rest:?}");
}

// --- ending -------------------------------------------------------------------------------------

#[test]
fn the_agent_exits_when_stdin_closes() {
    // Idle, right after starting: exits (status 0) once stdin closes.
    let mut peer = Peer::start(&[]);
    assert!(peer.close_and_drain().is_empty());

    // With a turn in flight, waiting on the client's permission answer: the same.
    let (mut peer, cwd, session) =
        Peer::with_session(json!({"fs": {"writeTextFile": true}}), "eof", &[]);
    peer.prompt(&session, "write it");
    peer.agent_request("session/request_permission");
    peer.close_and_drain();
    assert!(!cwd.join("acp-demo.txt").exists());
}
