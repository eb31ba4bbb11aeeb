//! `acp serve --ws ADDR`: a WebSocket bridge from browser (or any WebSocket) clients to local
//! agents; `acp serve --http ADDR`: the same agents over HTTP + SSE and WebSocket on `/acp`,
//! with the official `agent-client-protocol-http` wire, plus TLS with `--tls-cert`/`--tls-key`,
//! body and backlog limits and an idle timeout. Both are [`RemoteServer`]
//! ([`acp_native::remote::server`]): `--ws` its [`ServerMode::WebSocketOnly`] (a WebSocket on
//! any path, nothing else), `--http` its [`ServerMode::HttpAndWebSocket`]. This file has the
//! arguments, the token, what is printed (in moderation) and the signals.
//!
//! Each connection gets its own agent process (default: the built-in demo agent). One JSON-RPC
//! message travels per text frame; the server turns frames into NDJSON lines for the agent's
//! stdin and the agent's stdout lines into frames. Bytes are copied as they are: the client
//! speaks ACP to the agent end to end.
//!
//! Safety (docs/security.md, "`acp serve`"):
//!
//! * **A token for every connection.** Random (32 bytes from `/dev/urandom`, printed on stderr
//!   at start), or read from `--token-file` / `ACP_SERVE_TOKEN`. Accepted as
//!   `Authorization: Bearer TOKEN`, as the WebSocket subprotocol `acp.token.TOKEN` (echoed, as
//!   RFC 6455 wants: browsers cannot set headers) or as `?token=TOKEN`; compared in constant
//!   time. Missing or wrong: HTTP 401.
//! * **Host.** The request's `Host` must be one of this server's names: `localhost`, an IP
//!   address, or one given with `--allow-host` (else 421), so a web page whose DNS name was
//!   pointed at 127.0.0.1 (DNS rebinding) is refused before anything else.
//! * **Origins.** A handshake carrying an `Origin` (a browser page) must come from a local page
//!   (localhost, 127.0.0.1, `[::1]`) or one listed with `--allow-origin` (else 403), so a web site
//!   the user visits cannot drive a local agent even if it learnt the token. Non-browser
//!   clients send no `Origin` and need only the token.
//! * **No agent before authorisation.** An agent starts only once a handshake request has
//!   passed the checks (so a failure to start is still the handshake's answer, 502). The
//!   handshake's request must arrive within `--handshake-timeout` (10 s). At most
//!   `--max-connections` (64) authorised connections are served at once, more are answered
//!   503; sockets that have not shown the token hold none of them, only a place in a small
//!   budget per peer address and overall whose oldest is closed when a new one arrives over it
//!   ([`acp_native::remote::admission`]), so they cannot keep clients out. A silent WebSocket
//!   is pinged every 30 s and closed when it answers nothing for twice that; one that pings
//!   faster than it reads the pongs is closed.
//! * **Refusals are said in moderation**: at most [`REFUSAL_LINES`] lines every
//!   [`REFUSAL_WINDOW`] (the rest counted, then said in one line), the 503s once until a
//!   connection opens, and a client's header quoted escaped and cut.
//! * **Loopback by default** (a bare port is `127.0.0.1:PORT`); any other address is warned
//!   about on stderr.
//! * Everything printed that came from outside (the agents' stderr in their exit reports,
//!   handshake errors) goes through acp-client's [`escape_text`].
//! * Ctrl-C, SIGTERM and SIGHUP (the terminal closing) stop every agent (its whole process
//!   group), then exit; a second signal stops at once (the agents' groups are killed).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_client::display::escape_text;
use acp_native::process::AgentCommand;
use acp_native::remote::auth;
use acp_native::remote::server::{
    self as remote, RemoteServer, RemoteServerConfig, ServerEvent, ServerMode,
};
use tokio::net::TcpListener;
#[cfg(unix)]
use tokio::signal::unix::{signal, Signal, SignalKind};
#[cfg(windows)]
use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, CtrlBreak, CtrlC, CtrlClose};

use super::exit;
use super::ServeArgs;

/// The environment variable a token can be given in.
pub const TOKEN_ENV: &str = "ACP_SERVE_TOKEN";
/// Port used when `--ws` is not given.
const DEFAULT_PORT: u16 = 8765;
/// Lines about refused or failed sockets (401, 403, 421, handshake timeouts…) shown per
/// [`REFUSAL_WINDOW`]; the rest are counted and said in one line.
const REFUSAL_LINES: u32 = 10;
const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

/// What `acp serve` says about refused sockets, in moderation: anyone who reaches the port
/// can be refused as often as they like, and each refusal must not cost a line.
#[derive(Default)]
struct Log {
    /// "N connections open: refusing more" has been said since the last connection opened.
    full_said: AtomicBool,
    refusals: Mutex<RefusalWindow>,
}

#[derive(Default)]
struct RefusalWindow {
    start: Option<Instant>,
    shown: u32,
    hidden: u64,
}

impl Log {
    /// A line about a refused or failed socket: shown while fewer than [`REFUSAL_LINES`] were
    /// in this [`REFUSAL_WINDOW`], else counted (and the count said at the next line shown
    /// after the window, or at the end).
    fn refusal(&self, line: &str) {
        let mut w = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if w.start
            .is_none_or(|s| now.duration_since(s) >= REFUSAL_WINDOW)
        {
            Self::say_hidden(&mut w);
            *w = RefusalWindow {
                start: Some(now),
                ..RefusalWindow::default()
            };
        }
        if w.shown < REFUSAL_LINES {
            w.shown += 1;
            say(line);
            if w.shown == REFUSAL_LINES {
                say(&format!(
                    "(more refusals within {}s are counted, not shown)",
                    REFUSAL_WINDOW.as_secs()
                ));
            }
        } else {
            w.hidden += 1;
        }
    }

    /// Says how many refusal lines were not shown (at the end).
    fn flush(&self) {
        Self::say_hidden(&mut self.refusals.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn say_hidden(w: &mut RefusalWindow) {
        if w.hidden > 0 {
            say(&format!(
                "{} more refusal(s) not shown (at most {REFUSAL_LINES} lines every {}s)",
                w.hidden,
                REFUSAL_WINDOW.as_secs()
            ));
            w.hidden = 0;
        }
    }

    /// The server is full (503): said once until a connection opens.
    fn full(&self, line: &str) {
        if !self.full_said.swap(true, Ordering::Relaxed) {
            say(line);
        }
    }

    /// A connection opened: the next 503 is said again.
    fn opened(&self) {
        self.full_said.store(false, Ordering::Relaxed);
    }
}

/// Writes one line on stderr, sanitised (ESC and other controls cannot reach the terminal),
/// ignoring write errors (a closed terminal must not stop the shutdown).
fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "acp serve: {}", escape_text(line));
}

/// Runs `acp serve`; returns the exit code (only on a signal or a start-up failure).
pub async fn run(args: ServeArgs) -> i32 {
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                say(&format!("no current directory: {e}"));
                return exit::ERROR;
            }
        },
    };
    if !cwd.is_dir() {
        say(&format!("--cwd {} is not a directory", cwd.display()));
        return exit::ERROR;
    }
    let command = if args.agent.is_empty() {
        super::default_agent()
    } else {
        args.agent.clone()
    };
    let token = match choose_token(args.token_file.as_deref(), std::env::var_os(TOKEN_ENV)) {
        Ok(t) => t,
        Err(e) => {
            say(&e);
            return exit::ERROR;
        }
    };
    let addr = listen_address(args.http.as_deref().or(args.ws.as_deref()).unwrap_or(""));
    if let Some(e) = tls_needs_http(&args) {
        say(&e);
        return exit::ERROR;
    }
    if let Some(e) = args.tls_key.as_deref().and_then(readable_by_others) {
        say(&format!("--tls-key {e}: a private key must be yours alone"));
        return exit::ERROR;
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => match remote::tls_config_from_pem(cert, key) {
            Ok(t) => Some(t),
            Err(e) => {
                say(&e);
                return exit::ERROR;
            }
        },
        _ => None,
    };
    let listener = match TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            say(&format!("cannot listen on {addr}: {e}"));
            return exit::ERROR;
        }
    };
    let local = listener.local_addr().ok();
    let shown_addr = local.map_or_else(|| addr.clone(), |a| a.to_string());
    let shown: Vec<String> = command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let (scheme, path) = match (args.http.is_some(), tls.is_some()) {
        (false, _) => ("ws", "/"),
        (true, false) => ("http", "/acp"),
        (true, true) => ("https", "/acp"),
    };
    if args.http.is_some() {
        let ws = if tls.is_some() { "wss" } else { "ws" };
        say(&format!(
            "listening on {scheme}://{shown_addr}/acp (HTTP + SSE, and {ws}://{shown_addr}/acp; \
             one `{}` per connection)",
            shown.join(" ")
        ));
    } else {
        say(&format!(
            "listening on ws://{shown_addr} (one `{}` per connection)",
            shown.join(" ")
        ));
    }
    let how = "clients send `Authorization: Bearer TOKEN`, the WebSocket subprotocol \
               `acp.token.TOKEN`, or ?token=TOKEN";
    match &token.source {
        TokenSource::Generated => {
            say(&format!("token: {} ({how})", token.value));
            // The URL without the token: a URL gets copied, saved and logged (a session
            // record, a shell history, a proxy's log); the token is given on its own.
            say(&format!(
                "connect to {scheme}://{shown_addr}{path} with that token (`acp chat --connect \
                 URL` with --token-file FILE or ACP_TOKEN; a browser: the subprotocol \
                 acp.token.TOKEN)"
            ));
        }
        TokenSource::File(path) => say(&format!("token: from {} ({how})", path.display())),
        TokenSource::Env => say(&format!("token: from {TOKEN_ENV} ({how})")),
    }
    if let Some(local) = local.filter(|a| !a.ip().is_loopback() && tls.is_none()) {
        say(&format!(
            "WARNING: {} is not a loopback address: other machines can reach this server, and \
             {scheme}:// is unencrypted, so anyone on the path can read the token and the \
             traffic, then run agents as you. Listen on 127.0.0.1 unless you mean it (a tunnel \
             or a TLS proxy in front{}).",
            local.ip(),
            if args.http.is_some() {
                ", or --tls-cert/--tls-key"
            } else {
                ""
            }
        ));
    }
    if let Some(local) = local.filter(|a| !a.ip().is_loopback() && tls.is_some()) {
        say(&format!(
            "note: {} is not a loopback address: other machines can reach this server (TLS, \
             token required)",
            local.ip()
        ));
    }
    let mut env = super::env_policy(args.inherit_env, &args.env);
    // The token is not the agents' business (it lets its holder start more agents).
    if args.inherit_env
        && std::env::var_os(TOKEN_ENV).is_some()
        && !args
            .env
            .iter()
            .any(|e| e.split('=').next() == Some(TOKEN_ENV))
    {
        env.set_var(TOKEN_ENV, "");
    }
    let agent = AgentCommand::new(command[0].clone())
        .args(command[1..].iter().cloned())
        .cwd(&cwd)
        .env(env);
    let log = Arc::new(Log::default());
    let settings = server_config(&args, token.value, tls, log.clone());
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            say(&format!("cannot handle signals: {e}"));
            return exit::ERROR;
        }
    };
    // One agent process per connection, until a signal.
    let server = RemoteServer::new(remote::command_agent(agent), settings);
    let serving = server.serve(listener);
    tokio::pin!(serving);
    let signal = tokio::select! {
        _ = &mut serving => return exit::ERROR,
        name = signals.next() => name,
    };
    say(&format!(
        "{signal}: stopping ({} connection(s) open)",
        server.open_connections()
    ));
    // Each connection stops its agent (stdin closed, SIGTERM, SIGKILL of its group), bounded;
    // a second signal stops at once (what is left is killed as the runtime drops it).
    server.stop();
    tokio::select! {
        _ = &mut serving => {}
        name = signals.next() => say(&format!("{name}: stopping now")),
    }
    log.flush();
    exit::OK
}

/// What is said when --max-connections are open.
fn full_line(max_connections: usize) -> String {
    format!(
        "{max_connections} connections open (--max-connections): refusing more with HTTP 503 \
         until one closes"
    )
}

/// The server's settings: `--http` is [`ServerMode::HttpAndWebSocket`] (`/acp`), `--ws`
/// [`ServerMode::WebSocketOnly`] (a WebSocket on any path); what happens is said on stderr
/// through `log`, in each mode's words.
fn server_config(
    args: &ServeArgs,
    token: String,
    tls: Option<Arc<remote::TlsServerConfig>>,
    log: Arc<Log>,
) -> RemoteServerConfig {
    let mut settings = RemoteServerConfig::new(token);
    settings.allowed_origins = args.allow_origin.clone();
    settings.allowed_hosts = args.allow_host.clone();
    settings.max_connections = args.max_connections;
    settings.handshake_timeout = args.handshake_timeout;
    settings.tls = tls;
    let max_connections = args.max_connections;
    if args.http.is_some() {
        settings.mode = ServerMode::HttpAndWebSocket;
        settings.max_sockets = 4 * args.max_connections + 16;
        settings.max_body_bytes = args.max_body;
        settings.idle_timeout = args.idle_timeout;
        settings.on_event = Some(Arc::new(move |e| match e {
            ServerEvent::Refused {
                peer,
                status,
                reason,
            } => match status {
                // A full server is said once until a connection opens, not once per refusal.
                503 => log.full(&format!("{peer}: refused ({status}): {reason}")),
                0 => log.refusal(&format!("{peer}: {reason}")),
                _ => log.refusal(&format!("{peer}: refused ({status}): {reason}")),
            },
            ServerEvent::Opened {
                peer,
                connection_id,
                transport,
                pid,
            } => {
                log.opened();
                let pid = pid.map(|p| format!("; agent pid {p}")).unwrap_or_default();
                say(&format!(
                    "{peer}: connected over {transport} (connection {connection_id}){pid}"
                ));
            }
            ServerEvent::Closed {
                connection_id,
                reason,
                ..
            } => say(&format!("connection {connection_id}: {reason}")),
        }));
    } else {
        settings.mode = ServerMode::WebSocketOnly;
        // A message of a client is bounded as an agent's (--max-body is --http's).
        settings.max_body_bytes = acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES;
        settings.on_event = Some(Arc::new(move |e| match e {
            ServerEvent::Refused {
                peer,
                status,
                reason,
            } => match status {
                503 => log.full(&full_line(max_connections)),
                0 => log.refusal(&format!("{peer}: {reason}")),
                _ => {
                    let status = hyper::StatusCode::from_u16(status)
                        .map_or_else(|_| status.to_string(), |s| s.to_string());
                    log.refusal(&format!("{peer}: refused ({status}): {reason}"))
                }
            },
            ServerEvent::Opened { peer, pid, .. } => {
                log.opened();
                let pid = pid.map(|p| format!("; agent pid {p}")).unwrap_or_default();
                say(&format!("{peer}: connected{pid}"));
            }
            ServerEvent::Closed { peer, reason, .. } => say(&format!("{peer}: {reason}")),
        }));
    }
    settings
}

/// `--tls-cert`/`--tls-key` are for `--http` (the `--ws` bridge has no TLS).
fn tls_needs_http(args: &ServeArgs) -> Option<String> {
    (args.http.is_none() && (args.tls_cert.is_some() || args.tls_key.is_some())).then(|| {
        "--tls-cert/--tls-key need --http (acp serve --ws has no TLS: use --http, which also \
         serves WebSocket on /acp)"
            .to_string()
    })
}

/// SIGINT, SIGTERM and SIGHUP.
#[cfg(unix)]
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

/// Windows: Ctrl-C, Ctrl-Break (as SIGTERM) and the console closed (as SIGHUP).
#[cfg(windows)]
struct Signals {
    int: CtrlC,
    term: CtrlBreak,
    hup: CtrlClose,
}

impl Signals {
    #[cfg(windows)]
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: ctrl_c()?,
            term: ctrl_break()?,
            hup: ctrl_close()?,
        })
    }

    #[cfg(unix)]
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}

/// `--ws` / `--http`: a bare port (`8765`, `:8765`) means loopback; anything else is used as
/// given.
fn listen_address(given: &str) -> String {
    let port = given.strip_prefix(':').unwrap_or(given);
    match port.parse::<u16>() {
        Ok(p) => format!("127.0.0.1:{p}"),
        Err(_) if given.is_empty() => format!("127.0.0.1:{DEFAULT_PORT}"),
        Err(_) => given.to_string(),
    }
}

enum TokenSource {
    Generated,
    File(PathBuf),
    Env,
}

struct Token {
    value: String,
    source: TokenSource,
}

/// `--token-file`, else `ACP_SERVE_TOKEN`, else a fresh random token.
fn choose_token(file: Option<&Path>, env: Option<OsString>) -> Result<Token, String> {
    if let Some(path) = file {
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(4096).read_to_string(&mut text))
            .map_err(|e| format!("cannot read --token-file {}: {e}", path.display()))?;
        if let Some(e) = readable_by_others(path) {
            say(&format!("warning: {e}"));
        }
        let value = auth::check_token(text.trim(), &format!("the token in {}", path.display()))?;
        return Ok(Token {
            value,
            source: TokenSource::File(path.to_path_buf()),
        });
    }
    if let Some(v) = env {
        let v = v
            .into_string()
            .map_err(|_| format!("{TOKEN_ENV} is not UTF-8"))?;
        let value = auth::check_token(v.trim(), TOKEN_ENV)?;
        return Ok(Token {
            value,
            source: TokenSource::Env,
        });
    }
    let value =
        auth::generate_token().map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(Token {
        value,
        source: TokenSource::Generated,
    })
}

/// Whether a file holding a secret (`--token-file`: a warning; `--tls-key`: refused) can be
/// read by its group or by anyone: what to say about it.
#[cfg(not(unix))]
fn readable_by_others(_path: &Path) -> Option<String> {
    // Windows: access lists, not mode bits; a file in the user's profile is private to them.
    None
}

/// Whether a file holding a secret (`--token-file`: a warning; `--tls-key`: refused) can be
/// read by its group or by anyone: what to say about it.
#[cfg(unix)]
fn readable_by_others(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    (meta.mode() & 0o044 != 0).then(|| {
        format!(
            "{} is readable by other users (chmod 600 it)",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_a_loopback_port() {
        use clap::Parser;
        assert_eq!(listen_address("8765"), "127.0.0.1:8765");
        assert_eq!(listen_address(":0"), "127.0.0.1:0");
        assert_eq!(listen_address("0.0.0.0:80"), "0.0.0.0:80");
        assert_eq!(listen_address("[::1]:80"), "[::1]:80");
        assert_eq!(listen_address("localhost:80"), "localhost:80");
        let cli = super::super::Cli::try_parse_from(["acp", "serve"]).unwrap();
        let super::super::Command::Serve(args) = cli.command else {
            panic!()
        };
        assert_eq!(args.ws, None);
        assert_eq!(args.http, None);
        assert_eq!(listen_address(""), "127.0.0.1:8765");
        assert_eq!(args.max_body, 16 << 20);
        assert_eq!(args.idle_timeout, Duration::from_secs(300));
        // --ws and --http are one or the other; TLS needs both files and --http.
        let parse = |a: &[&str]| super::super::Cli::try_parse_from(a.iter().copied());
        assert!(parse(&["acp", "serve", "--ws", "1", "--http", "2"]).is_err());
        assert!(parse(&["acp", "serve", "--http", "2", "--tls-cert", "c"]).is_err());
        // TLS with --ws is refused when run (`tls_needs_http`).
        let ws_tls = parse(&[
            "acp",
            "serve",
            "--ws",
            "2",
            "--tls-cert",
            "c",
            "--tls-key",
            "k",
        ]);
        let super::super::Command::Serve(args) = ws_tls.unwrap().command else {
            panic!()
        };
        assert!(tls_needs_http(&args).is_some());
        assert!(parse(&[
            "acp",
            "serve",
            "--http",
            "2",
            "--tls-cert",
            "c",
            "--tls-key",
            "k"
        ])
        .is_ok());
        assert_eq!(args.handshake_timeout, Duration::from_secs(10));
        assert_eq!(args.max_connections, 64);
    }

    #[test]
    fn tokens_come_from_the_file_the_environment_or_the_random_source() {
        let generated = choose_token(None, None).unwrap();
        assert!(matches!(generated.source, TokenSource::Generated));
        assert_eq!(generated.value.len(), 64);
        assert!(generated.value.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(generated.value, choose_token(None, None).unwrap().value);
        let env = choose_token(None, Some(" from-the-environment-1 \n".into())).unwrap();
        assert_eq!(env.value, "from-the-environment-1");
        assert!(choose_token(None, Some("short".into())).is_err());
        assert!(choose_token(None, Some("with space in the middle".into())).is_err());
        assert!(choose_token(None, Some("".into())).is_err());
        assert!(choose_token(Some(Path::new("/nonexistent/acp-token")), None).is_err());
    }
}
