// SPDX-License-Identifier: GPL-2.0-only
//! Hybrid CPUs on generated sysfs trees: `cpu_capacity`, Intel's core-type lists, the partial
//! and broken cases, and what reaches BPF through the layout.

use std::collections::BTreeMap;

use super::*;
use crate::bpf_intf::{CPU_SIZE_BIG, CPU_SIZE_LITTLE};
use crate::layout::Layout;
use crate::topology::SysfsTree;
use crate::topology::TopologyModel;
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

#[test]
fn cpu_capacity_and_core_types_round_trip() {
    for (name, truth) in [
        ("cpu_capacity", hybrid_8c(capacities)),
        ("core types", hybrid_8c(core_types)),
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
    let truth = hybrid_8c(core_types);
    let fx = write_sysfs(&truth);
    for cpu in 0..8 {
        fx.put(
            &format!("devices/system/cpu/cpu{cpu}/cpu_capacity"),
            "1024\n",
        );
    }
    assert_eq!(fx.detect().unwrap(), truth);
}
