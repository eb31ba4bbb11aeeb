//! `acp`: talk to Agent Client Protocol agents from a terminal.
//!
//! * `acp chat [OPTIONS] [-- AGENT_COMMAND ARGS...]`: an interactive (or one-shot) conversation
//!   with an agent ([`cli::chat`]); the default agent is the built-in demo agent.
//! * `acp demo-agent`: the built-in, offline, deterministic agent on stdio ([`demo_agent`]).
//! * `acp serve --ws ADDR [-- AGENT_COMMAND ...]`: a WebSocket bridge to local agents, one
//!   agent process per connection ([`cli::serve`]).
//! * `acp trace FILE`: a protocol trace as a timeline in the browser ([`cli::trace`]).
//!
//! Exit codes are documented on [`cli::exit`].
//!
//! The crate: [`cli`] the command (its arguments, each subcommand, what they share),
//! [`demo_agent`] the built-in agent (it uses the libraries only, nothing of `cli`), [`utc`]
//! the calendar dates both show; here, the runtime and [`run`], which dispatches the parsed
//! command.

mod cli;
mod demo_agent;
mod os_compat;
mod utc;

/// Runs the parsed command; returns the process exit code.
async fn run(cli: cli::Cli) -> i32 {
    use cli::Command;
    match cli.command {
        Command::Chat(args) => cli::chat::run(args).await,
        Command::DemoAgent(args) => {
            demo_agent::run(demo_agent::DemoOptions {
                delay: std::time::Duration::from_millis(args.delay_ms),
                state_dir: args.state_dir,
                require_auth: args.require_auth,
                no_resume: args.no_resume,
            })
            .await
        }
        Command::Serve(args) => cli::serve::run(args).await,
        Command::Agents(args) => cli::agents::run(args).await,
        Command::Sessions(args) => cli::sessions::run(args).await,
        Command::Login(args) => cli::login::run(args).await,
        Command::Trace(args) => cli::trace::run(args).await,
    }
}

fn main() {
    let args = cli::Cli::parse_args();
    // `acp chat` is one conversation: its connection, its handlers and what it shows run on
    // one thread (nothing waits on another thread's wake-up for each update, and an agent's
    // flood costs one core); the servers and the demo agent take two.
    let mut builder = if matches!(args.command, cli::Command::Chat(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acp: cannot start the async runtime: {e}");
            std::process::exit(cli::exit::ERROR);
        }
    };
    // `acp chat` and `acp serve` run agents, and their agents run commands: on Linux, whatever
    // an agent started comes back to acp when its parent dies (a child subreaper), and ends with
    // the agent (acp_native::process::orphans).
    let adopts = matches!(args.command, cli::Command::Chat(_) | cli::Command::Serve(_));
    let code = runtime.block_on(async move {
        if adopts {
            if let Err(e) = acp_native::process::adopt_orphans() {
                eprintln!(
                    "acp: warning: cannot become a subreaper ({e}): what an agent moves out of \
                     its process group may outlive it"
                );
            }
        }
        run(args).await
    });
    // What the agents left behind (their orphans) ends with acp; bounded.
    acp_native::process::end_orphans(acp_native::process::orphans::END_LIMIT);
    // A file write the agent asked for finishes (replaced, or untouched with no temporary file
    // left) even if the agent died meanwhile; bounded.
    acp_native::fs_service::wait_for_writes(std::time::Duration::from_secs(10));
    // Do not wait for blocked stdin readers or lingering tasks.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    std::process::exit(code);
}
