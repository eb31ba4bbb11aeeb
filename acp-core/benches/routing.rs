//! Routing of `session/update` notifications through `Connection::handle_bytes` +
//! `poll_event`: with raw params (what the engine does), and with the params decoded into the
//! official typed `SessionNotification`.

use acp_core::typed::{self, SessionUpdate};
use acp_core::{Config, Connection, Event, Role};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

#[path = "common/mod.rs"]
mod common;

const N: usize = 10_000;

fn routing(c: &mut Criterion) {
    let buf = common::session_updates(N, 120);
    let mut g = c.benchmark_group("routing");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("session_update_raw", |b| {
        let mut conn: Connection = Connection::new(Config::new(Role::Client));
        b.iter(|| {
            let mut n = 0usize;
            for chunk in buf.chunks(common::CHUNK) {
                conn.handle_bytes(chunk, 0);
                while let Some(e) = conn.poll_event() {
                    if let Event::Notification { params, .. } = e {
                        n += params.map_or(0, |p| p.get().len());
                    }
                }
            }
            black_box(n)
        })
    });
    g.bench_function("session_update_typed", |b| {
        let mut conn: Connection = Connection::new(Config::new(Role::Client));
        b.iter(|| {
            let mut n = 0usize;
            for chunk in buf.chunks(common::CHUNK) {
                conn.handle_bytes(chunk, 0);
                while let Some(e) = conn.poll_event() {
                    if let Event::Notification { params, .. } = e {
                        let update = typed::decode_notification::<SessionUpdate>(params.as_deref())
                            .expect("valid SessionNotification");
                        n += update.session_id.0.len();
                    }
                }
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, routing);
criterion_main!(benches);
