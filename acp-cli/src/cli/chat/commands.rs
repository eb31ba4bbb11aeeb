//! Slash commands at the interactive prompt (a method of [`Chat`]): acp's own (`/help`,
//! `/mode`, `/config`, `/model`, `/sessions`, `/cancel`, `/cancel-tool`, `/queue`) and the agent's (sent to it as the
//! prompt).

use acp_client::display::escape_line;
use agent_client_protocol_schema::v1 as s;

use super::Chat;
use crate::cli::records;

#[cfg(feature = "unstable")]
use crate::cli::render::wire_name;

impl Chat {
    /// A slash command typed at the prompt: `/help`, `/mode [ID]`, `/config [ID VALUE]`,
    /// `/model [VALUE]`, `/sessions` are acp's; the agent's own commands
    /// (`available_commands_update`) go to the agent as the prompt. Returns true when handled
    /// here (nothing to send).
    pub(super) async fn slash(&mut self, cmd: &str, arg: &str) -> bool {
        let agent_commands = self.ui.commands();
        match cmd {
            "help" => {
                // acp's own words are shown as they are; only the agent's are escaped.
                let mut lines = vec![
                    "acp's commands: /help, /status, /mode [ID], /config [ID VALUE], /model [VALUE], /sessions, /cancel, /cancel-tool [ID], /queue, /quit"
                        .to_string(),
                    "files: /attach FILE (sent with the next prompt), @PATH in a prompt (Tab completes it); \
                     the last turn's writes: /diff [FILE] shows them, /undo [FILE] reverts them"
                        .to_string(),
                ];
                #[cfg(feature = "unstable")]
                lines.push(
                    "draft (unstable) ACP: /status also asks session/status; /title TEXT (session/set_title)"
                        .to_string(),
                );
                lines.push(
                    "Tab completes a command; a line ending in \\ (or Alt-Enter) continues on the next; \
                     Up/Down recall earlier prompts; Ctrl-D at a question refuses it"
                        .to_string(),
                );
                lines.push(
                    "a prompt typed during a turn is queued and sent when the turn ends; after Ctrl-C (or a failed turn) \
                     the queue is held: Enter sends it (one per turn), /queue lists it; /queue send|drop N|edit N TEXT|clear"
                        .to_string(),
                );
                lines.push(
                    "/cancel-tool [ID] during a turn cancels one tool call (ACP v2 agents, for a tool call that allows it; \
                     with no ID, the one running); Ctrl-C cancels the whole turn"
                        .to_string(),
                );
                if agent_commands.is_empty() {
                    lines.push("the agent announced no commands".into());
                } else {
                    lines.push("the agent's commands:".into());
                    for (name, description, hint) in &agent_commands {
                        let hint = hint
                            .as_ref()
                            .map(|h| format!(" <{}>", escape_line(h)))
                            .unwrap_or_default();
                        let (name, description) = (escape_line(name), escape_line(description));
                        // One of acp's names: the agent's is reached as `/agent-NAME`.
                        if is_own_command(&name) {
                            lines.push(format!(
                                "  /agent-{name}{hint}  {description} (the agent's /{name})"
                            ));
                        } else {
                            lines.push(format!("  /{name}{hint}  {description}"));
                        }
                    }
                }
                for l in lines {
                    self.ui.notice(&l);
                }
                true
            }
            "mode" => {
                let (current, modes) = self.ui.modes();
                if arg.is_empty() || modes.is_empty() {
                    let list: Vec<String> = modes
                        .iter()
                        .map(|(id, name)| format!("{id} ({name})"))
                        .collect();
                    self.ui.notice(&escape_line(&match current {
                        Some(c) => format!("mode: {c}; the agent's modes: {}", list.join(", ")),
                        None => "the agent has no modes".to_string(),
                    }));
                    return true;
                }
                if !modes.iter().any(|(id, _)| id == arg) {
                    self.ui.warn(&escape_line(&format!(
                        "no mode `{arg}`; the agent's modes: {}",
                        modes
                            .iter()
                            .map(|m| m.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                    return true;
                }
                let request =
                    s::SetSessionModeRequest::new(self.session.id.clone(), arg.to_string());
                let conn = self.link.conn.with_timeout(self.timeouts.request);
                match self
                    .wait("session/set_mode", conn.set_session_mode(request))
                    .await
                {
                    Ok(_) => {
                        // The agent may not send current_mode_update for a change we asked for.
                        self.ui.notice(&escape_line(&format!("mode: {arg}")));
                    }
                    Err(o) => self.ui.warn(o.message.as_deref().unwrap_or("failed")),
                }
                true
            }
            "config" | "model" => {
                let options = self.ui.config_options().unwrap_or_default();
                let options = options.as_array().cloned().unwrap_or_default();
                let (id, value) = if cmd == "model" {
                    let model = options
                        .iter()
                        .find(|o| option_id(o) == Some("model") || o["category"] == "model");
                    match model {
                        Some(o) => {
                            let values: Vec<&str> = o["options"]
                                .as_array()
                                .map(|a| a.iter().filter_map(|c| c["value"].as_str()).collect())
                                .unwrap_or_default();
                            // Worded as /mode words it: the value, then the agent's choices.
                            if !arg.is_empty() && !values.is_empty() && !values.contains(&arg) {
                                self.ui.warn(&escape_line(&format!(
                                    "no model `{arg}`; the agent's models: {}",
                                    values.join(", ")
                                )));
                                return true;
                            }
                            (option_id(o).unwrap_or("model").to_string(), arg.to_string())
                        }
                        None => {
                            self.ui.warn("the agent has no models");
                            return true;
                        }
                    }
                } else {
                    let (id, value) = arg
                        .split_once(char::is_whitespace)
                        .map_or((arg, ""), |(a, b)| (a, b.trim()));
                    (id.to_string(), value.to_string())
                };
                if id.is_empty() || value.is_empty() {
                    if options.is_empty() {
                        self.ui.notice("the agent has no config options");
                    }
                    for o in &options {
                        let choices: Vec<String> = o["options"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|c| c["value"].as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let line = format!(
                            "{} = {} ({}{})",
                            option_id(o).unwrap_or("?"),
                            o["currentValue"]
                                .as_str()
                                .map_or_else(|| o["currentValue"].to_string(), str::to_string),
                            o["name"].as_str().unwrap_or(""),
                            if choices.is_empty() {
                                String::new()
                            } else {
                                format!("; {}", choices.join(", "))
                            }
                        );
                        if id.is_empty() || option_id(o) == Some(id.as_str()) {
                            self.ui.notice(&escape_line(&line));
                        }
                    }
                    return true;
                }
                // v2: its own params (`configId`, a typed value), its answer the full set.
                #[cfg(feature = "unstable_protocol_v2")]
                if self.ui.is_v2() {
                    let option = options.iter().find(|o| option_id(o) == Some(id.as_str()));
                    self.set_config_v2(&id, &value, option).await;
                    return true;
                }
                let request = s::SetSessionConfigOptionRequest::new(
                    self.session.id.clone(),
                    id.clone(),
                    value.as_str(),
                );
                let conn = self.link.conn.with_timeout(self.timeouts.request);
                match self
                    .wait(
                        "session/set_config_option",
                        conn.set_session_config_option(request),
                    )
                    .await
                {
                    Ok(_) => self.ui.notice(&escape_line(&format!("{id} = {value}"))),
                    Err(o) => self.ui.warn(o.message.as_deref().unwrap_or("failed")),
                }
                true
            }
            // `/queue send` is the chat loop's (it sends the next held prompt).
            "queue" => {
                self.stdin.queue.command(arg, false);
                true
            }
            "attach" => {
                self.attach_command(arg);
                true
            }
            "diff" => {
                self.show_edits(arg);
                true
            }
            "undo" => {
                self.undo_edits(arg);
                true
            }
            // Typed at the prompt, so no turn is running (Ctrl-C cancels one while it runs).
            "cancel" => {
                self.ui
                    .notice("no turn is running (press Ctrl-C while a turn runs to cancel it)");
                true
            }
            // Typed at the prompt, so no turn is running.
            "cancel-tool" => {
                self.cancel_tool(arg, false);
                true
            }
            "sessions" => {
                let saved = records::list(&self.session.cwd, |m| self.ui.warn(m));
                if saved.is_empty() {
                    self.ui.notice("no saved sessions in this directory");
                }
                for r in saved {
                    self.ui.notice(&r.line());
                }
                true
            }
            // The status line (stable ACP); with draft ACP, `session/status` too (refused by
            // the engine unless the agent advertised it).
            "status" => {
                self.ui.show_status();
                #[cfg(feature = "unstable")]
                self.draft_status().await;
                true
            }
            // Draft methods: refused by the engine unless the agent advertised them.
            #[cfg(feature = "unstable")]
            "title" => {
                if arg.is_empty() {
                    self.ui.warn("usage: /title TEXT");
                    return true;
                }
                let request = s::SetSessionTitleRequest::new(self.session.id.clone(), arg);
                let conn = self.link.conn.with_timeout(self.timeouts.request);
                match self
                    .wait("session/set_title", conn.set_session_title(request))
                    .await
                {
                    Ok(r) => self.ui.title_set(&r.title),
                    Err(o) => self.ui.warn(o.message.as_deref().unwrap_or("failed")),
                }
                true
            }
            _ if agent_commands.iter().any(|(name, _, _)| name == cmd) => false,
            _ => {
                self.ui.warn(&escape_line(&format!(
                    "no command /{cmd} (type /help; the agent's commands are listed there)"
                )));
                true
            }
        }
    }
}

impl Chat {
    /// `/status` with draft ACP: `session/status` asked, its answer shown.
    #[cfg(feature = "unstable")]
    async fn draft_status(&mut self) {
        let request = s::SessionStatusRequest::new(self.session.id.clone());
        let conn = self.link.conn.with_timeout(self.timeouts.request);
        match self
            .wait("session/status", conn.session_status(request))
            .await
        {
            Ok(r) => self.ui.session_status(&wire_name(&r.status)),
            Err(o) => self.ui.warn(o.message.as_deref().unwrap_or("failed")),
        }
    }
}

/// A config option's id: v1's `id`, v2's `configId`.
fn option_id(o: &serde_json::Value) -> Option<&str> {
    o["id"].as_str().or_else(|| o["configId"].as_str())
}

/// Whether `name` is one of acp's own slash commands (the agent's command of that name is
/// reached as `/agent-NAME`).
pub(super) fn is_own_command(name: &str) -> bool {
    super::input::OWN_COMMANDS.contains(&name)
}

/// `/agent-NAME` typed: the agent's command `NAME` it stands for, when the agent has one and
/// acp has a command of that name too.
pub(super) fn agent_alias(
    cmd: &str,
    agent_commands: &[(String, String, Option<String>)],
) -> Option<String> {
    let name = cmd.strip_prefix("agent-")?;
    (is_own_command(name) && agent_commands.iter().any(|(n, _, _)| n == name))
        .then(|| name.to_string())
}
