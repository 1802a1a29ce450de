// SPDX-License-Identifier: GPL-2.0-only
//! The `frames` subcommand's arguments and their translation to a `FramesConfig`.

use anyhow::{Result, bail};

use super::config::FramesConfig;
use crate::cli::clock::seconds_to_ns;

/// A game's frame loop: a main thread limited to --fps wakes --workers worker threads every
/// frame, each runs --work-us of CPU time, and a render thread presents once all are done.
/// Reports frame times (present to present) as MangoHud shows them: P50, P99, 1 % low FPS, and
/// the frames over budget. To be found by gaming mode, launch it as Steam launches a game:
/// `env SteamGameId=480 pandemonium-tools frames`.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct FramesArgs {
    /// Frame rate the limiter paces at.
    #[arg(long, value_name = "FPS", default_value_t = 144.0)]
    pub fps: f64,

    /// Worker threads woken every frame.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub workers: usize,

    /// CPU time each worker runs per frame, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 1_000)]
    pub work_us: u64,

    /// CPU time the render thread runs to present a frame, in microseconds.
    #[arg(long, value_name = "US", default_value_t = 200)]
    pub render_us: u64,

    /// How long to record frames, in seconds (after the warm-up).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub duration_s: f64,

    /// Run this long before recording, in seconds (gaming mode's scan finds a game within
    /// about a second).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 2.0,
        allow_negative_numbers = true
    )]
    pub warmup_s: f64,

    /// A frame is over budget when it takes longer than 1/FPS plus this many percent of it.
    #[arg(
        long,
        value_name = "PCT",
        default_value_t = 10.0,
        allow_negative_numbers = true
    )]
    pub tolerance_pct: f64,

    /// Timer slack of the main thread, in ns; 0 leaves the kernel's default (50 us).
    #[arg(long, value_name = "NS", default_value_t = 1)]
    pub timer_slack_ns: u64,

    /// Print one JSON object (the default).
    #[arg(long, conflicts_with = "human")]
    pub json: bool,

    /// Print one human-readable line instead of JSON.
    #[arg(long)]
    pub human: bool,
}

impl FramesArgs {
    /// The validated configuration these arguments describe.
    pub fn to_config(&self) -> Result<FramesConfig> {
        if !self.fps.is_finite() || self.fps <= 0.0 {
            bail!(
                "frames per second must be a positive number, got {}",
                self.fps
            );
        }
        let us = |what: &str, v: u64| match v.checked_mul(1_000) {
            Some(ns) => Ok(ns),
            None => bail!("{what} of {v} us is out of range"),
        };
        let cfg = FramesConfig {
            period_ns: (1e9 / self.fps).round() as u64,
            workers: self.workers,
            work_ns: us("the work", self.work_us)?,
            render_ns: us("the render work", self.render_us)?,
            duration_ns: seconds_to_ns("the duration", self.duration_s)?,
            warmup_ns: seconds_to_ns("the warm-up", self.warmup_s)?,
            tolerance_pct: self.tolerance_pct,
            timer_slack_ns: (self.timer_slack_ns > 0).then_some(self.timer_slack_ns),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<FramesConfig> {
        crate::cli::parse_args::<FramesArgs>("frames", args)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .to_config()
    }

    fn config_err(args: &[&str]) -> String {
        format!("{:#}", config(args).unwrap_err())
    }

    #[test]
    fn defaults_are_the_issues_game() {
        assert_eq!(config(&[]).unwrap(), FramesConfig::default());
    }

    #[test]
    fn every_flag_lands_in_the_config() {
        let cfg = config(&[
            "--fps",
            "60",
            "--workers",
            "2",
            "--work-us",
            "3000",
            "--render-us",
            "0",
            "--duration-s",
            "1.5",
            "--warmup-s",
            "0",
            "--tolerance-pct",
            "50",
            "--timer-slack-ns",
            "0",
        ])
        .unwrap();
        assert_eq!(
            cfg,
            FramesConfig {
                period_ns: 16_666_667,
                workers: 2,
                work_ns: 3_000_000,
                render_ns: 0,
                duration_ns: 1_500_000_000,
                warmup_ns: 0,
                tolerance_pct: 50.0,
                timer_slack_ns: None,
            }
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        assert!(config_err(&["--fps", "0"]).contains("positive number"));
        assert!(config_err(&["--fps", "NaN"]).contains("positive number"));
        assert!(config_err(&["--fps", "100000"]).contains("100 us"));
        assert!(config_err(&["--workers", "0"]).contains("workers must be"));
        assert!(config_err(&["--duration-s", "-1"]).contains("duration"));
        assert!(config_err(&["--warmup-s", "-1"]).contains("warm-up"));
        assert!(config_err(&["--work-us", "18446744073709551615"]).contains("out of range"));
        assert!(config_err(&["--tolerance-pct", "-5"]).contains("tolerance"));
        assert!(crate::cli::parse_args::<FramesArgs>("frames", &["--json", "--human"]).is_err());
    }
}
