//! Answering `session/request_permission`: which option an automatic answer picks, what a
//! request with no options gets, what a dismissed or unanswerable question answers, and
//! whether that answer cancels the turn.
//!
//! The rules (every face follows them; `tests/client/permission.json` is the case table):
//! - **Automatic approval picks `allow_once`.** `allow_always` persists a rule in the agent
//!   (qwen-code writes `proceed_always_project` into the project; gemini-cli refuses it in an
//!   untrusted folder), so it is chosen only in [`AutoMode::AllowAlways`], a mode the user
//!   asks for by name. When `allow_once` is not offered, [`AutoMode::AllowOnce`] asks the user.
//! - **Automatic refusal picks `reject_once`**, never `reject_always`; when it is not offered,
//!   the turn is cancelled (`session/cancel`, then the answer `cancelled`), which refuses
//!   without persisting anything.
//! - **No options:** nothing can be chosen, so the turn is cancelled.
//! - **Dismissed** (Escape, a closed dialog): the user did not approve this call, and the turn
//!   goes on: `reject_once` when offered, else the turn is cancelled.
//! - **Unanswerable** (no one can answer: end of input, the window closing): the turn is
//!   cancelled.
//! - Options of kinds this crate does not know are shown but never chosen automatically.
//!
//! Per the schema, `cancelled` is the answer of a client that cancelled the turn: a face sends
//! `session/cancel` for the session before answering [`Decision::Cancel`] (once per turn).

use serde::{Deserialize, Serialize};

/// A permission option's kind. Unknown kinds are kept (and never chosen automatically).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    /// `allow_once`: allow this call only.
    AllowOnce,
    /// `allow_always`: allow, and let the agent remember it (it may write a rule into the project
    /// or its own settings).
    AllowAlways,
    /// `reject_once`: refuse this call only.
    RejectOnce,
    /// `reject_always`: refuse, and let the agent remember it.
    RejectAlways,
    /// A kind this version does not know, as sent (shown by name, never chosen automatically).
    #[serde(untagged)]
    Other(String),
}

impl OptionKind {
    /// The kind named `name` on the wire (`allow_once`…); another name is [`OptionKind::Other`].
    pub fn from_name(name: &str) -> OptionKind {
        match name {
            "allow_once" => OptionKind::AllowOnce,
            "allow_always" => OptionKind::AllowAlways,
            "reject_once" => OptionKind::RejectOnce,
            "reject_always" => OptionKind::RejectAlways,
            other => OptionKind::Other(other.to_string()),
        }
    }

    /// Its name on the wire (`allow_once`…, or the unknown kind as sent).
    pub fn name(&self) -> &str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
            OptionKind::Other(k) => k,
        }
    }

    /// Words for the user ("allow once").
    pub fn label(&self) -> &str {
        match self {
            OptionKind::AllowOnce => "allow once",
            OptionKind::AllowAlways => "allow always",
            OptionKind::RejectOnce => "reject once",
            OptionKind::RejectAlways => "reject always",
            OptionKind::Other(k) => k,
        }
    }
}

/// One of the agent's options (`PermissionOption`), as far as the decision needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// The id the answer names (`outcome: selected`, `optionId`).
    pub option_id: String,
    /// The label the agent gave it (empty when absent).
    #[serde(default)]
    pub name: String,
    /// What choosing it means.
    pub kind: OptionKind,
}

/// How the user set automatic answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoMode {
    /// Every question goes to the user.
    Ask,
    /// Approve this call only (`acp chat --yes`, the extension's auto-approve setting).
    AllowOnce,
    /// Approve, persisting the agent's "always" rule when it offers one (`acp chat
    /// --yes-always`).
    AllowAlways,
    /// Refuse this call only (`acp chat --deny`).
    Deny,
}

/// Why a question is answered `cancelled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The agent offered no options.
    NoOptions,
    /// `--deny` and the agent offered no `reject_once`.
    NoRejectOnce,
    /// The user dismissed a question that had no `reject_once`.
    Dismissed,
    /// No one can answer (end of input, the window closing).
    Unanswerable,
}

impl CancelReason {
    /// Words for the user.
    pub fn describe(self) -> &'static str {
        match self {
            CancelReason::NoOptions => "the agent offered no options",
            CancelReason::NoRejectOnce => "the agent offered no reject-once option",
            CancelReason::Dismissed => "dismissed, and the agent offered no reject-once option",
            CancelReason::Unanswerable => "no one can answer",
        }
    }
}

/// What to answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "answer")]
pub enum Decision {
    /// Show the question to the user.
    Ask,
    /// Answer with this option.
    #[serde(rename_all = "camelCase")]
    Select {
        /// The chosen option's `optionId`: the answer's `outcome` is `selected` with it.
        option_id: String,
        /// Its kind, so a face can say what was answered.
        kind: OptionKind,
    },
    /// Send `session/cancel` (once per turn), then answer `cancelled`.
    #[serde(rename = "cancelled")]
    Cancel {
        /// Why: what a face tells the user ([`CancelReason::describe`]).
        reason: CancelReason,
    },
}

impl Decision {
    fn select(option: &PermissionOption) -> Decision {
        Decision::Select {
            option_id: option.option_id.clone(),
            kind: option.kind.clone(),
        }
    }
}

fn first_of(options: &[PermissionOption], kind: &OptionKind) -> Option<Decision> {
    options
        .iter()
        .find(|o| &o.kind == kind)
        .map(Decision::select)
}

/// The answer before anyone is asked: an automatic one, or [`Decision::Ask`].
pub fn decide(options: &[PermissionOption], mode: AutoMode) -> Decision {
    if options.is_empty() {
        return Decision::Cancel {
            reason: CancelReason::NoOptions,
        };
    }
    match mode {
        AutoMode::Ask => Decision::Ask,
        AutoMode::AllowOnce => first_of(options, &OptionKind::AllowOnce).unwrap_or(Decision::Ask),
        AutoMode::AllowAlways => first_of(options, &OptionKind::AllowAlways)
            .or_else(|| first_of(options, &OptionKind::AllowOnce))
            .unwrap_or(Decision::Ask),
        AutoMode::Deny => first_of(options, &OptionKind::RejectOnce).unwrap_or(Decision::Cancel {
            reason: CancelReason::NoRejectOnce,
        }),
    }
}

/// The answer when the user dismissed the question without choosing.
pub fn dismissed(options: &[PermissionOption]) -> Decision {
    first_of(options, &OptionKind::RejectOnce).unwrap_or(Decision::Cancel {
        reason: CancelReason::Dismissed,
    })
}

/// The answer when no one can answer.
pub fn unanswerable() -> Decision {
    Decision::Cancel {
        reason: CancelReason::Unanswerable,
    }
}

/// The answer to the user's choice of `number` (1-based, as shown), or `None` when it is not
/// one of the options (ask again).
pub fn chosen(options: &[PermissionOption], number: &str) -> Option<Decision> {
    let n: usize = number.trim().parse().ok()?;
    options.get(n.checked_sub(1)?).map(Decision::select)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(id: &str, kind: OptionKind) -> PermissionOption {
        PermissionOption {
            option_id: id.into(),
            name: id.into(),
            kind,
        }
    }

    #[test]
    fn yes_never_persists_a_rule_unless_asked_to() {
        let options = [
            opt("always", OptionKind::AllowAlways),
            opt("once", OptionKind::AllowOnce),
        ];
        assert_eq!(
            decide(&options, AutoMode::AllowOnce),
            Decision::select(&options[1])
        );
        assert_eq!(
            decide(&options, AutoMode::AllowAlways),
            Decision::select(&options[0])
        );
        assert_eq!(decide(&options[..1], AutoMode::AllowOnce), Decision::Ask);
    }

    #[test]
    fn unknown_kinds_parse_and_are_never_chosen() {
        let o: PermissionOption =
            serde_json::from_str(r#"{"optionId":"x","name":"X","kind":"allow_sometimes"}"#)
                .unwrap();
        assert_eq!(o.kind, OptionKind::Other("allow_sometimes".into()));
        assert_eq!(decide(&[o], AutoMode::AllowOnce), Decision::Ask);
    }

    #[test]
    fn typed_numbers_must_name_an_option() {
        let options = [opt("a", OptionKind::AllowOnce)];
        assert_eq!(chosen(&options, " 1 "), Some(Decision::select(&options[0])));
        for bad in ["0", "2", "-1", "one", ""] {
            assert_eq!(chosen(&options, bad), None, "{bad}");
        }
    }
}
