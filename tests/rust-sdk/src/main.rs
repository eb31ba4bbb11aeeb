//! `rust-sdk-peer`: the official ACP Rust SDK's side of acp-rs's interop tests and benchmarks,
//! a program built on `agent-client-protocol` and `agent-client-protocol-http` alone (the SDK
//! pins another version of the schema crate than acp-core, so the two are never linked into
//! one program; benches/acp-bench runs this one).
//!
//! Interop (benches/acp-bench/tests/interop_*.rs):
//!
//!   rust-sdk-peer agent                          the SDK's test agent on stdio (`agent.rs`)
//!   rust-sdk-peer http-server --token T          that agent behind the official HTTP transport's
//!                                                server (`AcpHttpServer`, HTTP + SSE and
//!                                                WebSocket on `/acp`) and a bearer-token check;
//!                                                prints `listening ADDR`, then one `request …`
//!                                                line per HTTP request; serves until stdin closes
//!   rust-sdk-peer client SCENARIO [--cwd DIR] [--prompt TEXT] [--deny] [--probe-unknown-session]
//!                 [--session-cancel-only] (--url URL --token T | -- COMMAND ARGS…)
//!                                                the SDK's client (`client.rs`) against an agent
//!                                                process it spawns, or a remote agent through
//!                                                the official `HttpClient`; prints one JSON
//!                                                report line (`{"failed": …}` and exit status 1
//!                                                when the connection failed)
//!
//! ACP v2 (feature `v2`, the SDK's `unstable_protocol_v2`; on for the 5.2.0 pin, `v2.rs`):
//!
//!   rust-sdk-peer v2-client [--deny] -- COMMAND ARGS…  the SDK's v2 client against an agent
//!   rust-sdk-peer v2-agent                            the SDK's v2 agent on stdio
//!
//! Benchmarks (benches/acp-bench, `--sdk-peer`):
//!
//!   rust-sdk-peer one (sdk|sdk-stdio) SCENARIO…  one measurement (`bench.rs`)
//!   rust-sdk-peer serve sdk SCENARIO…            the child side of `sdk-stdio`
//!   rust-sdk-peer remote-serve official          the official server for `acp-bench remote-scale`

#[path = "../../../benches/acp-bench/src/common.rs"]
mod common;
#[path = "../../../benches/acp-bench/src/messages.rs"]
mod messages;

mod agent;
mod bench;
mod client;
mod http;
#[cfg(feature = "v2")]
mod v2;

/// The schema crate's types `messages.rs` builds with: the SDK's.
mod schema {
    pub use agent_client_protocol::schema::ProtocolVersion;
    pub use agent_client_protocol::v1::schema as v1;
}

use common::{Outcome, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let exe = std::env::current_exe().expect("current exe");
    let code = match args.first().map(String::as_str) {
        Some("one") => {
            let contestant = args.get(1).cloned().unwrap_or_default();
            let out = match Scenario::parse(&args[2..]) {
                Err(e) => Outcome::fail(e),
                Ok(sc) => match contestant.as_str() {
                    "sdk" => bench::run_duplex(sc),
                    "sdk-stdio" => bench::run_stdio(sc, &exe),
                    other => Err(format!("unknown contestant {other}")),
                }
                .unwrap_or_else(Outcome::fail),
            };
            println!("{}", serde_json::to_string(&out).unwrap());
            0
        }
        Some("serve") if args.get(1).map(String::as_str) == Some("sdk") => {
            match Scenario::parse(&args[2..]).and_then(bench::serve) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("rust-sdk-peer serve sdk: {e}");
                    1
                }
            }
        }
        Some("remote-serve") if args.get(1).map(String::as_str) == Some("official") => {
            http::remote_serve()
        }
        Some("agent") => agent::serve_stdio(),
        Some("http-server") => http::interop_server(&args[1..]),
        Some("client") => client::main(&args[1..]),
        #[cfg(feature = "v2")]
        Some("v2-client") => v2::client_main(&args[1..]),
        #[cfg(feature = "v2")]
        Some("v2-agent") => v2::agent_main(),
        _ => {
            eprintln!(
                "usage: rust-sdk-peer agent | http-server --token T | client SCENARIO … | \
                 one CONTESTANT SCENARIO… | serve sdk SCENARIO… | remote-serve official"
            );
            2
        }
    };
    std::process::exit(code);
}
