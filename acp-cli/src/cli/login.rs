//! `acp login`: signs in to an agent with a method the user chooses, in the user's terminal.
//!
//! `acp chat` never starts an interactive login by itself (acp-client's `auth::choose`); this
//! command is where the user asks for one. It starts the agent, says it can run `terminal`
//! methods (`clientCapabilities.auth.terminal`), lists the agent's `authMethods` and runs the
//! one named with `--method` (or picked from the list on a terminal):
//! * `terminal`: the agent's own command with the method's arguments and variables, in this
//!   terminal, shown first exactly as it will run (acp-client's `terminal::question`: the same
//!   checks and display as an agent's `terminal/create`), after a yes (or `--yes`). Exit 0 of
//!   the login is success.
//! * `agent`: `authenticate` with it; what the agent prints that is not JSON (a URL to open)
//!   is shown on stderr.
//! * `env_var`: `authenticate` when its variables reach the agent; otherwise what to pass.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use acp_client::auth::AuthMethod;
use acp_client::display::{escape_line, escape_text};
use acp_core::Role;
use acp_native::process::AgentCommand;
use acp_native::{DriverConfig, Router};
use agent_client_protocol_schema::v1 as s;
use tokio::sync::mpsc;

use super::args::LoginArgs;
use super::exit;
use super::watch::{AgentReader, AgentWriter, Warning, Watch};

/// How long the agent gets to answer `initialize`.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an `agent` method's login may take (a browser round trip).
const LOGIN_TIMEOUT: Duration = Duration::from_secs(600);

pub async fn run(args: LoginArgs) -> i32 {
    match login(args).await {
        Ok(()) => exit::OK,
        Err((code, message)) => {
            eprintln!("acp login: {}", escape_text(&message));
            code
        }
    }
}

type Failure = (i32, String);

fn fail(message: impl Into<String>) -> Failure {
    (exit::ERROR, message.into())
}

async fn login(args: LoginArgs) -> Result<(), Failure> {
    let warn = |m: &str| eprintln!("acp login: {}", escape_text(m));
    let mut registry_env = std::collections::BTreeMap::new();
    let command: Vec<OsString> = if let Some(name) = &args.agent_name {
        let agent = super::agents::resolve(name, args.registry.as_deref(), &args.env, warn)
            .await
            .map_err(|e| fail(format!("--agent: {e}")))?;
        for line in agent.env_lines() {
            eprintln!("acp login: {line}");
        }
        registry_env = agent
            .agent_env()
            .map_err(|e| fail(format!("--agent: {e}")))?;
        agent.command
    } else if args.agent.is_empty() {
        return Err((
            exit::USAGE,
            "name the agent: acp login --agent NAME, or acp login -- AGENT_COMMAND…".into(),
        ));
    } else {
        args.agent.clone()
    };
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| fail(format!("current directory: {e}")))?,
    };
    let env = super::env::env_policy_with(args.inherit_env, &registry_env, &args.env);
    let agent_vars: Vec<String> = env
        .resolve_from_host()
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    let cmd = AgentCommand::new(command[0].clone())
        .args(command[1..].iter().cloned())
        .cwd(&cwd)
        .env(env.clone());

    // What the agent prints that is not JSON (a login URL) is shown, not dropped.
    let (warn_tx, mut warnings) = mpsc::unbounded_channel();
    let watch = Watch::new(acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES, warn_tx);
    tokio::spawn(async move {
        while let Some(w) = warnings.recv().await {
            if let Warning::NotJson(line) = w {
                eprintln!("  agent: {}", escape_line(&line));
            }
        }
    });
    let (conn, child) = acp_native::transport::spawn_agent_with(
        &cmd,
        Router::new(),
        DriverConfig::new(Role::Client),
        move |stdout, stdin| {
            (
                AgentReader::new(stdout, watch, None),
                AgentWriter::new(stdin, None),
            )
        },
    )
    .map_err(|e| fail(format!("cannot start the agent: {e}")))?;

    let init = s::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
        .client_capabilities(
            s::ClientCapabilities::new().auth(s::AuthCapabilities::new().terminal(true)),
        )
        .client_info(s::Implementation::new("acp", env!("CARGO_PKG_VERSION")));
    let (_, raw) = conn
        .with_timeout(INIT_TIMEOUT)
        .initialize_with_raw(init)
        .await
        .map_err(|e| fail(format!("initialize: {e}")))?;
    // From the answer as sent: the typed form does not keep every method type.
    let methods: Vec<AuthMethod> = acp_client::auth::methods_of(raw.get());
    if methods.is_empty() {
        child.shutdown(Duration::from_secs(2)).await;
        outln!("The agent lists no sign-in methods: it needs no login (or has its own command).");
        return Ok(());
    }
    let method = match &args.method {
        Some(id) => methods
            .iter()
            .find(|m| &m.id == id)
            .cloned()
            .ok_or_else(|| {
                (
                    exit::USAGE,
                    format!(
                        "the agent has no sign-in method `{}`; it offers: {}",
                        escape_line(id),
                        ids(&methods)
                    ),
                )
            })?,
        None => pick(&methods)?,
    };
    let kind = method.kind.as_deref().unwrap_or("agent");
    match kind {
        "terminal" => {
            // The login runs as its own process: this one is not needed any more.
            child.shutdown(Duration::from_secs(2)).await;
            let program = command[0].to_string_lossy().into_owned();
            let base_args: Vec<String> = command[1..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let request = acp_client::auth::terminal_login(&method, &program, &base_args, None);
            let host_env: std::collections::HashMap<String, String> = env
                .resolve_from_host()
                .into_iter()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect();
            let question = acp_client::terminal::question(&request, |n| host_env.get(n).cloned())
                .map_err(|e| {
                fail(format!(
                    "the agent's `{}` login: {}",
                    escape_line(&method.id),
                    e.message()
                ))
            })?;
            eprintln!(
                "The `{}` login runs, in this terminal:",
                escape_line(&method.id)
            );
            eprintln!("  {}", question.command_line);
            for change in &question.env {
                eprintln!(
                    "  with {}={}",
                    change.name,
                    acp_client::display::quote_arg(&change.value)
                );
            }
            for w in &question.warnings {
                eprintln!("  ⚠ {}", escape_line(w));
            }
            if !args.yes {
                if !std::io::stdin().is_terminal() {
                    return Err((
                        exit::USAGE,
                        "not run: add --yes to run it without a terminal to ask in".into(),
                    ));
                }
                if !confirm("Run it? [y/N] ")? {
                    return Err((exit::CANCELLED, "not run".into()));
                }
            }
            let mut login = std::process::Command::new(&request.command);
            login.args(&request.args).current_dir(&cwd).env_clear();
            for (k, v) in env.resolve_from_host() {
                login.env(k, v);
            }
            for v in &request.env {
                login.env(&v.name, &v.value);
            }
            let status = login
                .status()
                .map_err(|e| fail(format!("cannot run the login: {e}")))?;
            if status.success() {
                eprintln!("Signed in (`{}`).", escape_line(&method.id));
                Ok(())
            } else {
                Err(fail(format!("the login failed ({status})")))
            }
        }
        _ => {
            if kind == "env_var" {
                let missing: Vec<String> = method
                    .var_name
                    .iter()
                    .cloned()
                    .chain(
                        method
                            .vars
                            .iter()
                            .filter(|v| !v.optional)
                            .map(|v| v.name.clone()),
                    )
                    .filter(|v| !agent_vars.contains(v))
                    .collect();
                if !missing.is_empty() {
                    child.shutdown(Duration::from_secs(2)).await;
                    let flags: Vec<String> = missing.iter().map(|v| format!("--env {v}")).collect();
                    return Err(fail(format!(
                        "`{}` reads {} from the agent's environment: set it and pass it ({})",
                        escape_line(&method.id),
                        missing.join(", "),
                        flags.join(" ")
                    )));
                }
            }
            eprintln!(
                "Signing in with the agent's `{}` method (Ctrl-C stops)…",
                escape_line(&method.id)
            );
            let login_conn = conn.with_timeout(LOGIN_TIMEOUT);
            let result = tokio::select! {
                r = login_conn.authenticate(s::AuthenticateRequest::new(method.id.clone())) => r,
                _ = tokio::signal::ctrl_c() => {
                    child.shutdown(Duration::from_secs(2)).await;
                    return Err((exit::INTERRUPTED, "interrupted".into()));
                }
            };
            child.shutdown(Duration::from_secs(2)).await;
            match result {
                Ok(_) => {
                    eprintln!("Signed in (`{}`).", escape_line(&method.id));
                    Ok(())
                }
                Err(e) => Err(fail(format!("authenticate: {e}"))),
            }
        }
    }
}

fn ids(methods: &[AuthMethod]) -> String {
    methods
        .iter()
        .map(|m| format!("`{}`", escape_line(&m.id)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lists the methods; on a terminal the user picks one, otherwise `--method` is needed.
fn pick(methods: &[AuthMethod]) -> Result<AuthMethod, Failure> {
    eprintln!("The agent's sign-in methods:");
    for (i, m) in methods.iter().enumerate() {
        // The agent's word, like every other field here: on one line, escaped.
        let kind = escape_line(m.kind.as_deref().unwrap_or("agent"));
        let description = m
            .description
            .as_deref()
            .map(|d| format!(": {}", escape_line(d)))
            .unwrap_or_default();
        eprintln!(
            "  {}) {} [{kind}] {}{description}",
            i + 1,
            escape_line(&m.id),
            escape_line(&m.name)
        );
    }
    if !std::io::stdin().is_terminal() {
        return Err((exit::USAGE, "choose one with --method METHOD_ID".into()));
    }
    loop {
        eprint!("choose 1-{}: ", methods.len());
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Err((exit::CANCELLED, "no method chosen".into()));
        }
        match line.trim().parse::<usize>() {
            Ok(n) if (1..=methods.len()).contains(&n) => return Ok(methods[n - 1].clone()),
            _ => eprintln!("  type a number from 1 to {}", methods.len()),
        }
    }
}

fn confirm(question: &str) -> Result<bool, Failure> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return Ok(false);
    }
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
