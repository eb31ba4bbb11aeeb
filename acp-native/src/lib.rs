//! acp-native: the tokio + tower host around `acp-core`.
pub mod fs_service;
pub mod process;
pub mod terminal_service;
