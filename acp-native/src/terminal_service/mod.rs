//! Client-side terminal service: `terminal/create`, `terminal/output`,
//! `terminal/wait_for_exit`, `terminal/kill`, `terminal/release`.
//!
//! [`TerminalService`] runs real processes for an agent, with the official schema types:
//!
//! * **No shell.** `command` is resolved like an agent's program
//!   ([`crate::process::resolve_executable`]): a path, or a name searched in `PATH`; `args` are
//!   passed verbatim. An agent that wants a shell asks for `sh` with `-c`.
//! * **Explicit environment.** The child gets [`TerminalConfig::env`] (an [`EnvPolicy`];
//!   default: allowlist, no host secrets) plus the request's `env` variables.
//! * **Own process group.** Kill and release signal the whole group, so `sh -c 'a & b'` leaves
//!   nothing behind, even once the shell (the group's leader) has exited: the leader is not
//!   reaped until the terminal is released, so its exited process keeps the group's id
//!   reserved (no other process or group can get it) and the group can always be signalled.
//!   Its exit is observed without reaping it (`waitid` with `WNOWAIT`).
//! * **One output buffer.** stdout and stderr are the *same* pipe (as in a terminal), so their
//!   interleaving is the order the process wrote in. `outputByteLimit` keeps the newest bytes: the
//!   front is dropped and the start moved forward to a UTF-8 character boundary
//!   (`truncated: true`). [`TerminalConfig::max_output_bytes`] caps every buffer (including
//!   requests without a limit) so a runaway command cannot exhaust memory.
//! * **Exit status** is an exit code or a signal name (`"SIGKILL"`). `wait_for_exit` returns
//!   once the process has exited *and* its output pipe is drained (bounded by a short grace
//!   when a background grandchild keeps the pipe open), so an `output` call after it sees
//!   everything.
//! * **Lifecycle.** `kill` stops the process group but keeps the terminal (output and exit
//!   status stay readable); `release` kills if needed and forgets the terminal: later calls with
//!   its id fail with `-32002`. Terminals belong to the session that created them; another
//!   session's id is "not found" too. At most [`TerminalConfig::max_terminals`] unreleased
//!   terminals exist at once (exited but unreleased ones count: they still hold output).
//! * Dropping the last clone of the service kills every terminal's process group.
//! * **Windows**: not implemented yet; `terminal/create` is refused with
//!   [`TerminalError::Unsupported`] before anything is started (docs/reliability.md,
//!   "Windows").

#[cfg(unix)]
mod child; // the command's process: output pipe, exit observed without reaping
mod error; // `TerminalError`
mod output; // `OutputBuffer`: the retained output (pure)
mod service; // `TerminalService`, `TerminalConfig`: the terminal/* methods

pub use error::TerminalError;
pub use output::OutputBuffer;
pub use service::{TerminalConfig, TerminalService};

#[cfg(doc)] // (for links in the docs)
use crate::process::EnvPolicy;
