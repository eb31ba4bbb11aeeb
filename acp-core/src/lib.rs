//! # acp-core
//!
//! A sans-IO engine for the Agent Client Protocol (ACP): NDJSON framing, JSON-RPC 2.0 dispatch,
//! id correlation, batches, timeouts, cancellation and the ACP rules the engine enforces, for
//! both roles. It has no async runtime, no clock, no IO and no threads: bytes and time go in;
//! bytes, events and the next deadline come out. It builds for `wasm32-unknown-unknown`.
//!
//! ```
//! use acp_core::{Config, Connection, Event, RequestOptions, Role};
//! use serde_json::json;
//!
//! let mut client: Connection = Connection::new(Config::new(Role::Client));
//! let mut agent: Connection = Connection::new(Config::new(Role::Agent));
//! let now = 0;
//! let id = client
//!     .send_request("session/new", Some(&json!({"cwd": "/tmp", "mcpServers": []})),
//!                   RequestOptions::default().timeout(30_000), now)
//!     .unwrap();
//! // Drain rule: after any mutation, drain poll_transmit / poll_event until empty.
//! agent.handle_bytes(&client.poll_transmit().unwrap(), now);
//! let Some(Event::Request { token, method, .. }) = agent.poll_event() else { panic!() };
//! assert_eq!(method, "session/new");
//! agent.respond(token, &json!({"sessionId": "s1"})).unwrap();
//! client.handle_bytes(&agent.poll_transmit().unwrap(), now);
//! let Some(Event::Response { id: done, result: Ok(raw), .. }) = client.poll_event() else { panic!() };
//! assert_eq!((done, raw.get()), (id, r#"{"sessionId":"s1"}"#));
//! ```
//!
//! **Drain rule:** after any call that mutates a [`Connection`] (`handle_*` or a command),
//! drain [`Connection::poll_transmit`] and [`Connection::poll_event`] until they return `None`,
//! then arm a timer for [`Connection::poll_timeout`].

pub mod acp;
pub mod connection;
pub mod error;
mod event_json;
pub mod framing;
pub mod jsonrpc;
pub mod pair;
pub mod sniff;
#[cfg(feature = "typed")]
pub mod typed;
#[cfg(feature = "unstable")]
pub mod unstable;

pub use acp::{Role, TurnState};
pub use connection::{
    AutoAnswerReason, BatchEntry, BatchPolicy, Config, Connection, Event, Millis, RequestOptions,
};
pub use error::{CallError, Error, PeerError, PeerErrorKind};
pub use event_json::events_to_json_array;
pub use jsonrpc::{ErrorCode, ErrorObject, Id};
pub use serde_json::value::RawValue;
