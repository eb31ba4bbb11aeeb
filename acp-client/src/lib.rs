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
//! - [`errors`]: one JSON-RPC error code and `data.reason` per way an fs/terminal request fails.
//! - [`env`](mod@env): the environment allowlist, valid variable names, and what an agent's `env`
//!   changes from the user's.
//! - [`prompt`]: the content block each attachment (a mentioned file or symbol, the selection,
//!   an image) is sent as, per the agent's `promptCapabilities`, or why it is refused.
//! - [`registry`]: agents by name from the ACP registry format (a snapshot ships built in).
//! - [`restart`]: restarting a crashed agent (backoff, crash budget, circuit breaker).
//! - [`session`]: one session's life: how it is opened or reopened, its replay, what happens
//!   after a crash, and what the user is told of whether the agent remembers the conversation.
//! - [`terminal`]: the `terminal/create` question: checks and the text every face shows.
//! - [`thread`]: the conversation: `session/update`s folded into a saved, versioned thread
//!   that every face renders from.

pub mod auth;
pub mod display;
pub mod env;
pub mod errors;
pub mod mcp;
pub mod permission;
pub mod prompt;
pub mod registry;
pub mod restart;
pub mod session;
pub mod terminal;
pub mod thread;
pub mod writes;
