//! Remote agents: ACP over HTTP + SSE and WebSocket, with the wire behaviour of the official
//! `agent-client-protocol-http` 5 crate (feature `remote`).
//!
//! * [`wire`]: the wire's constants (path, header names, limits), its session-routing rules and
//!   the SSE framing (an event writer and an incremental reader), shared by server and client.
//! * [`client`]: connecting to a remote agent by URL (`http(s)://…/acp`, `ws(s)://…/acp`),
//!   bridged to the driver's NDJSON streams ([`crate::ClientSideConnection::connect_url`]).
//! * [`auth`]: the bearer token and the Origin rule every request passes.
//! * [`server`]: [`server::RemoteServer`], any agent (a spawned command or an in-process one)
//!   over HTTP + SSE and WebSocket on one endpoint, secure by default.
pub mod auth;
pub mod client;
pub mod server;
pub mod wire;
