// SPDX-License-Identifier: GPL-2.0-only
//! What BPF's warm-start map holds, mirrored so each tick writes only the difference: the
//! confident set changes rarely, and rewriting every entry every second was most of the control
//! loop's system calls.

use std::collections::HashMap;

use crate::bpf_intf::{CommKey, TaskClassEntry};

/// The map changes that bring it to a wanted set.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WarmDelta {
    pub remove: Vec<CommKey>,
    pub put: Vec<(CommKey, TaskClassEntry)>,
}

impl WarmDelta {
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.put.is_empty()
    }
}

/// The map's contents as last written. Starts empty, as a freshly loaded BPF map does. A key
/// whose state is unknown (a write to it failed) holds `None`: it is rewritten if still wanted and
/// removed otherwise.
#[derive(Debug, Default)]
pub struct WarmMirror {
    held: HashMap<CommKey, Option<TaskClassEntry>>,
}

impl WarmMirror {
    /// The changes from what the map holds to `want` (later duplicates of a key win, as they
    /// would in a sequence of map updates).
    pub fn delta(&self, want: &[(CommKey, TaskClassEntry)]) -> WarmDelta {
        let wanted: HashMap<CommKey, TaskClassEntry> = want.iter().copied().collect();
        let mut remove: Vec<CommKey> = self
            .held
            .keys()
            .filter(|k| !wanted.contains_key(k))
            .copied()
            .collect();
        remove.sort_by_key(|k| k.comm);
        let mut put: Vec<(CommKey, TaskClassEntry)> = wanted
            .into_iter()
            .filter(|(k, e)| self.held.get(k) != Some(&Some(*e)))
            .collect();
        put.sort_by_key(|(k, _)| k.comm);
        WarmDelta { remove, put }
    }

    /// Records that `d` reached the map.
    pub fn applied(&mut self, d: &WarmDelta) {
        for k in &d.remove {
            self.held.remove(k);
        }
        self.held.extend(d.put.iter().map(|&(k, e)| (k, Some(e))));
    }

    /// Records that applying `d` failed part-way: every key it touched is now unknown.
    pub fn failed(&mut self, d: &WarmDelta) {
        let touched = d.remove.iter().chain(d.put.iter().map(|(k, _)| k));
        self.held.extend(touched.map(|&k| (k, None)));
    }

    /// Forgets everything: a freshly loaded BPF program has an empty map.
    pub fn reset(&mut self) {
        self.held.clear();
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> CommKey {
        let mut k = CommKey::default();
        k.comm[..name.len()].copy_from_slice(name.as_bytes());
        k
    }

    fn entry(tier: u8, rt: u64) -> TaskClassEntry {
        TaskClassEntry {
            tier,
            confident: 1,
            avg_runtime_ns: rt,
            ..TaskClassEntry::default()
        }
    }

    #[test]
    fn first_sync_writes_everything_then_nothing() {
        let mut m = WarmMirror::default();
        let want = vec![(key("a"), entry(0, 10)), (key("b"), entry(2, 20))];
        let d = m.delta(&want);
        assert_eq!(d.put, want);
        assert!(d.remove.is_empty());
        m.applied(&d);
        assert_eq!(m.len(), 2);
        assert!(
            m.delta(&want).is_empty(),
            "an unchanged set costs no map write"
        );
    }

    #[test]
    fn only_changed_entries_are_written_and_dropped_ones_removed() {
        let mut m = WarmMirror::default();
        m.applied(&m.delta(&[
            (key("a"), entry(0, 10)),
            (key("b"), entry(2, 20)),
            (key("c"), entry(1, 30)),
        ]));
        let d = m.delta(&[
            (key("a"), entry(0, 10)),
            (key("b"), entry(2, 25)),
            (key("d"), entry(1, 40)),
        ]);
        assert_eq!(d.remove, vec![key("c")]);
        assert_eq!(
            d.put,
            vec![(key("b"), entry(2, 25)), (key("d"), entry(1, 40))]
        );
        m.applied(&d);
        let d = m.delta(&[]);
        assert_eq!(d.remove, vec![key("a"), key("b"), key("d")]);
        m.applied(&d);
        assert!(m.is_empty());
    }

    #[test]
    fn a_failed_write_is_retried_and_its_removals_redone() {
        let mut m = WarmMirror::default();
        m.applied(&m.delta(&[(key("a"), entry(0, 10)), (key("b"), entry(2, 20))]));
        let want = vec![(key("a"), entry(0, 11))];
        let d = m.delta(&want);
        assert_eq!(d.remove, vec![key("b")]);
        m.failed(&d);
        let again = m.delta(&want);
        assert_eq!(
            again, d,
            "nothing that may not have landed is assumed written"
        );
        m.applied(&again);
        assert!(m.delta(&want).is_empty());
    }

    #[test]
    fn reset_rewrites_every_wanted_entry() {
        let mut m = WarmMirror::default();
        let want = vec![(key("a"), entry(0, 10))];
        m.applied(&m.delta(&want));
        m.reset();
        assert_eq!(m.delta(&want).put, want);
    }
}
