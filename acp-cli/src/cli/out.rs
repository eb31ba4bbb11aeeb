//! Lines to stdout for the listing subcommands (`acp agents`, `acp sessions`, `acp login`): a
//! reader that goes away (`acp sessions | head -1`, `acp agents | true`) ends acp quietly, exit
//! 0, as it ends `cat` or `ls`: the reader had what it wanted. `println!` would panic (exit
//! 101) and ignoring SIGPIPE's default is right for acp, which writes to agents' pipes.

use std::io::Write;

/// `println!` to stdout, quietly ending the process if nobody reads it any more.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}

/// One line to stdout; see [`outln!`].
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        gone(e)
    }
}

/// A write to stdout failed: the reader left (exit 0, nothing said), or stdout is broken in
/// another way (said on stderr, exit [`ERROR`](super::exit::ERROR)).
fn gone(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("acp: cannot write to stdout: {e}");
    std::process::exit(super::exit::ERROR)
}
