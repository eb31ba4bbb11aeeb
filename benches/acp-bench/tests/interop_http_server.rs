//! Interop: the official HTTP transport's client (`agent-client-protocol-http` 5, `HttpClient`,
//! driving the official SDK's `Client.v1()`, in `rust-sdk-peer client … --url`) against our
//! server, `acp serve --http ADDR -- acp demo-agent`, over HTTP + SSE (`http://…/acp`) and over
//! WebSocket (`ws://…/acp`).
//!
//! Our server requires a bearer token; the official client sends it through its reqwest
//! default headers on every POST, SSE GET, DELETE and the WebSocket handshake. Each transport:
//! a full turn (plan, thought, streamed chunks, a file read and a permission request answered
//! by the SDK client, the file written through the client's `fs/write_text_file`, `end_turn`),
//! then `session/cancel` during a slow turn (`--delay-ms`), which must end `cancelled`. A wrong
//! token is refused (HTTP 401) before any agent starts.
//!
//! CI runs this with `scripts/interop-rust-sdk.sh`. Every test is bounded (`BOUND`).

#![cfg(feature = "native")]

mod support;

use support::*;

const TOKEN: &str = "interop-server-token-0123456789";

/// One full turn through the official client over `url` (http:// or ws://).
async fn full_turn(url: &str, dir: &std::path::Path) {
    let cwd = dir.display().to_string();
    let prompt = "hello over the official remote transport";
    let r = peer_ok(&[
        "client", "turn", "--cwd", &cwd, "--prompt", prompt, "--url", url, "--token", TOKEN,
    ])
    .await;
    let init: s::InitializeResponse = decode(&r["init"]);
    let session: s::NewSessionResponse = decode(&r["session"]);
    let turn: s::PromptResponse = decode(&r["prompt"]);
    assert_eq!(
        init.agent_info.as_ref().map(|i| i.name.as_str()),
        Some("acp-demo-agent")
    );
    assert_eq!(turn.stop_reason, s::StopReason::EndTurn, "{url}");
    let seen = seen(&r);
    for n in &seen.updates {
        assert_eq!(n.session_id, session.session_id);
    }
    let text = message_chunks(&seen.updates).concat();
    assert!(
        text.contains(&format!("You said: \"{prompt}\"")),
        "{url}: {text}"
    );
    assert!(seen
        .updates
        .iter()
        .any(|n| matches!(n.update, s::SessionUpdate::Plan(_))));
    assert_eq!(seen.permissions.len(), 1, "{url}");
    assert_eq!(seen.permissions[0].session_id, session.session_id);
    assert_eq!(seen.writes.len(), 1, "{url}");
    assert!(dir.join("acp-demo.txt").is_file(), "{url}: not written");
    assert!(text.contains("I wrote acp-demo.txt"), "{url}: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_runs_a_turn_over_sse_and_websocket() {
    let dir = TempDir::new("turn");
    let server = Server::start(&dir.0, TOKEN, &[]);
    for scheme in ["http", "ws"] {
        let _ = std::fs::remove_file(dir.0.join("acp-demo.txt"));
        full_turn(&format!("{scheme}://{}", server.addr), &dir.0).await;
    }
    let log = server.log();
    assert!(log.contains("connected over http"), "{log}");
    assert!(log.contains("connected over websocket"), "{log}");
}

/// `session/cancel` during a slow turn ends it `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_client_cancels_a_turn_over_sse_and_websocket() {
    let dir = TempDir::new("cancel");
    let cwd = dir.0.display().to_string();
    let server = Server::start(&dir.0, TOKEN, &["--delay-ms", "300"]);
    for scheme in ["http", "ws"] {
        let url = format!("{scheme}://{}", server.addr);
        let r = peer_ok(&[
            "client",
            "cancel",
            "--session-cancel-only",
            "--cwd",
            &cwd,
            "--url",
            &url,
            "--token",
            TOKEN,
        ])
        .await;
        let turn: s::PromptResponse = decode(&r["bySessionCancel"]);
        assert_eq!(turn.stop_reason, s::StopReason::Cancelled, "{url}");
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_before_any_agent_starts() {
    let dir = TempDir::new("refused");
    let server = Server::start(&dir.0, TOKEN, &[]);
    for scheme in ["http", "ws"] {
        let url = format!("{scheme}://{}", server.addr);
        let r = peer_report(&[
            "client",
            "turn",
            "--url",
            &url,
            "--token",
            "not-the-token-0123456789",
        ])
        .await;
        let failed = r["failed"]
            .as_str()
            .unwrap_or_else(|| panic!("a wrong token must fail: {r}"));
        assert!(failed.contains("401"), "{scheme}: {failed}");
    }
    let log = server.log();
    assert!(log.contains("refused (401)"), "{log}");
    assert!(!log.contains("connected over"), "{log}");
}
