//! `terminal/*` with real processes: output, limits, exit statuses, kill/release, caps.

mod host_support;

use acp_native::process::EnvPolicy;
use acp_native::terminal_service::{TerminalConfig, TerminalError, TerminalService};
use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    TerminalExitStatus, TerminalId, TerminalOutputRequest, TerminalOutputResponse,
    WaitForTerminalExitRequest,
};
use host_support::{wait_dead, TempDir, EVENTUALLY};
use tokio::time::timeout;

const S: &str = "session-1";

fn svc() -> TerminalService {
    TerminalService::new(TerminalConfig::default())
}

fn cmd(program: &str, args: &[&str]) -> CreateTerminalRequest {
    CreateTerminalRequest::new(S, program).args(args.iter().map(|a| a.to_string()).collect())
}

fn sh(script: &str) -> CreateTerminalRequest {
    cmd("sh", &["-c", script])
}

async fn create(svc: &TerminalService, req: CreateTerminalRequest) -> TerminalId {
    svc.create(req).await.unwrap().terminal_id
}

async fn output(
    svc: &TerminalService,
    id: &TerminalId,
) -> Result<TerminalOutputResponse, TerminalError> {
    svc.output(TerminalOutputRequest::new(S, id.clone())).await
}

async fn wait_exit(svc: &TerminalService, id: &TerminalId) -> TerminalExitStatus {
    timeout(
        EVENTUALLY,
        svc.wait_for_exit(WaitForTerminalExitRequest::new(S, id.clone())),
    )
    .await
    .expect("terminal command did not exit in time")
    .unwrap()
    .exit_status
}

/// Waits (event-driven, bounded) until the output contains `needle`, and returns it.
async fn output_containing(svc: &TerminalService, id: &TerminalId, needle: &str) -> String {
    let mut rx = svc.output_watch(&SessionId::new(S), id).unwrap();
    timeout(EVENTUALLY, async {
        loop {
            let out = output(svc, id).await.unwrap().output;
            if out.contains(needle) {
                return out;
            }
            if rx.changed().await.is_err() {
                panic!("output ended without {needle:?}: {out:?}");
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("output never contained {needle:?}"))
}

/// First line of output, parsed as a pid.
async fn first_line_pid(svc: &TerminalService, id: &TerminalId) -> u32 {
    let out = output_containing(svc, id, "\n").await;
    out.lines().next().unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn stdout_and_stderr_share_one_buffer_and_exit_code_is_reported() {
    let svc = svc();
    let id = create(&svc, sh("echo out; echo err >&2; printf 'né'; exit 3")).await;
    let status = wait_exit(&svc, &id).await;
    assert_eq!(status.exit_code, Some(3));
    assert_eq!(status.signal, None);
    let out = output(&svc, &id).await.unwrap();
    assert_eq!(out.output, "out\nerr\nné");
    assert!(!out.truncated);
    assert_eq!(out.exit_status, Some(status));
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["exitStatus"]["exitCode"], 3);
}

#[tokio::test]
async fn output_is_available_while_running_and_exit_status_only_after_exit() {
    let svc = svc();
    let id = create(&svc, sh("echo started; exec sleep 1000")).await;
    let out = output_containing(&svc, &id, "started\n").await;
    assert_eq!(out, "started\n");
    assert_eq!(output(&svc, &id).await.unwrap().exit_status, None);
    svc.release(ReleaseTerminalRequest::new(S, id))
        .await
        .unwrap();
}

#[tokio::test]
async fn death_by_signal_is_reported_by_name() {
    let svc = svc();
    let id = create(&svc, sh("kill -TERM $$")).await;
    let status = wait_exit(&svc, &id).await;
    assert_eq!(status.exit_code, None);
    assert_eq!(status.signal.as_deref(), Some("SIGTERM"));
}

#[tokio::test]
async fn command_not_found_and_bad_requests_are_errors() {
    let svc = svc();
    let err = svc
        .create(cmd("acp-no-such-command-xyz", &[]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32602);
    assert!(err.message().contains("`acp-no-such-command-xyz`"), "{err}");
    assert_eq!(err.data().unwrap()["command"], "acp-no-such-command-xyz");

    // No shell: a whole command line is not a command.
    let err = svc.create(cmd("echo hi", &[])).await.unwrap_err();
    assert!(err.message().contains("without a shell"), "{err}");

    let err = svc
        .create(sh("true").cwd(std::path::PathBuf::from("relative/dir")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TerminalError::InvalidParams { .. }),
        "{err:?}"
    );
    assert_eq!(err.code(), -32602);

    let tmp = TempDir::new();
    let err = svc
        .create(sh("true").cwd(tmp.join("missing")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32602, "{err}");

    let err = svc
        .create(sh("true").env(vec![EnvVariable::new("A=B", "x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, TerminalError::InvalidParams { .. }),
        "{err:?}"
    );
    assert_eq!(
        svc.active_terminals(),
        0,
        "failed creates must not hold a slot"
    );
}

#[tokio::test]
async fn cwd_and_env_are_applied_without_leaking_host_variables() {
    let tmp = TempDir::new();
    let svc = TerminalService::new(TerminalConfig {
        env: EnvPolicy::empty().var("PATH", std::env::var_os("PATH").unwrap()),
        ..TerminalConfig::default()
    });
    let req = sh("pwd; echo \"$GREETING\"; env | sort")
        .cwd(tmp.path().to_path_buf())
        .env(vec![EnvVariable::new("GREETING", "héllo wörld")]);
    let id = create(&svc, req).await;
    wait_exit(&svc, &id).await;
    let out = output(&svc, &id).await.unwrap().output;
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(tmp.path().to_str().unwrap()));
    assert_eq!(lines.next(), Some("héllo wörld"));
    let names: Vec<&str> = lines.map(|l| l.split('=').next().unwrap()).collect();
    // `sh` adds PWD (and some shells SHLVL/_); nothing from the host but PATH.
    for name in &names {
        assert!(
            ["GREETING", "PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(name),
            "leaked {name}: {out}"
        );
    }
    assert!(
        names.contains(&"GREETING") && names.contains(&"PATH"),
        "{out}"
    );
}

#[tokio::test]
async fn output_limit_keeps_the_newest_bytes_at_a_char_boundary() {
    let svc = svc();
    // "ab" then five 2-byte 'é' = 12 bytes; the newest 5 bytes start inside an 'é', so the
    // retained text is the last two 'é' (4 bytes).
    let id = create(&svc, cmd("printf", &["abééééé"]).output_byte_limit(5u64)).await;
    wait_exit(&svc, &id).await;
    let out = output(&svc, &id).await.unwrap();
    assert_eq!(out.output, "éé");
    assert!(out.truncated);

    // 3- and 4-byte characters.
    let id = create(&svc, cmd("printf", &["€€€😀😀"]).output_byte_limit(10u64)).await;
    wait_exit(&svc, &id).await;
    let out = output(&svc, &id).await.unwrap();
    assert_eq!(out.output, "😀😀");
    assert!(out.truncated);
    let id = create(&svc, cmd("printf", &["€€€😀😀"]).output_byte_limit(11u64)).await;
    wait_exit(&svc, &id).await;
    assert_eq!(output(&svc, &id).await.unwrap().output, "€😀😀");

    // Within the limit: untouched.
    let id = create(&svc, cmd("printf", &["€€€"]).output_byte_limit(9u64)).await;
    wait_exit(&svc, &id).await;
    let out = output(&svc, &id).await.unwrap();
    assert_eq!((out.output.as_str(), out.truncated), ("€€€", false));
}

#[tokio::test]
async fn flood_stays_within_the_limit() {
    let svc = svc();
    // 17-byte lines, 117647 of them.
    let id = create(
        &svc,
        sh("yes 'ünïcödé line' | head -c 1999999").output_byte_limit(1000u64),
    )
    .await;
    let status = wait_exit(&svc, &id).await;
    assert_eq!(status.exit_code, Some(0));
    let out = output(&svc, &id).await.unwrap();
    assert!(out.truncated);
    assert!(
        out.output.len() <= 1000 && out.output.len() >= 997,
        "{}",
        out.output.len()
    );
    assert!(out.output.ends_with('\n'));
    // Every complete line is intact.
    for line in out.output.lines().skip(1) {
        assert_eq!(line, "ünïcödé line");
    }

    // The service-wide cap applies when the request sets no limit.
    let svc = TerminalService::new(TerminalConfig {
        max_output_bytes: 64,
        ..TerminalConfig::default()
    });
    let id = create(&svc, sh("yes | head -c 100000")).await;
    wait_exit(&svc, &id).await;
    let out = output(&svc, &id).await.unwrap();
    assert_eq!(out.output, "y\n".repeat(32));
    assert!(out.truncated);
}

#[tokio::test]
async fn kill_stops_the_whole_group_but_keeps_the_terminal() {
    let svc = svc();
    let id = create(&svc, sh("sleep 1000 & echo $!; wait")).await;
    let grandchild = first_line_pid(&svc, &id).await;

    // A concurrent wait_for_exit is woken by the kill.
    let waiter = {
        let svc = svc.clone();
        let id = id.clone();
        tokio::spawn(async move { wait_exit(&svc, &id).await })
    };
    svc.kill(KillTerminalRequest::new(S, id.clone()))
        .await
        .unwrap();
    let status = timeout(EVENTUALLY, waiter).await.unwrap().unwrap();
    assert_eq!(status.signal.as_deref(), Some("SIGTERM"));
    timeout(EVENTUALLY, wait_dead(grandchild))
        .await
        .expect("grandchild survived terminal/kill");

    // Still valid after kill: output, wait and kill again.
    let out = output(&svc, &id).await.unwrap();
    assert_eq!(out.output, format!("{grandchild}\n"));
    assert_eq!(out.exit_status.unwrap().signal.as_deref(), Some("SIGTERM"));
    assert_eq!(
        wait_exit(&svc, &id).await.signal.as_deref(),
        Some("SIGTERM")
    );
    svc.kill(KillTerminalRequest::new(S, id.clone()))
        .await
        .unwrap();
    assert_eq!(svc.active_terminals(), 1);
}

/// The shared rule (acp-client `KILL_GRACE_MS`): SIGTERM first, SIGKILL to the group after the
/// grace, so a command that ignores SIGTERM still stops.
#[tokio::test]
async fn kill_ends_with_sigkill_for_a_command_that_ignores_sigterm() {
    let svc = svc();
    let id = create(
        &svc,
        sh("trap '' TERM; echo ready; while :; do sleep 1; done"),
    )
    .await;
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while !output(&svc, &id).await.unwrap().output.contains("ready") {
        assert!(tokio::time::Instant::now() < deadline, "never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    svc.kill(KillTerminalRequest::new(S, id.clone()))
        .await
        .unwrap();
    let status = timeout(EVENTUALLY, wait_exit(&svc, &id)).await.unwrap();
    assert_eq!(status.signal.as_deref(), Some("SIGKILL"));
}

#[tokio::test]
async fn release_kills_and_forgets_the_terminal() {
    let svc = svc();
    let id = create(&svc, sh("echo $$; exec sleep 1000")).await;
    let pid = first_line_pid(&svc, &id).await;
    assert_eq!(svc.active_terminals(), 1);
    svc.release(ReleaseTerminalRequest::new(S, id.clone()))
        .await
        .unwrap();
    assert_eq!(svc.active_terminals(), 0);
    timeout(EVENTUALLY, wait_dead(pid))
        .await
        .expect("released command still runs");

    let not_found = |e: TerminalError| {
        assert!(
            matches!(&e, TerminalError::NotFound { terminal_id } if *terminal_id == *id.0),
            "{e:?}"
        );
        assert_eq!(e.code(), -32002);
        let wire = serde_json::to_value(e.to_acp_error()).unwrap();
        assert_eq!(wire["code"], -32002);
        assert_eq!(wire["data"]["terminalId"], id.0.as_ref());
    };
    not_found(output(&svc, &id).await.unwrap_err());
    not_found(
        svc.wait_for_exit(WaitForTerminalExitRequest::new(S, id.clone()))
            .await
            .unwrap_err(),
    );
    not_found(
        svc.kill(KillTerminalRequest::new(S, id.clone()))
            .await
            .unwrap_err(),
    );
    not_found(
        svc.release(ReleaseTerminalRequest::new(S, id.clone()))
            .await
            .unwrap_err(),
    );
    let err = output(&svc, &TerminalId::new("term_never"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32002, "{err:?}");
}

#[tokio::test]
async fn terminals_are_scoped_to_their_session() {
    let svc = svc();
    let id = create(&svc, sh("echo mine")).await;
    let other = SessionId::new("session-2");
    let err = svc
        .output(TerminalOutputRequest::new(other.clone(), id.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32002);
    let err = svc
        .release(ReleaseTerminalRequest::new(other.clone(), id.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32002);
    assert_eq!(svc.release_session(&other), 0);
    assert_eq!(svc.active_terminals(), 1);
    assert_eq!(svc.release_session(&SessionId::new(S)), 1);
    assert_eq!(output(&svc, &id).await.unwrap_err().code(), -32002);
}

#[tokio::test]
async fn concurrent_terminal_cap_and_unique_ids() {
    let svc = TerminalService::new(TerminalConfig {
        max_terminals: 2,
        ..TerminalConfig::default()
    });
    let a = create(&svc, cmd("sleep", &["1000"])).await;
    let b = create(&svc, cmd("sleep", &["1000"])).await;
    assert_ne!(a, b);
    let err = svc.create(cmd("sleep", &["1000"])).await.unwrap_err();
    assert!(
        matches!(err, TerminalError::TooManyTerminals { limit: 2 }),
        "{err:?}"
    );
    assert_eq!(err.code(), -32603);
    assert!(err.message().contains("release"), "{err}");

    // Killed but unreleased terminals still count; releasing frees the slot.
    svc.kill(KillTerminalRequest::new(S, a.clone()))
        .await
        .unwrap();
    wait_exit(&svc, &a).await;
    assert!(svc.create(cmd("true", &[])).await.is_err());
    svc.release(ReleaseTerminalRequest::new(S, a.clone()))
        .await
        .unwrap();
    let c = create(&svc, cmd("true", &[])).await;
    assert!(c != a && c != b, "ids are never reused: {c:?}");

    // Clones share the same terminals and the same cap.
    let clone = svc.clone();
    assert_eq!(clone.active_terminals(), 2);
    assert!(clone.create(cmd("true", &[])).await.is_err());
    assert_eq!(svc.release_all(), 2);
    assert_eq!(clone.active_terminals(), 0);
}

#[tokio::test]
async fn dropping_the_service_kills_running_commands() {
    let svc = svc();
    let id = create(&svc, sh("echo $$; exec sleep 1000")).await;
    let pid = first_line_pid(&svc, &id).await;
    drop(svc);
    timeout(EVENTUALLY, wait_dead(pid))
        .await
        .expect("command outlived its service");
}

/// Whether `pid` is still running (not a zombie: an orphan is reaped by init).
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Runs `sh -c SCRIPT sh PIDFILE` (the script starts a background job and writes its pid to
/// PIDFILE), waits until the shell itself has exited, and returns the terminal and the job's
/// pid (still running).
async fn background_job(svc: &TerminalService, tmp: &TempDir, script: &str) -> (TerminalId, u32) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pidfile = tmp.join(format!("job-{n}.pid"));
    let pidfile = pidfile.to_str().unwrap().to_owned();
    let id = create(svc, cmd("sh", &["-c", script, "sh", &pidfile])).await;
    // The leader (sh) has exited once its exit status is known.
    let status = wait_exit(svc, &id).await;
    assert_eq!(status.exit_code, Some(0), "{script}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        alive(pid),
        "the background job of {script:?} is not running"
    );
    (id, pid)
}

/// The scripts: a background job that keeps the terminal's output pipe, and one that does not
/// (the pipe reaches EOF once the shell exits, so "every process that held the pipe is gone"
/// is no proof that the group is empty).
const BACKGROUND_JOBS: [&str; 2] = [
    "sleep 1000 & echo $! > \"$1\"",
    "sleep 1000 >/dev/null 2>&1 & echo $! > \"$1\"",
];

/// `sh -c 'sleep 1000 & …'`: the shell (the group leader) exits at once, its background job
/// stays in the terminal's process group; releasing the terminal kills it.
#[tokio::test]
async fn release_kills_background_jobs_whose_leader_already_exited() {
    let tmp = TempDir::new();
    let svc = svc();
    for script in BACKGROUND_JOBS {
        let (id, job) = background_job(&svc, &tmp, script).await;
        svc.release(ReleaseTerminalRequest::new(S, id))
            .await
            .unwrap();
        timeout(EVENTUALLY, wait_dead(job))
            .await
            .unwrap_or_else(|_| panic!("the background job of {script:?} outlived release"));
    }
}

/// The same when the service goes away (acp exits) or releases everything (end of the chat).
#[tokio::test]
async fn dropping_the_service_kills_background_jobs_whose_leader_already_exited() {
    let tmp = TempDir::new();
    let svc = svc();
    let mut jobs = Vec::new();
    for script in BACKGROUND_JOBS {
        jobs.push(background_job(&svc, &tmp, script).await.1);
    }
    drop(svc);
    for job in jobs {
        timeout(EVENTUALLY, wait_dead(job))
            .await
            .expect("a background job outlived its terminal service");
    }

    let svc = TerminalService::new(TerminalConfig::default());
    let mut jobs = Vec::new();
    for script in BACKGROUND_JOBS {
        jobs.push(background_job(&svc, &tmp, script).await.1);
    }
    assert_eq!(svc.release_all(), 2);
    for job in jobs {
        timeout(EVENTUALLY, wait_dead(job))
            .await
            .expect("a background job outlived release_all");
    }
}
