//! The demo agent's ACP v2 session config option (feature `unstable_protocol_v2`): v2 has no
//! modes, config options instead. One select, `permissions` (category `mode`): `ask` (the
//! default: the agent asks before it writes) or `allow` (it writes without asking). It is in
//! the `session/new` and `session/resume` answers, `session/set_config_option` sets it
//! (answered with the full set, as v2 asks; an unknown `configId`, a value type other than
//! `id` or an unknown value is -32602 and changes nothing), and with `--state-dir` it is saved
//! with the session.

use acp_core::ErrorObject;
use acp_native::RawValue;
use serde_json::{json, Value};

use super::v2::{raw, str_param};
use super::DemoAgent;

/// The one config option's id.
pub(super) const PERMISSIONS: &str = "permissions";

/// The session's `configOptions` (v2's shape: `configId`, a `select` with its choices).
pub(super) fn config_options(allow_writes: bool) -> Value {
    json!([{
        "configId": PERMISSIONS,
        "name": "Permissions",
        "description": "Whether the demo agent asks before it writes acp-demo.txt",
        "category": "mode",
        "type": "select",
        "currentValue": if allow_writes { "allow" } else { "ask" },
        "options": [
            {"value": "ask", "name": "Ask first"},
            {"value": "allow", "name": "Allow writes"},
        ],
    }])
}

impl DemoAgent {
    /// `session/set_config_option`.
    pub(super) fn v2_set_config(&self, p: Value) -> Result<Box<RawValue>, ErrorObject> {
        let session = str_param(&p, "sessionId")?;
        let id = str_param(&p, "configId")?;
        if id != PERMISSIONS {
            return Err(ErrorObject::invalid_params(format!(
                "unknown configId {id} (this agent has {PERMISSIONS})"
            )));
        }
        if p["type"] != "id" {
            return Err(ErrorObject::invalid_params(format!(
                "{PERMISSIONS} takes a value of type id, not {}",
                p["type"]
            )));
        }
        let allow_writes = match p["value"].as_str() {
            Some("ask") => false,
            Some("allow") => true,
            _ => {
                return Err(ErrorObject::invalid_params(format!(
                    "{PERMISSIONS} is ask or allow, not {}",
                    p["value"]
                )))
            }
        };
        self.v2_restore(&session);
        {
            let mut sessions = self.v2_sessions.lock().unwrap();
            let s = sessions
                .get_mut(&session)
                .ok_or_else(|| super::handlers::unknown_session(&session))?;
            s.allow_writes = allow_writes;
        }
        self.v2_save(&session);
        raw(json!({"configOptions": config_options(allow_writes)}))
    }
}
