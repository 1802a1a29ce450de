// SPDX-License-Identifier: GPL-2.0-only
//! What one stress run does, validated before any thread starts.

use anyhow::{Result, bail};

use crate::cli::thread;

/// How often the default load shape yields.
pub const DEFAULT_YIELD_EVERY_NS: u64 = 10_000_000;

/// A sanity bound, not a limit of the design: more threads than this is a typo.
pub const MAX_WORKERS: usize = 4096;

/// An hour: a longer run, sleep or yield interval is a typo, and bounding it keeps the workers'
/// deadline arithmetic far from overflowing a u64 of nanoseconds.
const MAX_PHASE_NS: u64 = 3_600_000_000_000;

/// The shape of each worker's load (see the `stress` module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Spin, calling `sched_yield` once per `yield_every_ns` of spinning.
    Yielding { yield_every_ns: u64 },
    /// Spin, never yield or sleep.
    LongRunner,
    /// Spin `run_ns`, sleep `sleep_ns`, repeat.
    DutyCycle { run_ns: u64, sleep_ns: u64 },
}

impl Load {
    pub fn name(&self) -> &'static str {
        match self {
            Load::Yielding { .. } => "yield",
            Load::LongRunner => "long-runner",
            Load::DutyCycle { .. } => "duty-cycle",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StressConfig {
    pub workers: usize,
    /// Pin worker i to the i-th allowed CPU, round robin.
    pub pin: bool,
    /// `None`: until the stop flag (`measure_until`) or `Running::finish`.
    pub duration_ns: Option<u64>,
    pub load: Load,
    /// Nice value for every worker thread; lowering it needs CAP_SYS_NICE.
    pub nice: Option<i32>,
    /// comm for every worker (the scheduler classifies by it); default `stress<i>`.
    pub name: Option<String>,
}

impl StressConfig {
    /// `workers` free-running yielding workers, no time limit.
    pub fn new(workers: usize) -> StressConfig {
        StressConfig {
            workers,
            pin: false,
            duration_ns: None,
            load: Load::Yielding {
                yield_every_ns: DEFAULT_YIELD_EVERY_NS,
            },
            nice: None,
            name: None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.workers == 0 || self.workers > MAX_WORKERS {
            bail!(
                "the number of workers must be 1 to {MAX_WORKERS}, got {}",
                self.workers
            );
        }
        if self.duration_ns == Some(0) {
            bail!("the duration must be positive (None runs until stopped)");
        }
        match self.load {
            Load::Yielding { yield_every_ns: 0 } => bail!("the yield interval must be positive"),
            Load::DutyCycle { run_ns, sleep_ns } if run_ns == 0 || sleep_ns == 0 => {
                bail!("a duty cycle needs a positive run time and a positive sleep time")
            }
            Load::Yielding { yield_every_ns: t }
            | Load::DutyCycle { run_ns: t, .. }
            | Load::DutyCycle { sleep_ns: t, .. }
                if t > MAX_PHASE_NS =>
            {
                bail!("run, sleep and yield intervals must be at most an hour")
            }
            _ => {}
        }
        if let Some(n) = self.nice
            && !(-20..=19).contains(&n)
        {
            bail!("nice must be between -20 and 19, got {n}");
        }
        if let Some(name) = &self.name {
            thread::validate_name(name).map_err(anyhow::Error::msg)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(cfg: StressConfig) -> String {
        format!("{:#}", cfg.validate().unwrap_err())
    }

    #[test]
    fn validation() {
        StressConfig::new(4).validate().unwrap();
        assert!(err(StressConfig::new(0)).contains("1 to 4096"));
        assert!(err(StressConfig::new(5000)).contains("1 to 4096"));
        let mut c = StressConfig::new(1);
        c.nice = Some(20);
        assert!(err(c).contains("between -20 and 19"));
        let mut c = StressConfig::new(1);
        c.load = Load::DutyCycle {
            run_ns: 0,
            sleep_ns: 1,
        };
        assert!(err(c).contains("duty cycle"));
        let mut c = StressConfig::new(1);
        c.load = Load::DutyCycle {
            run_ns: 1,
            sleep_ns: u64::MAX / 2,
        };
        assert!(err(c).contains("at most an hour"));
        let mut c = StressConfig::new(1);
        c.duration_ns = Some(0);
        assert!(err(c).contains("duration"));
        let mut c = StressConfig::new(1);
        c.name = Some("much-too-long-a-name".into());
        assert!(err(c).contains("15 bytes"));
    }
}
