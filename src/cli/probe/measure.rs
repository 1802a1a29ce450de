// SPDX-License-Identifier: GPL-2.0-only
//! The probe's measurement loop.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::config::{Pacing, ProbeConfig};
use super::omission::backfill;
use super::report::ProbeReport;
use crate::cli::clock::{Slept, now_ns, sleep_until, spin_until};
use crate::cli::run_meta::RunEnd;
use crate::cli::thread;
use crate::prng::XorShift64;

/// Runs the probe on the calling thread until its duration or count is reached. Installs no
/// signal handler; see `measure_until` to stop it from elsewhere.
pub fn measure(cfg: &ProbeConfig) -> Result<ProbeReport> {
    measure_until(cfg, &AtomicBool::new(false))
}

/// Like `measure`, but also stops (and reports what it has, `interrupted: true`) once `stop`
/// becomes true. A signal handler that sets `stop` cuts the current sleep short at once; a
/// plain store is seen at the next wake.
///
/// The calling thread's comm and timer slack are set for the run and restored afterwards.
pub fn measure_until(cfg: &ProbeConfig, stop: &AtomicBool) -> Result<ProbeReport> {
    let cap = cfg.capacity()?;
    let mut buf: Vec<u64> = Vec::new();
    buf.try_reserve_exact(cap)
        .with_context(|| format!("allocating {cap} samples"))?;
    // Writing every slot now faults the pages in before the clock starts, not on the hot path.
    buf.resize(cap, u64::MAX);

    let _name = match &cfg.name {
        Some(n) => Some(thread::set_name(n).with_context(|| format!("naming the thread {n:?}"))?),
        None => None,
    };
    let _slack = match cfg.timer_slack_ns {
        Some(ns) => Some(thread::set_timer_slack(ns).context("setting the timer slack")?),
        None => None,
    };

    let run = sample(cfg, stop, &mut buf)?;
    buf.truncate(run.samples);
    buf.sort_unstable();
    Ok(ProbeReport::new(cfg, run, buf))
}

/// Counters from one run, before the samples are sorted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Run {
    pub samples: usize,
    pub wakes: u64,
    pub deadline_misses: u64,
    pub end: RunEnd,
}

/// The hot loop: sleep to a deadline, stamp the wake, backfill swallowed deadlines, spin the
/// work, re-anchor. Only clock reads, stores into `buf` and the two syscalls.
fn sample(cfg: &ProbeConfig, stop: &AtomicBool, buf: &mut [u64]) -> Result<Run> {
    let mut rng = XorShift64::seeded(cfg.seed);
    let pacing = cfg.pacing;
    let mut draw = move || match pacing {
        Pacing::Period { period_ns } => period_ns,
        Pacing::Range { min_ns, max_ns } => rng.range_inclusive(min_ns, max_ns),
    };
    let mut run = Run::default();
    let start = now_ns();
    let end = cfg.duration_ns.map_or(u64::MAX, |d| start + d);
    let mut deadline = start + draw();
    let mut next = deadline + draw();
    while run.samples < buf.len() && deadline <= end {
        if stop.load(Ordering::Relaxed) {
            run.end.interrupted = true;
            break;
        }
        if sleep_until(deadline).context("clock_nanosleep")? == Slept::Interrupted {
            continue;
        }
        let wake = now_ns();
        buf[run.samples] = wake.saturating_sub(deadline);
        run.samples += 1;
        run.wakes += 1;

        let slot_end = next;
        let swallowed = backfill(wake, &mut next, end, &mut draw, &mut buf[run.samples..]);
        run.samples += swallowed;

        let done = if cfg.work_ns > 0 {
            spin_until(wake + cfg.work_ns)
        } else {
            wake
        };
        run.deadline_misses += swallowed as u64 + u64::from(done > slot_end);

        deadline = next;
        next = deadline + draw();
    }
    run.end.elapsed_ns = now_ns() - start;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::probe::FRAME_MISS_NS;

    #[test]
    fn short_run_samples_every_deadline() {
        let cfg = ProbeConfig {
            pacing: Pacing::Period {
                period_ns: 1_000_000,
            },
            duration_ns: None,
            count: Some(50),
            work_ns: 100_000,
            ..ProbeConfig::default()
        };
        let r = measure(&cfg).unwrap();
        assert_eq!(r.count, 50);
        assert_eq!(r.samples.len(), 50);
        assert!(r.wakes >= 1 && r.wakes <= 50);
        assert_eq!(r.missed_periods, 50 - r.wakes);
        assert!(r.samples.windows(2).all(|w| w[0] <= w[1]));
        assert!(r.min_ns <= r.p50_ns && r.p50_ns <= r.p99_ns);
        assert!(r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
        assert!(r.run.end.elapsed_ns >= 49 * 1_000_000);
        assert!(!r.run.end.interrupted);
    }

    #[test]
    fn range_and_frames_runs() {
        let cfg = ProbeConfig {
            pacing: Pacing::Range {
                min_ns: 1_000_000,
                max_ns: 2_000_000,
            },
            duration_ns: Some(40_000_000),
            name: Some("cli-probe-test".into()),
            ..ProbeConfig::default()
        };
        let r = std::thread::spawn(move || measure(&cfg).unwrap())
            .join()
            .unwrap();
        assert!(r.count >= 19 && r.count <= 41, "{}", r.count);

        let mut cfg = ProbeConfig::frames(500.0, 200_000).unwrap();
        cfg.duration_ns = None;
        cfg.count = Some(20);
        let r = measure(&cfg).unwrap();
        assert_eq!(r.count, 20);
        assert_eq!(r.miss_threshold_ns, FRAME_MISS_NS);
        assert!(r.deadline_misses <= 20);
        assert!(r.to_json().contains("\"mode\":\"frames\""));
    }

    #[test]
    fn a_raised_stop_flag_ends_the_run_at_once() {
        let r = measure_until(&ProbeConfig::default(), &AtomicBool::new(true)).unwrap();
        assert!(r.run.end.interrupted);
        assert_eq!(r.count, 0);
        assert_eq!(r.p99_ns, 0);
    }
}
