//! The `acp` command line (clap derive): the subcommands and their flags, with the value
//! parsers they share. What the flags mean is carried out by each subcommand's module.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use super::env::env_policy_with;

/// Talk to Agent Client Protocol (ACP) agents from a terminal.
#[derive(Debug, Parser)]
#[command(
    name = "acp",
    version,
    about = "Talk to Agent Client Protocol (ACP) agents from a terminal",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat with an agent (default: the built-in demo agent).
    ///
    /// The agent command goes after `--`, e.g. `acp chat -- npx -y @google/gemini-cli --acp`.
    /// It is run without a shell, in --cwd, with this environment.
    #[command(after_long_help = CHAT_LONG_HELP)]
    Chat(ChatArgs),
    /// List the agents `acp chat --agent NAME` knows.
    ///
    /// A built-in list in the ACP registry format, with the public registry's cached copy laid
    /// over it, plus a given registry file.
    #[command(after_long_help = AGENTS_EXAMPLES)]
    Agents(AgentsArgs),
    /// List the sessions of a directory.
    ///
    /// The conversations `acp chat` saved there, and the agent's own (`session/list`) when one
    /// is given and offers it.
    #[command(after_long_help = SESSIONS_EXAMPLES)]
    Sessions(SessionsArgs),
    /// Sign in to an agent with a method you choose.
    ///
    /// `acp chat` never starts an interactive login by itself: this lists the agent's
    /// `authMethods`, runs a `terminal` login in this terminal (shown first, after a yes) or
    /// calls `authenticate`.
    #[command(after_long_help = LOGIN_EXAMPLES)]
    Login(LoginArgs),
    /// Run the built-in demo agent on stdin/stdout (offline, deterministic).
    ///
    /// The default agent of `acp chat`; no model, no network. What it does in a turn and the
    /// words that change it are listed below.
    #[command(after_long_help = DEMO_AGENT_LONG_HELP)]
    DemoAgent(DemoAgentArgs),
    /// Serve local agents to remote clients (a token required).
    ///
    /// `--ws` (a WebSocket bridge, one JSON-RPC message per text frame) or `--http` (HTTP + SSE
    /// and WebSocket, the official transport's wire); one agent process per connection.
    #[command(after_long_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Show a protocol trace (`acp chat --log-rpc FILE`, the VS Code extension's trace, an ACP
    /// SDK conductor's `--trace`) as a timeline in the browser, served on a loopback port;
    /// a growing file is followed.
    Trace(super::trace::TraceArgs),
}

/// The command line, with each option's `-h` help cut to its first phrase (the whole text
/// stays for `--help`).
pub fn command() -> clap::Command {
    short_helps(Cli::command())
}

impl Cli {
    /// Parses this process's arguments (exits with the usage on an error, as clap does).
    pub fn parse_args() -> Cli {
        let matches = command().get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

fn short_helps(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|arg| {
        let Some(help) = arg.get_help().map(|h| h.to_string()) else {
            return arg;
        };
        if arg.get_long_help().is_some() {
            return arg;
        }
        let short = first_phrase(&help);
        if short == help {
            return arg;
        }
        arg.long_help(help).help(short)
    })
    .mut_subcommands(short_helps)
}

/// The start of a help text, up to its first `. `, `: `, `; ` or ` (` (when what comes before
/// is long enough to say something).
fn first_phrase(help: &str) -> String {
    let cut = [". ", ": ", "; ", " ("]
        .iter()
        .filter_map(|d| help.find(d))
        // Not inside `code`.
        .filter(|&i| i >= 16 && help[..i].matches('`').count() % 2 == 0)
        .min();
    match cut {
        Some(i) => help[..i].to_string(),
        None => help.to_string(),
    }
}

const CHAT_LONG_HELP: &str = "\
Examples:
  acp chat                                          interactive, with the built-in demo agent
  acp chat -p \"read notes.txt\" --yes                one turn; allow what the agent asks once
  acp chat -p hi --deny --json | jq -c .            one JSON line per session update
  acp chat --agent claude --env ANTHROPIC_API_KEY   an agent by name (acp agents lists them)
  acp chat --env GEMINI_API_KEY -- npx -y @google/gemini-cli --acp
  acp chat -c                                       continue the last session of this directory
  acp chat --resume SESSION_ID                      continue a session saved here (acp sessions)
  acp chat --connect https://devbox/acp --token-file ~/.acp-token

At the prompt (a terminal):
  /help              acp's commands and the agent's
  /status            agent, mode, model, context used, title
  /mode [ID]         show or set the session's mode
  /model [VALUE]     show or set the model
  /config [ID VALUE] show or set a config option
  /sessions          the sessions saved in this directory
  /cancel, /quit     (Ctrl-C cancels a running turn; /quit or Ctrl-D quits)
  /queue             prompts typed during a turn, sent when it ends; held after Ctrl-C or a
                     failed turn: Enter sends them; /queue send, drop N, edit N TEXT, clear
  /agent-NAME        the agent's own /NAME when acp has a command of that name
  /NAME ...          any other command the agent announced is sent to it

Editing keys:
  Enter sends; a line ending in \\ or Alt-Enter (Ctrl-J) continues on the next line
  a paste is one prompt; lines typed in a burst are sent one per turn, in order
  Up/Down recall earlier prompts; Tab completes slash commands
  Ctrl-A/Ctrl-E start/end of line, Ctrl-W/Ctrl-U delete a word/to the start, Ctrl-L clears
  Ctrl-C cancels a turn (twice quits); Ctrl-D at the prompt quits, at a question refuses it

Exit codes:
  0    the turn ended with end_turn (or the interactive chat was quit)
  1    error: the agent could not start, crashed, broke the protocol or answered an error
  2    invalid command line
  3    the turn was cancelled (Ctrl-C, a permission request answered by end of input)
  4    stop reason max_tokens
  5    stop reason max_turn_requests
  6    stop reason refusal
  7    the agent did not answer in time (--timeout)
  129  the terminal hung up (SIGHUP): the agent and its commands were stopped
  130  quit with a second Ctrl-C
  143  terminated (SIGTERM): the agent and its commands were stopped";

const AGENTS_EXAMPLES: &str = "\
Examples:
  acp agents                          the agents acp chat --agent NAME can run
  acp agents --refresh                fetch the public registry now
  acp agents --json | jq -r .id       one JSON object per line
  acp agents --registry my-agent.json add an agent.json or a registry file";

const SESSIONS_EXAMPLES: &str = "\
Examples:
  acp sessions                        the sessions acp chat saved in this directory
  acp sessions --cwd ~/my-project     another directory's
  acp sessions --agent gemini --env GEMINI_API_KEY   also the agent's own (session/list)
  acp chat --resume SESSION_ID        continue one of them";

const LOGIN_EXAMPLES: &str = "\
Examples:
  acp login --agent gemini                     list its sign-in methods and pick one
  acp login --agent gemini --method oauth-personal
  acp login -- npx -y @google/gemini-cli --acp an agent by its command";

const DEMO_AGENT_LONG_HELP: &str = "\
A turn: a plan, a thought, the answer streamed in chunks (it quotes your prompt), the files
your prompt names read through the client, a command run in a client terminal (`ls`, after a
permission question), then acp-demo.txt written in the session's directory (after a
permission question, with a diff).

What changes it (in a prompt):
  `echo hi`      a command in backticks is what the terminal step runs (no shell)
  a file name    a file of the session's directory named in the prompt is read
  #refuse        the turn ends with stop reason refusal
  #max-tokens    the turn ends with stop reason max_tokens
  #crash         the agent exits mid-answer with code 70 (after a line on stderr)
  #mcp           the answer is the names of the session's MCP servers
  #later         the session is renamed a second after the turn
  /echo TEXT     answers TEXT and nothing else
  /help          lists its commands and these words

Examples:
  acp chat                                   talks to it (the default agent)
  acp chat -p 'run `echo hi`' --yes          runs echo hi in a terminal, writes acp-demo.txt
  acp demo-agent --state-dir ~/.cache/demo   sessions kept across restarts (load, resume, list, delete)";

const SERVE_EXAMPLES: &str = "\
Examples:
  acp serve                                   a WebSocket bridge on 127.0.0.1 to the demo agent
  acp serve --ws 8765 -- npx -y @google/gemini-cli --acp
  acp serve --http 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem --token-file token
  acp chat --connect https://HOST:8443/acp --token-file token   (the client side)";

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Send this prompt, run one turn and exit (the exit code tells how the turn ended).
    #[arg(short, long, value_name = "TEXT")]
    pub prompt: Option<String>,

    /// Like --prompt, with the prompt read from FILE (`-`: from stdin, which then cannot
    /// answer questions: they are answered as if no one were there).
    #[arg(
        short = 'f',
        long = "prompt-file",
        value_name = "FILE",
        conflicts_with = "prompt"
    )]
    pub prompt_file: Option<PathBuf>,

    /// Approve each permission request once: the agent's `allow_once` option. Never its
    /// "always" options (they persist a rule in the agent or the project): when the agent
    /// offers no `allow_once`, you are asked. Writes that change what runs (`.git/`,
    /// `.vscode/`, shell rc files, executables…) are always asked.
    #[arg(short, long, conflicts_with = "deny")]
    pub yes: bool,

    /// Like --yes, but choose the agent's `allow_always` option when it offers one (the agent
    /// may then stop asking, for this session or for good).
    #[arg(long, conflicts_with = "deny")]
    pub yes_always: bool,

    /// Refuse each permission request once: the agent's `reject_once` option; when it offers
    /// none, the turn is cancelled (nothing is persisted). Writes that change what runs are
    /// refused.
    #[arg(long)]
    pub deny: bool,

    /// Print every session update as one JSON line on stdout (the `session/update` params),
    /// then one `{"sessionId":..,"stopReason":..}` line per turn.
    #[arg(long)]
    pub json: bool,

    /// Log every JSON-RPC message (both directions, with timestamps and response times) to
    /// FILE as JSON lines. The log holds secrets: FILE is made readable by you only (0600), an
    /// existing one tightened and overwritten; a symbolic link there is refused.
    #[arg(long, value_name = "FILE")]
    pub log_rpc: Option<PathBuf>,

    /// Seconds to wait for the agent to start and to answer each request; during a prompt
    /// turn, the longest the agent may stay silent (waiting on us, for a permission answer or
    /// a terminal command, does not count). Default: 120 s for start-up and requests; a
    /// silence limit of 300 s on a `--prompt` turn, none on an interactive one. After
    /// `session/cancel` (this limit or Ctrl-C) the agent gets 10 s to end the turn.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,

    /// Continue an earlier session (`session/load`: the agent replays it) instead of starting
    /// a new one. Needs an agent with the `loadSession` capability.
    #[arg(long, value_name = "SESSION_ID", conflicts_with = "resume")]
    pub load: Option<String>,

    /// Continue a session saved for this directory (`acp sessions` lists them) without a
    /// replay (`session/resume`, when the agent offers it; else `session/load`, its replay
    /// not shown again): the saved conversation is taken back, and whether the agent still
    /// remembers it is said. An id not saved here is refused (exit 2) unless
    /// `--resume-unknown`.
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,

    /// Continue the most recent session saved for this directory (as `--resume` its id does;
    /// `acp sessions` lists them, newest first). None saved here: refused (exit 2).
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "load"])]
    pub continue_last: bool,

    /// With `--resume`: try an id that is not saved for this directory anyway (one the agent
    /// may keep from elsewhere); if the agent does not have it, the chat ends saying so.
    #[arg(long, requires = "resume")]
    pub resume_unknown: bool,

    /// Authenticate with this method of the agent's `authMethods`, before the session. Without
    /// it, a method is chosen only when the agent requires one: an `env_var` method whose
    /// variables the agent gets, or an `agent` method that starts no interactive login; an
    /// interactive login (browser, OAuth, account) runs only when named here.
    #[arg(long, value_name = "METHOD_ID")]
    pub auth: Option<String>,

    /// Put the session in this mode (`session/set_mode`) before the first prompt. An agent's
    /// mode decides what it does without asking (claude-agent-acp's `auto` asks nothing, so
    /// `--deny` has nothing to refuse: use `--mode default`). The modes are shown at start.
    #[arg(long, value_name = "MODE_ID")]
    pub mode: Option<String>,

    /// MCP servers for the session, from a JSON file in the shape other agents use:
    /// `{"mcpServers": {"name": {"command": "…", "args": […], "env": {…}}, "web": {"type":
    /// "http", "url": "https://…", "headers": {…}}}}`. stdio servers are always passed; http and
    /// sse ones only to agents that advertise them (the others are named on stderr).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    /// Run this agent by name (`acp agents` lists them: claude, codex, gemini, qwen, opencode,
    /// and those of a registry file) instead of a command after `--`.
    #[arg(long = "agent", value_name = "NAME", conflicts_with = "agent")]
    pub agent_name: Option<String>,

    /// A registry file (the ACP registry's `registry.json`) or one `agent.json` for --agent.
    #[arg(long, value_name = "FILE", requires = "agent_name")]
    pub registry: Option<PathBuf>,

    /// The session's working directory; the agent's file and terminal access is confined to
    /// it. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Pass an environment variable to the agent and to the commands it runs in terminals
    /// (repeatable): `NAME` passes this process's value (`NAME_*` every variable with that
    /// prefix), `NAME=VALUE` sets it. By default they only get PATH, HOME, USER, LOGNAME, SHELL,
    /// LANG, LANGUAGE, LC_*, TERM, COLORTERM, NO_COLOR, TMPDIR, TZ and XDG_*: pass the agent's
    /// API key this way, e.g. `--env ANTHROPIC_API_KEY`.
    #[arg(long = "env", value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<String>,

    /// Pass this process's whole environment to the agent and its terminals (API keys, tokens
    /// and all).
    #[arg(long)]
    pub inherit_env: bool,

    /// Largest JSON-RPC message (one line) accepted from the agent, in bytes; a longer one is
    /// skipped (and answered with an error if it was a request). Default 64 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES, hide_default_value = true,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=(1u64 << 32)))]
    pub max_message_bytes: usize,

    /// Most terminals the agent may have open at once (more are refused). Default 16.
    #[arg(long, value_name = "N", default_value_t = 16, hide_default_value = true,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1024))]
    pub max_terminals: usize,

    /// Most requests from the agent handled at once (more are refused). Default 64.
    #[arg(long, value_name = "N", default_value_t = 64, hide_default_value = true,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=4096))]
    pub max_concurrent_requests: usize,

    /// Talk to a remote agent at URL instead of starting one: `http(s)://HOST:PORT/acp` (HTTP +
    /// SSE) or `ws(s)://HOST:PORT/acp` (WebSocket), as `acp serve --http` or the official
    /// `agent-client-protocol-http` server expose it. If the connection drops, acp reconnects
    /// (a few attempts) and continues the session with session/resume or session/load.
    #[arg(long, value_name = "URL", conflicts_with_all = ["agent", "agent_name"])]
    pub connect: Option<String>,

    /// The token for --connect, sent as `Authorization: Bearer TOKEN`. Default: --token-file,
    /// else the ACP_TOKEN environment variable. (Arguments are visible to other local users:
    /// prefer those two.)
    #[arg(
        long,
        value_name = "TOKEN",
        requires = "connect",
        conflicts_with = "token_file"
    )]
    pub token: Option<String>,

    /// Read the token for --connect from FILE (surrounding whitespace ignored).
    #[arg(long, value_name = "FILE", requires = "connect")]
    pub token_file: Option<PathBuf>,

    /// Also trust the certificates of this PEM file for an https:// or wss:// --connect (a
    /// server with a self-signed certificate).
    #[arg(long, value_name = "FILE", requires = "connect")]
    pub ca_file: Option<PathBuf>,

    /// Send the token over an unencrypted http:// or ws:// --connect to a host that is not
    /// loopback (refused without this: anyone on the way can read the token and use it;
    /// prefer https:// or wss://, or an ssh tunnel).
    #[arg(long, requires = "connect")]
    pub allow_insecure: bool,

    /// The agent command and its arguments (after `--`). Default: `acp demo-agent`.
    #[arg(last = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<OsString>,
}

impl ChatArgs {
    /// The environment of the agent and its terminals (`--env`, `--inherit-env`).
    #[cfg(test)]
    pub fn env_policy(&self) -> acp_native::process::EnvPolicy {
        self.env_policy_with(&Default::default())
    }

    /// The agents' environment (`ChatArgs::env_policy`, in tests) with the variables of an
    /// `--agent` registry entry set first (so `--env` overrides them).
    pub fn env_policy_with(
        &self,
        extra: &std::collections::BTreeMap<String, String>,
    ) -> acp_native::process::EnvPolicy {
        env_policy_with(self.inherit_env, extra, &self.env)
    }
}

fn parse_env(s: &str) -> Result<String, String> {
    let name = s.split_once('=').map_or(s, |(n, _)| n);
    let pattern = name.strip_suffix('*').unwrap_or(name);
    if pattern.is_empty() && !name.ends_with('*') || name.is_empty() {
        return Err(format!("`{s}`: give NAME or NAME=VALUE"));
    }
    if pattern.contains(['*', '\0']) || (name.ends_with('*') && s.contains('=')) {
        return Err(format!("`{s}`: give NAME, NAME_* or NAME=VALUE"));
    }
    Ok(s.to_string())
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// The directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// One session per line as JSON.
    #[arg(long)]
    pub json: bool,

    /// Also ask this agent (by name, see `acp agents`) for its sessions.
    #[arg(long = "agent", value_name = "NAME", conflicts_with = "agent")]
    pub agent_name: Option<String>,

    /// Pass an environment variable to the agent (as `acp chat --env`).
    #[arg(long = "env", value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<String>,

    /// Also ask this agent command (after `--`) for its sessions.
    #[arg(last = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct DemoAgentArgs {
    /// Milliseconds to pause between the steps of a turn (for demos and tests).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    pub delay_ms: u64,

    /// Keep sessions in DIR so session/load, session/resume and session/list work across
    /// restarts (bounded: 64 sessions, 1 MiB of updates each; readable by you only).
    /// Default: this process only.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Require authentication: advertise an env_var method reading NAME and refuse sessions
    /// (-32000) until `authenticate` is called with it while NAME is set. Value: env:NAME.
    #[arg(long, value_name = "env:NAME", value_parser = crate::demo_agent::parse_require_auth)]
    pub require_auth: Option<String>,

    /// Advertise session/load only, not session/resume (for clients' tests of the replay).
    #[arg(long, hide = true)]
    pub no_resume: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve the WebSocket bridge on ADDR: IP:PORT, HOST:PORT, or a bare PORT (loopback,
    /// 127.0.0.1). Port 0 picks a free port; the address is printed on stderr. Any non-loopback
    /// address is warned about: ws:// is unencrypted. The default (without --http).
    #[arg(long, value_name = "ADDR", conflicts_with = "http")]
    pub ws: Option<String>,

    /// Serve ACP over HTTP + SSE and WebSocket on ADDR (same forms as --ws), at the path /acp,
    /// with the wire of the official `agent-client-protocol-http` transport (its HttpClient
    /// connects to http://ADDR or ws://ADDR). One agent per connection.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,

    /// With --http: serve HTTPS / WSS with this certificate chain (PEM). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key", requires = "http")]
    pub tls_cert: Option<PathBuf>,

    /// With --http: the private key (PEM) of --tls-cert, readable by you only (a key file its
    /// group or others can read is refused: chmod 600 it).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// With --http: the largest request body (and WebSocket message) accepted, in bytes;
    /// larger ones are answered HTTP 413. Default 16 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20, hide_default_value = true)]
    pub max_body: usize,

    /// With --http: seconds an idle HTTP connection is kept (no request and no open event
    /// stream), then closed and its agent stopped.
    #[arg(long, value_name = "SECONDS", default_value = "300", value_parser = parse_seconds)]
    pub idle_timeout: Duration,

    /// Also accept browser connections from this Origin (repeatable; `*` for any). Pages on
    /// localhost, 127.0.0.1 and [::1] are always accepted; clients sending no Origin
    /// (non-browser programs) need only the token.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,

    /// Also accept requests whose Host header is NAME (repeatable; NAME for any port, NAME:PORT
    /// for that one; `*` for any): the name clients reach this server by, e.g. behind a proxy
    /// or by a DNS name. localhost and IP addresses are always accepted; any other Host is
    /// answered HTTP 421 (a web page's DNS name pointed at this machine: DNS rebinding).
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,

    /// Read the token every client must present from FILE (surrounding whitespace ignored; at
    /// least 16 characters of A-Z a-z 0-9 - . _ ~). Default: the ACP_SERVE_TOKEN environment
    /// variable, else a random token printed on stderr at start. Clients send it as
    /// `Authorization: Bearer TOKEN`, the WebSocket subprotocol `acp.token.TOKEN` (browsers),
    /// or `?token=TOKEN` in the URL.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Seconds a connection has to complete its handshake (TLS, the WebSocket upgrade, each
    /// HTTP request head) before it is closed.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub handshake_timeout: Duration,

    /// Most connections served at once that showed the token (each runs an agent; with
    /// --http, 4 × N + 16 sockets); more are answered HTTP 503. Sockets that have not shown it
    /// yet take none: at most 128 of them (32 per address) are kept, the oldest closed first.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    pub max_connections: usize,

    /// Working directory of the agent processes. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Pass an environment variable to the agents (repeatable; as `acp chat --env`). By
    /// default they only get the allowlist (PATH, HOME, USER, LANG, ...).
    #[arg(long = "env", value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<String>,

    /// Pass this process's whole environment to the agents (ACP_SERVE_TOKEN blanked).
    #[arg(long)]
    pub inherit_env: bool,

    /// The agent command and its arguments (after `--`). Default: `acp demo-agent`.
    #[arg(last = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<OsString>,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("`{s}`: give a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// A registry file (the ACP registry's `registry.json`) or one `agent.json`, laid over the
    /// built-in list.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,

    /// One agent per line as JSON (id, name, version, description, the command and env).
    #[arg(long)]
    pub json: bool,

    /// Fetch the public registry now (into the cache) instead of when the cache is a day old.
    #[arg(long)]
    pub refresh: bool,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The method to sign in with (an id of the agent's `authMethods`; without it they are
    /// listed, and on a terminal you pick one).
    #[arg(long, value_name = "METHOD_ID")]
    pub method: Option<String>,

    /// Run a `terminal` method's login without asking first (it is still shown).
    #[arg(short, long)]
    pub yes: bool,

    /// The agent by name (`acp agents` lists them).
    #[arg(long = "agent", value_name = "NAME", conflicts_with = "agent")]
    pub agent_name: Option<String>,

    /// A registry file for --agent.
    #[arg(long, value_name = "FILE", requires = "agent_name")]
    pub registry: Option<PathBuf>,

    /// The agent's working directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Pass this variable to the agent (NAME takes it from this environment), as `acp chat`.
    #[arg(long = "env", value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<String>,

    /// Give the agent this whole environment instead of the allowlist, as `acp chat`.
    #[arg(long)]
    pub inherit_env: bool,

    /// The agent command, after `--`.
    #[arg(last = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_after_double_dash_are_the_agent_command() {
        let cli = Cli::try_parse_from([
            "acp",
            "chat",
            "--yes",
            "--timeout",
            "2.5",
            "--",
            "gemini",
            "--experimental-acp",
        ])
        .unwrap();
        let Command::Chat(args) = cli.command else {
            panic!()
        };
        assert!(args.yes);
        assert_eq!(args.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(args.agent, ["gemini", "--experimental-acp"]);
    }

    #[test]
    fn the_environment_is_an_allowlist_unless_told_otherwise() {
        use acp_native::process::EnvInherit;
        let chat = |extra: &[&str]| {
            let cli = Cli::try_parse_from(["acp", "chat"].iter().chain(extra)).unwrap();
            let Command::Chat(args) = cli.command else {
                panic!()
            };
            args
        };
        let host = [("PATH", "/bin"), ("API_KEY", "secret"), ("AWS_X", "y")];
        let host = || {
            host.iter()
                .map(|(k, v)| (std::ffi::OsString::from(*k), std::ffi::OsString::from(*v)))
        };
        let by_default = chat(&[]).env_policy().resolve(host());
        assert_eq!(by_default.keys().collect::<Vec<_>>(), ["PATH"]);
        let args = chat(&["--env", "API_KEY", "--env", "AWS_*", "--env", "X=1=2"]);
        let passed = args.env_policy().resolve(host());
        assert_eq!(
            passed.keys().collect::<Vec<_>>(),
            ["API_KEY", "AWS_X", "PATH", "X"]
        );
        assert_eq!(passed[std::ffi::OsStr::new("X")], "1=2");
        assert_eq!(
            *chat(&["--inherit-env"]).env_policy().inherit(),
            EnvInherit::All
        );
        assert!(Cli::try_parse_from(["acp", "chat", "--env", "=x"]).is_err());
        assert!(Cli::try_parse_from(["acp", "chat", "--env", ""]).is_err());
        let limits = chat(&["--max-message-bytes", "4096", "--max-terminals", "0"]);
        assert_eq!((limits.max_message_bytes, limits.max_terminals), (4096, 0));
        assert!(Cli::try_parse_from(["acp", "chat", "--max-message-bytes", "10"]).is_err());
    }

    #[test]
    fn yes_and_deny_conflict_and_timeouts_must_be_positive() {
        assert!(Cli::try_parse_from(["acp", "chat", "--yes", "--deny"]).is_err());
        assert!(Cli::try_parse_from(["acp", "chat", "--timeout", "0"]).is_err());
        assert!(Cli::try_parse_from(["acp", "chat", "--timeout", "x"]).is_err());
    }
}
