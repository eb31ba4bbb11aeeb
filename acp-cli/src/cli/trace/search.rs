//! Finding text in a trace's lines without holding them: the lines are read from the file
//! in blocks of at most [`BLOCK`] bytes (a longer line in pieces that overlap by the text's
//! length), ASCII case ignored.

use std::fs::File;
use std::io;

/// The most bytes read at once.
pub const BLOCK: usize = 4 << 20;

/// Calls `found(i)` for each line `i` of `lines` ((offset, length) in `file`, in file order)
/// containing `needle` (already ASCII-lowercased, not empty). Stops with `Ok(false)` when
/// `stop()` says so (checked between blocks); `Ok(true)` when every line was searched.
pub fn scan(
    file: &File,
    lines: &[(u64, u64)],
    needle: &[u8],
    stop: &dyn Fn() -> bool,
    found: &mut dyn FnMut(usize),
) -> io::Result<bool> {
    let finder = memchr::memmem::Finder::new(needle);
    let mut buf = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if stop() {
            return Ok(false);
        }
        let (start, len) = lines[i];
        if len as usize > BLOCK {
            if long_line_has(file, start, len, &finder, &mut buf, stop)? {
                found(i);
            }
            i += 1;
            continue;
        }
        // As many whole lines as fit in a block.
        let mut j = i + 1;
        while j < lines.len() {
            let (s, l) = lines[j];
            if l as usize > BLOCK || s + l - start > BLOCK as u64 || s < start {
                break;
            }
            j += 1;
        }
        let (last_start, last_len) = lines[j - 1];
        let end = last_start + last_len;
        buf.resize((end - start) as usize, 0);
        read_at(file, &mut buf, start)?;
        buf.make_ascii_lowercase();
        for (k, &(s, l)) in lines.iter().enumerate().take(j).skip(i) {
            let a = (s - start) as usize;
            if finder.find(&buf[a..a + l as usize]).is_some() {
                found(k);
            }
        }
        i = j;
    }
    Ok(true)
}

/// A line longer than a block, searched in overlapping pieces.
fn long_line_has(
    file: &File,
    start: u64,
    len: u64,
    finder: &memchr::memmem::Finder<'_>,
    buf: &mut Vec<u8>,
    stop: &dyn Fn() -> bool,
) -> io::Result<bool> {
    let overlap = finder.needle().len().saturating_sub(1) as u64;
    let mut at = 0u64;
    while at < len {
        if stop() {
            return Ok(false);
        }
        let from = at.saturating_sub(overlap);
        let to = (at + BLOCK as u64).min(len);
        buf.resize((to - from) as usize, 0);
        read_at(file, buf, start + from)?;
        buf.make_ascii_lowercase();
        if finder.find(buf).is_some() {
            return Ok(true);
        }
        at = to;
    }
    Ok(false)
}

/// Fills `buf` from `offset`; a file that got shorter meanwhile leaves zeros.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match crate::os_compat::read_at(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => {
                buf[done..].fill(0);
                break;
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads at most `max` bytes of `len` at `offset` (a line's start).
pub fn read_line(file: &File, offset: u64, len: u64, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; (len as usize).min(max)];
    read_at(file, &mut buf, offset)?;
    Ok(buf)
}
