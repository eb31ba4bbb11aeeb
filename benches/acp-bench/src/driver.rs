//! The driver: runs every contestant of a scenario alternately (A, B, C, A, B, C, ...), each
//! measurement in its own child process (peak RSS from wait4), takes medians, prints tables.
//! The official Rust SDK's contestants run in `rust-sdk-peer` (`--sdk-peer PATH`,
//! tests/rust-sdk), the same `one CONTESTANT SCENARIO…` command line as this program's.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{Outcome, Scenario};

#[derive(Clone, Copy, PartialEq)]
enum Host {
    /// This program.
    Rust,
    /// `rust-sdk-peer` (the official Rust SDK).
    RustSdk,
    Node,
}

#[derive(Clone, Copy)]
struct Contestant {
    key: &'static str,
    label: &'static str,
    host: Host,
    acp_rs: bool,
    stdio: bool,
}

const CONTESTANTS: &[Contestant] = &[
    Contestant {
        key: "core",
        label: "acp-core (in-memory Pair)",
        host: Host::Rust,
        acp_rs: true,
        stdio: false,
    },
    Contestant {
        key: "native",
        label: "acp-native (in-memory duplex)",
        host: Host::Rust,
        acp_rs: true,
        stdio: false,
    },
    Contestant {
        key: "wasm",
        label: "acp-wasm in node (in-memory)",
        host: Host::Node,
        acp_rs: true,
        stdio: false,
    },
    Contestant {
        key: "sdk",
        label: "official Rust SDK 5.x (in-memory duplex)",
        host: Host::RustSdk,
        acp_rs: false,
        stdio: false,
    },
    Contestant {
        key: "ts",
        label: "official TS SDK 2.4 (ndJsonStream, in-memory)",
        host: Host::Node,
        acp_rs: false,
        stdio: false,
    },
    Contestant {
        key: "native-stdio",
        label: "acp-native (subprocess stdio)",
        host: Host::Rust,
        acp_rs: true,
        stdio: true,
    },
    Contestant {
        key: "core-stdio",
        label: "acp-core + blocking loop (subprocess stdio)",
        host: Host::Rust,
        acp_rs: true,
        stdio: true,
    },
    Contestant {
        key: "sdk-stdio",
        label: "official Rust SDK 5.x (subprocess stdio)",
        host: Host::RustSdk,
        acp_rs: false,
        stdio: true,
    },
    Contestant {
        key: "ts-stdio",
        label: "official TS SDK 2.4 (subprocess stdio)",
        host: Host::Node,
        acp_rs: false,
        stdio: true,
    },
    Contestant {
        key: "pipe",
        label: "bare pipe ping-pong (floor)",
        host: Host::Rust,
        acp_rs: false,
        stdio: true,
    },
    Contestant {
        key: "pipe-tokio",
        label: "bare pipe ping-pong, both ends on tokio (the runtime's floor)",
        host: Host::Rust,
        acp_rs: false,
        stdio: true,
    },
    // The same on tokio's current_thread runtime in both processes (`-ct`: the key without
    // the suffix, run with ACP_BENCH_SDK_RT=ct): no cross-thread wake-ups.
    Contestant {
        key: "native-stdio-ct",
        label: "acp-native (subprocess stdio), current_thread runtime",
        host: Host::Rust,
        acp_rs: true,
        stdio: true,
    },
    Contestant {
        key: "sdk-stdio-ct",
        label: "official Rust SDK 5.x (subprocess stdio), current_thread runtime",
        host: Host::RustSdk,
        acp_rs: false,
        stdio: true,
    },
    Contestant {
        key: "pipe-tokio-ct",
        label: "bare pipe ping-pong on tokio, current_thread runtime (its floor)",
        host: Host::Rust,
        acp_rs: false,
        stdio: true,
    },
];

struct Env {
    exe: PathBuf,
    /// `rust-sdk-peer`, for the official Rust SDK's contestants.
    sdk_peer: Option<PathBuf>,
    node_dir: PathBuf,
    timeout: Duration,
    /// Why a contestant cannot be measured (None: it can).
    unavailable: Vec<(&'static str, String)>,
}

impl Env {
    fn why_not(&self, key: &str) -> Option<&str> {
        let base = key.strip_suffix("-ct").unwrap_or(key);
        self.unavailable
            .iter()
            .find(|(k, _)| *k == key || *k == base)
            .map(|(_, w)| w.as_str())
    }

    fn command(&self, c: &Contestant, sc: Scenario) -> Command {
        let mut cmd = match c.host {
            Host::Rust | Host::RustSdk => {
                let exe = match (c.host, &self.sdk_peer) {
                    (Host::RustSdk, Some(peer)) => peer,
                    _ => &self.exe,
                };
                let mut cmd = Command::new(exe);
                match c.key.strip_suffix("-ct") {
                    Some(base) => {
                        cmd.arg("one").arg(base).env("ACP_BENCH_SDK_RT", "ct");
                    }
                    None => {
                        cmd.arg("one").arg(c.key).env_remove("ACP_BENCH_SDK_RT");
                    }
                }
                cmd
            }
            Host::Node => {
                let mut cmd = Command::new("node");
                cmd.arg(self.node_dir.join("bench.mjs")).arg(c.key);
                cmd
            }
        };
        cmd.args(sc.args());
        cmd
    }
}

/// Runs one measurement in a child; peak RSS from wait4.
fn measure(env: &Env, c: &Contestant, sc: Scenario) -> Outcome {
    let mut cmd = env.command(c, sc);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(ch) => ch,
        Err(e) => return Outcome::fail(format!("spawn: {e}")),
    };
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let timeout = env.timeout;
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(timeout).is_err() {
            // Our own child, still unreaped (we reap it only after this thread is told).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            true
        } else {
            false
        }
    });
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // Wait for the child ourselves (not Child::wait) to get its rusage.
    let _ = done_tx.send(());
    let killed = watchdog.join().unwrap_or(false);
    unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let errtext = err_thread.join().unwrap_or_default();
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{'));
    let mut o = match line.map(serde_json::from_str::<Outcome>) {
        Some(Ok(o)) => o,
        _ => {
            let why = if killed {
                format!("timed out after {}s", timeout.as_secs())
            } else {
                let tail: String = errtext
                    .lines()
                    .rev()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ");
                format!("no result (exit status {status}): {tail}")
            };
            return Outcome::fail(why);
        }
    };
    o.peak_rss_kb = ru.ru_maxrss as u64;
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    o.cpu_secs = tv(ru.ru_utime) + tv(ru.ru_stime);
    o
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Medians of one contestant's runs.
#[derive(Clone, Debug, Default)]
struct Summary {
    ok_runs: usize,
    error: Option<String>,
    not_measurable: Option<String>,
    secs: f64,
    cpu_secs: f64,
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    /// Peak RSS growth over the run (peak - base), KiB.
    peak_growth_kb: f64,
    peak_kb: f64,
    /// Point RSS growth (e.g. all pending), KiB.
    point_growth_kb: f64,
}

impl Summary {
    fn ok(&self) -> bool {
        self.ok_runs > 0
    }
}

fn summarize(runs: &[Outcome]) -> Summary {
    let ok: Vec<&Outcome> = runs.iter().filter(|o| o.ok).collect();
    let m = |f: &dyn Fn(&Outcome) -> f64| median(ok.iter().map(|o| f(o)).collect());
    Summary {
        ok_runs: ok.len(),
        error: runs.iter().find_map(|o| o.error.clone()),
        not_measurable: None,
        secs: m(&|o| o.secs),
        cpu_secs: m(&|o| o.cpu_secs),
        per_sec: m(&|o| o.per_sec),
        p50_us: m(&|o| o.p50_us),
        p99_us: m(&|o| o.p99_us),
        peak_growth_kb: m(&|o| o.peak_rss_kb.saturating_sub(o.base_rss_kb) as f64),
        peak_kb: m(&|o| o.peak_rss_kb as f64),
        point_growth_kb: m(&|o| o.point_rss_kb.saturating_sub(o.base_rss_kb) as f64),
    }
}

struct Group {
    name: String,
    title: String,
    scenario: Scenario,
    keys: Vec<&'static str>,
    rounds: usize,
}

fn run_group(env: &Env, g: &Group) -> Vec<(Contestant, Summary)> {
    let cs: Vec<Contestant> = g
        .keys
        .iter()
        .map(|k| *CONTESTANTS.iter().find(|c| c.key == *k).unwrap())
        .collect();
    let mut runs: Vec<Vec<Outcome>> = vec![Vec::new(); cs.len()];
    let live: Vec<usize> = (0..cs.len())
        .filter(|&i| env.why_not(cs[i].key).is_none())
        .collect();
    for round in 0..g.rounds {
        // A, B, C, A, B, C...: every round runs each contestant once, the order rotated.
        for j in 0..live.len() {
            let i = live[(j + round) % live.len()];
            // A contestant that failed every run so far (e.g. a size cap) is not retried.
            if !runs[i].is_empty() && runs[i].iter().all(|o| !o.ok) {
                continue;
            }
            let o = measure(env, &cs[i], g.scenario);
            eprintln!(
                "  [{}] round {} {:<14} {}",
                g.name,
                round + 1,
                cs[i].key,
                if o.ok {
                    format!("{:.4}s", o.secs)
                } else {
                    format!("FAILED: {}", o.error.clone().unwrap_or_default())
                }
            );
            runs[i].push(o);
        }
    }
    cs.iter()
        .enumerate()
        .map(|(i, c)| {
            let mut s = summarize(&runs[i]);
            if let Some(w) = env.why_not(c.key) {
                s.not_measurable = Some(w.to_string());
            }
            (*c, s)
        })
        .collect()
}

fn fmt_rate(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}

fn fmt_us(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1000.0 {
        format!("{:.2} ms", x / 1000.0)
    } else {
        format!("{x:.1} µs")
    }
}

fn fmt_x(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}×")
    } else {
        "-".into()
    }
}

fn status(s: &Summary) -> Option<String> {
    if let Some(w) = &s.not_measurable {
        return Some(format!("not yet measurable: {w}"));
    }
    if !s.ok() {
        return Some(format!(
            "FAILED: {}",
            s.error.clone().unwrap_or_else(|| "no run".into())
        ));
    }
    None
}

/// The acp-rs reference of a row: in-memory rows compare with acp-core, stdio rows with
/// acp-native stdio when measurable, else acp-core's blocking loop.
fn reference<'a>(
    rows: &'a [(Contestant, Summary)],
    stdio: bool,
) -> Option<&'a (Contestant, Summary)> {
    let prefs: &[&str] = if stdio {
        &["native-stdio", "core-stdio"]
    } else {
        &["core", "native"]
    };
    prefs
        .iter()
        .filter_map(|k| rows.iter().find(|(c, s)| c.key == *k && s.ok()))
        .next()
}

fn table(g: &Group, rows: &[(Contestant, Summary)], md: &mut String) {
    md.push_str(&format!("\n### {}\n\n", g.title));
    match g.scenario {
        Scenario::Notify(_) | Scenario::RtSeq(_) | Scenario::RtConc(..) => {
            let rt = !matches!(g.scenario, Scenario::Notify(_));
            if rt {
                md.push_str("| contestant | req/s | p50 | p99 | acp-rs throughput ÷ this | this p50 ÷ acp-rs p50 | CPU time |\n|---|---:|---:|---:|---:|---:|---:|\n");
            } else {
                md.push_str("| contestant | msg/s | time | acp-rs throughput ÷ this | CPU time |\n|---|---:|---:|---:|---:|\n");
            }
            for (c, s) in rows {
                if let Some(st) = status(s) {
                    md.push_str(&format!("| {} | {st} |\n", c.label));
                    continue;
                }
                let r = reference(rows, c.stdio);
                let ratio = r.map_or(f64::NAN, |(_, rs)| rs.per_sec / s.per_sec);
                let lat = r.map_or(f64::NAN, |(_, rs)| s.p50_us / rs.p50_us);
                let me = r.is_some_and(|(rc, _)| rc.key == c.key);
                let tag = if me { " (reference)" } else { "" };
                if rt {
                    md.push_str(&format!(
                        "| {}{tag} | {} | {} | {} | {} | {} | {:.2} s |\n",
                        c.label,
                        fmt_rate(s.per_sec),
                        fmt_us(s.p50_us),
                        fmt_us(s.p99_us),
                        fmt_x(ratio),
                        fmt_x(lat),
                        s.cpu_secs
                    ));
                } else {
                    md.push_str(&format!(
                        "| {}{tag} | {} | {:.3} s | {} | {:.2} s |\n",
                        c.label,
                        fmt_rate(s.per_sec),
                        s.secs,
                        fmt_x(ratio),
                        s.cpu_secs
                    ));
                }
            }
        }
        Scenario::Large(bytes) => {
            md.push_str("| contestant | time | MiB/s | peak RSS | peak RSS growth | growth ÷ message size |\n|---|---:|---:|---:|---:|---:|\n");
            md.push_str("| *(stdio rows: the larger peak of the two processes, growth over the client's start)* | | | | | |\n");
            for (c, s) in rows {
                if let Some(st) = status(s) {
                    md.push_str(&format!("| {} | {st} |\n", c.label));
                    continue;
                }
                let mib = bytes as f64 / (1024.0 * 1024.0);
                md.push_str(&format!(
                    "| {} | {:.1} ms | {:.0} | {:.0} MiB | {:.0} MiB | {:.2}× |\n",
                    c.label,
                    s.secs * 1e3,
                    mib / s.secs,
                    s.peak_kb / 1024.0,
                    s.peak_growth_kb / 1024.0,
                    s.peak_growth_kb * 1024.0 / bytes as f64
                ));
            }
        }
        Scenario::Scale(n) => {
            md.push_str("| contestant | total time | memory per pending request | peak RSS | this time ÷ acp-core time |\n|---|---:|---:|---:|---:|\n");
            for (c, s) in rows {
                if let Some(st) = status(s) {
                    md.push_str(&format!("| {} | {st} |\n", c.label));
                    continue;
                }
                let r = reference(rows, false);
                md.push_str(&format!(
                    "| {} | {:.1} ms | {:.0} B | {:.0} MiB | {} |\n",
                    c.label,
                    s.secs * 1e3,
                    s.point_growth_kb * 1024.0 / n as f64,
                    s.peak_kb / 1024.0,
                    fmt_x(r.map_or(f64::NAN, |(_, rs)| s.secs / rs.secs))
                ));
            }
        }
    }
}

fn find(rows: &[(Contestant, Summary)], key: &str) -> Option<Summary> {
    rows.iter()
        .find(|(c, s)| c.key == key && s.ok())
        .map(|(_, s)| s.clone())
}

fn goal_line(
    md: &mut String,
    goal: String,
    val: Option<f64>,
    target: f64,
    higher: bool,
    unit: &str,
) {
    let (m, met) = match val {
        Some(v) if v.is_finite() => (
            format!("{v:.2}{unit}"),
            if (higher && v >= target) || (!higher && v <= target) {
                "yes"
            } else {
                "**no**"
            },
        ),
        _ => ("-".to_string(), "not measurable"),
    };
    md.push_str(&format!("| {goal} | {m} | {met} |\n"));
}

fn goals(results: &[(Group, Vec<(Contestant, Summary)>)], md: &mut String) {
    md.push_str("\n### Goals\n\n| goal | measured | met? |\n|---|---:|---|\n");
    for (g, rows) in results {
        let thr = |a: &str, b: &str| -> Option<f64> {
            Some(find(rows, a)?.per_sec / find(rows, b)?.per_sec)
        };
        match g.scenario {
            Scenario::Notify(_) | Scenario::RtConc(..) | Scenario::RtSeq(_) => {
                for (a, b, t) in [
                    ("core", "sdk", 1.5),
                    ("core", "ts", 10.0),
                    ("native", "sdk", 1.5),
                    ("native", "ts", 10.0),
                    ("wasm", "ts", 10.0),
                    ("native-stdio", "sdk-stdio", 1.5),
                    ("native-stdio-ct", "sdk-stdio-ct", 1.5),
                    ("core-stdio", "sdk-stdio", 1.5),
                    ("core-stdio", "ts-stdio", 10.0),
                    ("native-stdio", "ts-stdio", 10.0),
                ] {
                    let present = |k: &str| rows.iter().any(|(c, _)| c.key == k);
                    if !present(a) || !present(b) {
                        continue;
                    }
                    goal_line(
                        md,
                        format!("{}: {a} ÷ {b} throughput ≥ {t}×", g.name),
                        thr(a, b),
                        t,
                        true,
                        "×",
                    );
                }
                if matches!(g.scenario, Scenario::RtSeq(_)) {
                    // The physical ceiling of any stdio implementation against the TS SDK.
                    if let (Some(p), Some(t)) = (find(rows, "pipe"), find(rows, "ts-stdio")) {
                        md.push_str(&format!(
                            "| {}: (ceiling) bare pipe ÷ ts-stdio throughput | {:.2}× | info |\n",
                            g.name,
                            p.per_sec / t.per_sec
                        ));
                    }
                    for a in ["native-stdio", "core-stdio"] {
                        if let (Some(x), Some(p)) = (find(rows, a), find(rows, "pipe")) {
                            goal_line(
                                md,
                                format!("{}: {a} p50 latency ÷ bare pipe p50 ≤ 1.5×", g.name),
                                Some(x.p50_us / p.p50_us),
                                1.5,
                                false,
                                "×",
                            );
                        }
                    }
                    // What the async runtime alone costs: the same ping-pong on tokio.
                    if let (Some(t), Some(p)) = (find(rows, "pipe-tokio"), find(rows, "pipe")) {
                        md.push_str(&format!(
                            "| {}: (floor) tokio pipe p50 ÷ bare pipe p50 | {:.2}× | info |\n",
                            g.name,
                            t.p50_us / p.p50_us
                        ));
                    }
                    if let (Some(x), Some(p)) = (find(rows, "native-stdio-ct"), find(rows, "pipe"))
                    {
                        goal_line(
                            md,
                            format!(
                                "{}: native-stdio-ct p50 latency ÷ bare pipe p50 ≤ 1.5×",
                                g.name
                            ),
                            Some(x.p50_us / p.p50_us),
                            1.5,
                            false,
                            "×",
                        );
                    }
                    if let (Some(t), Some(p)) = (find(rows, "pipe-tokio-ct"), find(rows, "pipe")) {
                        md.push_str(&format!(
                            "| {}: (floor) tokio current_thread pipe p50 ÷ bare pipe p50 | {:.2}× | info |\n",
                            g.name,
                            t.p50_us / p.p50_us
                        ));
                    }
                    if let (Some(x), Some(t)) =
                        (find(rows, "native-stdio"), find(rows, "pipe-tokio"))
                    {
                        md.push_str(&format!(
                            "| {}: native-stdio p50 ÷ tokio pipe p50 (the host's own cost) | {:.2}× | info |\n",
                            g.name,
                            x.p50_us / t.p50_us
                        ));
                    }
                }
            }
            Scenario::Large(bytes) => {
                for a in ["core", "native", "wasm", "native-stdio"] {
                    if rows.iter().any(|(c, _)| c.key == a) {
                        goal_line(
                            md,
                            format!("{}: {a} peak RSS growth ≤ 3× message size", g.name),
                            find(rows, a).map(|s| s.peak_growth_kb * 1024.0 / bytes as f64),
                            3.0,
                            false,
                            "×",
                        );
                    }
                }
            }
            Scenario::Scale(_) => {}
        }
    }
    // Linear time: time per MiB at the two largest sizes (1 MiB fits in the caches, so its
    // per-byte time is lower and says nothing about growth); all sizes are listed.
    let large: Vec<&(Group, Vec<(Contestant, Summary)>)> = results
        .iter()
        .filter(|(g, _)| matches!(g.scenario, Scenario::Large(_)))
        .collect();
    if large.len() >= 2 {
        for a in ["core", "native", "wasm", "native-stdio"] {
            let per_mib: Vec<(usize, f64)> = large
                .iter()
                .filter_map(|(g, r)| match g.scenario {
                    Scenario::Large(b) => {
                        find(r, a).map(|s| (b >> 20, s.secs * 1e3 / (b as f64 / 1048576.0)))
                    }
                    _ => None,
                })
                .collect();
            if per_mib.len() != large.len() {
                continue;
            }
            let list: Vec<String> = per_mib
                .iter()
                .map(|(m, t)| format!("{t:.1} ms/MiB at {m} MiB"))
                .collect();
            let n = per_mib.len();
            goal_line(
                md,
                format!(
                    "large: {a} linear time: ms per MiB at {} MiB ÷ at {} MiB ≤ 1.5× ({})",
                    per_mib[n - 1].0,
                    per_mib[n - 2].0,
                    list.join(", ")
                ),
                Some(per_mib[n - 1].1 / per_mib[n - 2].1),
                1.5,
                false,
                "×",
            );
        }
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().next().map(|l| {
                let kb: f64 = l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0);
                format!("{:.0} GiB", kb / 1024.0 / 1024.0)
            })
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "no node".into());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cpu}, {cores} cores, {mem} RAM, Linux {}, node {node}, load average at start {}",
        kernel.trim(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

pub fn main(args: &[String], exe: &Path) -> i32 {
    let mut short = false;
    let mut rounds: Option<usize> = None;
    let mut node_dir = PathBuf::from("benches/node");
    let mut sdk_peer: Option<PathBuf> = None;
    let mut md_path: Option<PathBuf> = None;
    let mut only: Option<Vec<String>> = None;
    let mut unavailable: Vec<(&'static str, String)> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--short" => short = true,
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()),
            "--node-dir" => node_dir = it.next().map(PathBuf::from).unwrap_or(node_dir),
            "--sdk-peer" => sdk_peer = it.next().map(PathBuf::from),
            "--md" => md_path = it.next().map(PathBuf::from),
            "--only" => only = it.next().map(|v| v.split(',').map(String::from).collect()),
            "--unavailable" => {
                // KEY=why (set by scripts/bench.sh when a contestant cannot be built).
                if let Some((k, w)) = it.next().and_then(|v| v.split_once('=')) {
                    if let Some(c) = CONTESTANTS.iter().find(|c| c.key == k) {
                        unavailable.push((c.key, w.to_string()));
                    }
                }
            }
            other => {
                eprintln!("acp-bench drive: unknown argument {other}");
                return 2;
            }
        }
    }
    if !cfg!(feature = "native") && !unavailable.iter().any(|(k, _)| *k == "native") {
        let why = "acp-native's API has not landed (no acp-native/API.md)".to_string();
        unavailable.push(("native", why.clone()));
        unavailable.push(("native-stdio", why));
    }
    if sdk_peer.is_none() && !unavailable.iter().any(|(k, _)| *k == "sdk") {
        let why = "no --sdk-peer (rust-sdk-peer, built from tests/rust-sdk)".to_string();
        unavailable.push(("sdk", why.clone()));
        unavailable.push(("sdk-stdio", why));
    }
    let rounds = rounds.unwrap_or(if short { 1 } else { 5 });
    let env = Env {
        exe: exe.to_path_buf(),
        sdk_peer,
        node_dir,
        timeout: Duration::from_secs(if short { 120 } else { 600 }),
        unavailable,
    };
    let mib = 1024 * 1024;
    let all_mem = vec!["core", "native", "wasm", "sdk", "ts"];
    let all_stdio = vec!["native-stdio", "core-stdio", "sdk-stdio", "ts-stdio"];
    let mut rt_keys = all_mem.clone();
    rt_keys.extend(all_stdio.iter().copied());
    rt_keys.push("pipe");
    rt_keys.push("pipe-tokio");
    // Over stdio the two ends are separate processes; the measuring client reaps its agent,
    // so wait4 gives the larger of the two peaks.
    let mut large_keys = all_mem.clone();
    large_keys.extend(["native-stdio", "sdk-stdio", "ts-stdio"]);
    let mut notify_keys = all_mem.clone();
    notify_keys.extend(all_stdio.iter().copied());
    let (n_notify, n_seq, n_conc, n_scale) = if short {
        (300, 100, 500, 1000)
    } else {
        (100_000, 20_000, 50_000, 10_000)
    };
    let sizes: Vec<usize> = if short {
        vec![mib]
    } else {
        vec![mib, 16 * mib, 64 * mib]
    };
    let mut groups = vec![
        Group {
            name: "notify".into(),
            title: format!("1. Notification throughput ({n_notify} `session/update` agent_message_chunk, decoded to the typed update)"),
            scenario: Scenario::Notify(n_notify),
            keys: notify_keys,
            rounds,
        },
        Group {
            name: "rt-seq".into(),
            title: format!("2a. Request round trips, sequential ({n_seq} `session/new`)"),
            scenario: Scenario::RtSeq(n_seq),
            keys: rt_keys
                .iter()
                .copied()
                .chain(["native-stdio-ct", "sdk-stdio-ct", "pipe-tokio-ct"])
                .collect(),
            rounds,
        },
        Group {
            name: "rt-conc".into(),
            title: format!("2b. Request round trips, 100 concurrent ({n_conc} `session/new`)"),
            scenario: Scenario::RtConc(n_conc, 100),
            keys: rt_keys,
            rounds,
        },
    ];
    for b in sizes {
        groups.push(Group {
            name: format!("large-{}MiB", b / mib),
            title: format!("3. Large message: one {} MiB `fs/write_text_file` request (agent → client, answered)", b / mib),
            scenario: Scenario::Large(b),
            keys: large_keys.clone(),
            rounds: if short { 1 } else { rounds.min(3) },
        });
    }
    groups.push(Group {
        name: "scale".into(),
        title: format!("4. Scale: {n_scale} `session/new` requests in flight at once"),
        scenario: Scenario::Scale(n_scale),
        keys: all_mem.clone(),
        rounds,
    });
    if let Some(only) = &only {
        groups.retain(|g| only.iter().any(|o| g.name.starts_with(o.as_str())));
    }
    let started = std::time::Instant::now();
    let mut md = String::new();
    md.push_str(&format!("Machine: {}\n", machine()));
    let mut results = Vec::new();
    for g in groups {
        eprintln!("acp-bench: {} ({} rounds)", g.title, g.rounds);
        let rows = run_group(&env, &g);
        results.push((g, rows));
    }
    for (g, rows) in &results {
        table(g, rows, &mut md);
    }
    goals(&results, &mut md);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    md.push_str(&format!(
        "\n({} mode, {} rounds, {:.0} s; load average at the end {})\n",
        if short { "short" } else { "full" },
        rounds,
        started.elapsed().as_secs_f64(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    ));
    println!("{md}");
    if let Some(p) = md_path {
        let _ = std::fs::write(p, &md);
    }
    // Exit status: non-zero when a measurable contestant never completed a run, except the
    // documented size caps (a failure of the official TS SDK on 64 MiB is a result).
    let mut bad = 0;
    for (g, rows) in &results {
        for (c, s) in rows {
            if s.not_measurable.is_none() && !s.ok() {
                let expected =
                    matches!(g.scenario, Scenario::Large(b) if b > 32 * mib) && !c.acp_rs;
                if !expected {
                    eprintln!("acp-bench: {} failed in {}: {:?}", c.key, g.name, s.error);
                    bad += 1;
                }
            }
        }
    }
    i32::from(bad > 0)
}
