//! Remote agents: ACP over HTTP + SSE and WebSocket, with the wire behaviour of the official
//! `agent-client-protocol-http` 5 crate (feature `remote`).
//!
//! * [`wire`]: the wire's constants (path, header names, limits), its session-routing rules and
//!   the SSE framing (an event writer and an incremental reader), shared by server and client:
//!   acp-core's sans-IO [`acp_core::http_sse`], which the VS Code extension uses too (through
//!   acp-wasm).
//! * [`client`]: connecting to a remote agent by URL (`http(s)://…/acp`, `ws(s)://…/acp`),
//!   bridged to the driver's NDJSON streams ([`crate::ClientSideConnection::connect_url`]).
//! * [`auth`]: the bearer token, the Host and the Origin rules every request passes.
//! * [`admission`]: who may hold a socket: slots for clients that showed the token, a small
//!   budget per peer and overall for those that have not yet (the oldest closed first).
//! * [`server`]: [`server::RemoteServer`], any agent (a spawned command or an in-process one)
//!   over HTTP + SSE and WebSocket on one endpoint, or over a WebSocket alone, secure by
//!   default.
pub mod admission;
pub mod auth;
pub mod client;
pub mod server;
pub use acp_core::http_sse as wire;
