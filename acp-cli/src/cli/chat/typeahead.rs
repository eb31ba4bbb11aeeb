//! Lines typed on the terminal while a turn runs, so they are queued instead of lost.
//!
//! During a turn the terminal is in its ordinary (canonical) mode: the user's keys are echoed
//! by the terminal and a line becomes readable when Enter is pressed. Nobody read it before,
//! so it waited in the terminal's buffer until the line editor started, which may skip or eat
//! it. Now a thread reads the complete lines as they come (waiting in `poll` on the terminal
//! and on a pipe that stops it), and the chat queues them. It runs only while no question is
//! open and no prompt is edited: [`TypeAhead::stop`] ends it (and returns every line it read)
//! before the line editor reads the terminal again. A line being typed when it stops stays in
//! the terminal's buffer, where the line editor finds it as typed keys.
//!
//! Bounded: a line is at most what the terminal's line buffer holds (4 KiB on Linux); the
//! queue they go to is bounded by acp-client's ([`MAX_QUEUED`](acp_client::queue::MAX_QUEUED)).

#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

#[cfg(unix)]
use tokio::sync::mpsc;

/// The reading thread, while it runs.
#[cfg(unix)]
pub(super) struct TypeAhead {
    stop: OwnedFd,
    thread: std::thread::JoinHandle<()>,
    lines: mpsc::UnboundedReceiver<String>,
}

#[cfg(unix)]
impl TypeAhead {
    /// Starts reading complete lines from the terminal on stdin.
    pub(super) fn start() -> std::io::Result<TypeAhead> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
        let (wake, stop) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let (tx, lines) = mpsc::unbounded_channel();
        let thread = std::thread::spawn(move || read_lines(&wake, &tx));
        Ok(TypeAhead {
            stop,
            thread,
            lines,
        })
    }

    /// The next line typed (without its newline).
    pub(super) async fn next(&mut self) -> Option<String> {
        self.lines.recv().await
    }

    /// Stops the thread (it is waiting in `poll`, woken by the pipe) and returns the lines it
    /// read that were not taken yet.
    pub(super) fn stop(self) -> Vec<String> {
        // SAFETY: writing one byte from a valid buffer to the pipe's write end we own.
        unsafe { libc::write(self.stop.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        let _ = self.thread.join();
        let mut rest = Vec::new();
        let mut lines = self.lines;
        while let Ok(line) = lines.try_recv() {
            rest.push(line);
        }
        rest
    }
}

#[cfg(unix)]
fn read_lines(wake: &OwnedFd, tx: &mpsc::UnboundedSender<String>) {
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd structs.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
            && fds[0].revents & libc::POLLIN == 0
        {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        // Canonical mode: one complete line (or what Ctrl-D ended) per read.
        // SAFETY: reading at most `buf.len()` bytes into `buf`.
        let got = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if got < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if got == 0 {
            // Ctrl-D on an empty line while a turn runs: nothing to queue.
            continue;
        }
        partial.extend_from_slice(&buf[..got as usize]);
        while let Some(end) = partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            if tx.send(text).is_err() {
                return;
            }
        }
        // Text ended by Ctrl-D without a newline: a line too.
        if !partial.is_empty() && got as usize != buf.len() {
            let text = String::from_utf8_lossy(&partial).into_owned();
            partial.clear();
            if tx.send(text).is_err() {
                return;
            }
        }
    }
}

/// On Windows the console is not read during a turn (yet): [`TypeAhead::start`] says so, and
/// what is typed then waits in the console's buffer for the line editor. Never made.
#[cfg(not(unix))]
pub(super) enum TypeAhead {}

#[cfg(not(unix))]
impl TypeAhead {
    /// Refused: `ErrorKind::Unsupported`.
    pub(super) fn start() -> std::io::Result<TypeAhead> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "lines typed during a turn are not queued on Windows yet",
        ))
    }

    pub(super) async fn next(&mut self) -> Option<String> {
        match *self {}
    }

    pub(super) fn stop(self) -> Vec<String> {
        match self {}
    }
}
