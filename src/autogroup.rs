// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's autogroups, which BPF charges as top-level pseudo-groups (src/bpf/autogroup.bpf.h).
//! BPF reads each task's autogroup by itself, but neither the sysctl that turns them on nor the end
//! of an autogroup reaches it: each interval the daemon passes the sysctl on and removes the
//! pseudo-groups that have stayed idle.

use crate::bpf_intf::AUTOGROUP_KEY_SHIFT;
use std::collections::HashMap;

/// On (1) by default wherever the kernel has `CONFIG_SCHED_AUTOGROUP`; absent without it.
pub const SYSCTL: &str = "/proc/sys/kernel/sched_autogroup_enabled";

const KEY: u64 = 1 << AUTOGROUP_KEY_SHIFT;

/// Intervals without a runnable task or CPU time after which a pseudo-group goes. Removing one
/// whose autogroup lives on costs little: its next task makes it again, at its nice, with a group
/// clock that an idle group keeps at the virtual clock's now anyway (weight.bpf.h).
pub const IDLE_INTERVALS: u32 = 10;

/// Whether BPF's group `id` is an autogroup's.
pub fn is_key(id: u64) -> bool {
    id & KEY != 0
}

/// How the statistics name an autogroup: as /proc/PID/autogroup does, without the slash.
pub fn name(id: u64) -> String {
    format!("autogroup-{}", id & !KEY)
}

/// The sysctl's text read as the kernel does (any non-zero number is on); unreadable is off,
/// as a kernel without autogroups behaves.
pub fn enabled(sysctl: Option<&str>) -> bool {
    sysctl
        .and_then(|s| s.trim().parse::<u64>().ok())
        .is_some_and(|v| v != 0)
}

/// Whether the running kernel has autogroups on now.
pub fn sysctl_on() -> bool {
    enabled(std::fs::read_to_string(SYSCTL).ok().as_deref())
}

/// One pseudo-group's reading for the interval: its key, its cumulative CPU time, and whether a
/// task of it is runnable now.
pub struct Reading {
    pub id: u64,
    pub runtime_ns: u64,
    pub runnable: bool,
}

/// Counts each pseudo-group's idle intervals.
#[derive(Default)]
pub struct Reaper {
    idle: HashMap<u64, (u64, u32)>,
}

impl Reaper {
    /// The keys of `readings` (every pseudo-group BPF has, read this interval) idle for
    /// [`IDLE_INTERVALS`] in a row. Groups not read again are forgotten.
    pub fn idle(&mut self, readings: &[Reading]) -> Vec<u64> {
        let mut next = HashMap::with_capacity(readings.len());
        let mut out = Vec::new();
        for r in readings {
            let n = match self.idle.get(&r.id) {
                Some(&(ran, n)) if !r.runnable && ran == r.runtime_ns => n + 1,
                _ => 0,
            };
            if n >= IDLE_INTERVALS {
                out.push(r.id);
            } else {
                next.insert(r.id, (r.runtime_ns, n));
            }
        }
        self.idle = next;
        out
    }

    /// A new BPF instance has new groups.
    pub fn reset(&mut self) {
        self.idle.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: u64, runtime_ns: u64, runnable: bool) -> Reading {
        Reading {
            id: KEY | id,
            runtime_ns,
            runnable,
        }
    }

    #[test]
    fn keys_and_names() {
        assert!(is_key(KEY | 7) && !is_key(7));
        assert_eq!(name(KEY | 42), "autogroup-42");
    }

    #[test]
    fn sysctl_text_reads_as_the_kernel_does() {
        assert!(enabled(Some("1\n")));
        assert!(enabled(Some("2")));
        assert!(!enabled(Some("0\n")));
        assert!(!enabled(Some("on")));
        assert!(!enabled(None));
    }

    #[test]
    fn only_a_group_idle_for_the_whole_stretch_goes() {
        let mut reaper = Reaper::default();
        // Group 1 sleeps throughout; group 2 runs a little each interval; group 3 is runnable
        // without having run (a task queued behind others).
        for i in 0..IDLE_INTERVALS {
            let gone = reaper.idle(&[r(1, 5, false), r(2, u64::from(i), false), r(3, 9, true)]);
            assert!(gone.is_empty(), "interval {i}: {gone:?}");
        }
        let gone = reaper.idle(&[r(1, 5, false), r(2, 99, false), r(3, 9, true)]);
        assert_eq!(gone, vec![KEY | 1]);
        // Removed, it is forgotten: made again and idle, it waits the whole stretch again.
        assert!(reaper.idle(&[r(1, 0, false)]).is_empty());
        // A group that ran in between starts its count again.
        let mut reaper = Reaper::default();
        for _ in 0..IDLE_INTERVALS - 1 {
            reaper.idle(&[r(4, 1, false)]);
        }
        reaper.idle(&[r(4, 2, false)]);
        for _ in 0..IDLE_INTERVALS - 1 {
            assert!(reaper.idle(&[r(4, 2, false)]).is_empty());
        }
        assert_eq!(reaper.idle(&[r(4, 2, false)]), vec![KEY | 4]);
    }

    #[test]
    fn a_group_not_read_again_is_forgotten() {
        let mut reaper = Reaper::default();
        for _ in 0..IDLE_INTERVALS {
            reaper.idle(&[r(1, 5, false)]);
        }
        // Gone from BPF's map (removed elsewhere, or a reload): the next sighting counts anew.
        reaper.idle(&[]);
        assert!(reaper.idle(&[r(1, 5, false)]).is_empty());
        reaper.reset();
        assert!(reaper.idle(&[r(1, 5, false)]).is_empty());
    }
}
