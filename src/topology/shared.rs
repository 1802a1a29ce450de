// SPDX-License-Identifier: GPL-2.0-only
//! What both topology readers ([`super::SysfsTree`] and [`super::Live`]) must decide the same
//! way, so the model cannot depend on which one read the machine: the possible CPU ids and
//! `nr_cpu_ids`, the CPU sizes, the grouping, and the fallback lines for
//! [`super::Topology::warnings`]. A reader fills in [`Findings`] per CPU and finishes it here.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Result, bail, ensure};

use super::capacity::HIGHEST_PERF_FILES;
use super::cpulist::format_cpu_list;
use super::probe::read_cpu_list_opt;
use super::union_find::UnionFind;
use super::{CpuSizes, Topology};
use crate::bpf_intf::MAX_CPUS;

/// Collects CPUs per fallback so one line covers a 1024-CPU machine.
#[derive(Default)]
pub(super) struct FallbackLog {
    by_reason: BTreeMap<&'static str, Vec<u32>>,
}

impl FallbackLog {
    pub(super) fn note(&mut self, reason: &'static str, cpu: u32) {
        self.by_reason.entry(reason).or_default().push(cpu);
    }

    pub(super) fn render(self) -> Vec<String> {
        self.by_reason
            .into_iter()
            .map(|(reason, cpus)| format!("CPUs {}: {reason}", format_cpu_list(&cpus)))
            .collect()
    }
}

pub(super) const FB_NO_TOPOLOGY: &str =
    "no topology/ directory; each treated as its own core in package 0";
pub(super) const FB_NO_PACKAGE: &str =
    "physical_package_id missing or negative; assuming package 0";
pub(super) const FB_NO_CORE: &str = "core_id missing; using the CPU id";
pub(super) const FB_NO_SIBLINGS: &str = "thread_siblings_list missing; assuming no SMT siblings";
pub(super) const FB_NO_CACHE: &str =
    "no cache/ directory; L2 groups from thread_siblings_list, L3 groups from the package";
pub(super) const FB_NO_L2: &str = "no L2 in cache/; L2 groups from thread_siblings_list";
pub(super) const FB_NO_L3: &str = "no L3 in cache/; the L2 is the last-level cache";
pub(super) const FB_NO_NODE: &str = "in no NUMA node's cpulist; assuming node 0";
const FB_NO_CAPACITY: &str =
    "no cpu_capacity while other CPUs have one; CPU sizes ignore cpu_capacity";
/// Per file of [`HIGHEST_PERF_FILES`], in its order.
const FB_NO_HIGHEST_PERF: [&str; 2] = [
    "no readable cpufreq/amd_pstate_highest_perf while other CPUs have one; CPU sizes ignore it",
    "no readable acpi_cppc/highest_perf while other CPUs have one; CPU sizes ignore it",
];

/// One reader's findings over the online CPUs, before the shared last steps.
pub(super) struct Findings {
    pub(super) online: Vec<u32>,
    possible: Vec<u32>,
    nr_cpu_ids: u32,
    warnings: Vec<String>,
    pub(super) fallbacks: FallbackLog,
    pub(super) package_of: BTreeMap<u32, u32>,
    pub(super) core_of: BTreeMap<u32, u32>,
    pub(super) cluster_of: BTreeMap<u32, u32>,
    pub(super) node_of: BTreeMap<u32, u32>,
    pub(super) nr_nodes: u32,
    /// Online CPUs that report a `cpu_capacity`.
    pub(super) capacity_of: BTreeMap<u32, u32>,
    /// Over positions in `online`: SMT threads, L2 and last-level cache sharing.
    pub(super) smt: UnionFind,
    pub(super) l2: UnionFind,
    pub(super) l3: UnionFind,
    /// Positions without any cache information: their LLC is their package.
    pub(super) l3_from_package: Vec<usize>,
}

impl Findings {
    /// For a non-empty, sorted `online` list; reads `cpu_dir/possible` ([`possible_cpus`]).
    pub(super) fn new(cpu_dir: &Path, online: Vec<u32>) -> Result<Findings> {
        let mut warnings = Vec::new();
        let (possible, nr_cpu_ids) = possible_cpus(cpu_dir, &online, &mut warnings)?;
        let n = online.len();
        Ok(Findings {
            online,
            possible,
            nr_cpu_ids,
            warnings,
            fallbacks: FallbackLog::default(),
            package_of: BTreeMap::new(),
            core_of: BTreeMap::new(),
            cluster_of: BTreeMap::new(),
            node_of: BTreeMap::new(),
            nr_nodes: 1,
            capacity_of: BTreeMap::new(),
            smt: UnionFind::new(n),
            l2: UnionFind::new(n),
            l3: UnionFind::new(n),
            l3_from_package: Vec::new(),
        })
    }

    /// The LLC package fallback, the sizes (from the sysfs tree at `root` when `cpu_capacity`
    /// does not decide them), the groups and the warnings.
    pub(super) fn finish(mut self, root: &Path) -> Result<Topology> {
        // The package fallback for the LLC needs every CPU's package first.
        for &pos in &self.l3_from_package {
            let package = self.package_of[&self.online[pos]];
            for (other, cpu) in self.online.iter().enumerate() {
                if self.package_of[cpu] == package {
                    self.l3.union(pos, other);
                }
            }
        }
        let sizes = detect_sizes(root, &self.online, self.capacity_of, &mut self.fallbacks)?;
        self.warnings.extend(self.fallbacks.render());
        Ok(Topology {
            nr_cpu_ids: self.nr_cpu_ids,
            possible: self.possible,
            smt_groups: self.smt.groups(&self.online),
            l2_groups: self.l2.groups(&self.online),
            l3_groups: self.l3.groups(&self.online),
            online: self.online,
            package_of: self.package_of,
            core_of: self.core_of,
            cluster_of: self.cluster_of,
            node_of: self.node_of,
            nr_nodes: self.nr_nodes,
            sizes,
            warnings: self.warnings,
        })
    }
}

/// The possible CPUs and `nr_cpu_ids` for a non-empty, sorted `online` list, from
/// `cpu_dir/possible` (missing or empty: the online CPUs, with a warning).
fn possible_cpus(
    cpu_dir: &Path,
    online: &[u32],
    warnings: &mut Vec<String>,
) -> Result<(Vec<u32>, u32)> {
    let possible_path = cpu_dir.join("possible");
    let possible = match read_cpu_list_opt(&possible_path)? {
        Some(list) if !list.is_empty() => list,
        _ => {
            warnings.push(format!(
                "{}: missing or empty; assuming the online CPUs are all possible CPUs",
                possible_path.display()
            ));
            online.to_vec()
        }
    };
    if let Some(cpu) = online.iter().find(|c| possible.binary_search(c).is_err()) {
        bail!(
            "{}: CPU {cpu} is online but not possible (possible = {:?})",
            cpu_dir.join("online").display(),
            format_cpu_list(&possible)
        );
    }
    let nr_cpu_ids = possible[possible.len() - 1] + 1;
    ensure!(
        nr_cpu_ids as usize <= MAX_CPUS,
        "{}: nr_cpu_ids {nr_cpu_ids} exceeds MAX_CPUS {MAX_CPUS}",
        possible_path.display()
    );
    Ok((possible, nr_cpu_ids))
}

/// Big and little CPUs: `cpu_capacity` when every online CPU has one and they differ, else
/// Intel's hybrid PMU lists (`devices/cpu_core/cpus`, `devices/cpu_atom/cpus` under the sysfs
/// `root`), else the CPPC highest perf ([`highest_perf_sizes`]), else uniform. `capacity_of`
/// holds the online CPUs that report a capacity.
fn detect_sizes(
    root: &Path,
    online: &[u32],
    capacity_of: BTreeMap<u32, u32>,
    fallbacks: &mut FallbackLog,
) -> Result<CpuSizes> {
    if capacity_of.len() == online.len() {
        // x86 kernels that expose cpu_capacity (6.18 here) report 1024 on every CPU of a part
        // whose asymmetry they do not model (Intel's with SMT on, AMD's): equal capacities
        // are no answer there, so the other sources still get their say.
        let sizes = CpuSizes::from_capacities(capacity_of);
        if sizes.is_hybrid() {
            return Ok(sizes);
        }
    } else if !capacity_of.is_empty() {
        for cpu in online.iter().filter(|c| !capacity_of.contains_key(c)) {
            fallbacks.note(FB_NO_CAPACITY, *cpu);
        }
    }
    let devices = root.join("devices");
    let core = read_cpu_list_opt(&devices.join("cpu_core/cpus"))?;
    let atom = read_cpu_list_opt(&devices.join("cpu_atom/cpus"))?;
    if let (Some(core), Some(atom)) = (core, atom) {
        return Ok(CpuSizes::from_core_types(online, &core, &atom));
    }
    Ok(highest_perf_sizes(
        &devices.join("system/cpu"),
        online,
        fallbacks,
    ))
}

/// Sizes from the first of [`HIGHEST_PERF_FILES`] that every online CPU reports and that is
/// not the same on all of them: amd-pstate's file holds one value for all cores where the
/// kernel knows no core types (Phoenix 2 has no CPUID core type and gets 196 everywhere), and
/// the raw registers in `acpi_cppc` may still tell the kinds apart.
fn highest_perf_sizes(cpu_dir: &Path, online: &[u32], fallbacks: &mut FallbackLog) -> CpuSizes {
    for (file, lacking_reason) in HIGHEST_PERF_FILES.into_iter().zip(FB_NO_HIGHEST_PERF) {
        let mut perf_of = BTreeMap::new();
        let mut lacking = vec![];
        for &cpu in online {
            match read_highest_perf(&cpu_dir.join(format!("cpu{cpu}/{file}"))) {
                Some(perf) => {
                    perf_of.insert(cpu, perf);
                }
                None => lacking.push(cpu),
            }
        }
        if perf_of.is_empty() {
            continue;
        }
        if !lacking.is_empty() {
            for cpu in lacking {
                fallbacks.note(lacking_reason, cpu);
            }
            continue;
        }
        let first = perf_of.values().next().copied();
        if perf_of.values().all(|&p| Some(p) == first) {
            continue;
        }
        return CpuSizes::from_highest_perf(file, perf_of);
    }
    CpuSizes::default()
}

/// A CPU's highest perf, or `None` when the file is missing, unreadable, not a number or 0.
/// Unlike the topology files, trouble here is no error: the kernel's acpi_cppc files return
/// the firmware's error when it cannot read the CPPC registers, and a size is a placement
/// preference, not worth refusing to start over.
fn read_highest_perf(path: &Path) -> Option<u32> {
    let text = fs::read_to_string(path).ok()?;
    text.trim().parse().ok().filter(|&perf| perf > 0)
}
