//! Memory bounds of `acp chat` against hostile agents (docs/security.md, "Memory budget"):
//! the peak resident memory of the `acp` process (`VmHWM` in `/proc/<pid>/status`) stays under
//! [`BUDGET_MIB`] whatever the agent sends: many concurrent requests whose answers are large
//! once JSON-escaped (a control character is 6 bytes: `\u0001`), a single 60 MB line, an agent
//! that stops reading its stdin.
//!
//! The agent is a python3 script (one scenario per run). It writes `done` in its directory once
//! it has what the scenario needs, then waits for `go` from the test before it ends the turn,
//! so the peak is read while `acp` is still running. A watchdog samples the process meanwhile
//! and kills it above [`KILL_AT_MIB`], so that a regression fails the test without taking the
//! machine down.
//!
//! The suite runs reduced sizes that still cost old code several GiB; the full sizes of the
//! security review (64 x 16 MiB terminal output, 64 x 10 MiB file reads) are `#[ignore]`d:
//! `cargo test -p acp-cli --test memory_bounds -- --ignored --nocapture` (each prints its
//! measured peak).

mod cli_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_support::{Run, Running, TempDir, EVENTUALLY};

/// The budget: peak resident memory of `acp chat` under every scenario here.
const BUDGET_MIB: u64 = 512;
/// The watchdog's limit: far enough above the budget to measure a regression, low enough
/// for a shared 2-core machine.
const KILL_AT_MIB: u64 = 1536;
/// Bound of the full-size runs (64 answers of 60-96 MB each through a pipe, debug build).
const FULL_SIZE: Duration = Duration::from_secs(900);

/// The hostile agent: `python3 agent.py SCENARIO DIR SIZE`.
const AGENT: &str = r#"
import json, os, re, sys, time
scenario, d, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()

def send_all(objs):
    sys.stdout.write("".join(json.dumps(o) + "\n" for o in objs)); sys.stdout.flush()

def send_raw(text):
    sys.stdout.write(text); sys.stdout.write("\n"); sys.stdout.flush()

HEAD = re.compile(r'"id":\s*"?([^,"}]*)"?')

def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return line

def expect(method=None, id=None):
    while True:
        line = recv()
        head = line[:300]
        if method is not None and '"method":"%s"' % method in head.replace(" ", ""):
            return json.loads(line)
        if id is not None and '"method"' not in head:
            m = HEAD.search(head)
            if m and m.group(1) == str(id):
                return line

def mark(name, text=""):
    with open(os.path.join(d, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))

def wait_for(name):
    deadline = time.time() + 300
    while not os.path.exists(os.path.join(d, name)):
        if time.time() > deadline:
            sys.exit(3)
        time.sleep(0.02)

def update(text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1",
          "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})

def answers(prefix, n):
    """Reads n answers to requests prefix0..prefix{n-1}: (results, errors, a sample result line)."""
    results, errors, sample, seen = 0, [], None, set()
    while len(seen) < n:
        line = recv()
        head = line[:300]
        if '"method"' in head:
            continue
        m = HEAD.search(head)
        if not m or not m.group(1).startswith(prefix):
            continue
        seen.add(m.group(1))
        if '"error"' in head:
            errors.append(json.loads(line)["error"]["message"])
        else:
            results += 1
            if sample is None:
                sample = line
    return results, errors, sample

m = expect("initialize")
send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
m = expect("session/new")
cwd = m["params"]["cwd"]
send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
pid = expect("session/prompt")["id"]

if scenario.startswith("terminal-output"):
    script = "head -c %d /dev/zero | tr '\\0' '\\1'" % size
    send({"jsonrpc": "2.0", "id": "c", "method": "terminal/create",
          "params": {"sessionId": "s-1", "command": "sh", "args": ["-c", script]}})
    tid = json.loads(expect(id="c"))["result"]["terminalId"]
    send({"jsonrpc": "2.0", "id": "w", "method": "terminal/wait_for_exit",
          "params": {"sessionId": "s-1", "terminalId": tid}})
    expect(id="w")
    # All 64 at once (one write: acp reads them in one go).
    send_all([{"jsonrpc": "2.0", "id": "o%d" % i, "method": "terminal/output",
               "params": {"sessionId": "s-1", "terminalId": tid}} for i in range(64)])
    if scenario == "terminal-output-no-read":
        # Never reads again: acp must not wait forever for us (its --timeout ends the turn).
        time.sleep(600)
        sys.exit(0)
    results, errors, sample = answers("o", 64)
    out = json.loads(sample)["result"]["output"]
    ok = len(out) == size and out == "\x01" * size
    mark("done", json.dumps({"results": results, "errors": errors[:3], "sample_ok": ok}))
elif scenario == "fs-read":
    path = os.path.join(cwd, "controls.txt")
    send_all([{"jsonrpc": "2.0", "id": "r%d" % i, "method": "fs/read_text_file",
               "params": {"sessionId": "s-1", "path": path}} for i in range(64)])
    results, errors, sample = answers("r", 64)
    content = json.loads(sample)["result"]["content"]
    ok = len(content) == size and content == "\x01" * size
    mark("done", json.dumps({"results": results, "errors": errors[:3], "sample_ok": ok}))
elif scenario == "big-line":
    # `size` zeros in a member nobody reads: beside the update, inside it, inside its content.
    zeros = "0," * (size - 1) + "0"
    where = os.environ.get("JUNK_IN", "params")
    if where == "raw-input":
        # A tool call whose raw input (shown nowhere) is the junk.
        send_raw('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":'
                 '{"sessionUpdate":"tool_call","toolCallId":"c1","title":"x","rawInput":{"junk":[%s]}}}}'
                 % zeros)
    content = '{"type":"text","text":"x"%s}' % (',"junk":[%s]' % zeros if where == "content" else "")
    upd = '{"sessionUpdate":"agent_message_chunk","content":%s%s}' % (
        content, ',"junk":[%s]' % zeros if where == "update" else "")
    send_raw('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":%s%s}}'
             % (upd, ',"junk":[%s]' % zeros if where == "params" else ""))
    del zeros
    update(" and after")
    # A request answered by acp: once it is answered, the big line was read and handled.
    send({"jsonrpc": "2.0", "id": "t", "method": "terminal/output",
          "params": {"sessionId": "s-1", "terminalId": "none"}})
    expect(id="t")
    mark("done", "{}")

wait_for("go")
send({"jsonrpc": "2.0", "id": pid, "result": {"stopReason": "end_turn"}})
for _ in sys.stdin:
    pass
"#;

/// Peak memory of a process, sampled until it exits; kills it above [`KILL_AT_MIB`].
struct Watch {
    pid: u32,
    /// Highest VmHWM seen (kB).
    hwm_kib: Arc<AtomicU64>,
    killed: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

/// `VmHWM` and `VmRSS` of `pid` in kB (None once it has exited).
fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

impl Watch {
    fn start(pid: u32) -> Watch {
        let w = Watch {
            pid,
            hwm_kib: Arc::default(),
            killed: Arc::default(),
            stop: Arc::default(),
        };
        let (hwm, killed, stop) = (w.hwm_kib.clone(), w.killed.clone(), w.stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let Some((peak, rss)) = memory_kib(pid) else {
                    return;
                };
                hwm.fetch_max(peak, Ordering::SeqCst);
                if rss > KILL_AT_MIB << 10 {
                    killed.store(true, Ordering::SeqCst);
                    // SAFETY: signalling the acp process this test started.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        w
    }

    /// The peak so far (MiB), read now (the process must still be running for an exact value).
    fn peak_mib(&self) -> u64 {
        if let Some((peak, _)) = memory_kib(self.pid) {
            self.hwm_kib.fetch_max(peak, Ordering::SeqCst);
        }
        self.hwm_kib.load(Ordering::SeqCst) >> 10
    }

    fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One run of `acp chat --yes` against the agent in `scenario`.
struct Scenario {
    dir: TempDir,
    work: PathBuf,
    signals: PathBuf,
}

impl Scenario {
    fn new(tag: &str) -> Scenario {
        let dir = TempDir::new(tag);
        let work = dir.join("work");
        let signals = dir.join("signals");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&signals).unwrap();
        std::fs::write(dir.join("agent.py"), AGENT).unwrap();
        Scenario { dir, work, signals }
    }

    fn start(&self, scenario: &str, size: usize, opts: &[&str], env: &[(&str, &str)]) -> Running {
        let work = self.work.to_string_lossy().into_owned();
        let script = self.dir.join("agent.py").to_string_lossy().into_owned();
        let signals = self.signals.to_string_lossy().into_owned();
        let size = size.to_string();
        // The agent's extra environment goes through --env (agents get an allowlist only).
        let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut args = vec!["chat", "--yes", "--prompt", "go", "--cwd", &work];
        for e in &env {
            args.extend(["--env", e.as_str()]);
        }
        args.extend_from_slice(opts);
        args.extend(["--", "python3", &script, scenario, &signals, &size]);
        Running::start(&args, self.dir.path(), None)
    }

    /// Waits (bounded) for the agent's `done`, or for acp to die; returns what `done` says.
    fn wait_done(&self, acp: &mut Running, watch: &Watch, within: Duration) -> Option<String> {
        let done = self.signals.join("done");
        let deadline = Instant::now() + within;
        loop {
            if let Ok(text) = std::fs::read_to_string(&done) {
                return Some(text);
            }
            if watch.killed() || acp.child.try_wait().unwrap().is_some() {
                return None;
            }
            if Instant::now() > deadline {
                let _ = acp.child.kill();
                panic!(
                    "the agent never finished its scenario\n--- stderr ---\n{}",
                    acp.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn go(&self) {
        std::fs::write(self.signals.join("go"), "").unwrap();
    }
}

/// Runs `scenario`, returns (peak MiB, what the agent reported, the finished run).
fn measure(
    tag: &str,
    scenario: &str,
    size: usize,
    opts: &[&str],
    env: &[(&str, &str)],
    prepare: impl FnOnce(&Path),
) -> (u64, Option<String>, Run) {
    measure_within(tag, scenario, size, opts, env, prepare, EVENTUALLY)
}

/// [`measure`] with a longer bound (the full sizes move gigabytes through a pipe).
fn measure_within(
    tag: &str,
    scenario: &str,
    size: usize,
    opts: &[&str],
    env: &[(&str, &str)],
    prepare: impl FnOnce(&Path),
    within: Duration,
) -> (u64, Option<String>, Run) {
    let s = Scenario::new(tag);
    prepare(&s.work);
    let mut acp = s.start(scenario, size, opts, env);
    let watch = Watch::start(acp.child.id());
    let done = s.wait_done(&mut acp, &watch, within);
    s.go();
    // Sampled until the exit (and exact up to the last sample: VmHWM is a high-water mark).
    let mut peak = watch.peak_mib();
    let deadline = Instant::now() + within;
    while acp.child.try_wait().unwrap().is_none() && !watch.killed() && Instant::now() < deadline {
        peak = watch.peak_mib();
        std::thread::sleep(Duration::from_millis(10));
    }
    let peak = peak.max(watch.peak_mib());
    let killed = watch.killed();
    let run = acp.finish(within + EVENTUALLY);
    println!("{tag}: peak {peak} MiB");
    assert!(
        !killed,
        "acp went over {KILL_AT_MIB} MiB and was killed (budget {BUDGET_MIB} MiB)\n{}",
        run.dump()
    );
    assert!(
        peak < BUDGET_MIB,
        "{tag}: peak RSS {peak} MiB, budget {BUDGET_MIB} MiB\n{}",
        run.dump()
    );
    (peak, done, run)
}

/// The agent's report must say every answer came, all results, the sample intact.
fn assert_all_answered(report: Option<String>, run: &Run) {
    let report = report.unwrap_or_else(|| panic!("no report from the agent\n{}", run.dump()));
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(v["results"], 64, "{report}\n{}", run.dump());
    assert_eq!(v["sample_ok"], true, "{report}");
    assert_eq!(run.code(), 0, "{}", run.dump());
}

/// 64 concurrent `terminal/output` of 2 MiB of control characters (12 MiB each as JSON): all
/// answered, in bounded memory (the answers wait for the budget instead of all being built at
/// once).
#[test]
fn terminal_output_of_control_characters_to_64_concurrent_requests() {
    let (_, report, run) = measure("mem-terminal", "terminal-output", 2 << 20, &[], &[], |_| {});
    assert_all_answered(report, &run);
}

/// A 60 MB `session/update` line (30 M zeros in a member nobody reads), with `--log-rpc`: the
/// tap and the renderer read only what they need (2.3 GB before); the text around it is
/// shown and logged.
#[test]
fn a_60_mb_update_line_is_shown_and_logged_in_bounded_memory() {
    let log = std::env::temp_dir().join(format!("acp-mem-log-{}.ndjson", std::process::id()));
    let log_arg = log.to_string_lossy().into_owned();
    let (_, report, run) = measure(
        "mem-big-line",
        "big-line",
        30_000_000,
        &["--log-rpc", &log_arg],
        &[],
        |_| {},
    );
    assert!(report.is_some(), "{}", run.dump());
    assert_eq!(run.code(), 0, "{}", run.dump());
    assert!(run.stdout.contains("x and after"), "{}", run.dump());
    assert!(!run.stderr.contains("not JSON"), "{}", run.dump());
    let logged = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&log);
    assert!(
        logged > 60_000_000,
        "the big line was not logged ({logged} bytes)"
    );
}

/// A 20 MB line (10 M zeros) with the junk in `where`, in the human view or `--json`.
fn big_line(tag: &str, junk_in: &str, opts: &[&str]) {
    let (_, report, run) = measure(
        tag,
        "big-line",
        10_000_000,
        opts,
        &[("JUNK_IN", junk_in)],
        |_| {},
    );
    assert!(report.is_some(), "{}", run.dump());
    assert_eq!(run.code(), 0, "{}", run.dump());
    if opts.is_empty() {
        assert!(run.stdout.contains("x and after"), "{tag}: {}", run.dump());
    } else {
        assert!(
            run.stdout.len() > 20_000_000,
            "{tag}: the update was not written"
        );
    }
}

/// Junk inside the update (the schema's tagged union buffered it whole before decoding).
#[test]
fn junk_inside_the_update_is_skipped_in_bounded_memory() {
    big_line("mem-big-update", "update", &[]);
}

/// Junk inside the update's content block (another tagged union).
#[test]
fn junk_inside_the_content_is_skipped_in_bounded_memory() {
    big_line("mem-big-content", "content", &[]);
}

/// Junk as a tool call's raw input (which nothing shows).
#[test]
fn junk_in_a_tool_calls_raw_input_is_skipped_in_bounded_memory() {
    big_line("mem-big-raw-input", "raw-input", &[]);
}

/// `--json`: the params are written as received, not rebuilt.
#[test]
fn a_big_update_is_written_as_received_with_json() {
    big_line("mem-big-json", "params", &["--json"]);
}

/// 64 concurrent `terminal/output` of 2 MiB of control characters, and the agent never reads
/// its stdin again: memory stays bounded (all 64 answers were built at once before), the
/// waiting answers fail once the writer has made no progress for 10 s (`answer_stall`), and
/// `--timeout` then ends the turn (exit 7): neither a hang nor memory growth.
#[test]
fn an_agent_that_stops_reading_its_answers_gets_bounded_memory_and_a_timeout() {
    let s = Scenario::new("mem-no-read");
    let mut acp = s.start("terminal-output-no-read", 2 << 20, &["--timeout", "3"], &[]);
    let watch = Watch::start(acp.child.id());
    // It ends by itself: the stall fails the waiting answers, then the turn times out.
    let deadline = Instant::now() + EVENTUALLY;
    let mut peak = 0;
    while acp.child.try_wait().unwrap().is_none() && !watch.killed() {
        peak = watch.peak_mib();
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = watch.killed();
    let run = acp.finish(EVENTUALLY);
    println!("mem-no-read: peak {peak} MiB");
    assert!(!killed, "acp went over {KILL_AT_MIB} MiB\n{}", run.dump());
    assert!(peak < BUDGET_MIB, "peak RSS {peak} MiB\n{}", run.dump());
    assert_eq!(run.code(), 7, "{}", run.dump());
}

/// 64 concurrent `fs/read_text_file` of a file of 2 MiB of control characters (12 MiB each as
/// JSON): `FsService::read_text_file` reserves its answer in the connection's answer budget.
#[test]
fn file_reads_of_control_characters_to_64_concurrent_requests() {
    let size = 2 << 20;
    let (_, report, run) = measure("mem-fs", "fs-read", size, &[], &[], |work| {
        std::fs::write(work.join("controls.txt"), vec![1u8; size]).unwrap();
    });
    assert_all_answered(report, &run);
}

/// Full size: 64 x 16 MiB of terminal output (96 MiB each as JSON).
#[test]
#[ignore = "slow: full size of the security review; run with --ignored"]
fn full_size_terminal_output() {
    let (_, report, run) = measure_within(
        "mem-terminal-16m",
        "terminal-output",
        16 << 20,
        &[],
        &[],
        |_| {},
        FULL_SIZE,
    );
    assert_all_answered(report, &run);
}

/// Full size: 64 x a 10 MiB file of control characters (60 MiB each as JSON).
#[test]
#[ignore = "slow: full size of the security review; run with --ignored"]
fn full_size_file_reads() {
    let size = 10 << 20;
    let write = |work: &Path| std::fs::write(work.join("controls.txt"), vec![1u8; size]).unwrap();
    let (_, report, run) =
        measure_within("mem-fs-10m", "fs-read", size, &[], &[], write, FULL_SIZE);
    assert_all_answered(report, &run);
}
