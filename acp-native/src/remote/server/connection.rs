//! One HTTP + SSE connection: its agent, the routing of the agent's messages to its streams,
//! its subscribers, its idle timeout and its end.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::jsonrpc::Envelope;
use acp_core::Id;
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::super::wire;
use super::agents::{oversize_agent_line, stop_agent, AgentLink};
use super::mailbox::Mailbox;
use super::routes::{session_of, success, InitAnswer, Routes, SessionStream};
use super::{ServerEvent, ServerState};
use crate::process::AgentProcess;

/// A fresh connection id: 128 random bits in the UUID v4 text form the official server uses.
pub(super) fn new_connection_id() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        // Never reached on Linux; ids must still be unique.
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed) as u128 ^ (std::process::id() as u128) << 64;
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Why a stream cannot be subscribed to.
pub(super) enum Unavailable {
    Busy,
    Unknown,
}

/// One HTTP + SSE connection: its agent, its streams and the routing between them.
pub(super) struct HttpConn {
    pub(super) id: String,
    /// The peer of the socket whose `initialize` opened it.
    pub(super) peer: SocketAddr,
    pub(super) writer: tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>,
    pub(super) process: tokio::sync::Mutex<Option<AgentProcess>>,
    pub(super) routes: Mutex<Routes>,
    pub(super) closed: CancellationToken,
    pub(super) close_reason: Mutex<Option<String>>,
    /// Bytes queued in this connection's mailboxes.
    pub(super) backlog: Arc<AtomicUsize>,
    /// SSE streams open.
    pub(super) readers: AtomicUsize,
    last_active: Mutex<tokio::time::Instant>,
    pub(super) slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl HttpConn {
    /// Starts a connection on `link` (whose `initialize` is `init`): the task routing the
    /// agent's output, and the idle timer.
    pub(super) fn start(
        shared: &Arc<ServerState>,
        id: String,
        peer: SocketAddr,
        link: AgentLink,
        slot: OwnedSemaphorePermit,
        init: (Id, oneshot::Sender<InitAnswer>),
    ) -> Arc<HttpConn> {
        let backlog = Arc::new(AtomicUsize::new(0));
        let conn = Arc::new(HttpConn {
            id,
            peer,
            writer: tokio::sync::Mutex::new(Some(link.writer)),
            process: tokio::sync::Mutex::new(link.process),
            routes: Mutex::new(Routes {
                connection: Arc::new(Mailbox::new(backlog.clone())),
                sessions: HashMap::new(),
                pending: HashMap::new(),
                init: Some(init),
            }),
            closed: CancellationToken::new(),
            close_reason: Mutex::new(None),
            backlog,
            readers: AtomicUsize::new(0),
            last_active: Mutex::new(tokio::time::Instant::now()),
            slot: Mutex::new(Some(slot)),
        });
        // The agent's output, routed to the streams until it ends.
        let (c, s) = (conn.clone(), shared.clone());
        let mut reader = link.reader;
        shared.tasks.spawn(async move {
            let why = tokio::select! {
                why = c.read_agent(&mut reader, &s) => why,
                _ = c.closed.cancelled() => return,
            };
            c.close(&s, &why);
        });
        // Idle connections end.
        let (c, s) = (conn.clone(), shared.clone());
        let idle = shared.config.idle_timeout;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(idle / 4 + Duration::from_millis(1)) => {}
                    _ = c.closed.cancelled() => return,
                }
                let quiet = c.last_active.lock().unwrap().elapsed();
                if c.readers.load(Ordering::Relaxed) == 0 && quiet >= idle {
                    c.close(
                        &s,
                        &format!("idle: no request and no open stream for {quiet:?}"),
                    );
                    return;
                }
            }
        });
        conn
    }

    /// The client did something: the idle timer starts again.
    pub(super) fn touch(&self) {
        *self.last_active.lock().unwrap() = tokio::time::Instant::now();
    }

    /// Why the connection closed, once it has.
    pub(super) fn close_reason(&self) -> Option<String> {
        self.close_reason.lock().unwrap().clone()
    }

    /// Writes one message to the agent.
    pub(super) async fn send_line(&self, mut line: String) -> Result<(), String> {
        line.push('\n');
        let mut w = self.writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err("the connection is closed".into());
        };
        w.write_all(line.as_bytes())
            .await
            .map_err(|e| format!("the agent's input is closed: {e}"))?;
        w.flush()
            .await
            .map_err(|e| format!("the agent's input is closed: {e}"))
    }

    /// Reads the agent's messages and routes each; returns why the output ended.
    async fn read_agent(
        &self,
        reader: &mut (dyn AsyncRead + Send + Unpin),
        shared: &Arc<ServerState>,
    ) -> String {
        use acp_core::framing::{is_blank, Decoder, Frame};
        let mut decoder = Decoder::new(shared.config.max_agent_message_bytes);
        // Read into spare capacity (never zero-filled: an idle connection holds only what was
        // read).
        let mut buf = Vec::with_capacity(16 << 10);
        let mut overflow = None;
        loop {
            buf.clear();
            let n = match reader.read_buf(&mut buf).await {
                Ok(n) => n,
                Err(e) => return format!("reading the agent failed: {e}"),
            };
            let mut sink = |f: Frame<'_>| {
                if overflow.is_some() {
                    return;
                }
                match f {
                    Frame::Line(line) if !is_blank(line) => {
                        if let Err(e) = self.route(line, shared) {
                            overflow = Some(e);
                        }
                    }
                    Frame::Line(_) => {}
                    Frame::Oversize { limit, prefix } => {
                        if let Some(msg) = oversize_agent_line(limit, prefix) {
                            if let Err(e) = self.route(msg.as_bytes(), shared) {
                                overflow = Some(e);
                            }
                        }
                    }
                }
            };
            if n == 0 {
                decoder.finish(&mut sink);
            } else {
                decoder.decode(&buf[..n], &mut sink);
            }
            if let Some(e) = overflow {
                return e;
            }
            if n == 0 {
                let report = match self.process.lock().await.as_ref() {
                    Some(p) => match tokio::time::timeout(Duration::from_secs(2), p.wait()).await {
                        Ok(r) => format!("the agent exited: {r}"),
                        Err(_) => "the agent closed its output".into(),
                    },
                    None => "the agent closed its output".into(),
                };
                return report;
            }
        }
    }

    /// Puts one agent message on its stream (or answers initialize).
    pub(super) fn route(&self, line: &[u8], shared: &Arc<ServerState>) -> Result<(), String> {
        let text = String::from_utf8_lossy(line);
        let envelope = Envelope::parse(&text).ok();
        let mut routes = self.routes.lock().unwrap();
        let target = match &envelope {
            None => routes.connection.clone(),
            Some(env) if env.method().is_some() => match session_of(env) {
                Some(session) => routes.confirm(&session, &self.backlog),
                None => routes.connection.clone(),
            },
            // A `method` that is not a string: malformed, on the connection's stream.
            Some(env) if env.is_request() || env.is_notification() => routes.connection.clone(),
            Some(env) => {
                let id = env.id();
                if let (Some(id), Some((init_id, _))) = (&id, &routes.init) {
                    if id == init_id {
                        let (_, tx) = routes.init.take().unwrap();
                        let is_error = success(env).is_none();
                        let _ = tx.send(InitAnswer {
                            line: text.into_owned(),
                            is_error,
                        });
                        return Ok(());
                    }
                }
                let pending = id.and_then(|id| {
                    let queue = routes.pending.get_mut(&id)?;
                    let p = queue.pop_front();
                    if queue.is_empty() {
                        routes.pending.remove(&id);
                    }
                    p
                });
                match pending {
                    Some((route, effect)) => routes
                        .response_target(route, effect, success(env))
                        .unwrap_or_else(|| routes.connection.clone()),
                    None => routes.connection.clone(),
                }
            }
        };
        drop(routes);
        let event = wire::sse_event(&text.replace('\r', " "));
        let queued = self.backlog.fetch_add(event.len(), Ordering::Relaxed) + event.len();
        if queued > shared.config.max_backlog_bytes {
            self.backlog.fetch_sub(event.len(), Ordering::Relaxed);
            return Err(format!(
                "the client did not read its event streams: more than {} bytes queued \
                 (max_backlog_bytes)",
                shared.config.max_backlog_bytes
            ));
        }
        target.push(Bytes::from(event));
        Ok(())
    }

    /// The lease of the connection's stream or of `session`'s (created before the agent names
    /// it, within [`wire::MAX_UNCONFIRMED_SESSION_STREAMS`]); one reader each.
    pub(super) fn subscribe(self: &Arc<Self>, session: Option<&str>) -> Result<Lease, Unavailable> {
        let mut routes = self.routes.lock().unwrap();
        let mailbox = match session {
            None => routes.connection.clone(),
            Some(s) => match routes.sessions.get(s) {
                Some(stream) => stream.mailbox.clone(),
                None => {
                    let unconfirmed = routes.sessions.values().filter(|s| !s.confirmed).count();
                    if unconfirmed >= wire::MAX_UNCONFIRMED_SESSION_STREAMS {
                        return Err(Unavailable::Unknown);
                    }
                    let mailbox = Arc::new(Mailbox::new(self.backlog.clone()));
                    routes.sessions.insert(
                        s.to_string(),
                        SessionStream {
                            mailbox: mailbox.clone(),
                            confirmed: false,
                        },
                    );
                    mailbox
                }
            },
        };
        if !mailbox.lease() {
            return Err(Unavailable::Busy);
        }
        self.readers.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            conn: self.clone(),
            mailbox,
            session: session.map(str::to_string),
        })
    }

    /// Ends the connection: unregistered, its streams end (after what is queued), its agent is
    /// stopped in the background (bounded).
    pub(super) fn close(self: &Arc<Self>, shared: &Arc<ServerState>, reason: &str) {
        if self.closed.is_cancelled() {
            return;
        }
        *self.close_reason.lock().unwrap() = Some(reason.to_string());
        self.closed.cancel();
        {
            let mut map = shared.connections.lock().unwrap();
            if map.get(&self.id).is_some_and(|c| Arc::ptr_eq(c, self)) {
                map.remove(&self.id);
            }
        }
        {
            let mut routes = self.routes.lock().unwrap();
            routes.connection.close();
            for s in routes.sessions.values() {
                s.mailbox.close();
            }
            routes.init = None;
        }
        let (c, s, reason) = (self.clone(), shared.clone(), reason.to_string());
        shared.tasks.spawn(async move {
            let writer = c.writer.lock().await.take();
            let process = c.process.lock().await.take();
            let report = stop_agent(
                writer.unwrap_or_else(|| Box::new(tokio::io::sink())),
                process,
            )
            .await;
            c.slot.lock().unwrap().take();
            let reason = match report {
                Some(r) if !reason.contains("exited") => format!("{reason}; {r}"),
                _ => reason,
            };
            s.event(ServerEvent::Closed {
                peer: c.peer,
                connection_id: c.id.clone(),
                reason,
            });
        });
    }
}

/// One client reading one stream.
pub(super) struct Lease {
    pub(super) conn: Arc<HttpConn>,
    pub(super) mailbox: Arc<Mailbox>,
    pub(super) session: Option<String>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.mailbox.release();
        self.conn.readers.fetch_sub(1, Ordering::Relaxed);
        self.conn.touch();
        // A stream for a session the agent never named exists only while a client holds it.
        if let Some(session) = &self.session {
            let mut routes = self.conn.routes.lock().unwrap();
            if routes
                .sessions
                .get(session)
                .is_some_and(|s| !s.confirmed && Arc::ptr_eq(&s.mailbox, &self.mailbox))
            {
                routes.sessions.remove(session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_ids_look_like_uuids_and_differ() {
        let a = new_connection_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_ne!(a, new_connection_id());
    }
}
