//! The agent at the other end: a process `acp chat` started ([`Peer::Local`]) or a remote
//! agent reached by URL with `--connect` ([`Peer::Remote`], `acp_native::remote::client`),
//! and how either is (re)started: [`Respawn`] (a crash restarts the process; a dropped
//! connection reconnects, both within the crash budget, and the session continues).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue};
use acp_native::process::{AgentCommand, ExitReport};
use acp_native::remote::client::{self as remote, ClientOptions, RemoteError, RemoteLink};
use acp_native::transport::{spawn_agent_with, AgentChild};
use acp_native::{ClientSideConnection, DriverConfig, Incoming};
use tokio::sync::watch;

use super::outcome::Outcome;
use crate::cli::args::ChatArgs;
use crate::cli::exit;
use crate::cli::rpc_log::Tap;

use crate::cli::watch::{AgentReader, AgentWriter, Watch};

/// The agent: its process, or the remote connection's transport.
pub(super) enum Peer {
    Local(AgentChild),
    Remote(RemoteLink),
}

impl Peer {
    /// The agent's exit report as a watch (a remote agent's never comes: its connection's
    /// end is watched instead).
    pub(super) fn exit_watch(&self) -> watch::Receiver<Option<ExitReport>> {
        match self {
            Peer::Local(agent) => agent.exit_watch(),
            Peer::Remote(_) => watch::channel(None).1,
        }
    }

    pub(super) fn remote(&self) -> Option<&RemoteLink> {
        match self {
            Peer::Remote(link) => Some(link),
            Peer::Local(_) => None,
        }
    }

    /// The last lines the agent wrote on stderr (none for a remote agent).
    pub(super) async fn stderr_tail(&self) -> Vec<String> {
        match self {
            Peer::Local(agent) => {
                match tokio::time::timeout(Duration::from_secs(1), agent.process().lock()).await {
                    Ok(p) => p.stderr_tail(),
                    Err(_) => Vec::new(),
                }
            }
            Peer::Remote(_) => Vec::new(),
        }
    }

    /// Stops the agent (bounded: grace, SIGTERM, SIGKILL), or ends the remote connection
    /// (HTTP: `DELETE`; WebSocket: a close frame).
    pub(super) async fn shutdown(&self, grace: Duration) {
        match self {
            Peer::Local(agent) => {
                let outcome = agent.shutdown(grace).await;
                tracing::debug!("agent stopped ({:?}): {}", outcome.stage, outcome.report);
            }
            Peer::Remote(link) => {
                link.close();
                let _ = tokio::time::timeout(grace, link.ended()).await;
            }
        }
    }
}

/// Why the agent could not be (re)started.
pub(super) struct StartError {
    pub(super) message: String,
    /// Trying again may help (a server restarting); not for a refused token, a bad URL, a
    /// program that does not exist.
    pub(super) transient: bool,
}

/// Starts the agent again (the same command or URL, handlers, watch and `--log-rpc` tap): its
/// connection and its [`Peer`].
pub(super) type Respawn = Box<
    dyn Fn()
            -> Pin<Box<dyn Future<Output = Result<(ClientSideConnection, Peer), StartError>> + Send>>
        + Send
        + Sync,
>;

/// A spawned agent's [`Respawn`].
pub(super) fn local_respawn<S>(
    cmd: AgentCommand,
    router: S,
    config: DriverConfig,
    watch: Arc<Watch>,
    tap: Option<Arc<Tap>>,
) -> Respawn
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    Box::new(move || {
        let (watch, tap) = (watch.clone(), tap.clone());
        let started = spawn_agent_with(
            &cmd,
            router.clone(),
            config.clone(),
            move |stdout, stdin| {
                (
                    AgentReader::new(stdout, watch, tap.clone()),
                    AgentWriter::new(stdin, tap),
                )
            },
        )
        .map(|(conn, agent)| (conn, Peer::Local(agent)))
        .map_err(|e| StartError {
            message: format!("cannot start the agent: {e}"),
            transient: false,
        });
        Box::pin(std::future::ready(started))
    })
}

/// A remote agent's [`Respawn`]: connects to `url` (through the watch and the `--log-rpc`
/// tap).
pub(super) fn remote_respawn<S>(
    url: String,
    options: ClientOptions,
    router: S,
    config: DriverConfig,
    watch: Arc<Watch>,
    tap: Option<Arc<Tap>>,
) -> Respawn
where
    S: tower::Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    Box::new(move || {
        let (url, options, router, config, watch, tap) = (
            url.clone(),
            options.clone(),
            router.clone(),
            config.clone(),
            watch.clone(),
            tap.clone(),
        );
        Box::pin(async move {
            let wrap = move |r, w| {
                (
                    AgentReader::new(r, watch, tap.clone()),
                    AgentWriter::new(w, tap),
                )
            };
            match remote::connect_with(&url, &options, router, config, wrap).await {
                Ok((conn, link)) => Ok((conn, Peer::Remote(link))),
                Err(e) => {
                    // Shown without the credentials a URL may carry (`?token=`).
                    let shown = acp_client::display::redact_url(&url);
                    let why = e.to_string().replace(&url, &shown);
                    Err(StartError {
                        transient: is_transient(&e),
                        message: format!("cannot connect to {shown}: {}", with_hint(&why)),
                    })
                }
            }
        })
    })
}

/// A connection failure that may pass (the server restarting, a network blip).
fn is_transient(e: &RemoteError) -> bool {
    match e {
        RemoteError::Refused { .. }
        | RemoteError::Connect { .. }
        | RemoteError::Timeout { .. }
        | RemoteError::Lost(_) => true,
        RemoteError::Http { status, .. } => *status == 404 || *status >= 500,
        RemoteError::Url(_)
        | RemoteError::Options(_)
        | RemoteError::Tls { .. }
        | RemoteError::Protocol(_) => false,
    }
}

/// A remote failure's message, with what to do about a refused token or certificate.
pub(super) fn with_hint(message: &str) -> String {
    if message.contains("HTTP 401") {
        format!(
            "{message}; give the server's token with --token-file FILE, --token TOKEN or the \
             ACP_TOKEN environment variable (`acp serve` prints it at start)"
        )
    } else if message.contains("UnknownIssuer") || message.contains("CA file") {
        format!("{message}; for a server with a self-signed certificate, pass it with --ca-file")
    } else {
        message.to_string()
    }
}

/// The options of `--connect`: the token (`--token`, `--token-file`, else `ACP_TOKEN`), the
/// extra CA file, the message size limit.
pub(super) fn client_options(args: &ChatArgs) -> Result<ClientOptions, Outcome> {
    let token = if let Some(token) = &args.token {
        Some(token.trim().to_string())
    } else if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Outcome::fail(exit::ERROR, format!("--token-file {}: {e}", path.display()))
        })?;
        let token = text.trim().to_string();
        if token.is_empty() {
            return Err(Outcome::fail(
                exit::ERROR,
                format!("--token-file {}: the file is empty", path.display()),
            ));
        }
        Some(token)
    } else {
        std::env::var("ACP_TOKEN")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    if token.as_deref() == Some("") {
        return Err(Outcome::fail(exit::USAGE, "--token: the token is empty"));
    }
    let mut options = ClientOptions {
        token,
        ca_file: args.ca_file.clone(),
        max_message_bytes: args.max_message_bytes,
        allow_insecure: args.allow_insecure,
        ..ClientOptions::default()
    };
    if let Some(t) = args.timeout {
        options.connect_timeout = t;
    }
    Ok(options)
}
