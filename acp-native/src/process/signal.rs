//! Signals: to a whole process group ([`signal_group`]), and their names ([`signal_name`]).
//! On Windows, a "group" is the job object the child was put in (`super::job`): every signal
//! ends the whole job.

use std::io;

/// `SIGKILL`'s number (on Windows, where there are no signals: what the group signal and
/// [`AgentProcess::signal`](super::AgentProcess::signal) take to end the whole job).
#[cfg(unix)]
pub const SIGKILL: i32 = libc::SIGKILL;
/// `SIGTERM`'s number (on Windows: ends the whole job, as `SIGKILL` does).
#[cfg(unix)]
pub const SIGTERM: i32 = libc::SIGTERM;
/// `SIGKILL`'s number (on Windows, where there are no signals: what the group signal and
/// [`AgentProcess::signal`](super::AgentProcess::signal) take to end the whole job).
#[cfg(not(unix))]
pub const SIGKILL: i32 = 9;
/// `SIGTERM`'s number (on Windows: ends the whole job, as `SIGKILL` does).
#[cfg(not(unix))]
pub const SIGTERM: i32 = 15;

/// Ends the job object the child `pid` was put in (Windows has no signals, and no graceful
/// stop for a console program without a console of its own: any signal ends the whole tree).
/// A child that is not (or no longer) known is not an error.
#[cfg(windows)]
pub(crate) fn signal_group(pid: u32, signal: i32) -> io::Result<()> {
    let _ = signal;
    super::job::terminate(pid)
}

/// Sends `signal` to the process group `pgid`. `ESRCH` (group already gone) is not an error.
#[cfg(unix)]
pub(crate) fn signal_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::Error::other("pgid out of range"))?;
    // killpg(0 or 1, ..) would signal our own group / init: never do that.
    if pgid <= 1 {
        return Err(io::Error::other("refusing to signal process group <= 1"));
    }
    // SAFETY: killpg has no memory-safety preconditions.
    let rc = unsafe { libc::killpg(pgid, signal) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// The conventional name of a signal number (`9` -> `"SIGKILL"`), for the signals a user is
/// likely to meet.
pub fn signal_name(signal: i32) -> Option<&'static str> {
    #[cfg(not(unix))]
    {
        let _ = signal;
        None
    }
    #[cfg(unix)]
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}
