//! Restarting a crashed agent ([`acp_client::restart`]) for JavaScript (feature `client`):
//! exponential backoff and a crash budget with a circuit breaker. Clock-free like the rest:
//! the caller passes `nowMs` (any fixed origin). `tests/client/restart.json` is the case table.

use std::time::Duration;

use acp_client::restart::{self, RestartPolicy};
use wasm_bindgen::prelude::*;

use crate::errors::type_error;
use crate::millis;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** When and how often to restart a crashed agent (all fields required; durations in ms). */
export interface RestartPolicy {
  /** Restarts allowed within any window; the crash after that trips the breaker. 0: never. */
  maxRestartsInWindow: number;
  windowMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Growth factor per further crash in the window (below 1 or non-finite acts as 1). */
  multiplier: number;
}

/** What to do after a crash (the JSON text `CrashBudget.recordCrash` returns). */
export type RestartDecision =
  | { decision: "restart"; afterMs: number; attempt: number }
  | { decision: "give_up"; reason: string };
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

/// Crash counting with a sliding window and a circuit breaker. Once tripped it stays open
/// (every further crash answers `give_up`) until `reset()`, a human decision.
///
/// The object owns wasm memory: call `free()` when done; any method called afterwards throws.
#[wasm_bindgen]
pub struct CrashBudget {
    inner: restart::CrashBudget,
}

#[wasm_bindgen]
impl CrashBudget {
    /// A fresh budget for the policy (JSON text of `RestartPolicy`; default: acp-client's
    /// `RestartPolicy::default()`, 4 restarts per 2 minutes, 500 ms doubling up to 30 s).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(js_name = policyJson, unchecked_optional_param_type = "string")]
        policy_json: JsValue,
    ) -> Result<CrashBudget, JsValue> {
        let policy = if policy_json.is_undefined() || policy_json.is_null() {
            RestartPolicy::default()
        } else {
            policy_json
                .as_string()
                .and_then(|t| serde_json::from_str(&t).ok())
                .ok_or_else(|| {
                    type_error("policyJson must be the JSON text of {maxRestartsInWindow, windowMs, initialBackoffMs, maxBackoffMs: non-negative integers, multiplier: number}")
                })?
        };
        Ok(CrashBudget {
            inner: restart::CrashBudget::new(policy),
        })
    }

    /// Records a crash at `nowMs` and decides: JSON text of `RestartDecision`.
    #[wasm_bindgen(js_name = recordCrash)]
    pub fn record_crash(
        &mut self,
        #[wasm_bindgen(js_name = nowMs, unchecked_param_type = "number")] now_ms: JsValue,
    ) -> Result<String, JsValue> {
        let now = now_ms
            .as_f64()
            .ok_or_else(|| type_error("nowMs must be a non-negative finite number"))
            .and_then(|n| millis(n, "nowMs"))?;
        let decision = self.inner.record_crash(Duration::from_millis(now));
        Ok(serde_json::to_string(&decision).unwrap_or_default())
    }

    /// Forgets all crashes and closes the breaker.
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// Whether the breaker is open.
    #[wasm_bindgen(js_name = isTripped)]
    pub fn is_tripped(&self) -> bool {
        self.inner.is_tripped()
    }
}

#[cfg(test)]
mod tests {
    use super::TS_TYPES;
    use acp_client::restart::RestartDecision;
    use std::time::Duration;

    #[test]
    fn every_decision_is_typed() {
        let name = |d: &RestartDecision| match d {
            RestartDecision::Restart { .. } => "restart",
            RestartDecision::GiveUp { .. } => "give_up",
        };
        for d in [
            RestartDecision::Restart {
                after: Duration::ZERO,
                attempt: 1,
            },
            RestartDecision::GiveUp {
                reason: String::new(),
            },
        ] {
            assert_eq!(serde_json::to_value(&d).unwrap()["decision"], name(&d));
            assert!(TS_TYPES.contains(&format!("\"{}\"", name(&d))));
        }
    }
}
