// SPDX-License-Identifier: GPL-2.0-only
//! [`Topology::detect_from`]: the topology from a sysfs tree, with the
//! documented fallbacks (see the module docs of `topology`) collected into
//! [`Topology::warnings`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow, bail, ensure};

use super::Topology;
use super::probe::{numbered_entry, probe_cpu, read_cpu_list_opt, read_dir_names};
use super::shared::{
    FB_NO_CACHE, FB_NO_CORE, FB_NO_L2, FB_NO_L3, FB_NO_NODE, FB_NO_PACKAGE, FB_NO_SIBLINGS,
    FB_NO_TOPOLOGY, FallbackLog, Findings,
};
use super::union_find::UnionFind;

impl Topology {
    /// Detects the topology from a sysfs tree rooted at `root`.
    pub fn detect_from(root: &Path) -> Result<Self> {
        let cpu_dir = root.join("devices/system/cpu");

        let online_path = cpu_dir.join("online");
        let online = read_cpu_list_opt(&online_path)?.ok_or_else(|| {
            anyhow!(
                "{}: missing; cannot tell which CPUs are online",
                online_path.display()
            )
        })?;
        ensure!(
            !online.is_empty(),
            "{}: lists no online CPUs",
            online_path.display()
        );

        let mut f = Findings::new(&cpu_dir, online)?;
        let probes = (f.online.iter())
            .map(|&cpu| probe_cpu(&cpu_dir, cpu))
            .collect::<Result<Vec<_>>>()?;

        let position: BTreeMap<u32, usize> =
            f.online.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        for (pos, (&cpu, probe)) in f.online.iter().zip(&probes).enumerate() {
            if !probe.has_topology_dir {
                f.fallbacks.note(FB_NO_TOPOLOGY, cpu);
            }
            let package = probe.package.unwrap_or_else(|| {
                if probe.has_topology_dir {
                    f.fallbacks.note(FB_NO_PACKAGE, cpu);
                }
                0
            });
            f.package_of.insert(cpu, package);
            let core = probe.core.unwrap_or_else(|| {
                if probe.has_topology_dir {
                    f.fallbacks.note(FB_NO_CORE, cpu);
                }
                cpu
            });
            f.core_of.insert(cpu, core);
            if let Some(cluster) = probe.cluster {
                f.cluster_of.insert(cpu, cluster);
            }
            if let Some(capacity) = probe.capacity {
                f.capacity_of.insert(cpu, capacity);
            }

            let siblings = probe.siblings.clone().unwrap_or_else(|| {
                if probe.has_topology_dir {
                    f.fallbacks.note(FB_NO_SIBLINGS, cpu);
                }
                vec![cpu]
            });
            let join = |uf: &mut UnionFind, members: &[u32]| {
                for m in members {
                    if let Some(&other) = position.get(m) {
                        uf.union(pos, other);
                    }
                }
            };
            join(&mut f.smt, &siblings);

            if !probe.has_cache_dir {
                f.fallbacks.note(FB_NO_CACHE, cpu);
            } else if probe.l2.is_none() {
                f.fallbacks.note(FB_NO_L2, cpu);
            }
            let l2_members = probe.l2.as_deref().unwrap_or(&siblings);
            join(&mut f.l2, l2_members);
            match (&probe.l3, probe.has_cache_dir) {
                (Some(members), _) => join(&mut f.l3, members),
                (None, true) => {
                    f.fallbacks.note(FB_NO_L3, cpu);
                    join(&mut f.l3, l2_members);
                }
                (None, false) => f.l3_from_package.push(pos),
            }
        }

        (f.node_of, f.nr_nodes) = detect_nodes(root, &f.online, &mut f.fallbacks)?;
        f.finish(root)
    }
}

/// NUMA node per online CPU from `devices/system/node/nodeN/cpulist`, and
/// the highest node id + 1. No node directory: everything is node 0.
fn detect_nodes(
    root: &Path,
    online: &[u32],
    fallbacks: &mut FallbackLog,
) -> Result<(BTreeMap<u32, u32>, u32)> {
    let node_dir = root.join("devices/system/node");
    let mut node_of = BTreeMap::new();
    let mut max_node = None;
    if let Some(names) = read_dir_names(&node_dir)? {
        for name in names {
            let Some(node) = numbered_entry(&name, "node") else {
                continue;
            };
            max_node = max_node.max(Some(node));
            let list_path = node_dir.join(&name).join("cpulist");
            // A memory-only node may lack CPUs; a missing file means the same.
            let cpus = read_cpu_list_opt(&list_path)?.unwrap_or_default();
            for cpu in cpus {
                if online.binary_search(&cpu).is_err() {
                    continue;
                }
                if let Some(prev) = node_of.insert(cpu, node) {
                    bail!(
                        "{}: CPU {cpu} is also listed in node{prev}",
                        list_path.display()
                    );
                }
            }
        }
    }
    for &cpu in online {
        if max_node.is_some() && !node_of.contains_key(&cpu) {
            fallbacks.note(FB_NO_NODE, cpu);
        }
        node_of.entry(cpu).or_insert(0);
    }
    Ok((node_of, max_node.map_or(1, |m| m + 1)))
}

#[cfg(test)]
#[path = "tests/sysfs.rs"]
mod tests;
