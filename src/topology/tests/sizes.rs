// SPDX-License-Identifier: GPL-2.0-only
//! Hybrid CPUs on generated sysfs trees: `cpu_capacity`, Intel's core-type lists, AMD's CPPC
//! highest perf (a Strix Point that is hybrid, preferred-core desktops that are not), the
//! partial and broken cases, and what reaches BPF through the layout.

use std::collections::BTreeMap;

use super::*;
use crate::bpf_intf::{CPU_SIZE_BIG, CPU_SIZE_LITTLE};
use crate::layout::Layout;
use crate::topology::SysfsTree;
use crate::topology::TopologyModel;
use crate::topology::capacity::{HIGHEST_PERF_FILES, KIND_GAP_DEN, KIND_GAP_NUM};
use crate::topology::fixtures::*;

/// 8 single-thread cores in one LLC: 0-3 big, 4-7 little.
fn hybrid_8c(sizes: impl FnOnce(&[u32]) -> CpuSizes) -> Topology {
    let mut t = synth(layout(1, 1, 8, 1, 1, 1));
    t.sizes = sizes(&t.online);
    t
}

fn capacities(online: &[u32]) -> CpuSizes {
    let caps: BTreeMap<u32, u32> = online
        .iter()
        .map(|&c| (c, if c < 4 { 1024 } else { 512 }))
        .collect();
    CpuSizes::from_capacities(caps)
}

fn core_types(online: &[u32]) -> CpuSizes {
    CpuSizes::from_core_types(online, &[0, 1, 2, 3], &[4, 5, 6, 7])
}

const AMD_PSTATE: &str = HIGHEST_PERF_FILES[0];
const ACPI_CPPC: &str = HIGHEST_PERF_FILES[1];

fn highest_perfs(online: &[u32]) -> CpuSizes {
    let perf = online
        .iter()
        .map(|&c| (c, if c < 4 { 196 } else { 132 }))
        .collect();
    CpuSizes::from_highest_perf(AMD_PSTATE, perf)
}

#[test]
fn cpu_capacity_core_types_and_highest_perf_round_trip() {
    for (name, truth) in [
        ("cpu_capacity", hybrid_8c(capacities)),
        ("core types", hybrid_8c(core_types)),
        ("highest perf", hybrid_8c(highest_perfs)),
    ] {
        assert!(truth.sizes.is_hybrid(), "{name}");
        let detected = write_sysfs(&truth).detect().unwrap();
        assert_eq!(detected, truth, "{name}");
        assert!(
            detected.warnings.is_empty(),
            "{name}: {:?}",
            detected.warnings
        );
        let summary = TopologyModel::new(detected).to_string();
        assert!(
            summary.contains("cpu sizes: hybrid, big 0-3") && summary.contains("little 4-7"),
            "{name}: {summary}"
        );
    }
}

#[test]
fn symmetric_machines_say_nothing_about_sizes() {
    let t = sysfs_8c().detect().unwrap();
    assert!(!t.sizes.is_hybrid());
    assert!(!TopologyModel::new(t).to_string().contains("cpu sizes"));
}

#[test]
fn capacity_on_some_cpus_only_is_ignored_with_a_warning() {
    let fx = write_sysfs(&hybrid_8c(capacities));
    fx.rm("devices/system/cpu/cpu6/cpu_capacity");
    fx.rm("devices/system/cpu/cpu7/cpu_capacity");
    let t = fx.detect().unwrap();
    assert!(!t.sizes.is_hybrid(), "{:?}", t.sizes);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.starts_with("CPUs 6-7:") && w.contains("cpu_capacity")),
        "{:?}",
        t.warnings
    );
    // The core types still tell big from little.
    fx.put("devices/cpu_core/cpus", "0-3\n");
    fx.put("devices/cpu_atom/cpus", "4-7\n");
    let t = fx.detect().unwrap();
    assert_eq!(t.sizes.size(0), CpuSize::Big);
    assert_eq!(t.sizes.size(7), CpuSize::Little);
}

#[test]
fn garbage_in_cpu_capacity_or_a_core_list_is_an_error() {
    let fx = write_sysfs(&hybrid_8c(capacities));
    fx.put("devices/system/cpu/cpu2/cpu_capacity", "big\n");
    let e = err_text(fx.detect());
    assert!(e.contains("cpu2/cpu_capacity") && e.contains("big"), "{e}");

    let fx = write_sysfs(&hybrid_8c(core_types));
    fx.put("devices/cpu_atom/cpus", "4-x\n");
    let e = err_text(fx.detect());
    assert!(e.contains("cpu_atom/cpus"), "{e}");
}

#[test]
fn the_layout_hands_bpf_each_cpus_size_and_offline_ones_are_big() {
    let fx = write_sysfs(&hybrid_8c(capacities));
    fx.put("devices/system/cpu/online", "0-2,4-6\n");
    let l = Layout::detect(&SysfsTree(fx.root())).unwrap();
    assert!(l.hybrid);
    let (b, s) = (CPU_SIZE_BIG, CPU_SIZE_LITTLE);
    assert_eq!(l.cpu_size, [b, b, b, b, s, s, s, b]);

    let l = Layout::detect(&SysfsTree(
        write_sysfs(&synth(layout(1, 1, 8, 1, 1, 1))).root(),
    ))
    .unwrap();
    assert!(!l.hybrid);
    assert!(l.cpu_size.iter().all(|&x| x == CPU_SIZE_BIG));
}

#[test]
fn equal_cpu_capacities_leave_the_sizes_to_the_other_sources() {
    // What an x86 kernel that exposes cpu_capacity shows on a hybrid part it does not scale.
    for (name, truth) in [
        ("core types", hybrid_8c(core_types)),
        ("highest perf", hybrid_8c(highest_perfs)),
    ] {
        let fx = write_sysfs(&truth);
        for cpu in 0..8 {
            fx.put(
                &format!("devices/system/cpu/cpu{cpu}/cpu_capacity"),
                "1024\n",
            );
        }
        assert_eq!(fx.detect().unwrap(), truth, "{name}");
    }
}

/// Per-core CPPC values over a split-numbered SMT machine: core `c` is CPUs `c` and
/// `c + cores`.
fn per_thread(per_core: &[u32]) -> BTreeMap<u32, u32> {
    let cores = per_core.len() as u32;
    (0..2 * cores)
        .map(|cpu| (cpu, per_core[(cpu % cores) as usize]))
        .collect()
}

fn put_perf(fx: &Sysfs, file: &str, perf_of: &BTreeMap<u32, u32>) {
    for (cpu, perf) in perf_of {
        fx.put(
            &format!("devices/system/cpu/cpu{cpu}/{file}"),
            &format!("{perf}\n"),
        );
    }
}

/// A Ryzen AI 9 HX 370 ("Strix Point"): 4 Zen5 cores with one L3, 8 Zen5c cores with
/// another, 2 threads each, numbered the kernel's split way (the real part's CPU order may
/// differ). Highest perf as amd-pstate shows it since Linux 6.13: 196 on the Zen5 cores
/// (CPPC_HIGHEST_PERF_PERFORMANCE, arch/x86/kernel/acpi/cppc.c) and on the Zen5c cores their
/// own CPPC highest perf, 132 in AMD's patch that introduced the core types (Perry Yuan,
/// "cpufreq: amd-pstate: implement heterogeneous core topology for highest performance
/// initialization", v2, lore.kernel.org/linux-pm/c632dbb4ee183e185d1fa408c7b5511765d1c711.
/// 1715356532.git.perry.yuan@amd.com): 196/132 ~ 5.1/3.3 GHz, the part's two boost clocks.
fn strix_point() -> Topology {
    let mut t = synth(layout(1, 3, 4, 2, 1, 1));
    let zen5c: Vec<u32> = t.l3_groups[1..].concat();
    t.l3_groups.truncate(1);
    t.l3_groups.push(zen5c);
    t.l3_groups[1].sort_unstable();
    let mut per_core = vec![196; 4];
    per_core.extend([132; 8]);
    t.sizes = CpuSizes::from_highest_perf(AMD_PSTATE, per_thread(&per_core));
    t
}

#[test]
fn strix_point_makes_its_zen5c_cores_little() {
    let truth = strix_point();
    assert_eq!(truth.l3_groups.len(), 2);
    for cpu in truth.online.iter().copied() {
        let zen5 = cpu % 12 < 4;
        let want = if zen5 { CpuSize::Big } else { CpuSize::Little };
        assert_eq!(truth.sizes.size(cpu), want, "cpu {cpu}");
    }
    let fx = write_sysfs(&truth);
    // The raw registers beside it rank the Zen5 cores; amd-pstate's file comes first.
    let mut raw = per_thread(&[236, 226, 216, 206, 132, 132, 132, 132, 132, 132, 132, 132]);
    put_perf(&fx, ACPI_CPPC, &raw);
    let detected = fx.detect().unwrap();
    assert_eq!(detected, truth);
    assert!(detected.warnings.is_empty(), "{:?}", detected.warnings);
    assert_eq!(
        detected.sizes.to_string(),
        "cpu sizes: hybrid, big 0-3,12-15 (highest perf 196), little 4-11,16-23 \
         (highest perf 132) (from cpufreq/amd_pstate_highest_perf)"
    );
    let summary = TopologyModel::new(detected).to_string();
    assert!(
        summary.contains("cpu sizes: hybrid, big 0-3,12-15")
            && summary.contains("(from cpufreq/amd_pstate_highest_perf)"),
        "{summary}"
    );
    let l = Layout::detect(&SysfsTree(fx.root())).unwrap();
    assert!(l.hybrid);
    assert_eq!(l.cpu_size[0], CPU_SIZE_BIG);
    assert_eq!(l.cpu_size[4], CPU_SIZE_LITTLE);
    assert!(l.summary.contains("(from cpufreq/amd_pstate_highest_perf)"));

    // Without amd-pstate (acpi-cpufreq, or amd_pstate=disable) the raw registers decide, the
    // Zen5 cores' spread of ranks staying one tier.
    for cpu in 0..24 {
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/{AMD_PSTATE}"));
    }
    let t = fx.detect().unwrap();
    assert_eq!(t.sizes.size_of, truth.sizes.size_of);
    assert!(
        t.sizes
            .to_string()
            .contains("big 0-3,12-15 (highest perf 206-236)")
    );
    assert!(
        t.sizes
            .to_string()
            .ends_with("(from acpi_cppc/highest_perf)")
    );

    // Where amd-pstate knows no core types it writes one numerator on every core (196 on
    // Zen4 models 0x70-0x7f, Phoenix 2 among them): nothing there, so the raw registers decide.
    put_perf(&fx, AMD_PSTATE, &per_thread(&[196; 12]));
    assert_eq!(fx.detect().unwrap().sizes.size_of, truth.sizes.size_of);

    // One unreadable register makes the file unusable, with a warning, not an error.
    raw.insert(5, 0);
    put_perf(&fx, ACPI_CPPC, &raw);
    fx.put("devices/system/cpu/cpu7/acpi_cppc/highest_perf", "n/a\n");
    let t = fx.detect().unwrap();
    assert!(!t.sizes.is_hybrid(), "{:?}", t.sizes);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.starts_with("CPUs 5,7:") && w.contains("acpi_cppc/highest_perf")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn preferred_core_ranks_keep_symmetric_desktops_symmetric() {
    // A Ryzen 9 9950X3D, 16 cores: ranks from its amd_pstate_prefcore_ranking in
    // CachyOS/CachyOS-Settings#86 (github.com/CachyOS/CachyOS-Settings/issues/86, "BIOS set to
    // driver, explicitly set to cache"; cpu0 from its sibling cpu16). acpi_cppc/highest_perf
    // holds the same register. 236/166 = 1.42x.
    let ryzen_9950x3d = [
        236, 236, 226, 216, 231, 221, 211, 206, 196, 201, 181, 191, 171, 186, 166, 176,
    ];
    // A 12-core Ryzen (nominal_freq 3801 MHz), acpi_cppc/highest_perf of all 24 CPUs in LKML
    // "Re: [GIT PULL] Scheduler changes for v6.8" (Qais Yousef, 2024-01-13,
    // lore.kernel.org/all/20240113183320.sfm5v35tid55d6sf@airbuntu).
    let ryzen_12c = [216, 216, 211, 206, 201, 196, 191, 186, 181, 171, 166, 176];
    // 216/166 is just over scx_utils' 1.3x: it would call this 12-core part big.LITTLE.
    let (hi, lo) = (
        ryzen_12c.iter().max().unwrap(),
        ryzen_12c.iter().min().unwrap(),
    );
    assert!(hi * KIND_GAP_DEN >= lo * KIND_GAP_NUM);
    for (name, layout, per_core) in [
        (
            "9950X3D",
            SyntheticLayout::simple(2, 8, 2),
            &ryzen_9950x3d[..],
        ),
        ("12-core", SyntheticLayout::simple(4, 3, 2), &ryzen_12c[..]),
    ] {
        let fx = write_sysfs(&synth(layout));
        let ranks = per_thread(per_core);
        put_perf(&fx, ACPI_CPPC, &ranks);
        put_perf(&fx, "cpufreq/amd_pstate_prefcore_ranking", &ranks);
        // Since 6.13 amd-pstate's file holds the boost numerator, 166 on every core of these
        // (a 5950X's policy0: amd_pstate_highest_perf 166 beside amd_pstate_prefcore_ranking
        // 206, René Rebe, "[PATCH V2] ACPI: processor_core: fix map_x2apic_id for amd-pstate
        // on am4", linux-acpi, 2025-11-26); in 6.12 it held the raw register, the ranks.
        // Neither, nor the register alone, makes a little core.
        for amd_pstate in [
            Some(vec![166; per_core.len()]),
            Some(per_core.to_vec()),
            None,
        ] {
            match &amd_pstate {
                Some(perf) => put_perf(&fx, AMD_PSTATE, &per_thread(perf)),
                None => {
                    for cpu in 0..2 * per_core.len() {
                        fx.rm(&format!("devices/system/cpu/cpu{cpu}/{AMD_PSTATE}"));
                    }
                }
            }
            let t = fx.detect().unwrap();
            assert!(!t.sizes.is_hybrid(), "{name} {amd_pstate:?}: {}", t.sizes);
            assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
            assert!(!TopologyModel::new(t).to_string().contains("cpu sizes"));
        }
    }
}
