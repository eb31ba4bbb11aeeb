//! A client host: spawns an agent, opens a session in the current directory, streams one
//! prompt turn (the agent's text to stdout, its tool calls to stderr), and answers the agent's
//! permission questions and its `fs/read_text_file` / `fs/write_text_file` requests.
//!
//! ```sh
//! cargo build -p acp-cli    # the demo agent: target/debug/acp demo-agent
//! cargo run -p acp-native --example client -- target/debug/acp demo-agent
//! cargo run -p acp-native --example client -- --prompt "what is in notes.txt?" target/debug/acp demo-agent
//! ```
//!
//! Permission questions get `acp chat --yes`'s answer, acp-client's rule: `allow_once`, never
//! an "always" rule; with nothing to allow, `reject_once`, else the turn is cancelled. Files
//! are read and written by acp-native's `FsService`, confined to the session's directory
//! (atomic writes; writes that change what runs, such as `.git/` or shell configuration, are
//! refused). The agent gets the default environment allowlist: pass an API key it needs with
//! `AgentCommand::env(EnvPolicy::default().allow("NAME"))`.

use std::error::Error;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use acp_native::acp_client::{display, permission};
use acp_native::fs_service::{AccessScope, FsConfig, FsError, FsService};
use acp_native::process::AgentCommand;
use acp_native::schema::{v1 as s, ProtocolVersion};
use acp_native::{transport, typed, DriverConfig, ErrorCode, ErrorObject, Role, Router};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut prompt = String::from("Hello! What can you do?");
    if args.len() > 2 && args[0] == "--prompt" {
        prompt = args.remove(1);
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: client [--prompt TEXT] AGENT_COMMAND [ARGS...]");
        std::process::exit(2);
    };
    let agent = AgentCommand::new(program).args(rest);
    let cwd = std::env::current_dir()?;

    let stop = run_turn(agent, &cwd, &prompt, |update| match update {
        s::SessionUpdate::AgentMessageChunk(s::ContentChunk {
            content: s::ContentBlock::Text(text),
            ..
        }) => {
            // Agent text is shown escaped: no escape sequence reaches the terminal.
            print!("{}", display::escape_text(&text.text));
            let _ = std::io::stdout().flush();
        }
        s::SessionUpdate::ToolCall(call) => {
            eprintln!("[tool] {}", display::escape_line(&call.title));
        }
        _ => {}
    })
    .await?;
    println!();
    eprintln!("[turn ended: {stop:?}]");
    Ok(())
}

/// One prompt turn with the agent `command`, in a new session in `cwd`. Every
/// `session/update` goes to `on_update`, in order, as it arrives; returns how the turn ended.
/// The agent is stopped before this returns.
pub async fn run_turn(
    command: AgentCommand,
    cwd: &Path,
    prompt: &str,
    on_update: impl Fn(&s::SessionUpdate) + Send + Sync + 'static,
) -> Result<s::StopReason, Box<dyn Error>> {
    // Reads and writes only within the session's directory.
    let fs = Arc::new(FsService::new(
        FsConfig::new([cwd]).reads(AccessScope::WithinRoots),
    ));
    let (reads, writes) = (fs.clone(), fs);

    // What the agent may send us: one typed handler per method. Requests each run on their
    // own task; notifications run one at a time, in order.
    let router = Router::new()
        .notification::<typed::SessionUpdate, _, _>(move |n: s::SessionNotification, _cx| {
            on_update(&n.update);
            async {}
        })
        .route::<typed::RequestPermission, _, _>(|req: s::RequestPermissionRequest, cx| {
            async move {
                let title = req
                    .tool_call
                    .fields
                    .title
                    .as_deref()
                    .unwrap_or("a tool call");
                let outcome = match permission_answer(&req.options) {
                    permission::Decision::Select { option_id, kind } => {
                        eprintln!(
                            "[permission] {}: {}",
                            display::escape_line(title),
                            kind.label()
                        );
                        s::RequestPermissionOutcome::Selected(s::SelectedPermissionOutcome::new(
                            option_id,
                        ))
                    }
                    // `cancelled` is the answer of a client that cancelled the turn, so
                    // `session/cancel` goes first.
                    _ => {
                        eprintln!("[permission] {}: cancelling", display::escape_line(title));
                        let cancel = s::CancelNotification::new(req.session_id.clone());
                        let _ = cx.agent().cancel(cancel).await;
                        s::RequestPermissionOutcome::Cancelled
                    }
                };
                Ok(s::RequestPermissionResponse::new(outcome))
            }
        })
        .route::<typed::ReadTextFile, _, _>(move |req: s::ReadTextFileRequest, _cx| {
            let fs = reads.clone();
            async move { fs.read_text_file(req).await.map_err(fs_error) }
        })
        .route::<typed::WriteTextFile, _, _>(move |req: s::WriteTextFileRequest, _cx| {
            let fs = writes.clone();
            async move { fs.write_text_file(req).await.map_err(fs_error) }
        });

    let config = DriverConfig::new(Role::Client);
    let (agent, child) = transport::spawn_agent(&command.cwd(cwd), router, config)?;
    let turn = async {
        // Starting can be slow (an `npx` download); a turn takes as long as it takes.
        let starting = agent.with_timeout(Duration::from_secs(120));
        let fs_caps = s::FileSystemCapabilities::new()
            .read_text_file(true)
            .write_text_file(true);
        let init = s::InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(s::ClientCapabilities::new().fs(fs_caps))
            .client_info(s::Implementation::new("acp-native-example", "0.1.0"));
        starting.initialize(init).await?;
        let session = starting.new_session(s::NewSessionRequest::new(cwd)).await?;
        let request = s::PromptRequest::new(session.session_id, vec![prompt.into()]);
        let done = agent.prompt(request).await?;
        // The answer can overtake the turn's last updates: let them reach `on_update` first.
        agent.handle().notifications_handled().await;
        Ok(done.stop_reason)
    };
    let result = turn.await;
    // Closes the agent's stdin, then SIGTERM and SIGKILL to its process group, 2 s apart.
    child.shutdown(Duration::from_secs(2)).await;
    result
}

/// `acp chat --yes`'s answer to a permission question (acp-client's rule), given the agent's
/// options. With nobody to ask, a question it leaves to the user gets a dismissed question's
/// answer.
fn permission_answer(options: &[s::PermissionOption]) -> permission::Decision {
    let options: Vec<permission::PermissionOption> = options
        .iter()
        .map(|o| permission::PermissionOption {
            option_id: o.option_id.0.to_string(),
            name: o.name.clone(),
            kind: match o.kind {
                s::PermissionOptionKind::AllowOnce => permission::OptionKind::AllowOnce,
                s::PermissionOptionKind::AllowAlways => permission::OptionKind::AllowAlways,
                s::PermissionOptionKind::RejectOnce => permission::OptionKind::RejectOnce,
                s::PermissionOptionKind::RejectAlways => permission::OptionKind::RejectAlways,
                other => permission::OptionKind::Other(format!("{other:?}")),
            },
        })
        .collect();
    match permission::decide(&options, permission::AutoMode::AllowOnce) {
        permission::Decision::Ask => permission::dismissed(&options),
        decision => decision,
    }
}

/// A file error as the JSON-RPC error the agent gets: code, message and `data` (ACP's
/// -32002 "Resource not found" for a missing file).
fn fs_error(e: FsError) -> ErrorObject {
    let mut error = ErrorObject::new(ErrorCode::from_code(i64::from(e.code())), e.message());
    error.data = e.data();
    error
}
