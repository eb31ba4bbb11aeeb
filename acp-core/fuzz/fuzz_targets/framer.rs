//! The NDJSON decoder fed arbitrary bytes in arbitrary chunks: never panics, never holds more
//! than the limit + 1 bytes, never hands out a line over the limit, and gives the same frames
//! as the same bytes fed whole.
#![no_main]

use acp_core::framing::{Decoder, Frame};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum F {
    Line(Vec<u8>),
    Oversize(Vec<u8>),
}

fn frames(max: usize, chunks: &[&[u8]]) -> Vec<F> {
    let mut d = Decoder::new(max);
    let mut out = Vec::new();
    for c in chunks {
        d.decode(c, &mut |f| match f {
            Frame::Line(l) => {
                assert!(l.len() <= max, "line of {} bytes over the limit {max}", l.len());
                out.push(F::Line(l.to_vec()));
            }
            Frame::Oversize { limit, prefix } => {
                assert_eq!(limit, max);
                out.push(F::Oversize(prefix.to_vec()));
            }
        });
        assert!(d.buffered() <= max + 1, "buffered {} > limit + 1", d.buffered());
    }
    d.finish(&mut |f| match f {
        Frame::Line(l) => out.push(F::Line(l.to_vec())),
        Frame::Oversize { prefix, .. } => out.push(F::Oversize(prefix.to_vec())),
    });
    assert_eq!(d.buffered(), 0);
    out
}

fuzz_target!(|data: &[u8]| {
    // First byte: the limit; second: the chunk size seed; the rest: the stream.
    if data.len() < 2 {
        return;
    }
    let max = 1 + data[0] as usize % 64;
    let step = 1 + data[1] as usize % 17;
    let stream = &data[2..];
    let whole = frames(max, &[stream]);
    // Variable chunk sizes derived from the seed.
    let mut chunks = Vec::new();
    let (mut at, mut k) = (0, step);
    while at < stream.len() {
        let end = (at + k).min(stream.len());
        chunks.push(&stream[at..end]);
        at = end;
        k = 1 + (k * 7 + 3) % 23;
    }
    assert_eq!(frames(max, &chunks), whole, "chunked frames differ");
});
