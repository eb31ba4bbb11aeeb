//! Helpers for tests that flood a process over a WebSocket and hold its memory to a budget:
//! ping frames written as fast as a socket takes them by a peer that never reads, and the
//! peak resident memory of a process (`VmHWM` in `/proc/<pid>/status`) watched meanwhile, with
//! a watchdog that kills it above [`KILL_AT_MIB`] so that a regression fails the test without
//! taking the machine down (as tests/memory_bounds.rs does for `acp chat`).
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// The watchdog's limit: far above any budget here, low enough for a shared 2-core machine.
pub const KILL_AT_MIB: u64 = 1536;

/// Ping frames with the largest payload a control frame may carry (125 bytes), back to back,
/// about 64 KiB of them: as a server sends them (`masked: false`) or as a client must
/// (`masked: true`, RFC 6455 5.3: a server closes on an unmasked client frame).
pub fn ping_frames(masked: bool) -> Vec<u8> {
    let payload: Vec<u8> = (0..125u8).collect();
    let mask = [0x5a, 0xc3, 0x17, 0x99];
    let mut frame = vec![0x89]; // FIN, ping
    if masked {
        frame.push(0x80 | 125);
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    } else {
        frame.push(125);
        frame.extend_from_slice(&payload);
    }
    let mut out = Vec::with_capacity(64 << 10);
    while out.len() + frame.len() <= 64 << 10 {
        out.extend_from_slice(&frame);
    }
    out
}

/// How a flood ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// The other side closed the connection (a write failed) after this many bytes.
    Closed(u64),
    /// `limit` bytes were written and the connection was still open.
    StillOpen(u64),
}

/// Writes `frames` again and again on `socket` (never reading it) until a write fails (the
/// other side closed the connection) or `limit` bytes were written.
pub async fn flood<W: tokio::io::AsyncWrite + Unpin>(
    socket: &mut W,
    frames: &[u8],
    limit: u64,
) -> Flood {
    let mut sent = 0u64;
    while sent < limit {
        if socket.write_all(frames).await.is_err() {
            return Flood::Closed(sent);
        }
        sent += frames.len() as u64;
    }
    Flood::StillOpen(sent)
}

/// Peak memory of a process, sampled until it exits; kills it above [`KILL_AT_MIB`].
pub struct Watch {
    pid: u32,
    /// Highest VmHWM seen (kB).
    hwm_kib: Arc<AtomicU64>,
    killed: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

/// `VmHWM` and `VmRSS` of `pid` in kB (None once it has exited).
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
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
    pub fn start(pid: u32) -> Watch {
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
                    // SAFETY: signalling a process this test started.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        w
    }

    /// The peak so far (KiB), read now if the process still runs (exact then: VmHWM is a
    /// high-water mark), else the last sample.
    pub fn peak_kib(&self) -> u64 {
        if let Some((peak, _)) = memory_kib(self.pid) {
            self.hwm_kib.fetch_max(peak, Ordering::SeqCst);
        }
        self.hwm_kib.load(Ordering::SeqCst)
    }

    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
