// SPDX-License-Identifier: GPL-2.0-only
//! Union-find over online CPU positions: sharing lists may be mutually inconsistent or name
//! offline CPUs, and merging them this way still partitions the online CPUs.

use std::collections::BTreeMap;

/// Partition builder over online CPU positions.
pub(super) struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    pub(super) fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    pub(super) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    pub(super) fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }

    /// Groups of CPU ids, each sorted, ordered by their first CPU.
    pub(super) fn groups(&mut self, online: &[u32]) -> Vec<Vec<u32>> {
        let mut by_root: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (pos, &cpu) in online.iter().enumerate() {
            let root = self.find(pos);
            by_root.entry(root).or_default().push(cpu);
        }
        let mut groups: Vec<Vec<u32>> = by_root.into_values().collect();
        groups.sort_by_key(|g| g[0]);
        groups
    }
}
