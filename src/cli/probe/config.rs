// SPDX-License-Identifier: GPL-2.0-only
//! What one probe run does, checked before anything starts so a bad value is a clear error and
//! never a panic or a silent infinite loop in the middle of a measurement.

use anyhow::{Result, bail};

use crate::cli::thread;

/// Wake lateness above which a frame counts as missed (the upstream definition).
pub const FRAME_MISS_NS: u64 = 500_000;

/// Upper bound on the pre-allocated buffer (128 MiB): 46 hours at the default period, and a
/// guard against `--period-us 1 --duration-s 86400` eating the machine.
pub const MAX_SAMPLES: u64 = 1 << 24;

const MIN_INTERVAL_NS: u64 = 1_000;

/// An hour: longer intervals are a typo, and bounding them keeps deadline arithmetic far from
/// overflowing a u64 of nanoseconds.
const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;

/// How far apart scheduled wakes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// A wake every `period_ns`.
    Period { period_ns: u64 },
    /// Each interval drawn uniformly from `min_ns..=max_ns` by a PRNG seeded with `seed`.
    Range { min_ns: u64, max_ns: u64 },
}

impl Pacing {
    pub fn min_ns(&self) -> u64 {
        match *self {
            Pacing::Period { period_ns } => period_ns,
            Pacing::Range { min_ns, .. } => min_ns,
        }
    }

    pub fn max_ns(&self) -> u64 {
        match *self {
            Pacing::Period { period_ns } => period_ns,
            Pacing::Range { max_ns, .. } => max_ns,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    pub pacing: Pacing,
    /// Stop after this long; deadlines past it are not sampled.
    pub duration_ns: Option<u64>,
    /// Stop after this many samples (scheduled deadlines, swallowed ones included).
    pub count: Option<u64>,
    /// Spin this long after each wake.
    pub work_ns: u64,
    /// Frame mode: only changes what the report calls the run and the `fps` it shows; pacing
    /// and work are set by `ProbeConfig::frames`.
    pub frames: bool,
    /// A wake later than this is a miss.
    pub miss_threshold_ns: u64,
    /// Timer slack for the probing thread while it measures; `None` leaves it alone. The
    /// default slack (50 us for normal threads) delays every timer wake by up to that much,
    /// which is the timer subsystem's choice, not the scheduler's latency.
    pub timer_slack_ns: Option<u64>,
    /// comm for the probing thread (restored afterwards), so the scheduler classifies it by it.
    pub name: Option<String>,
    pub seed: u64,
}

impl Default for ProbeConfig {
    /// 10 ms period for 10 s, no work, 1 ns timer slack.
    fn default() -> Self {
        ProbeConfig {
            pacing: Pacing::Period {
                period_ns: 10_000_000,
            },
            duration_ns: Some(10_000_000_000),
            count: None,
            work_ns: 0,
            frames: false,
            miss_threshold_ns: FRAME_MISS_NS,
            timer_slack_ns: Some(1),
            name: None,
            seed: 1,
        }
    }
}

impl ProbeConfig {
    /// Frame mode at `fps` with `work_ns` of work per frame, otherwise the defaults.
    pub fn frames(fps: f64, work_ns: u64) -> Result<ProbeConfig> {
        let cfg = ProbeConfig {
            pacing: Pacing::Period {
                period_ns: frame_period_ns(fps)?,
            },
            work_ns,
            frames: true,
            ..ProbeConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Rejects anything that could not be measured as asked, saying what and why.
    pub fn validate(&self) -> Result<()> {
        match self.pacing {
            Pacing::Period { period_ns: 0 } => bail!("the period must be positive, got 0"),
            Pacing::Range { min_ns, max_ns } if min_ns > max_ns => bail!(
                "sleep range {}-{} us: MIN exceeds MAX",
                min_ns / 1000,
                max_ns / 1000
            ),
            Pacing::Range { min_ns: 0, .. } => bail!("the sleep range must start above 0 us"),
            Pacing::Range { .. } if self.frames => {
                bail!("frame mode paces at a fixed rate; it takes no sleep range")
            }
            _ => {}
        }
        if self.pacing.min_ns() < MIN_INTERVAL_NS {
            bail!(
                "the interval between wakes must be at least 1 us, got {} ns",
                self.pacing.min_ns()
            );
        }
        if self.pacing.max_ns() > MAX_INTERVAL_NS {
            bail!(
                "the interval between wakes must be at most an hour, got {} s",
                self.pacing.max_ns() / 1_000_000_000
            );
        }
        match (self.duration_ns, self.count) {
            (None, None) => bail!("give a duration or a sample count"),
            (Some(0), _) => bail!("the duration must be positive"),
            (_, Some(0)) => bail!("the sample count must be positive"),
            _ => {}
        }
        if self.work_ns >= self.pacing.min_ns() {
            bail!(
                "{} us of work per wake does not fit in the shortest interval ({} us)",
                self.work_ns as f64 / 1e3,
                self.pacing.min_ns() as f64 / 1e3
            );
        }
        if let Some(0) = self.timer_slack_ns {
            bail!("timer slack 0 would mean the kernel default; use None to leave it alone");
        }
        if let Some(name) = &self.name {
            thread::validate_name(name).map_err(anyhow::Error::msg)?;
        }
        let cap = self.capacity_unchecked();
        if cap > MAX_SAMPLES {
            bail!(
                "this run would record up to {cap} samples, more than the {MAX_SAMPLES} the \
                 probe pre-allocates at most; shorten the duration or lengthen the interval"
            );
        }
        Ok(())
    }

    /// Samples the run can record at most: one per deadline in (start, start + duration], and
    /// no more than `count`.
    pub fn capacity(&self) -> Result<usize> {
        self.validate()?;
        Ok(self.capacity_unchecked() as usize)
    }

    fn capacity_unchecked(&self) -> u64 {
        let by_time = self
            .duration_ns
            .map(|d| d / self.pacing.min_ns().max(1) + 1);
        match (by_time, self.count) {
            (Some(t), Some(c)) => t.min(c),
            (Some(t), None) => t,
            (None, Some(c)) => c,
            (None, None) => 0,
        }
    }
}

/// Nanoseconds per frame at `fps`, rounded: 60 -> 16_666_667.
pub(crate) fn frame_period_ns(fps: f64) -> Result<u64> {
    if !fps.is_finite() || fps <= 0.0 {
        bail!("frames per second must be a positive number, got {fps}");
    }
    let ns = (1e9 / fps).round();
    if ns < MIN_INTERVAL_NS as f64 {
        bail!("{fps} frames per second is above the probe's 1 us resolution");
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(cfg: ProbeConfig) -> String {
        format!("{:#}", cfg.validate().unwrap_err())
    }

    #[test]
    fn defaults_are_valid() {
        let cfg = ProbeConfig::default();
        cfg.validate().unwrap();
        assert_eq!(cfg.capacity().unwrap(), 1001);
        let f = ProbeConfig::frames(60.0, 2_000_000).unwrap();
        assert_eq!(
            f.pacing,
            Pacing::Period {
                period_ns: 16_666_667
            }
        );
    }

    #[test]
    fn rejects_bad_pacing() {
        let zero = ProbeConfig {
            pacing: Pacing::Period { period_ns: 0 },
            ..ProbeConfig::default()
        };
        assert!(err(zero).contains("period must be positive"));
        let inverted = ProbeConfig {
            pacing: Pacing::Range {
                min_ns: 5_000_000,
                max_ns: 1_000_000,
            },
            ..ProbeConfig::default()
        };
        assert!(err(inverted).contains("5000-1000 us: MIN exceeds MAX"));
        let tiny = ProbeConfig {
            pacing: Pacing::Period { period_ns: 10 },
            ..ProbeConfig::default()
        };
        assert!(err(tiny).contains("at least 1 us"));
        assert!(ProbeConfig::frames(0.0, 0).is_err());
        assert!(ProbeConfig::frames(f64::NAN, 0).is_err());
        assert!(ProbeConfig::frames(1e7, 0).is_err());
        assert!(
            ProbeConfig::frames(1e-6, 0)
                .unwrap_err()
                .to_string()
                .contains("an hour")
        );
    }

    #[test]
    fn rejects_bad_limits_and_work() {
        let no_limit = ProbeConfig {
            duration_ns: None,
            ..ProbeConfig::default()
        };
        assert!(err(no_limit).contains("duration or a sample count"));
        let zero_count = ProbeConfig {
            count: Some(0),
            ..ProbeConfig::default()
        };
        assert!(err(zero_count).contains("count must be positive"));
        let too_much_work = ProbeConfig {
            work_ns: 10_000_000,
            ..ProbeConfig::default()
        };
        assert!(err(too_much_work).contains("does not fit"));
        let huge = ProbeConfig {
            pacing: Pacing::Period { period_ns: 1_000 },
            duration_ns: Some(3600 * 1_000_000_000),
            ..ProbeConfig::default()
        };
        assert!(err(huge).contains("pre-allocates"));
        let long_name = ProbeConfig {
            name: Some("a-very-long-probe-name".into()),
            ..ProbeConfig::default()
        };
        assert!(err(long_name).contains("15 bytes"));
    }

    #[test]
    fn capacity_takes_the_tighter_limit() {
        let both = ProbeConfig {
            count: Some(50),
            ..ProbeConfig::default()
        };
        assert_eq!(both.capacity().unwrap(), 50);
        let range = ProbeConfig {
            pacing: Pacing::Range {
                min_ns: 1_000_000,
                max_ns: 5_000_000,
            },
            duration_ns: Some(1_000_000_000),
            ..ProbeConfig::default()
        };
        assert_eq!(range.capacity().unwrap(), 1001);
    }
}
