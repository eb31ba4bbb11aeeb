//! Everything an agent started ends with it, wherever it moved (docs/security.md, "Processes
//! outside the group"; acp-native `process::orphans`).
//!
//! The agent is a python3 script (`DESCENDANT_AGENT`) that, on a prompt, starts what real
//! agents start outside their own process group: a command in a session of its own with a
//! background child (Claude Code runs its Bash tool so), a command in a process group of its
//! own, and a double-forked daemon that called `setsid` (orphaned at once, mid-session). It
//! writes their pids and start times to a file, then, per scenario, keeps the turn going
//! (SIGTERM to `acp`), crashes (`acp chat` restarts it), or ends the turn (a normal exit).
//! Each test then checks that every one of them is gone. Waiting is bounded polling of a
//! file or of `/proc`, as a failure limit only; nothing sleeps to synchronise. Linux only:
//! elsewhere there is no subreaper (the process group is the guarantee).
#![cfg(target_os = "linux")]

mod cli_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use cli_support::{py_agent, Running, TempDir, EVENTUALLY};

/// `python3 agent.py SCENARIO LOG`: answers `initialize` and `session/new` (session `s-1`),
/// then on `session/prompt` starts its descendants and does as the scenario says.
const DESCENDANT_AGENT: &str = r#"
import subprocess

def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]

def daemon(then_exit):
    """Double fork with setsid in between: the grandchild is orphaned as soon as its parent
    exits. Returns its pid once it is orphaned."""
    r, w = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            while os.getppid() == first:
                time.sleep(0.01)
            os.write(w, b"%d\n" % os.getpid())
            if then_exit:
                os._exit(0)
            os.execvp("sleep", ["sleep", "300"])
        os._exit(0)
    os.close(w)
    os.waitpid(first, 0)
    text = b""
    while not text.endswith(b"\n"):
        text += os.read(r, 64)
    os.close(r)
    return int(text)

def start_descendants(path):
    quiet = dict(stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = {}
    # A command in a session of its own, with a background child of its own.
    sess = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!; exec sleep 300"],
                            start_new_session=True, stdout=subprocess.PIPE, **quiet)
    pids["session"] = sess.pid
    pids["session-background"] = int(sess.stdout.readline())
    sess.stdout.close()
    # A command in a process group of its own.
    pids["group"] = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.setpgid(0, 0),
                                     stdout=subprocess.DEVNULL, **quiet).pid
    # A daemon: orphaned while the agent runs.
    pids["daemon"] = daemon(False)
    with open(path + ".tmp", "w") as f:
        for name, p in pids.items():
            f.write("%s %d %s\n" % (name, p, start_time(p)))
    os.rename(path + ".tmp", path)

first_run = not os.path.exists("first.pids")
if scenario == "crash" and not first_run:
    with open("second.pid", "w") as f:
        f.write("%d\n" % os.getpid())

while True:
    m = recv()
    if m is None:
        sys.exit(0)
    if m.get("method") == "initialize":
        # (Answered each time: after a restart acp may ask again.)
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1,
              "agentCapabilities": {}}})
    elif m.get("method") == "session/new":
        break
cwd = m["params"]["cwd"]
send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-1"}})
pid = expect("session/prompt")["id"]

if scenario == "sigterm":
    start_descendants("first.pids")
    # The turn goes on until acp stops the agent.
    while True:
        update("working\n")
        time.sleep(0.2)
elif scenario == "crash" and first_run:
    start_descendants("first.pids")
    update("crashing\n")
    os._exit(3)
elif scenario == "crash":
    update("second instance\n")
    end(pid)
elif scenario == "normal":
    start_descendants("first.pids")
    # An orphan that exits by itself mid-session is reaped (no zombie is left).
    short = daemon(True)
    deadline = time.time() + 60
    state = "running"
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % short) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "reaped"
            break
        time.sleep(0.02)
    update("short-lived orphan: %s\n" % state)
    # A terminal's exit status still reaches the agent (not taken by acp's reaper).
    r = call(10, "terminal/create", {"sessionId": "s-1", "command": "sh",
             "args": ["-c", "exit 7"], "cwd": cwd})
    tid = r["result"]["terminalId"]
    r = call(11, "terminal/wait_for_exit", {"sessionId": "s-1", "terminalId": tid})
    update("terminal exit: %s\n" % r["result"].get("exitCode"))
    call(12, "terminal/release", {"sessionId": "s-1", "terminalId": tid})
    end(pid)
# Until acp closes stdin.
while recv() is not None:
    pass
"#;

/// The agent's descendants: name → (pid, start time).
type Descendants = BTreeMap<String, (i32, String)>;

fn agent_args(dir: &TempDir, scenario: &str, extra: &[&str]) -> Vec<String> {
    let script = dir.join("agent.py");
    std::fs::write(&script, py_agent(DESCENDANT_AGENT)).unwrap();
    let mut args: Vec<String> = ["chat"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    args.extend([
        "--".to_string(),
        "python3".to_string(),
        script.display().to_string(),
        scenario.to_string(),
        dir.join("agent.log").display().to_string(),
    ]);
    args
}

/// Waits (bounded) for the agent's list of descendants.
fn read_descendants(path: &Path, r: &mut Running) -> Descendants {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text
                .lines()
                .map(|line| {
                    let f: Vec<&str> = line.split(' ').collect();
                    (f[0].to_string(), (f[1].parse().unwrap(), f[2].to_string()))
                })
                .collect();
        }
        if Instant::now() > deadline || r.child.try_wait().unwrap().is_some() {
            let _ = r.child.kill();
            panic!(
                "the agent never listed its descendants\n--- stderr ---\n{}",
                r.stderr()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `Some(state)` while the process `pid` that started at `start` exists (a zombie too).
fn state(pid: i32, start: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    (fields.get(19) == Some(&start)).then(|| fields[0].chars().next().unwrap_or('?'))
}

/// The descendants still there; with `zombies_count`, a zombie is still there too.
fn left(d: &Descendants, zombies_count: bool) -> Vec<String> {
    d.iter()
        .filter_map(|(name, (pid, start))| match state(*pid, start) {
            None => None,
            Some('Z') if !zombies_count => None,
            Some(s) => Some(format!("{name} (pid {pid}, state {s})")),
        })
        .collect()
}

/// Kills what a failed test leaves behind (this test's own processes, by pid and start time).
fn kill_left(d: &Descendants) {
    for (pid, start) in d.values() {
        if state(*pid, start).is_some() {
            // SAFETY: kill(2); the process is the one the agent listed (same start time).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
}

/// After `acp` exited: every descendant gone, polled within a bound (a zombie left to init
/// counts as gone: `acp` is not there to reap it).
fn assert_all_gone_after_exit(d: &Descendants, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = left(d, false);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            kill_left(d);
            panic!("{what}: the agent's descendants outlived acp: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_alive(d: &Descendants, r: &mut Running) {
    let left = left(d, true);
    if left.len() != d.len() {
        let _ = r.child.kill();
        panic!("some descendants were gone before anything stopped: {left:?} of {d:?}");
    }
}

/// SIGTERM to `acp chat` while the turn runs: acp exits 143 and nothing the agent started
/// survives, in whatever session or group it is (before: all four outlived acp).
#[test]
fn sigterm_ends_every_descendant_of_the_agent() {
    let dir = TempDir::new("desc-term");
    let args = agent_args(&dir, "sigterm", &["--prompt", "go", "--timeout", "120"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut r = Running::start_interactive(&args, dir.path());
    let d = read_descendants(&dir.join("first.pids"), &mut r);
    assert_alive(&d, &mut r);
    r.wait_for_stdout("working", EVENTUALLY);
    // SAFETY: kill(2) on our own child's pid, not waited for yet.
    unsafe { libc::kill(r.child.id() as i32, libc::SIGTERM) };
    r.stdin.take();
    let done = r.finish(EVENTUALLY);
    assert_eq!(done.code, Some(143), "{}", done.dump());
    assert_all_gone_after_exit(&d, "after SIGTERM");
}

/// The agent crashes mid-turn: what it started is ended (and reaped: no zombie) before
/// `acp chat` starts it again, while acp still runs; the crash's exit status is reported
/// (the orphan reaper did not take it).
#[test]
fn a_crashed_agents_descendants_end_before_it_is_restarted() {
    let dir = TempDir::new("desc-crash");
    let args = agent_args(&dir, "crash", &["--timeout", "120"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut r = Running::start_interactive(&args, dir.path());
    r.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let d = read_descendants(&dir.join("first.pids"), &mut r);
    // The second instance starts only after the first one's end was handled.
    let deadline = Instant::now() + EVENTUALLY;
    while !dir.join("second.pid").exists() {
        if Instant::now() > deadline || r.child.try_wait().unwrap().is_some() {
            let _ = r.child.kill();
            kill_left(&d);
            panic!("the agent was not restarted\n{}", r.stderr());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = left(&d, true);
    if !left.is_empty() {
        let _ = r.child.kill();
        kill_left(&d);
        panic!(
            "the crashed agent's descendants were still there when it was restarted: \
             {left:?}\n{}",
            r.stderr()
        );
    }
    r.wait_for_stderr("exited with code 3", EVENTUALLY);
    r.stdin.take();
    let done = r.finish(EVENTUALLY);
    assert!(
        done.stderr.contains("exited with code 3"),
        "{}",
        done.dump()
    );
}

/// A normal end (`--prompt`, the agent exits when its stdin closes): its descendants end with
/// it; meanwhile an orphan that exited by itself was reaped, and a terminal command's exit
/// status reached the agent.
#[test]
fn a_normal_exit_ends_every_descendant_and_orphans_are_reaped_meanwhile() {
    let dir = TempDir::new("desc-normal");
    let args = agent_args(
        &dir,
        "normal",
        &["--prompt", "go", "--yes", "--timeout", "120"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut r = Running::start_interactive(&args, dir.path());
    r.stdin.take();
    let d = read_descendants(&dir.join("first.pids"), &mut r);
    let done = r.finish(EVENTUALLY);
    assert_eq!(done.code, Some(0), "{}", done.dump());
    assert!(done.stdout.contains("terminal exit: 7"), "{}", done.dump());
    assert_all_gone_after_exit(&d, "after a normal exit");
    assert!(
        done.stdout.contains("short-lived orphan: reaped"),
        "{}",
        done.dump()
    );
}
