//! Transports: each gives a `(reader, writer)` pair for [`crate::driver::spawn`] or the role
//! constructors ([`crate::ClientSideConnection::connect`], [`crate::AgentSideConnection::connect`]).
//!
//! * [`stdio`]: this process's stdin/stdout (an agent launched by its client);
//! * [`spawn_agent`]: an agent subprocess (supervised by [`crate::process::AgentProcess`]),
//!   already connected, whose exit status and stderr tail become the close reason;
//! * [`tcp_connect`] / [`tcp_split`]: NDJSON over TCP (client and server);
//! * [`ws_connect`] / [`ws_accept`] / [`ws_bridge`]: WebSocket, one JSON-RPC message per text
//!   frame, bridged to NDJSON so the driver is the same;
//! * [`duplex`]: an in-memory pair (tests, in-process agents).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, RawValue, Role};
use futures::{SinkExt, StreamExt};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream, ReadHalf,
    WriteHalf,
};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tower::Service;

use crate::driver::{DriverConfig, Incoming};
use crate::process::{AgentCommand, AgentProcess, ExitReport, ShutdownOutcome, SpawnError};
use crate::ClientSideConnection;

/// Halves of one end of an in-memory or bridged stream.
pub type DuplexHalves = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// This process's stdin and stdout (for an agent launched over stdio). Nothing else may write
/// to stdout: log to stderr.
///
/// When stdin / stdout are pipes (how a client launches an agent), they are driven by the
/// reactor ([`tokio::net::unix::pipe`], file descriptors set non-blocking) instead of
/// `tokio::io::stdin()`'s blocking thread pool, which costs a thread hand-off per read.
/// Otherwise (a terminal, a file) `tokio::io::stdin()` / `stdout()` are used.
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

/// This process's stdin (see [`stdio`]).
#[derive(Debug)]
pub enum StdinReader {
    Pipe(tokio::net::unix::pipe::Receiver),
    Std(tokio::io::Stdin),
}

/// This process's stdout (see [`stdio`]).
#[derive(Debug)]
pub enum StdoutWriter {
    Pipe(tokio::net::unix::pipe::Sender),
    Std(tokio::io::Stdout),
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
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
            StdoutWriter::Pipe(p) => std::pin::Pin::new(p).poll_write(cx, buf),
            StdoutWriter::Std(s) => std::pin::Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            StdoutWriter::Pipe(p) => std::pin::Pin::new(p).poll_flush(cx),
            StdoutWriter::Std(s) => std::pin::Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
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

/// Connects to a WebSocket server (`ws://...`) and bridges it to NDJSON.
pub async fn ws_connect(url: &str) -> Result<DuplexHalves, WsError> {
    let (ws, _response) = tokio_tungstenite::connect_async(url).await?;
    Ok(ws_bridge(ws))
}

/// Accepts a WebSocket on a TCP stream (server side) and bridges it to NDJSON.
pub async fn ws_accept(stream: TcpStream) -> Result<DuplexHalves, WsError> {
    let _ = stream.set_nodelay(true);
    let ws = tokio_tungstenite::accept_async(stream).await?;
    Ok(ws_bridge(ws))
}

/// Bytes buffered by a WebSocket bridge per direction.
const WS_BRIDGE_BUFFER: usize = 256 << 10;

/// One WebSocket frame as NDJSON. A frame normally holds one message: if it spans several
/// lines (pretty-printed JSON, whose newlines can only be whitespace) they become spaces. A
/// frame that is not one JSON value but several lines (a sender that forwarded NDJSON output
/// unsplit) is passed on line by line, so each message still gets through.
fn frame_to_lines(text: String) -> Vec<u8> {
    if !text.contains(['\n', '\r']) || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err()
    {
        return text.into_bytes();
    }
    text.replace(['\n', '\r'], " ").into_bytes()
}

/// Bridges an established WebSocket to an NDJSON byte stream: each text (or binary, read as
/// UTF-8) frame becomes one line, or the lines it holds (see `frame_to_lines`); each line
/// written becomes one text frame. A close frame or error
/// is EOF; EOF on the writer sends a close frame. Spawns the bridge task (needs a runtime).
pub fn ws_bridge<S>(ws: WebSocketStream<S>) -> DuplexHalves
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(WS_BRIDGE_BUFFER);
    let (bridge_read, mut bridge_write) = tokio::io::split(ours);
    let (mut sink, mut stream) = ws.split();
    // WebSocket -> lines.
    tokio::spawn(async move {
        while let Some(msg) = stream.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t.as_str().to_owned(),
                Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Message::Close(_)) => break,
                Ok(_) => continue, // ping/pong/raw frames
                Err(e) => {
                    tracing::debug!("websocket read failed: {e}");
                    break;
                }
            };
            let mut line = frame_to_lines(text);
            line.push(b'\n');
            if bridge_write.write_all(&line).await.is_err() {
                break;
            }
        }
        let _ = bridge_write.shutdown().await;
    });
    // Lines -> WebSocket.
    tokio::spawn(async move {
        let mut lines = BufReader::new(bridge_read);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    while matches!(line.last(), Some(b'\n' | b'\r')) {
                        line.pop();
                    }
                    if line.iter().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    let text = String::from_utf8_lossy(&line).into_owned();
                    if let Err(e) = sink.send(Message::text(text)).await {
                        tracing::debug!("websocket write failed: {e}");
                        return;
                    }
                }
            }
        }
        let _ = sink.send(Message::Close(None)).await;
        let _ = sink.close().await;
    });
    tokio::io::split(theirs)
}

/// An agent subprocess behind a [`ClientSideConnection`]: owns the supervised process.
/// Cheap to clone. When the last clone is dropped while the agent runs, the connection is
/// closed and the agent's process group is sent `SIGKILL` (use [`shutdown`](Self::shutdown)
/// for a graceful stop).
#[derive(Debug, Clone)]
pub struct AgentChild {
    process: Arc<tokio::sync::Mutex<AgentProcess>>,
    pid: u32,
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
            let _ = p.signal(libc::SIGKILL);
        }
    }
}

impl AgentChild {
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
    mut config: DriverConfig,
) -> Result<(ClientSideConnection, AgentChild), SpawnError>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject> + Clone + Send + 'static,
    S::Future: Send + 'static,
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
    let connection = ClientSideConnection::connect(stdout, stdin, service, config);
    let process = Arc::new(tokio::sync::Mutex::new(process));
    let child = AgentChild {
        process: process.clone(),
        pid,
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
        tokio::time::sleep(AGENT_EXIT_REPORT_GRACE).await;
        handle.close_with_reason(report.to_string());
    });
    Ok((connection, child))
}

#[cfg(test)]
mod tests {
    use super::frame_to_lines;

    #[test]
    fn a_frame_is_one_message_or_the_lines_it_holds() {
        assert_eq!(frame_to_lines(r#"{"a":1}"#.into()), br#"{"a":1}"#);
        // Pretty-printed: one message, its newlines are whitespace.
        assert_eq!(
            frame_to_lines("{\n  \"a\": \"x\\ny\"\r\n}".into()),
            b"{   \"a\": \"x\\ny\"  }"
        );
        // Two NDJSON lines forwarded unsplit: both get through.
        assert_eq!(
            frame_to_lines("{\"id\":0}\n{\"id\":1}\n".into()),
            b"{\"id\":0}\n{\"id\":1}\n"
        );
        // Not JSON at all: passed on, so the engine answers it with a parse error.
        assert_eq!(frame_to_lines("oops\nno".into()), b"oops\nno");
    }
}
