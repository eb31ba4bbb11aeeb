//! Request/response correlation with 10,000 requests in flight: the client sends them all, the
//! agent answers them all (in reverse order), the client completes them all (`pair::Pair`).

use acp_core::pair::Pair;
use acp_core::{Config, Event, RequestOptions, Role};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use std::hint::black_box;

const N: usize = 10_000;

fn correlation(c: &mut Criterion) {
    let params = json!({"sessionId": "sess-1", "path": "/src/main.rs", "line": 1, "limit": 100});
    let result = json!({"content": "fn main() {}"});
    let mut g = c.benchmark_group("correlation");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("10k_in_flight_round_trip", |b| {
        // The agent must accept 10,000 requests in flight (the default limit is 1024).
        let mut agent = Config::new(Role::Agent);
        agent.max_incoming_in_flight = N;
        let mut p: Pair = Pair::with_configs(Config::new(Role::Client), agent);
        let mut tokens = Vec::with_capacity(N);
        b.iter(|| {
            for _ in 0..N {
                p.client
                    .send_request(
                        "x/read",
                        Some(&params),
                        RequestOptions::default().timeout(30_000),
                        p.now,
                    )
                    .expect("open");
            }
            p.pump();
            assert_eq!(p.client.pending_outgoing(), N);
            tokens.clear();
            while let Some(e) = p.agent.poll_event() {
                if let Event::Request { token, .. } = e {
                    tokens.push(token);
                }
            }
            for &t in tokens.iter().rev() {
                p.agent.respond(t, &result).expect("pending");
            }
            p.pump();
            let mut done = 0usize;
            while let Some(e) = p.client.poll_event() {
                if let Event::Response { result: Ok(_), .. } = e {
                    done += 1;
                }
            }
            assert_eq!(done, N);
            black_box(done)
        })
    });
    g.finish();
}

criterion_group!(benches, correlation);
criterion_main!(benches);
