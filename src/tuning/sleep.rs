// SPDX-License-Identifier: GPL-2.0-only
//! The sleep pattern: how much of the machine's sleeping looks like waiting on I/O, the coarse
//! bucket that share falls in, and how it shortens the batch slice.
//!
//! "I/O-like" is defined by duration alone, because that is all the sleep histogram holds: a
//! sleep shorter than 2^22 ns (~4.2 ms) counts. Storage and network waits, pipe and futex
//! hand-offs finish in microseconds to a few milliseconds, while timer ticks, frame pacing
//! (240 Hz and slower) and idle waits for a user last longer. Short sleepers are the tasks that
//! come back wanting a CPU soon, which is what the batch slice makes them wait for.

use crate::bpf_intf::NR_SLEEP_BUCKETS;

/// Sleep buckets below this index (sleeps under 2^22 ns) count as I/O-like.
pub const IO_LIKE_BELOW_BUCKET: usize = 22;

/// At or below this share the batch slice is left alone.
pub const SLEEP_ADJUST_FROM_PCT: f64 = 20.0;
/// At or above this share the batch slice is cut to [`SLEEP_ADJUST_MIN_FACTOR`].
pub const SLEEP_ADJUST_FULL_PCT: f64 = 80.0;
/// Halving, not less: a batch slice still has to amortise a context switch and a cache refill.
pub const SLEEP_ADJUST_MIN_FACTOR: f64 = 0.5;

/// Bucket boundaries of the I/O share, and the hysteresis band around them.
pub const IO_LOW_BELOW_PCT: f64 = 20.0;
pub const IO_HIGH_FROM_PCT: f64 = 60.0;
pub const IO_HYSTERESIS_PCT: f64 = 5.0;

/// Percentage of this second's sleeps that were I/O-like, `None` if nothing slept.
pub fn io_share_pct(sleep: &[u64; NR_SLEEP_BUCKETS]) -> Option<f64> {
    let total: u64 = sleep.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if total == 0 {
        return None;
    }
    let short: u64 = sleep[..IO_LIKE_BELOW_BUCKET]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b));
    Some(short as f64 * 100.0 / total as f64)
}

/// Multiplier for `batch_slice_ns`: 1.0 up to 20 % I/O-like sleeping, falling linearly to 0.5 at
/// 80 %. A batch task that sits on a CPU for a full slice makes every short sleeper that wakes
/// behind it wait that long; the more of the machine's sleeping is short, the more wakeups pay
/// that price, while a compute-only mix keeps the long slice its throughput wants.
pub fn batch_slice_factor(io_pct: Option<f64>) -> f64 {
    let Some(io) = io_pct.filter(|v| v.is_finite()) else {
        return 1.0;
    };
    let span = SLEEP_ADJUST_FULL_PCT - SLEEP_ADJUST_FROM_PCT;
    let t = ((io - SLEEP_ADJUST_FROM_PCT) / span).clamp(0.0, 1.0);
    1.0 - (1.0 - SLEEP_ADJUST_MIN_FACTOR) * t
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoBucket {
    Low,
    Mid,
    High,
}

impl IoBucket {
    /// The bucket `io_pct` reads as while in `self`; boundaries move outward by the band.
    fn observe(self, io_pct: f64) -> IoBucket {
        let h = IO_HYSTERESIS_PCT;
        let (low_below, high_from) = match self {
            IoBucket::Low => (IO_LOW_BELOW_PCT + h, IO_HIGH_FROM_PCT + h),
            IoBucket::Mid => (IO_LOW_BELOW_PCT - h, IO_HIGH_FROM_PCT + h),
            IoBucket::High => (IO_LOW_BELOW_PCT - h, IO_HIGH_FROM_PCT - h),
        };
        if io_pct >= high_from {
            IoBucket::High
        } else if io_pct < low_below {
            IoBucket::Low
        } else {
            IoBucket::Mid
        }
    }

    /// The bucket with no hysteresis, used for the first reading.
    pub fn of(io_pct: f64) -> IoBucket {
        if io_pct >= IO_HIGH_FROM_PCT {
            IoBucket::High
        } else if io_pct < IO_LOW_BELOW_PCT {
            IoBucket::Low
        } else {
            IoBucket::Mid
        }
    }
}

/// Follows the I/O bucket and reports crossings. The band keeps a share hovering on a boundary
/// (58, 62, 58, ...) from reporting a crossing every second.
#[derive(Clone, Debug, Default)]
pub struct IoBucketTracker {
    current: Option<IoBucket>,
}

impl IoBucketTracker {
    pub fn current(&self) -> Option<IoBucket> {
        self.current
    }

    /// Feeds one tick; returns `(from, to)` when the bucket changed. The first reading only sets
    /// the bucket: with no previous pattern there is nothing an expert mispredicted.
    pub fn update(&mut self, io_pct: Option<f64>) -> Option<(IoBucket, IoBucket)> {
        let io = io_pct.filter(|v| v.is_finite())?;
        match self.current {
            None => {
                self.current = Some(IoBucket::of(io));
                None
            }
            Some(cur) => {
                let next = cur.observe(io);
                self.current = Some(next);
                (next != cur).then_some((cur, next))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_share_counts_sleeps_under_the_threshold() {
        let mut s = [0u64; NR_SLEEP_BUCKETS];
        assert_eq!(io_share_pct(&s), None);
        s[15] = 30; // ~33 us
        s[IO_LIKE_BELOW_BUCKET - 1] = 30; // ~2-4 ms
        s[IO_LIKE_BELOW_BUCKET] = 40; // 4.2 ms and up: timer-like
        assert!((io_share_pct(&s).unwrap() - 60.0).abs() < 1e-9);
    }

    #[test]
    fn batch_factor_falls_linearly_between_the_bounds() {
        assert_eq!(batch_slice_factor(None), 1.0);
        assert_eq!(batch_slice_factor(Some(10.0)), 1.0);
        assert!((batch_slice_factor(Some(50.0)) - 0.75).abs() < 1e-12);
        assert_eq!(batch_slice_factor(Some(95.0)), 0.5);
        assert_eq!(batch_slice_factor(Some(f64::NAN)), 1.0);
    }

    #[test]
    fn tracker_reports_crossings_but_not_boundary_jitter() {
        let mut t = IoBucketTracker::default();
        assert_eq!(
            t.update(Some(50.0)),
            None,
            "first reading only sets the bucket"
        );
        assert_eq!(t.current(), Some(IoBucket::Mid));
        for v in [58.0, 62.0, 58.0, 64.0, 57.0] {
            assert_eq!(t.update(Some(v)), None, "jitter at {v}");
        }
        assert_eq!(t.update(Some(70.0)), Some((IoBucket::Mid, IoBucket::High)));
        assert_eq!(t.update(Some(58.0)), None, "band holds High");
        assert_eq!(t.update(Some(54.0)), Some((IoBucket::High, IoBucket::Mid)));
        assert_eq!(t.update(None), None, "no sleeps: no evidence");
        assert_eq!(t.update(Some(10.0)), Some((IoBucket::Mid, IoBucket::Low)));
        assert_eq!(t.update(Some(22.0)), None);
        assert_eq!(t.update(Some(26.0)), Some((IoBucket::Low, IoBucket::Mid)));
    }
}
