// SPDX-License-Identifier: GPL-2.0-only
//! The `probe` subcommand's arguments and their translation to a `ProbeConfig`.

use anyhow::{Result, bail};

use super::config::{FRAME_MISS_NS, Pacing, ProbeConfig, frame_period_ns};
use crate::cli::clock::seconds_to_ns;
use crate::cli::thread;

/// Measure how late an interactive task wakes: sleep to absolute deadlines and record the
/// lateness of every one, correcting for coordinated omission (a stall that swallows k periods
/// counts k times). Prints one JSON object with exact P50/P99/P99.9/max.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct ProbeArgs {
    /// Interval between scheduled wakes, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 10_000,
          conflicts_with_all = ["sleep_range_us", "frames"])]
    pub period_us: u64,

    /// Draw each interval uniformly from MIN..=MAX microseconds (seeded, deterministic),
    /// e.g. 1000-5000.
    #[arg(long, value_name = "MIN-MAX", value_parser = parse_range, conflicts_with = "frames")]
    pub sleep_range_us: Option<SleepRange>,

    /// How long to measure, in seconds (default 10 unless --count is given).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub duration_s: Option<f64>,

    /// Stop after this many samples (scheduled deadlines, swallowed ones included).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,

    /// Spin this many microseconds after each wake, so the task has real runtime.
    #[arg(
        long,
        value_name = "US",
        default_value_t = 0,
        conflicts_with = "frames"
    )]
    pub work_us: u64,

    /// Frame mode: pace at --fps and do --frame-work-us of work per frame; report frames woken
    /// more than 500 us late and frames whose work ended past the next frame's deadline.
    #[arg(long)]
    pub frames: bool,

    /// Frames per second in frame mode.
    #[arg(long, value_name = "FPS", default_value_t = 60.0, requires = "frames")]
    pub fps: f64,

    /// Work per frame in frame mode, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 2_000, requires = "frames")]
    pub frame_work_us: u64,

    /// A wake later than this many microseconds counts as a miss.
    #[arg(long, value_name = "US", default_value_t = FRAME_MISS_NS / 1_000)]
    pub miss_us: u64,

    /// Timer slack for the probe thread, in ns. The kernel's default (50 us) delays every
    /// timer wake by up to that much; 0 leaves it as it is.
    #[arg(long, value_name = "NS", default_value_t = 1)]
    pub timer_slack_ns: u64,

    /// Seed of the interval PRNG (--sleep-range-us).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// Thread name (comm, at most 15 bytes) the scheduler will see for the probe.
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    pub name: Option<String>,

    /// Print one JSON object (the default).
    #[arg(long, conflicts_with = "human")]
    pub json: bool,

    /// Print one human-readable line instead of JSON.
    #[arg(long)]
    pub human: bool,
}

/// `--sleep-range-us MIN-MAX`, in microseconds. Only the syntax is checked here; `MIN <= MAX`
/// is checked with the rest of the configuration so the library path gets it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SleepRange {
    pub min_us: u64,
    pub max_us: u64,
}

fn parse_range(s: &str) -> Result<SleepRange, String> {
    let bad = || format!("expected MIN-MAX in microseconds (e.g. 1000-5000), got {s:?}");
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    Ok(SleepRange {
        min_us: lo.trim().parse().map_err(|_| bad())?,
        max_us: hi.trim().parse().map_err(|_| bad())?,
    })
}

fn parse_name(s: &str) -> Result<String, String> {
    thread::validate_name(s).map(|()| s.to_string())
}

fn us_to_ns(what: &str, us: u64) -> Result<u64> {
    match us.checked_mul(1_000) {
        Some(ns) => Ok(ns),
        None => bail!("{what} of {us} us is out of range"),
    }
}

impl ProbeArgs {
    /// The validated configuration these arguments describe.
    pub fn to_config(&self) -> Result<ProbeConfig> {
        let pacing = if self.frames {
            Pacing::Period {
                period_ns: frame_period_ns(self.fps)?,
            }
        } else if let Some(r) = self.sleep_range_us {
            Pacing::Range {
                min_ns: us_to_ns("the sleep range", r.min_us)?,
                max_ns: us_to_ns("the sleep range", r.max_us)?,
            }
        } else {
            Pacing::Period {
                period_ns: us_to_ns("the period", self.period_us)?,
            }
        };
        let duration_ns = match (self.duration_s, self.count) {
            (Some(s), _) => Some(seconds_to_ns("the duration", s)?),
            (None, Some(_)) => None,
            (None, None) => Some(10_000_000_000),
        };
        let work_us = if self.frames {
            self.frame_work_us
        } else {
            self.work_us
        };
        let cfg = ProbeConfig {
            pacing,
            duration_ns,
            count: self.count,
            work_ns: us_to_ns("the work", work_us)?,
            frames: self.frames,
            miss_threshold_ns: us_to_ns("the miss threshold", self.miss_us)?,
            timer_slack_ns: (self.timer_slack_ns > 0).then_some(self.timer_slack_ns),
            name: self.name.clone(),
            seed: self.seed,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ProbeArgs, clap::Error> {
        crate::cli::parse_args("probe", args)
    }

    fn config(args: &[&str]) -> Result<ProbeConfig> {
        parse(args).map_err(|e| anyhow::anyhow!("{e}"))?.to_config()
    }

    fn config_err(args: &[&str]) -> String {
        format!("{:#}", config(args).unwrap_err())
    }

    #[test]
    fn defaults() {
        let cfg = config(&[]).unwrap();
        assert_eq!(cfg, ProbeConfig::default());
    }

    #[test]
    fn period_count_work_name() {
        let cfg = config(&[
            "--period-us",
            "2000",
            "--count",
            "100",
            "--work-us",
            "300",
            "--name",
            "pnd-probe",
            "--timer-slack-ns",
            "0",
        ])
        .unwrap();
        assert_eq!(
            cfg.pacing,
            Pacing::Period {
                period_ns: 2_000_000
            }
        );
        assert_eq!((cfg.duration_ns, cfg.count), (None, Some(100)));
        assert_eq!(cfg.work_ns, 300_000);
        assert_eq!(cfg.name.as_deref(), Some("pnd-probe"));
        assert_eq!(cfg.timer_slack_ns, None);
    }

    #[test]
    fn sleep_range_and_frames() {
        let cfg = config(&["--sleep-range-us", "1000-5000", "--duration-s", "0.5"]).unwrap();
        assert_eq!(
            cfg.pacing,
            Pacing::Range {
                min_ns: 1_000_000,
                max_ns: 5_000_000
            }
        );
        assert_eq!(cfg.duration_ns, Some(500_000_000));
        let cfg = config(&["--frames", "--fps", "120", "--frame-work-us", "1000"]).unwrap();
        assert!(cfg.frames);
        assert_eq!(
            cfg.pacing,
            Pacing::Period {
                period_ns: 8_333_333
            }
        );
        assert_eq!(cfg.work_ns, 1_000_000);
    }

    #[test]
    fn invalid_values_are_clear_errors() {
        assert!(config_err(&["--period-us", "0"]).contains("period must be positive"));
        assert!(config_err(&["--sleep-range-us", "5000-1000"]).contains("MIN exceeds MAX"));
        assert!(config_err(&["--sleep-range-us", "0-10"]).contains("above 0"));
        assert!(config_err(&["--sleep-range-us", "fast"]).contains("MIN-MAX"));
        assert!(config_err(&["--sleep-range-us", "1-2-3"]).contains("MIN-MAX"));
        assert!(config_err(&["--duration-s", "-1"]).contains("duration"));
        assert!(config_err(&["--duration-s", "NaN"]).contains("duration"));
        assert!(config_err(&["--duration-s", "0"]).contains("duration must be positive"));
        assert!(config_err(&["--count", "0"]).contains("count must be positive"));
        assert!(config_err(&["--work-us", "10000"]).contains("does not fit"));
        assert!(config_err(&["--frames", "--fps", "0"]).contains("positive number"));
        assert!(config_err(&["--frames", "--frame-work-us", "17000"]).contains("does not fit"));
        assert!(config_err(&["--period-us", "18446744073709551615"]).contains("out of range"));
        assert!(config_err(&["--name", "sixteen-bytes-xx"]).contains("15 bytes"));
    }

    #[test]
    fn conflicting_flags_are_usage_errors() {
        for args in [
            &["--frames", "--period-us", "5000"][..],
            &["--frames", "--sleep-range-us", "1000-2000"],
            &["--frames", "--work-us", "10"],
            &["--period-us", "5000", "--sleep-range-us", "1000-2000"],
            &["--fps", "30"],
            &["--json", "--human"],
        ] {
            assert!(parse(args).is_err(), "{args:?} should not parse");
        }
    }
}
