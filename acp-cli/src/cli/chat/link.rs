//! The link to the agent: its connection, the agent at the other end ([`Peer`]: a process or
//! a remote link), its exit report, and starting it again after a crash or a dropped
//! connection ([`Respawn`]; whether and when is acp-client's session engine's decision).

use std::time::Duration;

use acp_native::process::ExitReport;
use acp_native::remote::client::RemoteLink;
use acp_native::ClientSideConnection;
use tokio::sync::watch;

use super::remote::{Peer, Respawn, StartError};

/// The agent as `acp chat` reaches it.
pub(super) struct AgentLink {
    /// The connection (replaced when the agent is started again).
    pub(super) conn: ClientSideConnection,
    /// The agent process (its stderr tail, its shutdown), or the remote agent's transport.
    peer: Peer,
    /// The agent's exit report, once it exited.
    exited: watch::Receiver<Option<ExitReport>>,
    /// Starts the agent again (the same command, handlers and tap) after a crash, or
    /// reconnects to a remote one.
    respawn: Respawn,
    /// The agent as shown: its program, or the URL without credentials.
    pub(super) program: String,
}

impl AgentLink {
    /// Starts the agent (or connects to it) the first time.
    pub(super) async fn start(respawn: Respawn, program: String) -> Result<AgentLink, StartError> {
        let (conn, peer) = respawn().await?;
        let exited = peer.exit_watch();
        Ok(AgentLink {
            conn,
            peer,
            exited,
            respawn,
            program,
        })
    }

    /// The remote agent's transport (`--connect`), if that is what the agent is.
    pub(super) fn remote(&self) -> Option<&RemoteLink> {
        self.peer.remote()
    }

    /// Waits until the agent's exit report is known (never, for a remote agent).
    pub(super) async fn wait_exit(&self) -> ExitReport {
        let mut exited = self.exited.clone();
        let seen = exited.wait_for(Option::is_some).await.map(|r| (*r).clone());
        match seen {
            Ok(r) => r.expect("waited for Some"),
            // The watcher task is gone: never resolve (the caller has other branches).
            Err(_) => std::future::pending().await,
        }
    }

    /// The agent exited, or its connection closed.
    pub(super) fn has_stopped(&self) -> bool {
        self.exited.borrow().is_some() || self.conn.is_closed()
    }

    /// How the agent ended, in a few words (the session engine's notice says it): how its
    /// process ended, or that its connection was lost.
    pub(super) fn end_reason(&self) -> String {
        if let Some(report) = self.exited.borrow().as_ref() {
            return report.termination.to_string();
        }
        match self.remote() {
            Some(_) => "its connection was lost".into(),
            None => "its connection closed".into(),
        }
    }

    /// Why a remote agent's connection failed: the transport's reason, else the connection's.
    pub(super) fn failure(&self) -> String {
        self.remote()
            .and_then(|link| link.failure())
            .or_else(|| self.conn.handle().close_reason())
            .unwrap_or_else(|| "the connection closed".into())
    }

    /// The last lines the agent wrote on stderr (none for a remote agent).
    pub(super) async fn stderr_tail(&self) -> Vec<String> {
        self.peer.stderr_tail().await
    }

    /// Stops what is left of the agent and starts it again (or reconnects); on failure the
    /// old, stopped link stays.
    pub(super) async fn restart(&mut self) -> Result<(), StartError> {
        self.peer.shutdown(Duration::from_millis(200)).await;
        let (conn, peer) = (self.respawn)().await?;
        self.exited = peer.exit_watch();
        self.conn = conn;
        self.peer = peer;
        Ok(())
    }

    /// Stops the agent (bounded: grace, SIGTERM, SIGKILL), or ends the remote connection.
    pub(super) async fn shutdown(&self, grace: Duration) {
        self.peer.shutdown(grace).await;
    }
}
