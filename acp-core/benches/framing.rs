//! Framing throughput: `framing::Decoder` against a bare `memchr` newline scan of the same
//! buffer (the floor any NDJSON reader pays).

use acp_core::framing::{Decoder, Frame};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

#[path = "common/mod.rs"]
mod common;

fn framing(c: &mut Criterion) {
    let buf = common::session_updates(20_000, 200);
    let mut g = c.benchmark_group("framing");
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("memchr_newlines", |b| {
        b.iter(|| {
            let mut lines = 0usize;
            let mut len = 0usize;
            for chunk in buf.chunks(common::CHUNK) {
                let mut start = 0;
                for i in memchr::memchr_iter(b'\n', chunk) {
                    len += i - start;
                    start = i + 1;
                    lines += 1;
                }
            }
            black_box((lines, len))
        })
    });
    g.bench_function("decoder", |b| {
        let mut d = Decoder::new(acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES);
        b.iter(|| {
            let mut lines = 0usize;
            let mut len = 0usize;
            for chunk in buf.chunks(common::CHUNK) {
                d.decode(chunk, &mut |f| {
                    if let Frame::Line(l) = f {
                        len += l.len();
                        lines += 1;
                    }
                });
            }
            black_box((lines, len))
        })
    });
    g.finish();
}

criterion_group!(benches, framing);
criterion_main!(benches);
