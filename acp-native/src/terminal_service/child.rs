//! Following a terminal's command: its output pipe read into the [`OutputBuffer`], and its exit
//! observed without reaping the group leader until the terminal is gone.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol_schema::v1::TerminalExitStatus;
use tokio::sync::{oneshot, watch};

use super::OutputBuffer;
use crate::process::{orphans, signal_name, Termination};

/// After the process exits, how long to wait for its output pipe to reach EOF before reporting
/// the exit anyway (a background grandchild may hold the pipe open indefinitely).
const OUTPUT_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// How often a running command is checked for exit besides on `SIGCHLD` (a backstop).
const EXIT_POLL_BACKSTOP: Duration = Duration::from_secs(2);

fn exit_status_of(t: Termination) -> TerminalExitStatus {
    match t {
        Termination::Exited(code) => TerminalExitStatus::new().exit_code(code as u32),
        Termination::Signaled { signal, .. } => TerminalExitStatus::new()
            .signal(signal_name(signal).map_or_else(|| format!("SIG{signal}"), str::to_owned)),
        Termination::Unknown => TerminalExitStatus::new(),
    }
}

/// Follows a terminal's command (the group leader): reports its exit status once it exited
/// and its output is drained (bounded), **without reaping it**, then reaps it only when the
/// terminal is gone (`release` fires, after the group was killed). Until then the exited
/// leader keeps its pid, the group's id, from being reused, so killing the group can never hit
/// another one.
pub(super) async fn wait_for_leader(
    mut child: tokio::process::Child,
    id: Arc<str>,
    mut drained: watch::Receiver<bool>,
    exit_tx: watch::Sender<Option<TerminalExitStatus>>,
    mut release: oneshot::Receiver<()>,
) {
    let pid = child.id().expect("not reaped yet");
    // Registered before the first look, so an exit after it is not missed.
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let mut released = false;
    let exited = loop {
        match peek_exit(pid) {
            Ok(Some(t)) => break Some(t),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(terminal = %id, "watching the terminal command failed: {e}");
                break None;
            }
        }
        tokio::select! {
            _ = async {
                match sigchld.as_mut() {
                    Some(s) => { s.recv().await; }
                    None => std::future::pending().await,
                }
            } => {}
            // A backstop only (a SIGCHLD after the registration above is never missed).
            _ = tokio::time::sleep(EXIT_POLL_BACKSTOP) => {}
            // Released (and the group killed) while it runs.
            _ = &mut release => {
                released = true;
                break None;
            }
        }
    };
    let termination = match exited {
        Some(t) => t,
        // Reap it now (it was killed, or watching failed).
        None => match child.wait().await {
            Ok(status) => Termination::from(status),
            Err(e) => {
                tracing::warn!(terminal = %id, "waiting for terminal command failed: {e}");
                Termination::Unknown
            }
        },
    };
    let _ = tokio::time::timeout(OUTPUT_DRAIN_AFTER_EXIT, drained.wait_for(|eof| *eof)).await;
    tracing::debug!(terminal = %id, "terminal command {termination}");
    exit_tx.send_replace(Some(exit_status_of(termination)));
    // Keep the exited leader unreaped until the terminal is gone; dropping the child then
    // reaps it.
    if !released {
        let _ = release.await;
    }
    drop(child);
    orphans::reaped(pid);
}

/// The exit of child `pid`, if it has exited, **without reaping it** (`waitid` with `WNOWAIT`).
fn peek_exit(pid: u32) -> io::Result<Option<Termination>> {
    loop {
        // SAFETY: an all-zero siginfo_t is valid (plain data); waitid writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with a valid pointer to a siginfo_t; WNOWAIT leaves the child as is.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let (si_pid, status) = siginfo_pid_status(&info);
        if si_pid == 0 {
            return Ok(None); // WNOHANG: still running
        }
        return Ok(Some(match info.si_code {
            libc::CLD_EXITED => Termination::Exited(status),
            libc::CLD_KILLED => Termination::Signaled {
                signal: status,
                core_dumped: false,
            },
            libc::CLD_DUMPED => Termination::Signaled {
                signal: status,
                core_dumped: true,
            },
            _ => Termination::Unknown,
        }));
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn siginfo_pid_status(info: &libc::siginfo_t) -> (libc::pid_t, i32) {
    // SAFETY: filled by waitid for a child event (the SIGCHLD layout).
    unsafe { (info.si_pid(), info.si_status()) }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn siginfo_pid_status(info: &libc::siginfo_t) -> (libc::pid_t, i32) {
    (info.si_pid, info.si_status)
}

pub(super) async fn read_output(
    rx: tokio::net::unix::pipe::Receiver,
    output: Arc<Mutex<OutputBuffer>>,
    total: watch::Sender<u64>,
    eof: watch::Sender<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if rx.readable().await.is_err() {
            break;
        }
        match rx.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                output
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&buf[..n]);
                total.send_modify(|t| *t += n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("reading terminal output failed: {e}");
                break;
            }
        }
    }
    eof.send_replace(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_mapping() {
        assert_eq!(exit_status_of(Termination::Exited(3)).exit_code, Some(3));
        let s = exit_status_of(Termination::Signaled {
            signal: libc::SIGKILL,
            core_dumped: false,
        });
        assert_eq!((s.exit_code, s.signal.as_deref()), (None, Some("SIGKILL")));
        assert_eq!(
            exit_status_of(Termination::Signaled {
                signal: 64,
                core_dumped: false
            })
            .signal
            .as_deref(),
            Some("SIG64")
        );
    }
}
