// SPDX-License-Identifier: GPL-2.0-only
//! What an `audio` run found, and its JSON and human spellings.

use serde::Serialize;

use super::config::AudioConfig;
use super::cycle::Run;
use crate::cli::run_meta::RunMeta;
use crate::cli::stats::{Summary, ratio};

/// Its JSON is the fields in this order, after `"tool":"audio"`, with `run`'s fields in its place
/// (flattened).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "tool", rename = "audio")]
pub struct AudioReport {
    pub quantum: u32,
    pub rate: u32,
    pub period_ns: u64,
    pub work_min_ns: u64,
    pub work_max_ns: u64,
    #[serde(flatten)]
    pub run: RunMeta,
    /// Periods of the run: `wakes` + `skipped`.
    pub periods: u64,
    pub wakes: u64,
    /// Periods the thread slept through.
    pub skipped: u64,
    /// Periods missed: work that ended after the period's end, plus the skipped ones.
    pub xruns: u64,
    /// `xruns` per period (0 without periods).
    pub xrun_ratio: f64,
    /// How late the thread woke for a period's start.
    pub wake_min_ns: u64,
    pub wake_p50_ns: u64,
    pub wake_p99_ns: u64,
    pub wake_p999_ns: u64,
    pub wake_max_ns: u64,
    pub wake_mean_ns: u64,
    /// Woken periods whose work was preempted (involuntary context switches), and their share of
    /// the woken periods: the scheduler's part of a late finish.
    pub preempted: u64,
    pub preempted_ratio: f64,
    /// Per woken period, the time it waited runnable for a CPU (schedstat's run delay): the
    /// scheduler's part of a late wake, without the timer's own lateness. Null without
    /// schedstat.
    pub run_delay_p99_ns: Option<u64>,
    pub run_delay_max_ns: Option<u64>,
}

impl AudioReport {
    pub(crate) fn new(cfg: &AudioConfig, run: Run) -> AudioReport {
        let mut late = run.wake_late;
        late.sort_unstable();
        let s = Summary::of_sorted(&late);
        let mut delays = run.run_delay;
        delays.sort_unstable();
        let d = (!delays.is_empty()).then(|| Summary::of_sorted(&delays));
        AudioReport {
            quantum: cfg.quantum,
            rate: cfg.rate,
            period_ns: cfg.period_ns(),
            work_min_ns: cfg.work_min_ns,
            work_max_ns: cfg.work_max_ns,
            run: RunMeta {
                timer_slack_ns: cfg.timer_slack_ns,
                name: cfg.name.clone(),
                seed: cfg.seed,
                end: run.end,
            },
            periods: s.count,
            wakes: run.wakes,
            skipped: run.skipped,
            xruns: run.xruns,
            xrun_ratio: ratio(run.xruns, s.count),
            wake_min_ns: s.min_ns,
            wake_p50_ns: s.p50_ns,
            wake_p99_ns: s.p99_ns,
            wake_p999_ns: s.p999_ns,
            wake_max_ns: s.max_ns,
            wake_mean_ns: s.mean_ns,
            preempted: run.preempted,
            preempted_ratio: ratio(run.preempted, run.wakes),
            run_delay_p99_ns: d.map(|d| d.p99_ns),
            run_delay_max_ns: d.map(|d| d.max_ns),
        }
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        crate::cli::json_line(self)
    }

    pub fn to_human(&self) -> String {
        let us = |ns: u64| ns as f64 / 1e3;
        let mut line = format!(
            "audio {}/{} Hz ({:.2} ms, work {:.0}-{:.0} us): {} periods in {:.1} s: xruns {} \
             ({:.3}%, {} slept through); wake p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            self.quantum,
            self.rate,
            self.period_ns as f64 / 1e6,
            us(self.work_min_ns),
            us(self.work_max_ns),
            self.periods,
            self.run.end.elapsed_ns as f64 / 1e9,
            self.xruns,
            100.0 * self.xrun_ratio,
            self.skipped,
            us(self.wake_p50_ns),
            us(self.wake_p99_ns),
            us(self.wake_max_ns),
        );
        line.push_str(&format!(
            "; work preempted in {} ({:.3}%)",
            self.preempted,
            100.0 * self.preempted_ratio
        ));
        if let (Some(p99), Some(max)) = (self.run_delay_p99_ns, self.run_delay_max_ns) {
            line.push_str(&format!(
                ", waited for a CPU p99 {:.1} us, max {:.1} us",
                us(p99),
                us(max)
            ));
        }
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

    #[test]
    fn json_has_every_field_in_order() {
        let run = Run {
            wake_late: vec![30_000, 10_000, 20_000, 6_000_000],
            wakes: 3,
            skipped: 1,
            xruns: 2,
            preempted: 1,
            run_delay: vec![40_000, 0, 2_000_000],
            end: RunEnd {
                elapsed_ns: 21_000_000,
                interrupted: false,
            },
        };
        let r = AudioReport::new(&AudioConfig::default(), run);
        assert_eq!(
            r.to_json(),
            concat!(
                r#"{"tool":"audio","quantum":256,"rate":48000,"period_ns":5333333,"#,
                r#""work_min_ns":500000,"work_max_ns":500000,"timer_slack_ns":1,"#,
                r#""name":"data-loop.0","seed":1,"elapsed_ns":21000000,"interrupted":false,"#,
                r#""periods":4,"wakes":3,"skipped":1,"xruns":2,"xrun_ratio":0.5,"#,
                r#""wake_min_ns":10000,"wake_p50_ns":20000,"wake_p99_ns":6000000,"#,
                r#""wake_p999_ns":6000000,"wake_max_ns":6000000,"wake_mean_ns":1515000,"#,
                r#""preempted":1,"preempted_ratio":0.3333333333333333,"#,
                r#""run_delay_p99_ns":2000000,"run_delay_max_ns":2000000}"#
            )
        );
        let human = r.to_human();
        assert!(human.contains("xruns 2 (50.000%, 1 slept through)"));
        assert!(human.contains("work preempted in 1 (33.333%), waited for a CPU p99 2000.0 us"));
    }

    #[test]
    fn an_empty_run_has_a_zero_ratio_not_nan() {
        let r = AudioReport::new(&AudioConfig::default(), Run::default());
        assert_eq!((r.xrun_ratio, r.preempted_ratio), (0.0, 0.0));
        assert!(!r.to_json().contains("NaN"));
        // No schedstat samples: null, not a zero that reads as "never waited".
        assert!(r.to_json().contains(r#""run_delay_p99_ns":null"#));
    }
}
