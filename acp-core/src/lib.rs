//! acp-core: sans-IO ACP engine.
