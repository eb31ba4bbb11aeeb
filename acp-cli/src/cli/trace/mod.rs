//! `acp trace FILE`: the protocol trace as a timeline in the browser. Serves the viewer
//! (`trace-viewer/`, built in) on a loopback port with a token in the URL's fragment, opens
//! the browser (a private redirect file, `browser.rs`; `--no-open` prints the URL only), and
//! follows the file as it grows, so a live `acp chat --log-rpc FILE` can be watched.
//!
//! The file is never held: `index.rs` keeps a compact row per message (read by `line.rs`,
//! whatever the format), `query.rs` answers what a page asks (a filter's rows, the summary),
//! `detail.rs` finds a row's message in its line, `search.rs` reads lines again to search
//! them, `state.rs` holds all of it for the server (`server.rs`) and follows the file.

mod browser;
mod detail;
mod index;
mod line;
mod query;
mod scan;
mod search;
mod server;
mod state;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clap::Args;
use tokio::net::TcpListener;
#[cfg(unix)]
use tokio::signal::unix::{signal, SignalKind};

use super::exit;
use index::{Index, MAX_LINE, MAX_ROWS};
use line::Kind;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The trace: `acp chat --log-rpc` output, the VS Code extension's trace ("ACP Trace"
    /// log), or an ACP SDK conductor's `--trace` file. It may still be growing.
    pub file: PathBuf,

    /// Do not open a browser: only print the URL (on stdout).
    #[arg(long)]
    pub no_open: bool,

    /// Listen on this port of 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// Lines looked at to tell whether a file is a trace at all, and the most bytes read for it.
const FIRST_LINES: usize = 16;
const FIRST_BYTES: usize = 256 << 10;

/// Runs `acp trace`; returns the exit code.
pub async fn run(args: TraceArgs) -> i32 {
    let path = args.file.clone();
    let shared = match state::Shared::open(path.clone(), Index::new(MAX_LINE, MAX_ROWS)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("acp trace: cannot read {}: {e}", path.display());
            return exit::ERROR;
        }
    };
    if let Err(why) = looks_like_a_trace(&shared) {
        eprintln!("acp trace: {}: {why}", path.display());
        return exit::ERROR;
    }
    let listener = match TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("acp trace: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return exit::ERROR;
        }
    };
    let port = match listener.local_addr() {
        Ok(a) => a.port(),
        Err(e) => {
            eprintln!("acp trace: cannot listen: {e}");
            return exit::ERROR;
        }
    };
    let token = match acp_native::remote::auth::generate_token() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("acp trace: cannot make a token (/dev/urandom): {e}");
            return exit::ERROR;
        }
    };
    let url = format!("http://127.0.0.1:{port}/#token={token}");
    let follower = {
        let shared = shared.clone();
        std::thread::spawn(move || shared.follow())
    };
    let server = Arc::new(server::Server {
        shared: shared.clone(),
        token,
        port,
    });
    let serving = tokio::spawn(server.run(listener));

    outln!("{url}");
    let mut _redirect = None;
    if args.no_open {
        eprintln!(
            "acp trace: {} at http://127.0.0.1:{port}/ (open the URL above; Ctrl-C to stop)",
            path.display()
        );
    } else {
        match browser::redirect_file(&url).and_then(|r| browser::open(&r.path).map(|()| r)) {
            Ok(r) => {
                eprintln!(
                    "acp trace: {} at http://127.0.0.1:{port}/, opened in your browser (Ctrl-C to stop)",
                    path.display()
                );
                _redirect = Some(r);
            }
            Err(e) => eprintln!(
                "acp trace: cannot open a browser ({e}): open the URL above (Ctrl-C to stop)"
            ),
        }
    }

    let code = wait_for_a_signal().await;
    shared.stop.store(true, Ordering::Relaxed);
    serving.abort();
    drop(_redirect);
    let _ = follower.join();
    code
}

/// Waits for Ctrl-C (Windows); the exit code to end with.
#[cfg(not(unix))]
async fn wait_for_a_signal() -> i32 {
    let _ = tokio::signal::ctrl_c().await;
    exit::OK
}

/// Waits for Ctrl-C, SIGTERM or SIGHUP; the exit code to end with.
#[cfg(unix)]
async fn wait_for_a_signal() -> i32 {
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return exit::OK;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => exit::OK,
        _ = term.recv() => exit::TERMINATED,
        _ = hup.recv() => exit::HANGUP,
    }
}

/// Reads the file's start: an error when its first lines are none of the formats (an empty
/// file, or one still being written, is fine).
fn looks_like_a_trace(shared: &state::Shared) -> Result<(), String> {
    shared
        .step_at_most(FIRST_BYTES)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let s = shared.read();
    let first: Vec<_> = s.index.rows.iter().take(FIRST_LINES).collect();
    if !first.is_empty() && first.iter().all(|r| r.kind() == Kind::Malformed) {
        return Err(format!(
            "not a trace this viewer reads: its first {} line(s) are none of acp's --log-rpc \
             entries ({{\"tMs\":…,\"dir\":…,\"msg\":…}}), the VS Code extension's trace lines \
             (`→ {{…}}`, `← {{…}}`) or an ACP SDK conductor's events ({{\"type\":…,\"ts\":…}})",
            first.len()
        ));
    }
    Ok(())
}
