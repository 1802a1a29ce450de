// SPDX-License-Identifier: GPL-2.0-only
//! What the BPF side needs to know about the machine, gathered in one place before load: CPU and
//! node counts, L2 domains, the affinity rank rows and the tau-derived parameters, all from the
//! topology model.

use crate::bpf_intf::{AffinityRow, MAX_NODES, TopoParams};
use crate::topology::{TopologyModel, TopologySource};
use anyhow::{Result, bail};

pub struct Layout {
    pub nr_cpu_ids: u32,
    pub online: Vec<u32>,
    pub nr_nodes: u32,
    /// NUMA node of each possible CPU id (0 for offline ones).
    pub cpu_node: Vec<u16>,
    /// L2 domain id of each possible CPU id; offline CPUs get ids of their own.
    pub cpu_l2: Vec<u16>,
    /// One row per possible CPU id; offline CPUs get an all-sentinel row.
    pub ranks: Vec<AffinityRow>,
    /// Whether the online CPUs differ in size (big and little cores).
    pub hybrid: bool,
    /// `enum cpu_size` of each possible CPU id; all big on a symmetric machine and for offline
    /// CPUs (which BPF never places on).
    pub cpu_size: Vec<u8>,
    /// The `topo_params` map value, the CoDel equilibrium included.
    pub params: TopoParams,
    pub tau_ns: u64,
    /// Multi-line description for the startup log (groups, lambda_2, tau, the derived table).
    pub summary: String,
    pub warnings: Vec<String>,
}

impl Layout {
    pub fn detect(source: &dyn TopologySource) -> Result<Layout> {
        Self::from_model(TopologyModel::new(source.topology()?))
    }

    pub fn from_model(model: TopologyModel) -> Result<Layout> {
        let topo = &model.topology;
        if topo.nr_nodes as usize > MAX_NODES {
            bail!(
                "{} NUMA nodes exceed the scheduler's MAX_NODES ({MAX_NODES})",
                topo.nr_nodes
            );
        }
        let n = topo.nr_cpu_ids;
        let cpu_node = (0..n)
            .map(|c| topo.node_of.get(&c).copied().unwrap_or(0) as u16)
            .collect();
        let nr_groups = topo.l2_groups.len() as u32;
        let cpu_l2 = (0..n)
            .map(|c| match topo.l2_group_of(c) {
                Some(g) => g as u16,
                // Distinct from every real group, so an offline CPU never counts as an L2 hit.
                None => (nr_groups + c) as u16,
            })
            .collect();
        let ranks = (0..n)
            .map(|c| AffinityRow {
                cpus: model.rank_row(c),
            })
            .collect();
        let cpu_size = (0..n).map(|c| topo.sizes.size(c) as u8).collect();
        Ok(Layout {
            nr_cpu_ids: n,
            online: topo.online.clone(),
            nr_nodes: topo.nr_nodes.max(1),
            cpu_node,
            cpu_l2,
            ranks,
            hybrid: topo.sizes.is_hybrid(),
            cpu_size,
            params: model.params.bpf,
            tau_ns: model.tau_ns,
            summary: model.to_string(),
            warnings: topo.warnings.clone(),
        })
    }
}
