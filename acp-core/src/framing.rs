//! NDJSON framing: an incremental line decoder with a size limit.
//!
//! Input arrives in arbitrary chunks (one byte at a time works). Every input byte is scanned
//! once: complete lines inside a chunk are handed out as slices of that chunk without copying,
//! and only an unfinished tail is buffered. A line longer than the limit is reported the moment
//! it crosses the limit and then skipped to its newline without buffering it.

use memchr::memchr;

/// Default maximum size of one message (one line, without its line ending): 64 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How much of an oversize line is kept to read its envelope (see [`crate::sniff`]).
pub const SNIFF_PREFIX_BYTES: usize = 64 * 1024;

/// Capacity the line buffer keeps after a buffered line completes; a larger one is shrunk.
const RETAINED_BUFFER_BYTES: usize = 1024 * 1024;

/// What the decoder hands out.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// One complete line, without its `\n` or `\r\n`. May be empty or whitespace.
    Line(&'a [u8]),
    /// A line crossed the size limit; the rest of it, up to its newline, is being skipped.
    /// Reported once per such line, as soon as it crosses the limit.
    Oversize {
        /// The decoder's limit, in bytes ([`Decoder::max_message_bytes`]).
        limit: usize,
        /// The line's first `min(SNIFF_PREFIX_BYTES, limit + 1)` bytes, to tell what it was
        /// (the same bytes however the input was split).
        prefix: &'a [u8],
    },
}

/// The incremental NDJSON line splitter. Feed it chunks with [`Decoder::decode`] and the end
/// of the stream with [`Decoder::finish`]; it hands out [`Frame`]s in order. It buffers at
/// most one unfinished line (never more than the limit + 1 bytes).
///
/// ```
/// use acp_core::framing::{Decoder, Frame};
///
/// let mut decoder = Decoder::new(8);
/// let mut lines = Vec::new();
/// let mut sink = |frame: Frame<'_>| match frame {
///     Frame::Line(line) => lines.push(String::from_utf8_lossy(line).into_owned()),
///     Frame::Oversize { limit, .. } => lines.push(format!("<over {limit}>")),
/// };
/// decoder.decode(b"{\"a\":1}\r\n{\"b\"", &mut sink);
/// decoder.decode(b":2}\n0123456789\nlast", &mut sink);
/// decoder.finish(&mut sink);
/// assert_eq!(lines, [r#"{"a":1}"#, r#"{"b":2}"#, "<over 8>", "last"]);
/// ```
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    max: usize,
    skipping: bool,
}

impl Decoder {
    /// A decoder refusing lines longer than `max_message_bytes` (without the line ending);
    /// 0 counts as 1.
    pub fn new(max_message_bytes: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            max: max_message_bytes.max(1),
            skipping: false,
        }
    }

    /// The limit, in bytes, of one line without its line ending.
    pub fn max_message_bytes(&self) -> usize {
        self.max
    }

    /// Bytes of an unfinished line held so far (never more than the limit + 1).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// True while the rest of an oversize line is being skipped.
    pub fn is_skipping(&self) -> bool {
        self.skipping
    }

    /// How many first bytes of an oversize line its `prefix` holds. Whatever the chunking, at
    /// least `max + 1` bytes of the line have arrived when it is found oversize, so capping the
    /// prefix there makes it the same for every split of the input.
    fn prefix_cap(&self) -> usize {
        SNIFF_PREFIX_BYTES.min(self.max + 1)
    }

    /// Feeds a chunk, calling `sink` for every frame it completes, in order. A `Line` is the
    /// line without its `\n` or `\r\n`; its slice lives only for the call to `sink`.
    pub fn decode(&mut self, mut input: &[u8], sink: &mut dyn FnMut(Frame<'_>)) {
        while !input.is_empty() {
            let newline = memchr(b'\n', input);
            if self.skipping {
                match newline {
                    Some(i) => {
                        self.skipping = false;
                        input = &input[i + 1..];
                    }
                    None => return,
                }
                continue;
            }
            match newline {
                Some(i) => {
                    // A `\r` before the `\n` is not part of the message.
                    let end = if i > 0 && input[i - 1] == b'\r' {
                        i - 1
                    } else {
                        i
                    };
                    if self.buf.is_empty() {
                        if end > self.max {
                            let prefix = &input[..end.min(self.prefix_cap())];
                            sink(Frame::Oversize {
                                limit: self.max,
                                prefix,
                            });
                        } else {
                            sink(Frame::Line(&input[..end]));
                        }
                    } else {
                        // `end` can be "before" the chunk when the `\r` was buffered.
                        let total = if i == 0 && self.buf.last() == Some(&b'\r') {
                            self.buf.pop();
                            self.buf.len()
                        } else {
                            self.buf.len() + end
                        };
                        if total > self.max {
                            let want = self.prefix_cap().saturating_sub(self.buf.len());
                            self.buf.extend_from_slice(&input[..end.min(want)]);
                            let n = self.buf.len().min(self.prefix_cap());
                            sink(Frame::Oversize {
                                limit: self.max,
                                prefix: &self.buf[..n],
                            });
                        } else {
                            self.buf.extend_from_slice(&input[..end]);
                            sink(Frame::Line(&self.buf));
                        }
                        self.buf.clear();
                        // One large message must not pin its buffer for the connection's
                        // lifetime (64 MiB after a 64 MiB write).
                        if self.buf.capacity() > RETAINED_BUFFER_BYTES {
                            self.buf.shrink_to(RETAINED_BUFFER_BYTES);
                        }
                    }
                    input = &input[i + 1..];
                }
                None => {
                    // A trailing `\r` may be the first half of a line ending: allow one byte.
                    if self.buf.len() + input.len() > self.max + 1 {
                        let want = self.prefix_cap().saturating_sub(self.buf.len());
                        self.buf.extend_from_slice(&input[..input.len().min(want)]);
                        let n = self.buf.len().min(self.prefix_cap());
                        self.skipping = true;
                        sink(Frame::Oversize {
                            limit: self.max,
                            prefix: &self.buf[..n],
                        });
                        self.buf.clear();
                        self.buf.shrink_to(SNIFF_PREFIX_BYTES);
                    } else {
                        self.buf.extend_from_slice(input);
                    }
                    return;
                }
            }
        }
    }

    /// The peer closed the stream: a final line without a newline is still a line (an
    /// `Oversize` if it is over the limit; nothing for the rest of a line already reported
    /// oversize). The decoder is then empty and can be reused.
    pub fn finish(&mut self, sink: &mut dyn FnMut(Frame<'_>)) {
        if self.skipping {
            self.skipping = false;
            return;
        }
        if !self.buf.is_empty() {
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.len() > self.max {
                let n = self.buf.len().min(self.prefix_cap());
                sink(Frame::Oversize {
                    limit: self.max,
                    prefix: &self.buf[..n],
                });
            } else {
                sink(Frame::Line(&self.buf));
            }
            self.buf.clear();
        }
    }
}

/// True for lines the protocol ignores: empty or only whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut d = Decoder::new(max);
        let mut out = Vec::new();
        for c in chunks {
            d.decode(c, &mut |f| out.push(render(f)));
        }
        d.finish(&mut |f| out.push(render(f)));
        out
    }

    fn render(f: Frame<'_>) -> String {
        match f {
            Frame::Line(l) => String::from_utf8_lossy(l).into_owned(),
            Frame::Oversize { limit, .. } => format!("<oversize {limit}>"),
        }
    }

    #[test]
    fn splits_lines_and_strips_crlf() {
        assert_eq!(frames(100, &[b"a\nb\r\nc"]), ["a", "b", "c"]);
        assert_eq!(frames(100, &[b"a\r", b"\nb\n"]), ["a", "b"]);
        assert_eq!(frames(100, &[b"\n\n"]), ["", ""]);
    }

    #[test]
    fn every_split_point_gives_the_same_frames() {
        let input: &[u8] = b"{\"a\":1}\r\n\n  \nxyzzy-long-line-here\n{\"b\":2}\nlast";
        let whole = frames(10, &[input]);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let got = frames(10, &[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(got, whole, "split at {i},{j}");
            }
        }
        assert_eq!(
            whole,
            ["{\"a\":1}", "", "  ", "<oversize 10>", "{\"b\":2}", "last"]
        );
    }

    #[test]
    fn a_large_buffered_line_does_not_pin_its_buffer() {
        let mut d = Decoder::new(DEFAULT_MAX_MESSAGE_BYTES);
        let big = vec![b'x'; 4 * RETAINED_BUFFER_BYTES];
        let mut lens = Vec::new();
        d.decode(&big, &mut |f| lens.push(render(f).len()));
        d.decode(b"\nok\n", &mut |f| lens.push(render(f).len()));
        assert_eq!(lens, [big.len(), 2]);
        assert!(d.buf.capacity() <= RETAINED_BUFFER_BYTES);
    }

    #[test]
    fn limit_counts_the_message_not_the_line_ending() {
        assert_eq!(frames(3, &[b"abc\r\nabcd\n"]), ["abc", "<oversize 3>"]);
        assert_eq!(frames(3, &[b"ab", b"c\r", b"\n"]), ["abc"]);
    }

    #[test]
    fn oversize_is_reported_before_the_newline_and_memory_stays_bounded() {
        let mut d = Decoder::new(8);
        let mut out = Vec::new();
        for _ in 0..1000 {
            d.decode(b"0123456789", &mut |f| out.push(render(f)));
            assert!(d.buffered() <= 9);
        }
        assert_eq!(out, ["<oversize 8>"]);
        d.decode(b"tail\nok\n", &mut |f| out.push(render(f)));
        assert_eq!(out, ["<oversize 8>", "ok"]);
    }
}
