//! The agent of each connection: the factories (a spawned command, an in-process agent), a
//! new connection's slot and agent, and stopping it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::OwnedSemaphorePermit;
use tower::Service;

use super::responses::{text, Body};
use super::{ServerEvent, ServerState};
use crate::driver::{DriverConfig, Incoming};
use crate::process::{AgentCommand, AgentProcess};
use crate::transport::{self, DuplexHalves};
use crate::AgentSideConnection;

/// How long an agent gets to exit after its input closed, before `SIGTERM`, then `SIGKILL`.
pub(super) const AGENT_STOP_GRACE: Duration = Duration::from_millis(1500);
/// Bytes buffered per direction between the server and an in-process agent.
const IN_PROCESS_BUFFER: usize = 64 << 10;

/// The agent's end of one connection: the agent reads client messages (NDJSON) from
/// `writer`'s other end and writes its own to `reader`'s.
pub struct AgentLink {
    /// What the agent writes (its stdout).
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// What the agent reads (its stdin); closing it is the agent's cue to stop.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// A spawned agent's process: stopped (input closed, `SIGTERM`, `SIGKILL`, bounded) when
    /// the connection ends.
    pub process: Option<AgentProcess>,
}

/// Makes the agent of each new connection. Called only once the request creating the
/// connection passed authentication and the connection limit.
pub trait AgentFactory: Send + Sync + 'static {
    /// Starts one agent; an error becomes a 502 answer with its text.
    fn start(&self) -> Result<AgentLink, String>;
}

struct CommandAgent(AgentCommand);

impl AgentFactory for CommandAgent {
    fn start(&self) -> Result<AgentLink, String> {
        let mut process =
            AgentProcess::spawn(&self.0).map_err(|e| format!("cannot start the agent: {e}"))?;
        let writer = process.take_stdin().expect("a new process has stdin");
        let reader = process.take_stdout().expect("a new process has stdout");
        Ok(AgentLink {
            reader: Box::new(reader),
            writer: Box::new(writer),
            process: Some(process),
        })
    }
}

/// One process of `cmd` per connection.
pub fn command_agent(cmd: AgentCommand) -> Arc<dyn AgentFactory> {
    Arc::new(CommandAgent(cmd))
}

struct InProcessAgent<F>(F);

impl<F> AgentFactory for InProcessAgent<F>
where
    F: Fn(DuplexHalves) + Send + Sync + 'static,
{
    fn start(&self) -> Result<AgentLink, String> {
        let (ours, theirs) = transport::duplex(IN_PROCESS_BUFFER);
        (self.0)(theirs);
        Ok(AgentLink {
            reader: Box::new(ours.0),
            writer: Box::new(ours.1),
            process: None,
        })
    }
}

/// An in-process agent per connection: `start` gets the agent's ends of an in-memory pair
/// (read client messages from the first, write to the second) and must drive them (spawn a
/// task, e.g. [`AgentSideConnection::connect`]). Called inside the runtime.
pub fn in_process_agent(
    start: impl Fn(DuplexHalves) + Send + Sync + 'static,
) -> Arc<dyn AgentFactory> {
    Arc::new(InProcessAgent(start))
}

/// An in-process agent written with this crate: per connection, `make` builds the service
/// (usually a [`crate::Router`] behind [`crate::layers::LifecycleLayer`]) from the agent's
/// [`AgentSideConnection`], as [`AgentSideConnection::connect_with`] does. `config.core.role`
/// must be [`Role::Agent`].
pub fn router_agent<S, F>(config: DriverConfig, make: F) -> Arc<dyn AgentFactory>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
    F: Fn(AgentSideConnection) -> S + Send + Sync + 'static,
{
    assert_eq!(
        config.core.role,
        Role::Agent,
        "router_agent needs an agent config"
    );
    in_process_agent(move |(reader, writer)| {
        let _ = AgentSideConnection::connect_with(reader, writer, config.clone(), &make);
    })
}

/// A connection slot and a started agent for a new connection, or the answer refusing it: 503
/// (with `Retry-After`) beyond `max_connections`, 502 when the agent cannot start.
pub(super) fn start_agent(
    shared: &Arc<ServerState>,
    peer: SocketAddr,
) -> Result<(OwnedSemaphorePermit, AgentLink), Box<Response<Body>>> {
    let Ok(slot) = shared.slots.clone().try_acquire_owned() else {
        let reason = format!(
            "{} connections open (max_connections); try again later",
            shared.config.max_connections
        );
        shared.event(ServerEvent::Refused {
            peer,
            status: 503,
            reason: reason.clone(),
        });
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many connections: {reason}"),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return Err(Box::new(r));
    };
    let link = match shared.agent.start() {
        Ok(l) => l,
        Err(e) => {
            shared.event(ServerEvent::Refused {
                peer,
                status: 502,
                reason: e.clone(),
            });
            return Err(Box::new(text(StatusCode::BAD_GATEWAY, e)));
        }
    };
    Ok((slot, link))
}

/// An agent line over `max_agent_message_bytes`, seen from its first bytes: dropped (logged);
/// for a response, the error for its id that goes to the client in its place.
pub(super) fn oversize_agent_line(limit: usize, prefix: &[u8]) -> Option<String> {
    tracing::warn!(limit, "an agent message over the limit was dropped");
    let sniffed = acp_core::sniff::sniff(prefix);
    transport::oversize_response_stand_in(&sniffed, limit, "the server's")
}

/// Closes the agent's input and stops its process, if any (bounded); the exit report.
pub(super) async fn stop_agent(
    mut writer: Box<dyn AsyncWrite + Send + Unpin>,
    process: Option<AgentProcess>,
) -> Option<String> {
    let _ = tokio::time::timeout(Duration::from_millis(200), writer.shutdown()).await;
    drop(writer);
    let mut process = process?;
    let outcome = process.shutdown(AGENT_STOP_GRACE).await;
    Some(outcome.report.to_string())
}
