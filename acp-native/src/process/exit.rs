//! How a child ended ([`Termination`]) and what to tell a user about it ([`ExitReport`]).

use std::fmt;
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;

use super::signal_name;
#[cfg(doc)] // (for links in the docs)
use super::{AgentProcess, TailLimits};

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// It called `exit(code)`.
    Exited(i32),
    /// A signal killed it.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// The exit status could not be collected (e.g. someone else reaped the child).
    Unknown,
}

impl Termination {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self, Termination::Exited(0))
    }

    /// The exit code, if it exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            Termination::Exited(c) => Some(*c),
            _ => None,
        }
    }

    /// The killing signal, if a signal killed it.
    pub fn signal(&self) -> Option<i32> {
        match self {
            Termination::Signaled { signal, .. } => Some(*signal),
            _ => None,
        }
    }
}

impl From<std::process::ExitStatus> for Termination {
    fn from(status: std::process::ExitStatus) -> Self {
        if let Some(code) = status.code() {
            return Termination::Exited(code);
        }
        #[cfg(unix)]
        if let Some(signal) = status.signal() {
            return Termination::Signaled {
                signal,
                core_dumped: status.core_dumped(),
            };
        }
        Termination::Unknown
    }
}

impl fmt::Display for Termination {
    /// "exited with code 3", "was killed by signal 9 (SIGKILL)", "ended with an unknown status".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Termination::Exited(code) => write!(f, "exited with code {code}"),
            Termination::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "was killed by signal {signal}")?;
                if let Some(name) = signal_name(*signal) {
                    write!(f, " ({name})")?;
                }
                if *core_dumped {
                    write!(f, ", core dumped")?;
                }
                Ok(())
            }
            Termination::Unknown => write!(f, "ended with an unknown status"),
        }
    }
}

/// What to tell a user when an agent ended: who, how, and its last stderr lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitReport {
    /// The command as given (not the resolved path).
    pub program: String,
    /// The child's pid (also its process-group id).
    pub pid: u32,
    /// How it ended.
    pub termination: Termination,
    /// The last stderr lines, oldest first (bounded by [`TailLimits`]).
    pub stderr_tail: Vec<String>,
    /// Whether the end was requested by us ([`AgentProcess::shutdown`]) rather than a crash.
    pub shutdown_requested: bool,
}

impl ExitReport {
    /// A crash from the user's point of view: not requested, and not a clean exit 0.
    pub fn is_crash(&self) -> bool {
        !self.shutdown_requested && !self.termination.success()
    }
}

impl fmt::Display for ExitReport {
    /// `agent `my-agent` exited with code 3; last stderr lines:\n  boom\n  bye`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent `{}` {}", self.program, self.termination)?;
        if self.shutdown_requested {
            write!(f, " after a shutdown request")?;
        }
        if self.stderr_tail.is_empty() {
            write!(f, "; it wrote nothing to stderr")
        } else {
            write!(f, "; last stderr lines:")?;
            for line in &self.stderr_tail {
                write!(f, "\n  {line}")?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_display() {
        assert_eq!(Termination::Exited(3).to_string(), "exited with code 3");
        assert_eq!(
            Termination::Signaled {
                signal: crate::process::SIGKILL,
                core_dumped: false
            }
            .to_string(),
            if cfg!(unix) {
                "was killed by signal 9 (SIGKILL)"
            } else {
                "was killed by signal 9"
            }
        );
        let r = ExitReport {
            program: "my-agent".into(),
            pid: 42,
            termination: Termination::Exited(3),
            stderr_tail: vec!["boom".into(), "bye".into()],
            shutdown_requested: false,
        };
        assert_eq!(
            r.to_string(),
            "agent `my-agent` exited with code 3; last stderr lines:\n  boom\n  bye"
        );
        assert!(r.is_crash());
    }
}
