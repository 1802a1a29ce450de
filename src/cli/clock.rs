// SPDX-License-Identifier: GPL-2.0-only
//! CLOCK_MONOTONIC in nanoseconds, absolute sleeps and timed spins. Plain `u64` nanoseconds
//! instead of `Instant`: the probe needs the raw value to hand `clock_nanosleep` an absolute
//! deadline on the same clock it reads back.

use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags, clock_gettime, clock_nanosleep};
use std::io;
use std::time::Duration;

pub(crate) fn now_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    Duration::from(ts).as_nanos() as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slept {
    Reached,
    /// A signal arrived first; the caller decides whether to stop or sleep again.
    Interrupted,
}

/// Sleeps until `deadline_ns` on CLOCK_MONOTONIC. Absolute, so a retry after EINTR or a late
/// start never stretches the period.
pub(crate) fn sleep_until(deadline_ns: u64) -> io::Result<Slept> {
    let deadline = TimeSpec::from(Duration::from_nanos(deadline_ns));
    match clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &deadline,
    ) {
        Ok(_) => Ok(Slept::Reached),
        Err(Errno::EINTR) => Ok(Slept::Interrupted),
        Err(e) => Err(e.into()),
    }
}

/// Busy-waits until `deadline_ns`: "work" that stays on the CPU the whole time, so the scheduler
/// sees a task with real runtime rather than one that blocks again at once.
pub(crate) fn spin_until(deadline_ns: u64) -> u64 {
    loop {
        let now = now_ns();
        if now >= deadline_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// Seconds to whole nanoseconds, refusing what is not a sensible length of time (NaN fails the
/// range check too).
pub(crate) fn seconds_to_ns(what: &str, s: f64) -> anyhow::Result<u64> {
    if !(0.0..=1e7).contains(&s) {
        anyhow::bail!("{what} must be between 0 and 10 000 000 seconds, got {s}");
    }
    Ok((s * 1e9).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_a_past_deadline_returns_at_once() {
        let t0 = now_ns();
        assert_eq!(
            sleep_until(t0.saturating_sub(1_000)).unwrap(),
            Slept::Reached
        );
        assert!(now_ns() - t0 < 1_000_000_000);
    }

    #[test]
    fn sleep_and_spin_reach_their_deadlines() {
        let d = now_ns() + 2_000_000;
        assert_eq!(sleep_until(d).unwrap(), Slept::Reached);
        assert!(now_ns() >= d);
        let d = now_ns() + 200_000;
        assert!(spin_until(d) >= d);
    }
}
