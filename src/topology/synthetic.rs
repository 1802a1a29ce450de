// SPDX-License-Identifier: GPL-2.0-only
//! Regular machines built without sysfs ([`Topology::synthetic`]): what-if
//! tables, benches and tests.

use std::collections::BTreeMap;

use anyhow::{Result, ensure};

use super::{CpuSizes, Topology};
use crate::bpf_intf::MAX_CPUS;

/// How SMT siblings are numbered in a [`SyntheticLayout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtNumbering {
    /// Linux x86 default: all first threads, then all second threads
    /// (siblings are `c` and `c + nr_cores`).
    Split,
    /// Siblings are consecutive ids (common on arm64 and POWER).
    Adjacent,
}

/// A regular machine: packages x L3s x cores x threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticLayout {
    pub packages: u32,
    pub l3_per_package: u32,
    pub cores_per_l3: u32,
    pub threads_per_core: u32,
    /// Cores sharing one L2 (1 = private L2 per core).
    pub cores_per_l2: u32,
    /// NUMA nodes per package; each spans whole L3s.
    pub nodes_per_package: u32,
    pub smt_numbering: SmtNumbering,
}

impl SyntheticLayout {
    /// One package, one node, private L2s, split SMT numbering.
    pub const fn simple(l3s: u32, cores_per_l3: u32, threads_per_core: u32) -> Self {
        Self {
            packages: 1,
            l3_per_package: l3s,
            cores_per_l3,
            threads_per_core,
            cores_per_l2: 1,
            nodes_per_package: 1,
            smt_numbering: SmtNumbering::Split,
        }
    }

    /// Total CPUs (saturating, so absurd layouts fail validation instead of
    /// overflowing).
    pub fn nr_cpus(&self) -> u64 {
        [
            self.l3_per_package,
            self.cores_per_l3,
            self.threads_per_core,
        ]
        .iter()
        .fold(u64::from(self.packages), |acc, &k| {
            acc.saturating_mul(u64::from(k))
        })
    }
}

impl Topology {
    /// Builds a regular layout without sysfs: what-if tables, benches and
    /// tests. All CPUs are online.
    pub fn synthetic(layout: &SyntheticLayout) -> Result<Self> {
        let SyntheticLayout {
            packages,
            l3_per_package,
            cores_per_l3,
            threads_per_core,
            cores_per_l2,
            nodes_per_package,
            smt_numbering,
        } = *layout;
        ensure!(
            packages > 0
                && l3_per_package > 0
                && cores_per_l3 > 0
                && threads_per_core > 0
                && cores_per_l2 > 0
                && nodes_per_package > 0,
            "synthetic layout: every count must be positive: {layout:?}"
        );
        ensure!(
            cores_per_l3 % cores_per_l2 == 0,
            "synthetic layout: cores_per_l2 must divide cores_per_l3: {layout:?}"
        );
        ensure!(
            nodes_per_package <= l3_per_package,
            "synthetic layout: more NUMA nodes than L3s per package: {layout:?}"
        );
        let total = layout.nr_cpus();
        ensure!(
            total <= MAX_CPUS as u64,
            "synthetic layout: {total} CPUs exceeds MAX_CPUS {MAX_CPUS}"
        );

        let total_cores = packages * l3_per_package * cores_per_l3;
        let cpu_of = |core: u32, thread: u32| match smt_numbering {
            SmtNumbering::Split => thread * total_cores + core,
            SmtNumbering::Adjacent => core * threads_per_core + thread,
        };
        let nr = total_cores * threads_per_core;
        let mut smt_groups = Vec::new();
        let mut l2_groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut l3_groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        let mut package_of = BTreeMap::new();
        let mut core_of = BTreeMap::new();
        let mut cluster_of = BTreeMap::new();
        let mut node_of = BTreeMap::new();
        for core in 0..total_cores {
            let l3_id = core / cores_per_l3;
            let package = l3_id / l3_per_package;
            let l3_in_package = l3_id % l3_per_package;
            let l2_id = core / cores_per_l2;
            let node =
                package * nodes_per_package + l3_in_package * nodes_per_package / l3_per_package;
            let threads: Vec<u32> = (0..threads_per_core).map(|t| cpu_of(core, t)).collect();
            for &cpu in &threads {
                package_of.insert(cpu, package);
                core_of.insert(cpu, core % (l3_per_package * cores_per_l3));
                cluster_of.insert(cpu, l2_id);
                node_of.insert(cpu, node);
                l2_groups.entry(l2_id).or_default().push(cpu);
                l3_groups.entry(l3_id).or_default().push(cpu);
            }
            smt_groups.push(threads);
        }
        let finish = |groups: Vec<Vec<u32>>| {
            let mut groups: Vec<Vec<u32>> = groups
                .into_iter()
                .map(|mut g| {
                    g.sort_unstable();
                    g
                })
                .collect();
            groups.sort_by_key(|g| g[0]);
            groups
        };
        let online: Vec<u32> = (0..nr).collect();
        Ok(Self {
            nr_cpu_ids: nr,
            possible: online.clone(),
            online,
            smt_groups: finish(smt_groups),
            l2_groups: finish(l2_groups.into_values().collect()),
            l3_groups: finish(l3_groups.into_values().collect()),
            package_of,
            core_of,
            cluster_of,
            node_of,
            nr_nodes: packages * nodes_per_package,
            sizes: CpuSizes::default(),
            warnings: Vec::new(),
        })
    }
}

#[cfg(test)]
#[path = "tests/synthetic.rs"]
mod tests;
