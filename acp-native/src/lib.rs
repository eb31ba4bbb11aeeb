//! # acp-native
//!
//! A tokio + `tower` host for the Agent Client Protocol: the async driver around acp-core's
//! sans-IO [`acp_core::Connection`], for both roles. An editor (the client) uses it to run
//! agents and answer their requests; an agent uses it to serve a client. It brings the
//! transports (this process's stdio, an agent subprocess, TCP, WebSocket, in memory, and,
//! with the feature `remote`, agents over HTTP + SSE and WebSocket), typed calls for each
//! role ([`ClientSideConnection`], [`AgentSideConnection`]), a [`Router`] of typed handlers
//! with `tower` layers ([`layers`]), supervised agent processes ([`supervisor`],
//! [`process`]) and the client's file and terminal services ([`fs_service`],
//! [`terminal_service`]). The `acp` command (package `acp-cli`) is built on it.
//!
//! ## Example
//!
//! A client and an agent joined in memory (a host would use [`transport::spawn_agent`] or
//! [`transport::stdio`] instead): the agent streams its answer to a prompt as
//! `session/update`s; the client's router collects them.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use acp_native::schema::{v1 as s, ProtocolVersion};
//! use acp_native::{transport, typed, AgentSideConnection, ClientSideConnection};
//! use acp_native::{DriverConfig, Role, Router};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Two ends of an in-memory pipe, at most 64 KiB in flight each way.
//! let (agent_end, client_end) = transport::duplex(64 << 10);
//!
//! // The agent: a typed handler per method. The prompt's handler calls the client back.
//! let agent = Router::new()
//!     .route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _cx| async move {
//!         Ok(s::InitializeResponse::new(p.protocol_version))
//!     })
//!     .route::<typed::NewSession, _, _>(|_p: s::NewSessionRequest, _cx| async move {
//!         Ok(s::NewSessionResponse::new("session-1"))
//!     })
//!     .route::<typed::Prompt, _, _>(|p: s::PromptRequest, cx| async move {
//!         for text in ["Hello", ", world"] {
//!             let chunk = s::SessionUpdate::AgentMessageChunk(s::ContentChunk::new(text.into()));
//!             let update = s::SessionNotification::new(p.session_id.clone(), chunk);
//!             cx.client().session_update(update).await.map_err(|e| e.to_error_object())?;
//!         }
//!         Ok(s::PromptResponse::new(s::StopReason::EndTurn))
//!     });
//! let (r, w) = agent_end;
//! let _agent = AgentSideConnection::connect(r, w, agent, DriverConfig::new(Role::Agent));
//!
//! // The client: it handles the agent's `session/update`s (one at a time, in order).
//! let text = Arc::new(Mutex::new(String::new()));
//! let seen = text.clone();
//! let client = Router::new().notification::<typed::SessionUpdate, _, _>(
//!     move |n: s::SessionNotification, _cx| {
//!         if let s::SessionUpdate::AgentMessageChunk(chunk) = n.update {
//!             if let s::ContentBlock::Text(t) = chunk.content {
//!                 seen.lock().unwrap().push_str(&t.text);
//!             }
//!         }
//!         async {}
//!     },
//! );
//! let (r, w) = client_end;
//! let conn = ClientSideConnection::connect(r, w, client, DriverConfig::new(Role::Client));
//!
//! let init = conn.initialize(s::InitializeRequest::new(ProtocolVersion::V1)).await?;
//! assert_eq!(init.protocol_version, ProtocolVersion::V1);
//! let session = conn.new_session(s::NewSessionRequest::new("/tmp")).await?;
//! let prompt = s::PromptRequest::new(session.session_id, vec!["Hi!".into()]);
//! let done = conn.prompt(prompt).await?;
//! assert_eq!(done.stop_reason, s::StopReason::EndTurn);
//!
//! // The answer can arrive before the last update went through its handler: wait for them.
//! conn.handle().notifications_handled().await;
//! assert_eq!(*text.lock().unwrap(), "Hello, world");
//!
//! // Closing fails whatever is still pending with the reason, and ends the agent's side too.
//! conn.close("done");
//! assert_eq!(conn.closed().await, "done");
//! # Ok(())
//! # }
//! ```
//!
//! `acp-native/API.md` walks through the API with complete programs (`examples/`: a client
//! host that spawns an agent, an agent, a `tower` layer).
//!
//! ## What a host needs, re-exported
//!
//! The types this crate's API takes and gives come from acp-core (the engine), acp-client
//! (the client's decisions) and the official schema crate; each is re-exported here, so a
//! host depends on acp-native (and tokio) alone: [`schema`] (`schema::v1` holds every
//! request, response and `session/update` type), [`typed`] (a marker type per method, for
//! [`Router::route`] and the typed calls), [`Role`], [`RawValue`], [`ErrorObject`],
//! [`ErrorCode`], [`Id`], [`CallError`], [`CancellationToken`], [`serde_json`] (extension
//! methods' values, an error's `data`), and the crates themselves as [`acp_core`] and
//! [`acp_client`].
//!
//! ## Features
//!
//! - `remote` (default): remote agents over HTTP + SSE and WebSocket (`remote`: a client
//!   by URL, and `RemoteServer`, which serves any agent that way).
//! - `unstable`: draft ACP (acp-core's and acp-client's `unstable`: the draft methods' typed
//!   markers and capability rules, `ClientSideConnection::fork_session`…).

#![warn(missing_docs)]

pub mod agent;
pub mod client;
pub mod driver;
pub mod fs_service;
pub mod layers;
pub mod process;
#[cfg(feature = "remote")]
pub mod remote;
pub mod router;
pub mod supervisor;
pub mod terminal_service;
pub mod transport;

pub use agent::{AgentSideConnection, TerminalHandle};
pub use client::ClientSideConnection;
pub use driver::{
    ConnectionHandle, DriverConfig, Incoming, RpcClient, RpcError, RpcRequest, RpcService,
};
pub use router::{RequestContext, Router};

/// The client's decisions (acp-client), shared by every face: permission answers, the writes
/// that need the user's question, the display escaper, the conversation model and more.
pub use acp_client;
/// The engine this crate drives (acp-core): its configuration ([`DriverConfig::core`]), the
/// errors of calls it refuses ([`RpcError::Refused`]), ACP's method names and capability rules
/// ([`acp_core::acp`]).
pub use acp_core;
/// A marker type per ACP method, binding its wire name to its schema types: what
/// [`Router::route`], [`Router::notification`] and the connections' `call::<M>` take.
pub use acp_core::typed;
pub use acp_core::{CallError, ErrorCode, ErrorObject, Id, RawValue, Role};
/// The official ACP schema crate (`agent-client-protocol-schema`, the version acp-core is
/// built on): `schema::v1` holds the params and results of every method, and the
/// `session/update` types ([`schema::v1::SessionUpdate`]).
pub use agent_client_protocol_schema as schema;
/// JSON values, as extension methods ([`ClientSideConnection::ext_method`]) and an error's
/// `data` ([`ErrorObject::data`]) take and give them.
pub use serde_json;
/// Fires when a request is cancelled or its connection closes ([`Incoming::cancel`],
/// [`RequestContext::cancel`], [`ConnectionHandle::cancellation_token`]).
pub use tokio_util::sync::CancellationToken;
