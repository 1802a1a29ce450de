// SPDX-License-Identifier: GPL-2.0-only
//! `--coop-learn`: the daemon's half of recognising a cooperative group by behaviour (issue #34;
//! BPF's half is src/bpf/coop_learn.bpf.h). Once a second it reads each process's counters
//! (`coop_procs`: mate events, i.e. wakeups between its own threads and sched_yield()s of its
//! BATCH threads; spins, i.e. its BATCH threads' runs that ended still runnable, the sleeps of
//! those threads, and how often the spins came from another thread than before; and crowded
//! enqueues, i.e. its threads finding no idle CPU) and judges the second:
//! - a process showed cooperation when its crowded enqueues grew by at least [`MIN_CROWDED`]
//!   and either its mate events by [`MIN_MATES`] (a team whose waits sleep or yield) or its
//!   threads co-ran (a team whose waits spin: [`corun`]); the procdb then counts one for its
//!   name, and learns the name after [`crate::procdb::COOP_STREAK`] such seconds;
//! - a process that holds the treatment and showed neither mate events nor co-running for
//!   [`QUIET_WINDOWS`] seconds loses it (its entry is deleted); a live one also unlearns its
//!   name.
//!
//! What a learned name buys is bounded: BPF gives the treatment only to a process of that name
//! whose own threads then show the behaviour (COOP_PROOF mate events, or co-running) and a
//! crowded enqueue, and this takes it away again within [`QUIET_WINDOWS`] seconds of the
//! behaviour stopping.

use std::collections::{HashMap, HashSet};

use crate::bpf_intf::{COOP_SLEEP_RATIO, CommKey, CoopProc};

/// Mate events in a second from which a process waits on its own threads. A spin-yield team
/// makes thousands a second, a libgomp team with passive waits one per thread per barrier; a
/// thread pool's occasional job hand-off makes a few.
pub const MIN_MATES: u64 = 64;
/// Crowded enqueues in the same second: its threads wanted more CPUs than they found idle.
pub const MIN_CROWDED: u64 = 8;
/// Runs of its threads in a second that ended still runnable (spins). Two threads of an active
/// wait cut short every slice or group turn make some fifty; a thread that is seldom cut
/// (a CPU it keeps to itself) makes none.
pub const MIN_SPINS: u64 = 16;
/// Flushes of spins in that second that came from another thread than the one before: at least
/// two threads were cut short while runnable, turn about.
pub const MIN_SPINNERS: u64 = 2;
/// Seconds without a mate event or co-running before a process's treatment is withdrawn.
pub const QUIET_WINDOWS: u32 = 2;

/// Which behaviour a process showed in a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// Its threads woke each other or yielded ([`MIN_MATES`]).
    Mates,
    /// Two or more of its threads were runnable at once and rarely slept ([`corun`]).
    Corun,
}

/// What one second showed about one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It waited on its own threads, or co-ran, while crowded.
    Showed(u32, Evidence),
    /// It held the treatment and stopped showing the behaviour: withdraw it.
    Withdraw(u32),
}

/// One second's growth of a process's spin counters: at least `min_spins` runs cut short while
/// runnable, from [`MIN_SPINNERS`] turns of different threads, with at most one sleep per
/// COOP_SLEEP_RATIO of them. A team that spins at its barriers never sleeps; threads that block
/// on pipes or locks (hackbench -T) sleep at every message. Single-threaded busy loops, however
/// many, make no turns: each process has one thread.
pub fn corun(spins: u64, sleeps: u64, spinners: u64, min_spins: u64) -> bool {
    spins >= min_spins.max(1)
        && spinners >= MIN_SPINNERS
        && sleeps.saturating_mul(u64::from(COOP_SLEEP_RATIO)) <= spins
}

#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    mates: u64,
    crowded: u64,
    spins: u64,
    sleeps: u64,
    spinners: u64,
    quiet: u32,
}

/// The counters as last read, per tgid.
#[derive(Debug, Default)]
pub struct Tracker {
    seen: HashMap<u32, Seen>,
}

impl Tracker {
    /// Judges one second from a full read of the map. An entry not seen before, or whose
    /// counters went back (deleted and made anew), counts from zero.
    pub fn window(&mut self, rows: &[(u32, CoopProc)]) -> Vec<Verdict> {
        let mut out = Vec::new();
        let mut next = HashMap::with_capacity(rows.len());
        for &(tgid, e) in rows {
            let spinners = u64::from(e.spinners);
            let prev = self
                .seen
                .get(&tgid)
                .copied()
                .filter(|s| e.mates >= s.mates && e.spins >= s.spins);
            let base = prev.unwrap_or_default();
            let mates = e.mates - base.mates;
            let crowded = e.crowded.saturating_sub(base.crowded);
            let spins = e.spins - base.spins;
            let sleeps = e.sleeps.saturating_sub(base.sleeps);
            let turns = spinners.saturating_sub(base.spinners);
            let corunning = corun(spins, sleeps, turns, MIN_SPINS);
            if crowded >= MIN_CROWDED {
                if mates >= MIN_MATES {
                    out.push(Verdict::Showed(tgid, Evidence::Mates));
                } else if corunning {
                    out.push(Verdict::Showed(tgid, Evidence::Corun));
                }
            }
            // Co-running below MIN_SPINS still keeps the treatment: a granted team's threads
            // are cut short only when a group turn ends.
            let active = mates > 0 || corun(spins, sleeps, turns, 1);
            let quiet = if active { 0 } else { base.quiet + 1 };
            if e.granted != 0 && quiet >= QUIET_WINDOWS {
                out.push(Verdict::Withdraw(tgid));
                continue;
            }
            next.insert(
                tgid,
                Seen {
                    mates: e.mates,
                    crowded: e.crowded,
                    spins: e.spins,
                    sleeps: e.sleeps,
                    spinners,
                    quiet,
                },
            );
        }
        self.seen = next;
        out
    }
}

/// The learned names BPF's `coop_comms` should gain and lose.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NameDelta {
    pub put: Vec<CommKey>,
    pub remove: Vec<CommKey>,
}

impl NameDelta {
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.remove.is_empty()
    }
}

/// The learned names `coop_comms` holds, so a tick writes only what changed.
#[derive(Debug, Default)]
pub struct NameMirror {
    held: HashSet<CommKey>,
}

impl NameMirror {
    /// From what the map holds to `learned` (most recent first), leaving out `forced` names
    /// (theirs is the administrator's value) and keeping at most `room` names.
    pub fn delta(&self, learned: &[CommKey], forced: &[CommKey], room: usize) -> NameDelta {
        let want: Vec<CommKey> = learned
            .iter()
            .filter(|k| !forced.contains(k))
            .take(room)
            .copied()
            .collect();
        let mut remove: Vec<CommKey> = self
            .held
            .iter()
            .filter(|k| !want.contains(k))
            .copied()
            .collect();
        remove.sort_by_key(|k| k.comm);
        let put = want
            .into_iter()
            .filter(|k| !self.held.contains(k))
            .collect();
        NameDelta { put, remove }
    }

    pub fn applied(&mut self, d: &NameDelta) {
        for k in &d.remove {
            self.held.remove(k);
        }
        self.held.extend(d.put.iter().copied());
    }

    /// A freshly loaded BPF program holds none.
    pub fn reset(&mut self) {
        self.held.clear();
    }
}

/// A process's name as /proc/TGID/comm gives it (the leader's comm, as BPF reads it).
pub fn comm_of(tgid: u32) -> Option<CommKey> {
    let text = std::fs::read(format!("/proc/{tgid}/comm")).ok()?;
    let name = text.strip_suffix(b"\n").unwrap_or(&text);
    if name.is_empty() {
        return None;
    }
    let mut k = CommKey::default();
    let n = name.len().min(k.comm.len() - 1);
    k.comm[..n].copy_from_slice(&name[..n]);
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(mates: u64, crowded: u64, granted: bool) -> CoopProc {
        CoopProc {
            mates,
            crowded,
            granted: u32::from(granted),
            ..CoopProc::default()
        }
    }

    /// Counters of a process that only spins: `spins` runs cut short, `sleeps`, `spinners` turns.
    fn spinning(crowded: u64, spins: u64, sleeps: u64, spinners: u32, granted: bool) -> CoopProc {
        CoopProc {
            crowded,
            spins,
            sleeps,
            spinners,
            granted: u32::from(granted),
            ..CoopProc::default()
        }
    }

    fn key(name: &str) -> CommKey {
        let mut k = CommKey::default();
        k.comm[..name.len()].copy_from_slice(name.as_bytes());
        k
    }

    #[test]
    fn a_second_of_mate_events_while_crowded_shows_cooperation() {
        let mut t = Tracker::default();
        assert_eq!(
            t.window(&[(7, proc(64, 8, false))]),
            [Verdict::Showed(7, Evidence::Mates)]
        );
        // The next second counts only what grew.
        assert_eq!(t.window(&[(7, proc(100, 100, false))]), []);
        assert_eq!(
            t.window(&[(7, proc(200, 108, false))]),
            [Verdict::Showed(7, Evidence::Mates)]
        );
    }

    #[test]
    fn mate_events_on_idle_cpus_or_crowding_alone_show_nothing() {
        let mut t = Tracker::default();
        // One team alone: its wakeups find idle CPUs.
        assert_eq!(t.window(&[(1, proc(5000, 2, false))]), []);
        // Crowded, but its threads never wait on each other.
        assert_eq!(t.window(&[(2, proc(10, 5000, false))]), []);
    }

    #[test]
    fn the_treatment_is_withdrawn_when_mate_events_stop() {
        let mut t = Tracker::default();
        t.window(&[(3, proc(500, 50, true))]);
        assert_eq!(t.window(&[(3, proc(500, 90, true))]), []);
        assert_eq!(
            t.window(&[(3, proc(500, 120, true))]),
            [Verdict::Withdraw(3)]
        );
        // Deleted and made anew by BPF: counted from zero, and quiet again from the start.
        assert_eq!(t.window(&[(3, proc(16, 1, false))]), []);
        // Without the treatment, quiet seconds withdraw nothing.
        let mut u = Tracker::default();
        for _ in 0..5 {
            assert_eq!(u.window(&[(4, proc(40, 0, false))]), []);
        }
    }

    #[test]
    fn threads_cut_short_in_turn_without_sleeping_show_cooperation() {
        let mut t = Tracker::default();
        assert_eq!(
            t.window(&[(5, spinning(8, 16, 0, 2, false))]),
            [Verdict::Showed(5, Evidence::Corun)]
        );
        // Only the growth counts: 16 more spins and 2 more turns, a sleep per 4 spins.
        assert_eq!(
            t.window(&[(5, spinning(16, 32, 4, 4, false))]),
            [Verdict::Showed(5, Evidence::Corun)]
        );
        // Mate events, when there are enough, name the evidence first.
        assert_eq!(
            t.window(&[(
                5,
                CoopProc {
                    mates: 64,
                    ..spinning(24, 48, 4, 6, false)
                }
            )]),
            [Verdict::Showed(5, Evidence::Mates)]
        );
    }

    #[test]
    fn one_spinning_thread_sleepers_or_idle_cpus_show_no_co_running() {
        let mut t = Tracker::default();
        // One thread's flushes: a turn for its first flush only.
        assert_eq!(t.window(&[(1, spinning(50, 400, 0, 1, false))]), []);
        // Threads that sleep more than once per 4 runs cut short (message passing).
        assert_eq!(t.window(&[(2, spinning(50, 400, 101, 40, false))]), []);
        // Co-running on CPUs it never had to wait for.
        assert_eq!(t.window(&[(3, spinning(7, 400, 0, 40, false))]), []);
        // Too few spins in the second.
        assert_eq!(t.window(&[(4, spinning(50, 15, 0, 2, false))]), []);
        assert!(corun(16, 4, 2, MIN_SPINS));
        assert!(!corun(16, 5, 2, MIN_SPINS));
        assert!(!corun(0, 0, 2, 0), "no spins are never co-running");
    }

    #[test]
    fn co_running_keeps_the_treatment_and_its_end_withdraws_it() {
        let mut t = Tracker::default();
        t.window(&[(6, spinning(10, 100, 0, 10, true))]);
        // A granted team cut short only at its turns' ends: fewer spins, still going on.
        for i in 1..=4 {
            assert_eq!(
                t.window(&[(6, spinning(10 + i, 100 + 8 * i, 0, 10 + 2 * i as u32, true))]),
                []
            );
        }
        // Its threads now sleep at every run: the behaviour stopped.
        assert_eq!(t.window(&[(6, spinning(20, 140, 40, 20, true))]), []);
        assert_eq!(
            t.window(&[(6, spinning(20, 140, 40, 20, true))]),
            [Verdict::Withdraw(6)]
        );
    }

    #[test]
    fn counters_that_went_back_count_from_zero() {
        let mut t = Tracker::default();
        t.window(&[(9, proc(10_000, 10_000, false))]);
        assert_eq!(
            t.window(&[(9, proc(64, 8, false))]),
            [Verdict::Showed(9, Evidence::Mates)]
        );
        // An entry gone from the map is forgotten.
        t.window(&[]);
        assert_eq!(
            t.window(&[(9, proc(64, 8, false))]),
            [Verdict::Showed(9, Evidence::Mates)]
        );
    }

    #[test]
    fn the_mirror_writes_only_changes_and_leaves_forced_names_alone() {
        let mut m = NameMirror::default();
        let d = m.delta(
            &[key("omp"), key("blas"), key("forced")],
            &[key("forced")],
            8,
        );
        assert_eq!(d.put, [key("omp"), key("blas")]);
        assert!(d.remove.is_empty());
        m.applied(&d);
        assert!(m.delta(&[key("omp"), key("blas")], &[], 8).is_empty());
        let d = m.delta(&[key("blas"), key("new")], &[], 8);
        assert_eq!(d.put, [key("new")]);
        assert_eq!(d.remove, [key("omp")]);
        m.applied(&d);
        // Room for one: the most recent stays.
        let d = m.delta(&[key("new"), key("blas")], &[], 1);
        assert_eq!(d.remove, [key("blas")]);
        m.reset();
        assert_eq!(m.delta(&[key("new")], &[], 1).put, [key("new")]);
    }

    #[test]
    fn comm_of_reads_this_process() {
        let me = comm_of(std::process::id()).expect("our own /proc entry");
        assert_ne!(me.comm[0], 0);
        assert_eq!(comm_of(u32::MAX), None);
    }
}
