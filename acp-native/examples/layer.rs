//! A `tower` layer of a client host: a read-only mode, which refuses the agent's
//! `fs/write_text_file` and `terminal/create` before they reach the router and lets every
//! other request and notification through. It runs in memory: a client behind the layer and
//! an agent that reads a file, then tries to write it.
//!
//! ```sh
//! cargo run -p acp-native --example layer
//! ```
//!
//! A layer wraps any service of `Incoming` (acp-native's own, in `layers`, stack the same
//! way); the result is still such a service, so it goes wherever a `Router` goes.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use acp_native::acp_client::errors::Failure;
use acp_native::acp_core::acp::client::{FS_WRITE_TEXT_FILE, TERMINAL_CREATE};
use acp_native::layers::CatchPanicLayer;
use acp_native::schema::{v1 as s, ProtocolVersion};
use acp_native::{serde_json, transport, typed, AgentSideConnection, ClientSideConnection};
use acp_native::{DriverConfig, ErrorCode, ErrorObject, Incoming, RawValue, Role, Router};
use tower::{Layer, Service, ServiceBuilder};

/// Refuses the agent's requests that change files or run commands.
#[derive(Clone, Copy, Debug)]
pub struct ReadOnlyLayer;

impl<S> Layer<S> for ReadOnlyLayer {
    type Service = ReadOnly<S>;
    fn layer(&self, inner: S) -> ReadOnly<S> {
        ReadOnly { inner }
    }
}

/// The service [`ReadOnlyLayer`] makes.
#[derive(Clone, Debug)]
pub struct ReadOnly<S> {
    inner: S,
}

/// What a service of `Incoming` answers: a raw JSON result, or a JSON-RPC error.
type Answer = Pin<Box<dyn Future<Output = Result<Box<RawValue>, ErrorObject>> + Send>>;

impl<S> Service<Incoming> for ReadOnly<S>
where
    S: Service<Incoming, Response = Box<RawValue>, Error = ErrorObject>,
    S::Future: Send + 'static,
{
    type Response = Box<RawValue>;
    type Error = ErrorObject;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorObject>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Incoming) -> Answer {
        let method = request.method.as_str();
        if method == FS_WRITE_TEXT_FILE || method == TERMINAL_CREATE {
            // The error every face answers for a refusal (acp-client's table): -32603 with
            // `data.reason` "permission_denied".
            let refused = Failure::PermissionDenied;
            let error = ErrorObject::new(
                ErrorCode::from_code(refused.code()),
                format!("{method} refused: this client is read-only"),
            )
            .with_data(serde_json::json!({ "reason": refused.reason() }));
            return Box::pin(std::future::ready(Err(error)));
        }
        Box::pin(self.inner.call(request))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (agent_end, client_end) = transport::duplex(64 << 10);

    // The client: reads served from memory; the router would write too, but the layer
    // answers every write before it gets there.
    let router = Router::new()
        .route::<typed::ReadTextFile, _, _>(|req: s::ReadTextFileRequest, _cx| async move {
            let text = format!("the text of {}\n", req.path.display());
            Ok(s::ReadTextFileResponse::new(text))
        })
        .route::<typed::WriteTextFile, _, _>(|_req: s::WriteTextFileRequest, _cx| async move {
            Ok(s::WriteTextFileResponse::new())
        });
    let service = ServiceBuilder::new()
        .layer(CatchPanicLayer)
        .layer(ReadOnlyLayer)
        .service(router);
    let (r, w) = client_end;
    let client = ClientSideConnection::connect(r, w, service, DriverConfig::new(Role::Client));

    // The agent: it answers `initialize` and calls the client.
    let agent_router =
        Router::new().route::<typed::Initialize, _, _>(|p: s::InitializeRequest, _cx| async move {
            Ok(s::InitializeResponse::new(p.protocol_version))
        });
    let (r, w) = agent_end;
    let agent = AgentSideConnection::connect(r, w, agent_router, DriverConfig::new(Role::Agent));

    // The client advertises reads and writes, so the agent may ask for both.
    let fs = s::FileSystemCapabilities::new()
        .read_text_file(true)
        .write_text_file(true);
    let init = s::InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(s::ClientCapabilities::new().fs(fs));
    client.initialize(init).await?;

    let session = s::SessionId::new("session-1");
    let read = s::ReadTextFileRequest::new(session.clone(), "/project/notes.txt");
    let read = agent.read_text_file(read).await?;
    println!("read: {}", read.content.trim_end());
    assert_eq!(read.content, "the text of /project/notes.txt\n");

    let write = s::WriteTextFileRequest::new(session, "/project/notes.txt", "new text\n");
    let refused = agent
        .write_text_file(write)
        .await
        .expect_err("refused by the layer");
    let error = refused.remote().expect("the client's error answer");
    println!("write: refused: {} ({})", error.message, error.code);
    let reason = error.data.as_ref().and_then(|data| data["reason"].as_str());
    assert_eq!(reason, Some("permission_denied"));

    client.close("done");
    Ok(())
}
