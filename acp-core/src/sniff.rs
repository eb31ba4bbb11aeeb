//! Reading the envelope of a message too large to parse, from its first bytes only.
//!
//! An oversize line is skipped without being buffered, but its sender may be waiting for an
//! answer: a request's sender for its response, or we for the response it is. Serializers
//! write `jsonrpc`, `id` and `method` before `params` / `result`, so the top-level scalar keys
//! that come before the first large value usually tell which message it was.

use crate::jsonrpc::{ErrorCode, ErrorObject, Id};

/// What could be read of an oversize message's top level.
#[derive(Debug, Default, PartialEq)]
pub struct Sniffed {
    /// The top-level `id`, when its whole value was within the prefix and is a valid id
    /// (`Some(Id::Null)` for `"id": null`).
    pub id: Option<Id>,
    /// A top-level `method` key was seen.
    pub has_method: bool,
    /// A top-level `result` or `error` key was seen.
    pub has_result_or_error: bool,
}

impl Sniffed {
    /// The id of a response (an id other than `null`, no `method`): the request it answers
    /// is waiting for it, and fails at once instead.
    pub fn response_id(&self) -> Option<&Id> {
        self.id
            .as_ref()
            .filter(|id| !self.has_method && **id != Id::Null)
    }

    /// The id of a request (a `method` and an `id`, `null` included): its sender waits for
    /// an answer, [`oversize_error`].
    pub fn request_id(&self) -> Option<&Id> {
        self.id.as_ref().filter(|_| self.has_method)
    }
}

/// How a message skipped for its size is answered (an oversize request, with its id when
/// [`Sniffed::request_id`] read it): `InvalidRequest`, "message exceeds the maximum size of
/// `limit` bytes", `data.maxMessageBytes`. Its message is also the reason a call fails with
/// when the response it waited for was the oversize message.
pub fn oversize_error(limit: usize) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::InvalidRequest,
        format!("message exceeds the maximum size of {limit} bytes"),
    )
    .with_data(serde_json::json!({ "maxMessageBytes": limit }))
}

/// What a bridge passes on in place of a message over its `limit` that it dropped, when that
/// message's first bytes show it was a response ([`Sniffed::response_id`]): an error response
/// for its id (`InternalError`, "the response was larger than {whose} {limit}-byte limit and
/// was dropped"), so the call waiting for it fails at once saying why. `None` for anything
/// else.
pub fn oversize_response_stand_in(sniffed: &Sniffed, limit: usize, whose: &str) -> Option<String> {
    let id = sniffed.response_id()?;
    let error = ErrorObject::new(
        ErrorCode::InternalError,
        format!("the response was larger than {whose} {limit}-byte limit and was dropped"),
    );
    Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string())
}

/// The answer to a request over `limit` that was skipped ([`Sniffed::request_id`]): an
/// [`oversize_error`] response for its id, so its sender stops waiting. `None` when the
/// message was no request (or its id was not within the prefix).
pub fn oversize_request_answer(sniffed: &Sniffed, limit: usize) -> Option<String> {
    let id = sniffed.request_id()?;
    let error = oversize_error(limit);
    Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string())
}

/// Scans at most `prefix` (which may end mid-value) for top-level keys. It stops, keeping
/// what it read so far, at the first key or value that does not end within the prefix, and
/// reads nothing from anything but an object.
///
/// ```
/// use acp_core::sniff::sniff;
/// use acp_core::Id;
///
/// // The first bytes of a large `fs/write_text_file` request, cut mid-value.
/// let s = sniff(br#"{"jsonrpc":"2.0","id":7,"method":"fs/write_text_file","params":{"co"#);
/// assert_eq!(s.request_id(), Some(&Id::from(7)));
/// assert_eq!(s.response_id(), None);
/// ```
pub fn sniff(prefix: &[u8]) -> Sniffed {
    let mut s = Scanner { b: prefix, i: 0 };
    let mut out = Sniffed::default();
    s.ws();
    if !s.eat(b'{') {
        return out;
    }
    loop {
        s.ws();
        let Some(key) = s.string() else {
            return out;
        };
        s.ws();
        if !s.eat(b':') {
            return out;
        }
        s.ws();
        match key {
            b"method" => out.has_method = true,
            b"result" | b"error" => out.has_result_or_error = true,
            _ => {}
        }
        let start = s.i;
        if !s.skip_value() {
            return out;
        }
        if key == b"id" {
            out.id = serde_json::from_slice::<Id>(&prefix[start..s.i]).ok();
        }
        s.ws();
        if !s.eat(b',') {
            return out;
        }
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A string's raw content (escapes left as they are); None if it does not end in view.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i - 1]);
                }
                _ => self.i += 1,
            }
        }
        None
    }

    /// Skips one value; false if it does not end within the prefix.
    fn skip_value(&mut self) -> bool {
        match self.b.get(self.i) {
            None => false,
            Some(b'"') => self.string().is_some(),
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(&c) = self.b.get(self.i) {
                    match c {
                        b'"' => {
                            if self.string().is_none() {
                                return false;
                            }
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                false
            }
            Some(_) => {
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                        return true;
                    }
                    self.i += 1;
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keys_before_the_large_value() {
        let s = sniff(
            br#"{"jsonrpc":"2.0","id":7,"method":"fs/write_text_file","params":{"content":"aaaa"#,
        );
        assert_eq!(s.id, Some(Id::from(7)));
        assert!(s.has_method);
        let s = sniff(br#"{"jsonrpc":"2.0","id":"x\"y","result":{"content":"aaaa"#);
        assert_eq!(s.id, Some(Id::String("x\"y".into())));
        assert!(s.has_result_or_error && !s.has_method);
        let s = sniff(br#" { "params" : {"a":[1,{"b":"}"}]}, "id" : null , "method":"m""#);
        assert_eq!(s.id, Some(Id::Null));
        assert!(s.has_method);
    }

    #[test]
    fn tells_a_response_from_a_request() {
        let response = sniff(br#"{"jsonrpc":"2.0","id":7,"result":{"content":"aaaa"#);
        assert_eq!(response.response_id(), Some(&Id::from(7)));
        assert_eq!(response.request_id(), None);
        let request = sniff(br#"{"jsonrpc":"2.0","id":"r","method":"m","params":{"a":"#);
        assert_eq!(request.request_id(), Some(&Id::String("r".into())));
        assert_eq!(request.response_id(), None);
        let null = sniff(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"#);
        assert_eq!(
            null.response_id(),
            None,
            "a null id answers nothing of ours"
        );
        let notification = sniff(br#"{"jsonrpc":"2.0","method":"n","params":{"a":"#);
        assert_eq!(notification.request_id(), None);
        assert_eq!(notification.response_id(), None);
        let e = oversize_error(2048);
        assert_eq!(e.code, ErrorCode::InvalidRequest.code());
        assert_eq!(e.message, "message exceeds the maximum size of 2048 bytes");
        assert_eq!(e.data, Some(serde_json::json!({ "maxMessageBytes": 2048 })));
    }

    #[test]
    fn gives_up_quietly_on_anything_else() {
        assert_eq!(sniff(b"[1,2"), Sniffed::default());
        assert_eq!(sniff(br#"{"params":{"a":"#), Sniffed::default());
        assert_eq!(
            sniff(br#"{"id":12"#).id,
            None,
            "a number cut short is not an id"
        );
        assert_eq!(sniff(b""), Sniffed::default());
    }
}
