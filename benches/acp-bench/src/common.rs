//! Shared pieces without the protocol's types: the constants of the messages every contestant
//! sends, the scenarios, timing statistics, memory probes and the result line. Also compiled
//! into the official Rust SDK's side (`tests/rust-sdk`, through `#[path]`), which builds
//! against another version of the schema crate; the typed messages are `messages.rs`.

use std::time::Duration;

pub const SESSION_ID: &str = "sess_0123456789abcdef";
pub const CWD: &str = "/home/user/projects/example-workspace";
pub const CHUNK_TEXT: &str = "Here is the next piece of the answer, streamed. ";
pub const WRITE_PATH: &str = "/home/user/projects/example-workspace/big.txt";

/// Content for a write request whose whole JSON-RPC message is just under `message_bytes`
/// (code-like ASCII text with nothing JSON must escape, so every SDK sends the same bytes).
pub fn file_content(message_bytes: usize) -> String {
    let bytes = message_bytes.saturating_sub(1024);
    let line = "    let value = compute(alpha, beta, gamma); // some source code line here  ";
    let mut s = String::with_capacity(bytes);
    while s.len() + line.len() <= bytes {
        s.push_str(line);
    }
    while s.len() < bytes {
        s.push('x');
    }
    s
}

/// The tokio runtime every Rust contestant runs on. The official SDK is an actor system; a
/// multi-threaded runtime (2 workers, the machine's cores) is how an application would run it,
/// and the other contestants run the same. ACP_BENCH_SDK_RT=ct selects current_thread.
pub fn runtime() -> tokio::runtime::Runtime {
    if std::env::var("ACP_BENCH_SDK_RT").as_deref() == Ok("ct") {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }
}

/// Resident set size now, in KiB (Linux /proc).
pub fn rss_kb() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * (unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64) / 1024
}

/// Percentile (0..=100) of latencies, in microseconds.
pub fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

/// The result line a measurement prints (one JSON object).
#[derive(Default, Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the measured part, seconds.
    #[serde(default)]
    pub secs: f64,
    /// Items (messages or requests) per second.
    #[serde(default)]
    pub per_sec: f64,
    #[serde(default)]
    pub p50_us: f64,
    #[serde(default)]
    pub p99_us: f64,
    /// RSS before the measured part (after runtime start-up), KiB.
    #[serde(default)]
    pub base_rss_kb: u64,
    /// RSS at the measured point (e.g. all requests pending), KiB.
    #[serde(default)]
    pub point_rss_kb: u64,
    /// Peak RSS of the measuring process, KiB (filled by the driver from wait4 when possible).
    #[serde(default)]
    pub peak_rss_kb: u64,
    /// CPU time (user + system, all threads) of the measuring process and of the children it
    /// waited for, seconds (filled by the driver from wait4; includes start-up).
    #[serde(default)]
    pub cpu_secs: f64,
    /// Peak RSS of a child agent process, KiB (stdio contestants).
    #[serde(default)]
    pub child_peak_rss_kb: u64,
    #[serde(default)]
    pub child_base_rss_kb: u64,
}

impl Outcome {
    pub fn fail(e: impl std::fmt::Display) -> Self {
        Outcome {
            ok: false,
            error: Some(e.to_string()),
            ..Default::default()
        }
    }

    pub fn from_latencies(mut lat: Vec<Duration>, secs: f64) -> Self {
        lat.sort_unstable();
        Outcome {
            ok: true,
            secs,
            per_sec: lat.len() as f64 / secs,
            p50_us: percentile_us(&lat, 50.0),
            p99_us: percentile_us(&lat, 99.0),
            ..Default::default()
        }
    }
}

/// What one measurement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The agent streams N `session/update` notifications; the client decodes each.
    Notify(usize),
    /// N `session/new` round trips, one at a time.
    RtSeq(usize),
    /// N `session/new` round trips, C in flight at once.
    RtConc(usize, usize),
    /// One `fs/write_text_file` request of this many content bytes.
    Large(usize),
    /// N `session/new` requests all in flight at once; the agent answers once it holds all.
    Scale(usize),
}

impl Scenario {
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let num = |i: usize| -> Result<usize, String> {
            args.get(i)
                .ok_or_else(|| format!("missing argument {i}"))?
                .parse()
                .map_err(|e| format!("bad number: {e}"))
        };
        match args.first().map(String::as_str) {
            Some("notify") => Ok(Scenario::Notify(num(1)?)),
            Some("rt-seq") => Ok(Scenario::RtSeq(num(1)?)),
            Some("rt-conc") => Ok(Scenario::RtConc(num(1)?, num(2)?)),
            Some("large") => Ok(Scenario::Large(num(1)?)),
            Some("scale") => Ok(Scenario::Scale(num(1)?)),
            other => Err(format!("unknown scenario {other:?}")),
        }
    }

    pub fn args(&self) -> Vec<String> {
        match *self {
            Scenario::Notify(n) => vec!["notify".into(), n.to_string()],
            Scenario::RtSeq(n) => vec!["rt-seq".into(), n.to_string()],
            Scenario::RtConc(n, c) => vec!["rt-conc".into(), n.to_string(), c.to_string()],
            Scenario::Large(b) => vec!["large".into(), b.to_string()],
            Scenario::Scale(n) => vec!["scale".into(), n.to_string()],
        }
    }
}
