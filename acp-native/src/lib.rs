//! acp-native: the tokio + tower host around `acp-core`.
//!
//! The library is the host (driver, router, layers, role connections, transports, process
//! supervision, fs and terminal services; see `API.md`). The `acp` command is built on it in
//! its own package, `acp-cli`.
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
