//! JSON helpers: params to raw JSON and results back ([`to_raw`], [`decode`]), and the length
//! of text once serialized as a JSON string ([`json_string_len`]).

use acp_core::RawValue;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::RpcError;

/// Serializes params to raw JSON.
pub fn to_raw<P: Serialize + ?Sized>(p: &P) -> Result<Box<RawValue>, RpcError> {
    serde_json::value::to_raw_value(p)
        .map_err(|e| RpcError::Refused(acp_core::Error::InvalidParams(e.to_string())))
}

/// Decodes a raw result.
pub fn decode<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, RpcError> {
    serde_json::from_str(raw.get()).map_err(|e| RpcError::Decode {
        method: method.to_owned(),
        details: e.to_string(),
    })
}

/// The length of `text` serialized as a JSON string, quotes included, exactly as serde_json
/// writes it: `"` and `\` and the controls `\b \t \n \f \r` take 2 bytes, the other controls
/// below 0x20 take 6 (`\u0001`), everything else is copied.
pub fn json_string_len(text: &str) -> usize {
    2 + text.bytes().map(json_escaped_len).sum::<usize>()
}

/// The bytes serde_json writes for byte `b` of a string (see [`json_string_len`]).
pub fn json_escaped_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
        0x00..=0x1f => 6,
        _ => 1,
    }
}
