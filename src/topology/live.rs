// SPDX-License-Identifier: GPL-2.0-only
//! [`Live`]: the running machine's topology as `scx_utils::Topology` reads it (the reader every
//! scx scheduler shares), turned into our [`Topology`] with the same rules as the sysfs reader,
//! so the model is the same whichever one read the machine (`tests/live.rs` compares them).
//!
//! Taken from scx_utils: the online CPUs, each CPU's package, core, cluster, NUMA node, L2 and
//! L3 ids (its `cache/index2` and `index3`) and the kernel's `cpu_capacity`. Not taken: its
//! `core_type`, a guess from CPPC rankings or frequencies (little below the average once the
//! highest is 1.3x the lowest) that would call some cores of a symmetric AMD part with
//! preferred cores little; sizes come from `cpu_capacity`, Intel's hybrid PMU lists or the CPPC
//! highest perf read by the shared step with rules that keep such a part symmetric (see
//! `capacity`). Also read here: `possible` (scx_utils has no list of it, and BPF's `nr_cpu_ids` is
//! its last id + 1) and whether a CPU has a `cache/` directory at all, which picks the same
//! documented fallback as the sysfs reader when scx_utils found no cache id.
//!
//! scx_utils refuses trees the sysfs reader tolerates (a missing `cluster_id`, a negative
//! package id, a CPU in no NUMA node). Then the scheduler stops with scx_utils' reason, as every
//! scx scheduler does there: the sysfs reader is the tests' second opinion (see `source`), not a
//! second live detector (#17).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use super::shared::{FB_NO_CACHE, FB_NO_L2, FB_NO_L3, Findings};
use super::union_find::UnionFind;
use super::{Topology, TopologySource};

/// The running machine, read through `scx_utils::Topology`.
pub struct Live;

impl Live {
    /// Where scx_utils reads sysfs (`$SCX_SYSFS_PREFIX/sys`); the few files read here come
    /// from the same tree.
    fn sysfs_root() -> PathBuf {
        PathBuf::from(format!("{}/sys", *scx_utils::ROOT_PREFIX))
    }
}

impl TopologySource for Live {
    fn topology(&self) -> Result<Topology> {
        let root = Self::sysfs_root();
        let scx = scx_utils::Topology::new().with_context(|| {
            format!(
                "scx_utils could not read the CPU topology under {} (every scx scheduler reads \
                 it the same way; this kernel's sysfs lacks or garbles what it needs)",
                root.display()
            )
        })?;
        from_scx(&scx, &root)
    }
}

/// What a CPU shares a cache or core with: ids are unique only within their kind.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Share {
    Core(usize),
    L2 { package: u32, id: usize },
    L3 { package: u32, id: usize },
}

/// Joins `pos` to the first CPU that had `key` before it, in `uf`.
fn join(uf: &mut UnionFind, first: &mut BTreeMap<Share, usize>, pos: usize, key: Share) {
    uf.union(*first.entry(key).or_insert(pos), pos);
}

/// Our [`Topology`] from scx_utils' (see the module docs for what comes from where).
pub(super) fn from_scx(scx: &scx_utils::Topology, root: &Path) -> Result<Topology> {
    let cpu_dir = root.join("devices/system/cpu");
    let online = (scx.span.iter())
        .map(u32::try_from)
        .collect::<Result<Vec<u32>, _>>()?;
    ensure!(!online.is_empty(), "scx_utils found no online CPUs");
    let mut f = Findings::new(&cpu_dir, online)?;
    let (mut smt, mut l2, mut l3) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for (pos, &cpu) in f.online.iter().enumerate() {
        let c = (scx.all_cpus.get(&(cpu as usize)))
            .with_context(|| format!("scx_utils has no entry for online CPU {cpu}"))?;
        let package = u32::try_from(c.package_id)?;
        f.package_of.insert(cpu, package);
        let core = u32::try_from(scx.all_cores[&c.core_id].kernel_id)?;
        f.core_of.insert(cpu, core);
        // Negative: the kernel knows no cluster, the sysfs reader's `None`.
        if let Ok(cluster) = u32::try_from(c.cluster_id) {
            f.cluster_of.insert(cpu, cluster);
        }
        f.node_of.insert(cpu, u32::try_from(c.node_id)?);
        if let Some(capacity) = c.kernel_cpu_capacity {
            f.capacity_of.insert(cpu, u32::try_from(capacity)?);
        }

        join(&mut f.smt, &mut smt, pos, Share::Core(c.core_id));
        let has_cache_dir = cpu_dir.join(format!("cpu{cpu}/cache")).is_dir();
        let known = |id: usize| (id != usize::MAX).then_some(id);
        let l2_key = match known(c.l2_id) {
            Some(id) => Share::L2 { package, id },
            None => {
                let reason = if has_cache_dir { FB_NO_L2 } else { FB_NO_CACHE };
                f.fallbacks.note(reason, cpu);
                Share::Core(c.core_id)
            }
        };
        join(&mut f.l2, &mut l2, pos, l2_key);
        match (known(c.l3_id), has_cache_dir) {
            (Some(id), _) => join(&mut f.l3, &mut l3, pos, Share::L3 { package, id }),
            (None, true) => {
                f.fallbacks.note(FB_NO_L3, cpu);
                f.l3.union(pos, l2[&l2_key]);
            }
            (None, false) => f.l3_from_package.push(pos),
        }
    }
    f.nr_nodes = scx.nodes.keys().max().map_or(1, |&m| m as u32 + 1);
    f.finish(root)
}
