//! What changed since the last [`Thread::take_delta`], for a view that redraws from deltas:
//! the entries changed (each once, whole), the text appended to one entry the view has
//! (only the new text: a long streamed message is not sent again with every delta), and the
//! thread's other fields when any changed.

use serde::Serialize;

use super::*;

/// Text appended to block `block` of entry `entry` since byte `from`, while that entry did not
/// change otherwise (then it is in `changed`, and sent whole).
#[derive(Clone, Copy, Debug)]
pub(super) struct Grown {
    entry: u64,
    block: usize,
    from: usize,
}

/// Changes since the last [`Thread::take_delta`]: each changed entry once, with its number,
/// and the thread's other fields when any of them changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delta<'a> {
    /// Each entry changed since the last delta, once, with its number, in number order.
    pub entries: Vec<(u64, &'a Entry)>,
    /// Text appended to an entry the view has and that did not change otherwise: `(entry,
    /// block, text)`, the text added to the end of that text block since the last delta. A
    /// message streamed chunk by chunk comes this way: each delta carries the new text only,
    /// not the whole message again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub appended: Vec<(u64, usize, &'a str)>,
    /// Entries before this number are gone (dropped for the memory limit).
    pub first_entry: u64,
    /// The fields other than the entries, when any of them changed (or entries were dropped);
    /// `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta<'a>>,
}

/// The thread without its entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta<'a> {
    /// [`Thread::title`].
    pub title: &'a Option<String>,
    /// [`Thread::plan`].
    pub plan: &'a [PlanEntry],
    /// [`Thread::plan_more`].
    pub plan_more: u64,
    /// [`Thread::current_mode`].
    pub current_mode: &'a Option<String>,
    /// [`Thread::modes`].
    pub modes: &'a [Mode],
    /// [`Thread::config_options`].
    pub config_options: &'a Option<RawJson>,
    /// [`Thread::commands`].
    pub commands: &'a [Command],
    /// [`Thread::commands_more`].
    pub commands_more: u64,
    /// [`Thread::usage`].
    pub usage: &'a Option<Usage>,
    /// [`Thread::turn`].
    pub turn: Turn,
    /// [`Thread::last_stop`].
    pub last_stop: &'a Option<String>,
    /// [`Thread::turn_usage`].
    #[cfg(feature = "unstable")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_usage: &'a Option<TurnUsage>,
    /// [`Thread::session_status`].
    #[cfg(feature = "unstable")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_status: &'a Option<String>,
}

impl Thread {
    /// Text was appended to block `block` of entry `n`, which held `from` bytes of text: sent
    /// as appended text, unless the entry is sent whole anyway. One entry grows at a time (the
    /// message streamed); another that grew before is sent whole.
    pub(super) fn grew(&mut self, n: u64, block: usize, from: usize) {
        if self.changed.contains(&n) {
            return;
        }
        match self.grown {
            Some(g) if g.entry == n && g.block == block => {}
            other => {
                if let Some(g) = other {
                    self.changed.insert(g.entry);
                }
                self.grown = Some(Grown {
                    entry: n,
                    block,
                    from,
                });
            }
        }
    }

    /// Changes since the last call, coalesced; clears them.
    pub fn take_delta(&mut self) -> Delta<'_> {
        let changed = std::mem::take(&mut self.changed);
        let meta = std::mem::take(&mut self.meta_changed);
        let grown = self.grown.take().filter(|g| !changed.contains(&g.entry));
        let first = self.dropped_entries;
        Delta {
            appended: grown
                .and_then(|g| {
                    let text = self
                        .entry(g.entry)?
                        .blocks()?
                        .get(g.block)?
                        .text
                        .as_deref()?;
                    Some((g.entry, g.block, text.get(g.from..)?))
                })
                .into_iter()
                .collect(),
            entries: changed
                .into_iter()
                .filter_map(|n| {
                    let i = usize::try_from(n.checked_sub(first)?).ok()?;
                    self.entries.get(i).map(|e| (n, e))
                })
                .collect(),
            first_entry: first,
            meta: meta.then(|| self.meta()),
        }
    }

    /// Whether [`Thread::take_delta`] has anything.
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty() || self.grown.is_some() || self.meta_changed
    }

    /// The thread's fields other than the entries.
    pub fn meta(&self) -> Meta<'_> {
        Meta {
            title: &self.title,
            plan: &self.plan,
            plan_more: self.plan_more,
            current_mode: &self.current_mode,
            modes: &self.modes,
            config_options: &self.config_options,
            commands: &self.commands,
            commands_more: self.commands_more,
            usage: &self.usage,
            turn: self.turn,
            last_stop: &self.last_stop,
            #[cfg(feature = "unstable")]
            turn_usage: &self.turn_usage,
            #[cfg(feature = "unstable")]
            session_status: &self.session_status,
        }
    }
}
