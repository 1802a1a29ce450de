// SPDX-License-Identifier: GPL-2.0-only
//! What the BPF side needs to know about the machine, gathered in one place before load: CPU and
//! node counts, the affinity rank rows and the tau-derived parameters.

use crate::bpf_intf::{
    AFFINITY_SENTINEL, AffinityRow, MAX_AFFINITY_CANDIDATES, MAX_CPUS, TopoParams,
};
use anyhow::{Context, Result, bail};
use std::fs;
use std::path::Path;

pub struct Layout {
    pub nr_cpu_ids: u32,
    pub online: Vec<u32>,
    pub nr_nodes: u32,
    /// NUMA node of each possible CPU id.
    pub cpu_node: Vec<u16>,
    /// L2 domain id of each possible CPU id.
    pub cpu_l2: Vec<u16>,
    /// One row per possible CPU id; offline CPUs get an all-sentinel row.
    pub ranks: Vec<AffinityRow>,
    pub params: TopoParams,
    pub tau_ns: u64,
    pub codel_eq_ns: u64,
}

/// Parses the kernel's cpulist syntax (`0-3,5,7-9`).
pub fn parse_cpulist(text: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (part.trim().parse::<u32>(), part.trim().parse::<u32>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            bail!("bad cpu list {text:?}: cannot parse {part:?}");
        };
        if lo > hi {
            bail!("bad cpu list {text:?}: reversed range {part:?}");
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

fn read_cpulist(path: &Path) -> Result<Vec<u32>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_cpulist(&text).with_context(|| format!("in {}", path.display()))
}

impl Layout {
    pub fn detect(sysfs: &Path) -> Result<Layout> {
        let cpu_dir = sysfs.join("devices/system/cpu");
        let possible = read_cpulist(&cpu_dir.join("possible"))?;
        let online = read_cpulist(&cpu_dir.join("online"))?;
        let nr_cpu_ids = possible.iter().max().map_or(1, |m| m + 1);
        if nr_cpu_ids as usize > MAX_CPUS {
            bail!("{nr_cpu_ids} possible CPUs exceed the scheduler's MAX_CPUS ({MAX_CPUS})");
        }
        let mut cpu_node = vec![0u16; nr_cpu_ids as usize];
        let mut nr_nodes = 1;
        if let Ok(entries) = fs::read_dir(sysfs.join("devices/system/node")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(node) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u16>().ok())
                else {
                    continue;
                };
                for cpu in read_cpulist(&e.path().join("cpulist"))? {
                    if let Some(slot) = cpu_node.get_mut(cpu as usize) {
                        *slot = node;
                    }
                }
                nr_nodes = nr_nodes.max(node as u32 + 1);
            }
        }
        let ranks = (0..nr_cpu_ids)
            .map(|cpu| id_distance_row(cpu, &online))
            .collect();
        let params = TopoParams {
            sojourn_interval_ns: 4_000_000,
            overflow_rescue_ns: 8_000_000,
            starvation_rescue_ns: 50_000_000,
            codel_target_floor_ns: 200_000,
            codel_target_max_ns: 1_000_000,
            vtime_ceiling_ns: 16_000_000,
            lag_cap_ns: 8_000_000,
            longrun_thresh_ns: 2_000_000_000,
            spill_search_budget: 6.min(nr_cpu_ids.saturating_sub(1)),
            affinity_search_budget: 3.min(nr_cpu_ids.saturating_sub(1)),
            pcpu_dsq_depth: if online.len() >= 4 { 2 } else { 1 },
            longrun_preempt_shift: 0,
            damping_shift: 1,
            spring_shift: 4,
        };
        Ok(Layout {
            nr_cpu_ids,
            online,
            nr_nodes,
            cpu_node,
            cpu_l2: (0..nr_cpu_ids as u16).collect(),
            ranks,
            params,
            tau_ns: 0,
            codel_eq_ns: 0,
        })
    }
}

/// Placeholder ordering by CPU-id distance; replaced by the R_eff rank of topology.rs.
fn id_distance_row(cpu: u32, online: &[u32]) -> AffinityRow {
    let mut row = AffinityRow::default();
    if !online.contains(&cpu) {
        return row;
    }
    let mut others: Vec<u32> = online.iter().copied().filter(|&c| c != cpu).collect();
    others.sort_by_key(|&c| (c.abs_diff(cpu), c));
    for (slot, c) in row
        .cpus
        .iter_mut()
        .zip(others.into_iter().take(MAX_AFFINITY_CANDIDATES))
    {
        *slot = c;
    }
    debug_assert!(row.cpus.iter().all(|&c| c != cpu || c == AFFINITY_SENTINEL));
    row
}
