//! Supervised agent processes with real children: spawning without a shell, exit reports,
//! bounded stderr, graceful shutdown and whole-group kills.

mod host_support;

use std::time::Duration;

use acp_native::process::{
    AgentCommand, AgentProcess, CrashBudget, EnvPolicy, RestartDecision, RestartPolicy,
    ShutdownStage, SpawnError, TailLimits, Termination, DEFAULT_ENV_ALLOWLIST,
};
use host_support::{process_is_dead, wait_dead, TempDir, EVENTUALLY};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::timeout;

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

async fn wait_report(p: &AgentProcess) -> acp_native::process::ExitReport {
    timeout(EVENTUALLY, p.wait())
        .await
        .expect("agent did not exit in time")
}

/// Reads the child's stdout to EOF. EOF means every process holding the pipe (the agent and
/// any grandchild it started) is gone.
async fn read_to_eof(p: &mut AgentProcess, first_lines: usize) -> (Vec<String>, String) {
    let stdout = p.take_stdout().unwrap();
    let mut r = BufReader::new(stdout);
    let mut lines = Vec::new();
    for _ in 0..first_lines {
        let mut l = String::new();
        timeout(EVENTUALLY, r.read_line(&mut l))
            .await
            .unwrap()
            .unwrap();
        lines.push(l.trim_end().to_owned());
    }
    let mut rest = String::new();
    timeout(EVENTUALLY, r.read_to_string(&mut rest))
        .await
        .expect("stdout never reached EOF: some process of the group survived")
        .unwrap();
    (lines, rest)
}

#[tokio::test]
async fn command_not_found_names_the_command() {
    let err = AgentProcess::spawn(&AgentCommand::new("acp-no-such-agent-xyz")).unwrap_err();
    assert!(
        matches!(&err, SpawnError::CommandNotFound { command, .. } if command == "acp-no-such-agent-xyz")
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("command not found: `acp-no-such-agent-xyz` (searched PATH="),
        "{msg}"
    );

    // A whole command line is not run through a shell; the error says so.
    let err = AgentProcess::spawn(&AgentCommand::new("my-agent --acp")).unwrap_err();
    assert!(
        err.to_string().contains("commands run without a shell"),
        "{err}"
    );

    // An explicit, empty search path finds nothing, even for `sh`.
    let err = AgentProcess::spawn(&AgentCommand::new("sh").search_path("")).unwrap_err();
    assert!(matches!(err, SpawnError::CommandNotFound { .. }), "{err}");
}

#[tokio::test]
async fn paths_that_cannot_be_executed_are_explained() {
    let dir = TempDir::new();
    let plain = dir.join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let err = AgentProcess::spawn(&AgentCommand::new(&plain)).unwrap_err();
    assert!(
        matches!(&err, SpawnError::NotExecutable { reason, .. } if reason == "has no execute permission"),
        "{err}"
    );
    assert!(err.to_string().contains("not-executable"), "{err}");

    let err = AgentProcess::spawn(&AgentCommand::new(dir.path())).unwrap_err();
    assert!(
        matches!(&err, SpawnError::NotExecutable { reason, .. } if reason == "is a directory"),
        "{err}"
    );

    let err = AgentProcess::spawn(&AgentCommand::new(dir.join("missing"))).unwrap_err();
    assert!(
        matches!(&err, SpawnError::NotExecutable { reason, .. } if reason == "does not exist"),
        "{err}"
    );

    let err = AgentProcess::spawn(&AgentCommand::new("true").cwd(dir.join("nope"))).unwrap_err();
    assert!(matches!(err, SpawnError::InvalidCwd { .. }), "{err}");
}

#[tokio::test]
async fn relative_paths_resolve_against_cwd_and_search_path_is_explicit() {
    let dir = TempDir::new();
    dir.script("agent.sh", "echo \"relative $(pwd)\"");
    let mut p = AgentProcess::spawn(&AgentCommand::new("./agent.sh").cwd(dir.path())).unwrap();
    let (lines, _) = read_to_eof(&mut p, 1).await;
    assert_eq!(lines, [format!("relative {}", dir.path().display())]);
    assert_eq!(wait_report(&p).await.termination, Termination::Exited(0));

    dir.script("my-agent", "echo found-on-path");
    let mut p =
        AgentProcess::spawn(&AgentCommand::new("my-agent").search_path(dir.path())).unwrap();
    let (lines, _) = read_to_eof(&mut p, 1).await;
    assert_eq!(lines, ["found-on-path"]);
}

#[tokio::test]
async fn environment_is_explicit() {
    // Nothing inherited: the child sees exactly the explicit variables.
    let cmd = AgentCommand::new("/usr/bin/env").env(EnvPolicy::empty().var("ACP_TEST", "1"));
    let mut p = AgentProcess::spawn(&cmd).unwrap();
    let (_, out) = read_to_eof(&mut p, 0).await;
    assert_eq!(out, "ACP_TEST=1\n");

    // The default policy passes only allowlisted host variables, whatever this host has.
    let mut p = AgentProcess::spawn(&AgentCommand::new("env")).unwrap();
    let (_, out) = read_to_eof(&mut p, 0).await;
    assert!(out.contains("PATH="), "{out}");
    for line in out.lines() {
        let name = line.split('=').next().unwrap();
        let allowed = DEFAULT_ENV_ALLOWLIST
            .iter()
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *p,
            });
        assert!(allowed, "host variable {name} leaked into the agent");
    }
}

#[tokio::test]
async fn stdio_carries_the_protocol_and_closing_stdin_is_a_graceful_stop() {
    let mut p = AgentProcess::spawn(&AgentCommand::new("cat")).unwrap();
    let mut stdin = p.take_stdin().unwrap();
    let mut stdout = BufReader::new(p.take_stdout().unwrap());
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let mut line = String::new();
    timeout(EVENTUALLY, stdout.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
    assert!(p.is_alive());
    assert!(p.take_stdin().is_none());

    drop(stdin);
    let out = timeout(EVENTUALLY, p.shutdown(EVENTUALLY)).await.unwrap();
    assert_eq!(out.stage, ShutdownStage::StdinClosed);
    assert_eq!(out.report.termination, Termination::Exited(0));
    assert!(out.report.shutdown_requested);
    assert!(!out.report.is_crash());
    assert!(!p.is_alive());
}

#[tokio::test]
async fn non_zero_exit_is_reported_with_stderr_tail() {
    let p = AgentProcess::spawn(&sh(
        "echo starting >&2; echo 'boom: bad config' >&2; exit 3",
    ))
    .unwrap();
    let report = wait_report(&p).await;
    assert_eq!(report.termination, Termination::Exited(3));
    assert_eq!(report.stderr_tail, ["starting", "boom: bad config"]);
    assert!(report.is_crash());
    assert_eq!(report.pid, p.pid());
    assert_eq!(
        report.to_string(),
        "agent `sh` exited with code 3; last stderr lines:\n  starting\n  boom: bad config"
    );
    assert!(!p.is_alive());
    assert_eq!(p.try_termination(), Some(Termination::Exited(3)));
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let p = AgentProcess::spawn(&sh("kill -KILL $$")).unwrap();
    let report = wait_report(&p).await;
    assert_eq!(report.termination.signal(), Some(libc::SIGKILL));
    assert_eq!(report.termination.code(), None);
    assert_eq!(
        report.to_string(),
        "agent `sh` was killed by signal 9 (SIGKILL); it wrote nothing to stderr"
    );

    // The exit future does not borrow the handle and can be awaited alone.
    let p = AgentProcess::spawn(&AgentCommand::new("sleep").arg("1000")).unwrap();
    let exit = p.exit_status();
    assert!(p.is_alive());
    assert!(p.signal(libc::SIGTERM).unwrap());
    let t = timeout(EVENTUALLY, exit).await.unwrap();
    assert_eq!(t.signal(), Some(libc::SIGTERM));
    assert!(!p.is_alive());
    assert!(
        !p.signal(libc::SIGTERM).unwrap(),
        "no signal once the exit is known"
    );
}

#[tokio::test]
async fn stderr_flood_is_kept_bounded() {
    let limits = TailLimits {
        max_lines: 5,
        max_bytes: 1024,
        max_line_bytes: 100,
    };
    let flood = "i=0; while [ $i -lt 3000 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 1";
    let p = AgentProcess::spawn(&sh(flood).stderr_tail(limits)).unwrap();
    let report = wait_report(&p).await;
    assert_eq!(
        report.stderr_tail,
        [
            "line 2995",
            "line 2996",
            "line 2997",
            "line 2998",
            "line 2999"
        ]
    );

    // 4 MB without a newline, then a last short line: memory stays bounded, the tail holds
    // the giant line cut to max_line_bytes and the last line (104 bytes <= max_bytes).
    let limits = TailLimits {
        max_lines: 10,
        max_bytes: 104,
        max_line_bytes: 100,
    };
    let giant = "head -c 4000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; exit 2";
    let p = AgentProcess::spawn(&sh(giant).stderr_tail(limits)).unwrap();
    let report = wait_report(&p).await;
    assert_eq!(report.stderr_tail.len(), 2, "{:?}", report.stderr_tail);
    assert_eq!(report.stderr_tail[0], "x".repeat(100));
    assert_eq!(report.stderr_tail[1], "last");
    let total: usize = report.stderr_tail.iter().map(String::len).sum();
    assert_eq!(total, 104);
}

#[tokio::test]
async fn sigterm_stage_stops_an_agent_that_ignores_stdin() {
    let mut p = AgentProcess::spawn(&sh("echo ready; exec sleep 1000")).unwrap();
    let mut stdout = BufReader::new(p.take_stdout().unwrap());
    let mut l = String::new();
    timeout(EVENTUALLY, stdout.read_line(&mut l))
        .await
        .unwrap()
        .unwrap();
    // Generous SIGTERM grace: the stage must not depend on machine load.
    let out = timeout(
        EVENTUALLY * 2,
        p.shutdown_staged(Duration::from_millis(100), EVENTUALLY),
    )
    .await
    .unwrap();
    assert_eq!(out.stage, ShutdownStage::Terminated);
    assert_eq!(out.report.termination.signal(), Some(libc::SIGTERM));
    assert!(
        out.report.to_string().contains("after a shutdown request"),
        "{}",
        out.report
    );
}

#[tokio::test]
async fn agent_ignoring_sigterm_is_killed_with_its_grandchildren() {
    let dir = TempDir::new();
    let script = dir.script(
        "stubborn-agent",
        "trap '' TERM\nsleep 1000 &\necho \"$!\"\necho ready\nwait\nwait",
    );
    let mut p = AgentProcess::spawn(&AgentCommand::new(&script)).unwrap();
    let stdout = p.take_stdout().unwrap();
    let mut r = BufReader::new(stdout);
    let mut grandchild = String::new();
    let mut ready = String::new();
    timeout(EVENTUALLY, r.read_line(&mut grandchild))
        .await
        .unwrap()
        .unwrap();
    timeout(EVENTUALLY, r.read_line(&mut ready))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ready, "ready\n");
    let grandchild: u32 = grandchild.trim().parse().unwrap();
    assert!(!process_is_dead(grandchild));

    let grace = Duration::from_millis(200);
    let out = timeout(EVENTUALLY, p.shutdown(grace)).await.unwrap();
    assert_eq!(out.stage, ShutdownStage::Killed);
    assert_eq!(out.report.termination.signal(), Some(libc::SIGKILL));

    // The grandchild held stdout open: EOF proves it is gone too.
    let mut rest = String::new();
    timeout(EVENTUALLY, r.read_to_string(&mut rest))
        .await
        .expect("grandchild survived the group kill")
        .unwrap();
    // Its pipe closes a moment before the process itself is gone: wait for that (pidfd).
    timeout(EVENTUALLY, wait_dead(grandchild))
        .await
        .expect("the grandchild outlived the group kill");
}

#[tokio::test]
async fn dropping_the_handle_kills_the_group() {
    let mut p = AgentProcess::spawn(&sh("sleep 1000 & echo started; wait")).unwrap();
    let stdout = p.take_stdout().unwrap();
    let mut r = BufReader::new(stdout);
    let mut l = String::new();
    timeout(EVENTUALLY, r.read_line(&mut l))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(l, "started\n");
    drop(p);
    let mut rest = String::new();
    timeout(EVENTUALLY, r.read_to_string(&mut rest))
        .await
        .expect("a process of the dropped agent's group survived")
        .unwrap();
}

#[tokio::test]
async fn shutdown_of_an_exited_agent_reports_its_crash() {
    let mut p = AgentProcess::spawn(&sh("echo dying >&2; exit 5")).unwrap();
    timeout(EVENTUALLY, p.exit_status()).await.unwrap();
    let out = timeout(EVENTUALLY, p.shutdown(Duration::from_millis(100)))
        .await
        .unwrap();
    assert_eq!(out.stage, ShutdownStage::AlreadyExited);
    assert!(!out.report.shutdown_requested);
    assert!(out.report.is_crash());
    assert_eq!(out.report.stderr_tail, ["dying"]);
}

#[tokio::test]
async fn agent_runs_in_its_own_process_group() {
    let mut p = AgentProcess::spawn(&sh(
        "ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat",
    ))
    .unwrap();
    let (_, out) = read_to_eof(&mut p, 0).await;
    assert_eq!(out.trim(), p.pid().to_string());
}

/// The supervision loop a host runs: real crashes, virtual time for the budget.
#[tokio::test]
async fn crash_budget_drives_a_restart_loop_to_a_user_facing_stop() {
    let policy = RestartPolicy {
        max_restarts_in_window: 2,
        window: Duration::from_secs(60),
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(5),
        multiplier: 3.0,
    };
    let mut budget = CrashBudget::new(policy);
    let mut now = Duration::ZERO; // virtual clock: no sleeping for backoffs
    let mut delays = Vec::new();
    let reason = loop {
        let p = AgentProcess::spawn(&sh("echo 'fatal: no API key' >&2; exit 78")).unwrap();
        let report = wait_report(&p).await;
        assert!(report.is_crash());
        assert_eq!(report.stderr_tail, ["fatal: no API key"]);
        now += Duration::from_secs(1);
        match budget.record_crash(now) {
            RestartDecision::Restart { after, .. } => {
                delays.push(after);
                now += after;
            }
            RestartDecision::GiveUp { reason } => break format!("{reason}: {report}"),
        }
    };
    assert_eq!(
        delays,
        [Duration::from_millis(100), Duration::from_millis(300)]
    );
    assert_eq!(
        reason,
        "agent crashed 3 times in 1 minute; not restarting: agent `sh` exited with code 78; \
         last stderr lines:\n  fatal: no API key"
    );
}

#[tokio::test]
async fn grandchildren_of_a_crashed_agent_die_with_its_handle() {
    let mut p = AgentProcess::spawn(&sh("sleep 1000 & echo $!; exit 1")).unwrap();
    let mut r = BufReader::new(p.take_stdout().unwrap());
    let mut l = String::new();
    timeout(EVENTUALLY, r.read_line(&mut l))
        .await
        .unwrap()
        .unwrap();
    let grandchild: u32 = l.trim().parse().unwrap();
    let t = timeout(EVENTUALLY, p.exit_status()).await.unwrap();
    assert_eq!(t, Termination::Exited(1));
    assert!(
        !process_is_dead(grandchild),
        "the orphan still runs while the handle lives"
    );
    drop(p);
    timeout(EVENTUALLY, wait_dead(grandchild))
        .await
        .expect("the crashed agent's grandchild outlived the handle");
}
