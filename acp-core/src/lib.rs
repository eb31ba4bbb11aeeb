//! # acp-core
//!
//! A sans-IO engine for the Agent Client Protocol (ACP): NDJSON framing, JSON-RPC 2.0 dispatch,
//! id correlation, batches, timeouts, cancellation and the ACP rules the engine enforces, for
//! both roles. It has no async runtime, no clock, no IO and no threads: bytes and time go in;
//! bytes, events and the next deadline come out. It builds for `wasm32-unknown-unknown`.
//!
//! A [`Connection`] is one side of one connection, the client's (the editor) or the agent's
//! ([`Role`]). Its API follows the sans-IO naming of quinn-proto and str0m:
//!
//! - inputs: [`Connection::handle_bytes`] (bytes from the peer, split anywhere),
//!   [`Connection::handle_eof`] and [`Connection::handle_timeout`];
//! - commands: [`Connection::send_request`], [`Connection::notify`],
//!   [`Connection::respond`], [`Connection::respond_error`], [`Connection::cancel`],
//!   [`Connection::send_batch`] and [`Connection::close`] (with the feature `typed`, on by
//!   default, typed forms from `acp_core::typed`); a command the protocol does not allow is
//!   refused with an [`Error`] and sends nothing;
//! - outputs: [`Connection::poll_transmit`] (NDJSON bytes for the peer),
//!   [`Connection::poll_event`] (an [`Event`]: what the application must know or do) and
//!   [`Connection::poll_timeout`] (the next deadline).
//!
//! Time is [`Millis`] on a monotonic clock of the host's choosing, passed in as `now`.
//!
//! **Drain rule:** after any call that mutates a [`Connection`] (`handle_*` or a command),
//! drain [`Connection::poll_transmit`] and [`Connection::poll_event`] until they return `None`,
//! then arm a timer for [`Connection::poll_timeout`].
//!
//! ## Example
//!
//! A client and an agent joined in memory (a host writes the bytes to a pipe or socket
//! instead): the client sends `initialize`, the agent answers it, the client gets the response.
//!
//! ```
//! use acp_core::{Config, Connection, Error, Event, RequestOptions, Role};
//! use serde_json::json;
//!
//! let mut client: Connection = Connection::new(Config::new(Role::Client));
//! let mut agent: Connection = Connection::new(Config::new(Role::Agent));
//! let now = 0; // milliseconds on the host's clock
//!
//! let params = json!({
//!     "protocolVersion": 1,
//!     "clientCapabilities": { "fs": { "readTextFile": true } },
//! });
//! let opts = RequestOptions::default().timeout(30_000);
//! let id = client.send_request("initialize", Some(&params), opts, now)?;
//!
//! // Drain the client: its bytes go to the agent; it has no event yet, and one deadline.
//! while let Some(bytes) = client.poll_transmit() {
//!     agent.handle_bytes(&bytes, now);
//! }
//! assert!(client.poll_event().is_none());
//! assert_eq!(client.poll_timeout(), Some(30_000));
//!
//! // Drain the agent: one request arrived. Answer it by its token.
//! let mut requests = Vec::new();
//! while let Some(event) = agent.poll_event() {
//!     match event {
//!         Event::Request { token, method, .. } => requests.push((token, method)),
//!         other => panic!("unexpected {other:?}"),
//!     }
//! }
//! let [(token, method)] = &requests[..] else { panic!("one request expected") };
//! assert_eq!(method, "initialize");
//! agent.respond(*token, &json!({ "protocolVersion": 1, "agentCapabilities": {} }))?;
//!
//! // The agent read what the client advertised and holds to it.
//! assert!(agent.client_capabilities().read_text_file);
//! assert!(matches!(
//!     agent.send_request("terminal/create", Some(&json!({})), RequestOptions::default(), now),
//!     Err(Error::CapabilityNotAdvertised { capability: "terminal", .. })
//! ));
//!
//! // Drain the agent, then the client: the request completed with the agent's result.
//! while let Some(bytes) = agent.poll_transmit() {
//!     client.handle_bytes(&bytes, now);
//! }
//! let Some(Event::Response { id: done, result: Ok(raw), .. }) = client.poll_event() else {
//!     panic!("a successful response expected")
//! };
//! assert_eq!(done, id);
//! let result: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
//! assert_eq!(result["protocolVersion"], 1);
//! assert!(client.agent_initialize_result().is_some());
//! assert!(client.poll_event().is_none());
//! assert!(client.poll_transmit().is_none());
//! assert_eq!(client.poll_timeout(), None, "the deadline went with the request");
//! # Ok::<(), Error>(())
//! ```
//!
//! [`pair::Pair`] does this plumbing for tests: both sides on a virtual clock.
//!
//! ## Features
//!
//! - `typed` (default): `acp_core::typed`, a marker type per stable ACP method binding its
//!   wire name to the params and result types of the official `agent-client-protocol-schema`
//!   crate, and typed `request` / `notify_typed` / `respond_typed`. The engine itself does
//!   not need it.
//! - `unstable`: the draft methods and session updates and the capabilities they need, for
//!   both roles (`acp_core::unstable`; with `typed`, their marker types).

#![warn(missing_docs)]

pub mod acp;
pub mod connection;
pub mod error;
mod event_json;
pub mod framing;
pub mod http_sse;
pub mod jsonrpc;
pub mod pair;
pub mod sniff;
#[cfg(feature = "typed")]
pub mod typed;
#[cfg(feature = "unstable")]
pub mod unstable;
#[cfg(feature = "unstable_protocol_v2")]
pub mod v2;

pub use acp::{Role, TurnState};
pub use connection::{
    AutoAnswerReason, BatchEntry, BatchPolicy, Config, Connection, Event, Millis, RequestOptions,
};
pub use error::{CallError, Error, PeerError, PeerErrorKind};
pub use event_json::events_to_json_array;
pub use jsonrpc::{ErrorCode, ErrorObject, Id};
pub use serde_json::value::RawValue;
