//! Descendants that left an agent's process tree (orphans), and how they end with it.
//!
//! Killing an agent's process group does not reach everything it started: Claude Code runs its
//! Bash tool in a session of its own, a daemon double-forks and calls `setsid`, a test runner
//! moves to a process group of its own. When their parent dies such processes are reparented,
//! out of reach, and outlive the agent and `acp`.
//!
//! On Linux a process can be a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphaned
//! descendant is then reparented to it instead of to init, whatever process group or session it
//! moved to. [`adopt_orphans`] makes this process one. It is a process-wide setting, so it is
//! opt-in: the `acp` binary calls it at the start of `acp chat` and `acp serve`. From then on:
//!
//! * **Orphans are reaped** (so no zombie piles up in a long session) by a task that `SIGCHLD`
//!   wakes: `waitpid(pid, WNOHANG)` on each orphan, never `waitpid(-1)`. A child acp-native
//!   started itself (an [`AgentProcess`], a [`TerminalService`] command) is not an orphan: tokio
//!   (or the terminal service) reaps it by its pid, and reaping it here would steal its exit
//!   status. Such children are registered under the same lock as the scan that decides what is
//!   an orphan, so a child just spawned is never taken for one.
//! * **Each orphan is attributed** to the agents that may have started it. A scan of `/proc`
//!   (when an agent starts, before each step of its shutdown, on `SIGCHLD`) follows every
//!   descendant of this process up to the agent (or terminal, or orphan) it descends from; a
//!   process keeps the first attribution it got. An orphan that was never seen under an agent
//!   (its parent died before any scan: a double fork, a crash) is attributed to every agent
//!   running when it was first seen: one in `acp chat`, possibly several in `acp serve`.
//! * **When an agent has ended** (its exit reaped: a crash, [`AgentProcess::shutdown`], a
//!   drop), the orphans whose every possible owner has ended are killed, with their
//!   descendants: `SIGKILL` to each (a child of ours that is not reaped yet, so its pid cannot
//!   have been reused: race-free without a pidfd), a wait for its exit (a pidfd; its own
//!   children are reparented to us before it turns into a zombie), the reap, then the same for
//!   the children that came back, until none is left (bounded by [`END_LIMIT`]).
//!   [`AgentProcess::wait`] (and so `shutdown`, the supervisor's restart and `acp chat`'s)
//!   returns only after this.
//! * [`end_orphans`] ends every orphan left, whoever started it: for the end of the process.
//!
//! The contract of [`adopt_orphans`]: every other child the program starts itself (not through
//! acp-native) is taken for an orphan, reaped when it exits and ended with the agents. Call it
//! only in a program whose children are all started through acp-native, as `acp` does.
//!
//! Without it (a library that did not opt in, macOS, which has no subreaper, the other
//! Unixes) nothing here runs: what is guaranteed is the process group (stopped on shutdown,
//! `SIGKILL`ed on drop) and the terminals' groups. Windows is not built; a job object would be
//! the equivalent there. A cgroup v2 (`cgroup.kill`) would also cover it but needs a writable,
//! delegated cgroup, which an ordinary user's session does not give without systemd's help;
//! the subreaper needs no privilege.
//!
//! Not covered anywhere: a descendant that has another process start it (`systemd-run`, `at`,
//! an ssh to localhost, a daemon it talks to), one that changed its user (a setuid program
//! cannot be signalled by an ordinary user), and everything when `acp` itself is `SIGKILL`ed.

use std::io;
use std::time::Duration;

#[cfg(doc)] // (for links in the docs)
use super::AgentProcess;
#[cfg(doc)]
use crate::terminal_service::TerminalService;

/// Longest time ending one agent's orphans (or, in [`end_orphans`], all of them) may take,
/// should some not die (a process stuck in the kernel); those left are ended later, when they
/// exit or at the next agent's end.
pub const END_LIMIT: Duration = Duration::from_secs(5);

/// Makes this process a child subreaper (Linux) and starts reaping the orphans that come back to
/// it; see the [module docs](self) for what follows and for the contract. Idempotent. Must be
/// called inside a tokio runtime with signals enabled.
///
/// `Ok(false)`: this platform has no subreaper (macOS, other Unixes); agents' descendants are
/// then ended with their process group only.
pub fn adopt_orphans() -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        linux::adopt()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(false)
    }
}

/// Whether [`adopt_orphans`] is in effect.
pub fn orphans_adopted() -> bool {
    #[cfg(target_os = "linux")]
    {
        linux::adopted()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Ends every orphan this process holds, whoever started it, with its descendants (`SIGKILL`,
/// then reaped), within `limit`; returns how many were ended. Blocking. For the end of a
/// program that called [`adopt_orphans`] (after its agents and terminals are stopped); does
/// nothing otherwise.
pub fn end_orphans(limit: Duration) -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::end_all(limit)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = limit;
        0
    }
}

/// An agent whose descendants are attributed to it (see the module docs).
pub(crate) type OwnerId = u64;

/// Spawns `command`: a child acp-native waits for itself, never reaped or ended as an orphan
/// (until [`reaped`] / [`agent_ended`]). `agent`: its descendants are attributed to it; its
/// owner id is returned.
pub(crate) fn spawn(
    command: &mut tokio::process::Command,
    agent: bool,
) -> io::Result<(tokio::process::Child, Option<OwnerId>)> {
    #[cfg(target_os = "linux")]
    {
        linux::spawn(command, agent)
    }
    #[cfg(windows)]
    {
        let _ = agent;
        let child = command.spawn()?;
        // Its job: ending the child ends its whole tree (`super::job`).
        super::job::contain(&child)?;
        Ok((child, None))
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        let _ = agent;
        Ok((command.spawn()?, None))
    }
}

/// A child started by [`spawn`] (not an agent) has been reaped: forget it.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn reaped(pid: u32) {
    #[cfg(target_os = "linux")]
    linux::reaped(pid);
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

/// Records who the running agents' descendants are, before they are signalled (so those that
/// leave the tree when it dies are attributed exactly). `blocking: false`: skipped if the
/// registry is busy (from `Drop`).
pub(crate) fn note_descendants(blocking: bool) {
    #[cfg(target_os = "linux")]
    linux::note_descendants(blocking);
    #[cfg(not(target_os = "linux"))]
    let _ = blocking;
}

/// The agent `pid` (owner `owner`) has been reaped: forget it, and end its orphans (bounded).
pub(crate) async fn agent_ended(pid: u32, owner: Option<OwnerId>) {
    #[cfg(target_os = "linux")]
    linux::agent_ended(pid, owner).await;
    #[cfg(not(target_os = "linux"))]
    let _ = (pid, owner);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeSet, HashMap, HashSet};
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{LazyLock, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    use super::{OwnerId, END_LIMIT};

    /// How often the reaper looks at the orphans it knows of besides on `SIGCHLD` (a backstop
    /// for those a bounded end left behind).
    const BACKSTOP: Duration = Duration::from_secs(10);

    static ADOPTED: AtomicBool = AtomicBool::new(false);
    static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

    type Owners = BTreeSet<OwnerId>;

    #[derive(Default)]
    struct Registry {
        /// Children acp-native started and waits for itself (pid → owner id for an agent,
        /// `None` for a terminal command): never reaped or killed here.
        started: HashMap<i32, Option<OwnerId>>,
        /// Agents whose orphans have not been ended yet (running, or ending).
        live: Owners,
        next_owner: OwnerId,
        /// Our children that acp-native did not start.
        orphans: HashMap<i32, Orphan>,
        /// Every other descendant seen at the last scan, by (pid, start time): who may have
        /// started it.
        known: HashMap<(i32, u64), Owners>,
    }

    struct Orphan {
        start: u64,
        owners: Owners,
    }

    /// Which orphans an end kills.
    #[derive(Clone, Copy)]
    enum Ending {
        /// Those whose possible owners have all ended once this agent has.
        Owner(OwnerId),
        /// Every orphan (the process is ending).
        All,
    }

    fn lock() -> MutexGuard<'static, Registry> {
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn adopted() -> bool {
        ADOPTED.load(Ordering::Acquire)
    }

    pub(super) fn adopt() -> io::Result<bool> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("adopt_orphans must be called inside a tokio runtime"))?;
        let _guard = handle.enter();
        let registry = lock();
        if adopted() {
            return Ok(true);
        }
        let sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?;
        // SAFETY: prctl with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        ADOPTED.store(true, Ordering::Release);
        drop(registry);
        handle.spawn(reap_orphans(sigchld));
        Ok(true)
    }

    /// Reaps orphans that exited, and kills those whose owners have all ended (left by an end
    /// that ran out of time), on every `SIGCHLD`.
    async fn reap_orphans(mut sigchld: tokio::signal::unix::Signal) {
        loop {
            let woken = tokio::select! {
                s = sigchld.recv() => s.is_some(),
                _ = tokio::time::sleep(BACKSTOP) => false,
            };
            if tokio::task::spawn_blocking(move || pass(woken))
                .await
                .is_err()
            {
                return; // the runtime is shutting down
            }
        }
    }

    fn pass(woken: bool) {
        let mut registry = lock();
        if !woken && registry.orphans.is_empty() {
            return;
        }
        registry.update(&scan());
        registry.reap_exited();
        let due: Vec<i32> = registry
            .orphans
            .iter()
            .filter(|(_, o)| registry.due(o, None))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in due {
            // Our own child, not reaped: its pid is its own. Reaped on its SIGCHLD.
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    pub(super) fn spawn(
        command: &mut tokio::process::Command,
        agent: bool,
    ) -> io::Result<(tokio::process::Child, Option<OwnerId>)> {
        let mut registry = lock();
        if agent && adopted() {
            // Orphans already here are not this agent's.
            registry.update(&scan());
        }
        let child = command.spawn()?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        let owner = agent.then(|| {
            registry.next_owner += 1;
            let id = registry.next_owner;
            registry.live.insert(id);
            id
        });
        if let Some(pid) = pid {
            registry.started.insert(pid, owner);
        }
        Ok((child, owner))
    }

    pub(super) fn reaped(pid: u32) {
        if let Ok(pid) = i32::try_from(pid) {
            lock().started.remove(&pid);
        }
    }

    pub(super) fn note_descendants(blocking: bool) {
        if !adopted() {
            return;
        }
        let registry = if blocking {
            Some(lock())
        } else {
            match REGISTRY.try_lock() {
                Ok(r) => Some(r),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        };
        if let Some(mut registry) = registry {
            registry.update(&scan());
        }
    }

    pub(super) async fn agent_ended(pid: u32, owner: Option<OwnerId>) {
        let forget = move || {
            let mut registry = lock();
            if let Ok(pid) = i32::try_from(pid) {
                registry.started.remove(&pid);
            }
            if let Some(owner) = owner {
                if adopted() {
                    registry.end(Ending::Owner(owner), END_LIMIT);
                }
                registry.live.remove(&owner);
            }
        };
        if !adopted() {
            forget();
        } else if let Err(e) = tokio::task::spawn_blocking(forget).await {
            tracing::warn!(pid, "ending the agent's orphans failed: {e}");
        }
    }

    pub(super) fn end_all(limit: Duration) -> usize {
        if !adopted() {
            return 0;
        }
        lock().end(Ending::All, limit)
    }

    impl Registry {
        /// Takes in a scan: new orphans (with who may own them) and who every other
        /// descendant may have been started by.
        fn update(&mut self, procs: &HashMap<i32, Proc>) {
            // SAFETY: getpid has no preconditions.
            let me = unsafe { libc::getpid() };
            let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
            for (&pid, p) in procs {
                children.entry(p.ppid).or_default().push(pid);
            }
            let mut known = HashMap::new();
            let mut seen = HashSet::new();
            let mut stack: Vec<(i32, Owners)> = Vec::new();
            for &child in children.get(&me).map(Vec::as_slice).unwrap_or_default() {
                let start = procs[&child].start;
                let owners = match self.started.get(&child) {
                    Some(Some(owner)) => Owners::from([*owner]),
                    // A terminal: any running agent may have asked for it.
                    Some(None) => self.live.clone(),
                    None => match self.orphans.get(&child) {
                        Some(o) if o.start == start => o.owners.clone(),
                        _ => {
                            let owners = self
                                .known
                                .get(&(child, start))
                                .cloned()
                                .unwrap_or_else(|| self.live.clone());
                            tracing::debug!(pid = child, ?owners, "an orphan came back");
                            self.orphans.insert(
                                child,
                                Orphan {
                                    start,
                                    owners: owners.clone(),
                                },
                            );
                            owners
                        }
                    },
                };
                seen.insert(child);
                stack.push((child, owners));
            }
            while let Some((parent, owners)) = stack.pop() {
                for &pid in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
                    if !seen.insert(pid) {
                        continue;
                    }
                    let key = (pid, procs[&pid].start);
                    // A process's first attribution is the closest to whoever started it.
                    let owners = self.known.get(&key).cloned().unwrap_or(owners.clone());
                    known.insert(key, owners.clone());
                    stack.push((pid, owners));
                }
            }
            self.known = known;
            self.orphans.retain(|pid, o| {
                procs
                    .get(pid)
                    .is_some_and(|p| p.ppid == me && p.start == o.start)
            });
        }

        /// Reaps the orphans that exited (only them: never a pid tokio waits for).
        fn reap_exited(&mut self) {
            self.orphans.retain(|&pid, _| !try_reap(pid));
        }

        /// Whether `orphan` is to be ended: it has owners, and none of them runs any more
        /// (`ending` counts as ended).
        fn due(&self, orphan: &Orphan, ending: Option<OwnerId>) -> bool {
            !orphan.owners.is_empty()
                && orphan
                    .owners
                    .iter()
                    .all(|o| Some(*o) == ending || !self.live.contains(o))
        }

        /// Kills the orphans `which` covers, then those that come back as they die, until none
        /// is left or `limit` has passed. Returns how many were ended.
        fn end(&mut self, which: Ending, limit: Duration) -> usize {
            let deadline = Instant::now() + limit;
            let mut ended = 0;
            loop {
                self.update(&scan());
                self.reap_exited();
                let targets: Vec<i32> = self
                    .orphans
                    .iter()
                    .filter(|(_, o)| match which {
                        Ending::All => true,
                        Ending::Owner(owner) => self.due(o, Some(owner)),
                    })
                    .map(|(&pid, _)| pid)
                    .collect();
                if targets.is_empty() {
                    return ended;
                }
                for &pid in &targets {
                    // Our child, not reaped (nobody else reaps it): race-free.
                    // SAFETY: kill(2) has no memory-safety preconditions.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                for &pid in &targets {
                    // Once it is a zombie its children are ours (reparented on its exit).
                    if wait_exit(pid, deadline) && try_reap(pid) {
                        self.orphans.remove(&pid);
                        ended += 1;
                    }
                }
                if Instant::now() >= deadline {
                    tracing::warn!(
                        left = self.orphans.len(),
                        "some of the agent's orphans did not die within {limit:?}"
                    );
                    return ended;
                }
            }
        }
    }

    /// What a scan of `/proc` tells of one process.
    struct Proc {
        ppid: i32,
        /// Start time (clock ticks after boot): with the pid, names one process.
        start: u64,
    }

    /// Every process `/proc` shows (a process there during the whole scan is listed).
    fn scan() -> HashMap<i32, Proc> {
        let mut procs = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return procs;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
                continue; // gone meanwhile
            };
            if let Some(p) = parse_stat(&stat) {
                procs.insert(pid, p);
            }
        }
        procs
    }

    /// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    /// stime cutime cstime priority nice threads itrealvalue starttime ...`; `comm` may hold
    /// anything, `)` included, so fields are counted after the last `)`.
    fn parse_stat(stat: &[u8]) -> Option<Proc> {
        let close = stat.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        Some(Proc {
            ppid: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    /// Reaps our child `pid` if it has exited. `true` if it is gone.
    fn try_reap(pid: i32) -> bool {
        let mut status = 0;
        loop {
            // SAFETY: waitpid with a valid pointer; `pid` is an orphan, no one else waits for it.
            let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if rc == pid {
                return true;
            }
            if rc == 0 {
                return false;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // ECHILD: not our child any more (cannot happen for an unreaped orphan).
            return true;
        }
    }

    /// Waits until our child `pid` has exited (not reaping it), until `deadline`.
    fn wait_exit(pid: i32, deadline: Instant) -> bool {
        // SAFETY: pidfd_open(2) with integer arguments.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: a new descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let mut poll = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
                // SAFETY: one valid pollfd. A pidfd is readable once its process exited.
                let rc = unsafe { libc::poll(&mut poll, 1, ms) };
                if rc > 0 {
                    return true;
                }
                if rc == 0 {
                    return false;
                }
                if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
        }
        // No pidfd (Linux before 5.3): look, without reaping, until the deadline.
        loop {
            // SAFETY: an all-zero siginfo_t is valid; waitid writes into it.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid with a valid pointer; WNOWAIT leaves the child as it is.
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: filled by waitid for a child event.
            if rc != 0 || unsafe { info.si_pid() } != 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_fields_are_counted_after_the_last_parenthesis() {
            let stat = b"4242 (a) b) (c) S 17 4242 4242 0 -1 4194560 120 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
            let p = parse_stat(stat).unwrap();
            assert_eq!((p.ppid, p.start), (17, 987654));
            assert!(parse_stat(b"1 (x) S").is_none());
        }
    }
}
