//! acp-native: the tokio + tower host around `acp-core`.
