//! Server-sent events (`text/event-stream`) as the HTTP transport uses them: each event's data
//! is one JSON-RPC message. [`sse_event`] writes one; [`SseDecoder`] reads them back
//! incrementally, in bounded memory.

/// One SSE event carrying `data` (a JSON-RPC message): `data: …\n\n`, each line of `data` on
/// its own `data:` line (compact JSON has none).
pub fn sse_event(data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 8);
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// What an [`SseDecoder`] gives for each event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event's data (its `data:` lines joined by `\n`); events without data are skipped.
    Data(String),
    /// An event whose data was over the decoder's limit, skipped without being held.
    Oversize {
        /// The first bytes of its data: [`SSE_OVERSIZE_PREFIX_BYTES`], or one more than the
        /// limit if that is less (the same however the input was split), for
        /// [`crate::sniff`] to read its id and method.
        prefix: Vec<u8>,
        /// The size of its whole data.
        size: usize,
    },
}

/// What a client does with an event its [`SseDecoder`] skipped for its size
/// ([`SseItem::Oversize`]), as acp-core does with an oversize line on stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkippedEvent {
    /// It was a response to one of the client's requests: this error response for its id
    /// goes to the engine in its place, so that call fails at once saying why.
    StandIn(String),
    /// It was a request from the agent: this error answer (acp-core's oversize error, with
    /// its id) is sent back, so the agent stops waiting.
    Answer(String),
    /// Anything else (a notification, or no id within its first bytes): dropped, and only
    /// logged (stdio would answer it for id `null`, which a server has nowhere to route).
    Dropped,
}

impl SkippedEvent {
    /// What to do with an event whose data was over `limit` bytes, from its first bytes
    /// (`prefix`, [`SseItem::Oversize`]'s).
    pub fn of(prefix: &[u8], limit: usize) -> SkippedEvent {
        let sniffed = crate::sniff::sniff(prefix);
        if let Some(stand_in) =
            crate::sniff::oversize_response_stand_in(&sniffed, limit, "the client's")
        {
            SkippedEvent::StandIn(stand_in)
        } else if let Some(answer) = crate::sniff::oversize_request_answer(&sniffed, limit) {
            SkippedEvent::Answer(answer)
        } else {
            SkippedEvent::Dropped
        }
    }
}

/// How much of an oversize event's data an [`SseDecoder`] keeps: as much as acp-core keeps
/// of an oversize NDJSON line.
pub const SSE_OVERSIZE_PREFIX_BYTES: usize = crate::framing::SNIFF_PREFIX_BYTES;

/// Where an [`SseDecoder`] is in the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SseLine {
    /// At its start (a line end here is a blank line: the event is dispatched).
    Start,
    /// In the field name: `len` bytes so far, `data` while they are a prefix of `data`.
    Field { len: usize, data: bool },
    /// A comment (`:` first): ignored.
    Comment,
    /// In a field's value (`fresh`: right after the `:`, where one space is skipped); only
    /// a `data` field's value is kept.
    Value { data: bool, fresh: bool },
}

/// An incremental SSE (`text/event-stream`) reader: feed it the body's bytes as they come,
/// in any pieces; it yields each event's data. Follows the HTML spec's parsing rules for the
/// fields this transport uses (`data`; comments and `event`/`id`/`retry` are ignored; lines
/// end in `\n`, `\r\n` or `\r`). Only an event's data is held, never a line: comments and other
/// fields are skipped as they stream by. An event whose data passes `max_event_bytes` is not
/// held either: its first bytes are kept, the rest is counted and dropped until the event
/// ends, and it is reported as [`SseItem::Oversize`] (so its id can be read: the caller skips
/// it as acp-core skips an oversize line). A peer cannot make the reader hold more than the
/// limit ([`SseDecoder::capacity`]).
#[derive(Debug)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// The current event's data; once it is over the limit, only its first bytes.
    data: Vec<u8>,
    /// The size of the current event's data so far (with the `\n`s between its lines).
    size: usize,
    has_data: bool,
    /// The current event's data passed the limit.
    oversize: bool,
    line: SseLine,
    /// The last byte was `\r` (a following `\n` belongs to the same line end).
    after_cr: bool,
    /// At the very start, a UTF-8 BOM is skipped.
    at_start: bool,
}

impl SseDecoder {
    /// A decoder that holds at most `max_event_bytes` of one event's data (at least 1).
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes: max_event_bytes.max(1),
            data: Vec::new(),
            size: 0,
            has_data: false,
            oversize: false,
            line: SseLine::Start,
            after_cr: false,
            at_start: true,
        }
    }

    /// The limit on one event's data, in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Bytes held for an event not yet complete (at most the limit; while an oversize event
    /// is skipped, at most its prefix).
    pub fn buffered(&self) -> usize {
        self.data.len()
    }

    /// Bytes allocated for an event not yet complete (at most the limit, or the prefix's size
    /// if that is larger).
    pub fn capacity(&self) -> usize {
        self.data.capacity()
    }

    /// The prefix kept of an oversize event: see [`SseItem::Oversize`].
    fn prefix_cap(&self) -> usize {
        SSE_OVERSIZE_PREFIX_BYTES.min(self.max_event_bytes + 1)
    }

    /// Decodes `input`, calling `sink` for each complete event.
    pub fn feed(&mut self, mut input: &[u8], sink: &mut dyn FnMut(SseItem)) {
        if self.at_start && !input.is_empty() {
            // The BOM may arrive split; only a whole one at the start is skipped.
            if input.starts_with(b"\xEF\xBB\xBF") {
                input = &input[3..];
            }
            self.at_start = false;
        }
        while let Some(&b) = input.first() {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                input = &input[1..];
                continue;
            }
            if b == b'\n' || b == b'\r' {
                self.after_cr = b == b'\r';
                self.end_line(sink);
                input = &input[1..];
                continue;
            }
            match self.line {
                SseLine::Start if b == b':' => self.line = SseLine::Comment,
                SseLine::Start => {
                    self.line = SseLine::Field {
                        len: 1,
                        data: b == b'd',
                    }
                }
                SseLine::Field { len, data } if b == b':' => {
                    let data = data && len == 4;
                    if data {
                        self.start_data_line();
                    }
                    self.line = SseLine::Value { data, fresh: true };
                }
                SseLine::Field { len, data } => {
                    self.line = SseLine::Field {
                        len: len.saturating_add(1),
                        data: data && len < 4 && b == b"data"[len],
                    }
                }
                SseLine::Value { data, fresh: true } => {
                    self.line = SseLine::Value { data, fresh: false };
                    if b == b' ' {
                        input = &input[1..];
                    }
                    continue;
                }
                SseLine::Comment | SseLine::Value { .. } => {
                    // The rest of the line, at once.
                    let end = input
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .unwrap_or(input.len());
                    if self.line
                        == (SseLine::Value {
                            data: true,
                            fresh: false,
                        })
                    {
                        self.push_data(&input[..end]);
                    }
                    input = &input[end..];
                    continue;
                }
            }
            input = &input[1..];
        }
    }

    fn end_line(&mut self, sink: &mut dyn FnMut(SseItem)) {
        match std::mem::replace(&mut self.line, SseLine::Start) {
            // A blank line dispatches the event.
            SseLine::Start => self.dispatch(sink),
            // `data` alone: a data line with an empty value.
            SseLine::Field { len: 4, data: true } => self.start_data_line(),
            _ => {}
        }
    }

    /// A `data` line begins: lines after the first are joined with `\n`.
    fn start_data_line(&mut self) {
        if self.has_data {
            self.push_data(b"\n");
        }
        self.has_data = true;
    }

    fn push_data(&mut self, bytes: &[u8]) {
        self.size = self.size.saturating_add(bytes.len());
        if self.oversize {
            let room = self.prefix_cap().saturating_sub(self.data.len());
            self.data.extend_from_slice(&bytes[..bytes.len().min(room)]);
            return;
        }
        let need = self.data.len() + bytes.len();
        if need <= self.max_event_bytes {
            if need > self.data.capacity() {
                // Doubling, but never past the limit.
                let target = (self.data.capacity() * 2).clamp(need, self.max_event_bytes);
                self.data.reserve_exact(target - self.data.len());
            }
            self.data.extend_from_slice(bytes);
            return;
        }
        // Over the limit: keep the first bytes, drop the rest until the event ends.
        self.oversize = true;
        let cap = self.prefix_cap();
        if self.data.len() >= cap {
            self.data.truncate(cap);
        } else {
            let more = cap - self.data.len();
            self.data.reserve_exact(more);
            self.data.extend_from_slice(&bytes[..more]);
        }
        self.data.shrink_to(cap);
    }

    fn dispatch(&mut self, sink: &mut dyn FnMut(SseItem)) {
        let data = std::mem::take(&mut self.data);
        if self.oversize {
            sink(SseItem::Oversize {
                prefix: data,
                size: self.size,
            });
        } else if self.has_data {
            let text = String::from_utf8(data)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            sink(SseItem::Data(text));
        }
        self.size = 0;
        self.has_data = false;
        self.oversize = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize, limit: usize) -> Vec<SseItem> {
        let mut d = SseDecoder::new(limit);
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            d.feed(chunk, &mut |e| out.push(e));
        }
        out
    }

    #[test]
    fn sse_events_decode_split_at_every_offset() {
        let input = b"\xEF\xBB\xBF: hello\n\ndata: {\"a\":1}\n\ndata:x\r\ndata: y\r\rid: 3\nevent: m\ndata\n\nretry: 5\n\n";
        let expected = vec![
            SseItem::Data("{\"a\":1}".into()),
            SseItem::Data("x\ny".into()),
            SseItem::Data("".into()),
        ];
        for piece in 1..input.len() {
            assert_eq!(decode_in_pieces(input, piece, 1 << 20), expected, "{piece}");
        }
    }

    #[test]
    fn an_event_over_the_limit_is_skipped_and_reported_with_its_first_bytes() {
        // A response whose data passes the limit, over two data lines, with a comment and an
        // `id` field inside it; then a small event.
        let data = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"t\":\"{}\n{}\"}}}}",
            "x".repeat(100),
            "y".repeat(100)
        );
        let (first, second) = data.split_once('\n').unwrap();
        let input = format!("data: {first}\n: a comment\nid: 5\ndata:{second}\n\ndata: ok\n\n");
        let limit = 100;
        let expected = vec![
            SseItem::Oversize {
                prefix: data.as_bytes()[..limit + 1].to_vec(),
                size: data.len(),
            },
            SseItem::Data("ok".into()),
        ];
        for piece in 1..input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), piece, limit),
                expected,
                "{piece}"
            );
        }
        let SseItem::Oversize { prefix, .. } = &expected[0] else {
            unreachable!()
        };
        let sniffed = crate::sniff::sniff(prefix);
        assert_eq!(sniffed.response_id(), Some(&crate::Id::from(7)));
        // Exactly at the limit is not over it.
        let at = "z".repeat(limit);
        assert_eq!(
            decode_in_pieces(format!("data: {at}\n\n").as_bytes(), 3, limit),
            vec![SseItem::Data(at)]
        );
    }

    #[test]
    fn comments_and_other_fields_are_never_held() {
        let long = "c".repeat(10_000);
        let input = format!(": {long}\nevent: {long}\n{long}\ndata: ok\n\n");
        let mut d = SseDecoder::new(100);
        let mut out = Vec::new();
        for chunk in input.as_bytes().chunks(1000) {
            d.feed(chunk, &mut |e| out.push(e));
            assert!(d.capacity() <= 100, "{}", d.capacity());
        }
        assert_eq!(out, vec![SseItem::Data("ok".into())]);
    }

    /// A 50 MiB event (one long data line, then one of many short lines) through a decoder
    /// limited to 1 MiB: what it holds never passes the limit, each is reported with its first
    /// bytes and whole size, and the event after them arrives.
    #[test]
    fn a_50_mib_event_is_skipped_in_bounded_memory() {
        const LIMIT: usize = 1 << 20;
        const BIG: usize = 50 << 20;
        let mut d = SseDecoder::new(LIMIT);
        let mut out = Vec::new();
        let mut most = 0;
        let mut feed = |d: &mut SseDecoder, bytes: &[u8]| {
            for chunk in bytes.chunks(64 << 10) {
                d.feed(chunk, &mut |e| out.push(e));
                most = most.max(d.capacity()).max(d.buffered());
            }
        };
        let head = r#"{"jsonrpc":"2.0","id":3,"result":{"text":""#;
        let filler = vec![b'a'; 1 << 20];
        let filler_line = [b"data: ".as_slice(), &[b'b'; 1018], b"\n"].concat();
        // One line.
        feed(&mut d, format!("data: {head}").as_bytes());
        for _ in 0..BIG / filler.len() {
            feed(&mut d, &filler);
        }
        feed(&mut d, b"\"}}\n\n");
        // Many lines (each 1018 bytes of data and the `\n` joining it to the next).
        feed(&mut d, format!("data: {head}\n").as_bytes());
        let lines = BIG / filler_line.len();
        let block = filler_line.repeat(1024);
        for _ in 0..lines / 1024 {
            feed(&mut d, &block);
        }
        feed(&mut d, b"data: \"}}\n\ndata: {\"after\":1}\n\n");
        assert!(most <= LIMIT, "held {most} bytes for a {LIMIT}-byte limit");
        assert_eq!(out.len(), 3, "{:?}", &out[2..]);
        let sizes = [
            head.len() + BIG + 3,
            head.len() + 1 + (lines / 1024) * 1024 * 1019 + 3,
        ];
        for (item, size) in out.iter().zip(sizes) {
            let SseItem::Oversize { prefix, size: got } = item else {
                panic!("not skipped: {:.100?}", item);
            };
            assert_eq!(*got, size);
            assert_eq!(prefix.len(), SSE_OVERSIZE_PREFIX_BYTES);
            assert!(prefix.starts_with(head.as_bytes()));
            let sniffed = crate::sniff::sniff(prefix);
            assert_eq!(sniffed.response_id(), Some(&crate::Id::from(3)));
        }
        assert_eq!(out[2], SseItem::Data("{\"after\":1}".into()));
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn sse_event_round_trips() {
        for data in ["{\"jsonrpc\":\"2.0\"}", "a\nb", ""] {
            let mut d = SseDecoder::new(1 << 10);
            let mut out = Vec::new();
            d.feed(sse_event(data).as_bytes(), &mut |e| out.push(e));
            assert_eq!(out, vec![SseItem::Data(data.into())]);
        }
        assert_eq!(sse_event("{}"), "data: {}\n\n");
    }

    #[test]
    fn a_skipped_event_is_a_stand_in_for_a_response_an_answer_for_a_request_else_dropped() {
        let limit = 64;
        let skipped = |data: &str| {
            let event = sse_event(data);
            let items = decode_in_pieces(event.as_bytes(), 3, limit);
            let [SseItem::Oversize { prefix, size }] = &items[..] else {
                panic!("not skipped: {items:?}");
            };
            assert_eq!(*size, data.len());
            SkippedEvent::of(prefix, limit)
        };
        let response = &format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"big":"{}"}}}}"#,
            "x".repeat(80)
        );
        let SkippedEvent::StandIn(stand_in) = skipped(response) else {
            panic!("a response is replaced")
        };
        let v: serde_json::Value = serde_json::from_str(&stand_in).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(
            v["error"]["message"],
            "the response was larger than the client's 64-byte limit and was dropped"
        );
        let request = &format!(
            r#"{{"jsonrpc":"2.0","id":"r1","method":"fs/write_text_file","params":{{"content":"{}"}}}}"#,
            "x".repeat(80)
        );
        let SkippedEvent::Answer(answer) = skipped(request) else {
            panic!("a request is answered")
        };
        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(v["id"], "r1");
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["error"]["data"]["maxMessageBytes"], 64);
        let notification = &format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"x":"{}"}}}}"#,
            "x".repeat(80)
        );
        assert_eq!(skipped(notification), SkippedEvent::Dropped);
        // An id that is not within the first bytes cannot be answered.
        let late_id = format!(
            r#"{{"jsonrpc":"2.0","result":"{}","id":1}}"#,
            "x".repeat(5000)
        );
        assert_eq!(skipped(&late_id), SkippedEvent::Dropped);
    }
}
