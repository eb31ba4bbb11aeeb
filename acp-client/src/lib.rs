//! # acp-client
//!
//! What an ACP *client* decides, written once and shared by every face: `acp chat` (native),
//! the VS Code extension and the browser client (both through `acp-wasm`). The faces only ask
//! and show; the decisions are here, as plain functions over plain data, so the same case
//! tables (`tests/client/*.json`) are replayed by the Rust tests and by the extension's unit
//! tests through the wasm build.
//!
//! Like `acp-core`, this crate has no async runtime, no clock, no IO and no threads: a face
//! gathers the facts (a path's place under the root, whether the file is executable, the
//! user's environment) and gets back a decision.
//!
//! ## Example
//!
//! A face folds the `session/update`s of a prompt turn into a [`thread::Thread`] (what it
//! renders and saves) and answers the agent's permission request automatically, as `acp chat
//! --yes` does: `allow_once`, never the "always" rule the agent also offers.
//!
//! ```
//! use acp_client::permission::{
//!     self, AutoMode, CancelReason, Decision, OptionKind, PermissionOption,
//! };
//! use acp_client::thread::{Applied, Block, Entry, Limits, Thread, Turn};
//!
//! let mut thread = Thread::default();
//! thread.begin_turn(vec![Block::text("what is in notes.txt?")]);
//! assert_eq!(thread.turn, Turn::Running);
//!
//! // Each `session/update`'s params, as the agent sent them (JSON text).
//! let applied = thread.apply_json(r#"{"sessionId": "s1", "update": {
//!     "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Let me "}}}"#);
//! assert!(matches!(applied, Ok(Applied::Chunk { entry: 1, started: true, .. })));
//! let applied = thread.apply_json(r#"{"sessionId": "s1", "update": {
//!     "sessionUpdate": "agent_message_chunk",
//!     "content": {"type": "text", "text": "read it."}}}"#);
//! // A streaming renderer prints just the new text.
//! let Ok(Applied::Chunk { entry: 1, started: false, block }) = applied else { panic!() };
//! assert_eq!(block.text.as_deref(), Some("read it."));
//! thread.apply_json(r#"{"sessionId": "s1", "update": {"sessionUpdate": "tool_call",
//!     "toolCallId": "t1", "title": "Read notes.txt", "kind": "read", "status": "pending"}}"#)
//!     .unwrap();
//!
//! // The agent asks before it reads: the options of its `session/request_permission`.
//! let options: Vec<PermissionOption> = serde_json::from_str(r#"[
//!     {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
//!     {"optionId": "once", "name": "Allow", "kind": "allow_once"},
//!     {"optionId": "no", "name": "Reject", "kind": "reject_once"}]"#)?;
//! let answer = permission::decide(&options, AutoMode::AllowOnce);
//! assert_eq!(answer, Decision::Select { option_id: "once".into(), kind: OptionKind::AllowOnce });
//! // `--deny` picks `reject_once`; with no options at all the turn is cancelled.
//! assert!(matches!(permission::decide(&options, AutoMode::Deny),
//!     Decision::Select { kind: OptionKind::RejectOnce, .. }));
//! assert_eq!(permission::decide(&[], AutoMode::AllowOnce),
//!     Decision::Cancel { reason: CancelReason::NoOptions });
//!
//! thread.apply_json(r#"{"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update",
//!     "toolCallId": "t1", "status": "completed"}}"#).unwrap();
//! let stop = thread.end_turn_json(r#"{"stopReason": "end_turn"}"#).unwrap();
//! assert_eq!(stop, "end_turn");
//!
//! // The prompt, the agent's message (its chunks joined) and the tool call.
//! assert_eq!(thread.entries.len(), 3);
//! let Entry::Agent { content, .. } = &thread.entries[1] else { panic!() };
//! assert_eq!(content[0].text.as_deref(), Some("Let me read it."));
//! let (number, call) = thread.tool("t1").unwrap();
//! assert_eq!((number, call.status.as_str()), (2, "completed"));
//! assert_eq!(thread.session_id.as_deref(), Some("s1"));
//!
//! // A view that redraws takes each changed entry once; the saved form reads back equal.
//! assert_eq!(thread.take_delta().entries.len(), 3);
//! assert!(!thread.has_changes());
//! let saved = Thread::from_json(&thread.to_json(), Limits::default())?;
//! assert_eq!(saved, thread);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Modules
//!
//! - [`auth`]: which `authMethods` entry to use, never an interactive login uninvited.
//! - [`mcp`]: MCP servers from the users' usual config file, kept per the agent's capabilities.
//! - [`permission`]: which option an automatic answer picks, what a request with no options
//!   or a dismissed question answers, and whether that cancels the turn.
//! - [`writes`]: which file writes need the user's question (files that git, shells, editors
//!   or build tools execute or obey, and executables), whatever the agent asked before.
//! - [`display`]: how agent-supplied text is shown, the one escaper of every face: on one line
//!   (a command line quoted so what is shown is exactly what runs, control and bidi characters
//!   escaped), multi-line text with its lines kept and nothing a terminal would act on, and a
//!   URL without its credentials.
//! - [`edits`]: the record of a turn's edits (each file's text before the agent's first write
//!   and after its last) and the undo decision: put back, remove a created file, or refuse when
//!   the file changed since.
//! - [`queue`]: the prompt queue: prompts sent while a turn runs wait, editable and removable,
//!   and go in order when it ends; a cancelled or failed turn holds them.
//! - [`errors`]: one JSON-RPC error code and `data.reason` per way an fs/terminal request fails.
//! - [`env`](mod@env): the environment allowlist, valid variable names, and what an agent's `env`
//!   changes from the user's.
//! - [`question`]: the permission question every face shows: title, options, and what it is
//!   about (the tool call's kind and locations, the change as a unified diff, the command
//!   line), every agent string escaped onto a bounded line, in bounded work for any input.
//! - [`prompt`]: the content block each attachment (a mentioned file or symbol, the selection,
//!   an image) is sent as, per the agent's `promptCapabilities`, or why it is refused.
//! - [`registry`]: agents by name from the ACP registry format (a snapshot ships built in).
//! - [`remote`]: whether a token may be sent to a remote agent (never in clear across a network).
//! - [`restart`]: restarting a crashed agent (backoff, crash budget, circuit breaker).
//! - [`session`]: one session's life: how it is opened or reopened, its replay, what happens
//!   after a crash, and what the user is told of whether the agent remembers the conversation.
//! - [`terminal`]: the `terminal/create` question: checks and the text every face shows.
//! - [`thread`]: the conversation: `session/update`s folded into a saved, versioned thread
//!   that every face renders from.
//! - [`windows`]: starting an agent on Windows (`PATH` + `PATHEXT` lookup that never searches
//!   the working directory, npm `.cmd` shims run through `node` without a shell, other batch
//!   files through `cmd.exe` with every argument quoted for it) and Windows path comparison.

#![warn(missing_docs)]

pub mod auth;
pub mod display;
pub mod edits;
pub mod env;
pub mod errors;
pub mod mcp;
pub mod permission;
pub mod prompt;
pub mod question;
pub mod queue;
pub mod registry;
pub mod remote;
pub mod restart;
pub mod session;
pub mod terminal;
pub mod thread;
pub mod windows;
pub mod writes;
