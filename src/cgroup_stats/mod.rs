// SPDX-License-Identifier: GPL-2.0-only
//! The statistics' per-cgroup CPU share: each interval, BPF's per-group CPU time (the `cg_ctxs`
//! map) is differenced against the previous reading, divided by what all online CPUs could run in
//! that time, and the largest consumers are named by their cgroup path.
//!
//! BPF charges a task's CPU time to the group it is in, not to that group's ancestors, and only
//! groups the cpu controller covers have an entry (a task elsewhere counts to the nearest such
//! ancestor); tasks of the root cgroup are not counted. With cgroup v2's rule that tasks live in
//! leaves, that makes each listed share a leaf's own.

mod paths;
mod share;

pub use paths::{PathCache, cgroup2_mount, scan};
pub use share::{deltas, share_pct, top};

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// How many groups the statistics list.
pub const TOP_N: usize = 5;

pub struct CgroupShares {
    prev: HashMap<u64, u64>,
    prev_at: Option<Instant>,
    paths: PathCache,
}

impl CgroupShares {
    pub fn new(paths: PathCache) -> CgroupShares {
        CgroupShares {
            prev: HashMap::new(),
            prev_at: None,
            paths,
        }
    }

    /// A new BPF instance: its counters start again, so the next reading is only a baseline.
    pub fn reset(&mut self) {
        self.prev.clear();
        self.prev_at = None;
    }

    /// The [`TOP_N`] groups by CPU share since the previous call, as path -> percent of all
    /// `nr_cpus` online CPUs' time, from `runtimes` (id, cumulative ns) read at `now`. Empty on
    /// the first call: there is no interval yet. Two ids printed alike (a path removed and made
    /// again within the interval) are added together.
    pub fn sample(
        &mut self,
        runtimes: &[(u64, u64)],
        now: Instant,
        nr_cpus: usize,
    ) -> BTreeMap<String, f64> {
        // A key met twice in one walk of a changing hash map is one group: keep one reading.
        let cur: HashMap<u64, u64> = runtimes.iter().copied().collect();
        let interval = self.prev_at.map(|at| now.saturating_duration_since(at));
        let used = deltas(&self.prev, &cur);
        self.prev = cur;
        self.prev_at = Some(now);
        let mut out = BTreeMap::new();
        let Some(interval) = interval else {
            return out;
        };
        let interval_ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
        let top = top(used, TOP_N);
        let ids: Vec<u64> = top.iter().map(|(id, _)| *id).collect();
        for (name, (_, ns)) in self.paths.names(&ids, now).into_iter().zip(&top) {
            if let Some(pct) = share_pct(*ns, interval_ns, nr_cpus) {
                *out.entry(name).or_insert(0.0) += pct;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

    #[test]
    fn shares_over_the_interval_named_by_path_top_five_only() {
        let dir = tempfile::tempdir().unwrap();
        let hog = dir.path().join("gate/hog");
        std::fs::create_dir_all(&hog).unwrap();
        let id = std::fs::metadata(&hog).unwrap().ino();
        let mut s = CgroupShares::new(PathCache::new(Some(dir.path().to_path_buf())));
        let t0 = Instant::now();
        let mut runtimes = vec![(id, 1_000_000_000)];
        // Seven unnamed groups, ids 1..=7, that ran 1..=7 ms in the interval.
        runtimes.extend((1..=7).map(|i| (i, 0)));
        assert!(s.sample(&runtimes, t0, 2).is_empty(), "no interval yet");

        // 2 s later on 2 CPUs: the hog group ran 1 CPU-second, a quarter of the 4 available.
        let mut runtimes = vec![(id, 2_000_000_000)];
        runtimes.extend((1..=7).map(|i| (i, i * 1_000_000)));
        let top = s.sample(&runtimes, t0 + Duration::from_secs(2), 2);
        assert_eq!(top.len(), TOP_N, "{top:?}");
        assert_eq!(top["/gate/hog"], 25.0);
        // 7 ms of 4 s is 0.175 %; groups 1 to 3 (the smallest) are left out.
        assert!((top["id:7"] - 0.175).abs() < 1e-9, "{top:?}");
        assert!(
            top.contains_key("id:4") && !top.contains_key("id:3"),
            "{top:?}"
        );

        // A reload: the next reading is a baseline again, whatever the counters did.
        s.reset();
        assert!(
            s.sample(&[(id, 5)], t0 + Duration::from_secs(3), 2)
                .is_empty()
        );
        let top = s.sample(&[(id, 250_000_005)], t0 + Duration::from_secs(4), 2);
        assert_eq!(top["/gate/hog"], 12.5);
    }

    #[test]
    fn autogroups_are_named_by_id_beside_paths() {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app");
        std::fs::create_dir_all(&app).unwrap();
        let id = std::fs::metadata(&app).unwrap().ino();
        let ag = 1u64 << crate::bpf_intf::AUTOGROUP_KEY_SHIFT | 12;
        let mut s = CgroupShares::new(PathCache::new(Some(dir.path().to_path_buf())));
        let t0 = Instant::now();
        s.sample(&[(ag, 0), (id, 0), (3, 0)], t0, 1);
        let top = s.sample(
            &[(ag, 300_000_000), (id, 200_000_000), (3, 100_000_000)],
            t0 + Duration::from_secs(1),
            1,
        );
        assert_eq!(top["autogroup-12"], 30.0, "{top:?}");
        assert_eq!(top["/app"], 20.0, "{top:?}");
        assert_eq!(top["id:3"], 10.0, "{top:?}");
    }

    #[test]
    fn idle_groups_and_no_cpus_give_an_empty_list() {
        let mut s = CgroupShares::new(PathCache::new(None));
        let t0 = Instant::now();
        s.sample(&[(1, 10)], t0, 2);
        assert!(
            s.sample(&[(1, 10)], t0 + Duration::from_secs(1), 2)
                .is_empty()
        );
        let t = t0 + Duration::from_secs(2);
        assert!(
            s.sample(&[(1, 20)], t, 0).is_empty(),
            "no CPUs to divide by"
        );
    }
}
