// SPDX-License-Identifier: GPL-2.0-only
//! [`Topology::detect_from`]: the topology from a sysfs tree, with the
//! documented fallbacks (see the module docs of `topology`) collected into
//! [`Topology::warnings`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow, bail, ensure};

use super::cpulist::format_cpu_list;
use super::probe::{CpuProbe, numbered_entry, probe_cpu, read_cpu_list_opt, read_dir_names};
use super::{CpuSizes, Topology};
use crate::bpf_intf::MAX_CPUS;

/// Where the kernel mounts sysfs.
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";

/// Collects CPUs per fallback so one line covers a 1024-CPU machine.
#[derive(Default)]
struct FallbackLog {
    by_reason: BTreeMap<&'static str, Vec<u32>>,
}

impl FallbackLog {
    fn note(&mut self, reason: &'static str, cpu: u32) {
        self.by_reason.entry(reason).or_default().push(cpu);
    }

    fn render(self) -> Vec<String> {
        self.by_reason
            .into_iter()
            .map(|(reason, cpus)| format!("CPUs {}: {reason}", format_cpu_list(&cpus)))
            .collect()
    }
}

const FB_NO_TOPOLOGY: &str = "no topology/ directory; each treated as its own core in package 0";
const FB_NO_PACKAGE: &str = "physical_package_id missing or negative; assuming package 0";
const FB_NO_CORE: &str = "core_id missing; using the CPU id";
const FB_NO_SIBLINGS: &str = "thread_siblings_list missing; assuming no SMT siblings";
const FB_NO_CACHE: &str =
    "no cache/ directory; L2 groups from thread_siblings_list, L3 groups from the package";
const FB_NO_L2: &str = "no L2 in cache/; L2 groups from thread_siblings_list";
const FB_NO_L3: &str = "no L3 in cache/; the L2 is the last-level cache";
const FB_NO_NODE: &str = "in no NUMA node's cpulist; assuming node 0";
const FB_NO_CAPACITY: &str =
    "no cpu_capacity while other CPUs have one; CPU sizes ignore cpu_capacity";

impl Topology {
    /// Detects the running machine's topology from `/sys`.
    pub fn detect() -> Result<Self> {
        Self::detect_from(Path::new(DEFAULT_SYSFS_ROOT))
    }

    /// Detects the topology from a sysfs tree rooted at `root`.
    pub fn detect_from(root: &Path) -> Result<Self> {
        let cpu_dir = root.join("devices/system/cpu");
        let mut warnings = Vec::new();

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

        let possible_path = cpu_dir.join("possible");
        let possible = match read_cpu_list_opt(&possible_path)? {
            Some(list) if !list.is_empty() => list,
            _ => {
                warnings.push(format!(
                    "{}: missing or empty; assuming the online CPUs are all possible CPUs",
                    possible_path.display()
                ));
                online.clone()
            }
        };
        if let Some(cpu) = online.iter().find(|c| possible.binary_search(c).is_err()) {
            bail!(
                "{}: CPU {cpu} is online but not possible (possible = {:?})",
                online_path.display(),
                format_cpu_list(&possible)
            );
        }
        let nr_cpu_ids = possible[possible.len() - 1] + 1;
        ensure!(
            nr_cpu_ids as usize <= MAX_CPUS,
            "{}: nr_cpu_ids {nr_cpu_ids} exceeds MAX_CPUS {MAX_CPUS}",
            possible_path.display()
        );

        let probes = online
            .iter()
            .map(|&cpu| probe_cpu(&cpu_dir, cpu))
            .collect::<Result<Vec<_>>>()?;

        let position: BTreeMap<u32, usize> =
            online.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let n = online.len();
        let mut fallbacks = FallbackLog::default();
        let mut package_of = BTreeMap::new();
        let mut core_of = BTreeMap::new();
        let mut cluster_of = BTreeMap::new();
        let mut smt = UnionFind::new(n);
        let mut l2 = UnionFind::new(n);
        let mut l3 = UnionFind::new(n);
        let mut l3_from_package = Vec::new();

        for (pos, (&cpu, probe)) in online.iter().zip(&probes).enumerate() {
            if !probe.has_topology_dir {
                fallbacks.note(FB_NO_TOPOLOGY, cpu);
            }
            let package = probe.package.unwrap_or_else(|| {
                if probe.has_topology_dir {
                    fallbacks.note(FB_NO_PACKAGE, cpu);
                }
                0
            });
            package_of.insert(cpu, package);
            let core = probe.core.unwrap_or_else(|| {
                if probe.has_topology_dir {
                    fallbacks.note(FB_NO_CORE, cpu);
                }
                cpu
            });
            core_of.insert(cpu, core);
            if let Some(cluster) = probe.cluster {
                cluster_of.insert(cpu, cluster);
            }

            let siblings = probe.siblings.clone().unwrap_or_else(|| {
                if probe.has_topology_dir {
                    fallbacks.note(FB_NO_SIBLINGS, cpu);
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
            join(&mut smt, &siblings);

            if !probe.has_cache_dir {
                fallbacks.note(FB_NO_CACHE, cpu);
            } else if probe.l2.is_none() {
                fallbacks.note(FB_NO_L2, cpu);
            }
            let l2_members = probe.l2.as_deref().unwrap_or(&siblings);
            join(&mut l2, l2_members);
            match (&probe.l3, probe.has_cache_dir) {
                (Some(members), _) => join(&mut l3, members),
                (None, true) => {
                    fallbacks.note(FB_NO_L3, cpu);
                    join(&mut l3, l2_members);
                }
                (None, false) => l3_from_package.push(pos),
            }
        }
        // Package fallback for the LLC needs every CPU's package first.
        for &pos in &l3_from_package {
            let package = package_of[&online[pos]];
            for (other, cpu) in online.iter().enumerate() {
                if package_of[cpu] == package {
                    l3.union(pos, other);
                }
            }
        }

        let (node_of, nr_nodes) = detect_nodes(root, &online, &mut fallbacks)?;
        let sizes = detect_sizes(root, &online, &probes, &mut fallbacks)?;
        warnings.extend(fallbacks.render());

        Ok(Self {
            nr_cpu_ids,
            possible,
            smt_groups: smt.groups(&online),
            l2_groups: l2.groups(&online),
            l3_groups: l3.groups(&online),
            online,
            package_of,
            core_of,
            cluster_of,
            node_of,
            nr_nodes,
            sizes,
            warnings,
        })
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

/// Big and little CPUs: `cpu_capacity` when every online CPU has one, else Intel's hybrid PMU
/// lists (`devices/cpu_core/cpus`, `devices/cpu_atom/cpus`), else uniform.
fn detect_sizes(
    root: &Path,
    online: &[u32],
    probes: &[CpuProbe],
    fallbacks: &mut FallbackLog,
) -> Result<CpuSizes> {
    let capacity_of: BTreeMap<u32, u32> = online
        .iter()
        .zip(probes)
        .filter_map(|(&cpu, p)| p.capacity.map(|c| (cpu, c)))
        .collect();
    if capacity_of.len() == online.len() {
        return Ok(CpuSizes::from_capacities(capacity_of));
    }
    if !capacity_of.is_empty() {
        for cpu in online.iter().filter(|c| !capacity_of.contains_key(c)) {
            fallbacks.note(FB_NO_CAPACITY, *cpu);
        }
    }
    let devices = root.join("devices");
    let core = read_cpu_list_opt(&devices.join("cpu_core/cpus"))?;
    let atom = read_cpu_list_opt(&devices.join("cpu_atom/cpus"))?;
    Ok(match (core, atom) {
        (Some(core), Some(atom)) => CpuSizes::from_core_types(online, &core, &atom),
        _ => CpuSizes::default(),
    })
}

/// Partition builder over online CPU positions.
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }

    /// Groups of CPU ids, each sorted, ordered by their first CPU.
    fn groups(&mut self, online: &[u32]) -> Vec<Vec<u32>> {
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

#[cfg(test)]
#[path = "tests/sysfs.rs"]
mod tests;
