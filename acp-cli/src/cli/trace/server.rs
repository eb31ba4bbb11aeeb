//! The viewer's HTTP server, on loopback: the page and its scripts (the `trace-viewer/`
//! files, built into the binary), and a JSON API over the index.
//!
//! Who may use it (docs/security.md, "`acp trace`"): every request must name this server in
//! its `Host` (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`: 421 otherwise, which stops
//! DNS rebinding), come from no other page (`Origin`, when sent, is this server's own; a
//! `Sec-Fetch-Site` other than `same-origin` or `none` is refused: 403), and, for the API, show
//! the token in `Authorization: Bearer` (compared in constant time: 401 otherwise). The page
//! gets the token in its URL's fragment, which browsers never send. Answers carry no CORS
//! header, so no other page can read them, and the page's own CSP allows only its own scripts
//! and styles. Only GET.
//!
//! API: `GET /api/status`, `/api/summary`, `/api/rows?from=N&count=N&FILTER`,
//! `/api/locate?n=N&FILTER`, `/api/message?n=N`, `/api/turns?session=ID` (FILTER: `method`, `session`, `turn`,
//! `errors=1`, `minMs`, `q`, `group=1`); `trace-viewer/README.md` describes the answers.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use acp_native::remote::auth::same_secret;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::detail::message_of;
use super::index::{flags, NONE};
use super::query::{self, Filter};
use super::search::read_line;
use super::state::Shared;

/// Connections served at once (more wait to be accepted).
const MAX_CONNECTIONS: usize = 64;
/// A request's head must arrive within this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Rows per page at most.
const MAX_PAGE: usize = 500;
/// A row's line is read for its preview only up to this length.
const PREVIEW_LINE: usize = 64 << 10;
/// Methods and sessions listed in the status at most (for the filters' menus), turns in an
/// answer of `/api/turns`.
pub const MAX_LISTED: usize = 1000;
pub const MAX_TURNS: usize = 10_000;
/// The most of a message the detail pane gets.
pub const MAX_DETAIL: usize = 1 << 20;

/// The page and its scripts: `trace-viewer/`, shared with the VS Code extension.
const ASSETS: [(&str, &str, &str); 7] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../../../../trace-viewer/index.html"),
    ),
    (
        "/viewer.css",
        "text/css; charset=utf-8",
        include_str!("../../../../trace-viewer/viewer.css"),
    ),
    (
        "/viewer.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../trace-viewer/viewer.js"),
    ),
    (
        "/viewer/text.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../trace-viewer/viewer/text.js"),
    ),
    (
        "/viewer/json.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../trace-viewer/viewer/json.js"),
    ),
    (
        "/http-source.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../trace-viewer/http-source.js"),
    ),
    (
        "/main.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../../trace-viewer/main.js"),
    ),
];

/// What the page may load and run: its own scripts, styles and API, nothing inline.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
     img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The server's side of one listener.
pub struct Server {
    pub shared: Arc<Shared>,
    pub token: String,
    pub port: u16,
}

impl Server {
    /// Serves connections from `listener` until the task is dropped.
    pub async fn run(self: Arc<Self>, listener: TcpListener) {
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        loop {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let me = self.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let svc = hyper::service::service_fn(move |req| {
                    let me = me.clone();
                    async move { Ok::<_, Infallible>(me.handle(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEAD_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    }

    /// The checks every request passes (Host, Origin, Sec-Fetch-Site; the token for the API).
    pub fn check<B>(&self, req: &Request<B>, api: bool) -> Result<(), (StatusCode, &'static str)> {
        let port = self.port;
        let ours = |value: &HeaderValue, prefix: &str| {
            let v = value.to_str().unwrap_or("");
            ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .any(|h| v.eq_ignore_ascii_case(&format!("{prefix}{h}:{port}")))
        };
        let hosts = req.headers().get_all(header::HOST);
        if hosts.iter().count() != 1 || !hosts.iter().all(|h| ours(h, "")) {
            return Err((
                StatusCode::MISDIRECTED_REQUEST,
                "this server answers only as 127.0.0.1, localhost or [::1] with its port",
            ));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            if !ours(origin, "http://") {
                return Err((
                    StatusCode::FORBIDDEN,
                    "requests from other pages are refused",
                ));
            }
        }
        if let Some(site) = req.headers().get("sec-fetch-site") {
            if !matches!(site.to_str(), Ok("same-origin" | "none")) {
                return Err((
                    StatusCode::FORBIDDEN,
                    "requests from other pages are refused",
                ));
            }
        }
        if api {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if !same_secret(given.as_bytes(), self.token.as_bytes()) {
                return Err((
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong token: open the URL acp trace printed (its #token=…)",
                ));
            }
        }
        Ok(())
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_string();
        let api = path.starts_with("/api/");
        if req.method() != Method::GET {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET");
        }
        if let Err((status, why)) = self.check(&req, api) {
            return text(status, why);
        }
        if !api {
            return match ASSETS.iter().find(|(p, ..)| *p == path) {
                Some((_, kind, body)) => {
                    respond(StatusCode::OK, kind, Bytes::from_static(body.as_bytes()))
                }
                None => text(StatusCode::NOT_FOUND, "not found"),
            };
        }
        let query: Vec<(String, String)> = req
            .uri()
            .query()
            .map(|q| {
                q.split('&')
                    .filter_map(|p| p.split_once('=').or(Some((p, ""))))
                    .map(|(k, v)| (decode(k), decode(v)))
                    .collect()
            })
            .unwrap_or_default();
        let me = self.clone();
        let answer = tokio::task::spawn_blocking(move || me.api(&path, &query)).await;
        match answer {
            Ok(Ok(v)) => respond(
                StatusCode::OK,
                "application/json",
                Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
            ),
            Ok(Err((status, why))) => {
                let body = serde_json::to_vec(&json!({ "error": why })).unwrap_or_default();
                respond(status, "application/json", Bytes::from(body))
            }
            Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
        }
    }

    /// One API request (on a blocking thread: it may read the file).
    pub fn api(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> Result<Value, (StatusCode, String)> {
        let bad = |why: String| (StatusCode::BAD_REQUEST, why);
        let number = |name: &str| -> Result<Option<usize>, (StatusCode, String)> {
            match query.iter().find(|(k, _)| k == name) {
                Some((_, v)) => v
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| bad(format!("{name}: {v:?} is not a number"))),
                None => Ok(None),
            }
        };
        let filter =
            || Filter::from_pairs(query.iter().map(|(k, v)| (k.as_str(), v.clone()))).map_err(bad);
        let superseded = |_| {
            (
                StatusCode::CONFLICT,
                "a newer search replaced this one".to_string(),
            )
        };
        match path {
            "/api/status" => Ok(self.status()),
            "/api/summary" => Ok((*self.shared.summary()).clone()),
            "/api/rows" => {
                let filter = filter()?;
                let from = number("from")?.unwrap_or(0);
                let count = number("count")?.unwrap_or(100).min(MAX_PAGE);
                let items = self.shared.select(&filter).map_err(superseded)?;
                let page: Vec<_> = items.iter().skip(from).take(count).copied().collect();
                let s = self.shared.read();
                let file = s.file.clone();
                let wanted: Vec<_> = page
                    .iter()
                    .map(|it| {
                        let r = &s.index.rows[it.row as usize];
                        (r.offset, r.len as u64, r.entry, r.has(flags::CUT))
                    })
                    .collect();
                let mut rows: Vec<Value> = page
                    .iter()
                    .map(|it| query::row_json(&s.index, it.row, it.count, None))
                    .collect();
                let generation = s.generation;
                drop(s);
                for (v, (offset, len, entry, cut)) in rows.iter_mut().zip(wanted) {
                    // A line read from its start only has no preview (as in model.js, which
                    // holds only that start).
                    if cut || len as usize > PREVIEW_LINE {
                        continue;
                    }
                    let Ok(bytes) = read_line(&file, offset, len, PREVIEW_LINE) else {
                        continue;
                    };
                    let text = String::from_utf8_lossy(&bytes);
                    v["preview"] = json!(query::line_preview(&text, entry));
                }
                Ok(json!({
                    "total": items.len(), "from": from, "items": rows, "generation": generation,
                }))
            }
            "/api/locate" => {
                let filter = filter()?;
                let n = number("n")?.ok_or_else(|| bad("n is missing".into()))?;
                let items = self.shared.select(&filter).map_err(superseded)?;
                Ok(json!({ "index": query::locate(&items, n as u32) }))
            }
            "/api/turns" => {
                let session = query
                    .iter()
                    .find(|(k, _)| k == "session")
                    .map(|(_, v)| v.as_str())
                    .ok_or_else(|| bad("session is missing".into()))?;
                Ok(query::turns(&self.shared.read().index, session, MAX_TURNS))
            }
            "/api/message" => {
                let n = number("n")?.ok_or_else(|| bad("n is missing".into()))?;
                self.message(n)
            }
            _ => Err((StatusCode::NOT_FOUND, "no such API".to_string())),
        }
    }

    fn status(&self) -> Value {
        let s = self.shared.read();
        let i = &s.index;
        json!({
            "file": self.shared.path.display().to_string(),
            "size": s.size,
            "fed": i.fed(),
            "readTo": i.read_to,
            "lines": i.lines,
            "rows": i.rows.len(),
            "turns": i.turns.len(),
            "malformed": i.malformed,
            "firstMalformed": i.first_malformed,
            "incomplete": i.incomplete().map(|(offset, bytes)| json!({"offset": offset, "bytes": bytes})),
            "capped": i.capped.map(|c| json!({"line": c.line, "offset": c.offset, "maxRows": i.max_rows()})),
            "generation": s.generation,
            "restarted": s.restarted,
            "problem": s.problem,
            "lanes": i.lane_order().iter().map(|&l| i.lanes[l as usize].clone()).collect::<Vec<_>>(),
            "methods": i.methods.all().take(MAX_LISTED).map(|(_, m)| m).collect::<Vec<_>>(),
            "sessions": i.sessions.all().take(MAX_LISTED).map(|(_, m)| m).collect::<Vec<_>>(),
        })
    }

    /// One row's message (the first [`MAX_DETAIL`] bytes of it), with its pair's row.
    fn message(&self, n: usize) -> Result<Value, (StatusCode, String)> {
        let s = self.shared.read();
        let Some(row) = s.index.rows.get(n).copied() else {
            return Err((StatusCode::NOT_FOUND, format!("no row {n}")));
        };
        let file = s.file.clone();
        let meta = query::row_json(&s.index, n as u32, 1, None);
        let pair = (row.pair != NONE).then(|| query::row_json(&s.index, row.pair, 1, None));
        drop(s);
        let bytes = read_line(&file, row.offset, row.len as u64, MAX_DETAIL).map_err(|e| {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read the file: {e}"),
            )
        })?;
        let whole = bytes.len() as u64 == row.len as u64;
        let text = String::from_utf8_lossy(&bytes);
        let (json, shown, truncated) = if whole && !row.has(flags::CUT) {
            let m = message_of(&text, row.entry);
            (m.json, m.text.into_owned(), false)
        } else {
            (false, text.into_owned(), true)
        };
        Ok(json!({
            "row": meta,
            "pair": pair,
            "json": json,
            "text": shown,
            "truncated": truncated,
            "lineBytes": row.len,
        }))
    }
}

fn respond(status: StatusCode, kind: &str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(kind).unwrap_or(HeaderValue::from_static("text/plain")),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    r
}

fn text(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    respond(
        status,
        "text/plain; charset=utf-8",
        Bytes::from(format!("{why}\n")),
    )
}

/// A query string's component, percent-decoded (`+` is a space).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len()
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
