//! Exit codes of `acp` (also listed in README.md and in `acp chat --help`).

/// The turn ended normally (`end_turn`), or the interactive session ended (EOF, `/quit`).
pub const OK: i32 = 0;
/// An error: the agent could not be started, crashed, broke the protocol, or refused a
/// request; or a local failure. The message on stderr says which.
pub const ERROR: i32 = 1;
/// Invalid command-line usage (clap's code).
pub const USAGE: i32 = 2;
/// The turn was cancelled (Ctrl-C, a permission request answered with EOF, ...).
pub const CANCELLED: i32 = 3;
/// The agent stopped at its token limit (`max_tokens`).
pub const MAX_TOKENS: i32 = 4;
/// The agent stopped at its request limit for one turn (`max_turn_requests`).
pub const MAX_TURN_REQUESTS: i32 = 5;
/// The agent refused (`refusal`).
pub const REFUSAL: i32 = 6;
/// The agent did not answer in time (`--timeout`).
pub const TIMEOUT: i32 = 7;
/// Quit with a second Ctrl-C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: i32 = 130;
/// SIGHUP (the terminal was closed).
pub const HANGUP: i32 = 129;
/// SIGTERM.
pub const TERMINATED: i32 = 143;
