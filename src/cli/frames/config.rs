// SPDX-License-Identifier: GPL-2.0-only
//! What one `frames` run does, checked before any thread starts.

use anyhow::{Result, bail};

/// The most frames one run records (3 x 128 MiB of stamps): 32 hours at 144 Hz.
pub const MAX_FRAMES: u64 = 1 << 24;

/// At most this many worker threads: a game's job system has one per core or so.
pub const MAX_WORKERS: usize = 64;

/// No single piece of a frame's work may take more than a second: longer is a typo.
const MAX_WORK_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone, PartialEq)]
pub struct FramesConfig {
    /// The frame limiter's period: 1 s / fps.
    pub period_ns: u64,
    /// Worker threads the main thread wakes every frame.
    pub workers: usize,
    /// CPU time each worker runs per frame.
    pub work_ns: u64,
    /// CPU time the render thread runs to present, once every worker is done.
    pub render_ns: u64,
    /// Frames are recorded for this long, after the warm-up.
    pub duration_ns: u64,
    /// Frames run but are not recorded for this long first (gaming mode finds the game by a
    /// scan once a second).
    pub warmup_ns: u64,
    /// A frame is over budget when it takes longer than the period plus this many percent.
    pub tolerance_pct: f64,
    /// Timer slack of the main thread (the limiter's sleeps); `None` leaves it alone.
    pub timer_slack_ns: Option<u64>,
}

impl Default for FramesConfig {
    /// 144 Hz, 4 workers of 1 ms, 200 us to present, 10 s after 2 s of warm-up, 10 % tolerance.
    fn default() -> Self {
        FramesConfig {
            period_ns: 6_944_444,
            workers: 4,
            work_ns: 1_000_000,
            render_ns: 200_000,
            duration_ns: 10_000_000_000,
            warmup_ns: 2_000_000_000,
            tolerance_pct: 10.0,
            timer_slack_ns: Some(1),
        }
    }
}

impl FramesConfig {
    pub fn validate(&self) -> Result<()> {
        if self.period_ns < 100_000 {
            bail!(
                "the frame period must be at least 100 us (10 000 fps), got {} ns",
                self.period_ns
            );
        }
        if self.period_ns > MAX_WORK_NS {
            bail!("the frame rate must be at least 1 fps");
        }
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            bail!("workers must be 1 to {MAX_WORKERS}, got {}", self.workers);
        }
        if self.work_ns > MAX_WORK_NS || self.render_ns > MAX_WORK_NS {
            bail!("a worker's or the render thread's work must be at most a second per frame");
        }
        if self.duration_ns == 0 {
            bail!("the duration must be positive");
        }
        if !(0.0..=1000.0).contains(&self.tolerance_pct) {
            bail!(
                "the over-budget tolerance must be 0 to 1000 %, got {}",
                self.tolerance_pct
            );
        }
        if let Some(0) = self.timer_slack_ns {
            bail!("timer slack 0 would mean the kernel default; use None to leave it alone");
        }
        let cap = self.capacity_unchecked();
        if cap > MAX_FRAMES {
            bail!(
                "this run would record up to {cap} frames, more than the {MAX_FRAMES} it \
                 pre-allocates at most; shorten the duration"
            );
        }
        Ok(())
    }

    /// Frames the run records at most: one per period of the duration, and one more for the
    /// first present.
    pub fn capacity(&self) -> Result<usize> {
        self.validate()?;
        Ok(self.capacity_unchecked() as usize)
    }

    fn capacity_unchecked(&self) -> u64 {
        self.duration_ns / self.period_ns.max(1) + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(cfg: FramesConfig) -> String {
        format!("{:#}", cfg.validate().unwrap_err())
    }

    #[test]
    fn defaults_are_valid() {
        let cfg = FramesConfig::default();
        cfg.validate().unwrap();
        assert_eq!(cfg.capacity().unwrap(), 1_442);
    }

    #[test]
    fn rejects_what_cannot_be_measured() {
        let d = FramesConfig::default;
        assert!(
            err(FramesConfig {
                period_ns: 10,
                ..d()
            })
            .contains("100 us")
        );
        assert!(err(FramesConfig { workers: 0, ..d() }).contains("workers must be"));
        assert!(err(FramesConfig { workers: 65, ..d() }).contains("workers must be"));
        assert!(
            err(FramesConfig {
                work_ns: 2_000_000_000,
                ..d()
            })
            .contains("a second")
        );
        assert!(
            err(FramesConfig {
                duration_ns: 0,
                ..d()
            })
            .contains("positive")
        );
        assert!(
            err(FramesConfig {
                tolerance_pct: -1.0,
                ..d()
            })
            .contains("tolerance")
        );
        assert!(
            err(FramesConfig {
                tolerance_pct: f64::NAN,
                ..d()
            })
            .contains("tolerance")
        );
        assert!(
            err(FramesConfig {
                timer_slack_ns: Some(0),
                ..d()
            })
            .contains("slack")
        );
        let huge = FramesConfig {
            period_ns: 100_000,
            duration_ns: 3_600_000_000_000,
            ..d()
        };
        assert!(err(huge).contains("pre-allocates"));
    }
}
