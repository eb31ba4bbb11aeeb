//! `acp serve --ws ADDR`: a WebSocket bridge from browser (or any WebSocket) clients to local
//! agents.
//!
//! Each accepted connection gets its own agent process (default: the built-in demo agent). One
//! JSON-RPC message travels per text frame; the bridge ([`transport::ws_bridge`]) turns frames
//! into NDJSON lines for the agent's stdin and the agent's stdout lines into frames. Bytes are
//! copied as they are: the client speaks ACP to the agent end to end.
//!
//! Safety: it binds only the address it is given, and it refuses WebSocket handshakes from
//! browser pages whose `Origin` is not local (localhost, 127.0.0.1, [::1]) or listed with
//! `--allow-origin`, so a web site the user visits cannot drive a local agent. Clients that send
//! no `Origin` (non-browser programs) are accepted.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acp_native::process::{AgentCommand, AgentProcess, EnvPolicy};
use acp_native::transport;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http;

use super::exit;
use super::ServeArgs;

const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

struct Config {
    command: Vec<OsString>,
    cwd: PathBuf,
    allowed_origins: Vec<String>,
    /// The agents' environment (`--env`, `--inherit-env`; the allowlist by default).
    env: EnvPolicy,
}

/// Runs `acp serve`; returns the exit code (only on Ctrl-C / SIGTERM or a bind failure).
pub async fn run(args: ServeArgs) -> i32 {
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("acp: no current directory: {e}");
                return exit::ERROR;
            }
        },
    };
    if !cwd.is_dir() {
        eprintln!("acp: --cwd {} is not a directory", cwd.display());
        return exit::ERROR;
    }
    let command = if args.agent.is_empty() {
        super::default_agent()
    } else {
        args.agent.clone()
    };
    let listener = match TcpListener::bind(&args.ws).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("acp: cannot listen on {}: {e}", args.ws);
            return exit::ERROR;
        }
    };
    let local = listener
        .local_addr()
        .map_or_else(|_| args.ws.clone(), |a| a.to_string());
    let shown: Vec<String> = command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    eprintln!(
        "acp serve: listening on ws://{local} (one `{}` per connection)",
        shown.join(" ")
    );
    let config = Arc::new(Config {
        command,
        cwd,
        allowed_origins: args.allow_origin.clone(),
        env: super::env_policy(args.inherit_env, &args.env),
    });
    let (mut sigint, mut sigterm) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            eprintln!("acp: cannot handle signals");
            return exit::ERROR;
        }
    };
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(serve_connection(stream, peer, config.clone()));
                }
                Err(e) => eprintln!("acp serve: accept failed: {e}"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
        }
    }
    eprintln!(
        "acp serve: stopping ({} connection(s) open)",
        connections.len()
    );
    // Dropping the tasks drops their AgentProcess values, which kill the agents' groups.
    connections.shutdown().await;
    exit::OK
}

/// Whether a browser page from `origin` may connect.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed
        .iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .unwrap_or("");
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']')
            .next()
            .map(|h| format!("[{h}]"))
            .unwrap_or_default()
    } else {
        rest.split([':', '/']).next().unwrap_or("").to_string()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

fn reject(status: u16, body: String) -> ErrorResponse {
    let mut r = http::Response::new(Some(body));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::FORBIDDEN);
    r
}

// The handshake callback's error type is tungstenite's; its size is not ours to choose.
#[allow(clippy::result_large_err)]
async fn serve_connection(stream: TcpStream, peer: SocketAddr, config: Arc<Config>) {
    let _ = stream.set_nodelay(true);
    // Start the agent first, so a failure can be the handshake's answer.
    let cmd = AgentCommand::new(config.command[0].clone())
        .args(config.command[1..].iter().cloned())
        .cwd(&config.cwd)
        .env(config.env.clone());
    let spawned = AgentProcess::spawn(&cmd);
    let spawn_error = spawned.as_ref().err().map(ToString::to_string);
    let allowed = config.allowed_origins.clone();
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        if let Some(origin) = req.headers().get(http::header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !origin_allowed(origin, &allowed) {
                return Err(reject(
                    403,
                    format!("origin {origin} is not allowed (acp serve --allow-origin)"),
                ));
            }
        }
        if let Some(e) = spawn_error {
            return Err(reject(502, format!("cannot start the agent: {e}")));
        }
        Ok(resp)
    };
    let ws = tokio_tungstenite::accept_hdr_async(stream, check).await;
    let (mut process, ws) = match (spawned, ws) {
        (Ok(p), Ok(ws)) => (p, ws),
        (Err(e), _) => {
            eprintln!("acp serve: {peer}: cannot start the agent: {e}");
            return;
        }
        (Ok(_), Err(e)) => {
            eprintln!("acp serve: {peer}: WebSocket handshake failed: {e}");
            return;
        }
    };
    eprintln!("acp serve: {peer}: connected; agent pid {}", process.pid());
    let (mut from_client, mut to_client) = transport::ws_bridge(ws);
    let mut agent_in = process.take_stdin().expect("a new process has stdin");
    let mut agent_out = process.take_stdout().expect("a new process has stdout");
    let up = async move {
        let _ = tokio::io::copy(&mut from_client, &mut agent_in).await;
        // Dropping stdin gives the agent EOF.
    };
    let down = async move {
        let _ = tokio::io::copy(&mut agent_out, &mut to_client).await;
        // EOF on the bridge sends a close frame.
        let _ = to_client.shutdown().await;
    };
    tokio::pin!(up, down);
    let (who, down_done) = tokio::select! {
        _ = &mut up => ("the client closed the connection", false),
        _ = &mut down => ("the agent closed its stdout", true),
    };
    let outcome = process.shutdown(SHUTDOWN_GRACE).await;
    if !down_done {
        // The client left first: what the agent still wrote goes out while the socket lasts.
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut down).await;
    }
    eprintln!("acp serve: {peer}: {who}; {}", outcome.report);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_or_listed_origins_are_allowed() {
        let none: Vec<String> = vec![];
        assert!(origin_allowed("http://localhost:3000", &none));
        assert!(origin_allowed("http://127.0.0.1", &none));
        assert!(origin_allowed("https://[::1]:8080", &none));
        assert!(!origin_allowed("https://evil.example", &none));
        assert!(!origin_allowed("http://localhost.evil.example", &none));
        assert!(!origin_allowed("null", &none));
        let listed = vec!["https://app.example".to_string()];
        assert!(origin_allowed("https://app.example", &listed));
        assert!(origin_allowed("https://anything", &["*".to_string()]));
    }
}
