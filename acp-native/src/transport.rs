//! Transports: each gives a `(reader, writer)` pair for [`crate::driver::spawn`] or the role
//! constructors ([`crate::ClientSideConnection::connect`], [`crate::AgentSideConnection::connect`]).
//!
//! * [`stdio`]: this process's stdin/stdout (an agent launched by its client);
//! * [`spawn_agent`]: an agent subprocess (supervised by [`crate::process::AgentProcess`]),
//!   already connected, whose exit status and stderr tail become the close reason;
//! * [`tcp_connect`] / [`tcp_split`]: NDJSON over TCP (client and server);
//! * [`ws_connect`] / [`ws_accept`] / [`ws_bridge`]: WebSocket, one JSON-RPC message per text
//!   frame, bridged to NDJSON so the driver is the same; every WebSocket of the crate is built
//!   with [`ws_config`] on a [`WsSocket`] and closes a peer that owes too many pongs
//!   ([`ws_limits`]);
//! * [`duplex`]: an in-memory pair (tests, in-process agents).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio_tungstenite::WebSocketStream;
use tower::Service;

use crate::driver::{DriverConfig, Incoming};
use crate::process::{AgentCommand, AgentProcess, ExitReport, ShutdownOutcome, SpawnError};
use crate::ClientSideConnection;

pub mod ws_limits;
pub(crate) mod ws_pump;
pub use ws_limits::{ws_config, WsSocket, MAX_OWED_PONGS};

/// Halves of one end of an in-memory or bridged stream.
pub type DuplexHalves = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// This process's stdin and stdout (for an agent launched over stdio). Nothing else may write
/// to stdout: log to stderr.
///
/// When stdin / stdout are pipes (how a client launches an agent), they are driven by the
/// reactor ([`tokio::net::unix::pipe`], file descriptors set non-blocking) instead of
/// `tokio::io::stdin()`'s blocking thread pool, which costs a thread hand-off per read.
/// Otherwise (a terminal, a file) `tokio::io::stdin()` / `stdout()` are used.
#[cfg(unix)]
pub fn stdio() -> (StdinReader, StdoutWriter) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let reader = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Receiver::from_owned_fd(fd).ok())
        .map(StdinReader::Pipe)
        .unwrap_or_else(|| StdinReader::Std(tokio::io::stdin()));
    let writer = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| pipe::Sender::from_owned_fd(fd).ok())
        .map(StdoutWriter::Pipe)
        .unwrap_or_else(|| StdoutWriter::Std(tokio::io::stdout()));
    (reader, writer)
}

/// This process's stdin and stdout (for an agent launched over stdio), through
/// `tokio::io::stdin()` / `stdout()` (Windows). Nothing else may write to stdout: log to stderr.
#[cfg(not(unix))]
pub fn stdio() -> (StdinReader, StdoutWriter) {
    (
        StdinReader::Std(tokio::io::stdin()),
        StdoutWriter::Std(tokio::io::stdout()),
    )
}

/// This process's stdin (see [`stdio`]).
#[derive(Debug)]
pub enum StdinReader {
    /// A pipe, driven by the reactor.
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    /// Anything else (a terminal, a file), through `tokio::io::stdin()`.
    Std(tokio::io::Stdin),
}

/// This process's stdout (see [`stdio`]).
#[derive(Debug)]
pub enum StdoutWriter {
    /// A pipe, driven by the reactor.
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    /// Anything else (a terminal, a file), through `tokio::io::stdout()`.
    Std(tokio::io::Stdout),
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            StdinReader::Pipe(p) => std::pin::Pin::new(p).poll_read(cx, buf),
            StdinReader::Std(s) => std::pin::Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        match self.get_mut() {
            #[cfg(unix)]
            StdoutWriter::Pipe(p) => std::pin::Pin::new(p).poll_write(cx, buf),
            StdoutWriter::Std(s) => std::pin::Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            StdoutWriter::Pipe(p) => std::pin::Pin::new(p).poll_flush(cx),
            StdoutWriter::Std(s) => std::pin::Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            #[cfg(unix)]
            StdoutWriter::Pipe(p) => std::pin::Pin::new(p).poll_shutdown(cx),
            StdoutWriter::Std(s) => std::pin::Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Two connected in-memory ends; each buffers at most `max_buf_size` bytes in flight per
/// direction (writers wait beyond that).
pub fn duplex(max_buf_size: usize) -> (DuplexHalves, DuplexHalves) {
    let (a, b) = tokio::io::duplex(max_buf_size);
    (tokio::io::split(a), tokio::io::split(b))
}

/// Connects to an NDJSON-over-TCP peer (`TCP_NODELAY` set).
pub async fn tcp_connect(addr: impl ToSocketAddrs) -> io::Result<(OwnedReadHalf, OwnedWriteHalf)> {
    let s = TcpStream::connect(addr).await?;
    Ok(tcp_split(s))
}

/// Splits an accepted (or connected) TCP stream for the driver (`TCP_NODELAY` set).
pub fn tcp_split(stream: TcpStream) -> (OwnedReadHalf, OwnedWriteHalf) {
    let _ = stream.set_nodelay(true);
    stream.into_split()
}

/// WebSocket errors.
pub use tokio_tungstenite::tungstenite::Error as WsError;

/// Connects to a WebSocket server (`ws://...`; no TLS here: `wss://` is the remote client's,
/// `remote::client`, feature `remote`) and bridges it to NDJSON.
pub async fn ws_connect(url: &str) -> Result<DuplexHalves, WsError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::error::UrlError;
    let request = url.into_client_request()?;
    let uri = request.uri();
    let port = match (uri.scheme_str(), uri.port_u16()) {
        (Some("wss"), _) => return Err(WsError::Url(UrlError::TlsFeatureNotEnabled)),
        (Some("ws"), port) => port.unwrap_or(80),
        _ => return Err(WsError::Url(UrlError::UnsupportedUrlScheme)),
    };
    let host = uri.host().ok_or(WsError::Url(UrlError::NoHostName))?;
    // An IPv6 literal comes bracketed.
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let stream = TcpStream::connect((host.as_str(), port)).await?;
    let config = ws_config(acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES);
    let (ws, _response) = tokio_tungstenite::client_async_with_config(
        request,
        WsSocket::client(stream),
        Some(config),
    )
    .await?;
    Ok(ws_bridge(ws))
}

/// Accepts a WebSocket on a TCP stream (server side) and bridges it to NDJSON.
pub async fn ws_accept(stream: TcpStream) -> Result<DuplexHalves, WsError> {
    let _ = stream.set_nodelay(true);
    let config = ws_config(acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES);
    let ws =
        tokio_tungstenite::accept_async_with_config(WsSocket::server(stream), Some(config)).await?;
    Ok(ws_bridge(ws))
}

/// Bytes buffered by a WebSocket bridge per direction.
const WS_BRIDGE_BUFFER: usize = 256 << 10;

/// Bridges an established WebSocket to an NDJSON byte stream: each text (or binary, read as
/// UTF-8) frame becomes one line, or the lines it holds (a frame of pretty-printed JSON one
/// line, a frame of several NDJSON lines each of them); each line written becomes one text
/// frame. A close frame or error is EOF; EOF on the writer sends a close frame. Spawns the
/// bridge task (needs a runtime), which runs the crate's one frame pump
/// (`transport/ws_pump.rs`).
///
/// Lines written are framed by acp-core's decoder with its default 64 MiB limit, so a peer
/// writing without newlines cannot make the bridge buffer without bound. A longer line is
/// skipped; if it was a response (its id read from its first bytes), the WebSocket side gets
/// an Internal error for that id in its place, so the caller is not left waiting.
///
/// The WebSocket must run on a [`WsSocket`] (build it with [`ws_config`]): a peer that sends
/// pings faster than it reads their pongs is closed once it owes [`MAX_OWED_PONGS`]
/// ([`ws_limits`]), a warning logged and the lines side ended.
pub fn ws_bridge<S>(ws: WebSocketStream<WsSocket<S>>) -> DuplexHalves
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    ws_bridge_reporting(ws).0
}

/// [`ws_bridge`], with a receiver told why the bridge closed the WebSocket when it did so
/// itself (a peer that sent pings faster than it reads their pongs: "the client sent pings
/// faster than it reads our answers …"). When the WebSocket ended otherwise (closed by the
/// peer, failed, or EOF on the lines side) nothing is sent. The reason is sent before the
/// lines side ends, so it can be read as soon as that EOF is.
pub fn ws_bridge_reporting<S>(
    ws: WebSocketStream<WsSocket<S>>,
) -> (DuplexHalves, tokio::sync::oneshot::Receiver<String>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    ws_bridge_limited(ws, acp_core::framing::DEFAULT_MAX_MESSAGE_BYTES)
}

pub(crate) use acp_core::sniff::oversize_response_stand_in;

/// The bridge's side of the frame pump: only a ping flood is reported (logged and sent on
/// the bridge's receiver); a response over the limit is answered with an error for its id.
struct BridgeSide {
    closed: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
}

impl ws_pump::PumpSide for BridgeSide {
    fn read_ended(&self, end: ws_pump::ReadEnd) {
        match end {
            ws_pump::ReadEnd::PingFlood(flood) => {
                tracing::warn!("{flood}");
                if let Some(closed) = self.closed.lock().unwrap().take() {
                    let _ = closed.send(flood.to_string());
                }
            }
            ws_pump::ReadEnd::Failed(e) => tracing::debug!("websocket read failed: {e}"),
            _ => {}
        }
    }

    fn send_failed(&self, error: WsError) {
        tracing::debug!("websocket write failed: {error}");
    }

    fn oversize(&self, limit: usize, prefix: &[u8]) -> Option<String> {
        let sniffed = acp_core::sniff::sniff(prefix);
        match oversize_response_stand_in(&sniffed, limit, "the WebSocket bridge's") {
            Some(line) => {
                tracing::warn!(id = ?sniffed.id, limit, "a response over the WebSocket bridge's limit was replaced by an error");
                Some(line)
            }
            None => {
                tracing::warn!(
                    limit,
                    "a message over the WebSocket bridge's limit was dropped"
                );
                None
            }
        }
    }
}

fn ws_bridge_limited<S>(
    ws: WebSocketStream<WsSocket<S>>,
    max_line: usize,
) -> (DuplexHalves, tokio::sync::oneshot::Receiver<String>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(WS_BRIDGE_BUFFER);
    let (closed_tx, closed) = tokio::sync::oneshot::channel();
    let side = BridgeSide {
        closed: std::sync::Mutex::new(Some(closed_tx)),
    };
    tokio::spawn(async move {
        let (mut lines_in, mut lines_out) = tokio::io::split(ours);
        // Cancelled by the pump only, for a ping flood.
        let halt = tokio_util::sync::CancellationToken::new();
        ws_pump::pump(ws, &mut lines_in, &mut lines_out, max_line, &halt, &side).await;
    });
    (tokio::io::split(theirs), closed)
}

/// An agent subprocess behind a [`ClientSideConnection`]: owns the supervised process.
/// Cheap to clone. When the last clone is dropped while the agent runs, the connection is
/// closed and the agent's process group is sent `SIGKILL` (use [`shutdown`](Self::shutdown)
/// for a graceful stop).
#[derive(Debug, Clone)]
pub struct AgentChild {
    process: Arc<tokio::sync::Mutex<AgentProcess>>,
    pid: u32,
    /// The exit report, once the agent exited.
    exited: tokio::sync::watch::Receiver<Option<ExitReport>>,
    connection: ClientSideConnection,
    _guard: Arc<KillOnDrop>,
}

#[derive(Debug)]
struct KillOnDrop {
    process: Arc<tokio::sync::Mutex<AgentProcess>>,
    connection: ClientSideConnection,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.connection.close("the agent's handle was dropped");
        // Locked only by `wait`/`shutdown`, i.e. while it is exiting anyway.
        if let Ok(p) = self.process.try_lock() {
            let _ = p.signal(crate::process::SIGKILL);
        }
    }
}

impl AgentChild {
    /// The agent's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The supervised process (for signals, its stderr tail, its exit watch).
    pub fn process(&self) -> &Arc<tokio::sync::Mutex<AgentProcess>> {
        &self.process
    }

    /// Waits for the agent to exit; its report (exit status, stderr tail).
    pub async fn wait(&self) -> ExitReport {
        self.process.lock().await.wait().await
    }

    /// The exit report as a watch: `None` while the agent runs (never locks the process, so it
    /// can be polled beside calls that do).
    pub fn exit_watch(&self) -> tokio::sync::watch::Receiver<Option<ExitReport>> {
        self.exited.clone()
    }

    /// Closes the connection (the agent sees EOF on stdin), then stops the process: wait up to
    /// `grace`, `SIGTERM` its group, wait up to `grace`, `SIGKILL`.
    pub async fn shutdown(&self, grace: Duration) -> ShutdownOutcome {
        self.connection.close("the client shut the agent down");
        // Let the writer shut stdin before escalating.
        let _ = tokio::time::timeout(grace, self.connection.closed()).await;
        self.process.lock().await.shutdown(grace).await
    }
}

/// How long an agent's stdout EOF waits for its exit report to become the close reason.
pub const AGENT_EXIT_REPORT_GRACE: Duration = Duration::from_secs(3);

/// Spawns `cmd` as an agent (see [`AgentProcess::spawn`]) and connects to it as a client over
/// its stdin/stdout. When the agent exits, the connection closes with the [`ExitReport`] as
/// reason (exit status and last stderr lines), so pending calls fail with
/// `CallError::Closed { reason }` telling why. `config.eof_grace` is raised to
/// [`AGENT_EXIT_REPORT_GRACE`] if lower.
pub fn spawn_agent<S>(
    cmd: &AgentCommand,
    service: S,
    config: DriverConfig,
) -> Result<(ClientSideConnection, AgentChild), SpawnError>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    spawn_agent_with(cmd, service, config, |stdout, stdin| (stdout, stdin))
}

/// [`spawn_agent`], with the agent's stdout and stdin passed through `wrap` first (a tap that
/// logs every message, as `acp chat --log-rpc` does).
pub fn spawn_agent_with<S, R, W>(
    cmd: &AgentCommand,
    service: S,
    mut config: DriverConfig,
    wrap: impl FnOnce(tokio::process::ChildStdout, tokio::process::ChildStdin) -> (R, W),
) -> Result<(ClientSideConnection, AgentChild), SpawnError>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    assert_eq!(
        config.core.role,
        Role::Client,
        "spawn_agent needs a client config"
    );
    let mut process = AgentProcess::spawn(cmd)?;
    let stdin = process.take_stdin().expect("fresh process has stdin");
    let stdout = process.take_stdout().expect("fresh process has stdout");
    if config.eof_grace < AGENT_EXIT_REPORT_GRACE {
        config.eof_grace = AGENT_EXIT_REPORT_GRACE;
    }
    let pid = process.pid();
    let exit = process.exit_status();
    let (reader, writer) = wrap(stdout, stdin);
    let connection = ClientSideConnection::connect(reader, writer, service, config);
    let process = Arc::new(tokio::sync::Mutex::new(process));
    let (exit_tx, exited) = tokio::sync::watch::channel(None);
    let child = AgentChild {
        process: process.clone(),
        pid,
        exited,
        connection: connection.clone(),
        _guard: Arc::new(KillOnDrop {
            process: process.clone(),
            connection: connection.clone(),
        }),
    };
    let handle = connection.handle().clone();
    tokio::spawn(async move {
        exit.await;
        let report = process.lock().await.wait().await;
        // What the agent wrote before it exited is still read; then the connection closes with
        // the exit report (at once if its stdout already ended; bounded if a grandchild keeps
        // the pipe open).
        handle.close_at_eof_with_reason(report.to_string());
        let _ = exit_tx.send(Some(report.clone()));
        tokio::time::sleep(AGENT_EXIT_REPORT_GRACE).await;
        handle.close_with_reason(report.to_string());
    });
    Ok((connection, child))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    use tokio_tungstenite::tungstenite::Message;

    /// The lines side of a bridge over an in-memory WebSocket, and the WebSocket's other end.
    async fn bridged(max_line: usize) -> (DuplexHalves, WebSocketStream<DuplexStream>) {
        use tokio_tungstenite::tungstenite::protocol::Role as WsRole;
        let (a, b) = tokio::io::duplex(1 << 20);
        let server =
            WebSocketStream::from_raw_socket(WsSocket::server(a), WsRole::Server, None).await;
        let client = WebSocketStream::from_raw_socket(b, WsRole::Client, None).await;
        (ws_bridge_limited(server, max_line).0, client)
    }

    async fn next_text(ws: &mut WebSocketStream<DuplexStream>) -> String {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a frame in time")
            .expect("open")
            .expect("a frame");
        match msg {
            Message::Text(t) => t.as_str().to_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_dropped_and_a_response_among_them_answered() {
        let ((_r, mut w), mut ws) = bridged(1024).await;
        let big = "x".repeat(4096);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"a\"}}\r\n\n\
             {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{{\"text\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}\n"
        );
        // In small pieces, as a pipe delivers them.
        for piece in input.as_bytes().chunks(100) {
            w.write_all(piece).await.unwrap();
        }
        assert_eq!(
            next_text(&mut ws).await,
            r#"{"jsonrpc":"2.0","method":"a"}"#
        );
        let replaced: serde_json::Value = serde_json::from_str(&next_text(&mut ws).await).unwrap();
        assert_eq!(replaced["id"], 7, "{replaced}");
        assert_eq!(replaced["error"]["code"], -32603, "{replaced}");
        assert!(
            replaced["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1024-byte limit"),
            "{replaced}"
        );
        // The oversize notification is dropped; the stream goes on.
        assert_eq!(
            next_text(&mut ws).await,
            r#"{"jsonrpc":"2.0","id":8,"result":{}}"#
        );
        // A final line without a newline still goes out, then EOF closes the WebSocket.
        w.write_all(br#"{"last":true}"#).await.unwrap();
        w.shutdown().await.unwrap();
        assert_eq!(next_text(&mut ws).await, r#"{"last":true}"#);
        let end = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .unwrap();
        assert!(matches!(end, Some(Ok(Message::Close(_))) | None), "{end:?}");
    }

    /// A peer that sends pings and never reads (issue 19): once the socket takes no more of
    /// their pongs, the bridge lets it owe [`MAX_OWED_PONGS`], then stops reading, reports
    /// why and ends its lines side; the peer, reading at last, gets every pong queued and a
    /// close frame (1008) with the reason. Before, a pong was queued per ping for as long as
    /// the peer kept sending. The clock is paused: the close frame's grace (1 s) can only run
    /// out once nothing else can happen, so the peer's late reading is not a race.
    #[tokio::test(start_paused = true)]
    async fn a_peer_flooding_pings_without_reading_is_closed_with_the_reason() {
        use tokio::io::AsyncReadExt;
        use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
        use tokio_tungstenite::tungstenite::protocol::Role as WsRole;
        // The peer's end takes 64 KiB of pongs, then nothing more until it reads.
        let (ours, mut peer) = tokio::io::duplex(64 << 10);
        let ws = WebSocketStream::from_raw_socket(
            WsSocket::server(ours),
            WsRole::Server,
            Some(ws_config(1 << 20)),
        )
        .await;
        let ((mut lines, _w), mut closed) = ws_bridge_limited(ws, 1 << 20);
        // Masked pings (a client's) with the largest payload, 125 bytes.
        let mask = [0x11, 0x22, 0x33, 0x44];
        let mut ping = vec![0x89, 0x80 | 125];
        ping.extend_from_slice(&mask);
        ping.extend((0..125usize).map(|i| i as u8 ^ mask[i % 4]));
        let pings = ping.repeat(512);
        let mut sent = 0usize;
        let flood = async {
            while sent < 64 << 20 {
                peer.write_all(&pings).await?;
                sent += pings.len();
            }
            std::io::Result::Ok(())
        };
        let reason = tokio::select! {
            r = &mut closed => r.expect("the bridge says why it closed"),
            r = flood => panic!("the flood ended ({r:?}) and the bridge said nothing"),
        };
        assert!(
            reason.contains("the client sent pings faster than it reads our answers")
                && reason.contains("1024 pongs"),
            "{reason}"
        );
        // What the socket took (64 KiB of pongs: about 520), the owed pongs, what was in
        // flight when the bridge stopped reading: well under 1 MiB of pings.
        assert!(sent < 1 << 20, "{sent} bytes of pings before the close");
        let mut rest = Vec::new();
        lines.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "{rest:?}");
        // The peer reads now: the pongs owed, then the close frame.
        let mut peer = WebSocketStream::from_raw_socket(peer, WsRole::Client, None).await;
        let mut pongs = 0;
        let frame = loop {
            match peer.next().await {
                Some(Ok(Message::Pong(_))) => pongs += 1,
                Some(Ok(Message::Close(frame))) => break frame.expect("a close code and reason"),
                other => panic!("{other:?} after {pongs} pongs"),
            }
        };
        assert!(pongs > MAX_OWED_PONGS, "{pongs} pongs");
        assert_eq!(frame.code, CloseCode::Policy);
        assert_eq!(frame.reason.as_str(), ws_limits::PING_FLOOD_CLOSE_REASON);
    }
}
