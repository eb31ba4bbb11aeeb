//! One scripted prompt turn of the demo agent: a plan, a thought, the answer streamed in
//! chunks, the files the prompt names read through the client, a command run in a client
//! terminal, then [`DEMO_FILE`] written after asking permission. Each client call is made only
//! if the client advertised the capability; `session/cancel` ends the turn between steps,
//! between its updates and while it waits (for a delay, for the client's answer to a call).

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_native::driver::RpcError;
use acp_native::AgentSideConnection;
use agent_client_protocol_schema::v1 as s;
use tokio_util::sync::CancellationToken;

use super::script::{answer_chunks, command_in, command_reply, files_named_in};
use super::DemoAgent;

/// Name of the file the demo agent writes in the session's working directory.
pub const DEMO_FILE: &str = "acp-demo.txt";

/// How a turn stopped early.
pub(super) enum Stop {
    /// `session/cancel` arrived (or the user cancelled the permission dialog).
    Cancelled,
    /// A call to the client failed in a way that ends the turn.
    Failed(RpcError),
}

impl From<RpcError> for Stop {
    fn from(e: RpcError) -> Self {
        Stop::Failed(e)
    }
}

/// The state of one prompt turn.
pub(super) struct Turn<'a> {
    pub(super) agent: &'a DemoAgent,
    pub(super) client: AgentSideConnection,
    pub(super) session_id: s::SessionId,
    pub(super) cwd: PathBuf,
    pub(super) cancel: CancellationToken,
}

impl Turn<'_> {
    pub(super) async fn run(&mut self, text: &str) -> Result<s::StopReason, Stop> {
        if let Some(reply) = command_reply(text) {
            self.chunk(&reply).await?;
            return Ok(s::StopReason::EndTurn);
        }
        let caps = self.client.client_capabilities();
        let files = files_named_in(text, &self.cwd);
        let command = command_in(text);
        if text.contains("#mcp") {
            let names = self
                .agent
                .sessions
                .lock()
                .unwrap()
                .get(&*self.session_id.0)
                .map(|s| s.mcp.clone())
                .unwrap_or_default();
            let answer = if names.is_empty() {
                "MCP servers: none".to_string()
            } else {
                format!("MCP servers: {}", names.join(", "))
            };
            self.chunk(&answer).await?;
            return Ok(s::StopReason::EndTurn);
        }

        // 1. The plan: what this turn will do, updated as steps complete.
        let mut plan = vec![plan_entry("Understand the request", Status::InProgress)];
        if caps.read_text_file && !files.is_empty() {
            plan.push(plan_entry(
                format!("Read {} file(s) named in the prompt", files.len()),
                Status::Pending,
            ));
        }
        if caps.terminal {
            plan.push(plan_entry(
                format!("Run `{}`", command.join(" ")),
                Status::Pending,
            ));
        }
        if caps.write_text_file {
            plan.push(plan_entry(format!("Write {DEMO_FILE}"), Status::Pending));
        }
        self.send_plan(&plan).await?;

        // 2. A thought, then the answer streamed in several chunks.
        self.step().await?;
        self.send(s::SessionUpdate::AgentThoughtChunk(s::ContentChunk::new(
            format!(
                "The user wrote {} characters; no model here, just a demo.",
                text.len()
            )
            .into(),
        )))
        .await?;
        if text.contains("#refuse") {
            self.chunk("I won't do that (you asked me to refuse with #refuse).")
                .await?;
            return Ok(s::StopReason::Refusal);
        }
        for piece in answer_chunks(text) {
            self.step().await?;
            self.chunk(&piece).await?;
        }
        if text.contains("#markdown") {
            // Cut every few characters, mid-word: a client must not break words at the cuts.
            for piece in super::script::markdown_chunks() {
                self.chunk(&piece).await?;
            }
        }
        if text.contains("#usage") {
            // The context used: a figure derived from the prompt, out of a 200,000-token window.
            let used = 1000 + text.len() as u64;
            self.send(s::SessionUpdate::UsageUpdate(s::UsageUpdate::new(
                used, 200_000,
            )))
            .await?;
        }
        if text.contains("#max-tokens") {
            self.chunk(" …and here I run out of tokens (#max-tokens).")
                .await?;
            return Ok(s::StopReason::MaxTokens);
        }
        if text.contains("#crash") {
            // For clients' crash handling: the answer so far goes out, then a line on stderr
            // and exit code 70, mid-turn.
            let _ =
                tokio::time::timeout(Duration::from_secs(2), self.client.handle().flushed()).await;
            eprintln!("acp demo-agent: crashing mid-answer as asked (#crash)");
            std::process::exit(70);
        }
        plan[0].status = Status::Completed;
        let mut next = 1;

        // 3. Read the files the prompt names, through the client (it may have unsaved edits).
        if caps.read_text_file && !files.is_empty() {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            for path in &files {
                self.step().await?;
                self.read_file(path).await?;
            }
            plan[next].status = Status::Completed;
            next += 1;
        }

        // 4. Run a command in a client terminal.
        if caps.terminal {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            self.step().await?;
            let ran = self.run_command(&command).await?;
            // A refused or failed command is not a step done.
            plan[next] = if ran {
                plan_entry(plan[next].content.clone(), Status::Completed)
            } else {
                plan_entry(
                    format!("{} (not done)", plan[next].content),
                    Status::Pending,
                )
            };
            next += 1;
        }

        // 5. Write a file, after asking for permission.
        if caps.write_text_file {
            plan[next].status = Status::InProgress;
            self.send_plan(&plan).await?;
            self.step().await?;
            let written = self.write_file(text).await?;
            if written {
                plan[next].status = Status::Completed;
            } else {
                plan[next].content = format!("{} (not done)", plan[next].content);
                plan[next].status = Status::Pending;
            }
            self.send_plan(&plan).await?;
            let end = if written {
                format!("\nI wrote {DEMO_FILE} in {}.", self.cwd.display())
            } else {
                format!("\nOK, I did not write {DEMO_FILE}.")
            };
            self.chunk(&end).await?;
        } else {
            self.send_plan(&plan).await?;
            self.chunk("\n(The client cannot write files, so I wrote nothing.)")
                .await?;
        }
        Ok(s::StopReason::EndTurn)
    }

    /// A pause between steps (the `--delay-ms` option) that ends early, with
    /// [`Stop::Cancelled`], when the turn is cancelled.
    async fn step(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if !self.agent.options.delay.is_zero() {
            tokio::select! {
                _ = self.cancel.cancelled() => return Err(Stop::Cancelled),
                _ = tokio::time::sleep(self.agent.options.delay) => {}
            }
        }
        Ok(())
    }

    /// Awaits a call to the client unless the turn is cancelled first: a cancelled turn does
    /// not wait for the client's answer (a late answer is dropped by the connection).
    async fn unless_cancelled<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, RpcError>>,
    ) -> Result<Result<T, RpcError>, Stop> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(Stop::Cancelled),
            r = call => Ok(r),
        }
    }

    /// Keeps an update for `session/load` without sending it.
    pub(super) fn record(&self, update: s::SessionUpdate) {
        let mut sessions = self.agent.sessions.lock().unwrap();
        if let Some(session) = sessions.get_mut(&*self.session_id.0) {
            session.history.push(update);
        }
    }

    /// Sends (and records) one update, unless the turn was cancelled: once `session/cancel`
    /// is read, the turn writes nothing more and ends `cancelled`.
    async fn send(&self, update: s::SessionUpdate) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        self.record(update.clone());
        let n = s::SessionNotification::new(self.session_id.clone(), update);
        self.client.session_update(n).await?;
        Ok(())
    }

    async fn chunk(&self, text: &str) -> Result<(), Stop> {
        self.send(s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(
            text.to_string().into(),
        )))
        .await
    }

    async fn send_plan(&self, entries: &[PlanEntry]) -> Result<(), Stop> {
        let entries = entries
            .iter()
            .map(|e| {
                s::PlanEntry::new(
                    e.content.clone(),
                    s::PlanEntryPriority::Medium,
                    e.status.wire(),
                )
            })
            .collect();
        self.send(s::SessionUpdate::Plan(s::Plan::new(entries)))
            .await
    }

    async fn tool_call(&self, call: s::ToolCall) -> Result<(), Stop> {
        self.send(s::SessionUpdate::ToolCall(call)).await
    }

    async fn tool_update(&self, id: &str, fields: s::ToolCallUpdateFields) -> Result<(), Stop> {
        self.send(s::SessionUpdate::ToolCallUpdate(s::ToolCallUpdate::new(
            id.to_string(),
            fields,
        )))
        .await
    }

    fn tool_id(&self, what: &str) -> String {
        let n = self
            .agent
            .sessions
            .lock()
            .unwrap()
            .get(&*self.session_id.0)
            .map_or(0, |s| s.history.len());
        format!("{what}-{n}")
    }

    async fn read_file(&self, path: &Path) -> Result<(), Stop> {
        let id = self.tool_id("read");
        self.tool_call(
            s::ToolCall::new(id.clone(), format!("Read {}", path.display()))
                .kind(s::ToolKind::Read)
                .status(s::ToolCallStatus::InProgress)
                .locations(vec![s::ToolCallLocation::new(path)]),
        )
        .await?;
        let request = s::ReadTextFileRequest::new(self.session_id.clone(), path);
        let fields = match self
            .unless_cancelled(self.client.read_text_file(request))
            .await?
        {
            Ok(r) => {
                let lines = r.content.lines().count();
                let first = r.content.lines().next().unwrap_or("").chars().take(80);
                let summary = format!("{lines} line(s); first line: {}", first.collect::<String>());
                s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Completed)
                    .content(vec![summary.into()])
            }
            Err(e) if e.is_closed() => return Err(e.into()),
            // The client refused (outside its roots, not UTF-8...): report it and go on.
            Err(e) => s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::Failed)
                .content(vec![format!("could not read: {}", client_words(&e)).into()]),
        };
        self.tool_update(&id, fields).await
    }

    /// Runs `command` in a client terminal; returns whether it ran and exited with 0.
    async fn run_command(&self, command: &[String]) -> Result<bool, Stop> {
        let id = self.tool_id("run");
        let title = format!("Run `{}`", command.join(" "));
        self.tool_call(
            s::ToolCall::new(id.clone(), title)
                .kind(s::ToolKind::Execute)
                .status(s::ToolCallStatus::Pending)
                .raw_input(serde_json::json!({ "command": command })),
        )
        .await?;
        let request = s::CreateTerminalRequest::new(self.session_id.clone(), command[0].clone())
            .args(command[1..].to_vec())
            .cwd(self.cwd.clone())
            .output_byte_limit(64 * 1024);
        let terminal = match self.client.create_terminal(request).await {
            Ok(t) => t,
            Err(e) if e.is_closed() => return Err(e.into()),
            Err(e) => {
                let why = client_words(&e);
                let fields = s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Failed)
                    .content(vec![format!("could not start: {why}").into()]);
                self.tool_update(&id, fields).await?;
                return Ok(false);
            }
        };
        if self.cancel.is_cancelled() {
            // Cancelled while the client created it: give it back, do not run on.
            let _ = terminal.release().await;
            return Err(Stop::Cancelled);
        }
        // Show the live terminal in the tool call, then wait for it (or for a cancel).
        let embed = s::ToolCallContent::Terminal(s::Terminal::new(terminal.id().clone()));
        self.tool_update(
            &id,
            s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::InProgress)
                .content(vec![embed]),
        )
        .await?;
        let exit = tokio::select! {
            _ = self.cancel.cancelled() => {
                let _ = terminal.kill().await;
                let _ = terminal.release().await;
                return Err(Stop::Cancelled);
            }
            exit = terminal.wait_for_exit() => exit?,
        };
        let output = terminal.current_output().await?;
        let _ = terminal.release().await;
        let ok = exit.exit_status.exit_code == Some(0);
        // Success is the tool call's status (`completed`, an icon in a face) and its rawOutput's
        // exitCode; only how it failed is said in the text, where the status cannot say it.
        let status = match (exit.exit_status.exit_code, &exit.exit_status.signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("exit code {code}")),
            (None, Some(sig)) => Some(format!("killed by {sig}")),
            (None, None) => Some("ended".to_string()),
        };
        let mut text = output.output;
        if output.truncated {
            text.insert_str(0, "[output truncated]\n");
        }
        if let Some(status) = status {
            text.push_str(&format!("[{status}]"));
        }
        self.tool_update(
            &id,
            s::ToolCallUpdateFields::new()
                .status(if ok {
                    s::ToolCallStatus::Completed
                } else {
                    s::ToolCallStatus::Failed
                })
                .content(vec![text.into()])
                .raw_output(serde_json::json!({ "exitCode": exit.exit_status.exit_code })),
        )
        .await?;
        Ok(ok)
    }

    /// Asks permission, then writes [`DEMO_FILE`]. Returns whether it was written.
    async fn write_file(&self, text: &str) -> Result<bool, Stop> {
        let id = self.tool_id("write");
        let path = self.cwd.join(DEMO_FILE);
        let content = format!("The acp demo agent was asked:\n\n{text}\n");
        // The file's text before the edit (through the client: it may have unsaved changes),
        // so the diff shows the change, not a new file. None: the file does not exist yet.
        let old_text = if self.client.client_capabilities().read_text_file {
            let request = s::ReadTextFileRequest::new(self.session_id.clone(), &path);
            match self
                .unless_cancelled(self.client.read_text_file(request))
                .await?
            {
                Ok(r) => Some(r.content),
                Err(e) if e.is_closed() => return Err(e.into()),
                Err(_) => None,
            }
        } else {
            std::fs::read_to_string(&path).ok()
        };
        let call = s::ToolCall::new(id.clone(), format!("Write {DEMO_FILE}"))
            .kind(s::ToolKind::Edit)
            .status(s::ToolCallStatus::Pending)
            .locations(vec![s::ToolCallLocation::new(&path)])
            .content(vec![s::ToolCallContent::Diff(
                s::Diff::new(&path, content.clone()).old_text(old_text),
            )]);
        self.tool_call(call).await?;

        let options = vec![
            s::PermissionOption::new(
                "allow",
                "Allow this write",
                s::PermissionOptionKind::AllowOnce,
            ),
            s::PermissionOption::new(
                "reject",
                "Do not write",
                s::PermissionOptionKind::RejectOnce,
            ),
        ];
        let request = s::RequestPermissionRequest::new(
            self.session_id.clone(),
            s::ToolCallUpdate::new(
                id.clone(),
                s::ToolCallUpdateFields::new()
                    .title(format!("Write {}", path.display()))
                    .kind(s::ToolKind::Edit),
            ),
            options,
        );
        // The client answers `cancelled` itself when it sends `session/cancel`; racing the
        // token as well keeps the turn responsive with clients that are slow to do so.
        let answer = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Stop::Cancelled),
            answer = self.client.request_permission(request) => answer?,
        };
        let allowed = match answer.outcome {
            s::RequestPermissionOutcome::Selected(sel) => &*sel.option_id.0 == "allow",
            // `cancelled`: the turn was cancelled while we waited.
            _ => {
                self.tool_update(
                    &id,
                    s::ToolCallUpdateFields::new().status(s::ToolCallStatus::Failed),
                )
                .await?;
                return Err(Stop::Cancelled);
            }
        };
        if !allowed {
            self.tool_update(
                &id,
                s::ToolCallUpdateFields::new()
                    .status(s::ToolCallStatus::Failed)
                    .content(vec!["the user rejected this write".to_string().into()]),
            )
            .await?;
            return Ok(false);
        }
        self.step().await?;
        let request = s::WriteTextFileRequest::new(self.session_id.clone(), &path, content);
        let fields = match self
            .unless_cancelled(self.client.write_text_file(request))
            .await?
        {
            Ok(_) => s::ToolCallUpdateFields::new().status(s::ToolCallStatus::Completed),
            Err(e) if e.is_closed() => return Err(e.into()),
            Err(e) => s::ToolCallUpdateFields::new()
                .status(s::ToolCallStatus::Failed)
                .content(vec![format!("could not write: {}", client_words(&e)).into()]),
        };
        let ok = matches!(fields.status, Some(s::ToolCallStatus::Completed));
        self.tool_update(&id, fields).await?;
        Ok(ok)
    }
}

#[derive(Clone, Copy)]
enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    fn wire(self) -> s::PlanEntryStatus {
        match self {
            Status::Pending => s::PlanEntryStatus::Pending,
            Status::InProgress => s::PlanEntryStatus::InProgress,
            Status::Completed => s::PlanEntryStatus::Completed,
        }
    }
}

struct PlanEntry {
    content: String,
    status: Status,
}

fn plan_entry(content: impl Into<String>, status: Status) -> PlanEntry {
    PlanEntry {
        content: content.into(),
        status,
    }
}

/// What the client said when it refused a call, on one line (its message, not the JSON-RPC
/// error object).
fn client_words(e: &RpcError) -> String {
    let message = e.to_error_object().message;
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
