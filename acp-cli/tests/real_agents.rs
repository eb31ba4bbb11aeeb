//! Real agents under `acp chat`, offline: `@agentclientprotocol/claude-agent-acp`,
//! `@zed-industries/codex-acp`, `@google/gemini-cli` (`--acp`), `@qwen-code/qwen-code` (`--acp`)
//! and `opencode-ai` (`opencode acp`; not every scenario for gemini-cli and opencode, see the end
//! of this file) at the versions pinned in `tests/real-agents/package-lock.json`,
//! each talking to the fake model server `tests/real-agents/fake-model-server.mjs` on 127.0.0.1
//! (the only fake: the agents are the real builds from the npm registry).
//!
//! Per agent: a plain text turn; a file write allowed with `--yes` (the agent's `allow_once`
//! option must be the one chosen) and refused with `--deny` (the file stays untouched); a command
//! run allowed and refused; Ctrl-C during a slow answer (exit 3, `session/cancel`, the turn ends
//! `cancelled`); a stalled model with `--timeout 3` (exit 7, `session/cancel`, the turn's
//! `cancelled` answer); `--load` of an earlier session (history replayed and sent to the model);
//! a permission question nobody can answer (stdin closed: cancelled, exit 3; the write question
//! shows the agent's proposed diff above it, for every agent that writes here); `--yes-always`
//! (`allow_always`); two prompts piped on stdin (one session, two turns); SIGTERM while the agent
//! runs a long command (exit 143, the command gone); the auth choice with no key (exit 1, no
//! login started, what each method needs on stderr) and, for codex, with `OPENAI_API_KEY` set
//! (the `env_var` method is chosen).
//!
//! Ignored by `cargo test`: they need the agents installed. `scripts/test-real-agents.sh` installs
//! them (`npm ci`) and runs `cargo test -p acp-cli --test real_agents -- --ignored`.
//! Every wait is bounded; a run that outlives its bound is killed and fails the test.
#![cfg(unix)]

mod cli_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use cli_support::{Run, Running, TempDir};
use serde_json::Value;

/// Bound for one `acp chat` run (a real agent starting on a loaded 2-core machine).
const LIMIT: Duration = Duration::from_secs(120);
/// `--timeout` for runs that are not about timeouts: a stuck run fails instead of hanging.
const SAFETY_TIMEOUT: &str = "60";

const TEXT_ANSWER: &str = "Hello from the fake model: FAKE-TEXT-ANSWER.";
const FILE_CONTENT: &str = "written by the fake model\n";
const RUN_COMMAND: &str = "printf ran > ran.txt && echo RAN-OK";

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/real-agents")
}

fn require(path: &Path) -> String {
    assert!(
        path.exists(),
        "{} is missing: install the pinned agents with scripts/test-real-agents.sh",
        path.display()
    );
    path.to_str().unwrap().to_string()
}

// ---- the fake model server --------------------------------------------------------------------

/// `node fake-model-server.mjs` on a free port of 127.0.0.1; its stdin is held open and closed
/// (and the process killed) on drop.
struct FakeModel {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
    log: PathBuf,
}

impl FakeModel {
    fn start(dir: &Path) -> FakeModel {
        let log = dir.join("model-requests.ndjson");
        let mut child = Command::new("node")
            .arg(require(&agents_dir().join("fake-model-server.mjs")))
            .arg("--log")
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start node fake-model-server.mjs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the fake model server did not say its port within 60 s");
            }
        };
        let port = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|v| v["port"].as_u64())
            .unwrap_or_else(|| panic!("fake model server's first line: {line:?}"))
            as u16;
        FakeModel {
            child,
            _stdin: stdin,
            port,
            log,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far (one JSON object each: method, path, headers, body, answer).
    fn requests(&self) -> Vec<Value> {
        read_ndjson(&self.log)
            .into_iter()
            .filter(|e| e["event"] == "request")
            .collect()
    }

    /// The model requests of the scripted conversation: those that asked for a script or
    /// carried a tool's result (not titles, suggestions or other side queries).
    fn turn_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| !r["api"].is_null() && r["answer"]["side"] != true)
            .collect()
    }

    fn dump(&self) -> String {
        let mut out = String::from("--- model requests ---\n");
        for r in self.requests() {
            out.push_str(&format!(
                "{} {} answer={}\n",
                r["method"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or(""),
                r["answer"]
            ));
        }
        out
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_ndjson(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

// ---- the agents -------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Agent {
    Claude,
    Codex,
    Gemini,
    Qwen,
    OpenCode,
}

/// How the agent is configured for a case.
#[derive(Clone, Copy, PartialEq)]
enum Setup {
    /// Configured for the fake model, with a (fake) key where one is needed.
    Ready,
    /// No API key anywhere (the model still points at the fake server).
    NoKey,
    /// codex: the built-in `openai` provider (pointed at the fake server) with OPENAI_API_KEY.
    OpenAiKey,
}

impl Agent {
    fn command(self) -> Vec<String> {
        let bin = match self {
            Agent::Claude => "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
            Agent::Codex => "node_modules/@zed-industries/codex-acp/bin/codex-acp.js",
            Agent::Gemini => "node_modules/@google/gemini-cli/bundle/gemini.js",
            Agent::Qwen => "node_modules/@qwen-code/qwen-code/cli-entry.js",
            // The native binary opencode-ai's postinstall put there for this platform.
            Agent::OpenCode => "node_modules/opencode-ai/bin/opencode.exe",
        };
        let bin = require(&agents_dir().join(bin));
        // As the registry launches them (acp-client/data/registry-snapshot.json).
        match self {
            Agent::Claude | Agent::Codex => vec!["node".into(), bin],
            Agent::Gemini | Agent::Qwen => vec!["node".into(), bin, "--acp".into()],
            Agent::OpenCode => vec![bin, "acp".into()],
        }
    }

    /// Writes the agent's configuration under `home` and returns the `--env` arguments.
    fn prepare(self, setup: Setup, home: &Path, model: &FakeModel) -> Vec<String> {
        let mut env = vec![format!("HOME={}", home.display())];
        match self {
            Agent::Claude => {
                // "Manual" mode (ask before every change): by default the adapter starts in
                // "auto", where Claude Code's own classifier decides instead of the user.
                let dir = home.join(".claude");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(
                    dir.join("settings.json"),
                    r#"{"permissions":{"defaultMode":"default"}}"#,
                )
                .unwrap();
                env.push(format!("ANTHROPIC_BASE_URL={}", model.url()));
                if setup != Setup::NoKey {
                    env.push("ANTHROPIC_API_KEY=fake-anthropic-key".into());
                }
                for quiet in [
                    "DISABLE_TELEMETRY=1",
                    "DISABLE_AUTOUPDATER=1",
                    "DISABLE_ERROR_REPORTING=1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                ] {
                    env.push(quiet.into());
                }
            }
            Agent::Codex => {
                let codex_home = home.join("codex");
                std::fs::create_dir_all(&codex_home).unwrap();
                // A model the agent knows (gpt-5.3-codex: its apply_patch tool), asking before
                // anything that is not known to be safe (`untrusted`), no OS sandbox
                // (workspace-write needs bubblewrap/landlock, absent here).
                let common = "model = \"gpt-5.3-codex\"\n\
                              approval_policy = \"untrusted\"\n\
                              sandbox_mode = \"danger-full-access\"\n";
                let config = match setup {
                    Setup::Ready => format!(
                        "{common}model_provider = \"fake\"\n\n\
                         [model_providers.fake]\n\
                         name = \"fake\"\n\
                         base_url = \"{}/v1\"\n\
                         wire_api = \"responses\"\n\
                         request_max_retries = 0\n\
                         stream_max_retries = 0\n",
                        model.url()
                    ),
                    // The built-in provider, which needs a login or a key.
                    Setup::NoKey | Setup::OpenAiKey => {
                        format!("{common}openai_base_url = \"{}/v1\"\n", model.url())
                    }
                };
                std::fs::write(codex_home.join("config.toml"), config).unwrap();
                env.push(format!("CODEX_HOME={}", codex_home.display()));
                if setup == Setup::OpenAiKey {
                    env.push("OPENAI_API_KEY=fake-openai-key".into());
                }
            }
            Agent::Gemini => {
                // With a base URL but no key, Gemini CLI talks to the fake server keyless; the
                // no-key case leaves both out (it then fails before any request).
                if setup != Setup::NoKey {
                    env.push(format!("GOOGLE_GEMINI_BASE_URL={}", model.url()));
                    env.push("GEMINI_API_KEY=fake-gemini-key".into());
                }
            }
            Agent::Qwen => {
                // Its OpenAI-compatible provider, from the environment. Approval mode "default"
                // (ask before edits and commands; its own default, "auto", has a model classifier
                // decide); no usage statistics (else sent to Aliyun RUM at start), telemetry or
                // update check.
                let dir = home.join(".qwen");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(
                    dir.join("settings.json"),
                    r#"{"tools":{"approvalMode":"default"},
                        "privacy":{"usageStatisticsEnabled":false},
                        "telemetry":{"enabled":false},
                        "general":{"enableAutoUpdate":false}}"#,
                )
                .unwrap();
                env.push(format!("OPENAI_BASE_URL={}/v1", model.url()));
                env.push("OPENAI_MODEL=fake-model".into());
                if setup != Setup::NoKey {
                    env.push("OPENAI_API_KEY=fake-openai-key".into());
                }
            }
            Agent::OpenCode => {
                // Config, data, cache and state under the temporary HOME; one provider, the fake
                // server through the bundled @ai-sdk/openai-compatible; "ask" before edits and
                // commands (its default is to allow them).
                let xdg = [
                    ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_DATA_HOME", ".local/share"),
                    ("XDG_CACHE_HOME", ".cache"),
                    ("XDG_STATE_HOME", ".local/state"),
                ];
                for (name, sub) in xdg {
                    env.push(format!("{name}={}", home.join(sub).display()));
                }
                let dir = home.join(".config/opencode");
                std::fs::create_dir_all(&dir).unwrap();
                let config = serde_json::json!({
                    "autoupdate": false,
                    "share": "disabled",
                    "model": "fake/fake-model",
                    "small_model": "fake/fake-model",
                    "enabled_providers": ["fake"],
                    "permission": {"edit": "ask", "bash": "ask"},
                    "provider": {"fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Fake model server",
                        "options": {"baseURL": format!("{}/v1", model.url()), "apiKey": "fake-openai-key"},
                        "models": {"fake-model": {"name": "Fake model", "tool_call": true}},
                    }},
                });
                std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
                // No network but the fake server's: no models.dev catalogue, update check,
                // default plugins, LSP downloads or sharing; and the npm install it starts in
                // every config directory (@opencode-ai/plugin, through its embedded npm) fails at
                // once from the empty cache instead of reaching registry.npmjs.org.
                for quiet in [
                    "OPENCODE_DISABLE_MODELS_FETCH=1",
                    "OPENCODE_DISABLE_AUTOUPDATE=1",
                    "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
                    "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
                    "OPENCODE_DISABLE_SHARE=1",
                    "npm_config_offline=true",
                ] {
                    env.push(quiet.into());
                }
            }
        }
        env
    }
}

// ---- one case: a temp dir, a fake model, an agent ------------------------------------------------

struct Case {
    agent: Agent,
    model: FakeModel,
    env: Vec<String>,
    cwd: PathBuf,
    dir: TempDir,
    runs: std::cell::Cell<u32>,
}

impl Case {
    fn new(agent: Agent, tag: &str, setup: Setup) -> Case {
        let dir = TempDir::new(&format!("real-{agent:?}-{tag}").to_lowercase());
        let cwd = dir.join("project");
        let home = dir.join("home");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let model = FakeModel::start(dir.path());
        let env = agent.prepare(setup, &home, &model);
        Case {
            agent,
            model,
            env,
            cwd,
            dir,
            runs: std::cell::Cell::new(0),
        }
    }

    /// The `--log-rpc` file of the latest run.
    fn rpc_path(&self) -> PathBuf {
        self.dir.join(format!("rpc-{}.ndjson", self.runs.get()))
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        self.runs.set(self.runs.get() + 1);
        let mut args: Vec<String> = vec![
            "chat".into(),
            "--cwd".into(),
            self.cwd.to_str().unwrap().into(),
            "--log-rpc".into(),
            self.rpc_path().to_str().unwrap().into(),
        ];
        for e in &self.env {
            args.push("--env".into());
            args.push(e.clone());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push("--".into());
        args.extend(self.agent.command());
        args
    }

    fn start(&self, extra: &[&str]) -> Running {
        let args = self.args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Running::start(&args, &self.cwd, None)
    }

    fn run(&self, extra: &[&str]) -> Run {
        self.start(extra).finish(LIMIT)
    }

    /// The latest run's JSON-RPC log.
    fn rpc(&self) -> Vec<Value> {
        read_ndjson(&self.rpc_path())
    }

    fn dump(&self, r: &Run) -> String {
        format!("{:?}: {}\n{}", self.agent, r.dump(), self.model.dump())
    }
}

/// Messages of the RPC log with this direction, kind and method.
fn rpc_find<'a>(log: &'a [Value], dir: &str, kind: &str, method: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["dir"] == dir && e["kind"] == kind && e["method"] == method)
        .collect()
}

/// For every permission question of the run: (the kind of the option chosen, all option kinds).
fn permission_choices(log: &[Value]) -> Vec<(String, Vec<String>)> {
    rpc_find(log, "recv", "request", "session/request_permission")
        .into_iter()
        .map(|q| {
            let options = q["msg"]["params"]["options"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let answer = log
                .iter()
                .find(|e| e["dir"] == "send" && e["kind"] == "response" && e["id"] == q["id"])
                .unwrap_or_else(|| panic!("permission question never answered: {q}"));
            let chosen = &answer["msg"]["result"]["outcome"];
            let kind = if chosen["outcome"] == "selected" {
                options
                    .iter()
                    .find(|o| o["optionId"] == chosen["optionId"])
                    .map(|o| o["kind"].as_str().unwrap_or("?").to_string())
                    .unwrap_or_else(|| format!("unknown option {}", chosen["optionId"]))
            } else {
                format!("outcome {}", chosen["outcome"])
            };
            let kinds = options
                .iter()
                .map(|o| o["kind"].as_str().unwrap_or("?").to_string())
                .collect();
            (kind, kinds)
        })
        .collect()
}

/// The stop reasons of the run's `session/prompt` answers.
fn stop_reasons(log: &[Value]) -> Vec<String> {
    rpc_find(log, "recv", "response", "session/prompt")
        .into_iter()
        .map(|r| {
            r["msg"]["result"]["stopReason"]
                .as_str()
                .unwrap_or("(error)")
                .to_string()
        })
        .collect()
}

fn sent_cancel(log: &[Value]) -> bool {
    !rpc_find(log, "send", "notification", "session/cancel").is_empty()
}

// ---- the scenarios ---------------------------------------------------------------------------

/// A plain text turn: the streamed answer on stdout, exit 0; the model got the prompt with the
/// agent's credentials.
fn text_turn(agent: Agent) {
    let case = Case::new(agent, "text", Setup::Ready);
    let r = case.run(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--prompt",
        "say hello [[fake:text]]",
    ]);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    // stdout carries the conversation only (status lines such as commands, usage and mode
    // changes go to stderr).
    assert_eq!(r.stdout.trim(), TEXT_ANSWER, "{}", case.dump(&r));
    let turns = case.model.turn_requests();
    assert_eq!(
        turns.len(),
        1,
        "one model request for the turn\n{}",
        case.dump(&r)
    );
    let body = turns[0]["body"].to_string();
    assert!(
        body.contains("say hello [[fake:text]]"),
        "the prompt reached the model"
    );
    match agent {
        Agent::Claude => {
            assert_eq!(turns[0]["path"], "/v1/messages");
            assert_eq!(turns[0]["headers"]["x-api-key"], "fake-anthropic-key");
        }
        Agent::Codex => assert_eq!(turns[0]["path"], "/v1/responses"),
        Agent::Gemini => {
            let path = turns[0]["path"].as_str().unwrap();
            assert!(path.ends_with(":streamGenerateContent"), "{path}");
            assert_eq!(turns[0]["headers"]["x-goog-api-key"], "fake-gemini-key");
        }
        Agent::Qwen | Agent::OpenCode => {
            assert_eq!(turns[0]["path"], "/v1/chat/completions");
            assert_eq!(
                turns[0]["headers"]["authorization"],
                "Bearer fake-openai-key"
            );
        }
    }
    assert_eq!(stop_reasons(&case.rpc()), ["end_turn"]);
}

/// `--yes` and a file write: the agent's `allow_once` option is chosen, the file is written,
/// the tool's result goes back to the model and its final text arrives.
fn write_allowed_with_yes(agent: Agent) {
    let case = Case::new(agent, "write-yes", Setup::Ready);
    let target = case.cwd.join("out.txt");
    let prompt = format!("write a file [[fake:write {}]]", target.display());
    let r = case.run(&["--timeout", SAFETY_TIMEOUT, "--yes", "--prompt", &prompt]);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    let choices = permission_choices(&case.rpc());
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, offered) in &choices {
        assert_eq!(
            chosen, "allow_once",
            "--yes chose {chosen} among {offered:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some(FILE_CONTENT),
        "{}",
        case.dump(&r)
    );
    assert!(r.stdout.contains("FAKE-DONE"), "{}", case.dump(&r));
    assert_eq!(stop_reasons(&case.rpc()), ["end_turn"]);
}

/// `--deny` and a file write: `reject_once` is chosen and the file never appears. Claude Code
/// tells the model and the turn ends normally; codex's "No" aborts the turn (`cancelled`, 3).
fn write_denied(agent: Agent) {
    let case = Case::new(agent, "write-deny", Setup::Ready);
    let target = case.cwd.join("out.txt");
    let prompt = format!("write a file [[fake:write {}]]", target.display());
    let r = case.run(&["--timeout", SAFETY_TIMEOUT, "--deny", "--prompt", &prompt]);
    let choices = permission_choices(&case.rpc());
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, offered) in &choices {
        assert_eq!(
            chosen, "reject_once",
            "--deny chose {chosen} among {offered:?}"
        );
    }
    assert!(!target.exists(), "the file was written\n{}", case.dump(&r));
    let (code, stop) = match agent {
        Agent::Claude | Agent::Gemini | Agent::Qwen | Agent::OpenCode => (0, "end_turn"),
        Agent::Codex => (3, "cancelled"),
    };
    assert_eq!(r.code(), code, "{}", case.dump(&r));
    assert_eq!(stop_reasons(&case.rpc()), [stop]);
}

/// `--yes` and a command: `allow_once`, the command runs in the session directory and its
/// output reaches the model.
fn command_allowed_with_yes(agent: Agent) {
    let case = Case::new(agent, "run-yes", Setup::Ready);
    let prompt = format!("run it [[fake:run {RUN_COMMAND}]]");
    let r = case.run(&["--timeout", SAFETY_TIMEOUT, "--yes", "--prompt", &prompt]);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    let choices = permission_choices(&case.rpc());
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, offered) in &choices {
        // Both agents offer an "always" option for commands; --yes must not take it.
        assert!(offered.iter().any(|k| k == "allow_always"), "{offered:?}");
        assert_eq!(
            chosen, "allow_once",
            "--yes chose {chosen} among {offered:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(case.cwd.join("ran.txt"))
            .ok()
            .as_deref(),
        Some("ran"),
        "{}",
        case.dump(&r)
    );
    // The request that carried the tool's result was answered with a quote of it.
    assert!(
        case.model
            .turn_requests()
            .iter()
            .any(|t| t["answer"]["chunks"].to_string().contains("RAN-OK")),
        "the command's output did not reach the model\n{}",
        case.dump(&r)
    );
    assert!(r.stdout.contains("RAN-OK"), "{}", case.dump(&r));
}

/// `--deny` and a command: `reject_once`, and the command never runs.
fn command_denied(agent: Agent) {
    let case = Case::new(agent, "run-deny", Setup::Ready);
    let prompt = format!("run it [[fake:run {RUN_COMMAND}]]");
    let r = case.run(&["--timeout", SAFETY_TIMEOUT, "--deny", "--prompt", &prompt]);
    let choices = permission_choices(&case.rpc());
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, offered) in &choices {
        assert_eq!(
            chosen, "reject_once",
            "--deny chose {chosen} among {offered:?}"
        );
    }
    assert!(
        !case.cwd.join("ran.txt").exists(),
        "the command ran\n{}",
        case.dump(&r)
    );
    let code = match agent {
        Agent::Claude | Agent::Gemini | Agent::Qwen | Agent::OpenCode => 0,
        Agent::Codex => 3,
    };
    assert_eq!(r.code(), code, "{}", case.dump(&r));
}

/// Ctrl-C while the model streams a long answer: `session/cancel`, the turn ends `cancelled`,
/// exit 3.
fn cancel_with_ctrl_c(agent: Agent) {
    let case = Case::new(agent, "cancel", Setup::Ready);
    let mut running = case.start(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--prompt",
        "talk slowly [[fake:slow]]",
    ]);
    running.wait_for_stdout("tick 2", LIMIT);
    // SAFETY: kill(2) on the child we started (it has not been waited for, so the pid is ours).
    let rc = unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill -INT acp");
    let r = running.finish(LIMIT);
    assert_eq!(r.code(), 3, "{}", case.dump(&r));
    let log = case.rpc();
    assert!(
        sent_cancel(&log),
        "no session/cancel sent\n{}",
        case.dump(&r)
    );
    assert_eq!(stop_reasons(&log), ["cancelled"], "{}", case.dump(&r));
}

/// The model stalls: `--timeout 3` cancels the turn after 3 s of silence (`session/cancel`),
/// waits for the turn's `cancelled` answer, and exits 7.
fn timeout_when_the_model_stalls(agent: Agent) {
    let case = Case::new(agent, "timeout", Setup::Ready);
    // --timeout also bounds the agent's start-up; should a loaded machine make that slower than
    // the limit, the stall was never reached: try again with a longer one.
    for timeout in ["3", "10", "30"] {
        let before = case.model.turn_requests().len();
        let r = case.run(&["--timeout", timeout, "--prompt", "wait [[fake:stall]]"]);
        let stalled = case.model.turn_requests().len() > before;
        if !stalled && r.code == Some(7) {
            eprintln!("{agent:?}: --timeout {timeout} hit before the turn started; again, longer");
            continue;
        }
        assert_eq!(r.code(), 7, "{}", case.dump(&r));
        assert!(stalled, "{}", case.dump(&r));
        assert!(r.stderr.contains("during the turn"), "{}", case.dump(&r));
        let log = case.rpc();
        assert!(
            sent_cancel(&log),
            "no session/cancel sent\n{}",
            case.dump(&r)
        );
        assert_eq!(stop_reasons(&log), ["cancelled"], "{}", case.dump(&r));
        return;
    }
    panic!("{agent:?} never started a turn within --timeout 30");
}

/// `--load`: a second process continues the first one's session; the agent replays it (its
/// prompt and answer on stdout) and the model gets the earlier conversation.
fn load_an_earlier_session(agent: Agent) {
    let case = Case::new(agent, "load", Setup::Ready);
    let memo = format!("MEMO-{}", std::process::id());
    let first = case.run(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--json",
        "--prompt",
        &format!("remember {memo} [[fake:text]]"),
    ]);
    assert_eq!(first.code(), 0, "{}", case.dump(&first));
    let last: Value = serde_json::from_str(first.stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("no final JSON line ({e})\n{}", case.dump(&first)));
    let session = last["sessionId"].as_str().expect("sessionId").to_string();
    let initialize = rpc_find(&case.rpc(), "recv", "response", "initialize")[0].clone();
    assert_eq!(
        initialize["msg"]["result"]["agentCapabilities"]["loadSession"], true,
        "{agent:?} does not offer loadSession"
    );

    let second = case.run(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--load",
        &session,
        "--prompt",
        "go on [[fake:text]]",
    ]);
    assert_eq!(second.code(), 0, "{}", case.dump(&second));
    let log = case.rpc();
    assert_eq!(rpc_find(&log, "send", "request", "session/load").len(), 1);
    assert!(rpc_find(&log, "send", "request", "session/new").is_empty());
    assert!(
        second.stdout.contains(&memo),
        "no replay\n{}",
        case.dump(&second)
    );
    assert!(
        second.stdout.contains(TEXT_ANSWER),
        "{}",
        case.dump(&second)
    );
    // The new turn's answer starts on a line of its own, after the replayed conversation
    // (codex's chunks carry no messageId: the replayed message used to run into it).
    assert!(
        second
            .stdout
            .lines()
            .any(|l| l.starts_with(TEXT_ANSWER.split_whitespace().next().unwrap())),
        "the answer on its own line\n{}",
        case.dump(&second)
    );
    let turns = case.model.turn_requests();
    assert!(
        turns.iter().any(|t| {
            let body = t["body"].to_string();
            body.contains("go on [[fake:text]]") && body.contains(&memo)
        }),
        "the model did not get the earlier conversation\n{}",
        case.dump(&second)
    );
}

/// A permission question with no one to answer (no --yes/--deny, stdin closed): the turn is
/// cancelled (`session/cancel`, the question answered `cancelled`), exit 3, nothing written.
fn unanswered_permission_cancels(agent: Agent) {
    let case = Case::new(agent, "unanswered", Setup::Ready);
    let target = case.cwd.join("out.txt");
    let prompt = format!("write a file [[fake:write {}]]", target.display());
    let r = case.run(&["--timeout", SAFETY_TIMEOUT, "--prompt", &prompt]);
    assert_eq!(r.code(), 3, "{}", case.dump(&r));
    // The write question shows the change the agent proposed (its diff: the new file's line),
    // above the question, before anyone answers (on stderr: stdin is not a terminal).
    let diff_line = format!("+{}", FILE_CONTENT.trim_end());
    let question = r.stderr.find("Permission requested");
    let diff = r.stderr.find(&diff_line);
    assert!(
        matches!((diff, question), (Some(d), Some(q)) if d < q),
        "no diff ({diff_line:?}) above the write question\n{}",
        case.dump(&r)
    );
    let log = case.rpc();
    let choices = permission_choices(&log);
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, _) in &choices {
        assert_eq!(chosen, "outcome \"cancelled\"", "{}", case.dump(&r));
    }
    assert!(
        sent_cancel(&log),
        "no session/cancel sent\n{}",
        case.dump(&r)
    );
    assert_eq!(stop_reasons(&log), ["cancelled"], "{}", case.dump(&r));
    assert!(!target.exists(), "the file was written\n{}", case.dump(&r));
}

/// `--yes-always` takes the agent's `allow_always` option (both agents offer one for commands).
fn yes_always_picks_allow_always(agent: Agent) {
    let case = Case::new(agent, "yes-always", Setup::Ready);
    let prompt = format!("run it [[fake:run {RUN_COMMAND}]]");
    let r = case.run(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--yes-always",
        "--prompt",
        &prompt,
    ]);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    let choices = permission_choices(&case.rpc());
    assert!(
        !choices.is_empty(),
        "the agent asked nothing\n{}",
        case.dump(&r)
    );
    for (chosen, offered) in &choices {
        assert_eq!(
            chosen, "allow_always",
            "--yes-always chose {chosen} among {offered:?}"
        );
    }
    assert!(case.cwd.join("ran.txt").exists(), "{}", case.dump(&r));
}

/// Prompts piped on stdin: one session, one turn per line, each answer on its own line, the
/// second turn carrying the first to the model.
fn prompts_from_stdin(agent: Agent) {
    let case = Case::new(agent, "stdin", Setup::Ready);
    let args = case.args(&["--timeout", SAFETY_TIMEOUT]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = Running::start(
        &args,
        &case.cwd,
        Some("first [[fake:text]]\nsecond [[fake:text]]\n"),
    )
    .finish(LIMIT);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    let log = case.rpc();
    assert_eq!(rpc_find(&log, "send", "request", "session/new").len(), 1);
    assert_eq!(
        stop_reasons(&log),
        ["end_turn", "end_turn"],
        "{}",
        case.dump(&r)
    );
    let answers = r.stdout.lines().filter(|l| l.trim() == TEXT_ANSWER).count();
    assert_eq!(answers, 2, "{}", case.dump(&r));
    assert!(
        case.model.turn_requests().iter().any(|t| {
            let body = t["body"].to_string();
            body.contains("second [[fake:text]]") && body.contains("first [[fake:text]]")
        }),
        "the second turn did not carry the first\n{}",
        case.dump(&r)
    );
}

/// SIGTERM while the agent runs a long command (both agents run commands themselves, each in
/// its own session): acp exits 143, and the command does not outlive the chat.
fn sigterm_stops_the_agent_and_its_command(agent: Agent) {
    let case = Case::new(agent, "sigterm", Setup::Ready);
    let pid_file = case.cwd.join("pid.txt");
    let mut running = case.start(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--yes",
        "--prompt",
        "run it [[fake:run echo $$ > pid.txt; exec sleep 60]]",
    ]);
    let deadline = std::time::Instant::now() + LIMIT;
    let pid: libc::pid_t = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if text.ends_with('\n') {
            break text.trim().parse().expect("pid");
        }
        if std::time::Instant::now() > deadline || running.child.try_wait().unwrap().is_some() {
            let _ = running.child.kill();
            let r = running.finish(LIMIT);
            panic!("the command never started\n{}", case.dump(&r));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill(2) on the child we started (not yet waited for).
    let rc = unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0, "kill -TERM acp");
    let r = running.finish(LIMIT);
    assert_eq!(r.code(), 143, "{}", case.dump(&r));
    // Gone (or a zombie about to be reaped) within a bound.
    let alive = |pid: libc::pid_t| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                !state.starts_with('Z')
            })
            .unwrap_or(false)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        if std::time::Instant::now() > deadline {
            // SAFETY: the command this test started (its pid read from the file it wrote).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!(
                "the agent's command (pid {pid}) outlived acp\n{}",
                case.dump(&r)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// No key configured: `acp chat` starts no login, exits 1 without waiting for a timeout, and
/// says on stderr what the agent needs; the model is never asked.
fn auth_without_a_key(agent: Agent) {
    let case = Case::new(agent, "no-key", Setup::NoKey);
    let r = case.run(&["--prompt", "hello [[fake:text]]"]);
    assert_eq!(r.code(), 1, "{}", case.dump(&r));
    let log = case.rpc();
    let authenticated: Vec<&Value> = rpc_find(&log, "send", "request", "authenticate")
        .into_iter()
        .map(|a| &a["msg"]["params"]["methodId"])
        .collect();
    match agent {
        // Gemini CLI's `gemini-api-key` method is not typed env_var and starts nothing
        // interactive, so acp may try it; never its Google login.
        Agent::Gemini => assert!(
            authenticated.iter().all(|m| *m == "gemini-api-key"),
            "{authenticated:?}\n{}",
            case.dump(&r)
        ),
        _ => assert!(
            authenticated.is_empty(),
            "acp authenticated uninvited: {authenticated:?}\n{}",
            case.dump(&r)
        ),
    }
    assert!(case.model.turn_requests().is_empty(), "{}", case.dump(&r));
    match agent {
        // claude-agent-acp offers no method to a client without terminal auth; its prompt
        // fails with auth_required.
        Agent::Claude => assert!(
            r.stderr.contains("Authentication required"),
            "{}",
            case.dump(&r)
        ),
        // codex-acp refuses session/new with auth_required; acp lists its three methods.
        Agent::Codex => {
            for needle in [
                "needs authentication",
                "--auth chatgpt",
                "--env CODEX_API_KEY",
                "--env OPENAI_API_KEY",
            ] {
                assert!(
                    r.stderr.contains(needle),
                    "no {needle:?}\n{}",
                    case.dump(&r)
                );
            }
        }
        // gemini-cli refuses session/new: "Gemini API key is missing or not configured."
        Agent::Gemini => assert!(r.stderr.contains("API key"), "{}", case.dump(&r)),
        // Qwen Code refuses session/new with auth_required; its one method (`openai`, a
        // terminal login) needs OPENAI_API_KEY, which acp names.
        Agent::Qwen => assert!(
            r.stderr.contains("--env OPENAI_API_KEY"),
            "{}",
            case.dump(&r)
        ),
        Agent::OpenCode => unreachable!("not run for OpenCode (see its test list)"),
    }
}

/// codex with OPENAI_API_KEY passed: acp authenticates with the `openai-api-key` env_var method
/// (not the ChatGPT login listed first), and the key reaches the model.
fn auth_with_openai_key(agent: Agent) {
    assert_eq!(agent, Agent::Codex);
    let case = Case::new(Agent::Codex, "openai-key", Setup::OpenAiKey);
    let r = case.run(&[
        "--timeout",
        SAFETY_TIMEOUT,
        "--prompt",
        "hello [[fake:text]]",
    ]);
    assert_eq!(r.code(), 0, "{}", case.dump(&r));
    let log = case.rpc();
    let auth = rpc_find(&log, "send", "request", "authenticate");
    assert_eq!(auth.len(), 1, "{}", case.dump(&r));
    assert_eq!(auth[0]["msg"]["params"]["methodId"], "openai-api-key");
    assert!(r.stdout.contains(TEXT_ANSWER), "{}", case.dump(&r));
    let turns = case.model.turn_requests();
    assert_eq!(
        turns[0]["headers"]["authorization"],
        "Bearer fake-openai-key"
    );
}

macro_rules! agent_tests {
    ($module:ident, $agent:ident, [$($scenario:ident),* $(,)?]) => {
        mod $module {
            use super::*;
            $(
                #[test]
                #[ignore = "needs the pinned agents: scripts/test-real-agents.sh"]
                fn $scenario() {
                    super::$scenario(Agent::$agent)
                }
            )*
        }
    };
}

agent_tests!(
    claude,
    Claude,
    [
        text_turn,
        write_allowed_with_yes,
        write_denied,
        command_allowed_with_yes,
        command_denied,
        cancel_with_ctrl_c,
        timeout_when_the_model_stalls,
        load_an_earlier_session,
        unanswered_permission_cancels,
        yes_always_picks_allow_always,
        prompts_from_stdin,
        sigterm_stops_the_agent_and_its_command,
        auth_without_a_key,
    ]
);

agent_tests!(
    codex,
    Codex,
    [
        text_turn,
        write_allowed_with_yes,
        write_denied,
        command_allowed_with_yes,
        command_denied,
        cancel_with_ctrl_c,
        timeout_when_the_model_stalls,
        load_an_earlier_session,
        unanswered_permission_cancels,
        yes_always_picks_allow_always,
        prompts_from_stdin,
        sigterm_stops_the_agent_and_its_command,
        auth_without_a_key,
        auth_with_openai_key,
    ]
);

// Gemini CLI: not its file writes. It reads the file first through fs/read_text_file and
// treats a missing file as a failure with any client: the official SDK rejects with the plain
// error object ({code, message}), and gemini-cli 0.61.0's normalizeFileSystemError looks for
// "Resource not found" only in `err instanceof Error ? err.message : String(err)`, which is
// "[object Object]" for it. Not --load (gemini-cli 0.61.0 often answers "Invalid session
// identifier" for a session it has just recorded). See docs/reliability.md, "Real agents".
agent_tests!(
    gemini,
    Gemini,
    [
        text_turn,
        command_allowed_with_yes,
        command_denied,
        cancel_with_ctrl_c,
        timeout_when_the_model_stalls,
        yes_always_picks_allow_always,
        prompts_from_stdin,
        sigterm_stops_the_agent_and_its_command,
        auth_without_a_key,
    ]
);

// Qwen Code (`qwen --acp`), through the OpenAI Chat Completions API.
agent_tests!(
    qwen,
    Qwen,
    [
        text_turn,
        write_allowed_with_yes,
        write_denied,
        command_allowed_with_yes,
        command_denied,
        cancel_with_ctrl_c,
        timeout_when_the_model_stalls,
        load_an_earlier_session,
        unanswered_permission_cancels,
        yes_always_picks_allow_always,
        prompts_from_stdin,
        sigterm_stops_the_agent_and_its_command,
        auth_without_a_key,
    ]
);

// OpenCode (`opencode acp`), through the OpenAI Chat Completions API (a custom provider). Not
// auth_without_a_key: a custom provider needs no key, and without one configured OpenCode falls
// back to its own hosted models (the network).
agent_tests!(
    opencode,
    OpenCode,
    [
        text_turn,
        write_allowed_with_yes,
        write_denied,
        command_allowed_with_yes,
        command_denied,
        cancel_with_ctrl_c,
        timeout_when_the_model_stalls,
        load_an_earlier_session,
        unanswered_permission_cancels,
        yes_always_picks_allow_always,
        prompts_from_stdin,
        sigterm_stops_the_agent_and_its_command,
    ]
);
