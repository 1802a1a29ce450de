// SPDX-License-Identifier: GPL-2.0-only
//! The model: rank order on the reference machines, route independence,
//! truncation, the single-CPU machine and the startup log.

use super::*;
use crate::topology::fixtures::*;
use crate::topology::params::MS;
use crate::topology::{CODEL_EQ_MIN_NS, SyntheticLayout, TAU_MIN_NS, derive_params};

fn row_cpus(m: &TopologyModel, cpu: u32) -> Vec<u32> {
    m.rank_row(cpu)
        .iter()
        .copied()
        .take_while(|&c| c != AFFINITY_SENTINEL)
        .collect()
}

#[test]
fn ranks_are_sorted_complete_and_sentinel_padded() {
    for (name, layout) in fixtures() {
        let m = TopologyModel::new(synth(layout));
        let t = &m.topology;
        for &cpu in &t.online {
            let row = m.rank_row(cpu);
            let real = row_cpus(&m, cpu);
            let expect_len = (t.online.len() - 1).min(MAX_AFFINITY_CANDIDATES);
            assert_eq!(real.len(), expect_len, "{name} cpu {cpu}");
            assert!(row[expect_len..].iter().all(|&s| s == AFFINITY_SENTINEL));
            assert!(!real.contains(&cpu), "{name}: cpu {cpu} ranks itself");
            let mut sorted = real.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), real.len(), "{name}: duplicate peer");
            let reffs: Vec<f64> = real.iter().map(|&p| m.reff(cpu, p).unwrap()).collect();
            for w in reffs.windows(2) {
                assert!(
                    w[0] <= w[1] * (1.0 + RANK_TIE_REL_TOL),
                    "{name}: not ascending"
                );
            }
        }
    }
}

#[test]
fn slot_zero_is_an_l2_sibling_when_one_exists() {
    let holes = sysfs_8c_holes().detect().unwrap();
    let mut topologies: Vec<(String, Topology)> = fixtures()
        .into_iter()
        .map(|(name, layout)| (name.to_string(), synth(layout)))
        .collect();
    topologies.push(("8C holes".to_string(), holes));
    for (name, t) in topologies {
        let m = TopologyModel::new(t);
        let t = &m.topology;
        for &cpu in &t.online {
            let group = &t.l2_groups[t.l2_group_of(cpu).unwrap()];
            let slot0 = m.rank_row(cpu)[0];
            if group.len() > 1 {
                assert!(group.contains(&slot0), "{name}: cpu {cpu} slot0 {slot0}");
                // Every L2 sibling precedes every other CPU.
                let row = row_cpus(&m, cpu);
                let k = group.len() - 1;
                assert!(
                    row[..k].iter().all(|c| group.contains(c)),
                    "{name}: cpu {cpu}"
                );
            }
        }
    }
}

#[test]
fn zen_same_l3_precedes_other_l3() {
    let m = TopologyModel::new(synth(SyntheticLayout::simple(2, 3, 2)));
    let t = &m.topology;
    for &cpu in &t.online {
        let own = t.l3_group_of(cpu);
        let row = row_cpus(&m, cpu);
        let first_foreign = row.iter().position(|&c| t.l3_group_of(c) != own).unwrap();
        assert_eq!(first_foreign, 5, "cpu {cpu}: {row:?}");
        assert!(
            row[first_foreign..]
                .iter()
                .all(|&c| t.l3_group_of(c) != own)
        );
    }
    assert_eq!(row_cpus(&m, 3), vec![9, 4, 5, 10, 11, 0, 1, 2, 6, 7, 8]);
}

#[test]
fn wake_wide_factor_is_the_largest_llc() {
    // Two LLCs of 3 cores x 2 threads: 6, not the machine's 12.
    let mut t = synth(SyntheticLayout::simple(2, 3, 2));
    assert_eq!(TopologyModel::new(t.clone()).params.bpf.wake_wide_factor, 6);
    // Offline CPUs do not count: one LLC down to 2 online, the other still 6.
    let first = t.l3_groups[0].clone();
    t.online.retain(|c| !first[2..].contains(c));
    assert_eq!(TopologyModel::new(t.clone()).params.bpf.wake_wide_factor, 6);
    let second = t.l3_groups[1].clone();
    t.online.retain(|c| !second[1..].contains(c));
    assert_eq!(TopologyModel::new(t).params.bpf.wake_wide_factor, 2);
    let one = TopologyModel::new(synth(SyntheticLayout::simple(1, 1, 1)));
    assert_eq!(one.params.bpf.wake_wide_factor, 1);
}

#[test]
fn same_socket_precedes_other_socket() {
    for layout in [layout(2, 1, 8, 2, 1, 1), layout(2, 4, 8, 2, 1, 1)] {
        let m = TopologyModel::new(synth(layout));
        let t = &m.topology;
        for &cpu in &t.online {
            let row = row_cpus(&m, cpu);
            let same = row
                .iter()
                .filter(|&c| t.package_of[c] == t.package_of[&cpu])
                .count();
            assert!(
                row[..same]
                    .iter()
                    .all(|c| t.package_of[c] == t.package_of[&cpu])
            );
            // Within the socket, the own L3 comes first.
            let own_l3 = t.l3_group_of(cpu);
            let l3_peers = t.l3_groups[own_l3.unwrap()].len() - 1;
            assert!(row[..l3_peers].iter().all(|&c| t.l3_group_of(c) == own_l3));
        }
    }
}

#[test]
fn ranks_do_not_depend_on_the_route() {
    let t = synth(layout(2, 4, 8, 2, 1, 1));
    let e = TopologyModel::with_route(t.clone(), SpectralRoute::Eigen);
    let f = TopologyModel::with_route(t, SpectralRoute::Fast);
    assert_eq!(f.spectrum.route, SpectralRoute::Fast);
    assert_eq!(e.ranks(), f.ranks());
    assert_eq!(e.params, f.params);
}

#[test]
fn rows_truncate_at_max_candidates() {
    let m = TopologyModel::with_route(synth(layout(2, 1, 72, 2, 1, 1)), SpectralRoute::Fast);
    for cpu in [0, 143, 287] {
        let row = m.rank_row(cpu);
        assert!(row.iter().all(|&c| c != AFFINITY_SENTINEL && c != cpu));
    }
}

#[test]
fn single_cpu_machine_builds_a_model() {
    let t = synth(SyntheticLayout::simple(1, 1, 1));
    let m = TopologyModel::new(t);
    assert_eq!(m.tau_ns, TAU_MIN_NS);
    assert_eq!(m.codel_eq_ns, CODEL_EQ_MIN_NS);
    assert!(m.rank_row(0).iter().all(|&s| s == AFFINITY_SENTINEL));
    assert_eq!(m.params.bpf.spill_search_budget, 0);
    assert_eq!(m.params.bpf.affinity_search_budget, 0);
    assert_eq!(m.params.bpf.pcpu_dsq_depth, 1);
}

#[test]
fn display_lists_every_knob() {
    let m = TopologyModel::new(synth(SyntheticLayout::simple(2, 3, 2)));
    let text = m.to_string();
    for needle in ["lambda_2", "tau", "codel eq", "cpus online / ids"] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    for (field, _) in m.params.bpf.fields() {
        let label = field.strip_suffix("_ns").unwrap_or(field).replace('_', " ");
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(&label)),
            "missing {field} as {label:?}:\n{text}"
        );
    }
    assert!(derive_params(MS, 2, 2).to_string().contains("unset"));
}
