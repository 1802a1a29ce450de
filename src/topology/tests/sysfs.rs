// SPDX-License-Identifier: GPL-2.0-only
//! Detection on generated sysfs trees: round trips, hotplug holes, the
//! online / possible rules, every fallback and NUMA nodes.

use std::path::Path;

use crate::bpf_intf::{AFFINITY_SENTINEL, MAX_AFFINITY_CANDIDATES, MAX_CPUS};
use crate::topology::fixtures::*;
use crate::topology::{SysfsTree, TopologyModel, TopologySource};

#[test]
fn detection_round_trips_every_fixture() {
    for (name, layout) in fixtures() {
        let truth = synth(layout);
        let detected = write_sysfs(&truth).detect().unwrap();
        assert_eq!(detected, truth, "{name}");
        assert!(
            detected.warnings.is_empty(),
            "{name}: {:?}",
            detected.warnings
        );
    }
}

#[test]
fn hotplug_holes_are_indexed_by_real_cpu_id() {
    let t = sysfs_8c_holes().detect().unwrap();
    assert_eq!(t.online, vec![0, 1, 2, 4, 6, 7]);
    assert_eq!(t.nr_cpu_ids, 8);
    assert_eq!(t.possible, (0..8).collect::<Vec<_>>());
    assert_eq!(t.l2_groups, vec![vec![0, 4], vec![1], vec![2, 6], vec![7]]);
    assert_eq!(t.l3_groups, vec![vec![0, 1, 2, 4, 6, 7]]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert!(!t.package_of.contains_key(&3) && !t.node_of.contains_key(&5));

    let m = TopologyModel::new(t);
    assert_eq!(m.ranks().len(), 8 * MAX_AFFINITY_CANDIDATES);
    for offline in [3, 5] {
        assert!(m.rank_row(offline).iter().all(|&s| s == AFFINITY_SENTINEL));
        assert_eq!(m.reff(0, offline), None);
    }
    assert!(m.ranks().iter().all(|&c| c != 3 && c != 5));
    assert_eq!(m.rank_row(0)[0], 4);
    assert_eq!(m.rank_row(6)[0], 2);
    assert!(m.rank_row(99).iter().all(|&s| s == AFFINITY_SENTINEL));
}

#[test]
fn possible_beyond_online_sets_nr_cpu_ids() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/possible", "0-15\n");
    let t = fx.detect().unwrap();
    assert_eq!(t.nr_cpu_ids, 16);
    let m = TopologyModel::new(t);
    assert_eq!(m.ranks().len(), 16 * MAX_AFFINITY_CANDIDATES);
    assert!(m.rank_row(12).iter().all(|&s| s == AFFINITY_SENTINEL));
    assert_eq!(m.params.nr_cpu_ids, 16);
    assert_eq!(m.params.nr_cpus, 8);
}

#[test]
fn missing_online_is_an_error() {
    let fx = sysfs_8c();
    fx.rm("devices/system/cpu/online");
    let e = err_text(fx.detect());
    assert!(
        e.contains("devices/system/cpu/online") && e.contains("missing"),
        "{e}"
    );
}

#[test]
fn empty_online_is_an_error() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/online", "\n");
    let e = err_text(fx.detect());
    assert!(e.contains("online") && e.contains("no online CPUs"), "{e}");
}

#[test]
fn garbage_online_names_file_and_content() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/online", "0-3,banana\n");
    let e = err_text(fx.detect());
    assert!(e.contains("devices/system/cpu/online"), "{e}");
    assert!(e.contains("banana"), "{e}");
}

#[test]
fn reversed_online_range_is_an_error() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/online", "7-0\n");
    let e = err_text(fx.detect());
    assert!(e.contains("reversed") && e.contains("7-0"), "{e}");
}

#[test]
fn missing_possible_falls_back_to_online() {
    let fx = sysfs_8c_holes();
    fx.rm("devices/system/cpu/possible");
    let t = fx.detect().unwrap();
    assert_eq!(t.possible, t.online);
    assert_eq!(t.nr_cpu_ids, 8);
    assert!(
        t.warnings.iter().any(|w| w.contains("possible")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn online_cpu_outside_possible_is_an_error() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/possible", "0-3\n");
    let e = err_text(fx.detect());
    assert!(e.contains("not possible"), "{e}");
}

#[test]
fn nr_cpu_ids_above_max_cpus_is_an_error() {
    let fx = sysfs_8c();
    fx.put("devices/system/cpu/possible", &format!("0-{}\n", MAX_CPUS));
    let e = err_text(fx.detect());
    assert!(e.contains("MAX_CPUS"), "{e}");
}

#[test]
fn missing_topology_and_cache_fall_back_to_one_package_of_single_cores() {
    let fx = sysfs_8c();
    for cpu in 0..8 {
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/topology"));
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/cache"));
    }
    let t = fx.detect().unwrap();
    let singles: Vec<Vec<u32>> = (0..8).map(|c| vec![c]).collect();
    assert_eq!(t.smt_groups, singles);
    assert_eq!(t.l2_groups, singles);
    assert_eq!(t.l3_groups, vec![(0..8).collect::<Vec<_>>()]);
    assert!(t.package_of.values().all(|&p| p == 0));
    assert_eq!(t.core_of[&5], 5);
    assert!(
        t.warnings.iter().any(|w| w.contains("no topology/")),
        "{:?}",
        t.warnings
    );
    assert!(
        t.warnings.iter().any(|w| w.contains("no cache/")),
        "{:?}",
        t.warnings
    );
    // One warning line per reason, not per CPU.
    assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
    let m = TopologyModel::new(t);
    assert!((m.spectrum.lambda2 - 8.0).abs() < 1e-9);
}

#[test]
fn missing_topology_keeps_cache_derived_l2() {
    let fx = sysfs_8c();
    for cpu in 0..8 {
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/topology"));
    }
    let t = fx.detect().unwrap();
    assert_eq!(
        t.l2_groups,
        vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
    );
    assert!(t.package_of.values().all(|&p| p == 0));
}

#[test]
fn missing_cache_uses_thread_siblings_for_l2() {
    let truth = synth(layout(2, 1, 4, 2, 1, 1));
    let fx = write_sysfs(&truth);
    for &cpu in &truth.online {
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/cache"));
    }
    let t = fx.detect().unwrap();
    assert_eq!(t.l2_groups, truth.smt_groups);
    // LLC falls back to the package.
    assert_eq!(
        t.l3_groups,
        vec![
            vec![0, 1, 2, 3, 8, 9, 10, 11],
            vec![4, 5, 6, 7, 12, 13, 14, 15]
        ]
    );
    assert!(t.warnings.iter().any(|w| w.contains("no cache/")));
}

#[test]
fn missing_l3_makes_l2_the_llc() {
    let truth = synth(layout(1, 1, 4, 1, 2, 1));
    let fx = write_sysfs(&truth);
    for cpu in 0..4 {
        fx.rm(&format!("devices/system/cpu/cpu{cpu}/cache/index3"));
    }
    let t = fx.detect().unwrap();
    assert_eq!(t.l3_groups, t.l2_groups);
    assert!(t.warnings.iter().any(|w| w.contains("no L3")));
}

#[test]
fn missing_individual_topology_files_fall_back() {
    let fx = sysfs_8c();
    fx.rm("devices/system/cpu/cpu2/topology/physical_package_id");
    fx.rm("devices/system/cpu/cpu2/topology/thread_siblings_list");
    fx.rm("devices/system/cpu/cpu2/topology/core_id");
    let t = fx.detect().unwrap();
    assert_eq!(t.package_of[&2], 0);
    assert_eq!(t.core_of[&2], 2);
    // cpu6 still names cpu2 as its sibling; union-find keeps the pair.
    assert!(t.smt_groups.contains(&vec![2, 6]));
    assert_eq!(t.warnings.len(), 3, "{:?}", t.warnings);
}

#[test]
fn inconsistent_sharing_lists_still_partition() {
    let fx = sysfs_8c();
    // cpu0 claims cpu1 as an L2 sharer; cpu1 and cpu4/cpu5 keep their own lists.
    fx.put(
        "devices/system/cpu/cpu0/cache/index2/shared_cpu_list",
        "0-1\n",
    );
    let t = fx.detect().unwrap();
    assert_eq!(t.l2_groups, vec![vec![0, 1, 4, 5], vec![2, 6], vec![3, 7]]);
    let all: Vec<u32> = t.l2_groups.concat();
    assert_eq!(all.len(), 8);
}

#[test]
fn absent_node_dir_means_one_node() {
    let fx = write_sysfs(&synth(layout(2, 1, 4, 2, 1, 1)));
    fx.rm("devices/system/node");
    let t = fx.detect().unwrap();
    assert_eq!(t.nr_nodes, 1);
    assert!(t.node_of.values().all(|&n| n == 0));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn numa_nodes_are_detected_and_sparse_ids_kept() {
    let fx = write_sysfs(&synth(layout(2, 1, 4, 2, 1, 1)));
    fx.rm("devices/system/node/node1");
    fx.put("devices/system/node/node2/cpulist", "4-7,12-15\n");
    fx.put("devices/system/node/node3/cpulist", "\n");
    let t = fx.detect().unwrap();
    assert_eq!(t.nr_nodes, 4);
    assert_eq!(t.node_of[&0], 0);
    assert_eq!(t.node_of[&13], 2);
}

#[test]
fn cpu_missing_from_every_node_warns() {
    let fx = write_sysfs(&synth(layout(2, 1, 4, 2, 1, 1)));
    fx.put("devices/system/node/node1/cpulist", "4-7\n");
    let t = fx.detect().unwrap();
    assert_eq!(t.node_of[&12], 0);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("12-15") && w.contains("NUMA"))
    );
}

#[test]
fn node_list_garbage_and_duplicates_are_errors() {
    let fx = write_sysfs(&synth(layout(2, 1, 4, 2, 1, 1)));
    fx.put("devices/system/node/node1/cpulist", "4-7,oops\n");
    let e = err_text(fx.detect());
    assert!(e.contains("node1/cpulist") && e.contains("oops"), "{e}");

    let fx = write_sysfs(&synth(layout(2, 1, 4, 2, 1, 1)));
    fx.put("devices/system/node/node1/cpulist", "0,4-7,12-15\n");
    let e = err_text(fx.detect());
    assert!(e.contains("CPU 0") && e.contains("node0"), "{e}");
}

#[test]
fn real_sysfs_detects_if_present() {
    // Whatever this machine is, detection must not fail or panic on it.
    if Path::new("/sys/devices/system/cpu/online").exists() {
        let t = SysfsTree(Path::new("/sys")).topology().unwrap();
        assert!(!t.online.is_empty());
        let m = TopologyModel::new(t);
        println!("{m}");
    }
}
