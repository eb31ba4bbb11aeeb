//! [`OutputBuffer`]: a terminal's retained output (pure, no I/O).

use std::collections::VecDeque;

use crate::driver::json_escaped_len;

/// Retained terminal output: the newest bytes up to a limit, starting at a UTF-8 character
/// boundary. Pure (no I/O): fed arbitrary chunks, it keeps the same bytes as if fed at once.
#[derive(Clone, Debug)]
pub struct OutputBuffer {
    pub(super) data: VecDeque<u8>,
    limit: usize,
    pub(super) truncated: bool,
    /// Bumped by every push (what `json_len` was last computed for).
    version: u64,
    /// The last `json_len`: (version, complete, length).
    json_len: Option<(u64, bool, usize)>,
}

impl OutputBuffer {
    /// An empty buffer keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        OutputBuffer {
            data: VecDeque::new(),
            limit,
            truncated: false,
            version: 0,
            json_len: None,
        }
    }

    /// Appends bytes, dropping the oldest ones beyond the limit and then any UTF-8 continuation
    /// bytes at the new front (so the retained text starts on a character boundary).
    pub fn push(&mut self, bytes: &[u8]) {
        self.version += 1;
        let cut = if bytes.len() >= self.limit {
            // Only the tail of this chunk can survive.
            let cut = !self.data.is_empty() || bytes.len() > self.limit;
            self.data.clear();
            self.data.extend(&bytes[bytes.len() - self.limit..]);
            cut
        } else {
            self.data.extend(bytes);
            let excess = self.data.len().saturating_sub(self.limit);
            self.data.drain(..excess);
            excess > 0
        };
        if cut {
            self.truncated = true;
            // A UTF-8 sequence has at most 3 continuation bytes.
            for _ in 0..3 {
                match self.data.front() {
                    Some(&b) if b & 0xC0 == 0x80 => {
                        self.data.pop_front();
                    }
                    _ => break,
                }
            }
        }
    }

    /// Whether any output was dropped.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes retained.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Nothing retained.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The length of [`OutputBuffer::text`] serialized as a JSON string, quotes included (at
    /// most: less when the text is cut again because invalid bytes became U+FFFD). Counted on
    /// the bytes, without building the text, so that an answer can be reserved before it is
    /// built (a control character takes 6 bytes: `\u0001`). Makes the buffer contiguous;
    /// counted once per content (many requests for the same output scan it once).
    pub fn json_len(&mut self, complete: bool) -> usize {
        if let Some((version, c, n)) = self.json_len {
            if version == self.version && c == complete {
                return n;
            }
        }
        let n = self.count_json_len(complete);
        self.json_len = Some((self.version, complete, n));
        n
    }

    fn count_json_len(&mut self, complete: bool) -> usize {
        let bytes = &*self.data.make_contiguous();
        let end = if complete {
            bytes.len()
        } else {
            bytes.len() - incomplete_utf8_suffix(bytes)
        };
        let mut n = 2;
        for chunk in bytes[..end].utf8_chunks() {
            n += chunk.valid().bytes().map(json_escaped_len).sum::<usize>();
            if !chunk.invalid().is_empty() {
                n += '\u{FFFD}'.len_utf8();
            }
        }
        n
    }

    /// The retained output as text. While the process runs (`complete == false`) an incomplete
    /// UTF-8 sequence at the very end is held back (it may be completed by the next write);
    /// other invalid bytes become U+FFFD. The result never exceeds the limit: if replacement
    /// characters make it longer, its front is cut again at a character boundary (and the
    /// second value, "truncated", is `true`).
    pub fn text(&self, complete: bool) -> (String, bool) {
        let (a, b) = self.data.as_slices();
        let joined;
        let bytes: &[u8] = if b.is_empty() {
            a
        } else {
            joined = [a, b].concat();
            &joined
        };
        let end = if complete {
            bytes.len()
        } else {
            bytes.len() - incomplete_utf8_suffix(bytes)
        };
        let text = String::from_utf8_lossy(&bytes[..end]);
        if text.len() <= self.limit {
            return (text.into_owned(), self.truncated);
        }
        let mut start = text.len() - self.limit;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        (text[start..].to_owned(), true)
    }
}

/// Length of an incomplete (but so far valid) UTF-8 sequence at the end of `bytes`.
pub(super) fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=3.min(n) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte: keep looking for the lead byte
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0, // ASCII or invalid lead: nothing to hold back
        };
        return if back < needed { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newest `limit` bytes of `s`, moved forward to a char boundary.
    fn expected(s: &str, limit: usize) -> (&str, bool) {
        if s.len() <= limit {
            return (s, false);
        }
        let mut start = s.len() - limit;
        while !s.is_char_boundary(start) {
            start += 1;
        }
        (&s[start..], true)
    }

    #[test]
    fn truncation_keeps_newest_bytes_at_a_char_boundary_for_every_split() {
        let text = "aé€😀b€éé😀x\n";
        for limit in 0..=text.len() + 1 {
            for split in 0..=text.len() {
                for second_split in split..=text.len() {
                    let bytes = text.as_bytes();
                    let mut buf = OutputBuffer::new(limit);
                    buf.push(&bytes[..split]);
                    buf.push(&bytes[split..second_split]);
                    buf.push(&bytes[second_split..]);
                    let (want, want_trunc) = expected(text, limit);
                    let (got, got_trunc) = buf.text(true);
                    assert_eq!(
                        (got.as_str(), got_trunc),
                        (want, want_trunc),
                        "limit {limit} split {split}/{second_split}"
                    );
                    assert!(got.len() <= limit);
                }
            }
        }
    }

    #[test]
    fn json_len_is_the_length_of_the_text_as_json() {
        let inputs: [&[u8]; 6] = [
            b"",
            b"plain",
            b"\x01\x02\x1b[31m\"q\"\\\t\r\n\x7f",
            "é€😀".as_bytes(),
            b"a\xffb\xe2\x82",
            b"\xc3",
        ];
        for input in inputs {
            for complete in [false, true] {
                // Full, so that the front is cut.
                let mut buf = OutputBuffer::new(64);
                buf.push(&[b'.'; 60]);
                buf.push(input);
                let bytes: Vec<u8> = buf.data.iter().copied().collect();
                let end = if complete {
                    bytes.len()
                } else {
                    bytes.len() - incomplete_utf8_suffix(&bytes)
                };
                let lossy = String::from_utf8_lossy(&bytes[..end]);
                let exact = serde_json::to_string(&lossy).unwrap().len();
                assert_eq!(buf.json_len(complete), exact, "{input:?} {complete}");
                // The text itself may be cut again (U+FFFD is longer than a byte): never more.
                let (text, _) = buf.text(complete);
                assert!(serde_json::to_string(&text).unwrap().len() <= exact);
            }
        }
    }

    #[test]
    fn incomplete_tail_is_held_back_while_running() {
        let mut buf = OutputBuffer::new(100);
        buf.push("ab€".as_bytes());
        buf.push(&"€".as_bytes()[..2]);
        assert_eq!(buf.text(false), ("ab€".to_owned(), false));
        assert_eq!(buf.text(true), ("ab€\u{FFFD}".to_owned(), false));
        buf.push(&"€".as_bytes()[2..]);
        assert_eq!(buf.text(false), ("ab€€".to_owned(), false));
    }

    #[test]
    fn invalid_bytes_never_exceed_the_limit() {
        let mut buf = OutputBuffer::new(4);
        buf.push(b"\xff\xff\xff\xff");
        let (text, truncated) = buf.text(true);
        assert!(text.len() <= 4, "{text:?}");
        assert_eq!(text, "\u{FFFD}");
        assert!(truncated);
    }

    #[test]
    fn incomplete_suffix_detection() {
        assert_eq!(incomplete_utf8_suffix(b"abc"), 0);
        assert_eq!(incomplete_utf8_suffix(&"€".as_bytes()[..1]), 1);
        assert_eq!(incomplete_utf8_suffix(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_utf8_suffix("€".as_bytes()), 0);
        assert_eq!(incomplete_utf8_suffix(&"😀".as_bytes()[..3]), 3);
        assert_eq!(incomplete_utf8_suffix(b"\xff"), 0);
    }
}
