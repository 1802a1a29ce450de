// SPDX-License-Identifier: GPL-2.0-only
//! The control loop's side: keeps BPF's `game_tgids` map equal to the game processes the scan
//! found. The map holds MAX_GAME_PROCS (src/bpf/intf.h) pids; when an insert finds it full,
//! entries of processes that have exited (the scan reports an exit up to a second late) are
//! evicted and the insert tried again, and a game that still finds no room waits for the next
//! tick instead of being dropped.

use super::scan::{Changes, GameProc};
use anyhow::Result;
use log::Level;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug)]
pub enum InsertError {
    /// The map holds its max_entries (E2BIG).
    Full,
    Other(anyhow::Error),
}

/// BPF's `game_tgids` (the Scheduler), or a stand-in in tests.
pub trait GameMap {
    fn insert(&self, pid: u32) -> Result<(), InsertError>;
    /// Removing a pid that is not there is not an error.
    fn remove(&self, pid: u32) -> Result<()>;
    fn pids(&self) -> Result<Vec<u32>>;
}

#[derive(Default)]
pub struct Boost {
    /// What the scan found, by pid.
    want: BTreeMap<u32, GameProc>,
    /// What this BPF instance's map holds.
    written: BTreeSet<u32>,
    /// Pids whose insert failed for another reason than room: said once each.
    failed: BTreeSet<u32>,
    full_said: bool,
}

impl Boost {
    pub fn apply(&mut self, c: Changes) {
        for pid in c.removed {
            self.want.remove(&pid);
            self.failed.remove(&pid);
        }
        for g in c.added {
            self.want.insert(g.pid, g);
        }
    }

    /// A freshly loaded BPF program has an empty map: everything is written again.
    pub fn reset(&mut self) {
        self.written.clear();
        self.failed.clear();
    }

    pub fn boosted(&self) -> usize {
        self.written.len()
    }

    /// Brings `map` up to date; `alive` says whether a pid still runs. Returns the lines to log.
    pub fn sync(
        &mut self,
        map: &impl GameMap,
        alive: impl Fn(u32) -> bool,
    ) -> Vec<(Level, String)> {
        let mut lines = Vec::new();
        let stale: Vec<u32> = self
            .written
            .difference(&self.want.keys().copied().collect())
            .copied()
            .collect();
        for pid in stale {
            // A failed removal is left to the eviction below, should the map fill up.
            if let Err(e) = map.remove(pid) {
                lines.push((Level::Warn, format!("gaming: {e:#}")));
            }
            self.written.remove(&pid);
        }
        let mut by_game: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        let todo: Vec<u32> = self
            .want
            .keys()
            .filter(|p| !self.written.contains(p))
            .copied()
            .collect();
        for pid in todo {
            let mut r = map.insert(pid);
            if matches!(r, Err(InsertError::Full)) {
                lines.extend(self.evict(map, &alive));
                if !self.want.contains_key(&pid) {
                    continue;
                }
                r = map.insert(pid);
            }
            let g = &self.want[&pid];
            match r {
                Ok(()) => {
                    self.written.insert(pid);
                    by_game
                        .entry(g.game)
                        .or_default()
                        .push(format!("{pid} ({})", g.comm));
                }
                Err(InsertError::Full) => {
                    if !self.full_said {
                        self.full_said = true;
                        lines.push((
                            Level::Warn,
                            format!(
                                "gaming: BPF map game_tgids is full of running game processes \
                                 ({}): {pid} ({}) and later ones wait for room",
                                self.written.len(),
                                g.comm
                            ),
                        ));
                    }
                    break;
                }
                Err(InsertError::Other(e)) => {
                    if self.failed.insert(pid) {
                        lines.push((
                            Level::Warn,
                            format!("gaming: cannot boost pid {pid} ({}): {e:#}", g.comm),
                        ));
                    }
                }
            }
        }
        for (game, procs) in by_game {
            lines.push((
                Level::Info,
                format!(
                    "gaming: game {game}: threads LAT_CRITICAL while interactive in {}",
                    procs.join(", ")
                ),
            ));
        }
        lines
    }

    /// Takes out of the map every pid that is no running game of ours: exited ones (and forgets
    /// them before the scan says so), and any our writes do not account for.
    fn evict(&mut self, map: &impl GameMap, alive: &impl Fn(u32) -> bool) -> Vec<(Level, String)> {
        let pids = match map.pids() {
            Ok(p) => p,
            Err(e) => return vec![(Level::Warn, format!("gaming: {e:#}"))],
        };
        let mut lines = Vec::new();
        for pid in pids {
            let dead = !alive(pid);
            if !dead && self.want.contains_key(&pid) && self.written.contains(&pid) {
                continue;
            }
            match map.remove(pid) {
                Ok(()) => {
                    self.written.remove(&pid);
                    if dead {
                        self.want.remove(&pid);
                    }
                }
                Err(e) => lines.push((Level::Warn, format!("gaming: {e:#}"))),
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::scan::Via;
    use anyhow::anyhow;
    use std::cell::RefCell;

    /// A map of `cap` entries, like BPF's hash map: an insert past it is E2BIG.
    struct FakeMap {
        cap: usize,
        pids: RefCell<BTreeSet<u32>>,
        refuse: Option<u32>,
    }

    impl FakeMap {
        fn new(cap: usize) -> FakeMap {
            FakeMap {
                cap,
                pids: RefCell::default(),
                refuse: None,
            }
        }
        fn has(&self) -> Vec<u32> {
            self.pids.borrow().iter().copied().collect()
        }
    }

    impl GameMap for FakeMap {
        fn insert(&self, pid: u32) -> Result<(), InsertError> {
            let mut p = self.pids.borrow_mut();
            if self.refuse == Some(pid) {
                return Err(InsertError::Other(anyhow!("EPERM")));
            }
            if !p.contains(&pid) && p.len() >= self.cap {
                return Err(InsertError::Full);
            }
            p.insert(pid);
            Ok(())
        }
        fn remove(&self, pid: u32) -> Result<()> {
            self.pids.borrow_mut().remove(&pid);
            Ok(())
        }
        fn pids(&self) -> Result<Vec<u32>> {
            Ok(self.has())
        }
    }

    fn game(pid: u32, game: u64) -> GameProc {
        let comm = format!("g{pid}");
        GameProc {
            pid,
            start: 1,
            comm,
            game,
            via: Via::Environment,
        }
    }

    fn added(games: &[GameProc]) -> Changes {
        Changes {
            added: games.to_vec(),
            ..Changes::default()
        }
    }

    #[test]
    fn found_games_go_in_and_exited_ones_out_with_one_line_per_game() {
        let map = FakeMap::new(8);
        let mut b = Boost::default();
        b.apply(added(&[game(10, 730), game(11, 730), game(20, 42)]));
        let lines = b.sync(&map, |_| true);
        assert_eq!(map.has(), [10, 11, 20]);
        assert_eq!(
            lines,
            [
                (
                    Level::Info,
                    "gaming: game 42: threads LAT_CRITICAL while interactive in 20 (g20)".into()
                ),
                (
                    Level::Info,
                    "gaming: game 730: threads LAT_CRITICAL while interactive in 10 (g10), 11 (g11)".into()
                ),
            ]
        );
        assert!(b.sync(&map, |_| true).is_empty());
        b.apply(Changes {
            removed: vec![11],
            ..Changes::default()
        });
        assert!(b.sync(&map, |_| true).is_empty());
        assert_eq!(map.has(), [10, 20]);
    }

    #[test]
    fn a_new_bpf_instance_gets_every_game_again() {
        let mut b = Boost::default();
        b.apply(added(&[game(10, 730)]));
        b.sync(&FakeMap::new(8), |_| true);
        let fresh = FakeMap::new(8);
        b.reset();
        assert_eq!(b.sync(&fresh, |_| true).len(), 1);
        assert_eq!(fresh.has(), [10]);
    }

    /// The map is full of processes that exited since the scan last looked: a new game evicts
    /// them and is boosted at once. (Before, the failed insert was logged and the game never
    /// tried again.)
    #[test]
    fn a_full_map_makes_room_by_evicting_exited_processes() {
        let map = FakeMap::new(4);
        let mut b = Boost::default();
        b.apply(added(&[game(1, 7), game(2, 7), game(3, 7), game(4, 7)]));
        b.sync(&map, |_| true);
        // 1-3 exited; the scan has not said so yet. A later game starts.
        b.apply(added(&[game(50, 730)]));
        let lines = b.sync(&map, |pid| pid >= 4);
        assert_eq!(map.has(), [4, 50]);
        assert_eq!(
            lines,
            [(
                Level::Info,
                "gaming: game 730: threads LAT_CRITICAL while interactive in 50 (g50)".into()
            )]
        );
        // Entries nobody accounts for (a removal that failed) go too.
        map.pids.borrow_mut().extend([97, 98]);
        b.apply(added(&[game(60, 730), game(61, 730)]));
        b.sync(&map, |_| true);
        assert_eq!(map.has(), [4, 50, 60, 61]);
    }

    /// Full of running games: the newcomer waits, said once, and gets in when one exits.
    #[test]
    fn a_game_that_finds_no_room_waits_for_it() {
        let map = FakeMap::new(2);
        let mut b = Boost::default();
        b.apply(added(&[game(1, 7), game(2, 7), game(3, 7)]));
        let lines = b.sync(&map, |_| true);
        assert_eq!(map.has(), [1, 2]);
        assert!(
            lines
                .iter()
                .any(|(l, t)| *l == Level::Warn && t.contains("full")),
            "{lines:?}"
        );
        assert!(b.sync(&map, |_| true).is_empty(), "said once");
        b.apply(Changes {
            removed: vec![1],
            ..Changes::default()
        });
        b.sync(&map, |_| true);
        assert_eq!(map.has(), [2, 3]);
        assert_eq!(b.boosted(), 2);
    }

    #[test]
    fn another_insert_error_is_said_once_and_retried() {
        let mut map = FakeMap::new(8);
        map.refuse = Some(5);
        let mut b = Boost::default();
        b.apply(added(&[game(5, 7)]));
        let lines = b.sync(&map, |_| true);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0]
                .1
                .starts_with("gaming: cannot boost pid 5 (g5): EPERM"),
            "{lines:?}"
        );
        assert!(b.sync(&map, |_| true).is_empty());
        map.refuse = None;
        assert_eq!(b.sync(&map, |_| true).len(), 1);
        assert_eq!(map.has(), [5]);
    }
}
