//! Writing an executable file that a concurrent test can exec at once.
//!
//! `std::fs::write` followed by `exec` races with every other test thread that forks: a child
//! forked while our write descriptor is open holds a copy of it until its own `exec` (CLOEXEC only
//! closes it then), and exec'ing a file someone holds open for writing fails with ETXTBSY ("Text
//! file busy"). CI hit exactly that. So the file is written by a short-lived `sh` child: the only
//! descriptor ever open for writing lives in that child, and is closed once it has exited.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `contents` to `path` with mode 0755, race-free with concurrent forks in this process.
pub fn write_executable(path: &Path, contents: &str) {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg("umask 022 && cat > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn /bin/sh to write an executable");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(contents.as_bytes())
        .expect("write the executable's contents");
    let status = child.wait().expect("wait for /bin/sh");
    assert!(
        status.success(),
        "writing {} failed: {status}",
        path.display()
    );
}
