// SPDX-License-Identifier: GPL-2.0-only
//! CPU topology -> the numbers the BPF scheduler consumes.
//!
//! Pipeline: a [`TopologySource`] ([`Live`] through scx_utils, or a sysfs
//! tree, [`SysfsTree`]) -> weighted graph over the
//! online CPUs ([`Topology::laplacian`]) -> Laplacian pseudoinverse and Fiedler
//! value ([`Spectrum`]) -> effective-resistance affinity ranks, the topology
//! time constant tau and the CoDel equilibrium ([`TopologyModel`]) -> every
//! tau-scaled knob ([`derive_params`], handed to BPF by [`TauParams::bpf`]).
//!
//! # Files
//! - `cpulist`: the kernel's cpulist syntax, both ways.
//! - `capacity`: hybrid CPUs, big and little, from `cpu_capacity`, Intel's core types or
//!   AMD's CPPC highest perf.
//! - `source`: [`TopologySource`], the two readers' interface, and [`SysfsTree`].
//! - `live`: [`Live`], the running machine as `scx_utils::Topology` reads it.
//! - `probe`: raw per-CPU sysfs facts; garbage in a file is an error here.
//! - `sysfs`: [`Topology::detect_from`]: fallbacks, warnings, grouping.
//! - `shared`: what both readers decide alike: possible CPUs, sizes, fallback lines.
//! - `union_find`: grouping CPUs by what they share.
//! - `synthetic`: [`Topology::synthetic`] for what-if tables, benches, tests.
//! - `graph`: edge weights and the Laplacian.
//! - `spectrum`, `eigen`, `fast`: L+ and lambda_2 by the two routes.
//! - `params`: the tau law and the one table of tau-scaled K constants.
//! - `model`: [`TopologyModel`], the affinity ranks and the startup log.
//!
//! # Detection fallbacks
//! Both readers apply these (the `shared` module holds the common steps; a tree
//! scx_utils refuses is an error on the live path).
//! Real sysfs trees are often incomplete (containers, VMs, odd arches), so a
//! missing file degrades to a documented guess and a line in
//! [`Topology::warnings`]; a file that exists but holds garbage is an error
//! naming the path and the content, because guessing around corrupt data would
//! hide a real problem.
//! - `online`: required (an error when missing or empty) -- it is the only
//!   source of truth for where tasks may run.
//! - `possible`: missing or empty -> the online list.
//! - `cpuN/topology/*` missing -> the CPU is its own core (`core_id` = CPU
//!   id, no SMT siblings) in package 0. A negative id (some VMs report
//!   `physical_package_id` = -1) is treated as missing.
//! - `cpuN/cache/` missing -> L2 groups from `thread_siblings_list` (SMT
//!   threads share the L2 on every SMT part Linux supports) and L3 groups from
//!   the package. Cache info present but no L3 -> the L2 is the last-level
//!   cache, so the L3 group is the L2 group.
//! - `devices/system/node` missing -> one NUMA node (a `CONFIG_NUMA=n`
//!   kernel has no node directory at all).
//! - `cpuN/cpu_capacity` on some online CPUs only -> sizes from the core
//!   types or the CPPC highest perf if there are any, else uniform: a CPU
//!   wrongly taken for a little one would keep interactive work off it.
//! - `cpuN/cpu_capacity` the same on every CPU -> the core types, else the
//!   CPPC highest perf, decide (x86 kernels report 1024 everywhere when they do
//!   not model the asymmetry).
//! - A CPPC highest-perf file missing, unreadable, not a number or 0 on some
//!   online CPUs only -> that file is ignored, with a warning; unlike the
//!   topology files this is no error, since the kernel's `acpi_cppc` files pass
//!   on the firmware's read errors.
//!
//! Sharing lists may be mutually inconsistent or name offline CPUs; groups are
//! built with union-find over the online CPUs, so they always partition them.
//!
//! # Graph
//! Every pair of online CPUs is joined: [`W_SHARED_L2`] when they share an
//! L2, [`W_SAME_LLC`] when they share the last-level cache,
//! [`W_CROSS_LLC`] when only the package, and across packages
//! [`W_CROSS_PACKAGE`] times the weakest in-package link (so a socket hop
//! never conducts better than a CCX hop on split-LLC parts). The graph is
//! therefore complete and connected whenever two or more CPUs are online; the
//! disconnected branches in [`Spectrum`] exist for the general math API.
//!
//! # Spectral routes
//! The reference route is the symmetric eigendecomposition. nalgebra's
//! `SymmetricEigen` alone is not accurate enough on topology graphs (their
//! spectra are massively degenerate), so its basis is finished with Jacobi
//! sweeps. At 1024 CPUs that costs ~0.7 s, so above [`AUTO_EIGEN_MAX_N`] CPUs
//! the model takes a Cholesky/Lanczos route (~0.1 s) whose lambda_2 is
//! certified within 1e-9 and which falls back to the eigen route otherwise;
//! the tests prove both routes agree.
//!
//! # Tau calibration (read before changing a weight or [`TAU_SCALE_NS`])
//! `tau = TAU_SCALE_NS / lambda_2`. lambda_2 is set by the machine's weakest
//! cut, so the ratios of the reference machines' lambda_2 are ratios of
//! weights: a 2C SMT pair has 2 x [`W_SHARED_L2`] = 20, the 12C Zen part (two
//! CCX of 3 cores x 2 threads) 12 x [`W_CROSS_LLC`], the 2-socket 32C
//! 32 x [`W_CROSS_PACKAGE`] = 9.6. The design's targets (2C ~2 ms, 12C
//! ~40 ms, 32C ~5 ms) need those in the ratio 20 : 1 : 8.
//!
//! Measured with the three weights alone (a shared L3 counted as
//! "same socket"), the 12C part's weakest cut is a 1.0 link, lambda_2 = 12,
//! and no scale fits: 160 ms gave 2C 8 ms, 12C 13.3 ms, 32C (single socket)
//! 5 ms. Giving a split LLC its own weight fixes the one ratio that was wrong:
//! [`W_CROSS_LLC`] = 0.1 makes 12C lambda_2 = 1.2, and `TAU_SCALE_NS` = 48 ms
//! then lands 2C at 2.4 ms, 12C at 40 ms and 32C at 5.0 ms (the
//! `derived_table_for_every_fixture` test prints and checks the table).
//! Other fixtures: 4C (L2 pairs) 12 ms, 8C 6 ms, 32C single socket with 4
//! CCX 15 ms, 2-socket 128C with 4 L3 per socket 12.5 ms, and two CPUs on
//! separate cores of one LLC (a typical 2-vCPU VM, lambda_2 = 2) 24 ms.
//!
//! [`derive_params`] is calibrated on the tau axis: fed tau = 2 ms, 40 ms and
//! 5 ms it reproduces the published 2C, 12C and 32C columns (cells that the
//! design's own formulas cannot produce are listed there).
//!
//! # Limits
//! Sizes come from [`crate::bpf_intf`] so Rust and BPF cannot disagree:
//! `nr_cpu_ids` above [`MAX_CPUS`](crate::bpf_intf::MAX_CPUS) is refused,
//! rank rows hold
//! [`MAX_AFFINITY_CANDIDATES`](crate::bpf_intf::MAX_AFFINITY_CANDIDATES)
//! slots and unused slots hold
//! [`AFFINITY_SENTINEL`](crate::bpf_intf::AFFINITY_SENTINEL).

use std::collections::BTreeMap;

mod capacity;
mod cpulist;
mod eigen;
mod fast;
mod graph;
mod live;
mod model;
mod params;
mod probe;
mod shared;
mod source;
mod spectrum;
mod synthetic;
mod sysfs;
mod sysfs_writer;
mod union_find;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
#[path = "tests/fuzz.rs"]
mod fuzz;
#[cfg(test)]
#[path = "tests/live.rs"]
mod live_tests;
#[cfg(test)]
#[path = "tests/sizes.rs"]
mod sizes_tests;

pub use capacity::{CpuSize, CpuSizes, SAME_TIER_FRAC, SizeSource};
pub use cpulist::{CPU_LIST_ID_LIMIT, format_cpu_list, parse_cpu_list};
pub use eigen::PINV_REL_TOL;
pub use graph::{W_CROSS_LLC, W_CROSS_PACKAGE, W_SAME_LLC, W_SHARED_L2, laplacian_from_fn};
pub use live::Live;
pub use model::{RANK_TIE_REL_TOL, TopologyModel};
pub use params::{
    CODEL_EQ_MAX_NS, CODEL_EQ_MIN_NS, TAU_MAX_NS, TAU_MIN_NS, TAU_SCALE_NS, TauParams,
    codel_equilibrium_ns, derive_params, tau_ns_from_lambda2,
};
pub use source::{SysfsTree, TopologySource};
pub use spectrum::{AUTO_EIGEN_MAX_N, SpectralRoute, Spectrum};
pub use synthetic::{SmtNumbering, SyntheticLayout};
pub use sysfs_writer::write_sysfs_tree;

/// The machine's CPU layout, restricted to online CPUs but indexed by real
/// CPU ids (offline holes stay holes).
///
/// Invariants (guaranteed by both [`TopologySource`]s and
/// [`Topology::synthetic`]; a hand-built value must keep them): `online` is
/// sorted, non-empty and a subset of `possible`; every id is below
/// `nr_cpu_ids` <= [`MAX_CPUS`](crate::bpf_intf::MAX_CPUS); the group
/// lists partition `online`.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Highest possible CPU id + 1: the length BPF per-CPU arrays must cover.
    pub nr_cpu_ids: u32,
    pub possible: Vec<u32>,
    /// Sorted; the graph and [`Spectrum`] use positions in this list.
    pub online: Vec<u32>,
    /// SMT thread groups (online members only), ordered by first CPU.
    pub smt_groups: Vec<Vec<u32>>,
    pub l2_groups: Vec<Vec<u32>>,
    /// Last-level cache groups: the L3, or the L2 on parts without one.
    pub l3_groups: Vec<Vec<u32>>,
    pub package_of: BTreeMap<u32, u32>,
    /// Raw `core_id` (unique only within a package).
    pub core_of: BTreeMap<u32, u32>,
    /// Only CPUs whose sysfs reports a non-negative `cluster_id`.
    pub cluster_of: BTreeMap<u32, u32>,
    /// NUMA node per online CPU (0 when the kernel has no node directory).
    pub node_of: BTreeMap<u32, u32>,
    /// Highest NUMA node id + 1 (node ids may be sparse).
    pub nr_nodes: u32,
    /// Big and little CPUs on a hybrid machine; uniform otherwise.
    pub sizes: CpuSizes,
    /// Fallbacks taken during detection, one line per reason.
    pub warnings: Vec<String>,
}

impl Topology {
    /// Number of online CPUs.
    pub fn nr_cpus(&self) -> u32 {
        self.online.len() as u32
    }

    /// Index into [`Self::l2_groups`] of `cpu`'s L2, if `cpu` is online.
    pub fn l2_group_of(&self, cpu: u32) -> Option<usize> {
        group_index(&self.l2_groups, cpu)
    }

    /// Index into [`Self::l3_groups`] of `cpu`'s LLC, if `cpu` is online.
    pub fn l3_group_of(&self, cpu: u32) -> Option<usize> {
        group_index(&self.l3_groups, cpu)
    }

    /// Number of distinct packages among the online CPUs.
    pub fn nr_packages(&self) -> usize {
        let mut packages: Vec<u32> = self.package_of.values().copied().collect();
        packages.sort_unstable();
        packages.dedup();
        packages.len()
    }
}

fn group_index(groups: &[Vec<u32>], cpu: u32) -> Option<usize> {
    groups.iter().position(|g| g.binary_search(&cpu).is_ok())
}

/// Group index per online position (groups partition the online CPUs).
fn group_ids(online: &[u32], groups: &[Vec<u32>]) -> Vec<usize> {
    let by_cpu: BTreeMap<u32, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, members)| members.iter().map(move |&c| (c, g)))
        .collect();
    // A CPU missing from every group (hand-built Topology) gets its own.
    online
        .iter()
        .enumerate()
        .map(|(pos, c)| by_cpu.get(c).copied().unwrap_or(groups.len() + pos))
        .collect()
}
