//! `acp demo-agent`: the built-in agent, speaking ACP on this process's stdin/stdout.
//!
//! It is deterministic (no model, no network) and exists for two reasons: it is the default
//! agent of `acp chat` and of the VS Code extension, so both work out of the box; and it is a
//! small, complete example of an agent written with this crate:
//!
//! * [`run`] builds a [`Router`] of typed handlers (`initialize`, `session/new`,
//!   `session/load`, `session/close`, `session/prompt`, the `session/cancel` notification…) and drives it over
//!   stdio with [`AgentSideConnection::connect_with`]. Requests run concurrently, so the reader
//!   keeps reading (and sees `session/cancel`) while a prompt turn is in progress.
//! * [`DemoAgent::prompt`] is one prompt turn. It reports a plan, streams its answer in
//!   several `agent_message_chunk`s, reads the files named in the prompt through
//!   `fs/read_text_file`, runs a command through `terminal/*`, and writes `acp-demo.txt` in the
//!   session's cwd through `fs/write_text_file` after asking `session/request_permission`.
//!   Each client call is made only if the client advertised the capability.
//! * Cancellation: `session/cancel` fires the turn's
//!   [`CancellationToken`](tokio_util::sync::CancellationToken); the turn checks it between
//!   steps and while it waits (for a delay, for the user's permission answer) and then ends
//!   with stop reason `cancelled`, as the protocol requires.
//!
//! It advertises images and embedded context in its `promptCapabilities` and names every
//! attachment it gets in its answer (`[resource_link file:///…]`, `[resource file:///… (N
//! characters)]`, `[image image/png, N bytes]`), so a client can see what it sent. Right after
//! `session/new` it sends its slash commands ([`COMMANDS`](script::COMMANDS), an
//! `available_commands_update`): `/echo TEXT` answers TEXT and nothing else, `/help` lists the
//! commands. Its edit of an existing file carries the old text in the diff, so clients show a
//! change, not a new file.
//!
//! Magic words, for trying the client's handling of other stop reasons: a prompt containing
//! `#refuse` ends with `refusal`, one containing `#max-tokens` with `max_tokens`. A command in
//! backticks (`` `echo hi` ``) is what the terminal step runs (split on whitespace, no shell);
//! otherwise it runs `ls`. A prompt containing `#mcp` is answered with the names of the MCP
//! servers the session was given (`session/new`, `load`, `resume`), and nothing else; one
//! containing `#crash` exits mid-answer with code 70 after a line on stderr; after a turn whose
//! prompt contains `#later`, it renames the session a second later (a `session_info_update`
//! arriving between turns); `#markdown` adds a markdown sample to the answer (headings,
//! emphasis, lists, code, a table… streamed in pieces cut mid-word); `#usage` reports the
//! context used (`usage_update`).
//!
//! Options for clients' tests: `--state-dir DIR` keeps every session on disk ([`store`]), so
//! `session/load`, `session/resume`, `session/list` and `session/delete` (advertised then)
//! work across agent restarts (`session/close`, always advertised, frees a session in memory
//! and cancels its turn); `--require-auth env:NAME` advertises an `env_var` auth method reading `NAME` and
//! answers `session/*` with -32000 (auth required) until `authenticate` is called with it
//! while `NAME` is set in the agent's environment; `--no-resume` advertises `session/load`
//! only (sessions are replayed, never resumed).
//!
//! The files: here, the options, [`run`] and the [`DemoAgent`] with its [`Router`];
//! `handlers.rs` the protocol's requests (`initialize`, `authenticate`, `session/*`);
//! `session.rs` what it remembers of a session; `turn.rs` the scripted prompt turn (plan,
//! streamed answer, files, terminal, permission, write); `script.rs` its words (the canned
//! answer, the slash commands, what a prompt names); `store.rs` the sessions on disk;
//! `v2.rs` (feature `unstable_protocol_v2`) ACP v2 for a client that asks for it, with its
//! config option in `v2_config.rs`.

mod handlers;
mod script;
mod session;
mod store;
mod turn;
#[cfg(feature = "unstable_protocol_v2")]
mod v2;
#[cfg(feature = "unstable_protocol_v2")]
mod v2_config;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_core::typed;
use acp_core::Role;
use acp_native::driver::DriverConfig;
use acp_native::layers::{CatchPanicLayer, LifecycleLayer};
use acp_native::{AgentSideConnection, Router};
use tower::ServiceBuilder;

use script::commands_update;
use session::Session;

/// Options of `acp demo-agent`.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Pause between streamed steps (tests use it to cancel a turn half-way).
    pub delay: Duration,
    /// Where sessions are kept across restarts (`--state-dir`); in this process only if unset.
    pub state_dir: Option<PathBuf>,
    /// The variable an `env_var` auth method reads (`--require-auth env:NAME`): sessions need
    /// `authenticate` first.
    pub require_auth: Option<String>,
    /// `--no-resume`: sessions are only loaded (no `sessionCapabilities.resume`, even with
    /// `--state-dir`), for clients' tests of the `session/load` path.
    pub no_resume: bool,
}

/// The id of the `env_var` auth method `--require-auth` advertises.
pub const AUTH_METHOD_ID: &str = "demo-env-token";

/// Parses `--require-auth`'s value: `env:NAME`.
pub fn parse_require_auth(v: &str) -> Result<String, String> {
    match v.strip_prefix("env:") {
        Some(name) if acp_client::env::valid_name(name) => Ok(name.to_string()),
        _ => Err(format!(
            "`{v}`: give env:NAME (NAME a variable name, [A-Za-z_][A-Za-z0-9_]*)"
        )),
    }
}

/// Runs the demo agent on stdin/stdout until the client closes the connection.
pub async fn run(options: DemoOptions) -> i32 {
    let agent = Arc::new(DemoAgent {
        store: options.state_dir.clone().map(store::Store::new),
        authenticated: std::sync::atomic::AtomicBool::new(options.require_auth.is_none()),
        options,
        sessions: Mutex::new(HashMap::new()),
        id_prefix: format!("demo-{:08x}", random_u64() as u32),
        #[cfg(feature = "unstable_protocol_v2")]
        v2: std::sync::atomic::AtomicBool::new(false),
        #[cfg(feature = "unstable_protocol_v2")]
        v2_sessions: Mutex::new(HashMap::new()),
    });
    let (stdin, stdout) = acp_native::transport::stdio();
    let conn = AgentSideConnection::connect_with(
        stdin,
        stdout,
        DriverConfig::new(Role::Agent),
        // Layers every agent wants: a panicking handler becomes an error response, and
        // nothing but `initialize` is served before `initialize`.
        |_conn| {
            ServiceBuilder::new()
                .layer(CatchPanicLayer)
                .layer(LifecycleLayer::new())
                .service(agent.service())
        },
    );
    let reason = conn.closed().await;
    // The last answers (e.g. to requests read just before stdin ended) go out before we exit.
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.handle().flushed()).await;
    eprintln!("acp demo-agent: connection closed ({reason})");
    0
}

/// The agent's state, shared by all handlers.
pub struct DemoAgent {
    options: DemoOptions,
    sessions: Mutex<HashMap<String, Session>>,
    /// `demo-<random>`: session ids are unique across processes (clients key saved sessions
    /// by id).
    id_prefix: String,
    /// `--state-dir`: sessions on disk.
    store: Option<store::Store>,
    /// `authenticate` succeeded (always, without `--require-auth`).
    authenticated: std::sync::atomic::AtomicBool,
    /// The client asked for ACP v2 and got it (feature `unstable_protocol_v2`).
    #[cfg(feature = "unstable_protocol_v2")]
    v2: std::sync::atomic::AtomicBool,
    /// The v2 connection's sessions.
    #[cfg(feature = "unstable_protocol_v2")]
    v2_sessions: v2::V2Sessions,
}

/// A random 64-bit value for ids (the OS's random source; the clock and pid if unreadable).
fn random_u64() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_le_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32)
}

impl DemoAgent {
    /// What serves the connection: the v1 router, or (feature `unstable_protocol_v2`) the v2
    /// routes once `initialize` settled on v2, falling back to the v1 router.
    #[cfg(not(feature = "unstable_protocol_v2"))]
    fn service(self: &Arc<Self>) -> Router {
        self.router()
    }

    #[cfg(feature = "unstable_protocol_v2")]
    fn service(
        self: &Arc<Self>,
    ) -> impl tower::Service<
        acp_native::Incoming,
        Response = Box<acp_native::RawValue>,
        Error = acp_core::ErrorObject,
        Future = futures::future::BoxFuture<
            'static,
            Result<Box<acp_native::RawValue>, acp_core::ErrorObject>,
        >,
    > + Clone {
        let v1 = self.router();
        let v2 = self.v2_router(v1.clone());
        let agent = self.clone();
        tower::service_fn(move |i: acp_native::Incoming| {
            use tower::Service;
            let mut r = if agent.is_v2() {
                v2.clone()
            } else {
                v1.clone()
            };
            r.call(i)
        })
    }

    /// The typed handlers. Each closure clones the `Arc` and calls a method.
    fn router(self: &Arc<Self>) -> Router {
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        let (f, g, h, i, j) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        Router::new()
            .route_raw("initialize", move |p, _cx| {
                let a = a.clone();
                async move { a.initialize_raw(p) }
            })
            .route::<typed::Authenticate, _, _>(move |p, _cx| {
                let f = f.clone();
                async move { f.authenticate(p) }
            })
            .route::<typed::ResumeSession, _, _>(move |p, _cx| {
                let g = g.clone();
                async move { g.resume_session(p) }
            })
            .route::<typed::ListSessions, _, _>(move |p, _cx| {
                let h = h.clone();
                async move { h.list_sessions(p) }
            })
            .route::<typed::CloseSession, _, _>(move |p, _cx| {
                let i = i.clone();
                async move { i.close_session(p) }
            })
            .route::<typed::DeleteSession, _, _>(move |p, _cx| {
                let j = j.clone();
                async move { j.delete_session(p) }
            })
            .route::<typed::NewSession, _, _>(move |p, cx| {
                let b = b.clone();
                async move {
                    let answer = b.new_session(p)?;
                    // The commands go right behind the answer (clients keep updates that
                    // arrive before they have set the session up).
                    let client = cx.client();
                    let id = answer.session_id.clone();
                    tokio::spawn(async move {
                        let _ = client.session_update(commands_update(id)).await;
                    });
                    Ok(answer)
                }
            })
            .route::<typed::LoadSession, _, _>(move |p, cx| {
                let c = c.clone();
                async move { c.load_session(p, cx).await }
            })
            .route::<typed::Prompt, _, _>(move |p, cx| {
                let d = d.clone();
                async move { d.prompt(p, cx).await }
            })
            .notification::<typed::Cancel, _, _>(move |p, _cx| {
                let e = e.clone();
                async move { e.cancel(&p.session_id) }
            })
    }
}
