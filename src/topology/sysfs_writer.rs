// SPDX-License-Identifier: GPL-2.0-only
//! A sysfs tree written from a [`Topology`]: what `Topology::detect_from()` reads, so the tests'
//! fixtures and the topology bench describe a machine as a layout, not as hundreds of files.

use super::{CpuSize, SizeSource, Topology, format_cpu_list};

fn cpu_list_line(cpus: &[u32]) -> String {
    format!("{}\n", format_cpu_list(cpus))
}

/// Every file detection reads for `t` (and a few it must ignore), each handed to `put` as a path
/// relative to the sysfs root and its content.
pub fn write_sysfs_tree(t: &Topology, mut put: impl FnMut(&str, &str)) {
    put("devices/system/cpu/online", &cpu_list_line(&t.online));
    put("devices/system/cpu/possible", &cpu_list_line(&t.possible));
    let group_of = |groups: &[Vec<u32>], cpu: u32| -> Vec<u32> {
        groups
            .iter()
            .find(|g| g.contains(&cpu))
            .cloned()
            .unwrap_or_default()
    };
    for &cpu in &t.online {
        let base = format!("devices/system/cpu/cpu{cpu}");
        let topo = format!("{base}/topology");
        put(
            &format!("{topo}/core_id"),
            &format!("{}\n", t.core_of[&cpu]),
        );
        put(
            &format!("{topo}/physical_package_id"),
            &format!("{}\n", t.package_of[&cpu]),
        );
        if let Some(cluster) = t.cluster_of.get(&cpu) {
            put(&format!("{topo}/cluster_id"), &format!("{cluster}\n"));
        }
        let smt = group_of(&t.smt_groups, cpu);
        put(
            &format!("{topo}/thread_siblings_list"),
            &cpu_list_line(&smt),
        );
        let caches: [(u32, &str, Vec<u32>); 4] = [
            (1, "Data", smt.clone()),
            (1, "Instruction", smt.clone()),
            (2, "Unified", group_of(&t.l2_groups, cpu)),
            (3, "Unified", group_of(&t.l3_groups, cpu)),
        ];
        for (index, (level, kind, shared)) in caches.iter().enumerate() {
            let dir = format!("{base}/cache/index{index}");
            put(&format!("{dir}/level"), &format!("{level}\n"));
            put(&format!("{dir}/type"), &format!("{kind}\n"));
            put(&format!("{dir}/shared_cpu_list"), &cpu_list_line(shared));
        }
    }
    for node in 0..t.nr_nodes {
        let cpus: Vec<u32> = t
            .online
            .iter()
            .copied()
            .filter(|c| t.node_of[c] == node)
            .collect();
        put(
            &format!("devices/system/node/node{node}/cpulist"),
            &cpu_list_line(&cpus),
        );
    }
    match &t.sizes.source {
        SizeSource::Uniform => {}
        SizeSource::Capacity(caps) => {
            for (cpu, cap) in caps {
                put(
                    &format!("devices/system/cpu/cpu{cpu}/cpu_capacity"),
                    &format!("{cap}\n"),
                );
            }
        }
        SizeSource::CoreType => {
            let of = |size| -> Vec<u32> {
                t.online
                    .iter()
                    .copied()
                    .filter(|&c| t.sizes.size(c) == size)
                    .collect()
            };
            put("devices/cpu_core/cpus", &cpu_list_line(&of(CpuSize::Big)));
            put(
                "devices/cpu_atom/cpus",
                &cpu_list_line(&of(CpuSize::Little)),
            );
        }
        SizeSource::CppcHighestPerf { file, perf } => {
            for (cpu, perf) in perf {
                put(
                    &format!("devices/system/cpu/cpu{cpu}/{file}"),
                    &format!("{perf}\n"),
                );
            }
        }
    }
    // Files the detector must ignore.
    put("devices/system/cpu/kernel_max", "8191\n");
    put("devices/system/node/possible", "0-3\n");
}
