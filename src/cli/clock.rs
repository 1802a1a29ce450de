// SPDX-License-Identifier: GPL-2.0-only
//! CLOCK_MONOTONIC in nanoseconds, absolute sleeps and timed spins. Plain `u64` nanoseconds
//! instead of `Instant`: the probe needs the raw value to hand `clock_nanosleep` an absolute
//! deadline on the same clock it reads back.

use std::io;

const NS_PER_SEC: u64 = 1_000_000_000;

pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
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
    let ts = libc::timespec {
        tv_sec: (deadline_ns / NS_PER_SEC) as libc::time_t,
        tv_nsec: (deadline_ns % NS_PER_SEC) as libc::c_long,
    };
    // SAFETY: `ts` is valid for the call; the remainder pointer may be null with TIMER_ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    match rc {
        0 => Ok(Slept::Reached),
        libc::EINTR => Ok(Slept::Interrupted),
        // clock_nanosleep returns the error number instead of setting errno.
        e => Err(io::Error::from_raw_os_error(e)),
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
        assert!(now_ns() - t0 < NS_PER_SEC);
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
