// SPDX-License-Identifier: GPL-2.0-only
//! What one `audio` run does, checked before it starts.

use anyhow::{Result, bail};

use crate::cli::thread;

/// The most periods one run records (128 MiB of samples): 24 hours at 5.33 ms.
pub const MAX_PERIODS: u64 = 1 << 24;

/// PipeWire's data thread.
pub const DEFAULT_NAME: &str = "data-loop.0";

#[derive(Debug, Clone, PartialEq)]
pub struct AudioConfig {
    /// Frames per period (PipeWire's quantum).
    pub quantum: u32,
    /// Sample rate in Hz.
    pub rate: u32,
    /// CPU time of one period's work, drawn uniformly from `work_min_ns..=work_max_ns`.
    pub work_min_ns: u64,
    pub work_max_ns: u64,
    pub duration_ns: u64,
    /// Seed of the work draw, so every scheduler sees the same sequence.
    pub seed: u64,
    /// Timer slack of the thread; `None` leaves it alone.
    pub timer_slack_ns: Option<u64>,
    /// comm of the thread for the run.
    pub name: Option<String>,
}

impl Default for AudioConfig {
    /// 256 frames at 48 kHz (5.33 ms), 0.5 ms of work, 10 s, 1 ns timer slack, `data-loop.0`.
    fn default() -> Self {
        AudioConfig {
            quantum: 256,
            rate: 48_000,
            work_min_ns: 500_000,
            work_max_ns: 500_000,
            duration_ns: 10_000_000_000,
            seed: 1,
            timer_slack_ns: Some(1),
            name: Some(DEFAULT_NAME.into()),
        }
    }
}

impl AudioConfig {
    /// The period: quantum / rate, in whole nanoseconds.
    pub fn period_ns(&self) -> u64 {
        (self.quantum as f64 * 1e9 / self.rate.max(1) as f64).round() as u64
    }

    pub fn validate(&self) -> Result<()> {
        if self.quantum == 0 || self.rate == 0 {
            bail!("the quantum and the rate must be positive");
        }
        let period = self.period_ns();
        if !(10_000..=1_000_000_000).contains(&period) {
            bail!(
                "a period of {} frames at {} Hz is {} ns; it must be 10 us to 1 s",
                self.quantum,
                self.rate,
                period
            );
        }
        if self.work_min_ns > self.work_max_ns {
            bail!(
                "work {}-{} us: MIN exceeds MAX",
                self.work_min_ns / 1_000,
                self.work_max_ns / 1_000
            );
        }
        if self.work_max_ns >= period {
            bail!(
                "{} us of work does not fit in a period of {} us",
                self.work_max_ns as f64 / 1e3,
                period as f64 / 1e3
            );
        }
        if self.duration_ns == 0 {
            bail!("the duration must be positive");
        }
        if let Some(0) = self.timer_slack_ns {
            bail!("timer slack 0 would mean the kernel default; use None to leave it alone");
        }
        if let Some(name) = &self.name {
            thread::validate_name(name).map_err(anyhow::Error::msg)?;
        }
        let cap = self.capacity_unchecked();
        if cap > MAX_PERIODS {
            bail!(
                "this run would record up to {cap} periods, more than the {MAX_PERIODS} it \
                 pre-allocates at most; shorten the duration"
            );
        }
        Ok(())
    }

    /// Periods the run records at most: one per period start in the duration, and one spare.
    pub fn capacity(&self) -> Result<usize> {
        self.validate()?;
        Ok(self.capacity_unchecked() as usize)
    }

    fn capacity_unchecked(&self) -> u64 {
        self.duration_ns / self.period_ns().max(1) + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(cfg: AudioConfig) -> String {
        format!("{:#}", cfg.validate().unwrap_err())
    }

    #[test]
    fn defaults_are_pipewires_period() {
        let cfg = AudioConfig::default();
        cfg.validate().unwrap();
        assert_eq!(cfg.period_ns(), 5_333_333);
        assert_eq!(cfg.capacity().unwrap(), 1_877);
        let q1024 = AudioConfig {
            quantum: 1024,
            ..AudioConfig::default()
        };
        assert_eq!(q1024.period_ns(), 21_333_333);
    }

    #[test]
    fn rejects_what_cannot_be_measured() {
        let d = AudioConfig::default;
        assert!(err(AudioConfig { rate: 0, ..d() }).contains("positive"));
        assert!(
            err(AudioConfig {
                quantum: 1,
                rate: 192_000,
                ..d()
            })
            .contains("10 us to 1 s")
        );
        let inverted = AudioConfig {
            work_min_ns: 2,
            work_max_ns: 1,
            ..d()
        };
        assert!(err(inverted).contains("MIN exceeds MAX"));
        let too_much = AudioConfig {
            work_max_ns: 6_000_000,
            ..d()
        };
        assert!(err(too_much).contains("does not fit"));
        assert!(
            err(AudioConfig {
                duration_ns: 0,
                ..d()
            })
            .contains("positive")
        );
        assert!(
            err(AudioConfig {
                timer_slack_ns: Some(0),
                ..d()
            })
            .contains("slack")
        );
        let long = AudioConfig {
            name: Some("a-very-long-thread-name".into()),
            ..d()
        };
        assert!(err(long).contains("15 bytes"));
        let huge = AudioConfig {
            quantum: 64,
            duration_ns: 3_600_000_000_000_000,
            ..d()
        };
        assert!(err(huge).contains("pre-allocates"));
    }
}
