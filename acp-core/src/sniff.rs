//! Reading the envelope of a message too large to parse, from its first bytes only.
//!
//! An oversize line is skipped without being buffered, but its sender may be waiting for an
//! answer: a request's sender for its response, or we for the response it is. Serializers
//! write `jsonrpc`, `id` and `method` before `params` / `result`, so the top-level scalar keys
//! that come before the first large value usually tell which message it was.

use crate::jsonrpc::Id;

/// What could be read of an oversize message's top level.
#[derive(Debug, Default, PartialEq)]
pub struct Sniffed {
    pub id: Option<Id>,
    pub has_method: bool,
    pub has_result_or_error: bool,
}

/// Scans at most `prefix` (which may end mid-value) for top-level keys.
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
