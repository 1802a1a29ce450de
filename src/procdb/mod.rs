// SPDX-License-Identifier: GPL-2.0-only
//! Process database: learns, per command name, which tier a program settles in, so BPF can start
//! a new process of that name in its tier instead of re-learning it from scratch.
//!
//! Input is BPF's `task_profiles` map, read once a second: per comm, the tier and average runtime
//! of the task that last published a mature profile. Per comm the database keeps an EWMA of the
//! runtime and a streak of agreeing observations. A profile whose tier has not changed and whose
//! runtime stayed within [`CONVERGE_FRAC`] of its EWMA for [`CONFIDENT_STREAK`] fresh
//! observations in a row becomes *confident*; a single observation in a different tier demotes
//! it, because a wrong warm start costs more than none (BPF then classifies from scratch, as if
//! there were no database). Only confident profiles are offered to BPF.
//!
//! The map keeps an entry after its task exits, so the same values are read again every second.
//! Such a re-read (same `samples`, tier and runtime) refreshes recency but is not new evidence;
//! otherwise a single stale entry would "stabilise" itself into confidence.

mod format;
mod migrate;
mod paths;
mod report;
mod store;
mod upgrade;
mod warm;

pub use warm::{WarmDelta, WarmMirror};

pub use format::{Corruption, FORMAT_VERSION, MAGIC};
pub use migrate::{Migration, migrate};
pub use paths::{STATE_DIR, default_path, legacy_path};
pub use report::SaveReport;
pub use store::{Durability, LoadOutcome, is_kept};

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::bpf_intf::{COMM_LEN, CommKey, TaskClassEntry, Tier};
use format::PersistedEntry;

/// Same bound as BPF's `task_profiles` map: more names than BPF can hold cannot all be current.
pub const DEFAULT_CAPACITY: usize = 4096;
/// Fresh agreeing observations before a profile is trusted. BPF publishes every 16 samples, so
/// this is ~80 scheduling samples of one behaviour.
pub const CONFIDENT_STREAK: u32 = 5;
/// A runtime within 15 % of its EWMA counts as converged; task runtimes jitter by a few percent
/// between bursts, while a real change of behaviour moves them by multiples.
pub const CONVERGE_FRAC: f64 = 0.15;
/// EWMA weight of a new runtime observation.
pub const EWMA_ALPHA: f64 = 0.25;
/// Seconds in which a process of a name showed cooperation (src/coop_learn.rs) before the name
/// is learned as a cooperative group's: one second can be a program's start-up alone.
pub const COOP_STREAK: u32 = 2;
/// How often [`ProcDb::save_if_due`] writes a changed database.
pub const SAVE_PERIOD: Duration = Duration::from_secs(60);
/// Runtimes are compared relative to at least this, so sub-microsecond EWMAs do not make every
/// observation look like a 100 % swing.
const MIN_RUNTIME_NS: f64 = 1_000.0;

/// One row of BPF's `task_profiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    pub comm: [u8; COMM_LEN],
    pub tier: Tier,
    pub avg_runtime_ns: u64,
    /// BPF's sample count for the publishing task; tells a fresh publish from a re-read.
    pub samples: u32,
}

impl Observation {
    /// From a map key and value; `None` for an unknown tier or an empty name.
    pub fn from_map(key: &CommKey, e: &TaskClassEntry) -> Option<Observation> {
        let tier = Tier::from_u8(e.tier)?;
        (key.comm[0] != 0).then_some(Observation {
            comm: key.comm,
            tier,
            avg_runtime_ns: e.avg_runtime_ns,
            samples: e.samples,
        })
    }

    /// From a name (cut to 15 bytes plus NUL, as the kernel does).
    pub fn named(name: &str, tier: Tier, avg_runtime_ns: u64, samples: u32) -> Observation {
        let mut comm = [0u8; COMM_LEN];
        let n = name.len().min(COMM_LEN - 1);
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        Observation {
            comm,
            tier,
            avg_runtime_ns,
            samples,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Profile {
    tier: Tier,
    runtime_ewma_ns: f64,
    streak: u32,
    observations: u32,
    confident: bool,
    last_samples: u32,
    last_runtime_ns: u64,
    /// `--coop-learn`: seconds in a row a process of this name showed cooperation, and whether
    /// the name is learned (a candidate only: BPF still wants the process's own proof).
    coop_streak: u32,
    coop: bool,
    /// Recency stamp; also this profile's key in `ProcDb::lru`.
    seen: u64,
}

impl Profile {
    fn first(o: &Observation, seen: u64) -> Profile {
        Profile {
            tier: o.tier,
            runtime_ewma_ns: o.avg_runtime_ns as f64,
            streak: 0,
            observations: 1,
            confident: false,
            last_samples: o.samples,
            last_runtime_ns: o.avg_runtime_ns,
            coop_streak: 0,
            coop: false,
            seen,
        }
    }

    fn is_reread(&self, o: &Observation) -> bool {
        o.samples == self.last_samples
            && o.tier == self.tier
            && o.avg_runtime_ns == self.last_runtime_ns
    }

    fn learn(&mut self, o: &Observation) {
        let rt = o.avg_runtime_ns as f64;
        if o.tier != self.tier {
            self.tier = o.tier;
            self.runtime_ewma_ns = rt;
            self.streak = 0;
            self.confident = false;
        } else {
            let drift =
                (rt - self.runtime_ewma_ns).abs() / self.runtime_ewma_ns.max(MIN_RUNTIME_NS);
            self.streak = if drift <= CONVERGE_FRAC {
                self.streak.saturating_add(1)
            } else {
                0
            };
            self.runtime_ewma_ns += EWMA_ALPHA * (rt - self.runtime_ewma_ns);
            if self.streak >= CONFIDENT_STREAK {
                self.confident = true;
            }
        }
        self.observations = self.observations.saturating_add(1);
        self.last_samples = o.samples;
        self.last_runtime_ns = o.avg_runtime_ns;
    }
}

/// A read-only view of one profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileView {
    pub tier: Tier,
    pub runtime_ewma_ns: f64,
    pub streak: u32,
    pub observations: u32,
    pub confident: bool,
    pub coop: bool,
}

#[derive(Clone, Debug)]
pub struct ProcDb {
    profiles: HashMap<[u8; COMM_LEN], Profile>,
    /// Recency stamp -> comm, oldest first: the eviction order.
    lru: BTreeMap<u64, [u8; COMM_LEN]>,
    next_seen: u64,
    capacity: usize,
    dirty: bool,
    last_save: Option<Instant>,
    /// The load left a file at the path that it could not use: saves never replace it.
    keep_existing: bool,
}

impl Default for ProcDb {
    fn default() -> Self {
        ProcDb::with_capacity(DEFAULT_CAPACITY)
    }
}

impl ProcDb {
    pub fn with_capacity(capacity: usize) -> ProcDb {
        ProcDb {
            profiles: HashMap::new(),
            lru: BTreeMap::new(),
            next_seen: 0,
            capacity: capacity.max(1),
            dirty: false,
            last_save: None,
            keep_existing: false,
        }
    }

    pub fn len(&self) -> usize {
        self.profiles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    pub fn confident_count(&self) -> usize {
        self.profiles.values().filter(|p| p.confident).count()
    }

    /// True when there are changes not yet saved.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub fn get(&self, comm: &[u8; COMM_LEN]) -> Option<ProfileView> {
        self.profiles.get(comm).map(|p| ProfileView {
            tier: p.tier,
            runtime_ewma_ns: p.runtime_ewma_ns,
            streak: p.streak,
            observations: p.observations,
            confident: p.confident,
            coop: p.coop,
        })
    }

    fn stamp(&mut self) -> u64 {
        self.next_seen += 1;
        self.next_seen
    }

    /// Feeds one observation.
    pub fn observe(&mut self, o: &Observation) {
        if o.comm[0] == 0 {
            return;
        }
        let seen = self.stamp();
        if let Some(p) = self.profiles.get_mut(&o.comm) {
            self.lru.remove(&p.seen);
            self.lru.insert(seen, o.comm);
            p.seen = seen;
            if !p.is_reread(o) {
                p.learn(o);
                self.dirty = true;
            }
            return;
        }
        if self.profiles.len() >= self.capacity
            && let Some((_, old)) = self.lru.pop_first()
        {
            self.profiles.remove(&old);
        }
        self.profiles.insert(o.comm, Profile::first(o, seen));
        self.lru.insert(seen, o.comm);
        self.dirty = true;
    }

    /// `--coop-learn`: one second's verdict on a process of this name: it showed cooperation,
    /// or it held the treatment and stopped showing it (which unlearns the name at once: a
    /// wrong name costs the others their CPU share, a missed one only a second of learning).
    pub fn observe_coop(&mut self, comm: &[u8; COMM_LEN], showed: bool) {
        if comm[0] == 0 {
            return;
        }
        if !self.profiles.contains_key(comm) {
            if !showed {
                return;
            }
            // A tier is needed for the row; unconfident, it is never offered to BPF.
            self.observe(&Observation {
                comm: *comm,
                tier: Tier::Batch,
                avg_runtime_ns: 0,
                samples: 0,
            });
        }
        let seen = self.stamp();
        let Some(p) = self.profiles.get_mut(comm) else {
            return;
        };
        self.lru.remove(&p.seen);
        self.lru.insert(seen, *comm);
        p.seen = seen;
        let (streak, coop) = if showed {
            let s = p.coop_streak.saturating_add(1);
            (s, p.coop || s >= COOP_STREAK)
        } else {
            (0, false)
        };
        if (streak, coop) != (p.coop_streak, p.coop) {
            p.coop_streak = streak;
            p.coop = coop;
            self.dirty = true;
        }
    }

    /// The names learned as cooperative groups', most recently seen first.
    pub fn coop_names(&self) -> Vec<CommKey> {
        self.lru
            .values()
            .rev()
            .filter(|c| self.profiles[*c].coop)
            .map(|c| CommKey { comm: *c })
            .collect()
    }

    /// Feeds one snapshot of the map.
    pub fn observe_all<'a>(&mut self, obs: impl IntoIterator<Item = &'a Observation>) {
        for o in obs {
            self.observe(o);
        }
    }

    /// Confident profiles for BPF's warm-start map, most recently seen first (if the map is
    /// smaller, keep a prefix). `samples` is the publishing task's BPF sample count.
    pub fn confident(&self) -> Vec<(CommKey, TaskClassEntry)> {
        self.lru
            .values()
            .rev()
            .filter_map(|comm| {
                let p = &self.profiles[comm];
                p.confident.then(|| {
                    (
                        CommKey { comm: *comm },
                        TaskClassEntry {
                            tier: p.tier as u8,
                            confident: 1,
                            _pad0: 0,
                            samples: p.last_samples,
                            avg_runtime_ns: p.runtime_ewma_ns.round() as u64,
                        },
                    )
                })
            })
            .collect()
    }

    fn to_persisted(&self) -> Vec<PersistedEntry> {
        self.lru
            .values()
            .map(|comm| {
                let p = &self.profiles[comm];
                PersistedEntry {
                    comm: *comm,
                    tier: p.tier as u8,
                    runtime_ewma_ns: p.runtime_ewma_ns,
                    streak: p.streak,
                    observations: p.observations,
                    confident: p.confident,
                    last_samples: p.last_samples,
                    last_runtime_ns: p.last_runtime_ns,
                    coop_streak: p.coop_streak,
                    coop: p.coop,
                }
            })
            .collect()
    }

    /// Loads `path`. Never fails: whatever went wrong is in the outcome, and the database is
    /// empty unless the file was good. A damaged file is set aside, never overwritten; one that
    /// could not be read or set aside stays where it is, and saves leave it alone.
    pub fn load(path: &Path, capacity: usize) -> (ProcDb, LoadOutcome) {
        let (entries, outcome) = store::read(path);
        let mut db = ProcDb::with_capacity(capacity);
        db.keep_existing = outcome.left_a_file_unloaded();
        let dropped = entries.len().saturating_sub(db.capacity);
        for e in entries.iter().skip(dropped) {
            let seen = db.stamp();
            let p = Profile {
                tier: Tier::from_u8(e.tier).unwrap_or(Tier::Batch),
                runtime_ewma_ns: e.runtime_ewma_ns,
                streak: e.streak,
                observations: e.observations,
                confident: e.confident,
                last_samples: e.last_samples,
                last_runtime_ns: e.last_runtime_ns,
                coop_streak: e.coop_streak,
                coop: e.coop,
                seen,
            };
            // A name stored twice keeps its later, more recent copy.
            if let Some(old) = db.profiles.insert(e.comm, p) {
                db.lru.remove(&old.seen);
            }
            db.lru.insert(seen, e.comm);
        }
        let outcome = match outcome {
            LoadOutcome::Loaded { .. } => LoadOutcome::Loaded {
                entries: db.len(),
                dropped,
            },
            other => other,
        };
        (db, outcome)
    }

    /// Writes the database atomically to `path`. On error the caller logs; nothing panics and
    /// the previous file, if any, is intact. An unsynced write is still a save: the file is
    /// complete, so it is not retried. After a load that left a file it could not use, a save
    /// only creates the file once that one is gone; until then it fails with an error
    /// [`is_kept`] recognises.
    pub fn save(&mut self, path: &Path) -> io::Result<Durability> {
        let replace = if self.keep_existing {
            store::Replace::Never
        } else {
            store::Replace::Allowed
        };
        let durability = store::write_atomic(path, &format::encode(&self.to_persisted()), replace)?;
        self.dirty = false;
        self.keep_existing = false;
        Ok(durability)
    }

    /// Saves when the database changed and [`SAVE_PERIOD`] has passed since the last attempt;
    /// the first call only starts the period. `None` when nothing was attempted. A failed
    /// attempt also waits a full period, so an unwritable cache warns once a minute, not once a
    /// second.
    pub fn save_if_due(&mut self, path: &Path, now: Instant) -> Option<io::Result<Durability>> {
        self.save_if_due_every(path, now, SAVE_PERIOD)
    }

    pub fn save_if_due_every(
        &mut self,
        path: &Path,
        now: Instant,
        period: Duration,
    ) -> Option<io::Result<Durability>> {
        let last = *self.last_save.get_or_insert(now);
        if !self.dirty || now.saturating_duration_since(last) < period {
            return None;
        }
        self.last_save = Some(now);
        Some(self.save(path))
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
