// SPDX-License-Identifier: GPL-2.0-only
//! Fixed amounts of CPU work, counted in the calling thread's own CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), for `frames` and `audio`.
//!
//! A game's simulation step or an audio period's DSP is a fixed amount of work: a thread that is
//! preempted halfway through needs longer on the wall clock to finish it. Spinning on the wall
//! clock (what `probe --work-us` does) would instead finish on time however little of it ran on
//! the CPU, and hide exactly the delay these tools measure.

use std::hint::black_box;

use super::clock::now_ns;

/// Multiply-adds between two reads of the thread's CPU clock (a syscall, unlike
/// CLOCK_MONOTONIC's vDSO): about a microsecond on a current core, some more under TCG, which
/// is also how far the work may overshoot what was asked.
const CHUNK: u32 = 1_000;

/// The calling thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the calling thread's CPU clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `ns` of the calling thread's CPU time and returns CLOCK_MONOTONIC when it is done.
pub fn burn_cpu(ns: u64) -> u64 {
    if ns > 0 {
        let until = thread_cpu_ns() + ns;
        let mut x = until;
        loop {
            for _ in 0..CHUNK {
                x = black_box(
                    x.wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407),
                );
            }
            if thread_cpu_ns() >= until {
                break;
            }
        }
        black_box(x);
    }
    now_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burns_at_least_the_cpu_time_asked() {
        let cpu0 = thread_cpu_ns();
        let t0 = now_ns();
        let done = burn_cpu(2_000_000);
        assert!(thread_cpu_ns() - cpu0 >= 2_000_000);
        // Wall time is at least the CPU time the thread got.
        assert!(done - t0 >= 2_000_000);
        let t = now_ns();
        assert!(burn_cpu(0) >= t);
    }
}
