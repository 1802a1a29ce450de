// SPDX-License-Identifier: GPL-2.0-only
//! Each group's CPU share over one stats interval, from BPF's cumulative per-group CPU time, and
//! the largest of them.

use std::collections::HashMap;

/// The CPU time each group used between two readings of BPF's cumulative counters, ns.
///
/// A group absent from `prev` was created during the interval (its counter started at zero). A
/// counter that went back belongs to a new BPF instance (a hotplug reload starts them again), so
/// all of its reading is this interval's. Groups gone from `cur` were removed: nothing to report.
pub fn deltas(prev: &HashMap<u64, u64>, cur: &HashMap<u64, u64>) -> Vec<(u64, u64)> {
    cur.iter()
        .map(|(&id, &now)| {
            let before = prev.get(&id).copied().unwrap_or(0);
            (id, now.checked_sub(before).unwrap_or(now))
        })
        .collect()
}

/// `used_ns` of CPU time over `interval_ns` on `nr_cpus` CPUs, as a percentage of all of it
/// (100 = every online CPU the whole interval). `None` without an interval or CPUs to divide by.
pub fn share_pct(used_ns: u64, interval_ns: u64, nr_cpus: usize) -> Option<f64> {
    let capacity = interval_ns as f64 * nr_cpus as f64;
    (capacity > 0.0).then(|| used_ns as f64 * 100.0 / capacity)
}

/// The `n` groups that used the most CPU time, largest first; ties by id so the order is stable.
/// Groups that used none are left out: they consumed nothing.
pub fn top(mut used: Vec<(u64, u64)>, n: usize) -> Vec<(u64, u64)> {
    used.retain(|&(_, ns)| ns > 0);
    used.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    used.truncate(n);
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(u64, u64)]) -> HashMap<u64, u64> {
        pairs.iter().copied().collect()
    }

    fn sorted(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
        v.sort_unstable();
        v
    }

    #[test]
    fn deltas_are_differences_new_groups_count_whole_and_removed_ones_vanish() {
        let prev = map(&[(1, 1_000), (2, 5_000), (3, 7_000)]);
        // 1 ran 500 ns; 2 did not run; 3 was removed; 4 was created and ran 300 ns.
        let cur = map(&[(1, 1_500), (2, 5_000), (4, 300)]);
        assert_eq!(
            sorted(deltas(&prev, &cur)),
            vec![(1, 500), (2, 0), (4, 300)]
        );
    }

    #[test]
    fn a_counter_that_went_back_counts_from_zero() {
        // A reloaded BPF program: 40 ns since it started, not a wrap to nearly 2^64.
        let d = deltas(&map(&[(9, 1_000_000)]), &map(&[(9, 40)]));
        assert_eq!(d, vec![(9, 40)]);
    }

    #[test]
    fn share_is_time_used_over_interval_times_cpus() {
        // Half a CPU's second on 2 CPUs is a quarter of the machine.
        assert_eq!(share_pct(500_000_000, 1_000_000_000, 2), Some(25.0));
        // One whole CPU on 4 CPUs over 2 s.
        assert_eq!(share_pct(2_000_000_000, 2_000_000_000, 4), Some(25.0));
        assert_eq!(share_pct(3_000_000_000, 1_000_000_000, 3), Some(100.0));
        assert_eq!(share_pct(1, 0, 4), None);
        assert_eq!(share_pct(1, 1_000, 0), None);
    }

    #[test]
    fn top_keeps_the_largest_in_order_and_drops_idle_groups() {
        let used = vec![
            (10, 5),
            (11, 50),
            (12, 0),
            (13, 20),
            (14, 50),
            (15, 1),
            (16, 7),
        ];
        assert_eq!(top(used.clone(), 3), vec![(11, 50), (14, 50), (13, 20)]);
        assert_eq!(
            top(used, 10),
            vec![(11, 50), (14, 50), (13, 20), (16, 7), (10, 5), (15, 1)]
        );
        assert!(top(vec![(1, 0), (2, 0)], 5).is_empty());
        assert!(top(Vec::new(), 5).is_empty());
    }
}
