// SPDX-License-Identifier: GPL-2.0-only
//! The audio thread's loop: sleep to a period's start, run its work, account for it.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, anyhow};

use super::config::AudioConfig;
use super::counters::Counters;
use super::xrun::step;
use crate::cli::clock::{Slept, now_ns, sleep_until};
use crate::cli::run_meta::RunEnd;
use crate::cli::thread;
use crate::cli::work::burn_cpu;
use crate::prng::XorShift64;

/// What one run counted, and every period's wake lateness (unsorted).
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// One per period of the run: how late the thread woke for it (a period it slept through
    /// counts with the lateness it would have had, so a long stall weighs as often as it cost).
    pub wake_late: Vec<u64>,
    /// Periods the thread woke for.
    pub wakes: u64,
    /// Periods it slept through.
    pub skipped: u64,
    /// Periods missed: late work plus the ones slept through.
    pub xruns: u64,
    /// Woken periods whose work was preempted at least once.
    pub preempted: u64,
    /// Per woken period, how long the thread waited runnable for a CPU, its wakeup and any
    /// preemption in its work together (empty without schedstat).
    pub run_delay: Vec<u64>,
    pub end: RunEnd,
}

/// Runs the loop on the calling thread (named and with its timer slack set for the run) until
/// the duration is over or `stop` is raised.
pub(crate) fn cycle(cfg: &AudioConfig, stop: &AtomicBool) -> Result<Run> {
    let cap = cfg.capacity()?;
    let mut late: Vec<u64> = Vec::new();
    late.try_reserve_exact(cap)
        .map_err(|e| anyhow!("allocating {cap} samples: {e}"))?;
    // Written now so the pages fault in before the clock starts, not during a period.
    late.resize(cap, u64::MAX);
    let mut delays: Vec<u64> = Vec::new();
    delays
        .try_reserve_exact(cap)
        .map_err(|e| anyhow!("allocating {cap} samples: {e}"))?;
    let _name = match &cfg.name {
        Some(n) => Some(thread::set_name(n).with_context(|| format!("naming the thread {n:?}"))?),
        None => None,
    };
    let _slack = match cfg.timer_slack_ns {
        Some(ns) => Some(thread::set_timer_slack(ns).context("setting the timer slack")?),
        None => None,
    };
    let mut rng = XorShift64::seeded(cfg.seed);
    let period = cfg.period_ns();
    let mut run = Run::default();
    let mut n = 0;
    let start = now_ns();
    let end = start + cfg.duration_ns;
    let mut deadline = start + period;
    let counters = Counters::open();
    let mut last = counters.sample().context("reading the thread's counters")?;
    while deadline <= end && n < cap {
        if stop.load(Ordering::Relaxed) {
            run.end.interrupted = true;
            break;
        }
        if sleep_until(deadline).context("clock_nanosleep")? == Slept::Interrupted {
            continue;
        }
        let wake = now_ns();
        late[n] = wake - deadline;
        n += 1;
        run.wakes += 1;
        let done = burn_cpu(rng.range_inclusive(cfg.work_min_ns, cfg.work_max_ns));
        // After `done`: the reads cost the period nothing it is judged by.
        let now_c = counters.sample().context("reading the thread's counters")?;
        if now_c.nivcsw > last.nivcsw {
            run.preempted += 1;
        }
        if let (Some(a), Some(b)) = (last.run_delay_ns, now_c.run_delay_ns)
            && delays.len() < cap
        {
            delays.push(b.saturating_sub(a));
        }
        last = now_c;
        let s = step(deadline, wake, done, period, end);
        for i in 1..=s.skipped {
            if n < cap {
                late[n] = wake - (deadline + i * period);
                n += 1;
            }
        }
        run.skipped += s.skipped;
        run.xruns += s.misses();
        deadline = s.next;
    }
    run.end.elapsed_ns = now_ns() - start;
    late.truncate(n);
    run.wake_late = late;
    run.run_delay = delays;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_accounts_for_every_period() {
        let cfg = AudioConfig {
            quantum: 96, // 2 ms at 48 kHz
            work_min_ns: 100_000,
            work_max_ns: 300_000,
            duration_ns: 60_000_000,
            name: Some("cli-audio-test".into()),
            ..AudioConfig::default()
        };
        let run = std::thread::spawn(move || cycle(&cfg, &AtomicBool::new(false)).unwrap())
            .join()
            .unwrap();
        assert!(!run.end.interrupted);
        let periods = run.wake_late.len() as u64;
        // One sample per period start in the 60 ms: 30, of which a loaded host may have slept
        // through some.
        assert!((29..=31).contains(&periods), "{periods} periods");
        assert_eq!(periods, run.wakes + run.skipped);
        assert!(run.xruns >= run.skipped && run.xruns <= periods);
        assert!(run.preempted <= run.wakes);
        assert!(run.run_delay.is_empty() || run.run_delay.len() as u64 == run.wakes);
        assert!(run.end.elapsed_ns >= 58_000_000);
    }

    #[test]
    fn a_raised_stop_flag_ends_the_run_at_once() {
        let run = cycle(&AudioConfig::default(), &AtomicBool::new(true)).unwrap();
        assert!(run.end.interrupted);
        assert_eq!((run.wakes, run.wake_late.len()), (0, 0));
    }
}
