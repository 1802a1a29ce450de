// SPDX-License-Identifier: GPL-2.0-only
//! Synthetic layouts: group shapes, validation, SMT numbering.

use super::*;
use crate::topology::TopologyModel;
use crate::topology::fixtures::*;

#[test]
fn zen_fixture_has_expected_groups() {
    let t = synth(SyntheticLayout::simple(2, 3, 2));
    assert_eq!(t.nr_cpu_ids, 12);
    assert_eq!(t.l2_groups[0], vec![0, 6]);
    assert_eq!(t.l2_groups.len(), 6);
    assert_eq!(
        t.l3_groups,
        vec![vec![0, 1, 2, 6, 7, 8], vec![3, 4, 5, 9, 10, 11]]
    );
    assert_eq!(t.nr_packages(), 1);
    assert_eq!(t.nr_nodes, 1);
}

#[test]
fn synthetic_rejects_bad_layouts() {
    assert!(Topology::synthetic(&layout(0, 1, 1, 1, 1, 1)).is_err());
    assert!(Topology::synthetic(&layout(1, 1, 3, 1, 2, 1)).is_err());
    assert!(Topology::synthetic(&layout(1, 1, 4, 1, 1, 2)).is_err());
    assert!(Topology::synthetic(&layout(4, 1, 256, 2, 1, 1)).is_err());
    assert!(Topology::synthetic(&layout(2, 1, 256, 2, 1, 1)).is_ok());
    let huge = layout(u32::MAX, u32::MAX, u32::MAX, u32::MAX, 1, 1);
    assert!(Topology::synthetic(&huge).is_err());
}

#[test]
fn adjacent_numbering_pairs_consecutive_ids() {
    let mut l = SyntheticLayout::simple(1, 4, 2);
    l.smt_numbering = SmtNumbering::Adjacent;
    let t = synth(l);
    assert_eq!(t.smt_groups[1], vec![2, 3]);
    let m = TopologyModel::new(t);
    assert_eq!(m.rank_row(2)[0], 3);
}
