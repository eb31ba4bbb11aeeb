//! The message of a trace line, as the detail pane shows it: the JSON-RPC message that went
//! over the wire (acp's `msg`, the text after the extension's arrow, one entry of a batch),
//! the conductor's whole event, or the line's text when it is not JSON. Written once more in
//! `trace-viewer/model.js` (`messageOf`).

use acp_core::RawValue;
use serde::Deserialize;

/// A row's message: JSON text, or plain text.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub json: bool,
    pub text: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Wrapper<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<std::borrow::Cow<'a, str>>,
    ts: Option<f64>,
    #[serde(borrow)]
    from: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    dir: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "tMs")]
    t_ms: Option<f64>,
    #[serde(borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    msg: Option<&'a RawValue>,
    line: Option<String>,
}

fn json(text: &str) -> Message<'_> {
    Message {
        json: true,
        text: text.into(),
    }
}

fn text(text: &str) -> Message<'_> {
    Message {
        json: false,
        text: text.into(),
    }
}

/// The message of `line` (its whole text, without the line break); `entry` the 1-based
/// entry of a batch (0: the line's only message).
pub fn message_of(line: &str, entry: u16) -> Message<'_> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim_start().starts_with('{') {
        let Ok(w) = serde_json::from_str::<Wrapper<'_>>(line) else {
            return text(line);
        };
        if w.ty.is_some() && (w.ts.is_some() || w.from.is_some()) {
            return json(line);
        }
        if w.dir.is_some() || w.t_ms.is_some() {
            return match (w.kind.as_deref(), w.msg, w.line) {
                (Some("invalid"), _, Some(l)) => Message {
                    json: false,
                    text: l.into(),
                },
                (Some("oversize"), _, _) => json(line),
                (_, Some(msg), _) => json(msg.get()),
                _ => text(line),
            };
        }
        return if serde_json::from_str::<&RawValue>(line).is_ok() {
            json(line)
        } else {
            text(line)
        };
    }
    let rest = match line.split_once(' ') {
        Some((t, rest)) if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') => rest,
        _ => line,
    };
    if let Some(wire) = rest.strip_prefix("→ ").or_else(|| rest.strip_prefix("← ")) {
        if entry > 0 {
            let mut k = 0u16;
            let mut pick = None;
            let _ = acp_core::jsonrpc::each_message(wire, |raw, _| {
                k += 1;
                if k == entry {
                    pick = Some(raw);
                }
            });
            if let Some(raw) = pick {
                return json(raw.get());
            }
        }
        return if serde_json::from_str::<&RawValue>(wire).is_ok() {
            json(wire)
        } else {
            text(wire)
        };
    }
    if let Some(err) = rest.strip_prefix("stderr ") {
        return text(err);
    }
    text(line)
}
