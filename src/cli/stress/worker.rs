// SPDX-License-Identifier: GPL-2.0-only
//! One stress worker's loop.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

use super::config::Load;
use crate::cli::clock::{now_ns, sleep_until};

/// Multiply-adds per progress stamp: long enough that the clock read is noise (~0.1%), short
/// enough that the gap resolution stays in the tens of microseconds.
const CHUNK: u32 = 10_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    pub iterations: u64,
    pub worst_gap_ns: u64,
}

/// A dependent LCG chain: the CPU cannot skip or vectorise it, and `black_box` stops the
/// compiler from folding it away.
fn chunk(mut x: u64) -> u64 {
    for _ in 0..CHUNK {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

/// Spins in chunks until `stop`, shaping the load as `load` says.
pub(crate) fn work(load: Load, stop: &AtomicBool, seed: u64) -> Progress {
    let mut p = Progress::default();
    let mut x = seed;
    let mut last = now_ns();
    let mut next_event = match load {
        Load::Yielding { yield_every_ns } => last + yield_every_ns,
        Load::DutyCycle { run_ns, .. } => last + run_ns,
        Load::LongRunner => u64::MAX,
    };
    while !stop.load(Ordering::Relaxed) {
        x = chunk(x);
        let now = now_ns();
        p.worst_gap_ns = p.worst_gap_ns.max(now.saturating_sub(last));
        p.iterations += 1;
        last = now;
        if now < next_event {
            continue;
        }
        match load {
            Load::Yielding { yield_every_ns } => {
                // Always succeeds on Linux.
                let _ = nix::sched::sched_yield();
                next_event = now + yield_every_ns;
            }
            Load::DutyCycle { run_ns, sleep_ns } => {
                let due = now + sleep_ns;
                // An EINTR or error only shortens this one sleep; the stop flag is checked next.
                let _ = sleep_until(due);
                let woke = now_ns();
                // The next gap then counts only the oversleep: the sleep itself was asked for.
                last = due.min(woke);
                next_event = woke + run_ns;
            }
            Load::LongRunner => {}
        }
    }
    black_box(x);
    p
}
