//! ACP v2 (draft) with the SDK's v2 connection types (`Client.v2()`, `Agent.v2()`, feature
//! `unstable_protocol_v2` of the SDK; this program's feature `v2`, on for the 5.2.0 pin):
//!
//!   rust-sdk-peer v2-client [--deny] -- COMMAND ARGS…   the SDK's v2 client against an agent
//!        process: `initialize` (v2), `session/new`, one prompt whose turn ends with the idle
//!        `state_update` (permission questions answered allow, or reject with `--deny`), then a
//!        `session/resume` replaying from the start; prints one JSON report line
//!   rust-sdk-peer v2-agent                             the SDK's v2 agent on stdio: `session/new`,
//!        a prompt acknowledged with its message id, then the echo, `running`, a permission
//!        question, the answer in chunks and the idle `state_update`
//!
//! Both wait on messages, never on time (the caller bounds the run).

use std::sync::{Arc, Mutex};

use agent_client_protocol as sdk;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, ConnectTo};
use futures::channel::mpsc;
use futures::StreamExt;
use serde_json::{json, Value};

fn implementation() -> v2::Implementation {
    v2::Implementation::new("acp-rs-interop-sdk-v2", "0")
}

fn text_of(block: &v2::ContentBlock) -> String {
    match block {
        v2::ContentBlock::Text(t) => t.text.clone(),
        _ => String::new(),
    }
}

/// The kind of an update, as on the wire.
fn kind(u: &v2::SessionUpdate) -> String {
    serde_json::to_value(u)
        .ok()
        .and_then(|v| v["sessionUpdate"].as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn client_main(args: &[String]) -> i32 {
    let deny = args.iter().any(|a| a == "--deny");
    let Some(dash) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: rust-sdk-peer v2-client [--deny] -- COMMAND ARGS…");
        return 2;
    };
    let command = &args[dash + 1..];
    if command.is_empty() {
        eprintln!("rust-sdk-peer v2-client: no agent command");
        return 2;
    }
    let mut config = AcpAgentConfig::new(command[0].clone());
    for a in &command[1..] {
        config = config.arg(a.clone());
    }
    let res = crate::common::runtime().block_on(client(deny, AcpAgent::new(config)));
    match res {
        Ok(report) => {
            println!("{report}");
            0
        }
        Err(e) => {
            println!("{}", json!({ "failed": format!("{e:?}") }));
            1
        }
    }
}

async fn client(
    deny: bool,
    transport: impl ConnectTo<Client> + 'static,
) -> Result<Value, sdk::Error> {
    let (updates_tx, mut updates) = mpsc::unbounded::<v2::UpdateSessionNotification>();
    let questions = Arc::new(Mutex::new(Vec::<String>::new()));
    let asked = questions.clone();
    Client
        .v2()
        .on_receive_notification(
            async move |n: v2::UpdateSessionNotification, _cx| {
                updates_tx
                    .unbounded_send(n)
                    .map_err(sdk::Error::into_internal_error)
            },
            sdk::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: v2::RequestPermissionRequest, responder, _cx| {
                let want = if deny {
                    v2::PermissionOptionKind::RejectOnce
                } else {
                    v2::PermissionOptionKind::AllowOnce
                };
                asked.lock().unwrap().push(r.title.clone());
                let outcome = match r.options.iter().find(|o| o.kind == want) {
                    Some(o) => v2::RequestPermissionOutcome::Selected(
                        v2::SelectedPermissionOutcome::new(o.option_id.clone()),
                    ),
                    None => v2::RequestPermissionOutcome::Cancelled(
                        v2::CancelledPermissionOutcome::new(),
                    ),
                };
                responder.respond(v2::RequestPermissionResponse::new(outcome))
            },
            sdk::on_receive_request!(),
        )
        .connect_with(transport, async move |cx| {
            let init = cx
                .send_request(v2::InitializeRequest::new(
                    ProtocolVersion::V2,
                    implementation(),
                ))
                .block_task()
                .await?;
            let cwd = std::env::current_dir().map_err(sdk::Error::into_internal_error)?;
            let opened = cx
                .build_session(cwd.clone())
                .start_session()
                .block_task()
                .await?;
            let session = opened.session;
            let session_id = session.session_id().clone();
            let accepted = session.send_prompt("hello").block_task().await?;
            // The turn: every update until the idle state_update.
            let mut kinds = Vec::new();
            let mut said = String::new();
            let stop = loop {
                let Some(n) = updates.next().await else {
                    return Err(sdk::Error::internal_error().data("the connection ended mid-turn"));
                };
                kinds.push(kind(&n.update));
                // The stop reason as on the wire (the update's `stopReason` member).
                let wire = serde_json::to_value(&n.update).unwrap_or_default();
                match n.update {
                    v2::SessionUpdate::AgentMessageChunk(c) => said.push_str(&text_of(&c.content)),
                    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(_)) => {
                        break wire["stopReason"].clone()
                    }
                    _ => {}
                }
            };
            // A resume replaying from the start: the messages, replay_complete, the state.
            let resume = v2::ResumeSessionRequest::new(session_id.clone(), cwd)
                .replay_from(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
            let resumed = cx.send_request(resume);
            let mut replayed = Vec::new();
            loop {
                let Some(n) = updates.next().await else {
                    return Err(
                        sdk::Error::internal_error().data("the connection ended mid-replay")
                    );
                };
                let k = kind(&n.update);
                replayed.push(k.clone());
                if k == "replay_complete" {
                    break;
                }
            }
            resumed.block_task().await?;
            Ok(json!({
                "protocolVersion": init.protocol_version,
                "promptMessageId": accepted.message_id,
                "kinds": kinds,
                "said": said,
                "stopReason": stop,
                "questions": *questions.lock().unwrap(),
                "replayed": replayed,
            }))
        })
        .await
}

pub fn agent_main() -> i32 {
    let res = crate::common::runtime().block_on(agent().connect_to(sdk::Stdio::new()));
    match res {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rust-sdk-peer v2-agent: {e:?}");
            1
        }
    }
}

fn agent() -> impl ConnectTo<Client> {
    Agent
        .v2()
        .on_receive_request(
            async |r: v2::InitializeRequest, responder, _cx| {
                if r.protocol_version != ProtocolVersion::V2 {
                    return responder.respond_with_error(sdk::Error::invalid_params());
                }
                responder.respond(
                    v2::InitializeResponse::new(ProtocolVersion::V2, implementation())
                        .capabilities(v2::AgentCapabilities::new().session(v2::SessionCapabilities::new())),
                )
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async |_r: v2::NewSessionRequest, responder, _cx| {
                responder.respond(v2::NewSessionResponse::new(v2::SessionId::new("sdk-v2-1")))
            },
            sdk::on_receive_request!(),
        )
        .on_receive_request(
            async |r: v2::PromptRequest, responder, cx| {
                let said: String = r.prompt.iter().map(text_of).collect();
                responder.respond(v2::PromptResponse::new("u1"))?;
                let sid = r.session_id.clone();
                let up = move |u: v2::SessionUpdate| v2::UpdateSessionNotification::new(sid.clone(), u);
                cx.send_notification(up(v2::SessionUpdate::UserMessage(
                    v2::UserMessage::new(v2::MessageId::new("u1")).content(r.prompt.clone()),
                )))?;
                cx.send_notification(up(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(
                    v2::RunningStateUpdate::new(),
                ))))?;
                let question = v2::RequestPermissionRequest::new(
                    r.session_id.clone(),
                    "Go on?",
                    vec![
                        v2::PermissionOption::new("yes", "Yes", v2::PermissionOptionKind::AllowOnce),
                        v2::PermissionOption::new("no", "No", v2::PermissionOptionKind::RejectOnce),
                    ],
                );
                let cx2 = cx.clone();
                cx.spawn(async move {
                    let answer = cx2.send_request(question).block_task().await;
                    let allowed = matches!(
                        answer.map(|a| a.outcome),
                        Ok(v2::RequestPermissionOutcome::Selected(s)) if s.option_id.0.as_ref() == "yes"
                    );
                    let reply = format!("SDK v2 agent heard: {said} (allowed: {allowed})");
                    for word in reply.split_inclusive(' ') {
                        cx2.send_notification(up(v2::SessionUpdate::AgentMessageChunk(
                            v2::ContentChunk::new(word.into(), v2::MessageId::new("a1")),
                        )))?;
                    }
                    cx2.send_notification(up(v2::SessionUpdate::StateUpdate(v2::StateUpdate::Idle(
                        v2::IdleStateUpdate::new().stop_reason(v2::StopReason::EndTurn),
                    ))))
                })
            },
            sdk::on_receive_request!(),
        )
}
