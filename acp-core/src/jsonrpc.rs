//! The JSON-RPC 2.0 model: ids, error objects, error codes, and classification of one parsed
//! message by its shape.
//!
//! Classification borrows from the input line: `params`, `result` and `error` stay raw JSON
//! ([`RawValue`]) until somebody asks for them, so routing never deserializes what it does not need.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// A JSON-RPC request id: a number, a string or `null`. The engine's own requests always
/// use unsigned integers; a peer's ids are kept as written and only echoed back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// `null`: legal in a request (discouraged), and the id of an error answering a message
    /// whose id could not be read.
    Null,
    /// Kept as the peer wrote it (integer or not), so echoing it back is exact.
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl Id {
    /// The id as an unsigned integer, when it is one (the engine's own ids always are).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            _ => None,
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Null => f.write_str("null"),
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Null => s.serialize_unit(),
            Id::Number(n) => n.serialize(s),
            Id::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Ok(Id::Null),
            serde_json::Value::Number(n) => Ok(Id::Number(n)),
            serde_json::Value::String(s) => Ok(Id::String(s)),
            other => Err(de::Error::custom(format_args!(
                "id must be a string, a number or null, not {}",
                json_type_name(&other)
            ))),
        }
    }
}

fn json_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Error codes: JSON-RPC's standard ones, ACP's, and any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `-32700`: the line was not valid JSON.
    ParseError,
    /// `-32600`: valid JSON, but not a valid JSON-RPC message.
    InvalidRequest,
    /// `-32601`: the method does not exist or is not available.
    MethodNotFound,
    /// `-32602`: the params are invalid for the method.
    InvalidParams,
    /// `-32603`: an internal error.
    InternalError,
    /// ACP: `-32800`, the request was cancelled.
    RequestCancelled,
    /// ACP: `-32000`, authentication is required.
    AuthRequired,
    /// ACP: `-32002`, a resource (for example a file) was not found.
    ResourceNotFound,
    /// Any other code (the escape hatch).
    Other(i64),
}

impl ErrorCode {
    /// The numeric code, as sent on the wire.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::RequestCancelled => -32800,
            ErrorCode::AuthRequired => -32000,
            ErrorCode::ResourceNotFound => -32002,
            ErrorCode::Other(c) => c,
        }
    }

    /// The variant for a numeric code: a named one when known, else [`ErrorCode::Other`].
    /// `ErrorCode::from_code(c).code() == c` for every `c`.
    pub const fn from_code(code: i64) -> Self {
        match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32800 => ErrorCode::RequestCancelled,
            -32000 => ErrorCode::AuthRequired,
            -32002 => ErrorCode::ResourceNotFound,
            c => ErrorCode::Other(c),
        }
    }

    /// The standard message for the code.
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Parse error",
            ErrorCode::InvalidRequest => "Invalid Request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid params",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::RequestCancelled => "Request cancelled",
            ErrorCode::AuthRequired => "Authentication required",
            ErrorCode::ResourceNotFound => "Resource not found",
            ErrorCode::Other(_) => "Error",
        }
    }
}

impl From<i64> for ErrorCode {
    fn from(c: i64) -> Self {
        ErrorCode::from_code(c)
    }
}

/// A JSON-RPC error object: what an error response carries in `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The numeric code; [`ErrorObject::kind`] names it.
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Further details, if any (left out of the JSON when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    /// An error with this code and message, without `data`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// An error with the code's standard message.
    pub fn from_code(code: ErrorCode) -> Self {
        ErrorObject::new(code, code.default_message())
    }

    /// Sets `data`, replacing any.
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The code as an [`ErrorCode`].
    pub fn kind(&self) -> ErrorCode {
        ErrorCode::from_code(self.code)
    }

    /// -32601 `Method not found: {method}`, with `data.method`: the answer to a request
    /// for a method the application does not handle.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }

    /// -32602 `Invalid params`, with `details` as `data.details` (a typed decode error,
    /// say).
    pub fn invalid_params(details: impl fmt::Display) -> Self {
        ErrorObject::from_code(ErrorCode::InvalidParams)
            .with_data(serde_json::json!({ "details": details.to_string() }))
    }

    /// -32603 `Internal error`, with `details` as `data.details`.
    pub fn internal(details: impl fmt::Display) -> Self {
        ErrorObject::from_code(ErrorCode::InternalError)
            .with_data(serde_json::json!({ "details": details.to_string() }))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(data) = &self.data {
            write!(f, ": {data}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorObject {}

/// The top level of one JSON-RPC message, borrowed from its text: each member as raw JSON,
/// nothing else built (`params` and `result` are not parsed, however large). `Some` means the
/// member was present, even with the value `null`, which is how a request with `"id": null`
/// is told from a notification.
///
/// This is the one place the envelope is read: the engine classifies messages from it, and
/// hosts that route, bridge or log messages without the engine (acp-native's remote
/// transport, the `acp` command's `--log-rpc` tap) read theirs with [`Envelope::parse`] too.
/// A member given twice makes the message ambiguous: it does not parse.
///
/// ```
/// use acp_core::jsonrpc::Envelope;
///
/// let env = Envelope::parse(r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1"}}"#).unwrap();
/// assert_eq!(env.id().and_then(|id| id.as_u64()), Some(7));
/// assert_eq!(env.method().as_deref(), Some("session/prompt"));
/// assert_eq!(env.session_id().as_deref(), Some("s1"));
/// assert!(env.is_request());
/// assert!(Envelope::parse("[1]").is_err(), "only objects are messages");
/// ```
#[derive(Deserialize, Default, Debug, Clone, Copy)]
pub struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    pub(crate) error: Option<&'a RawValue>,
}

impl<'a> Envelope<'a> {
    /// Reads the envelope of one message. Only a JSON object is a message (serde would read
    /// a struct from an array too, positionally); anything else, malformed JSON and a member
    /// given twice are errors (serde's, as the engine reports them).
    pub fn parse(text: &'a str) -> Result<Envelope<'a>, serde_json::Error> {
        if !text.trim_start().starts_with('{') {
            return Err(serde::de::Error::custom(
                "a JSON-RPC message must be an object",
            ));
        }
        serde_json::from_str(text)
    }

    /// `id` as written, if present (even `null`).
    pub fn id_raw(&self) -> Option<&'a RawValue> {
        self.id
    }

    /// `id` when it is a string or a number (not `null`, not absent, not another type).
    pub fn id(&self) -> Option<Id> {
        self.id
            .and_then(|raw| serde_json::from_str::<Id>(raw.get()).ok())
            .filter(|id| *id != Id::Null)
    }

    /// `method` when it is a string (borrowed unless it has escapes).
    pub fn method(&self) -> Option<std::borrow::Cow<'a, str>> {
        let raw = self.method?;
        serde_json::from_str::<std::borrow::Cow<'a, str>>(raw.get()).ok()
    }

    /// `params` as written, if present and not `null`.
    pub fn params(&self) -> Option<&'a RawValue> {
        self.params.filter(|p| p.get() != "null")
    }

    /// `result` as written, if present (even `null`).
    pub fn result(&self) -> Option<&'a RawValue> {
        self.result
    }

    /// `error` as written, if present.
    pub fn error(&self) -> Option<&'a RawValue> {
        self.error
    }

    /// Has a `method` and an `id` member (even `"id": null`): a request.
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    /// Has a `method` and no `id` member: a notification.
    pub fn is_notification(&self) -> bool {
        self.method.is_some() && self.id.is_none()
    }

    /// Has no `method` but an `id`: a response (well formed or not; the engine decides).
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// `params.sessionId`, when `params` is an object with a string `sessionId` (what ACP's
    /// session methods carry).
    pub fn session_id(&self) -> Option<String> {
        crate::acp::session_id_of(self.params().map(RawValue::get))
    }
}

/// Calls `f` with each message of one line as raw JSON: the line itself, or each entry of a
/// batch (a JSON array) with `true`, visited one at a time as the array is read (no vector of
/// entries is built). An error if the line is not JSON, after the entries before the fault.
///
/// ```
/// let mut seen = Vec::new();
/// acp_core::jsonrpc::each_message(r#"[{"id":1},{"id":2}]"#, |raw, in_batch| {
///     seen.push((raw.get().to_owned(), in_batch));
/// })
/// .unwrap();
/// assert_eq!(seen, [(r#"{"id":1}"#.to_owned(), true), (r#"{"id":2}"#.to_owned(), true)]);
/// ```
pub fn each_message<'a>(
    text: &'a str,
    mut f: impl FnMut(&'a RawValue, bool),
) -> Result<(), serde_json::Error> {
    use serde::de::{SeqAccess, Visitor};
    struct Batch<'f, 'a>(&'f mut dyn FnMut(&'a RawValue, bool));
    impl<'de: 'a, 'a> Visitor<'de> for Batch<'_, 'a> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a batch")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                (self.0)(raw, true);
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let whole: &'a RawValue = Deserialize::deserialize(&mut de)?;
    de.end()?;
    if whole.get().starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(whole.get());
        serde::Deserializer::deserialize_seq(&mut de, Batch(&mut f))?;
    } else {
        f(whole, false);
    }
    Ok(())
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// One message classified by shape.
#[derive(Debug)]
pub(crate) enum Classified<'a> {
    Request {
        id: Id,
        method: String,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: String,
        params: Option<&'a RawValue>,
    },
    Response {
        id: Id,
        outcome: Result<&'a RawValue, ErrorObject>,
    },
    /// Has an id and no method, but is not a well-formed response (both or neither of
    /// `result`/`error`, a malformed error object, a wrong `jsonrpc`): completes the matching
    /// outgoing request with an error rather than leaving it pending.
    BadResponse { id: Id, reason: String },
    /// None of the above: answered with Invalid Request, echoing the id when it could be read.
    Invalid { id: Id, reason: String },
}

impl<'a> Classified<'a> {
    /// A notification as the official SDKs write one (TypeScript's `JSON.stringify` and serde
    /// both write these members in this order, without spaces):
    /// `{"jsonrpc":"2.0","method":"M","params":P}`, `M` without escapes and `P` an object or an
    /// array, matched byte for byte and classified as [`Envelope::classify`] classifies it (the
    /// params are still read as JSON); `None` for anything else, which the envelope reader takes.
    /// Most of what an agent sends is this (`session/update`), and matching it costs about half
    /// of reading the envelope.
    pub(crate) fn plain_notification(text: &'a str) -> Option<Classified<'a>> {
        let rest = text.strip_prefix(r#"{"jsonrpc":"2.0","method":""#)?;
        let end = rest.find('"')?;
        let method = &rest[..end];
        if method.bytes().any(|b| b == b'\\' || b < 0x20) {
            return None;
        }
        let params = rest[end..]
            .strip_prefix(r#"","params":"#)?
            .strip_suffix('}')?;
        if !matches!(params.as_bytes().first(), Some(b'{' | b'[')) {
            return None;
        }
        let params: &RawValue = serde_json::from_str(params).ok()?;
        Some(Classified::Notification {
            method: method.to_string(),
            params: Some(params),
        })
    }
}

fn first_byte(raw: &RawValue) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

impl<'a> Envelope<'a> {
    pub(crate) fn classify(mut self) -> Classified<'a> {
        // Some peers write `"params": null` for "no params"; it is read as absent.
        if self.params.is_some_and(|p| p.get() == "null") {
            self.params = None;
        }
        let id = match self.id {
            None => None,
            Some(raw) => match serde_json::from_str::<Id>(raw.get()) {
                Ok(id) => Some(id),
                Err(_) => {
                    return Classified::Invalid {
                        id: Id::Null,
                        reason: "id must be a string, a number or null".into(),
                    }
                }
            },
        };
        let jsonrpc_ok = matches!(self.jsonrpc, Some(v) if v.get() == "\"2.0\"");

        if let Some(method_raw) = self.method {
            let id_for_error = id.clone().unwrap_or(Id::Null);
            let method = match serde_json::from_str::<String>(method_raw.get()) {
                Ok(m) => m,
                Err(_) => {
                    return Classified::Invalid {
                        id: id_for_error,
                        reason: "method must be a string".into(),
                    }
                }
            };
            if !jsonrpc_ok {
                return Classified::Invalid {
                    id: id_for_error,
                    reason: "jsonrpc must be exactly \"2.0\"".into(),
                };
            }
            if self.result.is_some() || self.error.is_some() {
                return Classified::Invalid {
                    id: id_for_error,
                    reason: "a request must not carry result or error".into(),
                };
            }
            if let Some(p) = self.params {
                if !matches!(first_byte(p), b'{' | b'[') {
                    return Classified::Invalid {
                        id: id_for_error,
                        reason: "params must be an object or an array".into(),
                    };
                }
            }
            return match id {
                Some(id) => Classified::Request {
                    id,
                    method,
                    params: self.params,
                },
                None => Classified::Notification {
                    method,
                    params: self.params,
                },
            };
        }

        let Some(id) = id else {
            return Classified::Invalid {
                id: Id::Null,
                reason: "message has neither method nor id".into(),
            };
        };
        if self.params.is_some() {
            return Classified::BadResponse {
                id,
                reason: "response carries params but no method".into(),
            };
        }
        if !jsonrpc_ok {
            return Classified::BadResponse {
                id,
                reason: "jsonrpc must be exactly \"2.0\"".into(),
            };
        }
        match (self.result, self.error) {
            (Some(result), None) => Classified::Response {
                id,
                outcome: Ok(result),
            },
            (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
                Ok(e) => Classified::Response {
                    id,
                    outcome: Err(e),
                },
                Err(e) => Classified::BadResponse {
                    id,
                    reason: format!("malformed error object: {e}"),
                },
            },
            (Some(_), Some(_)) => Classified::BadResponse {
                id,
                reason: "response carries both result and error".into(),
            },
            (None, None) => Classified::BadResponse {
                id,
                reason: "response carries neither result nor error".into(),
            },
        }
    }
}

/// The deepest nesting of objects and arrays accepted in one line (the line's own object or
/// batch array included). serde_json refuses deeper values (its recursion limit), so anything
/// deeper could not be decoded by `Event::to_json`, the typed layer or most peers; such a line
/// is answered as a parse error.
pub const MAX_NESTING: usize = 127;

/// True when the JSON text nests objects and arrays deeper than `max` (brackets inside strings
/// do not count). Lines with at most `max` opening brackets are passed by a plain count (which
/// the compiler vectorizes; on wasm32, without SIMD, eight bytes at a time in a `u64`); only
/// the others are scanned.
pub(crate) fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    if bytes.len() <= max {
        return false;
    }
    #[cfg(target_arch = "wasm32")]
    let brackets = count_open_brackets_swar(bytes);
    #[cfg(not(target_arch = "wasm32"))]
    let brackets = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if brackets <= max {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// How many `[` and `{` bytes `bytes` holds, counted eight at a time in a `u64` (the two differ
/// only in bit 0x20: with it set, both are `{`).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // native counts with SIMD; tested
fn count_open_brackets_swar(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut chunks = bytes.chunks_exact(8);
    let mut n = 0;
    for c in &mut chunks {
        let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // A zero byte where the byte was `[` or `{`.
        let x = (word | (0x20 * ONES)) ^ (u64::from(b'{') * ONES);
        // Bit 7 set in each byte that is not zero (no carry crosses a byte).
        let nonzero = ((x & LOW7) + LOW7) | x;
        n += (!nonzero & (0x80 * ONES)).count_ones() as usize;
    }
    n + chunks
        .remainder()
        .iter()
        .filter(|&&b| b | 0x20 == b'{')
        .count()
}

/// Appends `s` as a JSON string.
pub(crate) fn write_json_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing a string to a Vec cannot fail");
}

/// Appends a serialized value. Raw JSON may legally contain newlines as whitespace; the
/// engine never emits one, so they are replaced by spaces (inside JSON strings a newline is
/// always escaped, so only whitespace can be hit).
/// Appends to a `Vec` keeping a little room after each piece: a large value written in one
/// piece (raw params) would otherwise grow the buffer to exactly its size, and the `}` and
/// newline that close the message would then reallocate it, copying the whole message (in wasm,
/// whose allocator cannot remap, that is a second copy of a 64 MiB message and memory that is
/// never returned).
struct Slack<'a>(&'a mut Vec<u8>);

impl std::io::Write for Slack<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.0.capacity() - self.0.len() < bytes.len() {
            self.0.reserve(bytes.len() + 64);
        }
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn write_json<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    v: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    if let Err(e) = serde_json::to_writer(Slack(out), v) {
        out.truncate(start);
        return Err(e);
    }
    strip_newlines(&mut out[start..]);
    Ok(())
}

pub(crate) fn strip_newlines(bytes: &mut [u8]) {
    let mut from = 0;
    while let Some(i) = memchr::memchr2(b'\n', b'\r', &bytes[from..]) {
        bytes[from + i] = b' ';
        from += i + 1;
    }
}

/// Appends `{"jsonrpc":"2.0","id":ID,"error":{...}}` (no newline).
pub(crate) fn write_error_response(out: &mut Vec<u8>, id: &Id, error: &ErrorObject) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id).expect("ids serialize");
    out.extend_from_slice(b",\"error\":");
    write_json(out, error).expect("error objects serialize");
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","id":ID,"result":RESULT}` (no newline). If `result` fails to
/// serialize, nothing is appended.
pub(crate) fn write_result_response<R: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: &Id,
    result: &R,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id).expect("ids serialize");
    out.extend_from_slice(b",\"result\":");
    if let Err(e) = write_json(out, result) {
        out.truncate(start);
        return Err(e);
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{count_open_brackets_swar, Classified, Envelope};

    #[test]
    fn a_plain_notification_is_classified_as_the_envelope_reader_classifies_it() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"a":[1,"}"]}}}"#;
        let mut variants = vec![
            line.to_string(),
            r#"{"jsonrpc":"2.0","method":"m","params":[]}"#.into(),
            r#"{"jsonrpc":"2.0","method":"m","params":{} }"#.into(),
            r#"{"jsonrpc":"2.0","method":"m","params":null}"#.into(),
            r#"{"jsonrpc":"2.0","method":"m","params":{}}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"m\"","params":{}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"m","params":{},"id":1}"#.into(),
        ];
        for (at, _) in line.char_indices() {
            variants.push(line[..at].to_string());
            let next = line[at..].chars().next().map_or(0, char::len_utf8);
            for b in ["\"", "\\", "}", "{", "]", ",", " ", "a", "\u{1}", "é"] {
                variants.push(format!("{}{b}{}", &line[..at], &line[at + next..]));
            }
        }
        let mut matched = 0;
        for text in &variants {
            let general = Envelope::parse(text).map(Envelope::classify);
            if let Some(plain) = Classified::plain_notification(text) {
                matched += 1;
                assert_eq!(
                    format!("{plain:?}"),
                    format!("{:?}", general.expect("the envelope reader reads it too")),
                    "{text}"
                );
            }
        }
        // The line itself, its params changed inside strings, `[]` and the space before `}`.
        assert!(matched >= 10, "{matched}");
    }

    #[test]
    fn the_word_count_of_brackets_is_the_plain_count() {
        // Every byte value at every offset of lines of every length up to 40, and bytes that
        // differ from a bracket in one bit.
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for len in 0..40 {
            for at in 0..len {
                for b in [
                    b'[',
                    b'{',
                    b'[' ^ 1,
                    b'{' ^ 0x80,
                    0x5b ^ 0x40,
                    0x7b ^ 0x04,
                    0,
                    0xff,
                ] {
                    let mut line = vec![b'a'; len];
                    line[at] = b;
                    lines.push(line);
                }
            }
        }
        lines.push((0..=255u8).cycle().take(4096).collect());
        lines.push(b"{\"a\":[{\"b\":[[{}]]},\"[{\"]}".repeat(37));
        for line in lines {
            let plain = line.iter().filter(|&&b| b == b'[' || b == b'{').count();
            assert_eq!(count_open_brackets_swar(&line), plain, "{line:?}");
        }
    }
}
