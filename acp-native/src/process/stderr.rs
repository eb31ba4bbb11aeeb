//! An agent's stderr: forwarded to `tracing` line by line (lines bounded), with a bounded tail
//! of the last lines kept for error reports.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// The `tracing` target agent stderr lines are logged under.
pub const STDERR_TRACING_TARGET: &str = "acp::agent_stderr";

/// Longest stderr line (in bytes) forwarded to `tracing`; the rest of a longer line is dropped and
/// the line is marked as cut. Bounds memory when an agent writes megabytes without a newline.
pub const MAX_STDERR_LINE_BYTES: usize = 16 * 1024;

/// Bounds on the stderr tail kept for error reports. All bounds hold at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailLimits {
    /// Most recent lines kept.
    pub max_lines: usize,
    /// Most recent bytes kept (sum of line lengths, without newlines).
    pub max_bytes: usize,
    /// A longer line is cut to this many bytes (at a character boundary) before it enters the
    /// tail, so one giant line cannot push out everything else.
    pub max_line_bytes: usize,
}

impl Default for TailLimits {
    /// 40 lines, 8 KiB, 1 KiB per line.
    fn default() -> Self {
        TailLimits {
            max_lines: 40,
            max_bytes: 8 * 1024,
            max_line_bytes: 1024,
        }
    }
}

/// A bounded ring of the most recent stderr lines.
#[derive(Clone, Debug)]
pub struct StderrTail {
    limits: TailLimits,
    lines: VecDeque<String>,
    bytes: usize,
    dropped_lines: u64,
}

impl StderrTail {
    /// An empty tail.
    pub fn new(limits: TailLimits) -> Self {
        StderrTail {
            limits,
            lines: VecDeque::new(),
            bytes: 0,
            dropped_lines: 0,
        }
    }

    /// Appends a line (without its newline), evicting the oldest lines to stay within limits.
    pub fn push(&mut self, line: &str) {
        if self.limits.max_lines == 0 || self.limits.max_bytes == 0 {
            self.dropped_lines += 1;
            return;
        }
        let max_line = self.limits.max_line_bytes.min(self.limits.max_bytes);
        let line = truncate_at_char_boundary(line, max_line);
        self.bytes += line.len();
        self.lines.push_back(line.to_owned());
        while self.lines.len() > self.limits.max_lines || self.bytes > self.limits.max_bytes {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
                self.dropped_lines += 1;
            } else {
                break;
            }
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }

    /// Lines seen but no longer kept.
    pub fn dropped_lines(&self) -> u64 {
        self.dropped_lines
    }

    /// Bytes currently kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
fn truncate_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub(super) async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    pid: u32,
    program: String,
    tail: Arc<Mutex<StderrTail>>,
    done: watch::Sender<bool>,
) {
    let mut splitter = LineSplitter::new(MAX_STDERR_LINE_BYTES);
    let mut buf = vec![0u8; 8192];
    let mut emit = |line: &[u8], cut: usize| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if cut > 0 {
            text.push_str(&format!(" [... {cut} more bytes]"));
        }
        tracing::info!(target: "acp::agent_stderr", pid, program = %program, "{text}");
        tail.lock().unwrap_or_else(|e| e.into_inner()).push(&text);
    };
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => splitter.feed(&buf[..n], &mut emit),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(pid, "reading agent stderr failed: {e}");
                break;
            }
        }
    }
    splitter.finish(&mut emit);
    done.send_replace(true);
}

/// Splits a byte stream into lines, keeping at most `max` bytes of each line (the count of
/// dropped bytes is reported with the line). `\r\n` endings lose their `\r`.
pub(crate) struct LineSplitter {
    max: usize,
    line: Vec<u8>,
    cut: usize,
}

impl LineSplitter {
    pub(crate) fn new(max: usize) -> Self {
        LineSplitter {
            max,
            line: Vec::new(),
            cut: 0,
        }
    }

    pub(crate) fn feed(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(&[u8], usize)) {
        while !bytes.is_empty() {
            let (chunk, newline) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], true),
                None => (bytes, false),
            };
            let room = self.max.saturating_sub(self.line.len());
            let take = room.min(chunk.len());
            self.line.extend_from_slice(&chunk[..take]);
            self.cut += chunk.len() - take;
            if newline {
                if self.line.last() == Some(&b'\r') && self.cut == 0 {
                    self.line.pop();
                }
                emit(&self.line, self.cut);
                self.line.clear();
                self.cut = 0;
                bytes = &bytes[chunk.len() + 1..];
            } else {
                bytes = &[];
            }
        }
    }

    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(&[u8], usize)) {
        if !self.line.is_empty() || self.cut > 0 {
            emit(&self.line, self.cut);
            self.line.clear();
            self.cut = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_newest_within_both_bounds() {
        let mut t = StderrTail::new(TailLimits {
            max_lines: 3,
            max_bytes: 10,
            max_line_bytes: 100,
        });
        for l in ["a", "bb", "ccc", "dddd"] {
            t.push(l);
        }
        assert_eq!(t.lines(), ["bb", "ccc", "dddd"]);
        t.push("eeeeeee"); // 9 + 7 bytes > 10: evicts until it fits
        assert_eq!(t.lines(), ["eeeeeee"]);
        assert_eq!(t.bytes(), 7);
        assert_eq!(t.dropped_lines(), 4);
        t.push("ééééééééééé"); // 22 bytes: cut to 10 at a char boundary
        assert_eq!(t.lines(), ["ééééé"]);
    }

    #[test]
    fn line_splitter_bounds_lines_and_handles_splits() {
        let mut out: Vec<(String, usize)> = Vec::new();
        let mut sp = LineSplitter::new(4);
        let mut emit =
            |l: &[u8], cut: usize| out.push((String::from_utf8_lossy(l).into_owned(), cut));
        sp.feed(b"ab", &mut emit);
        sp.feed(b"c\r\nabcdefg", &mut emit);
        sp.feed(b"hij\n\nxy", &mut emit);
        sp.finish(&mut emit);
        assert_eq!(
            out,
            vec![
                ("abc".into(), 0),
                ("abcd".into(), 6),
                ("".into(), 0),
                ("xy".into(), 0)
            ]
        );
    }
}
