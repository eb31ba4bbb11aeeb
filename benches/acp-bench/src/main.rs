//! acp-bench: acp-rs side by side with the official ACP SDKs. Run `scripts/bench.sh`.
//!
//!   acp-bench drive [--short] [--rounds N] [--node-dir DIR] [--md FILE] [--only GROUP,...]
//!   acp-bench one CONTESTANT SCENARIO ARGS...     one measurement, prints one JSON line
//!   acp-bench serve (core|native|pipe|pipe-tokio) SCENARIO ARGS... child side of the stdio contestants
//!   acp-bench remote-scale [--smoke] [--sessions N] ...   remote servers at scale (src/remote_scale.rs)
//!   acp-bench remote-serve ours                            its server process
//!   acp-bench interop-agent                                an acp-native agent on stdio for the
//!                                                          interop tests (tests/interop_rust_sdk.rs)
//!
//! The official Rust SDK's contestants (`sdk`, `sdk-stdio`) and its remote server run in another
//! program, `rust-sdk-peer` (tests/rust-sdk, its own workspace: the SDK pins another version of
//! the schema crate than acp-core, and one build cannot hold both); `--sdk-peer PATH` names it.

mod common;
mod core;
mod driver;
#[cfg(feature = "native")]
mod interop_agent;
mod messages;
#[cfg(feature = "native")]
mod native;
mod remote_scale;
mod stdio;

/// The schema crate's types `messages.rs` builds with: acp-core's.
mod schema {
    pub use acp_core::typed::schema::{v1, ProtocolVersion};
}

use common::{Outcome, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let exe = std::env::current_exe().expect("current exe");
    match args.first().map(String::as_str) {
        Some("one") => {
            let contestant = args.get(1).cloned().unwrap_or_default();
            let out = match Scenario::parse(&args[2..]) {
                Err(e) => Outcome::fail(e),
                Ok(sc) => run_one(&contestant, sc, &exe).unwrap_or_else(Outcome::fail),
            };
            println!("{}", serde_json::to_string(&out).unwrap());
        }
        Some("serve") => {
            let what = args.get(1).cloned().unwrap_or_default();
            let res = match what.as_str() {
                "pipe" => stdio::serve_echo(),
                "pipe-tokio" => stdio::serve_echo_tokio(),
                _ => match Scenario::parse(&args[2..]) {
                    Err(e) => Err(e),
                    Ok(sc) => match what.as_str() {
                        "core" => stdio::serve_core(sc),
                        #[cfg(feature = "native")]
                        "native" => native::serve(sc),
                        other => Err(format!("unknown server {other}")),
                    },
                },
            };
            if let Err(e) = res {
                eprintln!("acp-bench serve {what}: {e}");
                std::process::exit(1);
            }
        }
        Some("drive") => std::process::exit(driver::main(&args[1..], &exe)),
        Some("remote-scale") => std::process::exit(remote_scale::main(&args[1..], &exe)),
        Some("remote-serve") => std::process::exit(remote_scale::serve(&args[1..])),
        #[cfg(feature = "native")]
        Some("interop-agent") => std::process::exit(interop_agent::main()),
        _ => {
            eprintln!("usage: acp-bench drive [--short] | one CONTESTANT SCENARIO... | serve ...");
            std::process::exit(2);
        }
    }
}

fn run_one(contestant: &str, sc: Scenario, exe: &std::path::Path) -> Result<Outcome, String> {
    match contestant {
        "core" => core::run(sc),
        "core-stdio" => stdio::run_core(sc, exe),
        "pipe" => stdio::run_pipe(sc, exe),
        "pipe-tokio" => stdio::run_pipe_tokio(sc, exe),
        #[cfg(feature = "native")]
        "native" => native::run_duplex(sc),
        #[cfg(feature = "native")]
        "native-stdio" => native::run_stdio(sc, exe),
        other => Err(format!("unknown contestant {other}")),
    }
}
