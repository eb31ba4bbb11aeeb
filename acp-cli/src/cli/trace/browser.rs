//! Opening the viewer in the user's browser without putting the token on a command line
//! (which other local users can read in `/proc`): a private file (0600, in
//! `$XDG_RUNTIME_DIR` or the temporary directory) that redirects to the URL is opened instead,
//! as Jupyter does, and removed when `acp trace` ends.

use crate::os_compat::OpenOptionsExt;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The redirect file; removed on drop.
pub struct Redirect {
    pub path: PathBuf,
}

impl Drop for Redirect {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes the redirect file for `url` (made of URL-safe characters only).
pub fn redirect_file(url: &str) -> std::io::Result<Redirect> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let token = acp_native::remote::auth::generate_token()?;
    let path = dir.join(format!(
        "acp-trace-{}-{}.html",
        std::process::id(),
        &token[..16]
    ));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(crate::os_compat::O_NOFOLLOW)
        .open(&path)?;
    writeln!(
        f,
        "<!doctype html><meta charset=utf-8><title>acp trace</title>\
         <meta http-equiv=refresh content=\"0;url={url}\"><a href=\"{url}\">Open the trace</a>"
    )?;
    Ok(Redirect { path })
}

/// Opens `file` with the desktop's opener (`xdg-open`, `open` on macOS), not waiting for it.
pub fn open(file: &std::path::Path) -> std::io::Result<()> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut child = Command::new(opener)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    // Reaped on a thread of its own: the opener may wait for the browser.
    std::thread::spawn(move || child.wait());
    Ok(())
}
