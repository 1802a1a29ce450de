// SPDX-License-Identifier: GPL-2.0-only
//! What a stress run did, and its JSON and human spellings.

use super::config::{Load, StressConfig};
use serde::Serialize;

/// Its JSON is the fields in this order, `index` spelled `worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerReport {
    #[serde(rename = "worker")]
    pub index: usize,
    /// The CPU it was pinned to, if pinned.
    pub cpu: Option<usize>,
    /// Chunks of work completed.
    pub iterations: u64,
    /// Longest time between two progress stamps (a sleep counts only past its intended end).
    pub worst_gap_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StressReport {
    pub load: Load,
    pub pin: bool,
    pub nice: Option<i32>,
    pub name: Option<String>,
    pub elapsed_ns: u64,
    /// Stopped by the stop flag (a signal) before its duration.
    pub interrupted: bool,
    pub workers: Vec<WorkerReport>,
}

impl StressReport {
    pub(crate) fn new(
        cfg: &StressConfig,
        elapsed_ns: u64,
        interrupted: bool,
        workers: Vec<WorkerReport>,
    ) -> StressReport {
        StressReport {
            load: cfg.load,
            pin: cfg.pin,
            nice: cfg.nice,
            name: cfg.name.clone(),
            elapsed_ns,
            interrupted,
            workers,
        }
    }

    pub fn total_iterations(&self) -> u64 {
        self.workers.iter().map(|w| w.iterations).sum()
    }

    pub fn min_iterations(&self) -> u64 {
        self.workers.iter().map(|w| w.iterations).min().unwrap_or(0)
    }

    pub fn max_iterations(&self) -> u64 {
        self.workers.iter().map(|w| w.iterations).max().unwrap_or(0)
    }

    pub fn worst_gap_ns(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.worst_gap_ns)
            .max()
            .unwrap_or(0)
    }

    /// One JSON object on one line.
    pub fn to_json(&self) -> String {
        let (run_ns, sleep_ns, yield_every_ns) = match self.load {
            Load::DutyCycle { run_ns, sleep_ns } => (Some(run_ns), Some(sleep_ns), None),
            Load::Yielding { yield_every_ns } => (None, None, Some(yield_every_ns)),
            Load::LongRunner => (None, None, None),
        };
        crate::cli::json_line(&Json {
            mode: self.load.name(),
            yield_every_ns,
            run_ns,
            sleep_ns,
            workers: self.workers.len(),
            pin: self.pin,
            nice: self.nice,
            name: self.name.as_deref(),
            elapsed_ns: self.elapsed_ns,
            interrupted: self.interrupted,
            total_iterations: self.total_iterations(),
            min_iterations: self.min_iterations(),
            max_iterations: self.max_iterations(),
            worst_gap_ns: self.worst_gap_ns(),
            per_worker: &self.workers,
        })
    }

    pub fn to_human(&self) -> String {
        let mut line = format!(
            "stress {}: {} workers for {:.1} s: {} iterations (per worker {}..{}), worst gap \
             {:.1} ms",
            self.load.name(),
            self.workers.len(),
            self.elapsed_ns as f64 / 1e9,
            self.total_iterations(),
            self.min_iterations(),
            self.max_iterations(),
            self.worst_gap_ns() as f64 / 1e6,
        );
        if self.interrupted {
            line.push_str(" [interrupted]");
        }
        line
    }
}

/// The JSON spelling of a [`StressReport`]: the load's parameters spelled out and the
/// aggregates computed, in this order after `"tool":"stress"`.
#[derive(Serialize)]
#[serde(tag = "tool", rename = "stress")]
struct Json<'a> {
    mode: &'static str,
    yield_every_ns: Option<u64>,
    run_ns: Option<u64>,
    sleep_ns: Option<u64>,
    workers: usize,
    pin: bool,
    nice: Option<i32>,
    name: Option<&'a str>,
    elapsed_ns: u64,
    interrupted: bool,
    total_iterations: u64,
    min_iterations: u64,
    max_iterations: u64,
    worst_gap_ns: u64,
    per_worker: &'a [WorkerReport],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_json() {
        let mut cfg = StressConfig::new(2);
        cfg.pin = true;
        cfg.nice = Some(-5);
        cfg.name = Some("hog\\1".into());
        let r = StressReport::new(
            &cfg,
            1_000_000_000,
            true,
            vec![
                WorkerReport {
                    index: 0,
                    cpu: Some(0),
                    iterations: 100,
                    worst_gap_ns: 4_000_000,
                },
                WorkerReport {
                    index: 1,
                    cpu: Some(1),
                    iterations: 60,
                    worst_gap_ns: 9_000_000,
                },
            ],
        );
        assert_eq!(
            r.to_json(),
            concat!(
                r#"{"tool":"stress","mode":"yield","yield_every_ns":10000000,"run_ns":null,"#,
                r#""sleep_ns":null,"workers":2,"pin":true,"nice":-5,"name":"hog\\1","#,
                r#""elapsed_ns":1000000000,"interrupted":true,"total_iterations":160,"#,
                r#""min_iterations":60,"max_iterations":100,"worst_gap_ns":9000000,"#,
                r#""per_worker":[{"worker":0,"cpu":0,"iterations":100,"worst_gap_ns":4000000},"#,
                r#"{"worker":1,"cpu":1,"iterations":60,"worst_gap_ns":9000000}]}"#
            )
        );
        assert!(r.to_human().ends_with("[interrupted]"));
    }

    #[test]
    fn empty_and_duty_cycle_json() {
        let mut cfg = StressConfig::new(1);
        cfg.load = Load::DutyCycle {
            run_ns: 1_000,
            sleep_ns: 2_000,
        };
        let r = StressReport::new(&cfg, 0, false, Vec::new());
        let j = r.to_json();
        assert!(
            j.contains(r#""mode":"duty-cycle","yield_every_ns":null,"run_ns":1000,"#),
            "{j}"
        );
        assert!(j.contains(r#""worst_gap_ns":0,"per_worker":[]}"#), "{j}");
    }
}
