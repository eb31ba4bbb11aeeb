//! The accept loop and each socket's life: its admission ticket, TLS, its first request
//! (read by [`super::head`], a plain `GET` answered by [`super::chunked`]) and hyper for the
//! rest; 503 for sockets over the limit.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

use super::super::admission::{self, Ticket};
use super::agents::AGENT_STOP_GRACE;
use super::chunked::{stream_body, write_head};
use super::connection::HttpConn;
use super::dispatch::handle;
use super::head::{read_first_head, FirstHead, Rewind};
use super::responses::{closes, Body};
use super::{RemoteServer, ServerEvent, ServerMode};

/// Refusals (503) being written at once; beyond that an excess socket is just closed.
pub(super) const MAX_REFUSALS_IN_FLIGHT: usize = 32;
/// How long a refused socket is kept to deliver its 503.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);

impl RemoteServer {
    /// Accepts sockets from `listener` until [`stop`](Self::stop), then stops every agent
    /// (bounded: their input closed, `SIGTERM`, `SIGKILL`) and returns.
    pub async fn serve(&self, listener: TcpListener) {
        let shared = &self.shared;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shared.stop.cancelled() => break,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    // Admission (`max_sockets`, the unauthenticated budget) is the socket's.
                    match shared.sockets.arrive(peer.ip()) {
                        Ok((ticket, _)) => {
                            let server = self.clone();
                            tokio::spawn(async move {
                                server.serve_with_ticket(stream, peer, ticket).await;
                            });
                        }
                        Err(admission::Full) => self.refuse_full(stream, peer),
                    }
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    // E.g. out of file descriptors: do not spin.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        drop(listener);
        let open: Vec<Arc<HttpConn>> = shared
            .connections
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect();
        for conn in open {
            conn.close(shared, "the server is stopping");
        }
        shared.tasks.close();
        let _ = tokio::time::timeout(
            3 * AGENT_STOP_GRACE + Duration::from_secs(2),
            shared.tasks.wait(),
        )
        .await;
    }

    /// Serves one accepted socket (TLS first when configured), under the same admission as
    /// [`serve`](Self::serve)'s sockets: 503 when `max_sockets` sockets that showed the token
    /// are open, else a place among the unauthenticated ones until a request shows it.
    pub async fn serve_socket(&self, stream: TcpStream, peer: SocketAddr) {
        match self.shared.sockets.arrive(peer.ip()) {
            Ok((ticket, _)) => Box::pin(self.serve_with_ticket(stream, peer, ticket)).await,
            Err(admission::Full) => self.refuse_full(stream, peer),
        }
    }

    /// A socket over `max_sockets`: said, and answered 503 (bounded).
    fn refuse_full(&self, stream: TcpStream, peer: SocketAddr) {
        let shared = &self.shared;
        let (max, what, name) = shared.config.socket_limit();
        shared.event(ServerEvent::Refused {
            peer,
            status: 503,
            reason: format!("{max} {what} open ({name})"),
        });
        if let Ok(permit) = shared.refusals.clone().try_acquire_owned() {
            let body = format!("too many connections ({name}); try again later\n");
            tokio::spawn(async move {
                answer_busy(stream, &body).await;
                drop(permit);
            });
        }
    }

    /// Serves a socket that has its ticket. While it has not shown the token (its TLS
    /// handshake, its first request head, hyper's requests after a refusal or `/health`), each
    /// wait also ends when the ticket is evicted ([`Self::evicted`]); a request that shows it
    /// admits it ([`handle`]), and an SSE stream only follows such a request.
    async fn serve_with_ticket(&self, stream: TcpStream, peer: SocketAddr, ticket: Ticket) {
        let _ = stream.set_nodelay(true);
        let ticket = Arc::new(ticket);
        match self.shared.config.tls.clone() {
            // Boxed: a plain socket's task does not carry the handshake's or a TLS stream's size.
            Some(tls) => Box::pin(self.serve_tls(stream, peer, tls, ticket)).await,
            None => self.serve_io(stream, peer, false, ticket).await,
        }
    }

    /// Said when a socket that has not shown the token is closed to make room for a newer one.
    fn evicted(&self, peer: SocketAddr) {
        let config = &self.shared.config;
        self.shared.event(ServerEvent::Refused {
            peer,
            status: 0,
            reason: format!(
                "closed without {} showing the token, to make room for a newer socket (at most \
                 {} such sockets, {} per address)",
                config.showing(),
                config.max_unauthenticated,
                config.max_unauthenticated_per_peer
            ),
        });
    }

    async fn serve_tls(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        ticket: Arc<Ticket>,
    ) {
        let shared = &self.shared;
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let accepted = tokio::select! {
            r = tokio::time::timeout(shared.config.handshake_timeout, acceptor.accept(stream)) => r,
            _ = shared.stop.cancelled() => return,
            _ = ticket.evicted() => return self.evicted(peer),
        };
        match accepted {
            Ok(Ok(tls)) => self.serve_io(tls, peer, true, ticket).await,
            Ok(Err(e)) => shared.event(ServerEvent::Refused {
                peer,
                status: 0,
                reason: format!("TLS handshake failed: {e}"),
            }),
            Err(_) => shared.event(ServerEvent::Refused {
                peer,
                status: 0,
                reason: format!(
                    "no TLS handshake within {:?}",
                    shared.config.handshake_timeout
                ),
            }),
        }
    }

    /// Serves the HTTP/1.1 requests of one socket. The first request's head is read here: when
    /// it is a plain `GET` (an SSE stream, usually the only request its socket ever carries),
    /// its answer is written here too, so an open stream holds only its socket, its lease and a
    /// small task rather than a hyper connection's buffers (~20 KiB); whatever the socket
    /// carries next, or first when it is anything else, is hyper's.
    async fn serve_io<I>(&self, mut io: I, peer: SocketAddr, tls: bool, ticket: Arc<Ticket>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = &self.shared;
        // Boxed, as hyper's part below: the head's buffer, the timer and the handler are not
        // part of the task of a stream that stays open for hours.
        let prefix = match Box::pin(self.first_request(&mut io, peer, tls, &ticket)).await {
            First::Close => {
                let _ = io.shutdown().await;
                return;
            }
            First::Hyper(prefix) => prefix,
            First::Stream(body, close) => match stream_body(&mut io, body, &shared.stop).await {
                Ok(true) if !close => Bytes::new(),
                _ => {
                    let _ = io.shutdown().await;
                    return;
                }
            },
        };
        // Boxed: a socket served above does not carry hyper's connection state in its task.
        Box::pin(self.serve_hyper(Rewind { prefix, io }, peer, tls, ticket)).await
    }

    /// Reads the socket's first request head; a plain `GET` is answered here (a sized answer
    /// whole, a stream's head), anything else is left to hyper.
    async fn first_request<I>(
        &self,
        io: &mut I,
        peer: SocketAddr,
        tls: bool,
        ticket: &Arc<Ticket>,
    ) -> First
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = &self.shared;
        let head = tokio::select! {
            r = tokio::time::timeout(shared.config.handshake_timeout, read_first_head(io)) => r,
            _ = shared.stop.cancelled() => return First::Close,
            _ = ticket.evicted() => {
                self.evicted(peer);
                return First::Close;
            }
        };
        let websocket_only = shared.config.mode == ServerMode::WebSocketOnly;
        match head {
            // No complete head in time, or the peer left: hyper would close it too. (Said for
            // a WebSocket-only server, whose every socket is a handshake, as a failed one.)
            Err(_) => {
                if websocket_only {
                    shared.event(ServerEvent::Refused {
                        peer,
                        status: 0,
                        reason: format!(
                            "no WebSocket handshake within {:?}; closed",
                            shared.config.handshake_timeout
                        ),
                    });
                }
                First::Close
            }
            Ok(FirstHead::Gone) => {
                if websocket_only {
                    shared.event(ServerEvent::Refused {
                        peer,
                        status: 0,
                        reason: "WebSocket handshake failed: the socket closed before its \
                                 request was complete"
                            .into(),
                    });
                }
                First::Close
            }
            Ok(FirstHead::Other(prefix)) => First::Hyper(prefix),
            Ok(FirstHead::Get(req, asked_close)) => {
                let resp = handle(shared.clone(), peer, tls, ticket.clone(), req).await;
                // The socket closes after the answer when the client or the server says so.
                let close = asked_close || closes(resp.headers());
                match write_head(io, resp, close).await {
                    Ok(Some(body)) => First::Stream(body, close),
                    Ok(None) if !close => First::Hyper(Bytes::new()),
                    _ => First::Close,
                }
            }
        }
    }

    async fn serve_hyper<I>(&self, io: I, peer: SocketAddr, tls: bool, ticket: Arc<Ticket>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        let evicted = ticket.clone();
        let svc = hyper::service::service_fn(move |req| {
            let (shared, ticket) = (shared.clone(), ticket.clone());
            async move { Ok::<_, Infallible>(handle(shared, peer, tls, ticket, req).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.shared.config.handshake_timeout)
            .serve_connection(TokioIo::new(io), svc)
            .with_upgrades();
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, "HTTP connection ended: {e}");
                }
            }
            _ = self.shared.stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
            }
            // (Never once a request showed the token.)
            _ = evicted.evicted() => self.evicted(peer),
        }
    }
}

/// What comes after a socket's first request head.
enum First {
    /// An SSE stream (its head written): its body, and whether the client asked to close after.
    Stream(Body, bool),
    /// hyper serves the socket from here, the bytes already read first.
    Hyper(Bytes),
    /// The socket is done.
    Close,
}

/// Answers a socket over the limit with `503 Service Unavailable` and `body` (`Retry-After:
/// 5`), then reads until the client closes (so closing does not reset the connection before it
/// read the answer), all within 2 s.
async fn answer_busy(mut stream: TcpStream, body: &str) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so closing does not reset the connection
        // before it has read the answer.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

#[cfg(test)]
mod task_size {
    use hyper::StatusCode;
    use tokio_util::sync::CancellationToken;

    use super::super::responses::empty;
    use super::super::{in_process_agent, RemoteServerConfig};
    use super::*;

    /// Each open SSE stream is one task of `serve_socket`'s future, for as long as the stream is
    /// open: it must stay small (the handshake, the head's parsing, the handler and hyper are
    /// boxed away from it). 10,000 streams at 1 KiB are 10 MiB.
    #[tokio::test]
    async fn a_socket_s_task_stays_under_a_kilobyte() {
        let server = RemoteServer::new(in_process_agent(|_| {}), RemoteServerConfig::new("t"));
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (socket, peer) = l.accept().await.unwrap();
        let task = server.serve_socket(socket, peer);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1024, "serve_socket's future is {size} bytes");
        drop(task);
        // What `serve` spawns per socket.
        let _client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (socket, peer) = l.accept().await.unwrap();
        let (ticket, _) = server.shared.sockets.arrive(peer.ip()).unwrap();
        let task = server.serve_with_ticket(socket, peer, ticket);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 1024, "serve_with_ticket's future is {size} bytes");
        let mut io = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let stop = CancellationToken::new();
        let stream = stream_body(&mut io, empty(StatusCode::OK).into_body(), &stop);
        let size = std::mem::size_of_val(&stream);
        assert!(size <= 512, "stream_body's future is {size} bytes");
    }
}
