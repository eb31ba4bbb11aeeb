//! The supervised agent: crash mid-request, restart with backoff, session re-attachment with
//! `session/resume` / `session/load` or reported lost, the crash budget, the responsiveness
//! probe, the start-up deadline, and graceful shutdown. The agents are small Python scripts
//! whose behaviour depends on how often they were started (a counter file).

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_core::CallError;
use acp_native::process::{AgentCommand, RestartPolicy};
use acp_native::supervisor::{
    HealthProbe, SupervisedAgent, SupervisorConfig, SupervisorError, SupervisorEvent,
};
use acp_native::{Router, RpcError};
use agent_client_protocol_schema::v1 as s;
use agent_client_protocol_schema::ProtocolVersion;
use tokio::sync::broadcast;

/// A scripted ACP agent. `MODE` picks its behaviour; `START` is how many times it was started
/// (1-based), kept in `counter`.
const AGENT: &str = r#"
import json, sys, os
mode, counter = sys.argv[1], sys.argv[2]
start = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(start))
sys.stderr.write(f"agent start {start} mode {mode}\n"); sys.stderr.flush()
if mode == "crash-on-start" and start > 1:
    sys.stderr.write("cannot start: config broken\n"); sys.exit(7)
caps = {}
if mode in ("resume", "crash-on-start"): caps = {"sessionCapabilities": {"resume": {}}}
if mode == "load": caps = {"loadSession": True}
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    m, i = msg.get("method"), msg.get("id")
    if m == "initialize":
        if mode == "silent-init": continue
        if mode == "silent-restart" and start > 1: continue
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": 1, "agentCapabilities": caps}})
    elif m == "session/new":
        send({"jsonrpc": "2.0", "id": i, "result": {"sessionId": "sess-1"}})
    elif m in ("session/resume", "session/load"):
        sys.stderr.write(f"{m} {msg['params']['sessionId']}\n"); sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": i, "result": {}})
    elif m == "session/prompt":
        if start == 1:
            sys.stderr.write("segfault in the model, bye\n"); sys.stderr.flush()
            os._exit(3)
        send({"jsonrpc": "2.0", "id": i, "result": {"stopReason": "end_turn"}})
    elif m == "_acp-rs/ping":
        if mode == "hang-after-init" and start == 1: continue
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
    elif i is not None:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "Method not found"}})
"#;

struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("acp-supervisor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agent.py"), AGENT).unwrap();
        Fixture { dir }
    }

    fn config(&self, mode: &str) -> SupervisorConfig {
        let cmd = AgentCommand::new("python3")
            .arg(self.dir.join("agent.py"))
            .arg(mode)
            .arg(self.dir.join("starts"));
        let mut config = SupervisorConfig::new(cmd, s::InitializeRequest::new(ProtocolVersion::V1));
        config.startup_timeout = Duration::from_secs(20);
        config.shutdown_grace = Duration::from_millis(500);
        config.restart = Some(RestartPolicy {
            max_restarts_in_window: 3,
            window: Duration::from_secs(600),
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            multiplier: 2.0,
        });
        config
    }

    fn starts(&self) -> u32 {
        std::fs::read_to_string(self.dir.join("starts"))
            .map(|s| s.trim().parse().unwrap())
            .unwrap_or(0)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn next_event(rx: &mut broadcast::Receiver<SupervisorEvent>) -> SupervisorEvent {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("no supervisor event within 30 s")
        .expect("event channel open")
}

/// Waits for the first event `pick` accepts, returning it and the ones skipped.
async fn wait_for(
    rx: &mut broadcast::Receiver<SupervisorEvent>,
    pick: impl Fn(&SupervisorEvent) -> bool,
) -> (SupervisorEvent, Vec<SupervisorEvent>) {
    let mut seen = Vec::new();
    loop {
        let e = next_event(rx).await;
        if pick(&e) {
            return (e, seen);
        }
        seen.push(e);
    }
}

fn prompt(session: &str) -> s::PromptRequest {
    s::PromptRequest::new(session.to_string(), vec!["hi".into()])
}

async fn prompt_fails_with_exit_report(agent: &SupervisedAgent) {
    let conn = agent.connection().await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(30), conn.prompt(prompt("sess-1")))
        .await
        .expect("a crashed agent's pending request fails at once, not at a deadline")
        .unwrap_err();
    let RpcError::Call(CallError::Closed { reason }) = &err else {
        panic!("expected Closed, got {err:?}");
    };
    assert!(reason.contains("exited with code 3"), "{reason}");
    assert!(reason.contains("segfault in the model, bye"), "{reason}");
}

#[tokio::test]
async fn crash_mid_request_restarts_and_resumes_the_session() {
    let fx = Fixture::new("resume");
    let agent = SupervisedAgent::start(fx.config("resume"), Router::new())
        .await
        .unwrap();
    let mut events = agent.subscribe();
    let first_pid = agent.pid().unwrap();
    let session = agent
        .new_session(s::NewSessionRequest::new("/tmp"))
        .await
        .unwrap();
    assert_eq!(session.session_id.to_string(), "sess-1");

    prompt_fails_with_exit_report(&agent).await;

    let (crashed, _) = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Crashed { .. })
    })
    .await;
    let SupervisorEvent::Crashed { generation, report } = crashed else {
        unreachable!()
    };
    assert_eq!(generation, 1);
    assert!(report.contains("segfault in the model"), "{report}");
    let (_, skipped) = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { .. })
    })
    .await;
    assert!(skipped
        .iter()
        .any(|e| matches!(e, SupervisorEvent::Restarting { attempt: 1, .. })));
    assert!(
        skipped.contains(&SupervisorEvent::SessionReattached {
            session_id: "sess-1".into(),
            method: "session/resume",
        }),
        "{skipped:?}"
    );

    // The new agent answers, in the re-attached session.
    let conn = agent.connection().await.unwrap();
    let done = conn.prompt(prompt("sess-1")).await.unwrap();
    assert_eq!(done.stop_reason, s::StopReason::EndTurn);
    assert_eq!(agent.generation(), 2);
    assert_ne!(agent.pid().unwrap(), first_pid);
    assert_eq!(fx.starts(), 2);
    agent.shutdown().await;
}

/// Starts a supervised agent with `config`, subscribes to its events and opens `sess-1`.
async fn started_with_session(
    config: SupervisorConfig,
) -> (SupervisedAgent, broadcast::Receiver<SupervisorEvent>) {
    let agent = SupervisedAgent::start(config, Router::new()).await.unwrap();
    let events = agent.subscribe();
    agent
        .new_session(s::NewSessionRequest::new("/tmp"))
        .await
        .unwrap();
    (agent, events)
}

/// Starts the agent in `mode`, opens `sess-1`, lets its first prompt crash the agent, and
/// returns once a restarted agent is up, with the events seen on the way.
async fn crash_and_restart(fx: &Fixture, mode: &str) -> (SupervisedAgent, Vec<SupervisorEvent>) {
    let (agent, mut events) = started_with_session(fx.config(mode)).await;
    prompt_fails_with_exit_report(&agent).await;
    let (_, skipped) = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { .. })
    })
    .await;
    (agent, skipped)
}

/// `SupervisedAgent::prompt` on v1: a crash before the answer fails it with the exit report;
/// after the restart the answer ends the turn with its stop reason.
#[tokio::test]
async fn a_v1_turn_through_the_supervisor_ends_with_its_answer_or_the_crash() {
    let fx = Fixture::new("turn-v1");
    let (agent, mut events) = started_with_session(fx.config("resume")).await;
    let err = tokio::time::timeout(Duration::from_secs(30), agent.prompt(prompt("sess-1")))
        .await
        .expect("a crashed agent's turn fails at once")
        .err()
        .expect("the turn failed");
    let RpcError::Call(CallError::Closed { reason }) = &err else {
        panic!("expected Closed, got {err:?}");
    };
    assert!(reason.contains("exited with code 3"), "{reason}");
    wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { generation: 2, .. })
    })
    .await;
    assert_eq!(agent.protocol_version(), Some(1));
    let turn = agent.prompt(prompt("sess-1")).await.unwrap();
    let answer: serde_json::Value = serde_json::from_str(turn.answer().get()).unwrap();
    assert_eq!(answer, serde_json::json!({"stopReason": "end_turn"}));
    assert_eq!(turn.ended().await.unwrap().as_deref(), Some("end_turn"));
    agent.shutdown().await;
}

/// With the v2 offer on (feature `unstable_protocol_v2`), a v1 agent (it answers 1) is
/// supervised as v1: every start negotiates v1 and its session is resumed the v1 way (a v2
/// resume would ask for a replay, which this agent does not send).
#[cfg(feature = "unstable_protocol_v2")]
#[tokio::test]
async fn a_v1_agent_offered_v2_stays_v1_across_a_restart() {
    let fx = Fixture::new("offer-v2");
    let mut config = fx.config("resume");
    config.offer_v2 = true;
    let (agent, mut events) = started_with_session(config).await;
    assert_eq!(agent.protocol_version(), Some(1));
    prompt_fails_with_exit_report(&agent).await;
    let (_, skipped) = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { .. })
    })
    .await;
    assert!(
        skipped.contains(&SupervisorEvent::SessionReattached {
            session_id: "sess-1".into(),
            method: "session/resume",
        }),
        "{skipped:?}"
    );
    assert_eq!(agent.protocol_version(), Some(1));
    let turn = agent.prompt(prompt("sess-1")).await.unwrap();
    assert_eq!(turn.ended().await.unwrap().as_deref(), Some("end_turn"));
    agent.shutdown().await;
}

#[tokio::test]
async fn load_is_used_when_resume_is_not_advertised() {
    let fx = Fixture::new("load");
    let (agent, skipped) = crash_and_restart(&fx, "load").await;
    assert!(
        skipped.contains(&SupervisorEvent::SessionReattached {
            session_id: "sess-1".into(),
            method: "session/load",
        }),
        "{skipped:?}"
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn sessions_are_reported_lost_when_the_agent_cannot_reattach() {
    let fx = Fixture::new("plain");
    let (agent, skipped) = crash_and_restart(&fx, "plain").await;
    let lost = skipped
        .iter()
        .find_map(|e| match e {
            SupervisorEvent::SessionLost { session_id, reason } => Some((session_id, reason)),
            _ => None,
        })
        .expect("a SessionLost event");
    assert_eq!(lost.0, "sess-1");
    assert!(
        lost.1.contains("neither session/resume nor session/load"),
        "{}",
        lost.1
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn the_crash_budget_gives_up_and_says_why() {
    let fx = Fixture::new("budget");
    let (agent, mut events) = started_with_session(fx.config("crash-on-start")).await;
    prompt_fails_with_exit_report(&agent).await;
    let (gave_up, skipped) =
        wait_for(&mut events, |e| matches!(e, SupervisorEvent::GaveUp { .. })).await;
    let SupervisorEvent::GaveUp { reason } = gave_up else {
        unreachable!()
    };
    assert!(reason.contains("crashed 4 times"), "{reason}");
    let failures = skipped
        .iter()
        .filter(|e| matches!(e, SupervisorEvent::RestartFailed { .. }))
        .count();
    assert_eq!(failures, 3, "{skipped:?}");
    assert!(skipped.iter().any(|e| matches!(
        e,
        SupervisorEvent::RestartFailed { error, .. } if error.contains("exited during initialize") && error.contains("config broken")
    )), "{skipped:?}");
    match agent.connection().await {
        Err(SupervisorError::Failed(why)) => assert!(why.contains("not restarting"), "{why}"),
        other => panic!("expected Failed, got {:?}", other.map(|_| ())),
    }
    assert_eq!(fx.starts(), 4);
}

#[tokio::test]
async fn a_silent_agent_is_found_by_the_probe_and_restarted() {
    let fx = Fixture::new("probe");
    let mut config = fx.config("hang-after-init");
    config.probe = Some(HealthProbe {
        interval: Duration::from_millis(100),
        timeout: Duration::from_millis(300),
    });
    let agent = SupervisedAgent::start(config, Router::new()).await.unwrap();
    let mut events = agent.subscribe();
    let (crashed, _) = wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Crashed { .. })
    })
    .await;
    let SupervisorEvent::Crashed { report, .. } = crashed else {
        unreachable!()
    };
    assert!(report.contains("did not answer a health probe"), "{report}");
    wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Started { generation: 2, .. })
    })
    .await;
    // The second agent answers probes: no further crash while a few probes go by.
    let conn = agent.connection().await.unwrap();
    for _ in 0..3 {
        conn.ext_method("acp-rs/ping", serde_json::json!({}))
            .await
            .expect_err("the scripted agent answers pings with method-not-found");
    }
    assert_eq!(agent.generation(), 2);
    agent.shutdown().await;
}

/// The error of a start that must fail.
async fn start_error(config: SupervisorConfig) -> String {
    match SupervisedAgent::start(config, Router::new()).await {
        Err(e) => e,
        Ok(_) => panic!("the agent must not start"),
    }
}

#[tokio::test]
async fn a_start_that_never_initializes_fails_at_the_startup_deadline() {
    let fx = Fixture::new("silent");
    let mut config = fx.config("silent-init");
    config.startup_timeout = Duration::from_millis(500);
    let err = start_error(config).await;
    assert!(err.contains("did not answer initialize"), "{err}");
}

#[tokio::test]
async fn a_missing_command_is_a_clear_start_error() {
    let mut config = Fixture::new("missing").config("plain");
    config.command = AgentCommand::new("no-such-agent-binary-xyz");
    let err = start_error(config).await;
    assert!(err.contains("no-such-agent-binary-xyz"), "{err}");
}

#[tokio::test]
async fn shutdown_stops_the_agent_and_refuses_new_connections() {
    let fx = Fixture::new("shutdown");
    let agent = SupervisedAgent::start(fx.config("resume"), Router::new())
        .await
        .unwrap();
    let mut events = agent.subscribe();
    let pid = agent.pid().unwrap();
    agent.shutdown().await;
    assert_eq!(next_event(&mut events).await, SupervisorEvent::Stopped);
    assert_eq!(
        agent.connection().await.err(),
        Some(SupervisorError::Stopped)
    );
    assert!(!Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid));
    assert_eq!(fx.starts(), 1, "no restart after a requested shutdown");
}

/// `shutdown` while a restarted agent is starting (it never answers `initialize`) stops at
/// once: before, the supervisor waited out the start-up deadline, reported the new agent
/// `Started`, and only then stopped it.
#[tokio::test]
async fn shutdown_during_a_restart_stops_without_waiting_for_the_start() {
    let fx = Fixture::new("shutdown-restart");
    let mut config = fx.config("silent-restart");
    config.startup_timeout = Duration::from_secs(3600);
    let agent = SupervisedAgent::start(config, Router::new()).await.unwrap();
    let mut events = agent.subscribe();
    let session = agent
        .new_session(s::NewSessionRequest::new("/p"))
        .await
        .unwrap();
    let conn = agent.connection().await.unwrap();
    let _ = conn.prompt(prompt(&session.session_id.0)).await; // start 1 crashes on it
    wait_for(&mut events, |e| {
        matches!(e, SupervisorEvent::Restarting { .. })
    })
    .await;
    // The restarted agent is up and silent: the supervisor waits for its `initialize`.
    let started = tokio::time::timeout(Duration::from_secs(30), async {
        while fx.starts() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    started.await.expect("the agent was started again");
    tokio::time::timeout(Duration::from_secs(30), agent.shutdown())
        .await
        .expect("shutdown does not wait for the restarted agent's start-up deadline");
    let (_, skipped) = wait_for(&mut events, |e| *e == SupervisorEvent::Stopped).await;
    assert!(
        !skipped
            .iter()
            .any(|e| matches!(e, SupervisorEvent::Started { .. })),
        "{skipped:?}"
    );
    assert_eq!(
        agent.connection().await.err(),
        Some(SupervisorError::Stopped)
    );
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true)
}
