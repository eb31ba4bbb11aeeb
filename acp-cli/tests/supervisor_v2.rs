//! acp-native's `SupervisedAgent` over ACP v2 (feature `unstable_protocol_v2`) with `acp
//! demo-agent` (which takes the v2 offer; `--state-dir` keeps its sessions across restarts): a
//! turn acknowledged by its `session/prompt` answer ends with its idle `state_update`; a turn
//! whose agent crashes after the acknowledgement (the demo agent's `#crash`, once its
//! permission question is answered) ends with the exit report instead of waiting for an idle
//! state that never comes; the restarted agent negotiates v2 again, the session is re-attached
//! with `session/resume` replaying from the start (the replay reaches the host's service,
//! ended by `replay_complete`), and the next turn runs in it. A turn still running at
//! `shutdown` ends with the close too.
//!
//! Every wait is on an event (the question's answer is released by the test once it has the
//! prompt's acknowledgement, so the crash comes after it); the bounds are hang guards only.

mod cli_support;

use std::sync::{Arc, Mutex};

use acp_core::{CallError, ErrorObject};
use acp_native::process::{AgentCommand, RestartPolicy};
use acp_native::supervisor::{SupervisedAgent, SupervisorConfig, SupervisorEvent};
use acp_native::{RawValue, Router, RpcError};
use agent_client_protocol_schema::v1 as s;
use agent_client_protocol_schema::ProtocolVersion;
use cli_support::{acp, TempDir, EVENTUALLY};
use serde_json::{json, Value};
use tokio::sync::{broadcast, Semaphore};

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(EVENTUALLY, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {EVENTUALLY:?}"))
}

/// What the host's service saw.
#[derive(Default)]
struct Seen {
    /// Every `session/update`'s `update`, in order.
    updates: Vec<Value>,
    questions: usize,
}

/// The host: records updates, and answers a permission question "allow" once the test
/// releases an answer (`answers`).
fn host(seen: Arc<Mutex<Seen>>, answers: Arc<Semaphore>) -> Router {
    let s1 = seen.clone();
    Router::new()
        .notification_raw("session/update", move |p, _cx| {
            let seen = s1.clone();
            async move {
                let p: Value = serde_json::from_str(p.as_deref().map_or("{}", RawValue::get))
                    .expect("session/update params");
                seen.lock().unwrap().updates.push(p["update"].clone());
            }
        })
        .route_raw("session/request_permission", move |_p, _cx| {
            let (seen, answers) = (seen.clone(), answers.clone());
            async move {
                seen.lock().unwrap().questions += 1;
                answers
                    .acquire()
                    .await
                    .map_err(ErrorObject::internal)?
                    .forget();
                let answer = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
                serde_json::value::to_raw_value(&answer).map_err(ErrorObject::internal)
            }
        })
}

fn said(seen: &Seen, from: usize) -> String {
    seen.updates[from..]
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

async fn wait_for(
    rx: &mut broadcast::Receiver<SupervisorEvent>,
    pick: impl Fn(&SupervisorEvent) -> bool,
) -> Vec<SupervisorEvent> {
    let mut seen = Vec::new();
    loop {
        let e = bounded("a supervisor event", rx.recv()).await.unwrap();
        let done = pick(&e);
        seen.push(e);
        if done {
            return seen;
        }
    }
}

fn prompt(session: &s::SessionId, text: &str) -> s::PromptRequest {
    s::PromptRequest::new(session.clone(), vec![text.into()])
}

/// A supervisor config for `cmd` that offers v2, with the tests' start and stop bounds.
fn v2_config(cmd: AgentCommand, init: s::InitializeRequest) -> SupervisorConfig {
    let mut config = SupervisorConfig::new(cmd, init);
    config.offer_v2 = true;
    config.startup_timeout = EVENTUALLY;
    config.shutdown_grace = std::time::Duration::from_millis(500);
    config
}

/// Starts the supervised agent with `host` and opens a session in `cwd`.
async fn started_with_session(
    config: SupervisorConfig,
    host: Router,
    cwd: &std::path::Path,
) -> (SupervisedAgent, s::SessionId) {
    let agent = bounded("the start", SupervisedAgent::start(config, host))
        .await
        .unwrap();
    let session = bounded(
        "session/new",
        agent.new_session(s::NewSessionRequest::new(cwd)),
    )
    .await
    .unwrap()
    .session_id;
    (agent, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_turn_ends_on_idle_and_a_crash_mid_turn_ends_it_then_the_session_is_replayed() {
    let dir = TempDir::new("supervisor-v2");
    let cmd = AgentCommand::new(acp())
        .arg("demo-agent")
        .arg("--state-dir")
        .arg(dir.join("state"));
    let init = s::InitializeRequest::new(ProtocolVersion::V1)
        .client_info(s::Implementation::new("supervisor-test", "1"));
    let mut config = v2_config(cmd, init);
    config.restart = Some(RestartPolicy {
        max_restarts_in_window: 3,
        window: std::time::Duration::from_secs(600),
        initial_backoff: std::time::Duration::from_millis(10),
        max_backoff: std::time::Duration::from_millis(50),
        multiplier: 2.0,
    });
    let seen = Arc::new(Mutex::new(Seen::default()));
    let answers = Arc::new(Semaphore::new(0));
    let (agent, session) =
        started_with_session(config, host(seen.clone(), answers.clone()), dir.path()).await;
    let mut events = agent.subscribe();
    assert_eq!(agent.protocol_version(), Some(2));
    let answer: Value = serde_json::from_str(agent.initialize_answer().unwrap().get()).unwrap();
    assert_eq!(answer["info"]["name"], "acp-demo-agent");

    // A turn: acknowledged with the user message's id, ended by its idle state_update, after
    // the host handled every update of it.
    let turn = bounded("the prompt", agent.prompt(prompt(&session, "hello")))
        .await
        .unwrap();
    let ack: Value = serde_json::from_str(turn.answer().get()).unwrap();
    assert!(ack["messageId"].is_string(), "{ack}");
    answers.add_permits(1);
    let stop = bounded("the turn's end", turn.ended()).await.unwrap();
    assert_eq!(stop.as_deref(), Some("end_turn"));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.questions, 1);
        assert_eq!(said(&seen, 0), "You said: hello. The write was allowed.");
    }

    // A turn the agent crashes in, after acknowledging it: a second prompt in the session
    // meanwhile is refused, and the turn ends with the exit report.
    let turn = bounded("the prompt", agent.prompt(prompt(&session, "#crash now")))
        .await
        .unwrap();
    let Err(RpcError::Other(why)) = agent.prompt(prompt(&session, "meanwhile")).await else {
        panic!("a second prompt during a v2 turn was sent");
    };
    assert!(
        why.contains("a turn is already running in session"),
        "{why}"
    );
    answers.add_permits(1);

    // Restarted, v2 negotiated again, the session re-attached by a replay.
    let on_the_way = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { generation: 2, .. })
    })
    .await;
    // The crashed turn, looked at only now: its end is the crash, not the idle state that
    // ended the new agent's replay of the session.
    let err = bounded("the crashed turn's end", turn.ended())
        .await
        .unwrap_err();
    let RpcError::Call(CallError::Closed { reason }) = &err else {
        panic!("expected Closed, got {err:?}");
    };
    assert!(reason.contains("exited with code 70"), "{reason}");
    assert!(reason.contains("crashing mid-answer as asked"), "{reason}");
    assert!(
        on_the_way.contains(&SupervisorEvent::SessionReattached {
            session_id: session.to_string(),
            method: "session/resume",
        }),
        "{on_the_way:?}"
    );
    assert_eq!(agent.generation(), 2);
    assert_eq!(agent.protocol_version(), Some(2));
    {
        // The replay (handled before the resume's answer): the messages, then
        // `replay_complete`; the crashed turn's live updates before it end with no message.
        let seen = seen.lock().unwrap();
        let kinds: Vec<&str> = seen
            .updates
            .iter()
            .filter_map(|u| u["sessionUpdate"].as_str())
            .collect();
        let complete = kinds
            .iter()
            .position(|k| *k == "replay_complete")
            .unwrap_or_else(|| panic!("no replay_complete: {kinds:?}"));
        let replay: Vec<&Value> = seen.updates[..complete]
            .iter()
            .rev()
            .take_while(|u| {
                matches!(
                    u["sessionUpdate"].as_str(),
                    Some("user_message" | "agent_message")
                )
            })
            .collect();
        let texts: Vec<&str> = replay
            .iter()
            .rev()
            .filter(|u| u["sessionUpdate"] == "user_message")
            .filter_map(|u| u["content"][0]["text"].as_str())
            .collect();
        assert_eq!(texts, ["hello", "#crash now"], "{kinds:?}");
    }

    // The next turn runs in the re-attached session.
    let from = seen.lock().unwrap().updates.len();
    let turn = bounded(
        "the prompt after the restart",
        agent.prompt(prompt(&session, "after the crash")),
    )
    .await
    .unwrap();
    answers.add_permits(1);
    let stop = bounded("the turn's end", turn.ended()).await.unwrap();
    assert_eq!(stop.as_deref(), Some("end_turn"));
    assert_eq!(
        said(&seen.lock().unwrap(), from),
        "You said: after the crash. The write was allowed."
    );
    bounded("the shutdown", agent.shutdown()).await;
}

/// A v2 turn still running when the supervisor is shut down (its permission question never
/// answered) ends with the connection's end, not a wait for an idle state that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_turn_running_at_shutdown_ends_with_the_close() {
    let dir = TempDir::new("supervisor-v2-shutdown");
    let cmd = AgentCommand::new(acp()).arg("demo-agent");
    let config = v2_config(cmd, s::InitializeRequest::new(ProtocolVersion::V1));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let never = Arc::new(Semaphore::new(0));
    let (agent, session) = started_with_session(config, host(seen, never), dir.path()).await;
    let turn = bounded("the prompt", agent.prompt(prompt(&session, "hello")))
        .await
        .unwrap();
    bounded("the shutdown", agent.shutdown()).await;
    let err = bounded("the turn's end", turn.ended()).await.unwrap_err();
    assert!(
        matches!(err, RpcError::Call(CallError::Closed { .. })),
        "{err:?}"
    );
}
