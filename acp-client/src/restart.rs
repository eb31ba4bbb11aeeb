//! Restarting a crashed agent: exponential backoff and a crash budget with a circuit breaker
//! ("N crashes in M minutes, then stop and say why"). Pure and clock-free: the caller passes
//! `now` as the time since any fixed origin. Used by acp-native's `SupervisedAgent` and, through
//! acp-wasm, by the VS Code extension's supervisor; `tests/client/restart.json` is the case
//! table.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When and how often to restart a crashed agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartPolicy {
    /// Restarts allowed within any `window`; the crash after that trips the breaker. `0`: never
    /// restart.
    pub max_restarts_in_window: u32,
    /// The sliding window crashes are counted in.
    #[serde(rename = "windowMs", with = "ms")]
    pub window: Duration,
    /// Delay before the first restart in a window.
    #[serde(rename = "initialBackoffMs", with = "ms")]
    pub initial_backoff: Duration,
    /// Upper bound for the delay.
    #[serde(rename = "maxBackoffMs", with = "ms")]
    pub max_backoff: Duration,
    /// Growth factor per further crash in the window (values below 1 or non-finite act as 1).
    pub multiplier: f64,
}

impl Default for RestartPolicy {
    /// 4 restarts per 2 minutes (the 5th crash in 2 minutes gives up), 500 ms doubling up to
    /// 30 s.
    fn default() -> Self {
        RestartPolicy {
            max_restarts_in_window: 4,
            window: Duration::from_secs(120),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            multiplier: 2.0,
        }
    }
}

impl RestartPolicy {
    /// The delay before the restart that follows the `n`-th crash in the window (`n >= 1`):
    /// `min(initial * multiplier^(n-1), max)`.
    pub fn backoff_for(&self, n: u32) -> Duration {
        let m = if self.multiplier.is_finite() && self.multiplier >= 1.0 {
            self.multiplier
        } else {
            1.0
        };
        let exp = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial_backoff.as_secs_f64() * m.powi(exp);
        Duration::try_from_secs_f64(secs)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// What to do after a crash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum RestartDecision {
    /// Restart after this delay.
    Restart {
        /// Delay before respawning.
        #[serde(rename = "afterMs", with = "ms")]
        after: Duration,
        /// Which restart in the current window this is (1-based).
        attempt: u32,
    },
    /// Do not restart; tell the user why.
    GiveUp {
        /// For the user: "agent crashed 5 times in 2 minutes; not restarting".
        reason: String,
    },
}

/// Crash counting with a sliding window and a circuit breaker. Pure: the caller passes `now`
/// (time since any fixed origin, e.g. `start.elapsed()`), so tests use virtual time.
///
/// Once tripped, the breaker stays open (every further crash answers `GiveUp`) until
/// [`CrashBudget::reset`] — a human decision, e.g. the user pressing "restart agent".
#[derive(Clone, Debug)]
pub struct CrashBudget {
    policy: RestartPolicy,
    crashes: VecDeque<Duration>,
    tripped: Option<String>,
}

impl CrashBudget {
    /// A fresh budget.
    pub fn new(policy: RestartPolicy) -> Self {
        CrashBudget {
            policy,
            crashes: VecDeque::new(),
            tripped: None,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &RestartPolicy {
        &self.policy
    }

    /// Records a crash at `now` and decides.
    pub fn record_crash(&mut self, now: Duration) -> RestartDecision {
        if let Some(reason) = &self.tripped {
            return RestartDecision::GiveUp {
                reason: reason.clone(),
            };
        }
        self.forget_before(now);
        self.crashes.push_back(now);
        let n = u32::try_from(self.crashes.len()).unwrap_or(u32::MAX);
        if n > self.policy.max_restarts_in_window {
            let reason = if self.policy.max_restarts_in_window == 0 {
                "agent crashed and restarts are disabled; not restarting".to_owned()
            } else {
                format!(
                    "agent crashed {n} times in {}; not restarting",
                    human_duration(self.policy.window)
                )
            };
            self.tripped = Some(reason.clone());
            return RestartDecision::GiveUp { reason };
        }
        RestartDecision::Restart {
            after: self.policy.backoff_for(n),
            attempt: n,
        }
    }

    /// Crashes counted in the window ending at `now`.
    pub fn crashes_in_window(&self, now: Duration) -> usize {
        self.crashes
            .iter()
            .filter(|&&t| self.in_window(t, now))
            .count()
    }

    /// Whether the breaker is open.
    pub fn is_tripped(&self) -> bool {
        self.tripped.is_some()
    }

    /// Forgets all crashes and closes the breaker.
    pub fn reset(&mut self) {
        self.crashes.clear();
        self.tripped = None;
    }

    fn in_window(&self, t: Duration, now: Duration) -> bool {
        // A crash exactly `window` ago has left the window.
        now.saturating_sub(t) < self.policy.window
    }

    fn forget_before(&mut self, now: Duration) {
        while let Some(&t) = self.crashes.front() {
            if self.in_window(t, now) {
                break;
            }
            self.crashes.pop_front();
        }
    }
}

/// "2 minutes", "90 seconds", "1 hour", "1.5 seconds".
pub fn human_duration(d: Duration) -> String {
    fn unit(n: u64, name: &str) -> String {
        if n == 1 {
            format!("1 {name}")
        } else {
            format!("{n} {name}s")
        }
    }
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 {
        if secs == 0 {
            return unit(d.as_millis() as u64, "millisecond");
        }
        return format!("{:.1} seconds", d.as_secs_f64());
    }
    if secs != 0 && secs % 3600 == 0 {
        unit(secs / 3600, "hour")
    } else if secs != 0 && secs % 60 == 0 {
        unit(secs / 60, "minute")
    } else {
        unit(secs, "second")
    }
}

/// Durations as whole milliseconds in JSON.
mod ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn policy(n: u32) -> RestartPolicy {
        RestartPolicy {
            max_restarts_in_window: n,
            window: s(120),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            multiplier: 2.0,
        }
    }

    #[test]
    fn backoff_grows_and_caps() {
        let p = policy(10);
        let got: Vec<u64> = (1..=6)
            .map(|n| p.backoff_for(n).as_millis() as u64)
            .collect();
        assert_eq!(got, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(p.backoff_for(u32::MAX), Duration::from_millis(1000));
        let flat = RestartPolicy {
            multiplier: f64::NAN,
            ..policy(10)
        };
        assert_eq!(flat.backoff_for(5), Duration::from_millis(100));
        let shrinking = RestartPolicy {
            multiplier: 0.5,
            ..policy(10)
        };
        assert_eq!(shrinking.backoff_for(3), Duration::from_millis(100));
    }

    #[test]
    fn gives_up_after_budget_within_window() {
        let mut b = CrashBudget::new(policy(4));
        for (i, t) in [0u64, 10, 20, 30].into_iter().enumerate() {
            match b.record_crash(s(t)) {
                RestartDecision::Restart { attempt, .. } => assert_eq!(attempt as usize, i + 1),
                other => panic!("crash {i}: {other:?}"),
            }
        }
        assert_eq!(
            b.record_crash(s(40)),
            RestartDecision::GiveUp {
                reason: "agent crashed 5 times in 2 minutes; not restarting".into()
            }
        );
        assert!(b.is_tripped());
        // The breaker stays open even long after.
        assert!(matches!(
            b.record_crash(s(10_000)),
            RestartDecision::GiveUp { .. }
        ));
        b.reset();
        assert!(matches!(
            b.record_crash(s(10_001)),
            RestartDecision::Restart { attempt: 1, .. }
        ));
    }

    #[test]
    fn old_crashes_leave_the_window_and_backoff_relaxes() {
        let mut b = CrashBudget::new(policy(2));
        assert_eq!(
            b.record_crash(s(0)),
            RestartDecision::Restart {
                after: Duration::from_millis(100),
                attempt: 1
            }
        );
        assert_eq!(
            b.record_crash(s(60)),
            RestartDecision::Restart {
                after: Duration::from_millis(200),
                attempt: 2
            }
        );
        // Exactly one window after the first crash: it no longer counts.
        assert_eq!(b.crashes_in_window(s(120)), 1);
        assert_eq!(
            b.record_crash(s(120)),
            RestartDecision::Restart {
                after: Duration::from_millis(200),
                attempt: 2
            }
        );
        // Just inside the window of the last two: third crash in window trips.
        assert!(matches!(
            b.record_crash(s(179)),
            RestartDecision::GiveUp { .. }
        ));
    }

    #[test]
    fn zero_budget_never_restarts() {
        let mut b = CrashBudget::new(policy(0));
        assert_eq!(
            b.record_crash(s(5)),
            RestartDecision::GiveUp {
                reason: "agent crashed and restarts are disabled; not restarting".into()
            }
        );
    }

    #[test]
    fn default_policy_matches_its_doc() {
        let mut b = CrashBudget::new(RestartPolicy::default());
        for t in 0..4 {
            assert!(matches!(
                b.record_crash(s(t)),
                RestartDecision::Restart { .. }
            ));
        }
        assert_eq!(
            b.record_crash(s(4)),
            RestartDecision::GiveUp {
                reason: "agent crashed 5 times in 2 minutes; not restarting".into()
            }
        );
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(s(120)), "2 minutes");
        assert_eq!(human_duration(s(60)), "1 minute");
        assert_eq!(human_duration(s(90)), "90 seconds");
        assert_eq!(human_duration(s(7200)), "2 hours");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 seconds");
        assert_eq!(
            human_duration(Duration::from_millis(250)),
            "250 milliseconds"
        );
        assert_eq!(human_duration(s(0)), "0 seconds");
    }
}
