//! The SSE streams of the HTTP + SSE transport: the connection's, opened after `initialize`,
//! and each session's, opened before the first message naming it or as soon as a
//! `session/new` / `session/fork` answer names it ([`Answer`]). Every event's data is one
//! message, passed to the driver as one line (acp-core's [`SseDecoder`]); a stream that ends,
//! ends the transport. An event over the size limit is skipped in bounded memory and handled
//! as acp-core handles an oversize line on stdio ([`acp_core::sniff`]).

use std::pin::Pin;
use std::sync::Arc;

use acp_core::http_sse::{Answer, SkippedEvent, SseDecoder, SseItem};
use http_body_util::BodyExt;
use hyper::body::{Bytes, Incoming};
use hyper::Method;
use tokio::sync::mpsc;

use super::http::{HttpBridge, Posted};
use super::lane::{status_error, Lane};
use super::wire::EVENT_STREAM_MIME_TYPE;
use super::RemoteError;

impl HttpBridge {
    /// Opens the connection's (`None`) or a session's SSE stream and returns once the server
    /// accepted it; its events then flow to the driver until the transport stops. A stream
    /// that ends, ends the transport.
    pub(super) async fn open_stream(
        self: &Arc<Self>,
        session: Option<String>,
        to_driver: mpsc::Sender<Bytes>,
    ) -> Result<(), RemoteError> {
        let during = match &session {
            Some(s) => format!("the stream of session {s}"),
            None => "the connection's stream".to_string(),
        };
        let request = self.request(
            Method::GET,
            EVENT_STREAM_MIME_TYPE,
            session.as_deref(),
            None,
        )?;
        let mut lane = Lane::new(self.dialer.clone());
        let response = lane.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error(&during, response).await);
        }
        let this = self.clone();
        tokio::spawn(async move {
            let stop = this.link.stop.clone();
            let reason = tokio::select! {
                r = this.read_stream(response.into_body(), &to_driver) => r,
                _ = stop.cancelled() => return,
            };
            drop(lane);
            this.link.fail(format!("{during} ended: {reason}"));
        });
        Ok(())
    }

    /// Passes a stream's events to the driver; returns why it ended.
    async fn read_stream(
        self: &Arc<Self>,
        mut body: Incoming,
        to_driver: &mpsc::Sender<Bytes>,
    ) -> String {
        let mut decoder = SseDecoder::new(self.max_message_bytes);
        let mut items = Vec::new();
        loop {
            let frame = match body.frame().await {
                None => return "the server closed it".into(),
                Some(Err(e)) => return format!("reading it failed: {e}"),
                Some(Ok(frame)) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            decoder.feed(&data, &mut |item| items.push(item));
            for item in items.drain(..) {
                let text = match item {
                    SseItem::Data(text) => text,
                    SseItem::Oversize { prefix, size } => {
                        match self.skip_oversize(&prefix, size).await {
                            Some(stand_in) => stand_in,
                            None => continue,
                        }
                    }
                };
                if text.trim().is_empty() {
                    continue;
                }
                self.note_answer(&text, to_driver);
                let mut line = text.replace(['\n', '\r'], " ").into_bytes();
                line.push(b'\n');
                if to_driver.send(Bytes::from(line)).await.is_err() {
                    return "the connection closed".into();
                }
            }
        }
    }

    /// An SSE event whose data was over the limit was skipped (the [`SseDecoder`] gives its
    /// first bytes and size), as acp-core skips an oversize line on stdio: a response to one
    /// of our requests is replaced by an error response for its id, returned to be passed to
    /// the driver, so that call fails at once saying why; a request from the agent is
    /// answered with acp-core's oversize error for its id; anything else (a notification) is
    /// only logged (stdio would answer it with an error for id `null`, which a server has
    /// nowhere to route).
    async fn skip_oversize(&self, prefix: &[u8], size: usize) -> Option<String> {
        let limit = self.max_message_bytes;
        match SkippedEvent::of(prefix, limit) {
            SkippedEvent::StandIn(stand_in) => {
                tracing::warn!(size, limit, url = %self.link.url, "a response from the server over the limit was skipped: its call fails");
                Some(stand_in)
            }
            SkippedEvent::Answer(answer) => {
                tracing::warn!(size, limit, url = %self.link.url, "a request from the server over the limit was skipped and answered with an error");
                let lane = self.answers.get().and_then(mpsc::WeakSender::upgrade);
                if let Some(lane) = lane {
                    let _ = lane.send(Posted::new(answer.as_bytes())).await;
                }
                None
            }
            SkippedEvent::Dropped => {
                tracing::warn!(size, limit, url = %self.link.url, "a message from the server over the limit was skipped");
                None
            }
        }
    }

    /// An answer to our `session/new` / `session/fork` opens the new session's stream.
    fn note_answer(self: &Arc<Self>, text: &str, to_driver: &mpsc::Sender<Bytes>) {
        if self.opening.lock().unwrap().is_empty() {
            return;
        }
        let Some(answer) = Answer::read(text) else {
            return;
        };
        {
            let mut opening = self.opening.lock().unwrap();
            let Some(at) = opening.iter().position(|o| *o == answer.id) else {
                return;
            };
            opening.swap_remove(at);
        }
        let Some(session) = answer.session else {
            return;
        };
        if !self.sessions.lock().unwrap().insert(session.clone()) {
            return;
        }
        // Not awaited: events wait in the server's mailbox until the stream is read. (Boxed:
        // the stream's reader is inside this future's type.)
        let this = self.clone();
        let to_driver = to_driver.clone();
        let open: Pin<Box<dyn std::future::Future<Output = ()> + Send>> = Box::pin(async move {
            if let Err(e) = this.open_stream(Some(session), to_driver).await {
                this.link.fail(e.to_string());
            }
        });
        tokio::spawn(open);
    }
}
