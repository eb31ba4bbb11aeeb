//! The envelope of a JSON-RPC message.

use acp_core::{Id, RawValue};

use super::super::wire;

/// The top level of a JSON-RPC message, borrowed from its text.
#[derive(serde::Deserialize)]
pub(super) struct Envelope<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) result: Option<&'a RawValue>,
}

impl Envelope<'_> {
    pub(super) fn id(&self) -> Option<Id> {
        self.id
            .and_then(|raw| serde_json::from_str::<Id>(raw.get()).ok())
            .filter(|id| *id != Id::Null)
    }

    /// The session a request or notification is about (see [`wire::session_id_of`]).
    pub(super) fn session_id(&self) -> Option<String> {
        let method = self.method.as_deref()?;
        let params = self.params?;
        if method.starts_with("$/") {
            return None;
        }
        if method == "proxy/successor" {
            let value: serde_json::Value = serde_json::from_str(params.get()).ok()?;
            return wire::session_id_of(method, Some(&value)).map(str::to_string);
        }
        session_id_field(params.get())
    }
}

/// `sessionId` of a JSON object's text, when it is a string.
pub(super) fn session_id_field(object: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct WithSession<'a> {
        #[serde(rename = "sessionId", borrow, default)]
        session_id: Option<&'a RawValue>,
    }
    let w: WithSession<'_> = serde_json::from_str(object).ok()?;
    serde_json::from_str::<String>(w.session_id?.get()).ok()
}
