// SPDX-License-Identifier: GPL-2.0-only
//! What a probe run found, and its JSON and human spellings.

use super::config::{Pacing, ProbeConfig};
use super::measure::Run;
use crate::cli::run_meta::RunMeta;
use crate::cli::stats::{self, Summary};
use serde::Serialize;

/// Its JSON is the fields in this order, after `"tool":"probe"`, with `run`'s fields in its place
/// (flattened); the samples are left out (the summary is what the tools compare, and a 10 s run
/// at 1 ms would be 10 000 numbers).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "tool", rename = "probe")]
pub struct ProbeReport {
    /// "period", "range" or "frames".
    pub mode: &'static str,
    pub interval_min_ns: u64,
    pub interval_max_ns: u64,
    /// Frame rate in frame mode.
    pub fps: Option<f64>,
    pub work_ns: u64,
    #[serde(flatten)]
    pub run: RunMeta,
    /// Times the probe actually woke.
    pub wakes: u64,
    /// Samples: one per scheduled deadline, so `wakes` plus the swallowed ones.
    pub count: u64,
    /// Deadlines swallowed by oversleeping, each counted as a sample (coordinated omission).
    pub missed_periods: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
    pub miss_threshold_ns: u64,
    /// Samples later than `miss_threshold_ns`.
    pub wake_misses: u64,
    /// `wake_misses` per sample (0 without samples).
    pub wake_miss_ratio: f64,
    /// Deadlines whose work ended after the next deadline, plus every swallowed deadline.
    pub deadline_misses: u64,
    /// `deadline_misses` per sample (0 without samples).
    pub deadline_miss_ratio: f64,
    /// Every sample's lateness in ns, ascending.
    #[serde(skip)]
    pub samples: Vec<u64>,
}

impl ProbeReport {
    pub(crate) fn new(cfg: &ProbeConfig, run: Run, sorted: Vec<u64>) -> ProbeReport {
        let s = Summary::of_sorted(&sorted);
        let on_time = sorted.partition_point(|&v| v <= cfg.miss_threshold_ns);
        let wake_misses = (sorted.len() - on_time) as u64;
        let ratio = |n: u64| stats::ratio(n, s.count);
        let mode = match (cfg.frames, cfg.pacing) {
            (true, _) => "frames",
            (false, Pacing::Period { .. }) => "period",
            (false, Pacing::Range { .. }) => "range",
        };
        ProbeReport {
            mode,
            interval_min_ns: cfg.pacing.min_ns(),
            interval_max_ns: cfg.pacing.max_ns(),
            // Rounded to 0.001: the period is whole nanoseconds, so 60 fps would read back as
            // 59.9999988.
            fps: cfg
                .frames
                .then(|| (1e12 / cfg.pacing.min_ns() as f64).round() / 1e3),
            work_ns: cfg.work_ns,
            run: RunMeta {
                timer_slack_ns: cfg.timer_slack_ns,
                name: cfg.name.clone(),
                seed: cfg.seed,
                end: run.end,
            },
            wakes: run.wakes,
            count: s.count,
            missed_periods: s.count - run.wakes,
            min_ns: s.min_ns,
            p50_ns: s.p50_ns,
            p99_ns: s.p99_ns,
            p999_ns: s.p999_ns,
            max_ns: s.max_ns,
            mean_ns: s.mean_ns,
            miss_threshold_ns: cfg.miss_threshold_ns,
            wake_misses,
            wake_miss_ratio: ratio(wake_misses),
            deadline_misses: run.deadline_misses,
            deadline_miss_ratio: ratio(run.deadline_misses),
            samples: sorted,
        }
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        crate::cli::json_line(self)
    }

    pub fn to_human(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        let mut line = format!(
            "probe {}: {} samples ({} wakes, {} swallowed) in {:.1} s: p50 {:.1} us, p99 {:.1} us, \
             p99.9 {:.1} us, max {:.1} us; late > {:.0} us: {} ({:.2}%); deadline misses: {} \
             ({:.2}%)",
            self.mode,
            self.count,
            self.wakes,
            self.missed_periods,
            self.run.end.elapsed_ns as f64 / 1e9,
            us(self.p50_ns),
            us(self.p99_ns),
            us(self.p999_ns),
            us(self.max_ns),
            us(self.miss_threshold_ns),
            self.wake_misses,
            100.0 * self.wake_miss_ratio,
            self.deadline_misses,
            100.0 * self.deadline_miss_ratio,
        );
        if self.run.end.interrupted {
            line.push_str(" [interrupted]");
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::run_meta::RunEnd;

    fn report(samples: Vec<u64>, wakes: u64) -> ProbeReport {
        let cfg = ProbeConfig {
            name: Some("pnd\"probe".into()),
            ..ProbeConfig::default()
        };
        let run = Run {
            samples: samples.len(),
            wakes,
            deadline_misses: 2,
            end: RunEnd {
                elapsed_ns: 3_000_000_000,
                interrupted: false,
            },
        };
        ProbeReport::new(&cfg, run, samples)
    }

    #[test]
    fn json_has_every_field_in_order() {
        let r = report(vec![1_000, 2_000, 600_000, 25_000_000], 3);
        assert_eq!(
            r.to_json(),
            concat!(
                r#"{"tool":"probe","mode":"period","interval_min_ns":10000000,"#,
                r#""interval_max_ns":10000000,"fps":null,"work_ns":0,"timer_slack_ns":1,"#,
                r#""name":"pnd\"probe","seed":1,"elapsed_ns":3000000000,"interrupted":false,"#,
                r#""wakes":3,"count":4,"missed_periods":1,"min_ns":1000,"p50_ns":2000,"#,
                r#""p99_ns":25000000,"p999_ns":25000000,"max_ns":25000000,"mean_ns":6400750,"#,
                r#""miss_threshold_ns":500000,"wake_misses":2,"wake_miss_ratio":0.5,"#,
                r#""deadline_misses":2,"deadline_miss_ratio":0.5}"#
            )
        );
    }

    #[test]
    fn empty_run_has_zero_ratios_not_nan() {
        let r = report(Vec::new(), 0);
        let j = r.to_json();
        // serde_json spells a whole f64 with ".0" (the same JSON number as the old writer's "0").
        assert!(j.contains(r#""wake_miss_ratio":0.0,"#), "{j}");
        assert!(!j.contains("NaN"));
        assert!(r.to_human().contains("0 samples"));
    }

    #[test]
    fn frames_report_fps() {
        let mut cfg = ProbeConfig::frames(60.0, 2_000_000).unwrap();
        cfg.count = Some(1);
        let r = ProbeReport::new(&cfg, Run::default(), Vec::new());
        assert!(r.to_json().contains(r#""mode":"frames""#));
        assert_eq!(r.fps, Some(60.0));
        assert!(r.to_json().contains(r#""fps":60.0,"#));
    }
}
