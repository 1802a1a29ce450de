// SPDX-License-Identifier: GPL-2.0-only
//! [`TopologyModel`]: topology + spectrum + affinity ranks + parameters,
//! computed once at startup (and again on hotplug), and the startup log.

use std::fmt;

use super::cpulist::format_cpu_list;
use super::params::{codel_equilibrium_ns, derive_params, tau_ns_from_lambda2};
use super::spectrum::{SpectralRoute, Spectrum};
use super::{TauParams, Topology, group_ids};
use crate::bpf_intf::{AFFINITY_SENTINEL, MAX_AFFINITY_CANDIDATES, MAX_CPUS};

/// Effective resistances this close (relative) are ties: symmetric CPUs have
/// mathematically equal R_eff that differ by rounding noise only.
pub const RANK_TIE_REL_TOL: f64 = 1e-9;

/// Everything the scheduler needs from the topology, computed once at
/// startup (and again on hotplug).
#[derive(Clone, Debug)]
pub struct TopologyModel {
    pub topology: Topology,
    /// Indexed by position in `topology.online`.
    pub spectrum: Spectrum,
    pub tau_ns: u64,
    pub codel_eq_ns: u64,
    pub params: TauParams,
    /// Flat `nr_cpu_ids x MAX_AFFINITY_CANDIDATES`, row = CPU id.
    ranks: Vec<u32>,
    /// Online position per CPU id, `usize::MAX` when offline.
    position: Vec<usize>,
}

impl TopologyModel {
    /// Builds the model on the [`SpectralRoute::Auto`] route (well under a
    /// second at 1024 CPUs).
    ///
    /// # Panics
    /// If `topology` breaks its invariants (an online CPU at or beyond
    /// `nr_cpu_ids`, or `nr_cpu_ids` above `MAX_CPUS`); values from
    /// [`Topology::detect_from`] and [`Topology::synthetic`] never do.
    pub fn new(topology: Topology) -> Self {
        Self::with_route(topology, SpectralRoute::Auto)
    }

    /// [`Self::new`] with an explicit spectral route (tests, benches).
    pub fn with_route(topology: Topology, route: SpectralRoute) -> Self {
        assert!(
            topology.online.iter().all(|&c| c < topology.nr_cpu_ids)
                && topology.nr_cpu_ids as usize <= MAX_CPUS,
            "Topology invariant broken: online CPU beyond nr_cpu_ids or MAX_CPUS"
        );
        let spectrum = Spectrum::compute(&topology.laplacian(), route);
        let n = topology.online.len();
        let tau_ns = tau_ns_from_lambda2(spectrum.lambda2, n);
        let codel_eq_ns = codel_equilibrium_ns(spectrum.mean_reff(), spectrum.two_m(), tau_ns);
        let mut params = derive_params(tau_ns, topology.nr_cpus(), topology.nr_cpu_ids);
        params.bpf.codel_eq_ns = codel_eq_ns;
        params.bpf.wake_wide_factor = largest_llc(&topology);
        let mut position = vec![usize::MAX; topology.nr_cpu_ids as usize];
        for (pos, &cpu) in topology.online.iter().enumerate() {
            position[cpu as usize] = pos;
        }
        let ranks = build_ranks(&topology, &spectrum);
        Self {
            topology,
            spectrum,
            tau_ns,
            codel_eq_ns,
            params,
            ranks,
            position,
        }
    }

    /// Peers of `cpu` by ascending R_eff; sentinel-padded, all sentinels for
    /// an offline or out-of-range CPU.
    pub fn rank_row(&self, cpu: u32) -> [u32; MAX_AFFINITY_CANDIDATES] {
        let mut row = [AFFINITY_SENTINEL; MAX_AFFINITY_CANDIDATES];
        let start = cpu as usize * MAX_AFFINITY_CANDIDATES;
        if let Some(src) = self.ranks.get(start..start + MAX_AFFINITY_CANDIDATES) {
            row.copy_from_slice(src);
        }
        row
    }

    /// All rows, `nr_cpu_ids x MAX_AFFINITY_CANDIDATES`, ready for a BPF
    /// array map keyed by `cpu * MAX_AFFINITY_CANDIDATES + slot`.
    pub fn ranks(&self) -> &[u32] {
        &self.ranks
    }

    /// Effective resistance between two online CPUs.
    pub fn reff(&self, a: u32, b: u32) -> Option<f64> {
        let pa = *self.position.get(a as usize)?;
        let pb = *self.position.get(b as usize)?;
        (pa != usize::MAX && pb != usize::MAX).then(|| self.spectrum.reff(pa, pb))
    }
}

/// Online CPUs of the largest LLC (at least 1): how many distinct wakees make a waker "wide".
fn largest_llc(topo: &Topology) -> u32 {
    let online = |g: &Vec<u32>| g.iter().filter(|c| topo.online.contains(c)).count();
    let largest = topo.l3_groups.iter().map(online).max().unwrap_or(0);
    u32::try_from(largest).unwrap_or(u32::MAX).max(1)
}

/// Per online CPU: the other online CPUs by ascending R_eff. Ties (within
/// RANK_TIE_REL_TOL) prefer a shared LLC, then package, then NUMA node, then
/// the lower CPU id, so equal resistances still order by what is shared.
fn build_ranks(topo: &Topology, spec: &Spectrum) -> Vec<u32> {
    let n = topo.online.len();
    let l3 = group_ids(&topo.online, &topo.l3_groups);
    let package: Vec<u32> = topo
        .online
        .iter()
        .map(|c| topo.package_of.get(c).copied().unwrap_or(0))
        .collect();
    let node: Vec<u32> = topo
        .online
        .iter()
        .map(|c| topo.node_of.get(c).copied().unwrap_or(0))
        .collect();
    let mut ranks = vec![AFFINITY_SENTINEL; topo.nr_cpu_ids as usize * MAX_AFFINITY_CANDIDATES];
    let mut cand: Vec<(f64, usize)> = Vec::with_capacity(n);
    for (i, &cpu) in topo.online.iter().enumerate() {
        cand.clear();
        cand.extend((0..n).filter(|&j| j != i).map(|j| (spec.reff(i, j), j)));
        cand.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut start = 0;
        while start < cand.len() && start < MAX_AFFINITY_CANDIDATES {
            let base = cand[start].0;
            let tol = RANK_TIE_REL_TOL * base;
            let mut end = start + 1;
            while end < cand.len() && (cand[end].0 == base || cand[end].0 - base <= tol) {
                end += 1;
            }
            cand[start..end].sort_by_key(|&(_, j)| {
                (
                    l3[j] != l3[i],
                    package[j] != package[i],
                    node[j] != node[i],
                    topo.online[j],
                )
            });
            start = end;
        }
        let row_start = cpu as usize * MAX_AFFINITY_CANDIDATES;
        let row = &mut ranks[row_start..row_start + MAX_AFFINITY_CANDIDATES];
        for (slot, &(_, j)) in row.iter_mut().zip(&cand) {
            *slot = topo.online[j];
        }
    }
    ranks
}

impl fmt::Display for TopologyModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.topology;
        let s = &self.spectrum;
        writeln!(
            f,
            "topology: {} online of {} CPU ids ({}), {} L2, {} LLC, {} package(s), {} NUMA node(s)",
            t.online.len(),
            t.nr_cpu_ids,
            format_cpu_list(&t.online),
            t.l2_groups.len(),
            t.l3_groups.len(),
            t.nr_packages(),
            t.nr_nodes
        )?;
        writeln!(
            f,
            "spectrum: lambda_2 {:.4}, 2m {:.1}, mean R_eff (Tr L+/N) {:.6}, route {:?}",
            s.lambda2,
            s.two_m(),
            s.mean_reff(),
            s.route
        )?;
        if t.sizes.is_hybrid() {
            writeln!(f, "{}", t.sizes)?;
        }
        for warning in &t.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        write!(f, "{}", self.params)
    }
}

#[cfg(test)]
#[path = "tests/model.rs"]
mod tests;
