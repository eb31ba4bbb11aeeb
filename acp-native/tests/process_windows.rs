//! Windows (run under wine64 by scripts/test-windows.sh): agent processes as acp-native starts
//! them there. Each child is this very test program, told its role by `ACP_WINTEST_ROLE`
//! (`harness = false`: `main` either plays the role or runs the tests):
//!
//! * a stopped agent's whole tree ends with it (job objects): the agent starts a grandchild
//!   that inherits its stdout; stdout reaching EOF proves every holder is gone;
//! * dropping the handle ends the tree too;
//! * a bare name is found through `PATH` + `PATHEXT` (`agent` finds `agent.EXE`);
//! * an npm `.cmd` shim runs as `node.exe SCRIPT ARGS` without a shell: the arguments
//!   (spaces, quotes, `&`, `|`, `%VAR%`, `^`) arrive exactly as given.
//!
//! Waits are for events (a line, EOF, an exit); the timeouts are failure limits only.

#[cfg(windows)]
mod windows {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use acp_native::process::{AgentCommand, AgentProcess, EnvPolicy, ShutdownStage};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    use tokio::time::timeout;

    /// A failure limit, never a synchronisation.
    const EVENTUALLY: Duration = Duration::from_secs(60);
    const ROLE: &str = "ACP_WINTEST_ROLE";

    /// Plays a child's role if this run is one; `true` if it was.
    pub fn play_role() -> bool {
        let Ok(role) = std::env::var(ROLE) else {
            return false;
        };
        match role.as_str() {
            // Starts a grandchild that inherits stdout, says so, then waits forever (it
            // ignores its stdin closing: only the job's end stops it).
            "parent" => {
                let me = std::env::current_exe().unwrap();
                let grandchild = std::process::Command::new(me)
                    .env(ROLE, "grandchild")
                    .stdin(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                println!("grandchild {}", grandchild.id());
                println!("ready");
                loop {
                    std::thread::park();
                }
            }
            "grandchild" => loop {
                std::thread::park();
            },
            // Prints its arguments, one JSON array on a line, and exits.
            "echo-args" => {
                let args: Vec<String> = std::env::args().skip(1).collect();
                println!("{}", serde_json::to_string(&args).unwrap());
            }
            other => panic!("unknown role {other}"),
        }
        true
    }

    fn this_exe() -> PathBuf {
        std::env::current_exe().unwrap()
    }

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("acp-wintest-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A copy (a hard link where it can) of this program at `to`.
    fn place_this_exe(to: &Path) {
        if std::fs::hard_link(this_exe(), to).is_err() {
            std::fs::copy(this_exe(), to).unwrap();
        }
    }

    async fn started_tree(p: &mut AgentProcess) -> BufReader<tokio::process::ChildStdout> {
        let mut r = BufReader::new(p.take_stdout().unwrap());
        let mut line = String::new();
        timeout(EVENTUALLY, r.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        assert!(line.starts_with("grandchild "), "{line:?}");
        line.clear();
        timeout(EVENTUALLY, r.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(line.trim_end(), "ready");
        r
    }

    async fn stdout_reaches_eof(mut r: BufReader<tokio::process::ChildStdout>, what: &str) {
        let mut rest = String::new();
        timeout(EVENTUALLY, r.read_to_string(&mut rest))
            .await
            .unwrap_or_else(|_| panic!("{what}: a process of the tree survived"))
            .unwrap();
    }

    fn parent() -> AgentCommand {
        AgentCommand::new(this_exe()).env(EnvPolicy::default().var(ROLE, "parent"))
    }

    pub async fn shutdown_ends_the_whole_tree() {
        let mut p = AgentProcess::spawn(&parent()).unwrap();
        let r = started_tree(&mut p).await;
        let out = timeout(EVENTUALLY, p.shutdown(Duration::from_millis(200)))
            .await
            .unwrap();
        // It ignores stdin closing: the job's end is what stopped it (SIGTERM and SIGKILL
        // both end the job on Windows).
        assert!(
            matches!(out.stage, ShutdownStage::Terminated | ShutdownStage::Killed),
            "{out:?}"
        );
        stdout_reaches_eof(r, "shutdown").await;
    }

    pub async fn dropping_the_handle_ends_the_whole_tree() {
        let mut p = AgentProcess::spawn(&parent()).unwrap();
        let r = started_tree(&mut p).await;
        drop(p);
        stdout_reaches_eof(r, "drop").await;
    }

    async fn output_of(cmd: AgentCommand) -> Vec<String> {
        let mut p = AgentProcess::spawn(&cmd).unwrap();
        let mut out = String::new();
        let mut stdout = p.take_stdout().unwrap();
        timeout(EVENTUALLY, stdout.read_to_string(&mut out))
            .await
            .unwrap()
            .unwrap();
        let report = timeout(EVENTUALLY, p.wait()).await.unwrap();
        assert!(report.termination.success(), "{report}");
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out:?}: {e}"))
    }

    pub async fn a_bare_name_is_found_with_pathext() {
        let dir = TempDir::new("pathext");
        place_this_exe(&dir.0.join("my-agent.EXE"));
        let cmd = AgentCommand::new("my-agent")
            .arg("one")
            .search_path(&dir.0)
            .env(EnvPolicy::default().var(ROLE, "echo-args"));
        assert_eq!(output_of(cmd).await, ["one"]);
        // Never from the working directory.
        let err = AgentProcess::spawn(&AgentCommand::new("my-agent").cwd(&dir.0).search_path(""))
            .unwrap_err();
        assert!(err.to_string().contains("command not found"), "{err}");
    }

    /// npm's `cmd-shim` template (npm 7 and later), as `npm install -g` writes it.
    const NPM_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\some-agent\\cli.js\" %*\r\n";

    pub async fn an_npm_shim_runs_its_script_with_exactly_the_arguments() {
        let dir = TempDir::new("shim");
        std::fs::write(dir.0.join("some-agent.cmd"), NPM_SHIM).unwrap();
        // The shim's own node.exe: this program, which prints what it was given.
        place_this_exe(&dir.0.join("node.exe"));
        let args = [
            "two words",
            "a \"quoted\" one",
            "x & calc.exe",
            "a | b",
            "%PATH%",
            "^caret^",
            "trailing\\",
            "",
        ];
        let mut cmd = AgentCommand::new("some-agent")
            .search_path(&dir.0)
            .env(EnvPolicy::default().var(ROLE, "echo-args"));
        for a in args {
            cmd = cmd.arg(a);
        }
        let got = output_of(cmd).await;
        let script = format!("{}\\node_modules\\some-agent\\cli.js", dir.0.display());
        let mut want = vec![script];
        want.extend(args.iter().map(|a| a.to_string()));
        assert_eq!(got, want);
    }
}

#[cfg(windows)]
fn main() {
    if windows::play_role() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tests: [(
        &str,
        fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
    ); 4] = [
        ("shutdown_ends_the_whole_tree", || {
            Box::pin(windows::shutdown_ends_the_whole_tree())
        }),
        ("dropping_the_handle_ends_the_whole_tree", || {
            Box::pin(windows::dropping_the_handle_ends_the_whole_tree())
        }),
        ("a_bare_name_is_found_with_pathext", || {
            Box::pin(windows::a_bare_name_is_found_with_pathext())
        }),
        (
            "an_npm_shim_runs_its_script_with_exactly_the_arguments",
            || Box::pin(windows::an_npm_shim_runs_its_script_with_exactly_the_arguments()),
        ),
    ];
    for (name, test) in tests {
        print!("test {name} ... ");
        rt.block_on(test());
        println!("ok");
    }
    println!("process_windows: {} passed", tests.len());
}

#[cfg(not(windows))]
fn main() {
    println!("process_windows: Windows only (scripts/test-windows.sh runs it under wine64)");
}
