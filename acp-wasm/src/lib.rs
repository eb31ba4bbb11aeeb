//! acp-wasm: wasm-bindgen wrapper of acp-core (see API.md).
