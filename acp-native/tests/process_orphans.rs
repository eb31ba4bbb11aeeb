//! The library side of `process::orphans`: in a process that called `adopt_orphans` (a child
//! subreaper), an [`AgentProcess`]'s descendants that left its process group (their own
//! session, their own group, a double-forked daemon) end with it: on `shutdown`, on a crash
//! (before `wait` returns), on drop; and stopping one agent never ends what another agent
//! still running may have started.
//!
//! The setting is process-wide, so these tests have a test binary of their own, share one
//! runtime (where the reaper runs) and run one at a time; every child is started through
//! acp-native, as `adopt_orphans` requires.

#![cfg(target_os = "linux")]

use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use acp_native::process::{adopt_orphans, AgentCommand, AgentProcess, Termination};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::timeout;

const EVENTUALLY: Duration = Duration::from_secs(60);

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let adopted = rt.block_on(async { adopt_orphans() }).unwrap();
    assert!(adopted, "Linux has a child subreaper");
    rt
});
static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time (each one's agents are the only ones running), on the shared runtime.
fn run<F: std::future::Future<Output = ()>>(test: F) {
    let _serial: MutexGuard<'_, ()> = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    RUNTIME.block_on(test);
}

/// `python3 -c AGENT`: starts a command in a session of its own, one in a process group of its
/// own and a double-forked daemon (orphaned at once), prints their pids on one line, then
/// exits 3 on a line `crash`, or 0 at the end of its input.
const AGENT: &str = r#"
import os, subprocess, sys, time
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sess = subprocess.Popen(["sleep", "300"], start_new_session=True, **quiet)
grp = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.setpgid(0, 0), **quiet)
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
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.close(w)
os.waitpid(first, 0)
daemon = b""
while not daemon.endswith(b"\n"):
    daemon += os.read(r, 64)
print(sess.pid, grp.pid, int(daemon), flush=True)
if sys.stdin.readline().strip() == "crash":
    os._exit(3)
"#;

/// A process by pid and start time (a pid alone may be reused).
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    start: String,
}

impl Proc {
    fn new(pid: i32) -> Proc {
        let start = Self::stat(pid).expect("a process the agent just listed").1;
        Proc { pid, start }
    }

    fn stat(pid: i32) -> Option<(char, String)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let f: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
        Some((f.first()?.chars().next()?, f.get(19)?.to_string()))
    }

    /// Still there: running, or a zombie nobody reaped.
    fn exists(&self) -> bool {
        Self::stat(self.pid).is_some_and(|(_, start)| start == self.start)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.exists() {
            // SAFETY: kill(2) on a process this test's agent started (same start time).
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

struct Agent {
    process: AgentProcess,
    descendants: Vec<Proc>,
}

async fn start() -> Agent {
    let mut process = AgentProcess::spawn(&AgentCommand::new("python3").arg("-c").arg(AGENT))
        .expect("python3 starts");
    let mut out = BufReader::new(process.take_stdout().unwrap());
    let mut line = String::new();
    timeout(EVENTUALLY, out.read_line(&mut line))
        .await
        .expect("the agent listed its descendants in time")
        .unwrap();
    let descendants: Vec<Proc> = line
        .split_whitespace()
        .map(|p| Proc::new(p.parse().unwrap()))
        .collect();
    assert_eq!(descendants.len(), 3, "{line:?}");
    Agent {
        process,
        descendants,
    }
}

fn left(procs: &[Proc]) -> Vec<&Proc> {
    procs.iter().filter(|p| p.exists()).collect()
}

#[test]
fn shutdown_ends_the_descendants_outside_the_agents_group() {
    run(async {
        let mut a = start().await;
        assert_eq!(left(&a.descendants).len(), 3);
        let out = timeout(EVENTUALLY, a.process.shutdown(Duration::from_millis(500)))
            .await
            .unwrap();
        assert_eq!(out.report.termination, Termination::Exited(0));
        // Ended and reaped by the time shutdown returns.
        assert!(
            left(&a.descendants).is_empty(),
            "{:?}",
            left(&a.descendants)
        );
    });
}

#[test]
fn a_crashed_agents_descendants_are_ended_before_wait_returns() {
    run(async {
        let mut a = start().await;
        let mut stdin = a.process.take_stdin().unwrap();
        stdin.write_all(b"crash\n").await.unwrap();
        let report = timeout(EVENTUALLY, a.process.wait()).await.unwrap();
        // Its own status, not taken by the orphan reaper.
        assert_eq!(report.termination, Termination::Exited(3));
        assert!(
            left(&a.descendants).is_empty(),
            "{:?}",
            left(&a.descendants)
        );
    });
}

#[test]
fn dropping_the_handle_ends_the_descendants_too() {
    run(async {
        let a = start().await;
        let descendants = a.descendants.clone();
        let Agent { process, .. } = a;
        drop(process);
        let deadline = Instant::now() + EVENTUALLY;
        while !left(&descendants).is_empty() {
            assert!(
                Instant::now() < deadline,
                "outlived the dropped handle: {:?}",
                left(&descendants)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

#[test]
fn stopping_one_agent_leaves_another_agents_descendants_alone() {
    run(async {
        let mut a = start().await;
        let mut b = start().await;
        timeout(EVENTUALLY, a.process.shutdown(Duration::from_millis(500)))
            .await
            .unwrap();
        assert!(
            left(&a.descendants).is_empty(),
            "{:?}",
            left(&a.descendants)
        );
        assert_eq!(
            left(&b.descendants).len(),
            3,
            "the other agent's descendants must survive: {:?}",
            b.descendants
        );
        timeout(EVENTUALLY, b.process.shutdown(Duration::from_millis(500)))
            .await
            .unwrap();
        assert!(
            left(&b.descendants).is_empty(),
            "{:?}",
            left(&b.descendants)
        );
    });
}
