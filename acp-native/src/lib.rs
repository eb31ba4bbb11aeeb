//! acp-native: the tokio + tower host around `acp-core`.
pub mod agent;
pub mod client;
pub mod driver;
pub mod fs_service;
pub mod layers;
pub mod process;
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
